//! Unit tests of the readings: the derivations by hand, the readings on made-up levels, and
//! the virtual bench's prefix cache and guardrail delays.

use super::*;
use crate::metrics::cache::CacheFigures;
use crate::procedure::level::{Bench, LevelRun, LevelSpec, Load};
use std::time::Duration;

#[test]
fn the_capacity_truth_by_hand() {
    // The arithmetic of `capacity_truth`'s documentation.
    let c = case("fixed").unwrap();
    assert_eq!(capacity_truth(&c.sim, 256, 128), Some(4));
    // Chunked prefill: not this derivation.
    assert_eq!(capacity_truth(&flat(8, 10.0, 0.0), 128, 64), None);
}

fn point(level: usize, rate: f64, signals: &[&str]) -> CurvePoint {
    CurvePoint {
        level,
        share: 0.0,
        offered_rate_per_s: rate,
        achieved_tokens_per_s: 100.0,
        achieved_ci: None,
        achieved_requests_per_s: 1.0,
        ttft_p50_ms: None,
        ttft_p95_ms: None,
        ttft_p99_ms: None,
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
        saturation_signals: signals.iter().map(|s| s.to_string()).collect(),
    }
}

/// Levels at 1-5 req/s: a signal at 2 alone (3 is quiet again), then at 4 and 5: the
/// saturation point is 4. A throughput fall at 3 reads 3; one at 5 leaves 4. No signal
/// at the top and no fall: none.
#[test]
fn the_saturation_point_is_the_first_level_saturated_for_good() {
    let q = "queue growth";
    let mut r = CurveResult {
        points: vec![
            point(0, 1.0, &[]),
            point(1, 2.0, &[q]),
            point(2, 3.0, &[]),
            point(3, 4.0, &[q]),
            point(4, 5.0, &[q, "latency blow-up"]),
        ],
        knee_rate_per_s: Some(3.0),
        ..Default::default()
    };
    assert_eq!(first_saturated(&r).map(|p| p.level), Some(3));
    assert_eq!(knee_point(&r).map(|p| p.level), Some(2));
    r.saturation_rate_per_s = Some(3.0);
    assert_eq!(first_saturated(&r).map(|p| p.level), Some(2));
    r.saturation_rate_per_s = Some(5.0);
    assert_eq!(first_saturated(&r).map(|p| p.level), Some(3));
    r.saturation_rate_per_s = None;
    r.points[4].saturation_signals.clear();
    assert_eq!(first_saturated(&r).map(|p| p.level), None);
}

/// The onset between levels, by hand: levels at 1-5 req/s completing 1, 2, 2.9, 2.7 and
/// 2.5 req/s. Signals from 4 req/s on: the saturated levels completed 2.7 and 2.5 (median
/// 2.6), below the 2.9 the 3 req/s level sustained (the lesser of 3 offered and 2.9
/// completed), so the onset is 2.9. Signals from 3 on: the median of 2.9, 2.7 and 2.5 is 2.7,
/// above the 2 sustained below and under the 3 offered: 2.7. Every level saturated: nothing
/// sustained below, and the median of all five (2.5) is capped at the first level's 1 req/s.
/// No level saturated: no onset.
#[test]
fn the_saturation_onset_is_the_saturated_levels_completion_rate_within_the_bracket() {
    let achieved = [1.0, 2.0, 2.9, 2.7, 2.5];
    let curve = |from: usize| {
        let mut r = CurveResult {
            points: (0..5)
                .map(|i| {
                    let signals: &[&str] = if i >= from { &["queue growth"] } else { &[] };
                    let mut p = point(i, (i + 1) as f64, signals);
                    p.achieved_requests_per_s = achieved[i];
                    p
                })
                .collect(),
            ..Default::default()
        };
        r.saturation_onset_rate_per_s = crate::procedure::curve::saturation_onset(&r);
        r
    };
    assert_eq!(curve(3).saturation_onset_rate_per_s, Some(2.9));
    assert_eq!(curve(2).saturation_onset_rate_per_s, Some(2.7));
    assert_eq!(curve(0).saturation_onset_rate_per_s, Some(1.0));
    assert_eq!(curve(5).saturation_onset_rate_per_s, None);
}

/// The median counts a run without an answer past every other: two of five missing
/// leave the median on an answer, three do not.
#[test]
fn runs_without_an_answer_count_past_the_others() {
    let run = |value: Option<f64>| ReadingRun {
        seed: 0,
        value,
        truth: Some(1.0),
        test_s: 0.0,
        answer: String::new(),
    };
    let mut c = ReadingCheck {
        reading: Reading::CurveSaturation,
        quick: true,
        runs: vec![
            run(Some(0.95)),
            run(None),
            run(Some(1.1)),
            run(None),
            run(Some(1.0)),
        ],
    };
    assert_eq!(c.median_score(), Some(1.1));
    assert!(c.conforms());
    c.runs[0].value = None;
    assert_eq!(c.median_score(), None);
    assert!(!c.conforms());
}

