//! Reading a throughput–latency curve: knee, saturation point, optimal
//! operating point (draft 5.3.4). The saturation signals of a single level
//! (draft 5.2.3.1: queue growth, completions short of arrivals, latency
//! blow-up) are read on its records in `procedure::saturation`, not here.
//!
//! A sweep measures one [`Level`] per offered load. The draft defines the
//! derived points in one line each; the functions below follow that text,
//! and where it leaves a choice open the doc comment says which reading is
//! taken. Every function orders the levels by offered load itself, so the
//! caller may pass them in any order; levels whose numbers are not finite
//! are skipped rather than allowed to poison a comparison.

use serde::{Deserialize, Serialize};

/// A P99 above this multiple of the minimum P99 marks the knee (5.3.4).
pub const KNEE_FACTOR: f64 = 2.0;
/// Achieved throughput below this share of what the offered load asks marks
/// saturation (see [`shortfall`]): the draft's own bound for completions
/// against arrivals (5.2.3.1, "less than 90% of arrival rate").
pub const SHORTFALL_SHARE: f64 = 0.9;
/// A level without a throughput interval shows a decrease only below this
/// share of the previous level's lower bound (see [`saturation`]).
pub const COLLAPSE_SHARE: f64 = 0.5;

/// One load level of a throughput–latency sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// Offered load, requests per second (open loop) — the sweep's x axis.
    pub offered_rate_per_s: f64,
    /// Mean achieved output throughput over runs, tokens per second.
    pub achieved_tokens_per_s: f64,
    /// 95 % confidence interval `(lo, hi)` of the achieved throughput,
    /// tokens per second.
    pub achieved_ci: (f64, f64),
    /// P99 latency, milliseconds. The draft's Table 5 uses TTFT for the
    /// knee; the caller picks the latency metric and keeps it consistent.
    pub p99_latency_ms: f64,
    /// P50 latency of the same metric, milliseconds.
    pub p50_latency_ms: f64,
    /// Whether the level met the specified SLO; None when no SLO was given.
    pub slo_attained: Option<bool>,
}

/// The levels in ascending offered load (stable for equal loads), without
/// those whose offered load is not a finite number.
fn ascending(levels: &[Level]) -> Vec<&Level> {
    let mut sorted: Vec<&Level> = levels
        .iter()
        .filter(|l| l.offered_rate_per_s.is_finite())
        .collect();
    sorted.sort_by(|a, b| a.offered_rate_per_s.total_cmp(&b.offered_rate_per_s));
    sorted
}

/// Knee point (draft 5.3.4: "Load level where P99 latency exceeds 2x the
/// minimum P99 latency observed"): the lowest offered load whose
/// `p99_latency_ms` is strictly greater than [`KNEE_FACTOR`] times the
/// minimum P99 over the *whole* sweep.
///
/// "Minimum observed" is read literally as the minimum over every level
/// measured, not a running minimum over lower loads only, so the reported
/// knee can be checked against the published table alone. On a curve whose
/// latency only rises with load the two readings agree; they differ only if
/// some low load already had more than twice the best P99 of the sweep, and
/// then this function reports that low load (a warning sign in itself,
/// e.g. an incomplete warm-up). None when no level exceeds the threshold.
pub fn knee(levels: &[Level]) -> Option<&Level> {
    let sorted: Vec<&Level> = ascending(levels)
        .into_iter()
        .filter(|l| l.p99_latency_ms.is_finite())
        .collect();
    let min_p99 = sorted.iter().map(|l| l.p99_latency_ms).reduce(f64::min)?;
    sorted
        .into_iter()
        .find(|l| l.p99_latency_ms > KNEE_FACTOR * min_p99)
}

/// Knee point read robustly: the lowest offered load from which *every* level's P99
/// exceeds [`KNEE_FACTOR`] times the sweep's minimum P99. On a curve whose latency only
/// rises with load it is [`knee`]; it differs when one level's P99 spikes and the next ones
/// come back under the threshold. A P99 from a level of a few hundred requests is close to
/// its maximum, so one slow request can double it; the draft's knee marks where latency
/// turns for good, and reporting a spike as the knee would send operators to the wrong
/// load. None when the last level is under the threshold.
pub fn sustained_knee(levels: &[Level]) -> Option<&Level> {
    let sorted: Vec<&Level> = ascending(levels)
        .into_iter()
        .filter(|l| l.p99_latency_ms.is_finite())
        .collect();
    let min_p99 = sorted.iter().map(|l| l.p99_latency_ms).reduce(f64::min)?;
    let threshold = KNEE_FACTOR * min_p99;
    let first_above_from_end = sorted
        .iter()
        .rev()
        .take_while(|l| l.p99_latency_ms > threshold)
        .count();
    (first_above_from_end > 0).then(|| sorted[sorted.len() - first_above_from_end])
}

