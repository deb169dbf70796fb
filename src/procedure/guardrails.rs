//! 5.10 Guardrail Overhead: labelled configurations of the same system (baseline, input
//! filter, output filter, full) at 25, 50 and 75 % of the baseline's capacity (Table 13),
//! and each configuration's maximum throughput (Table 14).
//!
//! Configurations are targets (`--target baseline=URL --target input=URL …`); the one named
//! `baseline` (else the first) is the reference. Every configuration gets the same offered
//! loads (shares of the *baseline's* capacity) so their latencies compare at equal load;
//! maximum throughput is each configuration's own throughput search (5.2, open loop, on
//! saturation alone): the output throughput at the highest rate it sustained, so a filter
//! that only adds latency costs no throughput there (at a fixed concurrency it would:
//! throughput is concurrency ÷ latency). The baseline's sustained rate is the capacity the
//! shares are of. Overheads are the
//! draft's: input filter = TTFT(input) − TTFT(baseline), total = E2E(full) − E2E(baseline),
//! at the P50 of the 50 % level.

use super::compliance::Checklist;
use super::level::{rate, Bench, LevelOutcome, LevelSpec, Load, Role, Stop};
use super::report::Finding;
use super::session::Session;
use super::throughput::{capacity_of, saturation_search, thousands, ThroughputResult};
use super::{common_parameters, Options};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One row of Table 13.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GuardrailRow {
    pub level: usize,
    pub configuration: String,
    pub share: f64,
    pub offered_rate_per_s: f64,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub e2e_p50_ms: Option<f64>,
    pub e2e_p99_ms: Option<f64>,
    pub output_tokens_per_s: f64,
}

/// One row of Table 14.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GuardrailCapacity {
    pub configuration: String,
    /// Index in `levels` of the highest rate the configuration's throughput search
    /// sustained; null when it sustained none.
    pub level: Option<usize>,
    /// Output tokens per second at that level (its steady window); 0 when none.
    pub max_output_tokens_per_s: f64,
    /// The highest rate the search sustained, requests per second.
    #[serde(default)]
    pub max_rate_per_s: Option<f64>,
    /// How the configuration's search ended, in words.
    #[serde(default)]
    pub search: String,
    /// Relative to the baseline (−0.2 = 20 % less); `None` for the baseline, and for a
    /// configuration whose search sustained no rate.
    pub reduction: Option<f64>,
}

/// Table 14's row of one configuration from its throughput search.
pub fn capacity_row(configuration: &str, found: &ThroughputResult) -> GuardrailCapacity {
    GuardrailCapacity {
        configuration: configuration.into(),
        level: found.sustainable_level,
        max_output_tokens_per_s: found.max_output_tokens_per_s.unwrap_or(0.0),
        max_rate_per_s: found.sustainable_rate_per_s,
        search: found.search.clone(),
        reduction: None,
    }
}

/// Each configuration's maximum throughput relative to the baseline's (−0.2 = 20 % less).
pub fn reductions(rows: &mut [GuardrailCapacity], baseline: &str) {
    let base = rows
        .iter()
        .find(|x| x.configuration == baseline && x.level.is_some())
        .map(|x| x.max_output_tokens_per_s)
        .filter(|b| *b > 0.0);
    for x in rows.iter_mut().filter(|x| x.configuration != baseline) {
        x.reduction = base
            .filter(|_| x.level.is_some())
            .map(|b| x.max_output_tokens_per_s / b - 1.0);
    }
}

/// `result` of a guardrail test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GuardrailResult {
    pub baseline: String,
    /// The baseline's capacity the shares are of, requests per second.
    pub baseline_capacity_rate_per_s: Option<f64>,
    pub rows: Vec<GuardrailRow>,
    pub capacity: Vec<GuardrailCapacity>,
    /// TTFT P50 (input filter) − TTFT P50 (baseline) at the 50 % level, ms.
    pub input_filter_overhead_ms: Option<f64>,
    /// E2E P50 (full) − E2E P50 (baseline) at the 50 % level, ms.
    pub total_overhead_ms: Option<f64>,
    /// Draft 4.8.1: what each configuration filters and how many requests it refused.
    #[serde(default)]
    pub disclosure: Vec<GuardrailDisclosure>,
    /// Draft 4.8.1: the safety systems by name (`--safety-systems`), when known.
    #[serde(default)]
    pub safety_systems: Option<String>,
}

