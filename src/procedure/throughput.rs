//! 5.2 Output Token Throughput: the most load the server sustains (and, with an SLO, the
//! most that meets it), by bracketing from the server's own pace and bisecting.
//!
//! Levels: one request alone, the concurrency-1 reference (the synchronous anchor: the
//! low-load latency the blow-up signal compares against), a closed-loop probe at
//! `--estimate-concurrency` sized to complete enough requests at the anchor's rate (its
//! completion rate is the first rate tried, unless `--capacity` gives one: [`super::pace`]),
//! then open-loop levels doubling or halving until one passes and one fails, then bisection
//! to `--tolerance`. Every level lasts long enough for 50 completions (`--quick`; 200
//! otherwise) at the rate the server can have. The sustainable level's figures are the
//! draft's Tables 3 and 4; the answer's rate is what that level sustained (its arrivals'
//! rate, less what the server did not complete at that rate), beside the rate asked.

use super::compliance::Checklist;
use super::level::{rate, Bench, LevelSpec, LevelVerdict, Load, Role, Stop};
use super::pace::{calibrate, Pace};
use super::report::Finding;
use super::search::{search_load, ConcurrencyPlan, Knob, Probe, RatePlan, SearchResult};
use super::session::{Criteria, Session};
use super::{common_parameters, Options};
use crate::stats::percentile_bounds::DEFAULT_CONFIDENCE;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `result` of a throughput test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThroughputResult {
    /// Highest open-loop rate that passed (the rate asked), requests per second.
    pub sustainable_rate_per_s: Option<f64>,
    /// What that level sustained, requests per second: the rate its steady span's arrivals
    /// came at (a seeded Poisson schedule of n arrivals is off the rate asked by about
    /// 1/√n) times the share of them completed at that rate
    /// ([`super::arrivals::ArrivalOutcomes::sustained_rate_per_s`]).
    #[serde(default)]
    pub sustained_rate_per_s: Option<f64>,
    /// Highest closed-loop concurrency that passed (`--closed-loop`).
    pub sustainable_concurrency: Option<u32>,
    /// Lowest load above it that failed.
    pub failing_rate_per_s: Option<f64>,
    /// Where the true sustainable rate lies, 95 % sure, requests per second: the Poisson
    /// interval of the sustainable level's count below, of the failing level's above (open
    /// when none failed); docs/procedures.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustained_bound_per_s: Option<crate::stats::percentile_bounds::Bound>,
    pub failing_concurrency: Option<u32>,
    /// Output tokens per second at the sustainable level (steady window).
    pub max_output_tokens_per_s: Option<f64>,
    /// Completed requests per second at the sustainable level (steady window).
    pub max_requests_per_s: Option<f64>,
    /// Input tokens per second at the sustainable level.
    pub max_input_tokens_per_s: Option<f64>,
    /// Items per second at the sustainable level (embeddings inputs, rerank documents;
    /// non-generative endpoints only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items_per_s: Option<f64>,
    /// Output tokens per second per GPU (`--gpus`).
    pub tokens_per_gpu_s: Option<f64>,
    /// The capacity the search started from, requests per second: the closed-loop probe's
    /// completion rate, or `--capacity`.
    pub estimate_rate_per_s: Option<f64>,
    /// P50 end-to-end latency at concurrency 1, ms.
    pub reference_e2e_p50_ms: Option<f64>,
    /// P99 end-to-end latency per output token at concurrency 1, ms: the saturation
    /// blow-up reference (a level's P99 above 10× this one is saturated).
    #[serde(default)]
    pub reference_ms_per_token_p99: Option<f64>,
    /// The server's own pace the levels were sized from.
    #[serde(default)]
    pub pace: Option<Pace>,
    /// Index of the sustainable level in `levels`.
    pub sustainable_level: Option<usize>,
    /// The search narrowed the bracket to the tolerance.
    pub converged: bool,
    /// How the search ended.
    pub search: String,
}

/// The capacity the procedures take shares of: the server's pace measured (one request
/// alone, the synchronous anchor, the closed-loop probe; [`super::pace`]), or `--capacity`
/// (after the request alone and the anchor, which size the levels). Requests per second.
pub fn estimate(s: &mut Session, o: &Options) -> Result<f64, Stop> {
    let pace = calibrate(s, o, None, true)?;
    pace.capacity_rate_per_s.ok_or_else(|| {
        Stop::Failed(anyhow::anyhow!(
            "no capacity estimate: give --capacity RATE"
        ))
    })
}