/// Saturation point (draft 5.3.4: "Load level where achieved throughput
/// first decreases from previous level"): the lowest offered load whose
/// achieved throughput is below that of the level just before it, where a
/// decrease counts only when the confidence intervals separate — this
/// level's upper bound below the previous level's lower bound. A dip inside
/// the noise is not a decrease, and the scan goes on past it. None when no
/// level decreases that clearly.
///
/// The draft's Table 5 example labels 22 req/s the saturation point
/// "(throughput peaks)" although its throughput never decreases. This
/// function follows the definition's words and gives None there;
/// [`saturation_point`] adds the reading that gives the example's answer
/// ([`shortfall`]), and is what the curve test reports.
///
/// A level without an interval (too few completions in its steady span to
/// form one, as happens when throughput collapses) is compared by its point
/// value: it counts as a decrease only when that value is below
/// [`COLLAPSE_SHARE`] of the previous level's lower bound, a fall no noise
/// explains. Levels without an interval are never the "previous level".
pub fn saturation(levels: &[Level]) -> Option<&Level> {
    let has_ci = |l: &Level| l.achieved_ci.0.is_finite() && l.achieved_ci.1.is_finite();
    let mut previous: Option<&Level> = None;
    for l in ascending(levels) {
        if let Some(p) = previous {
            let fell = if has_ci(l) {
                l.achieved_ci.1 < p.achieved_ci.0
            } else {
                l.achieved_tokens_per_s < COLLAPSE_SHARE * p.achieved_ci.0
            };
            if fell {
                return Some(l);
            }
        }
        if has_ci(l) {
            previous = Some(l);
        }
    }
    None
}

/// Which reading found the saturation point ([`saturation_point`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaturationRule {
    /// The draft's literal rule: throughput fell from the previous level ([`saturation`]).
    Decrease,
    /// Throughput fell short of what the offered load asks ([`shortfall`]).
    Shortfall,
}

/// First level whose achieved throughput falls short of what its offered
/// load asks: its interval's upper bound below [`SHORTFALL_SHARE`] of the
/// offered rate times the best tokens per offered request a lower level
/// delivered (the highest lower bound of achieved ÷ offered over the levels
/// below it). A server that keeps up turns each offered request into its
/// tokens, so achieved throughput grows with the offer; past its capacity it
/// delivers what it can and the rest queues. This is the draft's 5.2.3.1
/// signal "completion rate is less than 90% of arrival rate", read in
/// tokens as 5.3 reads throughput.
///
/// It is how the draft's own example reads: Table 5's throughput never
/// falls (so [`saturation`] finds nothing), yet the draft names 22 req/s
/// "(throughput peaks)": 142 tokens per offered request at every level up to
/// 14 req/s and 141 at 18, but 2,712 tok/s at 22 req/s is 123 a request,
/// 87 % of what the offer asks (2,712 < 0.9 × 142 × 22 = 2,812).
///
/// A level without an interval counts only below [`COLLAPSE_SHARE`] of
/// what its offer asks, as in [`saturation`], and never sets the reference.
/// None when every level delivered what its offer asks.
pub fn shortfall(levels: &[Level]) -> Option<&Level> {
    let has_ci = |l: &Level| l.achieved_ci.0.is_finite() && l.achieved_ci.1.is_finite();
    let mut best_per_request: Option<f64> = None;
    for l in ascending(levels) {
        let offered = l.offered_rate_per_s;
        if let Some(per_request) = best_per_request {
            let asked = per_request * offered;
            let short = if has_ci(l) {
                l.achieved_ci.1 < SHORTFALL_SHARE * asked
            } else {
                l.achieved_tokens_per_s < COLLAPSE_SHARE * asked
            };
            if short {
                return Some(l);
            }
        }
        if has_ci(l) && offered > 0.0 {
            let delivered = l.achieved_ci.0 / offered;
            best_per_request = Some(best_per_request.map_or(delivered, |b| b.max(delivered)));
        }
    }
    None
}

/// The saturation point as servebench reads the draft (docs/methodology.md):
/// the lower of the level where throughput fell ([`saturation`], the literal
/// rule) and the level where it fell short of the offer ([`shortfall`], the
/// reading that gives the draft's own Table 5 its stated 22 req/s), with the
/// rule that found it (the literal one when both find the same level).
pub fn saturation_point(levels: &[Level]) -> Option<(&Level, SaturationRule)> {
    let fell = saturation(levels).map(|l| (l, SaturationRule::Decrease));
    let short = shortfall(levels).map(|l| (l, SaturationRule::Shortfall));
    match (fell, short) {
        (Some(f), Some(s)) if s.0.offered_rate_per_s < f.0.offered_rate_per_s => Some(s),
        (Some(f), _) => Some(f),
        (None, s) => s,
    }
}

