//! 5.3 Throughput-Latency Tradeoff: open-loop levels from 10 % to 120 % of the estimated
//! capacity, read for the knee, the saturation point and the optimal operating point. The
//! capacity is `--capacity`, else the throughput search's answer (5.2: "a preliminary
//! throughput test"), so the levels past 100 % are past saturation; the draft's "levels
//! from 10 % to saturation" is met only when the sweep shows saturation
//! ([`reached_saturation`]).
//!
//! The readings are `stats::curve`'s: knee = first level from which every level's P99 TTFT
//! exceeds twice the sweep's minimum P99 (a single spiking level is not a knee: see
//! `stats::curve::sustained_knee`); saturation = first level whose achieved throughput falls below the
//! previous level's by more than their intervals allow (the draft's words), or falls short of
//! 90 % of what its offered load asks (the reading that gives the draft's own Table 5 its
//! stated answer: `stats::curve::shortfall`), whichever comes first; null when neither; optimal =
//! highest throughput that met the SLO (without an SLO: below the knee). A level met the SLO
//! when its 95 % interval says so, and, when the interval straddles the target (too few
//! requests to decide: a P99 bound needs 381 values all within it), when its observed
//! values do ([`slo_reading`]); the table marks those readings.

use super::compliance::Checklist;
use super::level::{rate, Bench, LevelSpec, Load, Role, Stop};
use super::report::Finding;
use super::session::Session;
use super::slo_check::SloCheck;
use super::throughput::{capacity, thousands};
use super::{common_parameters, Options};
use crate::stats::curve::{self, Level, OperatingBasis, SaturationRule};
use crate::stats::distribution::percentile_sorted;
use crate::stats::interval::SloVerdict;
use serde::{Deserialize, Serialize};

/// One row of Table 5.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CurvePoint {
    /// Index in `levels`.
    pub level: usize,
    /// Share of the estimated capacity.
    pub share: f64,
    pub offered_rate_per_s: f64,
    /// Output tokens per second received over the level's steady span (after the ramp-up,
    /// before the drain), and its 95 % interval.
    pub achieved_tokens_per_s: f64,
    pub achieved_ci: Option<(f64, f64)>,
    pub achieved_requests_per_s: f64,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub tpot_p50_ms: Option<f64>,
    pub tpot_p95_ms: Option<f64>,
    pub tpot_p99_ms: Option<f64>,
    pub e2e_p50_ms: Option<f64>,
    pub e2e_p95_ms: Option<f64>,
    pub e2e_p99_ms: Option<f64>,
    /// Share of the requests the server decided (completed + failed) that completed, 0-1:
    /// the ones the benchmark cancelled when the level ended are left out.
    pub success_rate: f64,
    /// Requests still in flight when the level ended, cancelled by the benchmark.
    #[serde(default)]
    pub cancelled: u64,
    /// "stable" or "growing".
    pub queue: String,
    /// Whether the level met the SLO (null without one), as [`slo_reading`] reads it.
    pub slo_met: Option<bool>,
    /// How `slo_met` was decided: "interval" (the 95 % interval lies on one side of the
    /// target) or "observed" (it straddles the target, too few requests to decide: each
    /// percentile bound's printed percentile within it). Null without an SLO.
    #[serde(default)]
    pub slo_reading: Option<String>,
    /// The saturation signals that fired at the level (5.2.3.1), by name.
    #[serde(default)]
    pub saturation_signals: Vec<String>,
}