/// Runs the test.
pub fn run(bench: &mut dyn Bench, o: &Options) -> Finding {
    let mut s = Session::new(bench, o.slo.clone());
    let duration = o.duration(60.0, 6.0);
    let (result, stop) = search(&mut s, o, duration);
    let answer = answer(&result, o);
    let compliance = compliance(&s, o, &result);
    Finding {
        answered: result.max_output_tokens_per_s.is_some(),
        levels: s.levels,
        result: super::TestResult::Throughput(result),
        answer,
        compliance,
        parameters: serde_json::json!({
            "common": common_parameters(o),
            "load_model": if o.closed_loop { "closed" } else { "open" },
            "level_duration_s": duration.as_secs_f64(),
            "estimate_concurrency": o.estimate_concurrency,
            "capacity_given_per_s": o.capacity_rate_per_s,
        }),
        stopped: stop.map(|e| e.to_string()),
    }
}

/// The throughput search (5.2) on the session's target: the server's own pace first
/// ([`calibrate`]: one request alone, the concurrency-1 reference, which is the blow-up
/// signal's baseline, and the closed-loop probe unless `--capacity` gives the start), then
/// bracket and bisect an open-loop rate (a concurrency with `--closed-loop`: `search_open`,
/// `search_closed`), each level stretched to the pace and judged by saturation and the
/// session's SLO. The result holds the sustainable level's figures (`read_sustainable`);
/// the stop, when a level could not run. `servebench test throughput` is this search;
/// guardrails runs it per configuration, and [`capacity`] for the tests whose levels are
/// shares of saturation.
pub fn search(
    s: &mut Session,
    o: &Options,
    duration: Duration,
) -> (ThroughputResult, Option<Stop>) {
    let mut result = ThroughputResult::default();
    // Each target has its own pace and reference (guardrails searches every configuration
    // in turn): a pace measured on another target is measured again on this one.
    let other_target = s
        .levels
        .iter()
        .rev()
        .find(|l| l.role == Role::Alone)
        .is_some_and(|l| l.target != s.target);
    if other_target {
        s.pace = None;
        s.reference_e2e_p50_ms = None;
        s.reference_ms_per_token_p99 = None;
    }
    let setup = calibrate(s, o, None, true);
    result.reference_e2e_p50_ms = s.reference_e2e_p50_ms;
    result.reference_ms_per_token_p99 = s.reference_ms_per_token_p99;
    let stop = match setup {
        Err(e) => Some(e),
        Ok(pace) => {
            let est = pace.capacity_rate_per_s.unwrap_or(pace.sync_rate_per_s);
            result.estimate_rate_per_s = Some(est);
            result.pace = Some(pace);
            if o.closed_loop {
                search_closed(s, o, duration, &mut result)
            } else {
                search_open(s, o, duration, (est, pace.sync_rate_per_s), &mut result)
            }
        }
    };
    read_sustainable(s, o, &mut result);
    (result, stop)
}

/// The throughput search as the other tests use it: open loop and judged on saturation
/// alone (an SLO would make "saturation" the SLO's limit, and an undecided SLO at a short
/// level would halve the rate for nothing), at the throughput test's level length. The
/// session's SLO is restored afterwards.
pub fn saturation_search(s: &mut Session, o: &Options) -> (ThroughputResult, Option<Stop>) {
    let open = Options {
        closed_loop: false,
        ..o.clone()
    };
    let slo = s.slo.take();
    let found = search(s, &open, o.duration(60.0, 6.0));
    s.slo = slo;
    found
}

/// The load that levels "at N % of saturation" (5.4, 5.6), "of estimated capacity" (5.3)
/// and "of capacity" (5.10) are shares of.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    /// Requests per second.
    pub rate_per_s: f64,
    /// Where it came from, in words (`test.json`'s `capacity_source`).
    pub source: String,
    /// A rate above it failed (or it was given): it is the saturation point, not a lower
    /// bound on it.
    pub saturated: bool,
}

/// The capacity a throughput search found: its highest sustained rate, saturated when a
/// rate above it failed. `None` when no rate was sustained.
pub fn capacity_of(found: &ThroughputResult) -> Option<Capacity> {
    let asked = found.sustainable_rate_per_s.filter(|r| *r > 0.0)?;
    // The one figure the answer and Table 3 give (never above the rate asked).
    let r = found
        .sustained_rate_per_s
        .filter(|r| *r > 0.0)
        .map_or(asked, |s| s.min(asked));
    let saturated = found.failing_rate_per_s.is_some();
    Some(Capacity {
        rate_per_s: r,
        source: if saturated {
            format!(
                "throughput search: {} req/s sustained, {} req/s saturated",
                rate(r),
                rate(found.failing_rate_per_s.unwrap_or(r))
            )
        } else {
            format!(
                "throughput search: {} req/s sustained and nothing above it saturated (a lower bound)",
                rate(r)
            )
        },
        saturated,
    })
}