/// The level with the highest mean achieved throughput (lowest offered
/// load among ties) — the "throughput peaks" level of the draft's Table 5
/// caption. None for an empty sweep.
pub fn peak(levels: &[Level]) -> Option<&Level> {
    best_throughput(ascending(levels).into_iter())
}

/// Highest achieved throughput; the first (lowest load) wins a tie, since
/// the same throughput at less load is the better place to run.
fn best_throughput<'a>(levels: impl Iterator<Item = &'a Level>) -> Option<&'a Level> {
    levels
        .filter(|l| l.achieved_tokens_per_s.is_finite())
        .fold(None, |best: Option<&Level>, l| match best {
            Some(b) if b.achieved_tokens_per_s >= l.achieved_tokens_per_s => Some(b),
            _ => Some(l),
        })
}

/// What made a level the optimal operating point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OperatingBasis {
    /// Highest throughput among levels that met the specified SLO (the
    /// draft's definition).
    Slo,
    /// No SLO was specified: highest throughput among levels below the
    /// knee (all levels when there is no knee).
    BelowKnee,
}

/// The optimal operating point and why it was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OperatingPoint<'a> {
    /// The chosen level.
    pub level: &'a Level,
    /// Which rule chose it.
    pub basis: OperatingBasis,
}

/// Optimal operating point (draft 5.3.4: "Load level achieving highest
/// throughput while meeting specified SLO"): among levels with
/// `slo_attained == Some(true)`, the one with the highest mean achieved
/// throughput (lowest offered load among ties).
///
/// The SLO counts as specified when any level carries a verdict; levels
/// without one are then treated as not shown to meet it. When no level
/// carries a verdict the draft gives no definition, and this function
/// stands in the knee for the SLO: the highest-throughput level at an
/// offered load below the [`sustained_knee`], i.e. before P99 doubled for
/// good (every level when there is no knee). None when no level qualifies
/// (an SLO that no level met) or there are no levels.
pub fn optimal_operating_point(levels: &[Level]) -> Option<OperatingPoint<'_>> {
    let sorted = ascending(levels);
    if sorted.iter().any(|l| l.slo_attained.is_some()) {
        let level = best_throughput(sorted.into_iter().filter(|l| l.slo_attained == Some(true)))?;
        return Some(OperatingPoint {
            level,
            basis: OperatingBasis::Slo,
        });
    }
    // The sustained knee: a single spiking level does not cut the candidates short.
    let limit = sustained_knee(levels).map_or(f64::INFINITY, |k| k.offered_rate_per_s);
    let level = best_throughput(sorted.into_iter().filter(|l| l.offered_rate_per_s < limit))?;
    Some(OperatingPoint {
        level,
        basis: OperatingBasis::BelowKnee,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(rate: f64, tput: f64, half_ci: f64, p99: f64, p50: f64, slo: Option<bool>) -> Level {
        Level {
            offered_rate_per_s: rate,
            achieved_tokens_per_s: tput,
            achieved_ci: (tput - half_ci, tput + half_ci),
            p99_latency_ms: p99,
            p50_latency_ms: p50,
            slo_attained: slo,
        }
    }

    #[test]
    fn a_spike_is_not_a_sustained_knee() {
        // Min P99 100; threshold 200. 250 at 2 req/s is a spike (3 req/s is back at 150);
        // from 4 req/s on every P99 is above: the sustained knee is 4, the literal one 2.
        let ls: Vec<Level> = [
            (1.0, 100.0),
            (2.0, 250.0),
            (3.0, 150.0),
            (4.0, 300.0),
            (5.0, 900.0),
        ]
        .iter()
        .map(|&(r, p99)| level(r, 0.0, 1.0, p99, p99 / 2.0, None))
        .collect();
        assert_eq!(knee(&ls).unwrap().offered_rate_per_s, 2.0);
        assert_eq!(sustained_knee(&ls).unwrap().offered_rate_per_s, 4.0);
        assert!(
            sustained_knee(&ls[..3]).is_none(),
            "the last level is under the threshold"
        );
        assert_eq!(
            sustained_knee(&table5()).map(|l| l.offered_rate_per_s),
            knee(&table5()).map(|l| l.offered_rate_per_s),
            "a rising curve: both readings agree"
        );
    }

    /// The draft's Table 5 (TTFT P50/P99), with ±20 tok/s intervals.
    fn table5() -> Vec<Level> {
        [
            (2.0, 284.0, 142.0, 95.0),
            (6.0, 852.0, 178.0, 102.0),
            (10.0, 1420.0, 267.0, 128.0),
            (14.0, 1988.0, 512.0, 198.0),
            (18.0, 2534.0, 1234.0, 378.0),
            (22.0, 2712.0, 3456.0, 823.0),
        ]
        .iter()
        .map(|&(r, t, p99, p50)| level(r, t, 20.0, p99, p50, None))
        .collect()
    }

    #[test]
    fn table5_knee_is_14() {
        // Minimum P99 = 142, threshold 284: 267 at 10 req/s stays under,
        // 512 at 14 req/s exceeds — the draft's own "Knee point: 14 req/s".
        assert_eq!(knee(&table5()).unwrap().offered_rate_per_s, 14.0);
    }

    #[test]
    fn table5_has_no_decrease_but_peaks_at_22() {
        // Throughput rises at every step, so by the definition's words there
        // is no saturation point; the caption's "throughput peaks" level is 22.
        // Tokens per offered request, lower bounds: 132, 138.7, 140, 140.6,
        // 139.7; at 22 req/s 2,712 + 20 = 2,732 < 0.9 × 140.6 × 22 = 2,783:
        // short of the offer, the draft's 22.
        let t = table5();
        assert!(saturation(&t).is_none());
        assert_eq!(peak(&t).unwrap().offered_rate_per_s, 22.0);
        assert_eq!(shortfall(&t).unwrap().offered_rate_per_s, 22.0);
        let (l, rule) = saturation_point(&t).unwrap();
        assert_eq!(
            (l.offered_rate_per_s, rule),
            (22.0, SaturationRule::Shortfall)
        );
    }

    #[test]
    fn knee_order_independent_and_strict() {
        let mut t = table5();
        t.reverse();
        assert_eq!(knee(&t).unwrap().offered_rate_per_s, 14.0);
        // Exactly 2x the minimum does not "exceed"; nothing does → None.
        let flat = vec![
            level(1.0, 100.0, 1.0, 100.0, 50.0, None),
            level(2.0, 200.0, 1.0, 150.0, 50.0, None),
            level(3.0, 300.0, 1.0, 200.0, 50.0, None),
        ];
        assert!(knee(&flat).is_none());
        assert!(knee(&[]).is_none());
    }

    #[test]
    fn knee_uses_the_sweep_minimum() {
        // P99: 300, 100, 120, 250. Sweep minimum 100, threshold 200: the
        // first level (300) already exceeds it. A running minimum would
        // instead report 4 req/s (250 > 2·100); the literal reading wins.
        let t = vec![
            level(1.0, 100.0, 1.0, 300.0, 50.0, None),
            level(2.0, 200.0, 1.0, 100.0, 50.0, None),
            level(3.0, 300.0, 1.0, 120.0, 50.0, None),
            level(4.0, 400.0, 1.0, 250.0, 50.0, None),
        ];
        assert_eq!(knee(&t).unwrap().offered_rate_per_s, 1.0);
    }

    #[test]
    fn saturation_needs_separated_intervals() {
        // 1000 ±10 → 1100 ±10 → 1080 ±30 (dip inside the noise: 1110 ≥ 1090)
        // → 1000 ±10 (1010 < 1050 = lower bound of 1080 ±30): saturation at 4.
        let t = vec![
            level(1.0, 1000.0, 10.0, 100.0, 50.0, None),
            level(2.0, 1100.0, 10.0, 100.0, 50.0, None),
            level(3.0, 1080.0, 30.0, 100.0, 50.0, None),
            level(4.0, 1000.0, 10.0, 100.0, 50.0, None),
        ];
        assert_eq!(saturation(&t).unwrap().offered_rate_per_s, 4.0);
        // Same means with wide intervals: every fall is within noise → None.
        let wide: Vec<Level> = t
            .iter()
            .map(|l| {
                level(
                    l.offered_rate_per_s,
                    l.achieved_tokens_per_s,
                    60.0,
                    100.0,
                    50.0,
                    None,
                )
            })
            .collect();
        assert!(saturation(&wide).is_none());
        // Touching intervals (hi == previous lo) are not separated.
        let touch = vec![
            level(1.0, 1000.0, 10.0, 100.0, 50.0, None),
            level(2.0, 980.0, 10.0, 100.0, 50.0, None),
        ];
        assert!(saturation(&touch).is_none());
    }

    #[test]
    fn a_collapsed_level_without_an_interval_is_a_decrease() {
        let no_ci = |rate: f64, tput: f64| Level {
            achieved_ci: (f64::NAN, f64::NAN),
            ..level(rate, tput, 0.0, 100.0, 50.0, None)
        };
        // 1000 ±10, 1100 ±10 (lower bound 1090), then 400 without an interval:
        // 400 < 0.5 × 1090 = 545, a collapse.
        let t = vec![
            level(1.0, 1000.0, 10.0, 100.0, 50.0, None),
            level(2.0, 1100.0, 10.0, 100.0, 50.0, None),
            no_ci(3.0, 400.0),
        ];
        assert_eq!(saturation(&t).unwrap().offered_rate_per_s, 3.0);
        // 600 without an interval is above 545: not clear, and it does not become the
        // previous level, so 1,050 ±10 after it compares with 1,100 ±10 (1,060 < 1,090).
        let t = vec![
            level(1.0, 1000.0, 10.0, 100.0, 50.0, None),
            level(2.0, 1100.0, 10.0, 100.0, 50.0, None),
            no_ci(3.0, 600.0),
            level(4.0, 1050.0, 10.0, 100.0, 50.0, None),
        ];
        assert_eq!(saturation(&t).unwrap().offered_rate_per_s, 4.0);
        // A first level without an interval has nothing to fall from.
        assert!(
            saturation(&[no_ci(1.0, 10.0), level(2.0, 1000.0, 10.0, 1.0, 1.0, None)]).is_none()
        );
    }

    #[test]
    fn optimal_point_with_slo() {
        // SLO met at 2, 6, 10 (and oddly at 22); the best throughput among
        // them is 2712 at 22 req/s, not the knee-based answer.
        let mut t = table5();
        for (l, ok) in t.iter_mut().zip([true, true, true, false, false, true]) {
            l.slo_attained = Some(ok);
        }
        let op = optimal_operating_point(&t).unwrap();
        assert_eq!(op.level.offered_rate_per_s, 22.0);
        assert_eq!(op.basis, OperatingBasis::Slo);
        // Unmark 22: now 10 req/s (1420 tok/s) is the best that met it.
        t[5].slo_attained = None;
        assert_eq!(
            optimal_operating_point(&t)
                .unwrap()
                .level
                .offered_rate_per_s,
            10.0
        );
        // No level met the SLO → None (not a fallback to the knee).
        for l in &mut t {
            l.slo_attained = Some(false);
        }
        assert!(optimal_operating_point(&t).is_none());
    }

    #[test]
    fn optimal_point_without_slo_is_below_the_knee() {
        // Knee at 14 → best of 2, 6, 10 → 10 req/s.
        let t = table5();
        let op = optimal_operating_point(&t).unwrap();
        assert_eq!(op.level.offered_rate_per_s, 10.0);
        assert_eq!(op.basis, OperatingBasis::BelowKnee);
        // A spike at the first level that does not last is no knee: the best of all.
        let t = vec![
            level(1.0, 100.0, 1.0, 300.0, 50.0, None),
            level(2.0, 200.0, 1.0, 100.0, 50.0, None),
        ];
        assert_eq!(
            optimal_operating_point(&t)
                .unwrap()
                .level
                .offered_rate_per_s,
            2.0
        );
        // No knee → best of all levels; a tie goes to the lower load.
        let t = vec![
            level(1.0, 100.0, 1.0, 100.0, 50.0, None),
            level(2.0, 180.0, 1.0, 110.0, 50.0, None),
            level(3.0, 180.0, 1.0, 120.0, 50.0, None),
        ];
        assert_eq!(
            optimal_operating_point(&t)
                .unwrap()
                .level
                .offered_rate_per_s,
            2.0
        );
    }

    /// Issue 31, item 12: the literal "P99 above 10 × the P50 at lower load" saturation
    /// rule is not kept here beside the one the procedure uses (`procedure::saturation`
    /// reads the 5.2.3.1 signals per output token), and docs/metrics.md says that under
    /// option B mean ITL equals TPOT per request only, not over a run.
    #[test]
    fn the_literal_blowup_rule_lives_in_procedure_saturation_only() {
        let code = include_str!("curve.rs");
        assert!(!code.contains(concat!("LATENCY_BLOWUP", "_FACTOR")));
        assert!(!code.contains(concat!("fn saturation", "_signals(")));
        let metrics = include_str!("../../docs/metrics.md");
        assert!(!metrics.contains(concat!(
            "Under B the mean ITL equals the TPOT",
            " of the same requests."
        )));
        assert!(metrics.contains("per request"));
    }
}