/// `result` of a curve test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CurveResult {
    /// The capacity the levels are shares of, requests per second.
    pub capacity_rate_per_s: Option<f64>,
    /// "given (--capacity)", or the throughput search's answer ("throughput search: …");
    /// "estimate" (a closed-loop level) in older reports.
    pub capacity_source: String,
    /// The SLO the levels were judged against, as given (`--slo`); null without one.
    #[serde(default)]
    pub slo: Option<String>,
    pub knee_rate_per_s: Option<f64>,
    /// First level whose throughput fell beyond its interval, or fell short of what its
    /// offer asks (`saturation_rule` says which); null when neither.
    pub saturation_rate_per_s: Option<f64>,
    /// How the saturation point was found: "decrease" (the draft's words: throughput fell
    /// from the previous level) or "shortfall" (throughput under 90 % of what the offered
    /// load asks); null without one, and in older reports.
    #[serde(default)]
    pub saturation_rule: Option<String>,
    /// Where the server stopped keeping up, req/s ([`saturation_onset`]): the request rate
    /// the levels saturated for good completed, at least what a lower level sustained and at
    /// most the first saturated level's offered rate. Null when the sweep never saturated
    /// for good.
    #[serde(default)]
    pub saturation_onset_rate_per_s: Option<f64>,
    pub optimal_rate_per_s: Option<f64>,
    /// "slo" (highest throughput meeting it) or "below_knee" (no SLO given).
    pub optimal_basis: Option<String>,
    /// The level with the highest achieved throughput.
    pub peak_rate_per_s: Option<f64>,
    pub peak_output_tokens_per_s: Option<f64>,
    pub points: Vec<CurvePoint>,
}

/// The shares of capacity to run: 10 %, 20 %, … 120 % for 12 levels; `n` levels spread
/// evenly over the same span otherwise.
pub fn shares(n: u32) -> Vec<f64> {
    let n = n.max(2);
    (1..=n)
        .map(|i| 0.1 + 1.1 * (i - 1) as f64 / (n - 1) as f64)
        .map(|s| (s * 1000.0).round() / 1000.0)
        .collect()
}

/// Runs the test.
pub fn run(bench: &mut dyn Bench, o: &Options) -> Finding {
    let mut s = Session::new(bench, o.slo.clone());
    let duration = o.duration(60.0, 6.0);
    let mut result = CurveResult {
        slo: o.slo.as_ref().map(|x| x.to_string()),
        ..Default::default()
    };
    let mut stop: Option<Stop> = None;
    match capacity(&mut s, o) {
        Err(e) => stop = Some(e),
        Ok(found) => {
            let cap = found.rate_per_s;
            result.capacity_rate_per_s = Some(cap);
            result.capacity_source = found.source;
            for share in shares(o.curve_levels) {
                let r = cap * share;
                let spec = LevelSpec::new(
                    format!("{:.0} % · {} req/s", share * 100.0, rate(r)),
                    Role::Sweep,
                    Load::Rate { rate_per_s: r },
                    duration,
                );
                match s.measure(spec) {
                    Ok(l) => {
                        let p = point(l, share);
                        result.points.push(p);
                    }
                    Err(e) => {
                        stop = Some(e);
                        break;
                    }
                }
            }
        }
    }
    read_curve(&mut result);
    let answer = answer(&result);
    let compliance = compliance(&s, o, &result);
    Finding {
        answered: !result.points.is_empty(),
        levels: s.levels,
        result: super::TestResult::Curve(result),
        answer,
        compliance,
        parameters: serde_json::json!({
            "common": common_parameters(o),
            "load_model": "open",
            "level_duration_s": duration.as_secs_f64(),
            "shares": shares(o.curve_levels),
            "capacity_given_per_s": o.capacity_rate_per_s,
        }),
        stopped: stop.map(|e| e.to_string()),
    }
}

/// A level's SLO reading on the curve: `(met, how)`. The 95 % interval's verdict when it
/// decides ("interval"); when it straddles the target ("observed"), the observed values
/// ([`SloCheck::observed_met`]: for a P99 bound the level's own P99, type 7 as the report
/// prints it, within the bound; never the share within it). An undecided level is not a miss: a P99
/// bound needs 381 values all within it before its interval can pass (381 ÷ (381 + 1.96²)
/// ≥ 0.99), so a 60-s level below 6.35 req/s could never meet one. `(None, None)` without
/// an SLO.
pub fn slo_reading(c: Option<&SloCheck>) -> (Option<bool>, Option<String>) {
    let Some(c) = c else {
        return (None, None);
    };
    match c.verdict {
        SloVerdict::Undecided => (Some(c.observed_met()), Some("observed".into())),
        v => (Some(v == SloVerdict::Pass), Some("interval".into())),
    }
}

