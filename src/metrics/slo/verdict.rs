//! The SLO verdicts of a run: per-request attainment and goodput, counted one request at a
//! time, and the run-level checks of statistics and floors.

use super::{RateMetric, RequestMetric, RunMetric, SloSpec, SloTerm};
use crate::metrics::request::RequestMetrics;
use crate::stats::distribution::Distribution;
use serde::{Deserialize, Serialize};

/// Per-request attainment and goodput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Attainment {
    /// The per-request bounds, as written.
    pub spec: String,
    /// Share of measured requests (failed ones included) meeting every bound.
    pub attainment: f64,
    /// Share meeting each bound alone: `(bound, share)`.
    pub attainment_by_threshold: Vec<(String, f64)>,
    /// Requests meeting every bound.
    pub met: u64,
    /// Measured requests.
    pub total: u64,
    pub goodput_requests_per_s: f64,
    /// Output tokens (reasoning included) of the requests meeting every bound, per second.
    pub goodput_tokens_per_s: f64,
    pub target_attainment: f64,
    pub passed: bool,
}

/// A run-level check: the observed figure against its bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunCheck {
    /// The term, as written (`p99(ttft_ms)<=500`).
    pub term: String,
    /// The run's figure; `None` when the run had no samples of it (which fails).
    pub observed: Option<f64>,
    /// Samples behind the figure.
    pub samples: usize,
    pub passed: bool,
}

/// Every SLO verdict of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SloResult {
    pub spec: String,
    /// Per-request bounds, when any were given.
    pub per_request: Option<Attainment>,
    /// Run-level statistic bounds and floors, in the order given.
    pub run_checks: Vec<RunCheck>,
    /// Every verdict passed.
    pub passed: bool,
}

/// What run-level checks read.
pub struct RunFigures<'a> {
    pub distribution: &'a dyn Fn(RunMetric) -> Option<Distribution>,
    pub output_tokens_per_s: f64,
    pub requests_per_s: f64,
    pub success_rate: f64,
}

/// Per-request bound counts, built one request at a time (the streamed summary feeds it
/// request by request; [`evaluate`] over a slice).
#[derive(Debug, Clone, Default)]
pub struct AttainmentTally {
    /// Measured requests, failed ones included.
    pub total: u64,
    pub met: u64,
    pub met_tokens: u64,
    /// Requests meeting each per-request bound alone, in the spec's order.
    pub by_bound: Vec<u64>,
}

impl AttainmentTally {
    /// Counts one measured request (`None`: failed or no answer, which meets nothing).
    pub fn add(&mut self, spec: &SloSpec, m: Option<&RequestMetrics>) {
        let bounds: Vec<(RequestMetric, f64)> = spec.per_request().collect();
        if self.by_bound.len() < bounds.len() {
            self.by_bound.resize(bounds.len(), 0);
        }
        self.total += 1;
        let Some(m) = m else { return };
        if spec.met_by(m) {
            self.met += 1;
            self.met_tokens += m.output_tokens as u64;
        }
        for (i, &(metric, max)) in bounds.iter().enumerate() {
            if metric.value(m).is_none_or(|v| v <= max) {
                self.by_bound[i] += 1;
            }
        }
    }
}

/// Evaluates `spec` over the measured requests (`None` for a failed request) and the run's
/// figures; `window_s` is the measurement window that goodput is counted over.
pub fn evaluate(
    spec: &SloSpec,
    requests: &[Option<&RequestMetrics>],
    window_s: f64,
    figures: &RunFigures<'_>,
) -> SloResult {
    let mut tally = AttainmentTally::default();
    for m in requests {
        tally.add(spec, *m);
    }
    evaluate_tally(spec, &tally, window_s, figures)
}

/// [`evaluate`] from counts already made.
pub fn evaluate_tally(
    spec: &SloSpec,
    tally: &AttainmentTally,
    window_s: f64,
    figures: &RunFigures<'_>,
) -> SloResult {
    let bounds: Vec<(RequestMetric, f64)> = spec.per_request().collect();
    let per_request = (!bounds.is_empty()).then(|| attainment(spec, &bounds, tally, window_s));
    let run_checks: Vec<RunCheck> = spec
        .terms
        .iter()
        .filter_map(|t| run_check(t, figures))
        .collect();
    let passed =
        per_request.as_ref().is_none_or(|a| a.passed) && run_checks.iter().all(|c| c.passed);
    SloResult {
        spec: spec.to_string(),
        per_request,
        run_checks,
        passed,
    }
}

/// Per-request attainment of `bounds` (the spec's per-request terms) and goodput over
/// `window_s`.
fn attainment(
    spec: &SloSpec,
    bounds: &[(RequestMetric, f64)],
    tally: &AttainmentTally,
    window_s: f64,
) -> Attainment {
    let total = tally.total;
    let met = tally.met;
    let share = |n: u64| {
        if total == 0 {
            0.0
        } else {
            n as f64 / total as f64
        }
    };
    let by_threshold = bounds
        .iter()
        .enumerate()
        .map(|(i, &(metric, max))| {
            let n = tally.by_bound.get(i).copied().unwrap_or(0);
            (format!("{}<={max}", metric.name()), share(n))
        })
        .collect();
    let attainment = share(met);
    let per_s = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
    Attainment {
        spec: bounds
            .iter()
            .map(|(m, v)| format!("{}<={v}", m.name()))
            .collect::<Vec<_>>()
            .join(","),
        attainment,
        attainment_by_threshold: by_threshold,
        met,
        total,
        goodput_requests_per_s: per_s(met as f64),
        goodput_tokens_per_s: per_s(tally.met_tokens as f64),
        target_attainment: spec.target_attainment,
        passed: total > 0 && attainment + 1e-12 >= spec.target_attainment,
    }
}

/// The run-level check of term `t`; `None` for a per-request term.
fn run_check(t: &SloTerm, figures: &RunFigures<'_>) -> Option<RunCheck> {
    match *t {
        SloTerm::PerRequest { .. } => None,
        SloTerm::RunStat { stat, metric, max } => {
            let d = (figures.distribution)(metric);
            let observed = d.as_ref().map(|d| stat.of(d));
            Some(RunCheck {
                term: t.to_string(),
                observed,
                samples: d.map_or(0, |d| d.n),
                passed: observed.is_some_and(|v| v <= max),
            })
        }
        SloTerm::AtLeast { metric, min } => {
            let v = match metric {
                RateMetric::OutputTokensPerS => figures.output_tokens_per_s,
                RateMetric::RequestsPerS => figures.requests_per_s,
                RateMetric::SuccessRate => figures.success_rate,
            };
            Some(RunCheck {
                term: t.to_string(),
                observed: Some(v),
                samples: 0,
                passed: v + 1e-12 >= min,
            })
        }
    }
}
