//! The draft's fair-comparison rules (section 6.1 "Equivalence Requirements", 6.3
//! "Statistical Significance", 6.4 "Fair Comparison Checklist") checked from the run
//! records themselves, and every configuration difference between the systems listed.
//!
//! What a record cannot show (whether a configuration is production-representative) is
//! listed as a manual item, never passed silently. Pure.

use super::fingerprint::{canonical, workload_hash};
use super::SystemInput;
use crate::report::RunReport;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};

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

/// Keys of a run's configuration view that are bookkeeping, not configuration: where it
/// wrote, how it was typed, how it printed, and the seed (checked on its own).
const IGNORED: [&str; 6] = [
    "/config/out_dir",
    "/config/command_line",
    "/config/quiet",
    "/config/client_threads",
    "/config/seed",
    "/config/target/api_key",
];

/// The fair-comparison checklist over `systems` (the first is the baseline).
pub fn check(systems: &[SystemInput], min_runs: usize) -> (Vec<Check>, Vec<Difference>) {
    let differences = differences(systems);
    let mut checks = vec![
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
        ),
        seeds(systems),
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
        same_across(systems, "duration", "6.4", "Same test duration", |r| {
            let l = &r.config.limits;
            match (l.requests, l.duration) {
                (Some(n), Some(d)) => format!("{n} requests or {} s", d.as_secs_f64()),
                (Some(n), None) => format!("{n} requests"),
                (None, Some(d)) => format!("{} s", d.as_secs_f64()),
                (None, None) => "until stopped".into(),
            }
        }),
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
        hardware(systems),
        same_time(systems),
        repeats(systems),
        enough_runs(systems, min_runs),
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
            detail: match differences.len() {
                0 => "no setting differs between the systems".into(),
                1 => "1 setting differs between the systems (listed)".into(),
                n => format!("{n} settings differ between the systems (listed)"),
            },
        },
    ];
    // The seed check is about the same requests; it means little if the workloads differ.
    if checks[0].status == CheckStatus::Fail {
        checks[1].detail.push_str(" (but the workloads differ)");
    }
    (checks, differences)
}

fn to_json<T: Serialize>(v: &T) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

