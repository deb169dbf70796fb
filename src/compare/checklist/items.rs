//! The checklist items that need more than one description compared across runs: the
//! same seeds, comparable hardware, systems on a shared machine tested at the same time,
//! runs that repeat one configuration, and enough runs.

use super::super::SystemInput;
use super::{flat_view, join, Check, CheckStatus, ADJACENT_MIN_GAP_S};
use crate::artifacts::RunReport;
use std::collections::{BTreeMap, BTreeSet};

/// Same requests in the same order: every system ran the same set of seeds.
pub(super) fn seeds(systems: &[SystemInput]) -> Check {
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

/// A duration-limited run whose measured window is shorter than this share of its limit
/// did not run its test's length (it was interrupted, or stopped sending early).
const MIN_MEASURED_SHARE: f64 = 0.9;

/// The same test duration: the limits every run was given, and what each measured. A run
/// interrupted (Ctrl-C) or cut short covers less than its limit says, so the limits alone
/// passing is not the same duration (a 60-s interrupted run beside 120-s runs).
pub(super) fn same_duration(systems: &[SystemInput]) -> Check {
    let mut check = super::same_across(systems, "duration", "6.4", "Same test duration", limit);
    let measured: Vec<f64> = systems
        .iter()
        .flat_map(|s| &s.runs)
        .map(|r| r.report.summary.window.duration_s)
        .collect();
    let (lo, hi) = measured
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), d| {
            (lo.min(*d), hi.max(*d))
        });
    if lo.is_finite() {
        check.detail.push_str(&if secs(lo) == secs(hi) {
            format!("; measured {}", secs(lo))
        } else {
            format!(
                "; measured {}-{}",
                secs(lo),
                secs(hi).trim_end_matches(" s")
            )
        });
    }
    let short: Vec<String> = systems
        .iter()
        .flat_map(|s| s.runs.iter().map(move |r| (s, r)))
        .filter_map(|(s, r)| {
            cut_short(&r.report).map(|why| format!("{} ({}) {why}", s.name, r.path))
        })
        .collect();
    if !short.is_empty() {
        check.status = CheckStatus::Fail;
        check.detail = format!(
            "{}; but {}: its figures cover a shorter test",
            check.detail,
            short.join("; ")
        );
    }
    check
}

/// A measured length: tenths below 10 s, whole seconds above.
fn secs(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

/// The limits a run was given, in words.
fn limit(r: &RunReport) -> String {
    let l = &r.config.limits;
    match (l.requests, l.duration) {
        (Some(n), Some(d)) => format!("{n} requests or {} s", d.as_secs_f64()),
        (Some(n), None) => format!("{n} requests"),
        (None, Some(d)) => format!("{} s", d.as_secs_f64()),
        (None, None) => "until stopped".into(),
    }
}

/// Why a run measured less than its limits say: interrupted, or (limited by duration
/// alone) a measured window under [`MIN_MEASURED_SHARE`] of it; `None` when it ran its
/// length.
fn cut_short(r: &RunReport) -> Option<String> {
    let measured = r.summary.window.duration_s;
    let limit_s = r.config.limits.duration.map(|d| d.as_secs_f64());
    let of_limit = limit_s.map_or(String::new(), |d| format!(" of its {}", secs(d)));
    if r.interrupted {
        return Some(format!(
            "was interrupted after {}{of_limit}",
            secs(measured)
        ));
    }
    match (r.config.limits.requests, limit_s) {
        (None, Some(d)) if measured < MIN_MEASURED_SHARE * d => {
            Some(format!("measured {}{of_limit}", secs(measured)))
        }
        _ => None,
    }
}

/// Comparable hardware, or figures normalised per GPU (draft 6.1, 6.2).
pub(super) fn hardware(systems: &[SystemInput]) -> Check {
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
pub(super) fn same_time(systems: &[SystemInput]) -> Check {
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
    let allowed_s = longest_run_s(systems).max(ADJACENT_MIN_GAP_S);
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

/// From the first start to the last end of a system's runs, µs since the epoch.
fn span(s: &SystemInput) -> (u64, u64) {
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
}

/// The longest single run of any system, s.
fn longest_run_s(systems: &[SystemInput]) -> f64 {
    systems
        .iter()
        .flat_map(|s| &s.runs)
        .map(|r| {
            r.report
                .finished_at_us
                .saturating_sub(r.report.started_at_us) as f64
                / 1e6
        })
        .fold(0.0, f64::max)
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
pub(super) fn repeats(systems: &[SystemInput]) -> Check {
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

pub(super) fn enough_runs(systems: &[SystemInput], min_runs: usize) -> Check {
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
