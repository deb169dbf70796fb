//! Unit tests of the curve's readings on hand-made levels.

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
        slo_reading: None,
        saturation_signals: Vec::new(),
    }
}

#[test]
fn reads_knee_saturation_and_optimal() {
    // Minimum P99 100 ms; 250 > 200 at 3 req/s → knee. Throughput falls from 290±5 to
    // 260±5 at 5 req/s (265 < 285): the draft's words put saturation there. But 290 + 5 at
    // 4 req/s is already short of the offer (0.9 × 97.5 tokens a request, the best lower
    // bound below it, × 4 = 351): saturation at 4, where throughput peaks. No SLO: optimal =
    // best below the knee.
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
    assert_eq!(r.saturation_rate_per_s, Some(4.0));
    assert_eq!(r.saturation_rule.as_deref(), Some("shortfall"));
    assert_eq!(
        curve::saturation(&stats_levels(&r.points)).map(|l| l.offered_rate_per_s),
        Some(5.0),
        "the draft's words"
    );
    assert_eq!(r.optimal_rate_per_s, Some(2.0));
    assert_eq!(r.optimal_basis.as_deref(), Some("below_knee"));
    assert_eq!(r.peak_rate_per_s, Some(4.0));
    // A dip inside the intervals is not a fall by the draft's words; 4 req/s stays the
    // saturation point, short of its offer.
    r.points[4] = p(5.0, 287.0, 5.0, 3000.0);
    read_curve(&mut r);
    assert!(curve::saturation(&stats_levels(&r.points)).is_none());
    assert_eq!(r.saturation_rate_per_s, Some(4.0));
    // Throughput that grows with the offer has no saturation point.
    let mut r = CurveResult {
        points: vec![p(1.0, 100.0, 5.0, 100.0), p(2.0, 200.0, 5.0, 150.0)],
        ..Default::default()
    };
    read_curve(&mut r);
    assert_eq!((r.saturation_rate_per_s, r.saturation_rule), (None, None));
}

/// An SLO check of one percentile term, `met` of `trials` within the bound against
/// `target`, with the interval and verdict `slo_check` gives it.
fn check(met: u64, trials: u64, target: f64) -> SloCheck {
    use crate::stats::interval::{slo_verdict, wilson};
    let verdict = slo_verdict(met, trials, target, 0.95).unwrap_or(SloVerdict::Fail);
    SloCheck {
        spec: "p99(ttft_ms)<=10000".into(),
        confidence: 0.95,
        terms: vec![crate::procedure::slo_check::TermCheck {
            term: "p99(ttft_ms)<=10000".into(),
            met,
            trials,
            target: Some(target),
            interval: wilson(met, trials, 0.95),
            observed: None,
            bound: None,
            verdict,
        }],
        verdict,
    }
}

/// Issue 19, item 3: `test curve --quick --slo 'p99(ttft_ms)<=10000'`, every P99 at
/// 11-39 ms. A 6-s level at 1.2 req/s has 7 requests, all within 10 s: Wilson 95 %
/// (7 ÷ (7 + 1.96²) = 0.646, 1] straddles 0.99, undecided, which the old reading
/// (`verdict == Pass`) called a miss at every level: optimal "none". Read on the observed
/// values, 7 of 7 = 100 % ≥ 99 %: met. 989 of 1,000 (Wilson (0.980, 0.994), undecided)
/// is 98.9 % < 99 %: missed. 990 of 1,000 (99.0 %, Wilson upper 0.995) is met. 900 of
/// 1,000 (Wilson upper 0.917 < 0.99) is missed on its interval.
#[test]
fn an_undecided_level_is_read_on_its_observed_values() {
    let few = check(7, 7, 0.99);
    assert_eq!(few.verdict, SloVerdict::Undecided);
    assert_ne!(few.verdict, SloVerdict::Pass, "the old reading: missed");
    assert_eq!(
        slo_reading(Some(&few)),
        (Some(true), Some("observed".to_string()))
    );
    assert_eq!(check(989, 1000, 0.99).verdict, SloVerdict::Undecided);
    assert_eq!(slo_reading(Some(&check(989, 1000, 0.99))).0, Some(false));
    assert_eq!(slo_reading(Some(&check(990, 1000, 0.99))).0, Some(true));
    assert_eq!(
        slo_reading(Some(&check(900, 1000, 0.99))),
        (Some(false), Some("interval".to_string()))
    );
    assert_eq!(slo_reading(None), (None, None));
    // The sweep: three such levels (100, 200, 300 tok/s), each met on its observed
    // values. The optimal point is the highest throughput among them, 3 req/s, under the
    // SLO (before: none, every level "missed").
    let mut r = CurveResult {
        slo: Some("p99(ttft_ms)<=10000".into()),
        points: vec![
            p(1.0, 100.0, 5.0, 11.0),
            p(2.0, 200.0, 5.0, 25.0),
            p(3.0, 300.0, 5.0, 39.0),
        ],
        ..Default::default()
    };
    for x in &mut r.points {
        (x.slo_met, x.slo_reading) = slo_reading(Some(&few));
    }
    read_curve(&mut r);
    assert_eq!(r.optimal_rate_per_s, Some(3.0));
    assert_eq!(r.optimal_basis.as_deref(), Some("slo"));
    let a = answer(&r);
    assert!(
        a.ends_with("best under the SLO p99(ttft_ms)<=10000: 3 req/s (300 tok/s; met on its observed values: too few requests for a 95 % decision)"),
        "{a}"
    );
}

/// Issue 19, item 6: twelve levels from 10 % to 120 % of the capacity used to meet "10
/// levels from 10 % to saturation" by their shares alone. With no fall in throughput and
/// no saturation signal at the top level (120 %, 12 req/s) the sweep did not reach
/// saturation: not met. A signal at the top level, or a fall, meets it.
#[test]
fn levels_to_saturation_need_the_sweep_to_saturate() {
    let mut r = CurveResult {
        points: shares(12)
            .into_iter()
            .map(|sh| CurvePoint {
                share: sh,
                ..p(10.0 * sh, 1000.0 * sh, 5.0, 100.0)
            })
            .collect(),
        ..Default::default()
    };
    let (met, detail) = levels_to_saturation(&r);
    assert!(!met, "{detail}");
    assert!(
        detail.starts_with(
            "12 levels from 10 % to 120 %; not shown to reach saturation: the top level, 12 req/s,"
        ),
        "{detail}"
    );
    r.points[11].saturation_signals =
        vec!["queue growth: in flight rose 40.0 requests over 5 s (p = 1.0e-4)".into()];
    assert!(levels_to_saturation(&r).0);
    r.points[11].saturation_signals.clear();
    r.saturation_rate_per_s = Some(11.0);
    assert_eq!(
        levels_to_saturation(&r),
        (
            true,
            "12 levels from 10 % to 120 %; saturated: throughput fell at 11 req/s".to_string()
        )
    );
    // Nine levels are too few whatever they show.
    r.points.truncate(9);
    assert!(!levels_to_saturation(&r).0);
}
