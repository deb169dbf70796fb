//! The user-experience part of a run's summary: deadlines and idle time, smooth goodput,
//! fluidity, fluid token rate and fairness, each with its parameters next to it.
//!
//! Called by [`super::summary::summarize`] with the per-request measurements it already
//! computed, so nothing here re-measures a request.

use super::fairness::{fairness, Fairness};
use super::fluidity::{fluid_rate, FluidRate, FluidityInput, PrefillCurve};
use super::request::RequestMetrics;
use super::ux::{judge, smooth_goodput, token_times_ms, SmoothGoodput, UxParams, UxWindow};
use crate::record::RequestRecord;
use crate::stats::distribution::{percentile_sorted, Distribution};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Parameters of the fluidity-index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FluidityParams {
    /// Decode deadline D_d for the reported fluidity distribution, ms (Etalon's medium target).
    pub tbt_deadline_ms: f64,
    /// Scheduling slack added to the predicted prefill time, ms.
    pub slack_ms: f64,
    /// A request is fluid when its index reaches this (f).
    pub threshold: f64,
    /// Share of requests that must be fluid for the fluid token rate (q).
    pub quantile: f64,
    /// Prefill-time curve from isolated requests; fluidity is not computed without one.
    pub curve: Option<PrefillCurve>,
    /// Where the curve came from, in words.
    pub curve_source: String,
}

impl Default for FluidityParams {
    fn default() -> Self {
        Self {
            tbt_deadline_ms: 50.0,
            slack_ms: 50.0,
            threshold: 0.9,
            quantile: 0.99,
            curve: None,
            curve_source: "none".into(),
        }
    }
}

impl FluidityParams {
    /// D_p of a request: predicted isolated prefill time for its prompt + slack, ms.
    pub fn prefill_deadline_ms(&self, r: &RequestRecord) -> Option<f64> {
        Some(self.curve?.predict_ms(prompt_tokens(r)) + self.slack_ms)
    }

    /// The fluidity inputs of a measured request: its token gaps (the first is the TTFT),
    /// and, for a request that failed, the tokens it never delivered.
    pub fn input(&self, r: &RequestRecord) -> Option<FluidityInput> {
        let prefill_deadline_ms = self.prefill_deadline_ms(r)?;
        let times = token_times_ms(r);
        let mut gaps = Vec::with_capacity(times.len());
        let mut prev = 0.0;
        for t in &times {
            gaps.push(t - prev);
            prev = *t;
        }
        let complete = r.outcome.is_ok() && r.first_content.is_some();
        let missing = if complete {
            0
        } else {
            // At least one token was owed: the answer never finished.
            (r.max_tokens as u64)
                .saturating_sub(r.reasoning_tokens as u64 + times.len() as u64)
                .max(1)
        };
        Some(FluidityInput {
            gaps_ms: gaps,
            prefill_deadline_ms,
            missing,
        })
    }
}

/// Prompt tokens of a request as the prefill curve counts them: the server's count when it
/// gave one.
pub fn prompt_tokens(r: &RequestRecord) -> f64 {
    r.usage_prompt_tokens().unwrap_or(r.input_tokens as u64) as f64
}

/// The fluidity distribution and its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct FluiditySummary {
    pub threshold: f64,
    pub quantile: f64,
    pub tbt_deadline_ms: f64,
    pub slack_ms: f64,
    /// Where D_p came from.
    pub prefill_curve_source: String,
    pub prefill_curve: PrefillCurve,
    /// Requests in the distribution (failed ones included, as not fluid).
    pub n: usize,
    pub p1: f64,
    pub p5: f64,
    pub p50: f64,
    pub mean: f64,
    /// Share of requests whose index reaches `threshold` at `tbt_deadline_ms`.
    pub share_meeting: f64,
    /// Share meeting the threshold as the decode deadline varies: `(tbt_ms, share)`.
    pub curve_vs_tbt: Vec<(f64, f64)>,
}

/// Token rates by three definitions, side by side (Etalon, figure 5a).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct RateComparison {
    pub fluid_tokens_per_s: Option<f64>,
    pub inverse_mean_tpot_per_s: Option<f64>,
    pub inverse_p99_tbt_per_s: Option<f64>,
}

/// The user-experience part of the summary (flattened into it in `run.json`).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Experience {
    pub deadlines: String,
    /// Per-request user idle latency as smooth goodput charges it (at most the patience;
    /// a failed request is charged the patience), ms.
    pub user_idle_ms: Option<Distribution>,
    /// Share of requests that completed and met every deadline.
    pub deadline_attainment: f64,
    pub smooth_goodput: Option<SmoothGoodput>,
    pub fluidity: Option<FluiditySummary>,
    /// Why fluidity is absent, when it is.
    pub fluidity_note: Option<String>,
    pub fluid_token_rate: Option<FluidRate>,
    pub token_rates: RateComparison,
    pub fairness: Option<Fairness>,
}