/// What the report must disclose about one configuration (draft 4.8.1; 4.8.2 asks that a
/// configuration with safety systems disabled be noted as such).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GuardrailDisclosure {
    pub configuration: String,
    /// Input content filtering enabled; `None` when the configuration's name does not say
    /// (names starting with `baseline`, `input`, `output` or `full` do).
    pub input_filter: Option<bool>,
    /// Output content filtering enabled; `None` as for `input_filter`.
    pub output_filter: Option<bool>,
    /// Requests the configuration refused (content filter or refusal) over all its levels.
    pub refused_requests: u64,
}

/// The filters a configuration's name stands for: (input, output).
pub fn filters_of(name: &str) -> Option<(bool, bool)> {
    [
        ("baseline", (false, false)),
        ("input", (true, false)),
        ("output", (false, true)),
        ("full", (true, true)),
    ]
    .iter()
    .find(|(prefix, _)| name.starts_with(prefix))
    .map(|(_, f)| *f)
}

/// The draft's load levels.
pub const SHARES: [f64; 3] = [0.25, 0.5, 0.75];

/// Runs the test.
pub fn run(bench: &mut dyn Bench, o: &Options) -> Finding {
    let mut s = Session::new(bench, o.slo.clone());
    let duration = o.duration(60.0, 4.0);
    let shares = o.load_shares.clone().unwrap_or_else(|| SHARES.to_vec());
    let (baseline, order) = configurations(&o.targets);
    let mut result = GuardrailResult {
        baseline: baseline.clone(),
        ..Default::default()
    };
    let mut stop: Option<Stop> = None;
    if o.targets.len() < 2 {
        stop = Some(Stop::Failed(anyhow::anyhow!(
            "the guardrail test compares configurations: give at least two, e.g. --target baseline=URL --target full=URL (input= and output= for the filters alone)"
        )));
    }
    let c = o.estimate_concurrency.max(1);
    let mut baseline_rps = None;
    if stop.is_none() {
        let (rows, base, stopped) = max_throughputs(&mut s, o, &order, &baseline);
        result.capacity = rows;
        baseline_rps = base;
        stop = stopped;
    }
    result.baseline_capacity_rate_per_s = baseline_rps;
    if let (Some(cap), None) = (baseline_rps.filter(|r| *r > 0.0), &stop) {
        stop = measure_shares(&mut s, cap, &shares, &order, duration, &mut result.rows);
    }
    (result.input_filter_overhead_ms, result.total_overhead_ms) =
        overheads(&result.rows, &o.targets, &baseline);
    result.safety_systems = o.safety_systems.clone();
    result.disclosure = disclosure(&s, &order);
    let answer = answer(&result);
    let compliance = compliance(&s, o, &result, &shares);
    Finding {
        answered: result.capacity.len() >= 2,
        levels: s.levels,
        result: super::TestResult::Guardrails(result),
        answer,
        compliance,
        parameters: serde_json::json!({
            "common": common_parameters(o),
            "configurations": order,
            "shares": shares,
            "level_duration_s": duration.as_secs_f64(),
            "search_level_duration_s": o.duration(60.0, 6.0).as_secs_f64(),
            "estimate_concurrency": c,
        }),
        stopped: stop.map(|e| e.to_string()),
    }
}

/// The reference configuration (the one named `baseline`, else the first) and every
/// configuration, the reference first.
fn configurations(targets: &[String]) -> (String, Vec<String>) {
    let baseline = targets
        .iter()
        .find(|t| t.as_str() == "baseline")
        .or(targets.first())
        .cloned()
        .unwrap_or_default();
    let mut order: Vec<String> = vec![baseline.clone()];
    order.extend(targets.iter().filter(|t| **t != baseline).cloned());
    (baseline, order)
}

