//! The user-experience summary of a run: deadlines and idle time, smooth goodput, fluidity,
//! fluid token rate, fairness and ITL shape, each with its parameters next to it.

use super::distribution::{percentile_sorted, Distribution};
use super::fairness::{fairness, Fairness};
use super::fluidity::{fluidity_index, min_decode_deadline_ms, FluidityInput, PrefillCurve};
use super::modality::{modality, Modality};
use super::request::{measure, RequestMetrics};
use super::summary::RunSummary;
use super::ux::{evaluate, smooth_goodput, token_times_ms, SmoothGoodput, UxParams};
use crate::record::{Phase, RequestRecord};
use serde::Serialize;
use std::collections::BTreeMap;

/// Parameters of the fluidity-index (Etalon).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FluidityParams {
    /// Decode deadline D_d for the reported fluidity distribution, ms (Etalon's medium target).
    pub tbt_deadline_ms: f64,
    /// Scheduling slack added to the predicted prefill time, ms.
    pub slack_ms: f64,
    /// A request is fluid when its index reaches this (f).
    pub threshold: f64,
    /// Share of requests that must be fluid for the fluid token rate (q).
    pub quantile: f64,
    /// Prefill-time curve from `servebench profile-prefill`; fitted from the run when absent.
    pub curve: Option<PrefillCurve>,
}

impl Default for FluidityParams {
    fn default() -> Self {
        Self {
            tbt_deadline_ms: 50.0,
            slack_ms: 50.0,
            threshold: 0.9,
            quantile: 0.99,
            curve: None,
        }
    }
}

/// Everything the user-experience metrics need besides the records.
#[derive(Debug, Clone, Default)]
pub struct ExperienceOptions {
    pub ux: UxParams,
    pub fluidity: FluidityParams,
    /// Isolated TTFT (P50, P99) per class, from `--baseline`.
    pub baseline: BTreeMap<String, (f64, f64)>,
}

/// The fluidity distribution and its parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FluiditySummary {
    pub threshold: f64,
    pub quantile: f64,
    pub tbt_deadline_ms: f64,
    pub slack_ms: f64,
    /// Where D_p came from and its coefficients.
    pub prefill_curve_source: String,
    pub prefill_curve: PrefillCurve,
    pub p1: f64,
    pub p5: f64,
    pub p50: f64,
    pub mean: f64,
    /// Share of requests whose index reaches `threshold` at `tbt_deadline_ms`.
    pub share_meeting: f64,
    /// Share meeting the threshold as the decode deadline varies: `(tbt_ms, share)`.
    pub curve_vs_tbt: Vec<(f64, f64)>,
}

/// Token rates by three definitions, side by side (Etalon figure 5a).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateComparison {
    pub fluid_tokens_per_s: Option<f64>,
    pub inverse_mean_tpot_per_s: Option<f64>,
    pub inverse_p99_tbt_per_s: Option<f64>,
}

/// Per-request user-experience values, written back into `requests.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestExperience {
    pub id: u64,
    pub fluidity: Option<f64>,
    pub user_idle_ms: f64,
    pub deadline_misses: u32,
}

/// The user-experience part of `summary` (flattened into it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experience {
    pub deadlines: String,
    pub user_idle_ms: Option<Distribution>,
    /// Share of requests that met every deadline.
    pub deadline_attainment: f64,
    pub smooth_goodput: SmoothGoodput,
    pub fluidity: Option<FluiditySummary>,
    pub fluid_token_rate_per_s: Option<f64>,
    pub token_rates: RateComparison,
    /// SLO attainment and goodput (the same figures as `goodput`), when SLOs were given.
    pub slo: Option<super::slo::SloResult>,
    pub fairness: Option<Fairness>,
    pub itl_modality: Option<Modality>,
    #[serde(skip)]
    pub per_request: Vec<RequestExperience>,
}

/// Fits D_p from the run itself: per input-length bucket (powers of two), the fastest 10 %
/// of TTFTs stand in for isolated requests.
pub fn curve_from_run(pairs: &[(f64, f64)]) -> Option<PrefillCurve> {
    let mut buckets: BTreeMap<i32, Vec<(f64, f64)>> = BTreeMap::new();
    for &(p, t) in pairs {
        buckets
            .entry(p.max(1.0).log2().floor() as i32)
            .or_default()
            .push((p, t));
    }
    let mut points = Vec::new();
    for (_, mut v) in buckets {
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        let keep = (v.len() / 10).max(1);
        points.extend_from_slice(&v[..keep]);
    }
    PrefillCurve::fit(&points)
}

