//! The user-experience group of flags: per-token deadlines and smooth goodput, the
//! fluidity-index and its prefill curve (profiled before the run, or read from a file), and
//! the isolated baseline of `--baseline` for latency inflation.

use crate::config::{PrefillSetup, ProfilePlan};
use crate::flags::{DeadlinesArg, RunArgs, UxArgs};
use crate::metrics::experience::FluidityParams;
use crate::metrics::fluidity::{PrefillCurve, ProfiledCurve};
use crate::metrics::ux::{DeadlineScheme, UxParams};
use crate::record::Phase;
use crate::store::{read_requests, RunFolder};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;

/// User-experience parameters from the flags.
pub(crate) fn ux_params(args: &RunArgs) -> Result<UxParams> {
    let u = &args.ux;
    let scheme = match u.deadlines {
        DeadlinesArg::Reading => {
            if !(u.reading_rate > 0.0 && u.reading_rate.is_finite()) {
                bail!("--reading-rate must be a positive number of tokens per second");
            }
            if u.d0_ms.is_some_and(|d0| !(d0 >= 0.0 && d0.is_finite())) {
                bail!("--d0-ms must be a number of milliseconds, 0 or more");
            }
            DeadlineScheme::Reading {
                d0_ms: u.d0_ms,
                rate_per_s: u.reading_rate,
            }
        }
        DeadlinesArg::TtftTbt => DeadlineScheme::TtftTbt {
            ttft_ms: u.deadline_ttft_ms,
            tbt_ms: u.deadline_tbt_ms,
        },
        DeadlinesArg::E2e => DeadlineScheme::E2e {
            e2e_ms: u.deadline_e2e_ms,
        },
    };
    Ok(UxParams {
        scheme,
        alpha: u.alpha,
        idle_cost: u.idle_cost,
        patience_s: u.patience.as_secs_f64(),
    })
}

/// The fluidity-index parameters; the prefill curve is set later, profiled or read.
pub(crate) fn fluidity(u: &UxArgs) -> FluidityParams {
    FluidityParams {
        tbt_deadline_ms: u.fluidity_tbt_ms,
        slack_ms: u.fluidity_slack_ms,
        threshold: u.fluidity_threshold,
        quantile: u.fluidity_quantile,
        curve: None,
        curve_source: String::new(),
    }
}

/// Where the prefill curve comes from: profiled before measuring, read from
/// `--prefill-curve`, or off. Checks the fluidity shares first.
pub(crate) fn prefill(u: &UxArgs) -> Result<PrefillSetup> {
    if !(0.0..=1.0).contains(&u.fluidity_threshold) || !(0.0..=1.0).contains(&u.fluidity_quantile) {
        bail!("--fluidity-threshold and --fluidity-quantile are shares between 0 and 1");
    }
    Ok(if u.no_fluidity {
        PrefillSetup::Off
    } else if let Some(path) = &u.prefill_curve {
        PrefillSetup::Curve(read_prefill_curve(path)?)
    } else {
        PrefillSetup::Profile(ProfilePlan {
            lengths: None,
            repeats: u.profile_repeats.max(1),
            budget: u.profile_budget,
            max_prompt_tokens: None,
        })
    })
}

/// Reads a prefill curve file: a `ProfiledCurve` document, or (older files) a bare curve.
pub fn read_prefill_curve(path: &std::path::Path) -> Result<ProfiledCurve> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading --prefill-curve {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if let Ok(p) = serde_json::from_value::<ProfiledCurve>(v.clone()) {
        return Ok(p);
    }
    let curve: PrefillCurve = serde_json::from_value(v.get("curve").cloned().unwrap_or(v))
        .with_context(|| {
            format!(
                "{} is not a prefill curve from `servebench profile-prefill`",
                path.display()
            )
        })?;
    Ok(ProfiledCurve {
        curve,
        target: "unknown".into(),
        model: "unknown".into(),
        engine: None,
        engine_version: None,
        created_at: String::new(),
        points: Vec::new(),
    })
}

/// Isolated TTFT (P50, P99) per class from `--baseline`; empty without it.
pub(crate) fn baseline(u: &UxArgs) -> Result<BTreeMap<String, (f64, f64)>> {
    Ok(match &u.baseline {
        Some(dir) => baseline_by_class(dir)?,
        None => BTreeMap::new(),
    })
}

/// Isolated TTFT (P50, P99) per class from a baseline run folder.
fn baseline_by_class(dir: &std::path::Path) -> Result<BTreeMap<String, (f64, f64)>> {
    let records = read_requests(&RunFolder::new(dir).requests_jsonl(), 0)
        .with_context(|| format!("reading the --baseline run {}", dir.display()))?;
    let mut by_class: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.phase == Phase::Measure && r.outcome.is_ok())
    {
        // The TTFT written with the record (exact); else from its µs timestamps.
        let ttft = r.derived.as_ref().and_then(|d| d.ttft_ms).or_else(|| {
            let (t, s) = (r.first_token_at()?, r.submitted_at()?);
            Some(t.saturating_sub(s) as f64 / 1e6)
        });
        if let Some(ttft) = ttft {
            let class = r.class.clone().unwrap_or_else(|| "default".into());
            by_class.entry(class).or_default().push(ttft);
        }
    }
    if by_class.is_empty() {
        bail!(
            "the --baseline run {} has no completed measured requests",
            dir.display()
        );
    }
    Ok(by_class
        .into_iter()
        .filter_map(|(c, mut v)| {
            let d = crate::stats::Distribution::of(&mut v)?;
            Some((c, (d.p50, d.p99)))
        })
        .collect())
}