/// Table 13: every configuration (`order`) at each share of the baseline's capacity `cap`,
/// one share after the other; its rows go to `rows`. The stop if a level could not run.
fn measure_shares(
    s: &mut Session,
    cap: f64,
    shares: &[f64],
    order: &[String],
    duration: Duration,
    rows: &mut Vec<GuardrailRow>,
) -> Option<Stop> {
    for &share in shares {
        for name in order {
            let r = cap * share;
            let mut spec = LevelSpec::new(
                format!("{name} · {:.0} % · {} req/s", share * 100.0, rate(r)),
                Role::Sweep,
                Load::Rate { rate_per_s: r },
                duration,
            );
            spec.target = Some(name.clone());
            match s.measure(spec) {
                Ok(l) => rows.push(row(name, share, r, l)),
                Err(e) => return Some(e),
            }
        }
    }
    None
}

/// The draft's overheads at the 50 % level, ms: input filter = TTFT(input) −
/// TTFT(baseline), total = E2E(full) − E2E(baseline).
pub(super) fn overheads(
    rows: &[GuardrailRow],
    targets: &[String],
    baseline: &str,
) -> (Option<f64>, Option<f64>) {
    let at_half = |name: &str| {
        rows.iter()
            .find(|r| r.configuration == name && (r.share - 0.5).abs() < 1e-9)
    };
    let base = at_half(baseline);
    let input = targets
        .iter()
        .find(|t| t.starts_with("input"))
        .and_then(|t| at_half(t));
    let full = targets
        .iter()
        .find(|t| t.starts_with("full"))
        .and_then(|t| at_half(t));
    (
        base.zip(input)
            .and_then(|(b, i)| Some(i.ttft_p50_ms? - b.ttft_p50_ms?)),
        base.zip(full)
            .and_then(|(b, f)| Some(f.e2e_p50_ms? - b.e2e_p50_ms?)),
    )
}

/// Draft 4.8.1 per configuration: the filters its name states and the requests it refused
/// over all its levels.
fn disclosure(s: &Session, order: &[String]) -> Vec<GuardrailDisclosure> {
    order
        .iter()
        .map(|name| {
            let filters = filters_of(name);
            GuardrailDisclosure {
                configuration: name.clone(),
                input_filter: filters.map(|f| f.0),
                output_filter: filters.map(|f| f.1),
                refused_requests: s
                    .levels
                    .iter()
                    .filter(|l| l.target.as_deref() == Some(name.as_str()))
                    .map(|l| {
                        l.summary
                            .requests
                            .failed_by_kind
                            .get("refused")
                            .copied()
                            .unwrap_or(0)
                    })
                    .sum(),
            }
        })
        .collect()
}

/// The one-line answer: the baseline's maximum throughput, the configuration that loses
/// the most of it, and the overheads.
fn answer(result: &GuardrailResult) -> String {
    if result.capacity.len() < 2 {
        return "fewer than two configurations were measured".into();
    }
    let base_tput = result
        .capacity
        .iter()
        .find(|x| x.configuration == result.baseline)
        .map(|x| x.max_output_tokens_per_s);
    let worst = result
        .capacity
        .iter()
        .filter(|x| x.reduction.is_some())
        .min_by(|a, b| {
            a.reduction
                .unwrap_or(0.0)
                .total_cmp(&b.reduction.unwrap_or(0.0))
        });
    format!(
        "max throughput (throughput search): baseline {} tok/s{}{}{}",
        thousands(base_tput.unwrap_or(0.0)),
        worst
            .map(|w| format!(
                "; {} {} tok/s ({:+.1} %)",
                w.configuration,
                thousands(w.max_output_tokens_per_s),
                w.reduction.unwrap_or(0.0) * 100.0
            ))
            .unwrap_or_default(),
        result
            .input_filter_overhead_ms
            .map(|v| format!("; input filter adds {v:.0} ms TTFT"))
            .unwrap_or_default(),
        result
            .total_overhead_ms
            .map(|v| format!("; full guardrails add {v:.0} ms end to end"))
            .unwrap_or_default()
    )
}