/// Computes the user-experience metrics of the measured requests, given each one's
/// measurements (`None`: failed or no answer) and the run's TPOT and ITL distributions.
pub fn experience(
    measured: &[&RequestRecord],
    metrics: &[Option<RequestMetrics>],
    ux: &UxParams,
    fl: &FluidityParams,
    baseline: &BTreeMap<String, (f64, f64)>,
    tpot: Option<Distribution>,
    itl: Option<Distribution>,
) -> Experience {
    // Deadlines and idle time, each request on its own clock; smooth goodput over the span
    // of the committed requests' own service.
    let window = UxWindow::of(measured);
    let outcomes: Vec<_> = measured.iter().map(|r| judge(r, ux)).collect();
    let idle = Distribution::of(&mut outcomes.iter().map(|o| o.user_idle_ms).collect());
    let met = outcomes.iter().filter(|o| o.met).count();
    let sg = window.map(|w| smooth_goodput(&outcomes, ux, &w));

    // Fluidity, from the isolated prefill curve only.
    let inputs: Vec<FluidityInput> = measured.iter().filter_map(|r| fl.input(r)).collect();
    let (fluidity, fluidity_note, rate) =
        if let (Some(curve), false) = (fl.curve, inputs.is_empty()) {
            fluidity_summary(fl, curve, &inputs)
        } else if fl.curve.is_none() {
            (
                None,
                Some(format!(
                    "not measured: no isolated prefill curve ({})",
                    fl.curve_source
                )),
                None,
            )
        } else {
            (None, Some("not measured: no measured request".into()), None)
        };

    // Fairness over classes; failed requests stay in their class (as starved).
    let classed: Vec<(&str, Option<&RequestMetrics>)> = measured
        .iter()
        .zip(metrics)
        .filter_map(|(r, m)| Some((r.class.as_deref()?, m.as_ref())))
        .collect();
    let fairness = fairness(&classed, baseline);

    Experience {
        deadlines: ux.scheme.to_string(),
        user_idle_ms: idle,
        deadline_attainment: if outcomes.is_empty() {
            0.0
        } else {
            met as f64 / outcomes.len() as f64
        },
        smooth_goodput: sg,
        fluidity,
        fluidity_note,
        token_rates: RateComparison {
            fluid_tokens_per_s: rate.as_ref().and_then(FluidRate::tokens_per_s),
            inverse_mean_tpot_per_s: tpot.filter(|d| d.mean > 0.0).map(|d| 1000.0 / d.mean),
            inverse_p99_tbt_per_s: itl.filter(|d| d.p99 > 0.0).map(|d| 1000.0 / d.p99),
        },
        fluid_token_rate: rate,
        fairness,
    }
}

