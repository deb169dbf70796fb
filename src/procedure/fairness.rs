//! 5.6 Scheduling Fairness: each request class alone, then mixed, at the same load; per-class
//! latency (Table 8), Jain's index, starvation and latency inflation (Table 9).
//!
//! "Performance of each class in isolation at same total load" is read as: each class alone
//! at the arrival rate it has in the mix. The mixed run then differs from the isolated ones
//! only by the other classes' presence, so inflation measures interference. (Running the
//! long class alone at the whole mix's rate would overload most servers and make inflation
//! fall below 1, which is not what the test is after.)
//!
//! Workload: the run's when it has classes, else `fairness-mix` (the draft's short and long
//! classes, 80/20). Load: 80 % of saturation (the draft recommends 70-90 %): of `--capacity`,
//! else of the throughput search's answer on the class mix (5.2: the highest rate
//! sustained), not of a short closed-loop estimate.

use super::compliance::Checklist;
use super::level::{rate, Bench, LevelSpec, Load, Role, Stop};
use super::report::Finding;
use super::session::Session;
use super::throughput::capacity;
use super::{common_parameters, Options};
use crate::metrics::fairness::ClassStats;
use crate::workload::WorkloadSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// `result` of a fairness test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FairnessResult {
    /// The saturation throughput of the class mix the load is a share of, requests per
    /// second.
    pub capacity_rate_per_s: Option<f64>,
    /// Where it came from: `given (--capacity)` or the throughput search's answer.
    #[serde(default)]
    pub capacity_source: String,
    /// A rate above it saturated (or it was given): the share is of saturation, not of a
    /// lower bound on it.
    #[serde(default)]
    pub capacity_saturated: bool,
    /// Total arrival rate of the mixed run, requests per second.
    pub rate_per_s: Option<f64>,
    /// Isolated TTFT (P50, P99) per class, ms.
    pub isolated: BTreeMap<String, (f64, f64)>,
    /// Jain's index over normalized latency in the mixed run.
    pub jain_index: Option<f64>,
    /// Tables 8 and 9 per class (mixed run), inflation included.
    pub classes: BTreeMap<String, ClassStats>,
}

/// The default share of capacity.
pub const SHARE: f64 = 0.8;

/// The workload with only `class` (weight 1).
fn only(w: &WorkloadSpec, class: &str) -> WorkloadSpec {
    let mut one = w.clone();
    one.classes.retain(|c| c.name == class);
    for c in &mut one.classes {
        c.weight = 1.0;
    }
    one.name = format!("{} ({class} only)", w.name);
    one
}

/// Runs the test.
pub fn run(bench: &mut dyn Bench, o: &Options) -> Finding {
    let mut s = Session::new(bench, o.slo.clone());
    let workload = if o.workload.classes.len() >= 2 {
        o.workload.clone()
    } else {
        crate::workload::Scenario::named("fairness-mix").expect("built in")
    };
    let share = o
        .load_shares
        .as_ref()
        .and_then(|v| v.first().copied())
        .unwrap_or(SHARE);
    let isolated_d = o.duration(120.0, 4.0);
    let mixed_d = o
        .level_duration
        .map(|d| d.max(isolated_d))
        .unwrap_or_else(|| o.duration(300.0, 8.0));
    let mut result = FairnessResult::default();
    // The throughput search runs the mixed workload: that is the load the share is of.
    let mut est_opts = o.clone();
    est_opts.workload = workload.clone();
    s.workload = Some(workload.clone());
    let cap = capacity(&mut s, &est_opts);
    s.workload = None;
    let stop = match cap {
        Err(e) => Some(e),
        Ok(found) => {
            let cap = found.rate_per_s;
            result.capacity_rate_per_s = Some(cap);
            result.capacity_source = found.source;
            result.capacity_saturated = found.saturated;
            let total = cap * share;
            result.rate_per_s = Some(total);
            measure_isolated(&mut s, &workload, total, isolated_d, &mut result)
                .or_else(|| measure_mixed(&mut s, &workload, total, mixed_d, &mut result))
        }
    };
    let answer = answer(&result);
    let compliance = compliance(&s, o, &workload, &result, share, mixed_d);
    Finding {
        answered: result.jain_index.is_some(),
        levels: s.levels,
        result: super::TestResult::Fairness(result),
        answer,
        compliance,
        parameters: serde_json::json!({
            "common": common_parameters(o),
            "workload": workload.name,
            "classes": workload.classes.iter().map(|c| (c.name.clone(), c.weight)).collect::<Vec<_>>(),
            "share_of_capacity": share,
            "isolated_level_s": isolated_d.as_secs_f64(),
            "mixed_level_s": mixed_d.as_secs_f64(),
        }),
        stopped: stop.map(|e| e.to_string()),
    }
}