/// Table 14: the throughput search on each configuration in turn (`order`, the baseline
/// first), each on its own target: its reference too, so a filter's added latency is its
/// own low-load latency rather than a blow-up. The rows with their reductions, the
/// baseline's sustained rate (what the shares are of), and the stop if a level could not
/// run.
fn max_throughputs(
    s: &mut Session,
    o: &Options,
    order: &[String],
    baseline: &str,
) -> (Vec<GuardrailCapacity>, Option<f64>, Option<Stop>) {
    let mut rows = Vec::new();
    let mut baseline_rps = None;
    let mut stop = None;
    for name in order {
        s.target = Some(name.clone());
        let (found, stopped) = saturation_search(s, o);
        if name == baseline {
            baseline_rps = capacity_of(&found).map(|x| x.rate_per_s);
        }
        rows.push(capacity_row(name, &found));
        if stopped.is_some() {
            stop = stopped;
            break;
        }
    }
    s.target = None;
    reductions(&mut rows, baseline);
    (rows, baseline_rps, stop)
}

fn row(name: &str, share: f64, r: f64, l: &LevelOutcome) -> GuardrailRow {
    let sm = &l.summary;
    GuardrailRow {
        level: l.index,
        configuration: name.into(),
        share,
        offered_rate_per_s: r,
        ttft_p50_ms: sm.ttft_ms.map(|d| d.p50),
        ttft_p95_ms: sm.ttft_ms.map(|d| d.p95),
        ttft_p99_ms: sm.ttft_ms.map(|d| d.p99),
        e2e_p50_ms: sm.e2e_ms.map(|d| d.p50),
        e2e_p99_ms: sm.e2e_ms.map(|d| d.p99),
        output_tokens_per_s: sm.output_tokens_per_s,
    }
}

