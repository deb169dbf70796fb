//! The regression gate of `servebench regress`: a candidate's runs against a baseline's,
//! metric by metric, failing only when a key metric is worse beyond the tolerance *with
//! confidence* (the whole interval of the difference past it, see
//! `stats::compare::regressed`), so that noise never fails a pipeline and a real slowdown
//! always does once there are enough runs. Pure: runs in, a [`RegressionReport`] out
//! (`report::comparison::regress` puts it in words).
//!
//! With too few runs to decide, a change too large for noise still counts: a key metric
//! worse than the baseline by more than [`GROSS_CHANGE`] (or the tolerance, if larger) is a
//! *likely regression*, reported with no statistical claim and its own exit status.

use super::metrics::{Metric, Normalisation};
use super::RunInput;
use crate::stats::compare::{compare, regressed, Outcome};
use crate::stats::interval::{mean, BootstrapConfig, MIN_RUNS};
use serde::{Deserialize, Serialize};

/// The relative change in the bad direction beyond which a gate with too few runs to decide
/// still reports a likely regression (0.20 = 20 %; the tolerance when that is larger).
pub const GROSS_CHANGE: f64 = 0.20;

/// One metric of the gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricGate {
    pub metric: Metric,
    pub label: String,
    pub unit: String,
    /// Mean over the baseline's runs.
    pub baseline_mean: f64,
    /// Mean over the candidate's runs.
    pub candidate_mean: f64,
    /// candidate − baseline, metric's unit.
    pub difference: f64,
    /// difference / |baseline| (0.05 = 5 %); `None` for a zero baseline.
    pub relative_difference: Option<f64>,
    /// The full comparison (interval, Welch, Hedges' g, verdict).
    pub outcome: Outcome,
    /// Worse beyond the tolerance with confidence; `None` when there were too few runs.
    pub regressed: Option<bool>,
    /// With too few runs to decide: worse than the baseline by more than the report's
    /// `gross_change` (no statistical claim). Always false when the gate could decide.
    #[serde(default)]
    pub likely_regression: bool,
}

/// The gate's result; serialised as `regress --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressionReport {
    pub schema_version: u32,
    /// Relative tolerance (0.05 = 5 %).
    pub tolerance: f64,
    pub baseline_runs: usize,
    pub candidate_runs: usize,
    /// Both sides had at least `min_runs` runs, so the gate could decide.
    pub decided: bool,
    pub min_runs: usize,
    /// A key metric regressed.
    pub regressed: bool,
    /// The relative change in the bad direction that counts as a likely regression when
    /// the gate cannot decide: [`GROSS_CHANGE`] or the tolerance, whichever is larger.
    #[serde(default)]
    pub gross_change: f64,
    /// Not decided, but a key metric changed by more than `gross_change` in the bad
    /// direction: a likely regression, with no statistical claim.
    #[serde(default)]
    pub likely_regression: bool,
    pub metrics: Vec<MetricGate>,
}

/// Whether a relative change (candidate − baseline over |baseline|) goes the bad way by
/// more than `gross`.
fn grossly_worse(relative: Option<f64>, lower_is_better: bool, gross: f64) -> bool {
    match relative {
        Some(x) if lower_is_better => x > gross,
        Some(x) => x < -gross,
        None => false,
    }
}

/// Gates `candidate` against `baseline` on every key metric both sides have.
pub fn gate(baseline: &[RunInput], candidate: &[RunInput], tolerance: f64) -> RegressionReport {
    let norm = Normalisation::default();
    let values = |runs: &[RunInput], m: Metric| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| m.value(&r.report, &norm))
            .collect()
    };
    let decided = baseline.len() >= MIN_RUNS && candidate.len() >= MIN_RUNS;
    let gross = GROSS_CHANGE.max(tolerance);
    let mut metrics = Vec::new();
    for m in Metric::KEY {
        let (b, c) = (values(baseline, m), values(candidate, m));
        let (Some(bm), Some(cm)) = (mean(&b), mean(&c)) else {
            continue;
        };
        let lower_is_better = m.direction() == crate::stats::compare::Direction::LowerIsBetter;
        let relative = (bm != 0.0).then(|| (cm - bm) / bm.abs());
        metrics.push(MetricGate {
            metric: m,
            label: m.label().into(),
            unit: m.unit().into(),
            baseline_mean: bm,
            candidate_mean: cm,
            difference: cm - bm,
            relative_difference: relative,
            outcome: compare(
                &b,
                &c,
                m.direction(),
                tolerance,
                &BootstrapConfig::default(),
            ),
            regressed: regressed(&b, &c, lower_is_better, tolerance),
            likely_regression: !decided && grossly_worse(relative, lower_is_better, gross),
        });
    }
    RegressionReport {
        schema_version: super::SCHEMA_VERSION,
        tolerance,
        baseline_runs: baseline.len(),
        candidate_runs: candidate.len(),
        decided,
        min_runs: MIN_RUNS,
        regressed: metrics.iter().any(|g| g.regressed == Some(true)),
        gross_change: gross,
        likely_regression: metrics.iter().any(|g| g.likely_regression),
        metrics,
    }
}