/// The fluidity distribution, its share-vs-deadline curve and the fluid token rate.
fn fluidity_summary(
    fl: &FluidityParams,
    curve: PrefillCurve,
    inputs: &[FluidityInput],
) -> (Option<FluiditySummary>, Option<String>, Option<FluidRate>) {
    let share_at = |dd: f64| {
        inputs
            .iter()
            .filter(|i| i.index(dd) >= fl.threshold)
            .count() as f64
            / inputs.len() as f64
    };
    let mut values: Vec<f64> = inputs.iter().map(|i| i.index(fl.tbt_deadline_ms)).collect();
    values.sort_unstable_by(f64::total_cmp);
    let summary = FluiditySummary {
        threshold: fl.threshold,
        quantile: fl.quantile,
        tbt_deadline_ms: fl.tbt_deadline_ms,
        slack_ms: fl.slack_ms,
        prefill_curve_source: fl.curve_source.clone(),
        prefill_curve: curve,
        n: values.len(),
        p1: percentile_sorted(&values, 1.0),
        p5: percentile_sorted(&values, 5.0),
        p50: percentile_sorted(&values, 50.0),
        mean: values.iter().sum::<f64>() / values.len() as f64,
        share_meeting: values.iter().filter(|&&v| v >= fl.threshold).count() as f64
            / values.len() as f64,
        curve_vs_tbt: [10.0, 20.0, 25.0, 50.0, 100.0, 200.0, 500.0]
            .iter()
            .map(|&dd| (dd, share_at(dd)))
            .collect(),
    };
    (
        Some(summary),
        None,
        fluid_rate(inputs, fl.threshold, fl.quantile),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::request::{measure, ItlOption};
    use crate::record::{FailureKind, Outcome};

    const MS: u64 = 1_000_000;

    fn rec(id: u64, class: &str, sent: u64, tokens: &[u64], input: u32) -> RequestRecord {
        RequestRecord {
            class: Some(class.into()),
            ..RequestRecord::completed_for_tests(id, sent, tokens, input)
        }
    }

    fn run(records: &[RequestRecord], fl: &FluidityParams) -> Experience {
        let measured: Vec<&RequestRecord> = records.iter().collect();
        let metrics: Vec<_> = records.iter().map(|r| measure(r, ItlOption::B)).collect();
        experience(
            &measured,
            &metrics,
            &UxParams::default(),
            fl,
            &BTreeMap::new(),
            None,
            None,
        )
    }

    #[test]
    fn failed_requests_are_charged_the_patience_on_their_own_clock() {
        // Default deadlines: d_k = 50·k ms (20 tokens/s, the paper's equation 4); patience
        // 30 s; α = 5, linear.
        // ok: tokens at 40, 90, 140 ms, each before its deadline: idle 0, benefit 3, met.
        let ok = rec(0, "a", 0, &[40, 90, 140], 10);
        // cut: one token at 100 ms (50 ms late), then the stream is cut: its user is charged
        // the patience for the second token: idle 30 s, benefit 1 − 5 × 30 = −149.
        let mut cut = rec(1, "a", 0, &[100], 10);
        cut.max_tokens = 3;
        cut.outcome = Outcome::failed(FailureKind::StreamCut, "x");
        cut.finished_at = 120 * MS;
        // late: its third token at 2,000 ms, due at 150 ms: idle 1.85 s, within the
        // patience, so all 3 tokens count: benefit 3 − 5 × 1.85 = −6.25.
        let late = rec(2, "b", 0, &[100, 150, 2000], 10);
        let e = run(&[ok, cut, late], &FluidityParams::default());
        let sg = e.smooth_goodput.unwrap();
        // Closed loop (no planned sends): T runs from the first send (0) to the end of the
        // last request (late, 2,000 ms).
        assert_eq!(sg.window.duration_s, 2.0);
        assert!(!sg.window.outcome_independent);
        let idle = e.user_idle_ms.unwrap();
        assert_eq!((idle.min, idle.max), (0.0, 30_000.0));
        assert!((idle.p50 - 1850.0).abs() < 1e-9, "{}", idle.p50);
        assert!((e.deadline_attainment - 1.0 / 3.0).abs() < 1e-12);
        // Σ benefit = 3 − 149 − 6.25 = −152.25 over 2 s.
        assert!((sg.value + 76.125).abs() < 1e-9, "{}", sg.value);
        // Tokens read: 3 + 1 + 3 over 2 s.
        assert!((sg.throughput_tokens_per_s - 3.5).abs() < 1e-12);
        // No prefill curve: fluidity is not measured, and says why.
        assert!(e.fluidity.is_none());
        assert!(e
            .fluidity_note
            .unwrap()
            .contains("no isolated prefill curve"));
        let f = e.fairness.unwrap();
        assert_eq!(f.classes["a"].count, 2);
        assert_eq!(f.classes["a"].failed, 1);
    }

    #[test]
    fn fluidity_uses_the_isolated_curve_and_counts_failures_as_not_fluid() {
        // Isolated prefill: 100 ms flat; slack 50 ms: D_p = 150 ms. D_d = 50 ms.
        let fl = FluidityParams {
            curve: Some(PrefillCurve {
                a_ms: 100.0,
                b_ms_per_token: 0.0,
                c_ms_per_token2: 0.0,
                r2: 1.0,
                n: 3,
            }),
            curve_source: "test".into(),
            ..FluidityParams::default()
        };
        // Queued for 3 s: the first token misses D_p by far; every later one is on time.
        let queued = rec(0, "a", 0, &[3000, 3050, 3100, 3150], 10);
        let fast = rec(1, "a", 0, &[100, 150, 200, 250], 10);
        let mut failed = rec(2, "a", 0, &[], 10);
        failed.max_tokens = 4;
        failed.outcome = Outcome::failed(FailureKind::HttpStatus, "HTTP 429");
        let e = run(&[queued, fast, failed], &fl);
        let f = e.fluidity.unwrap();
        assert_eq!(f.n, 3);
        // queued: misses = floor((3000 − 150) / 50) + 1 = 58 of 61 deadlines; fast: all 4;
        // failed: 0 of 4.
        assert!((f.p50 - 3.0 / 61.0).abs() < 1e-12, "{}", f.p50);
        assert!((f.share_meeting - 1.0 / 3.0).abs() < 1e-12);
        assert!(matches!(
            e.fluid_token_rate,
            Some(FluidRate::NotReached { .. })
        ));
    }
}
