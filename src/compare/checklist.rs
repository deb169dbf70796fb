//! The draft's fair-comparison rules (section 6.1 "Equivalence Requirements", 6.3
//! "Statistical Significance", 6.4 "Fair Comparison Checklist") checked from the run
//! records themselves, and every configuration difference between the systems listed.
//!
//! What a record cannot show (whether a configuration is production-representative) is
//! listed as a manual item, never passed silently. Pure.
//!
//! This file holds the items and the checks that compare one description across runs; the
//! checks that need more (seeds, hardware, timing, repeats, run counts) are in
//! `checklist/items.rs`, and the flat view of a run's settings in `checklist/settings.rs`.

mod items;
mod settings;

use super::SystemInput;
use crate::artifacts::fingerprint::{canonical, workload_hash};
use crate::artifacts::RunReport;
use items::{enough_runs, hardware, repeats, same_duration, same_time, seeds};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use settings::differences;
pub use settings::flat_view;
use std::collections::BTreeSet;

/// Whether an item holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// The records show the requirement is met.
    Pass,
    /// The records show it is not: the comparison is not fair on this point.
    Fail,
    /// The requirement does not apply to these runs (e.g. no shared machine).
    NotApplicable,
    /// The records cannot show it: the person comparing must.
    Manual,
}

/// One item of the checklist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Stable name (`workload`, `seeds`, `load`, ...).
    pub id: String,
    /// The draft's section(s).
    pub section: String,
    /// The requirement, in words.
    pub requirement: String,
    pub status: CheckStatus,
    /// What was found.
    pub detail: String,
}

/// A setting whose value differs between systems (or between runs of one system).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// JSON pointer into the run's configuration view (`/config/load/concurrency`,
    /// `/server/version`, ...).
    pub setting: String,
    /// Per system: its value as compact JSON, or `varies: a | b` when its runs disagree.
    pub values: Vec<String>,
}

/// How far apart two systems' runs may be on a shared machine and still count as tested
/// "at the same time": the longest single run, but at least this long.
pub const ADJACENT_MIN_GAP_S: f64 = 60.0;

/// The fair-comparison checklist over `systems` (the first is the baseline).
pub fn check(systems: &[SystemInput], min_runs: usize) -> (Vec<Check>, Vec<Difference>) {
    let differences = differences(systems);
    // The workload first and the seeds second: the note below reads them by position.
    let mut checks = vec![same_workload(systems), seeds(systems)];
    checks.extend(same_procedure(systems));
    checks.extend([
        hardware(systems),
        same_time(systems),
        repeats(systems),
        enough_runs(systems, min_runs),
    ]);
    checks.extend(disclosure(differences.len()));
    // The seed check is about the same requests; it means little if the workloads differ.
    if checks[0].status == CheckStatus::Fail {
        checks[1].detail.push_str(" (but the workloads differ)");
    }
    (checks, differences)
}

/// The same workload specification (and data set) in every run.
fn same_workload(systems: &[SystemInput]) -> Check {
    same_across(
        systems,
        "workload",
        "6.1, 6.4",
        "Identical workload specification",
        |r| {
            let w = serde_json::to_value(&r.config.workload).unwrap_or(Json::Null);
            let d = serde_json::to_value(&r.config.dataset_info).unwrap_or(Json::Null);
            format!(
                "{} ({})",
                r.config.workload.name,
                workload_hash(&w, Some(&d))
            )
        },
    )
}

/// The same load, duration, warm-up, success criteria and SUT boundary in every run.
fn same_procedure(systems: &[SystemInput]) -> Vec<Check> {
    vec![
        same_across(
            systems,
            "load",
            "6.1",
            "Same load model and parameters",
            |r| {
                let cap = r
                    .config
                    .max_concurrency
                    .map(|n| format!(", at most {n} in flight"))
                    .unwrap_or_default();
                format!("{}{cap}", canonical(&to_json(&r.config.load)))
            },
        ),
        same_duration(systems),
        same_across(systems, "warmup", "6.4", "Same warm-up procedure", |r| {
            format!(
                "{} (at most {} s)",
                canonical(&to_json(&r.config.warmup)),
                r.config.warmup_max.as_secs_f64()
            )
        }),
        same_across(
            systems,
            "success_criteria",
            "6.4",
            "Same success criteria (SLOs, failure threshold)",
            |r| {
                let slo = match &r.config.slo {
                    Some(s) => format!("SLO {s} for {} of requests", s.target_attainment),
                    None => "no SLO".into(),
                };
                format!("{slo}; at most {} failed", r.config.max_failure_share)
            },
        ),
        same_across(
            systems,
            "sut_boundary",
            "6.1",
            "Equivalent SUT boundary",
            |r| r.system.sut_boundary.clone(),
        ),
    ]
}

/// What the records cannot show, and the configuration differences noted (`differences`
/// settings differ).
fn disclosure(differences: usize) -> [Check; 2] {
    [
        Check {
            id: "production".into(),
            section: "6.4".into(),
            requirement: "Every system in a production-representative configuration".into(),
            status: CheckStatus::Manual,
            detail: "not visible in the records: state it where the results are published".into(),
        },
        Check {
            id: "differences".into(),
            section: "6.4".into(),
            requirement: "Differences in configuration explicitly noted".into(),
            status: CheckStatus::Pass,
            detail: match differences {
                0 => "no setting differs between the systems".into(),
                1 => "1 setting differs between the systems (listed)".into(),
                n => format!("{n} settings differ between the systems (listed)"),
            },
        },
    ]
}

fn to_json<T: Serialize>(v: &T) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

/// An item that passes when `describe` gives the same text for every run of every system.
pub(super) fn same_across(
    systems: &[SystemInput],
    id: &str,
    section: &str,
    requirement: &str,
    describe: impl Fn(&RunReport) -> String,
) -> Check {
    let per_system: Vec<BTreeSet<String>> = systems
        .iter()
        .map(|s| s.runs.iter().map(|r| describe(&r.report)).collect())
        .collect();
    let all: BTreeSet<&String> = per_system.iter().flatten().collect();
    let (status, detail) = if all.len() <= 1 {
        (
            CheckStatus::Pass,
            all.into_iter()
                .next()
                .map(|v| format!("every run: {v}"))
                .unwrap_or_else(|| "no runs".into()),
        )
    } else {
        let parts: Vec<String> = systems
            .iter()
            .zip(&per_system)
            .map(|(s, v)| format!("{}: {}", s.name, join(v)))
            .collect();
        (CheckStatus::Fail, format!("differs: {}", parts.join("; ")))
    };
    Check {
        id: id.into(),
        section: section.into(),
        requirement: requirement.into(),
        status,
        detail,
    }
}

fn join(values: &BTreeSet<String>) -> String {
    values.iter().cloned().collect::<Vec<_>>().join(" | ")
}