/// A filter that only delays moves the engine's whole trajectory: on the same arrivals,
/// 160 ms before the queue shifts every end by 160 ms, and 20 ms on every token by 20 ms
/// more; the engine completes the same requests.
#[test]
fn a_delaying_filter_shifts_the_engine_and_changes_nothing_else() {
    let (c, configurations) = guardrail_case();
    let o = options_for(true, None, c.workload.clone(), 3);
    let mut bench = VirtualBench::new(c.sim.clone(), &o).unwrap();
    for (name, sim) in &configurations {
        bench = bench.with_target(name, sim.clone());
    }
    let at = |target: &str| {
        let mut spec = LevelSpec::new(
            "rate 10 req/s",
            Role::Sweep,
            Load::Rate { rate_per_s: 10.0 },
            Duration::from_secs(20),
        );
        spec.target = Some(target.to_owned());
        bench.simulate(&spec).0
    };
    let (base, input, full) = (at("baseline"), at("input"), at("full"));
    let ms = 1_000_000u64;
    assert!(base.len() > 150, "{}", base.len());
    assert_eq!((base.len(), full.len()), (input.len(), input.len()));
    for ((b, i), f) in base.iter().zip(&input).zip(&full) {
        assert!(b.outcome.is_ok() && i.outcome.is_ok() && f.outcome.is_ok());
        assert_eq!(i.sent_at, b.sent_at);
        assert_eq!(i.finished_at, b.finished_at + 160 * ms);
        assert_eq!(f.finished_at, b.finished_at + 180 * ms);
        assert_eq!(f.chunks.len(), b.chunks.len());
        assert_eq!(f.chunks[0].at, b.chunks[0].at + 180 * ms);
    }
}

/// The prefix case's levels as the prefix-cache test runs them, 20 requests at
/// concurrency 4: cache off, nothing cached; cold (emptied), the first request misses
/// and the others find the context it left, 19 × 512 ÷ (20 × 640) = 76 %; warm (new
/// requests), 512 ÷ 640 = 80 %, the truth; a replay of the cold level, 639 ÷ 640.
#[test]
fn the_warm_level_hits_the_shared_prefix_and_a_replay_whole_prompts() {
    let c = prefix_case();
    let o = options_for(true, None, c.workload.clone(), 1);
    let mut bench = VirtualBench::new(c.sim.clone(), &o).unwrap();
    let level = |salt: u64, cache: bool, flush: bool| {
        let mut spec = LevelSpec::new(
            "cache",
            Role::CacheCold,
            Load::Concurrency { concurrency: 4 },
            Duration::ZERO,
        );
        spec.duration = None;
        spec.requests = Some(20);
        spec.workload = Some(WorkloadSpec {
            request_salt: salt,
            ..c.workload.clone()
        });
        spec.prefix_cache = Some(cache);
        spec.flush_cache = flush;
        spec
    };
    let hit = |run: &LevelRun| CacheFigures::of(&run.records).hit_rate().unwrap();
    let off = bench.run_level(&level(0, false, false)).unwrap();
    let cold = bench.run_level(&level(0, true, true)).unwrap();
    let warm = bench
        .run_level(&level(
            crate::procedure::prefix_cache::WARM_SALT,
            true,
            false,
        ))
        .unwrap();
    let replay = bench.run_level(&level(0, true, false)).unwrap();
    assert_eq!(hit(&off), 0.0);
    assert!((hit(&cold) - 0.76).abs() < 1e-9, "{}", hit(&cold));
    assert!((hit(&warm) - 0.8).abs() < 1e-9, "{}", hit(&warm));
    assert!(
        (hit(&replay) - 639.0 / 640.0).abs() < 1e-9,
        "{}",
        hit(&replay)
    );
    assert_eq!(bench.prefix_share_at(2), Some(0.8));
    assert!(cold.note.as_deref().unwrap_or("").contains("cache emptied"));
    // The warm level prefills 128 tokens of 640 (5 + 6.4 ms), the off level all of them
    // (5 + 32 ms).
    let ttft = |run: &LevelRun| run.report.summary.ttft_ms.unwrap().p50;
    assert!(
        ttft(&warm) < 0.5 * ttft(&off),
        "{} {}",
        ttft(&warm),
        ttft(&off)
    );
}

/// Issue 31, item 3: the long-context engines are named by their prefill, and the label,
/// the exponent and R² printed together agree: TTFT = 10 + 0.05·L ms is linear (k = 1),
/// TTFT = 10 + 0.00015·L² ms quadratic (k = 2; the power law fits it as exactly, and the tie
/// names the mechanism).
#[test]
fn the_long_context_engines_are_named_by_their_prefill() {
    for (quadratic, label, k) in [(false, "linear", 1.0), (true, "quadratic", 2.0)] {
        let c = exponent_case(quadratic);
        let (finding, _) = crate::procedure::conformance::run_test(&c, TestName::LongContext, 1)
            .expect("the test runs in virtual time");
        let r = LongContextResult::of(&finding.result).expect("a long-context result");
        assert_eq!(r.best_fit.as_deref(), Some(label), "{r:?}");
        let exponent = r.scaling_exponent.unwrap();
        assert!((exponent - k).abs() < 0.05, "{exponent}");
        assert!(r.r2.unwrap() > 0.999, "{:?}", r.r2);
        assert!(
            finding
                .answer
                .starts_with(&format!("best fit {label} (R² = ")),
            "{}",
            finding.answer
        );
    }
}