fn compliance(
    s: &Session,
    o: &Options,
    r: &GuardrailResult,
    shares: &[f64],
) -> super::compliance::Compliance {
    let mut c = Checklist::default();
    c.common(o.quick, s.warmup.as_ref(), o.seed);
    let names: Vec<&str> = o.targets.iter().map(String::as_str).collect();
    c.should(
        "5.10.2",
        "baseline, input-only, output-only and full configurations",
        ["baseline", "input", "output", "full"]
            .iter()
            .all(|n| names.iter().any(|t| t.starts_with(n))),
        format!("configurations: {}", names.join(", ")),
    );
    c.should(
        "5.10.2",
        "load levels at 25, 50 and 75 % of capacity",
        SHARES.iter().all(|x| shares.contains(x)),
        format!(
            "{} % of the baseline's estimate",
            shares
                .iter()
                .map(|x| format!("{:.0}", x * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    c.should(
        "5.10.2",
        "Conversation workload (RECOMMENDED), benign content",
        o.workload.name == "conversation",
        format!(
            "workload {} (prompts are benign words either way)",
            o.workload.name
        ),
    );
    disclosure_checks(&mut c, r);
    c.must(
        "5.10.3",
        "every configuration measured at every level",
        r.rows.len() == shares.len() * o.targets.len(),
        format!(
            "{} of {} level runs",
            r.rows.len(),
            shares.len() * o.targets.len()
        ),
    );
    c.finish()
}

/// Draft 4.8.1 and 4.8.2: what is disclosed of each configuration's safety systems, and
/// that configurations with and without them are compared.
fn disclosure_checks(c: &mut Checklist, r: &GuardrailResult) {
    let unstated: Vec<&str> = r
        .disclosure
        .iter()
        .filter(|d| d.input_filter.is_none() || d.output_filter.is_none())
        .map(|d| d.configuration.as_str())
        .collect();
    c.must(
        "4.8.1, 4.8.2",
        "input and output filtering disclosed for every configuration (disabled ones noted)",
        unstated.is_empty() && !r.disclosure.is_empty(),
        if unstated.is_empty() {
            "from the configuration names (baseline, input, output, full)".to_owned()
        } else {
            format!(
                "not stated for {}: name configurations baseline, input, output or full",
                unstated.join(", ")
            )
        },
    );
    let refused: u64 = r.disclosure.iter().map(|d| d.refused_requests).sum();
    c.must(
        "4.8.1",
        "requests refused during testing disclosed",
        true,
        format!("{refused} refused (content filter or refusal) over every level"),
    );
    // "Names of safety systems if known": the tester states them, or states they are
    // unknown; silence is what the draft rules out.
    c.must(
        "4.8.1",
        "names of the safety systems, or that they are not known",
        r.safety_systems.is_some(),
        r.safety_systems.clone().unwrap_or_else(|| {
            "not stated: --safety-systems 'Llama Guard 3' (or 'unknown')".into()
        }),
    );
    let filtered = |on: bool| {
        r.disclosure.iter().any(|d| {
            d.input_filter
                .zip(d.output_filter)
                .is_some_and(|(i, o)| (i || o) == on)
        })
    };
    c.should(
        "4.8.2",
        "compared with safety enabled and disabled",
        filtered(true) && filtered(false),
        "a configuration without filters beside one with them".to_owned(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_names_state_their_filters() {
        assert_eq!(filters_of("baseline"), Some((false, false)));
        assert_eq!(filters_of("input-llamaguard"), Some((true, false)));
        assert_eq!(filters_of("output"), Some((false, true)));
        assert_eq!(filters_of("full"), Some((true, true)));
        assert_eq!(filters_of("guarded"), None);
    }

    /// Issue 19, item 7: 8 slots, TTFT 50 ms then 10 ms a token, 64-token answers: a
    /// request takes 50 + 63 × 10 = 680 ms, capacity 8 ÷ 0.68 = 11.76 req/s, 752.9 tok/s.
    /// An input filter adds 40 ms before the queue and takes no capacity. The old Table 14
    /// read each configuration's fixed-concurrency level (concurrency 8): throughput is
    /// concurrency ÷ latency, 8 ÷ 0.72 = 11.11 req/s, 711.1 tok/s, and the filter showed
    /// 711.1 ÷ 752.9 − 1 = −5.6 %. Each configuration's throughput search sustains the same
    /// 11.76 req/s (the searches' levels measured 752.6 and 750.1 tok/s): −0.3 %.
    #[test]
    fn max_throughput_is_the_searchs_answer_not_a_fixed_concurrency() {
        let found = |estimate: f64, tokens: f64, level: usize| ThroughputResult {
            estimate_rate_per_s: Some(estimate),
            sustainable_rate_per_s: Some(11.76),
            failing_rate_per_s: Some(12.35),
            max_output_tokens_per_s: Some(tokens),
            sustainable_level: Some(level),
            converged: true,
            search: "between 11.76 (passed) and 12.35 req/s (failed), within 5 %".into(),
            ..Default::default()
        };
        let mut rows = vec![
            capacity_row("baseline", &found(11.76, 752.6, 6)),
            capacity_row("input", &found(11.11, 750.1, 14)),
            capacity_row("output", &ThroughputResult::default()),
        ];
        reductions(&mut rows, "baseline");
        assert_eq!(rows[0].reduction, None);
        assert_eq!(rows[1].level, Some(14));
        assert_eq!(rows[1].max_rate_per_s, Some(11.76));
        // 750.1 ÷ 752.6 − 1 = −0.332 %, where the estimates' 11.11 ÷ 11.76 − 1 = −5.5 %.
        let r = rows[1].reduction.unwrap();
        assert!((r - (750.1 / 752.6 - 1.0)).abs() < 1e-12, "{r}");
        assert!(r.abs() < 0.005, "{r}");
        // A configuration whose search sustained nothing has no reduction to report.
        assert_eq!((rows[2].level, rows[2].reduction), (None, None));
    }
}