/// Each class alone at the rate it has in the mix (`total` requests per second in all),
/// for `duration`; their TTFT (P50, P99) go to the result. The stop if a level could not
/// run.
fn measure_isolated(
    s: &mut Session,
    workload: &WorkloadSpec,
    total: f64,
    duration: Duration,
    result: &mut FairnessResult,
) -> Option<Stop> {
    let total_weight: f64 = workload.classes.iter().map(|c| c.weight).sum();
    for class in &workload.classes {
        let r = total * class.weight / total_weight;
        let mut spec = LevelSpec::new(
            format!("{} alone · {} req/s", class.name, rate(r)),
            Role::Isolated,
            Load::Rate { rate_per_s: r },
            duration,
        );
        spec.workload = Some(only(workload, &class.name));
        match s.measure(spec) {
            Ok(l) => {
                if let Some(d) = l.summary.ttft_ms {
                    result.isolated.insert(class.name.clone(), (d.p50, d.p99));
                }
            }
            Err(e) => return Some(e),
        }
    }
    None
}

/// The classes mixed at `total` requests per second for `duration`, against their
/// isolated TTFT; Jain's index and the per-class figures go to the result. The stop if the
/// level could not run.
fn measure_mixed(
    s: &mut Session,
    workload: &WorkloadSpec,
    total: f64,
    duration: Duration,
    result: &mut FairnessResult,
) -> Option<Stop> {
    let mut spec = LevelSpec::new(
        format!("mixed · {} req/s", rate(total)),
        Role::Mixed,
        Load::Rate { rate_per_s: total },
        duration,
    );
    spec.workload = Some(workload.clone());
    spec.baseline = result.isolated.clone();
    match s.measure(spec) {
        Ok(l) => {
            if let Some(f) = &l.summary.experience.fairness {
                result.jain_index = Some(f.jain_index);
                result.classes = f.classes.clone();
            }
            None
        }
        Err(e) => Some(e),
    }
}

/// The one-line answer.
fn answer(result: &FairnessResult) -> String {
    match result.jain_index {
        Some(j) => {
            let worst = result
                .classes
                .iter()
                .filter_map(|(n, c)| c.latency_inflation_p99.map(|i| (n, i)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            format!(
                "Jain's index {j:.3} ({}){}",
                if j >= 0.9 {
                    "fair"
                } else {
                    "significant unfairness: below 0.9"
                },
                worst
                    .map(|(n, i)| format!("; {n} requests' P99 TTFT inflated {i:.2}× by the mix"))
                    .unwrap_or_default()
            )
        }
        None => "the mixed run did not complete".into(),
    }
}

fn compliance(
    s: &Session,
    o: &Options,
    w: &WorkloadSpec,
    r: &FairnessResult,
    share: f64,
    mixed: std::time::Duration,
) -> super::compliance::Compliance {
    let mut c = Checklist::default();
    c.common(o.quick, s.warmup.as_ref(), o.seed);
    c.guardrails("4.8.1", o.disclosure.guardrails.as_deref(), &s.levels);
    c.must(
        "5.6.2",
        "a skewed workload with two or more request classes (Synthetic-Skewed REQUIRED; short and long classes)",
        w.classes.len() >= 2,
        format!(
            "{}: {}",
            w.name,
            w.classes
                .iter()
                .map(|c| format!("{} {:.0} %", c.name, 100.0 * c.weight / w.classes.iter().map(|c| c.weight).sum::<f64>()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let fewest = r.classes.values().map(|c| c.count).min().unwrap_or(0);
    c.must(
        "5.6.2",
        "at least 500 requests per class",
        fewest >= 500,
        format!("fewest: {fewest}"),
    );
    c.should(
        "5.6.2",
        "load at 70-90 % of saturation (RECOMMENDED)",
        (0.7..=0.9).contains(&share) && r.capacity_saturated,
        format!(
            "{:.0} % of {}{}",
            share * 100.0,
            r.capacity_rate_per_s
                .map(|c| format!("{} req/s", rate(c)))
                .unwrap_or_else(|| "no capacity".into()),
            if r.capacity_source.is_empty() {
                String::new()
            } else {
                format!(" ({})", r.capacity_source)
            }
        ),
    );
    c.must(
        "5.6.3",
        "each class measured in isolation at its load",
        r.isolated.len() == w.classes.len(),
        format!("{} of {} classes", r.isolated.len(), w.classes.len()),
    );
    let secs = mixed.as_secs_f64();
    c.must(
        "5.6.3",
        "mixed run of at least 300 s",
        secs >= 300.0,
        format!("{secs:.0} s"),
    );
    c.finish()
}
