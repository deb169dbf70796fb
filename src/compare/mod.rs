//! Comparing systems (or builds, or configurations) from their runs, as the draft's
//! section 6 asks: side by side key metrics, with ≥ 3 runs per system a mean and 95 %
//! interval per metric over run-level values (the hull of a bootstrap and Student's t),
//! Welch's test and effect sizes
//! against the baseline, a verdict per metric; the fair-comparison checklist checked from
//! the records; the normalisations of 6.2. `regress` is the same comparison read as a CI
//! gate.
//!
//! The run is the unit of evidence: each system contributes one value per run (its P50,
//! its throughput), never its requests pooled. Requests of one run share caches, queues
//! and batches, so they are not independent samples; pooling thousands of them would make
//! any difference look significant (see `stats::compare`).
//!
//! Pure: runs in, a serialisable [`ComparisonReport`] out: data only. `report::comparison`
//! renders it (the terminal's tables, `--json`, the page of `--md` and `--html`), which is
//! why this folder sits below `report` in the import order.

pub mod checklist;
pub mod metrics;
pub mod regress;

use crate::artifacts::{RunReport, ToolInfo};
use crate::stats::compare::{
    compare as compare_groups, mean_interval, Direction, Outcome, Verdict,
};
use crate::stats::interval::{mean, BootstrapConfig, MIN_RUNS};
use checklist::{Check, Difference};
use metrics::{Metric, Normalisation};
use serde::{Deserialize, Serialize};

/// Version of the comparison's JSON layout.
pub const SCHEMA_VERSION: u32 = 1;

/// One run, as read from its folder.
#[derive(Debug, Clone)]
pub struct RunInput {
    /// Where the run lives (shown, and kept in the JSON).
    pub path: String,
    pub report: RunReport,
}

/// A system under comparison: a name and its runs (repeats of one configuration).
#[derive(Debug, Clone)]
pub struct SystemInput {
    pub name: String,
    pub runs: Vec<RunInput>,
    /// What the normalised figures divide by.
    pub norm: Normalisation,
}

/// How to compare.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Relative tolerance (0.05 = 5 %): a difference whose whole interval lies within it
    /// is "no difference"; one whose whole interval lies beyond it is better or worse.
    pub tolerance: f64,
    /// Bootstrap of the intervals (95 %, 10,000 resamples, fixed seed by default).
    pub bootstrap: BootstrapConfig,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            tolerance: 0.05,
            bootstrap: BootstrapConfig::default(),
        }
    }
}

/// Everything a comparison found; serialised as `compare --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonReport {
    pub schema_version: u32,
    pub tool: ToolInfo,
    /// Two-sided confidence level of every interval (0.95).
    pub confidence: f64,
    /// Relative tolerance of the verdicts (0.05 = 5 %).
    pub tolerance: f64,
    /// Runs per system needed for a claim (3, draft 6.3).
    pub min_runs: usize,
    /// Every system has at least `min_runs` runs: the verdicts are claims.
    pub enough_runs: bool,
    /// One line on what the numbers support.
    pub note: String,
    /// The systems, the baseline first.
    pub systems: Vec<SystemSummary>,
    /// One row per metric with values in at least one run.
    pub metrics: Vec<MetricRow>,
    /// The fair-comparison checklist.
    pub checklist: Vec<Check>,
    /// Every setting that differs between the systems.
    pub differences: Vec<Difference>,
    /// How the normalised rows were computed, when shown.
    pub normalisation: Vec<String>,
}

/// A system and its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemSummary {
    pub name: String,
    pub runs: Vec<RunId>,
    /// The normalisation inputs given for it.
    pub norm: Normalisation,
}

/// Which run a value came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunId {
    pub path: String,
    pub started_at: String,
    pub seed: u64,
    pub model: String,
    pub engine: Option<String>,
}

/// One metric across the systems.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricRow {
    pub metric: Metric,
    pub label: String,
    pub unit: String,
    pub direction: Direction,
    /// Per system, in the order of `systems`.
    pub systems: Vec<SystemValues>,
    /// Each other system against the baseline (index 1 onwards).
    pub versus_baseline: Vec<Versus>,
}

/// One system's values of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemValues {
    /// Per run, in the order of the system's runs (`None`: the run has no such value).
    pub values: Vec<Option<f64>>,
    /// Runs with a value.
    pub n: usize,
    /// Mean over those runs.
    pub mean: Option<f64>,
    /// Interval of the mean (with at least `min_runs` values): the hull of the percentile
    /// bootstrap and Student's t interval, as in the comparison against the baseline.
    pub ci: Option<(f64, f64)>,
}

/// A system against the baseline on one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versus {
    /// Index of the system in `systems`.
    pub system: usize,
    /// mean(system) − mean(baseline), metric's unit; shown even with too few runs, but
    /// then it is no claim.
    pub difference_of_means: Option<f64>,
    /// The statistics: interval of the difference, Welch's test, Hedges' g, verdict; or
    /// why there are none (fewer than `min_runs` runs).
    pub outcome: Outcome,
    /// The verdict in words, e.g. `worse: +41.2 ms (+23.5 %)`.
    pub summary: String,
}