/// A Table 5 row from a level.
pub fn point(l: &super::LevelOutcome, share: f64) -> CurvePoint {
    let s = &l.summary;
    let (slo_met, reading) = slo_reading(l.slo.as_ref());
    let pick = |d: Option<crate::stats::Distribution>,
                f: fn(&crate::stats::Distribution) -> f64| d.map(|d| f(&d));
    CurvePoint {
        level: l.index,
        share,
        offered_rate_per_s: match l.load {
            Load::Rate { rate_per_s } => rate_per_s,
            Load::Concurrency { .. } => s.requests_per_s,
        },
        // Tokens received over the steady span (its interval is what can show a fall);
        // the completion-based steady figure when the level was too short for one. A
        // non-generative endpoint (items) receives none: its input tokens served stand in.
        achieved_tokens_per_s: match (s.total_items > 0, l.signals.steady_throughput) {
            (true, _) => s.steady_state.input_tokens_per_s,
            (false, Some(t)) => t.output_tokens_per_s,
            (false, None) => s.steady_state.output_tokens_per_s,
        },
        achieved_ci: l
            .signals
            .steady_throughput
            .filter(|_| s.total_items == 0)
            .map(|t| t.ci),
        achieved_requests_per_s: s.steady_state.requests_per_s,
        ttft_p50_ms: pick(s.ttft_ms, |d| d.p50),
        ttft_p95_ms: pick(s.ttft_ms, |d| d.p95),
        ttft_p99_ms: pick(s.ttft_ms, |d| d.p99),
        tpot_p50_ms: pick(s.tpot_ms, |d| d.p50),
        tpot_p95_ms: pick(s.tpot_ms, |d| d.p95),
        tpot_p99_ms: pick(s.tpot_ms, |d| d.p99),
        e2e_p50_ms: pick(s.e2e_ms, |d| d.p50),
        e2e_p95_ms: pick(s.e2e_ms, |d| d.p95),
        e2e_p99_ms: pick(s.e2e_ms, |d| d.p99),
        success_rate: l.outcomes.completion_rate(),
        cancelled: l.outcomes.cancelled,
        queue: l.signals.queue_indicator().into(),
        slo_met,
        slo_reading: reading,
        saturation_signals: l.signals.fired.clone(),
    }
}

/// The points as the statistics (and the curve chart) read them: TTFT is the latency (the
/// request latency on a non-generative endpoint).
pub fn stats_levels(points: &[CurvePoint]) -> Vec<Level> {
    points
        .iter()
        .map(|p| Level {
            offered_rate_per_s: p.offered_rate_per_s,
            achieved_tokens_per_s: p.achieved_tokens_per_s,
            // Without an interval (too few completions) only a collapse shows a fall.
            achieved_ci: p.achieved_ci.unwrap_or((f64::NAN, f64::NAN)),
            // A non-generative endpoint has no TTFT: its request latency is the latency.
            p99_latency_ms: p.ttft_p99_ms.or(p.e2e_p99_ms).unwrap_or(f64::NAN),
            p50_latency_ms: p.ttft_p50_ms.or(p.e2e_p50_ms).unwrap_or(f64::NAN),
            slo_attained: p.slo_met,
        })
        .collect()
}

/// Fills the knee, saturation, optimal and peak from the points.
pub fn read_curve(r: &mut CurveResult) {
    let levels = stats_levels(&r.points);
    r.knee_rate_per_s = curve::sustained_knee(&levels).map(|l| l.offered_rate_per_s);
    let saturation = curve::saturation_point(&levels);
    r.saturation_rate_per_s = saturation.map(|(l, _)| l.offered_rate_per_s);
    r.saturation_rule = saturation.map(|(_, rule)| {
        match rule {
            SaturationRule::Decrease => "decrease",
            SaturationRule::Shortfall => "shortfall",
        }
        .into()
    });
    r.saturation_onset_rate_per_s = saturation_onset(r);
    let op = curve::optimal_operating_point(&levels);
    r.optimal_rate_per_s = op.map(|o| o.level.offered_rate_per_s);
    r.optimal_basis = op.map(|o| {
        match o.basis {
            OperatingBasis::Slo => "slo",
            OperatingBasis::BelowKnee => "below_knee",
        }
        .into()
    });
    let peak = curve::peak(&levels);
    r.peak_rate_per_s = peak.map(|l| l.offered_rate_per_s);
    r.peak_output_tokens_per_s = peak.map(|l| l.achieved_tokens_per_s);
}

