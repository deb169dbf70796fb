//! 5.3 Throughput-Latency Tradeoff: open-loop levels from 10 % to 120 % of the estimated
//! capacity, read for the knee, the saturation point and the optimal operating point.
//!
//! The readings are `stats::curve`'s: knee = first level from which every level's P99 TTFT
//! exceeds twice the sweep's minimum P99 (a single spiking level is not a knee: see
//! `stats::curve::sustained_knee`); saturation = first level whose achieved throughput falls below the
//! previous level's by more than their intervals allow (null when none does); optimal =
//! highest throughput that met the SLO (without an SLO: below the knee).

use super::compliance::Checklist;
use super::level::{rate, Bench, LevelSpec, Load, Role, Stop};
use super::report::Finding;
use super::session::Session;
use super::throughput::{estimate, thousands};
use super::{common_parameters, Options};
use crate::stats::curve::{self, Level, OperatingBasis};
use crate::stats::interval::SloVerdict;
use serde::{Deserialize, Serialize};

/// One row of Table 5.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub slo_met: Option<bool>,
}

/// `result` of a curve test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CurveResult {
    /// The capacity the levels are shares of, requests per second.
    pub capacity_rate_per_s: Option<f64>,
    /// "estimate" (closed-loop level) or "given" (`--capacity`).
    pub capacity_source: String,
    pub knee_rate_per_s: Option<f64>,
    /// First level whose throughput fell beyond its interval; null when none did.
    pub saturation_rate_per_s: Option<f64>,
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
        capacity_source: if o.capacity_rate_per_s.is_some() {
            "given".into()
        } else {
            "estimate".into()
        },
        ..Default::default()
    };
    let mut stop: Option<Stop> = None;
    match estimate(&mut s, o) {
        Err(e) => stop = Some(e),
        Ok(cap) => {
            result.capacity_rate_per_s = Some(cap);
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
    let answer = answer(&result, o);
    let compliance = compliance(&s, o, duration, &result);
    Finding {
        answered: !result.points.is_empty(),
        levels: s.levels,
        result: serde_json::to_value(&result).expect("plain data"),
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

/// A Table 5 row from a level.
pub fn point(l: &super::LevelOutcome, share: f64) -> CurvePoint {
    let s = &l.summary;
    let pick = |d: Option<crate::metrics::Distribution>,
                f: fn(&crate::metrics::Distribution) -> f64| d.map(|d| f(&d));
    CurvePoint {
        level: l.index,
        share,
        offered_rate_per_s: match l.load {
            Load::Rate { rate_per_s } => rate_per_s,
            Load::Concurrency { .. } => s.requests_per_s,
        },
        // Tokens received over the steady span (its interval is what can show a fall);
        // the completion-based steady figure when the level was too short for one.
        achieved_tokens_per_s: l
            .signals
            .steady_throughput
            .map_or(s.steady_state.output_tokens_per_s, |t| {
                t.output_tokens_per_s
            }),
        achieved_ci: l.signals.steady_throughput.map(|t| t.ci),
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
        slo_met: l.slo.as_ref().map(|c| c.verdict == SloVerdict::Pass),
    }
}

/// The points as the statistics (and the curve chart) read them: TTFT is the latency.
pub fn stats_levels(points: &[CurvePoint]) -> Vec<Level> {
    points
        .iter()
        .map(|p| Level {
            offered_rate_per_s: p.offered_rate_per_s,
            achieved_tokens_per_s: p.achieved_tokens_per_s,
            // Without an interval (too few completions) only a collapse shows a fall.
            achieved_ci: p.achieved_ci.unwrap_or((f64::NAN, f64::NAN)),
            p99_latency_ms: p.ttft_p99_ms.unwrap_or(f64::NAN),
            p50_latency_ms: p.ttft_p50_ms.unwrap_or(f64::NAN),
            slo_attained: p.slo_met,
        })
        .collect()
}

/// Fills the knee, saturation, optimal and peak from the points.
pub fn read_curve(r: &mut CurveResult) {
    let levels = stats_levels(&r.points);
    r.knee_rate_per_s = curve::sustained_knee(&levels).map(|l| l.offered_rate_per_s);
    r.saturation_rate_per_s = curve::saturation(&levels).map(|l| l.offered_rate_per_s);
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

fn answer(r: &CurveResult, o: &Options) -> String {
    if r.points.is_empty() {
        return "no level of the curve ran".into();
    }
    let at = |x: Option<f64>| x.map(|v| format!("{} req/s", rate(v)));
    let optimal = r.optimal_rate_per_s.and_then(|x| {
        let p = r.points.iter().find(|p| p.offered_rate_per_s == x)?;
        Some(format!(
            "{} req/s ({} tok/s)",
            rate(x),
            thousands(p.achieved_tokens_per_s)
        ))
    });
    format!(
        "knee at {}, saturation at {}, best {}: {}",
        at(r.knee_rate_per_s).unwrap_or_else(|| "none (P99 never doubled)".into()),
        at(r.saturation_rate_per_s).unwrap_or_else(|| "none (throughput never fell)".into()),
        if o.slo.is_some() {
            "under the SLO"
        } else {
            "below the knee"
        },
        optimal.unwrap_or_else(|| "none".into())
    )
}

fn compliance(
    s: &Session,
    o: &Options,
    duration: std::time::Duration,
    r: &CurveResult,
) -> super::compliance::Compliance {
    let mut c = Checklist::default();
    c.common(o.quick, s.warmup.as_ref(), o.seed);
    c.guardrails("4.8.1", o.disclosure.guardrails.as_deref(), &s.levels);
    let d = duration.as_secs_f64();
    c.must(
        "5.3.2",
        "at least 60 s per load level",
        d >= 60.0,
        format!("{d:.0} s per level"),
    );
    let lowest = r.points.first().map(|p| p.share);
    let highest = r.points.last().map(|p| p.share);
    c.must(
        "5.3.2",
        "at least 10 load levels from 10 % of estimated capacity to saturation",
        r.points.len() >= 10
            && lowest.is_some_and(|l| l <= 0.1 + 1e-9)
            && highest.is_some_and(|h| h >= 1.0),
        format!(
            "{} levels from {:.0} % to {:.0} %",
            r.points.len(),
            lowest.unwrap_or(0.0) * 100.0,
            highest.unwrap_or(0.0) * 100.0
        ),
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
        match r.capacity_source.as_str() {
            "given" => "--capacity".to_string(),
            _ => format!(
                "closed-loop estimate: {}",
                r.capacity_rate_per_s
                    .map(|x| format!("{} req/s", rate(x)))
                    .unwrap_or_else(|| "not reached".into())
            ),
        },
    );
    c.must("5.3.3", "levels run in ascending order", true, "ascending");
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twelve_levels_are_the_drafts_ten_percent_steps() {
        assert_eq!(
            shares(12),
            vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2]
        );
        assert_eq!(shares(2), vec![0.1, 1.2]);
    }

    fn p(rate: f64, tok: f64, half: f64, p99: f64) -> CurvePoint {
        CurvePoint {
            level: 0,
            share: 0.0,
            offered_rate_per_s: rate,
            achieved_tokens_per_s: tok,
            achieved_ci: Some((tok - half, tok + half)),
            achieved_requests_per_s: 0.0,
            ttft_p50_ms: Some(p99 / 2.0),
            ttft_p95_ms: None,
            ttft_p99_ms: Some(p99),
            tpot_p50_ms: None,
            tpot_p95_ms: None,
            tpot_p99_ms: None,
            e2e_p50_ms: None,
            e2e_p95_ms: None,
            e2e_p99_ms: None,
            success_rate: 1.0,
            cancelled: 0,
            queue: "stable".into(),
            slo_met: None,
        }
    }

    #[test]
    fn reads_knee_saturation_and_optimal() {
        // Minimum P99 100 ms; 250 > 200 at 3 req/s → knee. Throughput falls from 290±5 to
        // 260±5 at 5 req/s (265 < 285) → saturation. No SLO: optimal = best below the knee.
        let mut r = CurveResult {
            points: vec![
                p(1.0, 100.0, 5.0, 100.0),
                p(2.0, 200.0, 5.0, 150.0),
                p(3.0, 280.0, 5.0, 250.0),
                p(4.0, 290.0, 5.0, 900.0),
                p(5.0, 260.0, 5.0, 3000.0),
            ],
            ..Default::default()
        };
        read_curve(&mut r);
        assert_eq!(r.knee_rate_per_s, Some(3.0));
        assert_eq!(r.saturation_rate_per_s, Some(5.0));
        assert_eq!(r.optimal_rate_per_s, Some(2.0));
        assert_eq!(r.optimal_basis.as_deref(), Some("below_knee"));
        assert_eq!(r.peak_rate_per_s, Some(4.0));
        // A dip inside the intervals is not a fall.
        r.points[4] = p(5.0, 287.0, 5.0, 3000.0);
        read_curve(&mut r);
        assert_eq!(r.saturation_rate_per_s, None);
    }
}