/// `--capacity` when given, else the throughput search's answer ([`saturation_search`], run
/// on the session first): what the shares of saturation are of. A short closed-loop
/// estimate is only where the search starts; it measures a concurrency, not saturation.
pub fn capacity(s: &mut Session, o: &Options) -> Result<Capacity, Stop> {
    if let Some(r) = o.capacity_rate_per_s {
        // The request alone and the one-at-a-time reference still run: they size the
        // levels (the probe is skipped: `--capacity` is the capacity).
        calibrate(s, o, None, false)?;
        return Ok(Capacity {
            rate_per_s: r,
            source: "given (--capacity)".into(),
            saturated: true,
        });
    }
    let (found, stop) = saturation_search(s, o);
    if let Some(e) = stop {
        return Err(e);
    }
    capacity_of(&found).ok_or_else(|| {
        Stop::Failed(anyhow::anyhow!(
            "the throughput search sustained no rate ({}); give --capacity RATE",
            found.search
        ))
    })
}

/// What the search's levels are judged by: the saturation signals.
const CRITERIA: Criteria = Criteria {
    saturation: true,
    min_success: None,
    no_out_of_memory: false,
};

/// The lowest rate the search halves to, requests per second: an eighth of the pace one
/// request at a time (`sync_rate_per_s`, 1/S), where a server serving one request at a time
/// is busy an eighth of the time (a batching one less) and waits add at most about a
/// seventh of S (S/14 for fixed-length requests, M/D/1; S/7 for a server that shares its
/// time, M/G/1-PS). Or 1/1024 of the estimate, if higher. A level that
/// fails there does not fail for the load: the server's own pace changed during the test
/// (a shared or throttled machine), or the SLO is not met even unloaded. Halving further
/// only makes each level longer (a slow server's quick test once halved for 30 minutes).
pub fn rate_floor_per_s(est_per_s: f64, sync_rate_per_s: f64) -> f64 {
    (sync_rate_per_s / 8.0).max(est_per_s / 1024.0)
}

/// The open-loop rate search from `est` (the capacity estimate, and the pace one request
/// at a time, both requests per second); fills the result's search fields.
fn search_open(
    s: &mut Session,
    o: &Options,
    duration: Duration,
    (est, sync_rate_per_s): (f64, f64),
    result: &mut ThroughputResult,
) -> Option<Stop> {
    let plan = RatePlan {
        start_per_s: est,
        tolerance: o.tolerance,
        max_doublings: 8,
        min_rate_per_s: rate_floor_per_s(est, sync_rate_per_s),
    };
    let (found, stopped) = search_levels(s, duration, &plan, |r: f64| {
        (
            format!("rate {} req/s", rate(r)),
            Load::Rate { rate_per_s: r },
        )
    });
    result.sustainable_rate_per_s = found.sustainable;
    result.failing_rate_per_s = found.failing;
    result.converged = found.converged;
    result.search = found.note;
    if found.sustainable.is_none() && stopped.is_none() && est >= plan.min_rate_per_s {
        result.search.push_str(&format!(
            ", an eighth of the pace one request at a time ({} req/s): at that load the \
             server is idle most of the time, so its own pace changed during the test (a \
             shared or throttled machine?) or the SLO is missed even unloaded",
            rate(sync_rate_per_s)
        ));
    }
    stopped
}

/// The closed-loop concurrency search (`--closed-loop`); fills the result's search fields.
fn search_closed(
    s: &mut Session,
    o: &Options,
    duration: Duration,
    result: &mut ThroughputResult,
) -> Option<Stop> {
    let plan = ConcurrencyPlan {
        start: o.start_concurrency.max(1),
        max: o.concurrency_limit.max(1),
        tolerance: o.tolerance,
    };
    let (found, stopped) = search_levels(s, duration, &plan, |c: u32| {
        (
            format!("concurrency {c}"),
            Load::Concurrency { concurrency: c },
        )
    });
    result.sustainable_concurrency = found.sustainable;
    result.failing_concurrency = found.failing;
    result.converged = found.converged;
    result.search = found.note;
    stopped
}

