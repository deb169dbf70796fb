//! 5.4 Inter-Token Latency Distribution at 25, 50, 75 and 90 % of capacity (Table 6 per
//! level), with per-request jitter and longest pause, and the distribution's shape.

use super::compliance::Checklist;
use super::level::{rate, Bench, LevelSpec, Load, Role, Stop};
use super::report::Finding;
use super::session::Session;
use super::throughput::estimate;
use super::{common_parameters, Options};
use crate::metrics::Distribution;
use serde::{Deserialize, Serialize};

/// Table 6 at one load level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItlLevel {
    /// Index in `levels`.
    pub level: usize,
    pub share: f64,
    pub offered_rate_per_s: f64,
    /// Requests with at least one ITL sample.
    pub requests: u64,
    /// Every gap after the first token, ms (TTFT excluded).
    pub itl_ms: Option<Distribution>,
    /// Per-request standard deviation of ITL, ms.
    pub jitter_ms: Option<Distribution>,
    /// Per-request largest gap, ms.
    pub max_pause_ms: Option<Distribution>,
    /// P99 / P50 of all gaps (the draft's tail heaviness indicator).
    pub p99_over_p50: Option<f64>,
    /// Unimodal or multimodal, and the tail, in words.
    pub shape: String,
}

/// `result` of an ITL test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ItlResult {
    pub capacity_rate_per_s: Option<f64>,
    /// How gaps were timed (4.6.3): chunk timing, distributed, or server-side.
    pub measurement_method: String,
    pub levels: Vec<ItlLevel>,
}

/// Shares of capacity (5.4.2: 25, 50, 75, 90 % RECOMMENDED).
pub const SHARES: [f64; 4] = [0.25, 0.5, 0.75, 0.9];

/// Runs the test.
pub fn run(bench: &mut dyn Bench, o: &Options) -> Finding {
    let mut s = Session::new(bench, o.slo.clone());
    let duration = o.duration(60.0, 6.0);
    let shares = o.load_shares.clone().unwrap_or_else(|| SHARES.to_vec());
    let mut result = ItlResult::default();
    let mut stop: Option<Stop> = None;
    match estimate(&mut s, o) {
        Err(e) => stop = Some(e),
        Ok(cap) => {
            result.capacity_rate_per_s = Some(cap);
            for &share in &shares {
                let r = cap * share;
                let spec = LevelSpec::new(
                    format!("{:.0} % · {} req/s", share * 100.0, rate(r)),
                    Role::Sweep,
                    Load::Rate { rate_per_s: r },
                    duration,
                );
                match s.measure(spec) {
                    Ok(l) => {
                        let sm = &l.summary;
                        result.measurement_method =
                            format!("{}: {}", sm.itl_method.description, sm.itl_method.reason);
                        result.levels.push(ItlLevel {
                            level: l.index,
                            share,
                            offered_rate_per_s: r,
                            requests: sm
                                .jitter_ms
                                .map_or(0, |d| d.n as u64)
                                .max(sm.max_pause_ms.map_or(0, |d| d.n as u64)),
                            itl_ms: sm.itl_ms,
                            jitter_ms: sm.jitter_ms,
                            max_pause_ms: sm.max_pause_ms,
                            p99_over_p50: sm.itl_tail_ratio,
                            shape: sm.itl_shape.statement.clone(),
                        });
                    }
                    Err(e) => {
                        stop = Some(e);
                        break;
                    }
                }
            }
        }
    }
    let answer = match result
        .levels
        .iter()
        .max_by(|a, b| a.share.total_cmp(&b.share))
    {
        Some(top) => {
            let low = &result.levels[0];
            let fmt = |l: &ItlLevel| {
                l.itl_ms
                    .map(|d| format!("P50 {:.1} ms, P99 {:.1} ms", d.p50, d.p99))
                    .unwrap_or_else(|| "no gaps".into())
            };
            format!(
                "ITL at {:.0} % of capacity: {}; at {:.0} %: {}",
                low.share * 100.0,
                fmt(low),
                top.share * 100.0,
                fmt(top)
            )
        }
        None => "no ITL level ran".into(),
    };
    let compliance = compliance(&s, o, duration, &result, &shares);
    Finding {
        answered: !result.levels.is_empty(),
        levels: s.levels,
        result: serde_json::to_value(&result).expect("plain data"),
        answer,
        compliance,
        parameters: serde_json::json!({
            "common": common_parameters(o),
            "shares": shares,
            "level_duration_s": duration.as_secs_f64(),
        }),
        stopped: stop.map(|e| e.to_string()),
    }
}

fn compliance(
    s: &Session,
    o: &Options,
    duration: std::time::Duration,
    r: &ItlResult,
    shares: &[f64],
) -> super::compliance::Compliance {
    let mut c = Checklist::default();
    c.common(o.quick, s.warmup.as_ref(), o.seed);
    let min_out = o.workload.output.min_value();
    c.must(
        "5.4.2",
        "every request generates at least 50 output tokens",
        min_out >= 50,
        format!(
            "the workload's shortest output is {min_out} tokens{}",
            if min_out < 50 {
                " (use --output-tokens 50 or more, or a workload with longer outputs)"
            } else {
                ""
            }
        ),
    );
    let fewest = r.levels.iter().map(|l| l.requests).min().unwrap_or(0);
    let fewest_samples = r
        .levels
        .iter()
        .map(|l| l.itl_ms.map_or(0, |d| d.n))
        .min()
        .unwrap_or(0);
    c.must(
        "5.4.2",
        "at least 100 requests per level",
        fewest >= 100,
        format!("fewest at a level: {fewest} requests, {fewest_samples} ITL samples"),
    );
    c.should(
        "5.4.2",
        "several load levels: 25, 50, 75, 90 % of saturation (RECOMMENDED)",
        SHARES.iter().all(|s| shares.contains(s)),
        format!(
            "{} % of the capacity estimate",
            shares
                .iter()
                .map(|s| format!("{:.0}", s * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    c.must(
        "5.4.2",
        "measurement method specified (4.6.3)",
        !r.measurement_method.is_empty(),
        r.measurement_method.clone(),
    );
    c.must(
        "5.4.3",
        "TTFT excluded from ITL",
        true,
        "gaps start at the first token",
    );
    c.should(
        "5.4.2",
        "Synthetic-Uniform or Conversation workload (RECOMMENDED)",
        matches!(
            o.workload.name.as_str(),
            "synthetic-uniform" | "conversation"
        ),
        format!("workload {}", o.workload.name),
    );
    let _ = duration;
    c.finish()
}