/// Computes the user-experience metrics of the measured requests.
pub fn summarize(
    records: &[RequestRecord],
    summary: &RunSummary,
    opts: &ExperienceOptions,
) -> Experience {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    let option = summary.itl_method.option;
    let metrics: Vec<Option<RequestMetrics>> =
        measured.iter().map(|r| measure(r, option)).collect();
    let window_end = summary.window.end;

    // Deadlines, idle time, smooth goodput.
    let outcomes: Vec<_> = measured
        .iter()
        .map(|r| evaluate(r, &opts.ux.scheme, window_end))
        .collect();
    let idle = Distribution::of(&mut outcomes.iter().map(|o| o.user_idle_ms).collect());
    let met = outcomes.iter().filter(|o| o.met).count();
    let sg = smooth_goodput(&outcomes, &opts.ux, summary.window.duration_s);

    // Fluidity.
    let prompt =
        |r: &RequestRecord| r.usage_prompt_tokens().unwrap_or(r.input_tokens as u64) as f64;
    let (curve, source) = match opts.fluidity.curve {
        Some(c) => (Some(c), "given (--prefill-curve)".to_owned()),
        None => {
            let pairs: Vec<(f64, f64)> = measured
                .iter()
                .zip(&metrics)
                .filter_map(|(r, m)| Some((prompt(r), m.as_ref()?.ttft_ms)))
                .collect();
            (
                curve_from_run(&pairs),
                "fitted from this run: fastest 10 % of TTFTs per input-length bucket".to_owned(),
            )
        }
    };
    let mut per_request: Vec<RequestExperience> = measured
        .iter()
        .zip(&outcomes)
        .map(|(r, o)| RequestExperience {
            id: r.id,
            fluidity: None,
            user_idle_ms: o.user_idle_ms,
            deadline_misses: o.deadline_misses,
        })
        .collect();
    let mut fluidity = None;
    let mut fluid_rate = None;
    if let Some(curve) = curve {
        let inputs: Vec<(usize, FluidityInput)> = measured
            .iter()
            .enumerate()
            .filter(|(_, r)| r.outcome.is_ok() && r.first_content.is_some())
            .map(|(i, r)| {
                let times = token_times_ms(r);
                let mut gaps = Vec::with_capacity(times.len());
                let mut prev = 0.0;
                for t in times {
                    gaps.push(t - prev);
                    prev = t;
                }
                let input = FluidityInput {
                    gaps_ms: gaps,
                    prefill_deadline_ms: curve.predict_ms(prompt(r)) + opts.fluidity.slack_ms,
                };
                (i, input)
            })
            .collect();
        let f = &opts.fluidity;
        let mut values: Vec<f64> = Vec::with_capacity(inputs.len());
        for (i, input) in &inputs {
            let v = fluidity_index(&input.gaps_ms, f.tbt_deadline_ms, input.prefill_deadline_ms);
            per_request[*i].fluidity = Some(v);
            values.push(v);
        }
        if !values.is_empty() {
            let plain: Vec<FluidityInput> = inputs.iter().map(|(_, i)| i.clone()).collect();
            let share_at = |dd: f64| {
                plain
                    .iter()
                    .filter(|i| {
                        fluidity_index(&i.gaps_ms, dd, i.prefill_deadline_ms) >= f.threshold
                    })
                    .count() as f64
                    / plain.len() as f64
            };
            let curve_vs_tbt = [10.0, 20.0, 25.0, 50.0, 100.0, 200.0, 500.0]
                .iter()
                .map(|&dd| (dd, share_at(dd)))
                .collect();
            values.sort_unstable_by(f64::total_cmp);
            fluidity = Some(FluiditySummary {
                threshold: f.threshold,
                quantile: f.quantile,
                tbt_deadline_ms: f.tbt_deadline_ms,
                slack_ms: f.slack_ms,
                prefill_curve_source: source,
                prefill_curve: curve,
                p1: percentile_sorted(&values, 1.0),
                p5: percentile_sorted(&values, 5.0),
                p50: percentile_sorted(&values, 50.0),
                mean: values.iter().sum::<f64>() / values.len() as f64,
                share_meeting: values.iter().filter(|&&v| v >= f.threshold).count() as f64
                    / values.len() as f64,
                curve_vs_tbt,
            });
            fluid_rate =
                min_decode_deadline_ms(&plain, f.threshold, f.quantile).map(|dd| 1000.0 / dd);
        }
    }

    // Fairness over classes.
    let classed: Vec<(&str, &RequestMetrics)> = measured
        .iter()
        .zip(&metrics)
        .filter_map(|(r, m)| Some((r.class.as_deref()?, m.as_ref()?)))
        .collect();
    let fairness = if classed.is_empty() {
        None
    } else {
        fairness(&classed, &opts.baseline)
    };

    let itl: Vec<f64> = metrics
        .iter()
        .flatten()
        .flat_map(|m| m.itl_ms.iter().copied())
        .collect();
    Experience {
        deadlines: opts.ux.scheme.to_string(),
        user_idle_ms: idle,
        deadline_attainment: if outcomes.is_empty() {
            0.0
        } else {
            met as f64 / outcomes.len() as f64
        },
        smooth_goodput: sg,
        fluidity,
        fluid_token_rate_per_s: fluid_rate,
        token_rates: RateComparison {
            fluid_tokens_per_s: fluid_rate,
            inverse_mean_tpot_per_s: summary
                .tpot_ms
                .filter(|d| d.mean > 0.0)
                .map(|d| 1000.0 / d.mean),
            inverse_p99_tbt_per_s: summary
                .itl_ms
                .filter(|d| d.p99 > 0.0)
                .map(|d| 1000.0 / d.p99),
        },
        slo: summary.goodput.clone(),
        fairness,
        itl_modality: modality(&itl),
        per_request,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summarize as run_summary;
    use crate::record::{FailureKind, Outcome};

    const MS: u64 = 1_000_000;

    fn rec(id: u64, class: &str, sent: u64, tokens: &[u64], input: u32) -> RequestRecord {
        RequestRecord {
            class: Some(class.into()),
            ..RequestRecord::completed_for_tests(id, sent, tokens, input)
        }
    }

    #[test]
    fn failed_requests_are_charged_idle_time_to_the_window_end() {
        let ok = rec(0, "a", 0, &[100, 150, 200], 10);
        let mut cut = rec(1, "a", 0, &[100], 10);
        cut.outcome = Outcome::failed(FailureKind::StreamCut, "x");
        cut.finished_at = 120 * MS;
        let mut late = rec(2, "b", 0, &[100, 150, 2000], 10);
        late.finished_at = 2000 * MS;
        let records = vec![ok, cut, late];
        let s = run_summary(&records, None);
        let e = summarize(&records, &s, &ExperienceOptions::default());
        // Reading deadlines: D0 1 s, 20 tokens/s.
        assert_eq!(e.per_request[0].user_idle_ms, 0.0);
        // The cut request's 2nd token was due at 1050 ms; the window ended at 2000 ms.
        assert_eq!(e.per_request[1].user_idle_ms, 950.0);
        // The slow request's 3rd token was due at 1100 ms and came at 2000 ms.
        assert_eq!(e.per_request[2].user_idle_ms, 900.0);
        assert!((e.deadline_attainment - 1.0 / 3.0).abs() < 1e-12);
        // Benefit: 3 + 1 + 3 tokens − 5·(0.95 + 0.9) over 2 s.
        assert!(
            (e.smooth_goodput.value - (7.0 - 5.0 * 1.85) / 2.0).abs() < 1e-9,
            "{}",
            e.smooth_goodput.value
        );
        let f = e.fairness.unwrap();
        assert_eq!(f.classes["a"].count, 1);
        assert!(f.jain_index < 1.0);
    }

    #[test]
    fn run_fitted_curve_uses_the_fastest_requests() {
        let pairs = vec![
            (100.0, 50.0),
            (100.0, 500.0),
            (100.0, 400.0),
            (1000.0, 90.0),
            (1000.0, 900.0),
        ];
        let c = curve_from_run(&pairs).unwrap();
        assert!((c.predict_ms(100.0) - 50.0).abs() < 1e-6);
        assert!((c.predict_ms(1000.0) - 90.0).abs() < 1e-6);
    }
}