/// An item that passes when `describe` gives the same text for every run of every system.
fn same_across(
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

/// Same requests in the same order: every system ran the same set of seeds.
fn seeds(systems: &[SystemInput]) -> Check {
    let sets: Vec<Vec<u64>> = systems
        .iter()
        .map(|s| {
            let mut v: Vec<u64> = s.runs.iter().map(|r| r.report.config.seed).collect();
            v.sort_unstable();
            v
        })
        .collect();
    let show = |v: &[u64]| {
        v.iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let same = sets.windows(2).all(|w| w[0] == w[1]);
    Check {
        id: "seeds".into(),
        section: "6.1".into(),
        requirement: "Same requests in the same order (same seeds in every system)".into(),
        status: if same {
            CheckStatus::Pass
        } else {
            CheckStatus::Fail
        },
        detail: if same {
            format!("seeds {} in every system", show(&sets[0]))
        } else {
            let parts: Vec<String> = systems
                .iter()
                .zip(&sets)
                .map(|(s, v)| format!("{}: {}", s.name, show(v)))
                .collect();
            format!(
                "differs: {}; run each system with the same --seed values",
                parts.join("; ")
            )
        },
    }
}

/// Comparable hardware, or figures normalised per GPU (draft 6.1, 6.2).
fn hardware(systems: &[SystemInput]) -> Check {
    let describe = |r: &RunReport, s: &SystemInput| {
        let hw = r
            .system
            .hardware
            .clone()
            .unwrap_or_else(|| "not stated".into());
        match s.norm.gpus(r) {
            Some(g) => format!("{hw}, {g} GPUs"),
            None => hw,
        }
    };
    let per_system: Vec<BTreeSet<String>> = systems
        .iter()
        .map(|s| s.runs.iter().map(|r| describe(&r.report, s)).collect())
        .collect();
    let all: BTreeSet<&String> = per_system.iter().flatten().collect();
    let normalised = systems
        .iter()
        .all(|s| s.runs.iter().all(|r| s.norm.gpus(&r.report).is_some()));
    let listing = || {
        systems
            .iter()
            .zip(&per_system)
            .map(|(s, v)| format!("{}: {}", s.name, join(v)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let (status, detail) = if all.len() <= 1 {
        (
            CheckStatus::Pass,
            format!(
                "every run: {}",
                all.into_iter().next().cloned().unwrap_or_default()
            ),
        )
    } else if normalised {
        (
            CheckStatus::Pass,
            format!(
                "hardware differs ({}); throughput is also given per GPU",
                listing()
            ),
        )
    } else {
        (
            CheckStatus::Fail,
            format!(
                "hardware differs ({}); pass --gpus (and --cost-per-hour) to normalise",
                listing()
            ),
        )
    };
    Check {
        id: "hardware".into(),
        section: "6.1, 6.2".into(),
        requirement: "Comparable hardware, or results normalised by it".into(),
        status,
        detail,
    }
}

/// The machine a run loaded: the target's host, or the client's own host for the
/// built-in simulator and loopback targets.
fn machine(r: &RunReport) -> String {
    let client = || format!("{}, the client machine", r.host.hostname);
    if r.config.target.builtin_simulator {
        return client();
    }
    let host = r.config.target.url.host.to_ascii_lowercase();
    if host == "localhost" || host == "::1" || host.starts_with("127.") {
        return client();
    }
    format!("{}:{}", host, r.config.target.url.port)
}

/// Systems on a shared machine were tested at the same time: their runs overlap or follow
/// each other closely (draft 6.4: "both systems tested at same time").
fn same_time(systems: &[SystemInput]) -> Check {
    let machines: Vec<BTreeSet<String>> = systems
        .iter()
        .map(|s| s.runs.iter().map(|r| machine(&r.report)).collect())
        .collect();
    let base = &machines[0];
    let shared: Vec<usize> = (1..systems.len())
        .filter(|&i| !machines[i].is_disjoint(base))
        .collect();
    let mut check = Check {
        id: "same_time".into(),
        section: "6.4".into(),
        requirement: "Systems that share resources tested at the same time".into(),
        status: CheckStatus::NotApplicable,
        detail: "the systems ran on different machines".into(),
    };
    if shared.is_empty() {
        return check;
    }
    let span = |s: &SystemInput| {
        let start = s
            .runs
            .iter()
            .map(|r| r.report.started_at_us)
            .min()
            .unwrap_or(0);
        let end = s
            .runs
            .iter()
            .map(|r| r.report.finished_at_us)
            .max()
            .unwrap_or(0);
        (start, end)
    };
    let longest_run_s = systems
        .iter()
        .flat_map(|s| &s.runs)
        .map(|r| {
            r.report
                .finished_at_us
                .saturating_sub(r.report.started_at_us) as f64
                / 1e6
        })
        .fold(0.0, f64::max);
    let allowed_s = longest_run_s.max(ADJACENT_MIN_GAP_S);
    let (b0, b1) = span(&systems[0]);
    let mut parts = Vec::new();
    let mut ok = true;
    for i in shared {
        let (s0, s1) = span(&systems[i]);
        let gap_s = s0.saturating_sub(b1).max(b0.saturating_sub(s1)) as f64 / 1e6;
        let name = &systems[i].name;
        if gap_s == 0.0 {
            parts.push(format!("{name} overlaps {}", systems[0].name));
        } else if gap_s <= allowed_s {
            parts.push(format!(
                "{name} adjacent to {} ({gap_s:.0} s apart)",
                systems[0].name
            ));
        } else {
            ok = false;
            parts.push(format!(
                "{name} ran {} apart from {}",
                human_gap(gap_s),
                systems[0].name
            ));
        }
    }
    check.status = if ok {
        CheckStatus::Pass
    } else {
        CheckStatus::Fail
    };
    check.detail = format!(
        "same machine ({}): {}{}",
        join(base),
        parts.join("; "),
        if ok {
            String::new()
        } else {
            format!("; conditions may have changed in between: interleave the runs (A, B, A, B, ...) or run them back to back (within {allowed_s:.0} s)")
        }
    );
    check
}

fn human_gap(s: f64) -> String {
    if s < 3600.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 2.0 * 86400.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} days", s / 86400.0)
    }
}

/// The runs of each system repeat one configuration (only the seed may change): otherwise
/// their spread is not run-to-run noise and the statistics mean little (6.3).
fn repeats(systems: &[SystemInput]) -> Check {
    let mut varying = Vec::new();
    for s in systems {
        let views: Vec<BTreeMap<String, String>> =
            s.runs.iter().map(|r| flat_view(&r.report)).collect();
        let keys: BTreeSet<&String> = views.iter().flat_map(|v| v.keys()).collect();
        let differ: Vec<&String> = keys
            .into_iter()
            .filter(|k| {
                let vals: BTreeSet<Option<&String>> = views.iter().map(|v| v.get(*k)).collect();
                vals.len() > 1
            })
            .collect();
        if !differ.is_empty() {
            let shown: Vec<&str> = differ.iter().take(5).map(|k| k.as_str()).collect();
            let more = differ.len().saturating_sub(5);
            varying.push(format!(
                "{}: {}{}",
                s.name,
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
    }
    Check {
        id: "repeats".into(),
        section: "6.3".into(),
        requirement: "The runs of each system repeat one configuration".into(),
        status: if varying.is_empty() {
            CheckStatus::Pass
        } else {
            CheckStatus::Fail
        },
        detail: if varying.is_empty() {
            "within each system, only the seed varies".into()
        } else {
            format!(
                "runs of one system differ in: {} (their spread is not only noise)",
                varying.join("; ")
            )
        },
    }
}

fn enough_runs(systems: &[SystemInput], min_runs: usize) -> Check {
    let counts: Vec<String> = systems
        .iter()
        .map(|s| format!("{}: {}", s.name, s.runs.len()))
        .collect();
    let ok = systems.iter().all(|s| s.runs.len() >= min_runs);
    Check {
        id: "runs".into(),
        section: "6.3".into(),
        requirement: format!("At least {min_runs} independent runs per system"),
        status: if ok {
            CheckStatus::Pass
        } else {
            CheckStatus::Fail
        },
        detail: format!(
            "runs per system: {}{}",
            counts.join(", "),
            if ok {
                ""
            } else {
                "; no claim can be made from fewer (5 are better)"
            }
        ),
    }
}

/// Settings whose value differs between systems, each with its per-system value.
fn differences(systems: &[SystemInput]) -> Vec<Difference> {
    let per_system: Vec<BTreeMap<String, BTreeSet<String>>> = systems
        .iter()
        .map(|s| {
            let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            let views: Vec<BTreeMap<String, String>> =
                s.runs.iter().map(|r| flat_view(&r.report)).collect();
            let keys: BTreeSet<&String> = views.iter().flat_map(|v| v.keys()).collect();
            for k in keys {
                for v in &views {
                    m.entry(k.clone())
                        .or_default()
                        .insert(v.get(k).cloned().unwrap_or_else(|| "(absent)".into()));
                }
            }
            m
        })
        .collect();
    let keys: BTreeSet<&String> = per_system.iter().flat_map(|m| m.keys()).collect();
    let mut out = Vec::new();
    for k in keys {
        let shown: Vec<String> = per_system
            .iter()
            .map(|m| match m.get(k) {
                None => "(absent)".into(),
                Some(vals) if vals.len() == 1 => vals.iter().next().cloned().unwrap_or_default(),
                Some(vals) => format!("varies: {}", join(vals)),
            })
            .collect();
        if shown.iter().collect::<BTreeSet<_>>().len() > 1 {
            out.push(Difference {
                setting: k.clone(),
                values: shown,
            });
        }
    }
    out
}

/// A run's configuration as `pointer → compact JSON`: the run configuration, what the
/// server said about itself, the system as described, the tokenizer and the tool version.
/// The built-in simulator's URL (a fresh port every run) reads as `built-in simulator`.
pub fn flat_view(r: &RunReport) -> BTreeMap<String, String> {
    let mut config = to_json(&r.config);
    if r.config.target.builtin_simulator {
        if let Some(u) = config.pointer_mut("/target/url") {
            *u = Json::from("built-in simulator");
        }
        if let Some(u) = config.pointer_mut("/telemetry/metrics_url") {
            if !u.is_null() {
                *u = Json::from("built-in simulator /metrics");
            }
        }
    }
    let mut server = to_json(&r.server);
    if let Some(obj) = server.as_object_mut() {
        // The Server header of a simulator carries nothing a reader compares.
        obj.remove("server_header");
    }
    let view = serde_json::json!({
        "config": config,
        "server": server,
        "system": to_json(&r.system),
        "tokenizer": {
            "name": r.tokenizer.name,
            "counting_option": r.tokenizer.counting_option,
        },
        "tool": {"version": r.tool.version},
    });
    let mut out = BTreeMap::new();
    flatten("", &view, &mut out);
    for k in IGNORED {
        out.retain(|key, _| key != k && !key.starts_with(&format!("{k}/")));
    }
    out
}

/// Leaves of `value` as `pointer → compact JSON`; arrays are leaves (a list of classes or
/// notes reads best whole).
fn flatten(prefix: &str, value: &Json, out: &mut BTreeMap<String, String>) {
    match value {
        Json::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                flatten(&format!("{prefix}/{k}"), v, out);
            }
        }
        other => {
            let mut text = canonical(other);
            if text.len() > 120 {
                let mut cut = 100;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text = format!(
                    "{}… (hash {})",
                    &text[..cut],
                    super::fingerprint::hash_value(other)
                );
            }
            out.insert(prefix.to_owned(), text);
        }
    }
}
