//! The regression gate of `servebench regress`: a candidate's runs against a baseline's,
//! metric by metric, failing only when a key metric is worse beyond the tolerance *with
//! confidence* (the whole interval of the difference past it, see
//! `stats::compare::regressed`), so that noise never fails a pipeline and a real slowdown
//! always does once there are enough runs. Pure.

use super::metrics::{Metric, Normalisation};
use super::{signed, signed_bare, RunInput};
use crate::stats::compare::{compare, regressed, Outcome, Verdict};
use crate::stats::interval::{mean, BootstrapConfig, MIN_RUNS};
use serde::{Deserialize, Serialize};

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
    pub metrics: Vec<MetricGate>,
}

/// Gates `candidate` against `baseline` on every key metric both sides have.
pub fn gate(baseline: &[RunInput], candidate: &[RunInput], tolerance: f64) -> RegressionReport {
    let norm = Normalisation::default();
    let values = |runs: &[RunInput], m: Metric| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| m.value(&r.report, &norm))
            .collect()
    };
    let mut metrics = Vec::new();
    for m in Metric::KEY {
        let (b, c) = (values(baseline, m), values(candidate, m));
        let (Some(bm), Some(cm)) = (mean(&b), mean(&c)) else {
            continue;
        };
        let lower_is_better = m.direction() == crate::stats::compare::Direction::LowerIsBetter;
        metrics.push(MetricGate {
            metric: m,
            label: m.label().into(),
            unit: m.unit().into(),
            baseline_mean: bm,
            candidate_mean: cm,
            difference: cm - bm,
            relative_difference: (bm != 0.0).then(|| (cm - bm) / bm.abs()),
            outcome: compare(
                &b,
                &c,
                m.direction(),
                tolerance,
                &BootstrapConfig::default(),
            ),
            regressed: regressed(&b, &c, lower_is_better, tolerance),
        });
    }
    let decided = baseline.len() >= MIN_RUNS && candidate.len() >= MIN_RUNS;
    RegressionReport {
        schema_version: super::SCHEMA_VERSION,
        tolerance,
        baseline_runs: baseline.len(),
        candidate_runs: candidate.len(),
        decided,
        min_runs: MIN_RUNS,
        regressed: metrics.iter().any(|g| g.regressed == Some(true)),
        metrics,
    }
}

/// The gate in words: one line per metric, regressions first marked `REGRESSED`.
pub fn render(r: &RegressionReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Regression gate: {} candidate run(s) against {} baseline run(s), tolerance {:.1} %",
        r.candidate_runs,
        r.baseline_runs,
        r.tolerance * 100.0
    );
    for g in &r.metrics {
        let rel = g
            .relative_difference
            .map(|x| format!("({:+.1} %)", x * 100.0))
            .unwrap_or_default();
        let state = match (&g.outcome, g.regressed) {
            (_, Some(true)) => "REGRESSED",
            (Outcome::Compared(c), _) => match c.verdict {
                Verdict::Better => "better",
                Verdict::NoDifference => "no difference",
                Verdict::Inconclusive => "within noise",
                Verdict::Worse => "worse",
            },
            _ => "not decided",
        };
        let _ = writeln!(
            out,
            "  {:<18} {:>9} → {:>9} {:<5} {:>12} {:>10}  {state}",
            g.label,
            short(g.baseline_mean),
            short(g.candidate_mean),
            g.unit,
            signed(g.metric, g.difference),
            rel,
        );
        if let Outcome::Compared(c) = &g.outcome {
            let p = if c.welch.p_value < 0.001 {
                "< 0.001".to_owned()
            } else {
                format!("= {:.3}", c.welch.p_value)
            };
            let unit = match g.unit.as_str() {
                "share" => String::new(),
                u => format!(" {u}"),
            };
            let _ = writeln!(
                out,
                "      95 % CI of the change {} to {}{unit}; Welch p {p}{}",
                signed_bare(g.metric, c.difference_ci.0),
                signed_bare(g.metric, c.difference_ci.1),
                if g.regressed == Some(true) {
                    format!("; beyond the {:.1} % tolerance", r.tolerance * 100.0)
                } else {
                    String::new()
                }
            );
        }
    }
    let verdict = if !r.decided {
        format!(
            "NOT DECIDED: a gate needs at least {} runs on each side (got {} baseline, {} candidate); with fewer, noise and a regression look alike",
            r.min_runs, r.baseline_runs, r.candidate_runs
        )
    } else if r.regressed {
        let names: Vec<&str> = r
            .metrics
            .iter()
            .filter(|g| g.regressed == Some(true))
            .map(|g| g.label.as_str())
            .collect();
        crate::report::terminal::wrap(&format!("REGRESSION in {}", names.join(", ")), 100, 2)
    } else {
        "no regression beyond the tolerance".into()
    };
    let _ = writeln!(out, "{verdict}");
    out
}

fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}