/// The search `knob` plans (a rate or a concurrency), each level named and loaded by
/// `level`, lasting `duration` and judged on the search's criteria.
fn search_levels<K: Knob>(
    s: &mut Session,
    duration: Duration,
    knob: &K,
    level: impl Fn(K::Load) -> (String, Load),
) -> (SearchResult<K::Load>, Option<Stop>) {
    search_load(knob, |x, role| {
        let (name, load) = level(x);
        let spec = LevelSpec::new(name, role, load, duration);
        s.probe(spec, CRITERIA).map(probe_of)
    })
}

/// Reads Tables 3 and 4 and the sustained rate off the last passing level at the
/// sustainable load on the session's target.
fn read_sustainable(s: &Session, o: &Options, result: &mut ThroughputResult) {
    let load = match (
        result.sustainable_rate_per_s,
        result.sustainable_concurrency,
    ) {
        (Some(r), _) => Some(Load::Rate { rate_per_s: r }),
        (_, Some(c)) => Some(Load::Concurrency { concurrency: c }),
        _ => None,
    };
    let Some(level) = load.and_then(|l| {
        s.levels
            .iter()
            .rev()
            .find(|x| x.load == l && x.verdict == LevelVerdict::Pass && x.target == s.target)
    }) else {
        return;
    };
    let st = &level.summary.steady_state;
    result.sustainable_level = Some(level.index);
    result.sustained_rate_per_s = result.sustainable_rate_per_s.map(|asked| {
        one_sustained_rate(
            asked,
            level
                .signals
                .arrivals
                .and_then(|a| a.sustained_rate_per_s()),
            st.requests_per_s,
        )
    });
    // Tokens at the one rate credited: the steady span's tokens per completed request
    // times that rate, so Table 3's token and request rates describe the same requests.
    let credit = match result.sustained_rate_per_s {
        Some(r) if st.requests_per_s > 0.0 => (r / st.requests_per_s).min(1.0),
        _ => 1.0,
    };
    result.max_output_tokens_per_s = Some(st.output_tokens_per_s * credit);
    result.max_requests_per_s = Some(result.sustained_rate_per_s.unwrap_or(st.requests_per_s));
    result.sustained_bound_per_s = result.sustained_rate_per_s.map(|r| {
        let failing = result
            .failing_rate_per_s
            .and_then(|f| answer_bound::failing_level(&s.levels, f));
        answer_bound::answer_bound(r, level, failing, DEFAULT_CONFIDENCE)
    });
    result.max_input_tokens_per_s = Some(st.input_tokens_per_s * credit);
    result.max_items_per_s = (level.summary.total_items > 0).then_some(level.summary.items_per_s);
    result.tokens_per_gpu_s = o
        .gpus
        .filter(|&g| g > 0)
        .map(|g| st.output_tokens_per_s * credit / g as f64);
}

/// The one rate the answer, Table 3 and the capacity note give for the sustainable level,
/// requests per second: the least of the rate asked, what its steady arrivals sustained
/// ([`super::arrivals::ArrivalOutcomes::sustained_rate_per_s`]) and the completions its
/// steady span counted. A seeded Poisson schedule of n arrivals comes off the rate asked by
/// about 1/√n, so a passing level's sample can run faster than the level above that
/// failed (0.269 req/s sustained at 0.228 asked, beside 0.236 failed): the server is
/// credited with what it was asked to carry at most, which keeps the answer below every
/// failing rate, and with less when it completed less.
pub fn one_sustained_rate(asked_per_s: f64, arrivals_per_s: Option<f64>, steady_per_s: f64) -> f64 {
    let mut r = asked_per_s;
    if let Some(a) = arrivals_per_s.filter(|a| a.is_finite() && *a > 0.0) {
        r = r.min(a);
    }
    if steady_per_s.is_finite() && steady_per_s > 0.0 {
        r = r.min(steady_per_s);
    }
    r
}

fn probe_of(v: LevelVerdict) -> Probe {
    if v == LevelVerdict::Pass {
        Probe::Pass
    } else {
        Probe::Fail
    }
}