/// Compares `systems` (the first is the baseline) on the key metrics, the normalised
/// figures where their inputs are known, and the checklist.
pub fn compare(systems: &[SystemInput], options: &Options) -> ComparisonReport {
    let enough_runs = systems.iter().all(|s| s.runs.len() >= MIN_RUNS);
    let (checklist, differences) = checklist::check(systems, MIN_RUNS);
    let mut rows = Vec::new();
    let mut normalisation = Vec::new();
    for metric in Metric::KEY.into_iter().chain(Metric::NORMALISED) {
        let values: Vec<Vec<Option<f64>>> = systems
            .iter()
            .map(|s| {
                s.runs
                    .iter()
                    .map(|r| metric.value(&r.report, &s.norm))
                    .collect()
            })
            .collect();
        let everywhere = values.iter().all(|v| v.iter().any(Option::is_some));
        // A normalised row needs its input for every system; another row is shown when any
        // run has the value (a system without any is visible as such).
        let shown = if Metric::NORMALISED.contains(&metric) {
            everywhere
        } else {
            values.iter().flatten().any(Option::is_some)
        };
        if !shown {
            continue;
        }
        match metric {
            Metric::OutputTokensPerGpuS => normalisation.push(
                "Output per GPU = output tokens/s ÷ GPUs serving the model (--gpus, else each run's own --gpus)".into(),
            ),
            Metric::OutputTokensPerDollar => normalisation.push(
                "Output per dollar = output tokens/s × 3600 ÷ the system's cost in $/h (--cost-per-hour)".into(),
            ),
            _ => {}
        }
        rows.push(metric_row(metric, values, options));
    }
    let note = if systems.len() < 2 {
        "one system: values only; compare needs two or more".to_owned()
    } else if enough_runs {
        format!(
            "{} % intervals over run-level values (bootstrap and Student's t); verdicts against a ±{} % tolerance",
            pct(options.bootstrap.confidence),
            pct(options.tolerance)
        )
    } else {
        format!(
            "values only: a claim needs at least {MIN_RUNS} runs per system (5 are better); runs per system: {}",
            systems
                .iter()
                .map(|s| s.runs.len().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    ComparisonReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo::default(),
        confidence: options.bootstrap.confidence,
        tolerance: options.tolerance,
        min_runs: MIN_RUNS,
        enough_runs,
        note,
        systems: systems.iter().map(summary).collect(),
        metrics: rows,
        checklist,
        differences,
        normalisation,
    }
}

/// A share as a percentage, without decimals when it is whole: `95`, `2.5`.
pub fn pct(share: f64) -> String {
    let p = share * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

fn summary(s: &SystemInput) -> SystemSummary {
    SystemSummary {
        name: s.name.clone(),
        runs: s
            .runs
            .iter()
            .map(|r| RunId {
                path: r.path.clone(),
                started_at: r.report.started_at.clone(),
                seed: r.report.config.seed,
                model: r.report.config.target.model.clone(),
                engine: r.report.server.engine.clone(),
            })
            .collect(),
        norm: s.norm,
    }
}

fn present(values: &[Option<f64>]) -> Vec<f64> {
    values.iter().flatten().copied().collect()
}

fn metric_row(metric: Metric, values: Vec<Vec<Option<f64>>>, options: &Options) -> MetricRow {
    let systems: Vec<SystemValues> = values
        .iter()
        .map(|v| {
            let p = present(v);
            SystemValues {
                n: p.len(),
                mean: mean(&p),
                ci: mean_interval(&p, &options.bootstrap).map(|c| (c.lo, c.hi)),
                values: v.clone(),
            }
        })
        .collect();
    let base = present(&values[0]);
    let versus_baseline = (1..values.len())
        .map(|i| {
            let other = present(&values[i]);
            let outcome = compare_groups(
                &base,
                &other,
                metric.direction(),
                options.tolerance,
                &options.bootstrap,
            );
            let difference_of_means = match (mean(&other), mean(&base)) {
                (Some(o), Some(b)) => Some(o - b),
                _ => None,
            };
            Versus {
                system: i,
                summary: versus_text(metric, &outcome, difference_of_means, mean(&base)),
                difference_of_means,
                outcome,
            }
        })
        .collect();
    MetricRow {
        metric,
        label: metric.label().into(),
        unit: metric.unit().into(),
        direction: metric.direction(),
        systems,
        versus_baseline,
    }
}

/// A signed value with its unit, e.g. `+41.2 ms`, `-0.05`, `+1234 tok/s`.
pub fn signed(metric: Metric, v: f64) -> String {
    let digits = if metric == Metric::SuccessRate {
        3
    } else if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    let unit = match metric.unit() {
        "share" => String::new(),
        u => format!(" {u}"),
    };
    format!("{v:+.digits$}{unit}")
}

/// A signed value without its unit, for a place that states the unit once.
pub fn signed_bare(metric: Metric, v: f64) -> String {
    let text = signed(metric, v);
    match metric.unit() {
        "share" => text,
        u => text.trim_end_matches(u).trim_end().to_owned(),
    }
}

fn versus_text(metric: Metric, outcome: &Outcome, diff: Option<f64>, base: Option<f64>) -> String {
    let rel = |d: f64| match base {
        Some(b) if b != 0.0 => format!(" ({:+.1} %)", d / b.abs() * 100.0),
        _ => String::new(),
    };
    match outcome {
        Outcome::Compared(c) => {
            let word = match c.verdict {
                Verdict::Better => "better",
                Verdict::Worse => "worse",
                Verdict::NoDifference => "no difference",
                Verdict::Inconclusive => "inconclusive",
            };
            format!(
                "{word}: {}{}",
                signed(metric, c.difference),
                rel(c.difference)
            )
        }
        Outcome::NotEnoughRuns { required, .. } => match diff {
            Some(d) => format!(
                "{}{} (no claim: fewer than {required} runs)",
                signed(metric, d),
                rel(d)
            ),
            None => "no values".into(),
        },
        Outcome::InvalidInput { reason } => format!("not compared: {reason}"),
    }
}

#[cfg(test)]
mod tests;