/// The first level saturated for good: the lower of the level whose throughput fell
/// (`saturation_rate_per_s`) and the first level from which every level showed one of the
/// draft's saturation signals (5.2.3.1). A single level that fired below levels that did not
/// is not saturation, as a single spike is not the knee. `None` when neither: the sweep did
/// not reach saturation.
pub fn first_saturated(r: &CurveResult) -> Option<&CurvePoint> {
    let points = ascending(r);
    let tail = points
        .iter()
        .rev()
        .take_while(|p| !p.saturation_signals.is_empty())
        .count();
    let signalled = (tail > 0).then(|| points[points.len() - tail]);
    let fell = r
        .saturation_rate_per_s
        .and_then(|x| points.iter().copied().find(|p| p.offered_rate_per_s == x));
    match (fell, signalled) {
        (Some(a), Some(b)) if b.offered_rate_per_s < a.offered_rate_per_s => Some(b),
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}

/// The offered rate at which the server stopped keeping up, req/s, read between levels.
///
/// The levels are 10 % of the estimated capacity apart, and a level only a few per cent
/// past the capacity seldom shows a signal within its span (its queue grows by a few
/// requests), so the first level saturated for good ([`first_saturated`]) can lie one or two
/// steps past the point. A saturated server completes requests at its own rate, whatever is
/// offered: the median request rate achieved at the saturated levels (that one and every
/// level above it) is where offered load stopped turning into completions. The reading is
/// that rate, bounded above by the first saturated level's offered rate and below by the
/// highest rate a lower level sustained (the lesser of what it offered and what it
/// completed), so a server whose throughput collapses past saturation reads at the rate it
/// was seen to sustain, not at its collapse.
pub fn saturation_onset(r: &CurveResult) -> Option<f64> {
    let first = first_saturated(r)?;
    let points = ascending(r);
    let sustained = points
        .iter()
        .filter(|p| p.offered_rate_per_s < first.offered_rate_per_s)
        .map(|p| p.offered_rate_per_s.min(p.achieved_requests_per_s))
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max);
    let mut achieved: Vec<f64> = points
        .iter()
        .filter(|p| p.offered_rate_per_s >= first.offered_rate_per_s)
        .map(|p| p.achieved_requests_per_s)
        .filter(|x| x.is_finite())
        .collect();
    if achieved.is_empty() {
        return Some(first.offered_rate_per_s);
    }
    achieved.sort_by(f64::total_cmp);
    let median = percentile_sorted(&achieved, 50.0);
    Some(median.clamp(sustained, first.offered_rate_per_s))
}

/// The sweep's levels by offered rate, lowest first.
fn ascending(r: &CurveResult) -> Vec<&CurvePoint> {
    let mut points: Vec<&CurvePoint> = r.points.iter().collect();
    points.sort_by(|a, b| a.offered_rate_per_s.total_cmp(&b.offered_rate_per_s));
    points
}

/// The highest offered level of the sweep.
fn top(r: &CurveResult) -> Option<&CurvePoint> {
    r.points
        .iter()
        .max_by(|a, b| a.offered_rate_per_s.total_cmp(&b.offered_rate_per_s))
}

/// Whether the sweep reached saturation: a level's throughput fell (the saturation point),
/// or the top level shows one of the draft's saturation signals (5.2.3.1: its queue grew, its
/// arrivals completed at under 90 % of their rate, or its latency blew up). Levels past 100 %
/// of a capacity that none of them saturated did not reach saturation: the capacity was low.
pub fn reached_saturation(r: &CurveResult) -> bool {
    r.saturation_rate_per_s.is_some() || top(r).is_some_and(|t| !t.saturation_signals.is_empty())
}