/// The one-line answer.
fn answer(r: &ThroughputResult, o: &Options) -> String {
    let under = o
        .slo
        .as_ref()
        .map(|s| format!(" under the SLO {s}"))
        .unwrap_or_else(|| " with no saturation signal".into());
    match (
        r.sustainable_rate_per_s,
        r.sustainable_concurrency,
        r.max_output_tokens_per_s,
    ) {
        (Some(rate_per_s), _, Some(tok)) => format!(
            "max sustainable: {} req/s{}{}, {}{under}{}",
            rate(r.sustained_rate_per_s.unwrap_or(rate_per_s)),
            bound_text(r.sustained_bound_per_s),
            asked(r.sustained_rate_per_s, rate_per_s),
            per_s(r, tok),
            r.failing_rate_per_s
                .map(|f| format!(" ({} req/s failed)", rate(f)))
                .unwrap_or_default()
        ),
        (_, Some(c), Some(tok)) => format!(
            "max sustainable: concurrency {c}, {}{under}{}",
            per_s(r, tok),
            r.failing_concurrency
                .map(|f| format!(" (concurrency {f} failed)"))
                .unwrap_or_default()
        ),
        _ => format!("no load level was sustained{under}: {}", r.search),
    }
}

/// The sustainable level's throughput in its own unit: output tokens, or for a
/// non-generative endpoint items.
fn per_s(r: &ThroughputResult, tok: f64) -> String {
    match r.max_items_per_s {
        Some(items) => format!("{} items/s", thousands(items)),
        None => format!("{} tok/s", thousands(tok)),
    }
}

/// ` [0.25–0.40 req/s, 95 %]` (` [≥ 0.25 …]` when no level failed): the answer's interval.
fn bound_text(b: Option<crate::stats::percentile_bounds::Bound>) -> String {
    match b {
        Some(crate::stats::percentile_bounds::Bound {
            lo: Some(lo),
            hi: Some(hi),
        }) => format!(" [{}–{} req/s, 95 %]", rate(lo), rate(hi)),
        Some(crate::stats::percentile_bounds::Bound {
            lo: Some(lo),
            hi: None,
        }) => {
            format!(" [≥ {} req/s, 95 %]", rate(lo))
        }
        _ => String::new(),
    }
}

/// ` (asked 0.36 req/s)` when the level sustained a rate that reads differently from the
/// one asked, else nothing.
fn asked(sustained: Option<f64>, asked_per_s: f64) -> String {
    match sustained {
        Some(x) if rate(x) != rate(asked_per_s) => {
            format!(" (asked {} req/s)", rate(asked_per_s))
        }
        _ => String::new(),
    }
}

/// `2,610` (thousands separated, no decimals) for token rates.
pub fn thousands(x: f64) -> String {
    let n = x.round() as i64;
    let digits = n.abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

fn compliance(s: &Session, o: &Options, r: &ThroughputResult) -> super::compliance::Compliance {
    let mut c = Checklist::default();
    c.common(o.quick, s.warmup.as_ref(), o.seed);
    c.guardrails("4.8.1", o.disclosure.guardrails.as_deref(), &s.levels);
    c.level_time(
        "5.2.2.1",
        &s.levels,
        &[Role::Bracket, Role::Bisect, Role::Extend],
        (60.0, Some(300.0)),
    );
    c.must(
        "5.2.2.2",
        "load model, range and increment defined",
        true,
        format!(
            "{} loop; doubling from the estimate {}, then bisection to {:.0} %",
            if o.closed_loop { "closed" } else { "open" },
            r.estimate_rate_per_s
                .map(|e| format!("{} req/s", rate(e)))
                .unwrap_or_else(|| "(not reached)".into()),
            o.tolerance * 100.0
        ),
    );
    c.must(
        "5.2.3",
        "binary search to the maximum sustainable load",
        r.converged,
        r.search.clone(),
    );
    c.must(
        "5.2.3.2",
        "steady state: the first 10 % of each level excluded",
        true,
        "every level's saturation signals and throughput use its steady window",
    );
    let steady = r.sustainable_level.and_then(|i| s.levels.get(i)).map(|l| {
        let stable_tput = l
            .signals
            .steady_throughput_change
            .is_none_or(|c| c.abs() <= 0.1);
        (
            !l.signals.queue_growth && !l.signals.server_queue_growth,
            stable_tput,
            l,
        )
    });
    c.should(
        "5.2.3.2",
        "steady state verified at the reported level: queue stable, throughput stable",
        steady.is_some_and(|(q, t, _)| q && t),
        match steady {
            Some((q, _, l)) => format!(
                "queue {}; throughput changed {} between the halves of the steady window",
                if q { "stable" } else { "growing" },
                l.signals
                    .steady_throughput_change
                    .map(|c| format!("{:+.1} %", c * 100.0))
                    .unwrap_or_else(|| "(too few requests to tell)".into())
            ),
            None => "no sustainable level".into(),
        },
    );
    c.finish()
}

mod answer_bound;
#[cfg(test)]
mod tests;