/// 5.3.2's "at least 10 load levels spanning from low load (10 % of estimated capacity) to
/// saturation": ten levels or more, the lowest at 10 % or below, and the sweep reaching
/// saturation ([`reached_saturation`]), not merely a top share of 100 % or more. (met, detail)
pub fn levels_to_saturation(r: &CurveResult) -> (bool, String) {
    let lowest = r.points.iter().map(|p| p.share).reduce(f64::min);
    let highest = r.points.iter().map(|p| p.share).reduce(f64::max);
    let reached = match (r.saturation_rate_per_s, top(r)) {
        (Some(x), _) if r.saturation_rule.as_deref() == Some("shortfall") => format!(
            "saturated: throughput fell short of the offer at {} req/s",
            rate(x)
        ),
        (Some(x), _) => format!("saturated: throughput fell at {} req/s", rate(x)),
        (None, Some(t)) if !t.saturation_signals.is_empty() => format!(
            "saturated at the top level, {} req/s: {}",
            rate(t.offered_rate_per_s),
            t.saturation_signals.join("; ")
        ),
        (None, Some(t)) => format!(
            "not shown to reach saturation: the top level, {} req/s, showed no saturation signal (give a higher --capacity, or more --levels)",
            rate(t.offered_rate_per_s)
        ),
        (None, None) => "no level ran".to_string(),
    };
    let met =
        r.points.len() >= 10 && lowest.is_some_and(|l| l <= 0.1 + 1e-9) && reached_saturation(r);
    let detail = format!(
        "{} levels from {:.0} % to {:.0} %; {reached}",
        r.points.len(),
        lowest.unwrap_or(0.0) * 100.0,
        highest.unwrap_or(0.0) * 100.0
    );
    (met, detail)
}

/// The one-line answer: knee, saturation, and the optimal point with the SLO it is under
/// (and whether it met it on its observed values only).
fn answer(r: &CurveResult) -> String {
    if r.points.is_empty() {
        return "no level of the curve ran".into();
    }
    let at = |x: Option<f64>| x.map(|v| format!("{} req/s", rate(v)));
    let optimal = r.optimal_rate_per_s.and_then(|x| {
        let p = r.points.iter().find(|p| p.offered_rate_per_s == x)?;
        Some(format!(
            "{} req/s ({} tok/s{})",
            rate(x),
            thousands(p.achieved_tokens_per_s),
            if p.slo_reading.as_deref() == Some("observed") {
                "; met on its observed values: too few requests for a 95 % decision"
            } else {
                ""
            }
        ))
    });
    let (best, none) = match &r.slo {
        Some(slo) => (format!("under the SLO {slo}"), "no level met it"),
        None => ("below the knee".to_string(), "none"),
    };
    let onset = r
        .saturation_onset_rate_per_s
        .map(|x| format!("stopped keeping up at {} req/s, ", rate(x)))
        .unwrap_or_default();
    format!(
        "knee at {}, {onset}saturation at {}, best {best}: {}",
        at(r.knee_rate_per_s).unwrap_or_else(|| "none (P99 never doubled)".into()),
        at(r.saturation_rate_per_s)
            .unwrap_or_else(|| "none (throughput never fell, nor fell short of the offer)".into()),
        optimal.unwrap_or_else(|| none.into())
    )
}

fn compliance(s: &Session, o: &Options, r: &CurveResult) -> super::compliance::Compliance {
    let mut c = Checklist::default();
    c.common(o.quick, s.warmup.as_ref(), o.seed);
    c.guardrails("4.8.1", o.disclosure.guardrails.as_deref(), &s.levels);
    c.level_time("5.3.2", &s.levels, &[Role::Sweep], (60.0, None));
    let (to_saturation, detail) = levels_to_saturation(r);
    c.must(
        "5.3.2",
        "at least 10 load levels from 10 % of estimated capacity to saturation",
        to_saturation,
        detail,
    );
    c.must(
        "5.3.2",
        "open-loop load (REQUIRED: closed loop cannot show behaviour past capacity)",
        true,
        "every level is open loop",
    );
    c.must(
        "5.3.3",
        "capacity estimated by a preliminary throughput test or published figures",
        r.capacity_rate_per_s.is_some(),
        match (r.capacity_rate_per_s, r.capacity_source.as_str()) {
            (None, _) => "not reached".to_string(),
            (Some(x), "") => format!("{} req/s", rate(x)),
            (Some(x), source) => format!("{} req/s: {source}", rate(x)),
        },
    );
    c.must("5.3.3", "levels run in ascending order", true, "ascending");
    c.finish()
}

#[cfg(test)]
mod tests;
