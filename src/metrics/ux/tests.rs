//! Deadlines, patience and smooth goodput on hand-computed runs.

use super::*;
use crate::record::Outcome;
use proptest::prelude::*;

const MS: u64 = 1_000_000;

/// A reader at 4 tokens/s who accepts 100 ms before the first token (the D0 form).
const READER: DeadlineScheme = DeadlineScheme::Reading {
    d0_ms: Some(100.0),
    rate_per_s: 4.0,
};

#[test]
fn reading_deadlines_default_to_the_papers_equation_4() {
    // d_k = V·k with V = 1/R = 50 ms at 20 tokens/s: token 1 is due at 50 ms, token 20
    // at 1,000 ms. (Before, the default was D0 = 1 s: token 1 due at 1,000 ms.)
    let paper = UxParams::default().scheme;
    assert_eq!(paper.deadline(1, None), 50.0);
    assert_eq!(paper.deadline(20, None), 1000.0);
    assert_eq!(paper.to_string(), "reading (20 tokens/s, d_k = k/R)");
    // --d0-ms 1000 keeps the reader who accepts D0 first: d_k = 1000 + (k − 1)·50.
    let d0 = DeadlineScheme::Reading {
        d0_ms: Some(1000.0),
        rate_per_s: 20.0,
    };
    assert_eq!(d0.deadline(1, None), 1000.0);
    assert_eq!(d0.deadline(3, None), 1100.0);
    assert_eq!(d0.to_string(), "reading (D0 1000 ms, 20 tokens/s)");
}

#[test]
fn seed_003_ten_tokens_then_a_stall_versus_two() {
    // 10 tokens in the first second, then a 1 s stall: a 4 tokens/s reader never waits.
    let mut a: Vec<f64> = (1..=10).map(|k| k as f64 * 100.0).collect();
    a.push(2000.0);
    let oa = evaluate_times(&a, &READER, None);
    assert_eq!(oa.user_idle_ms, 0.0);
    assert_eq!(oa.deadline_misses, 0);
    // 2 tokens, then a 1 s stall: the reader is left waiting.
    let b = vec![100.0, 200.0, 1200.0];
    let ob = evaluate_times(&b, &READER, None);
    // Token 3 is due at 100 + 2 / 4 s = 600 ms and arrives at 1200 ms: 600 ms idle.
    assert_eq!(ob.user_idle_ms, 600.0);
    assert_eq!(ob.deadline_misses, 1);
    // TPOT says the opposite: b's mean gap is smaller than a's largest.
    assert!(ob.user_idle_ms > oa.user_idle_ms);
}

#[test]
fn ttft_tbt_and_e2e_schemes() {
    let s = DeadlineScheme::TtftTbt {
        ttft_ms: 100.0,
        tbt_ms: 50.0,
    };
    let o = evaluate_times(&[90.0, 130.0, 250.0], &s, None);
    assert_eq!((o.deadline_misses, o.user_idle_ms), (1, 70.0));
    let e = DeadlineScheme::E2e { e2e_ms: 200.0 };
    let o = evaluate_times(&[90.0, 130.0, 250.0], &e, None);
    assert_eq!((o.deadline_misses, o.user_idle_ms), (1, 50.0));
}

/// Request `i` of an open-loop run planned every second: 4 answer tokens 100, 150, 200
/// and 250 ms after its send.
fn planned(i: u64) -> RequestRecord {
    let at = i * 1000;
    let mut r =
        RequestRecord::completed_for_tests(i, at, &[at + 100, at + 150, at + 200, at + 250], 10);
    r.scheduled_at = Some(at * MS);
    r
}

/// Request `r` cut after its second token (a stream cut 10 ms later).
fn cut_after_two(mut r: RequestRecord) -> RequestRecord {
    r.chunks.truncate(2);
    r.output_tokens = 2;
    r.finished_at = r.chunks[1].at + 10 * MS;
    r.outcome = Outcome::failed(FailureKind::StreamCut, "cut");
    r
}

fn smooth_goodput_of(records: &[RequestRecord]) -> SmoothGoodput {
    let refs: Vec<&RequestRecord> = records.iter().collect();
    let params = UxParams::default();
    let window = UxWindow::of(&refs).unwrap();
    let outcomes: Vec<DeadlineOutcome> = refs.iter().map(|r| judge(r, &params)).collect();
    smooth_goodput(&outcomes, &params, &window)
}

#[test]
fn the_same_pattern_over_10_s_and_40_s_gives_the_same_smooth_goodput() {
    // Deadlines d_k = 50·k ms (20 tokens/s); tokens at 100, 150, 200, 250 ms are each
    // 50 ms late: l = 0.05 s, benefit 4 − 5 × 0.05 = 3.75 tokens per request.
    // 10 requests planned 0..9 s: T = 9 s × 10/9 = 10 s, 37.5 / 10 = 3.75 tok/s.
    // 40 requests planned 0..39 s: T = 39 s × 40/39 = 40 s, 150 / 40 = 3.75 tok/s.
    // (Before, T ran to when the last answer was due in full: 9 + 1.15 s and
    // 39 + 1.15 s, 3.94 against 3.99 tok/s.)
    let short: Vec<RequestRecord> = (0..10).map(planned).collect();
    let long: Vec<RequestRecord> = (0..40).map(planned).collect();
    let (a, b) = (smooth_goodput_of(&short), smooth_goodput_of(&long));
    assert_eq!((a.window.duration_s, b.window.duration_s), (10.0, 40.0));
    assert!(a.window.outcome_independent && b.window.outcome_independent);
    assert!((a.value - 3.75).abs() < 1e-9, "{}", a.value);
    assert!((b.value - 3.75).abs() < 1e-9, "{}", b.value);
    assert!((a.throughput_tokens_per_s - 4.0).abs() < 1e-12);
    assert_eq!(a.d0_ms, None);
    assert_eq!(a.patience_s, 30.0);
}

#[test]
fn a_failures_charge_does_not_depend_on_when_in_the_run_it_happens() {
    // One of the 10 requests is cut after 2 tokens: its user is charged the patience,
    // 30 s, for the third: benefit 2 − 5 × 30 = −148. Σ = 9 × 3.75 − 148 = −114.25 over
    // T = 10 s: −11.425 tok/s, whether the first or the last request failed. (Before,
    // the first one was charged until the run's window ended, 9.05 s, the last 0.05 s.)
    for failed in [0usize, 9] {
        let mut records: Vec<RequestRecord> = (0..10).map(planned).collect();
        records[failed] = cut_after_two(records[failed].clone());
        let o = judge(&records[failed], &UxParams::default());
        assert_eq!((o.delivered_tokens, o.user_idle_ms), (2, 30_000.0));
        let sg = smooth_goodput_of(&records);
        assert_eq!(sg.window.duration_s, 10.0, "T does not move");
        assert!((sg.value + 11.425).abs() < 1e-9, "{failed}: {}", sg.value);
    }
}

#[test]
fn a_user_gives_up_after_the_patience() {
    let p = UxParams::default();
    // First token 40 s after sending, due at 50 ms: 39.95 s late, past the 30 s
    // patience. Its user gave up at 30.05 s: nothing read, 30 s idle, benefit −150,
    // exactly what a request rejected at once is charged.
    let late = judge_times(&[40_000.0, 40_050.0], &p, Ending::Complete);
    let rejected = judge_times(&[], &p, Ending::Failed);
    assert_eq!((late.delivered_tokens, late.user_idle_ms), (0, 30_000.0));
    assert_eq!(late, rejected);
    // 20 s late stays within the patience: both tokens read, 19.95 s idle.
    let slow = judge_times(&[20_000.0, 20_050.0], &p, Ending::Complete);
    assert_eq!(slow.delivered_tokens, 2);
    assert!((slow.user_idle_ms - 19_950.0).abs() < 1e-9);
    // Cancelled by the benchmark 1 s after sending, one token read at 40 ms: charged
    // until the cancellation, 1,000 − 100 = 900 ms for the second token (due 100 ms).
    let stopped = judge_times(&[40.0], &p, Ending::CancelledAt(1000.0));
    assert_eq!((stopped.delivered_tokens, stopped.user_idle_ms), (1, 900.0));
}

#[test]
fn closed_loop_runs_to_the_end_of_the_last_request() {
    // Sends at 0 and 500 ms (no plan), the second ending at 1,250 ms: T = 1.25 s.
    let a = RequestRecord::completed_for_tests(0, 0, &[100, 600], 10);
    let b = RequestRecord::completed_for_tests(1, 500, &[700, 1250], 10);
    let w = UxWindow::of(&[&a, &b]).unwrap();
    assert_eq!(w.duration_s, 1.25);
    assert!(!w.outcome_independent);
}

#[test]
fn output_delay_trick_lowers_tail_tbt_but_not_idle_latency() {
    // Bursty delivery: 5 tokens at once, a pause, 5 more at once.
    let raw: Vec<f64> = vec![
        300.0, 300.0, 300.0, 300.0, 300.0, 900.0, 900.0, 900.0, 900.0, 900.0,
    ];
    // The trick: hold tokens and release them at a steady pace of 150 ms.
    let mut smoothed = Vec::new();
    let mut last = f64::MIN;
    for &t in &raw {
        let r = t.max(last + 150.0);
        smoothed.push(r);
        last = r;
    }
    let max_gap = |v: &[f64]| v.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    assert!(
        max_gap(&smoothed) < max_gap(&raw),
        "the trick lowers tail TBT"
    );
    let reader = DeadlineScheme::Reading {
        d0_ms: Some(200.0),
        rate_per_s: 20.0,
    };
    let before = evaluate_times(&raw, &reader, None).user_idle_ms;
    let after = evaluate_times(&smoothed, &reader, None).user_idle_ms;
    assert!(
        after >= before,
        "idle latency is not lowered: {before} -> {after}"
    );
    // Under TTFT+TBT deadlines the trick does game the metric: fewer misses.
    let tbt = DeadlineScheme::TtftTbt {
        ttft_ms: 400.0,
        tbt_ms: 150.0,
    };
    assert!(
        evaluate_times(&smoothed, &tbt, None).deadline_misses
            < evaluate_times(&raw, &tbt, None).deadline_misses
    );
}

fn times_strategy() -> impl Strategy<Value = Vec<f64>> {
    proptest::collection::vec(0.0f64..500.0, 1..60).prop_map(|gaps| {
        let mut t = 0.0;
        gaps.into_iter()
            .map(|g| {
                t += g;
                t
            })
            .collect()
    })
}

proptest! {
    /// Abandoning a request (it stops delivering and fails) never raises smooth goodput,
    /// under every deadline scheme and patience: the abandoned request reads a prefix of
    /// the tokens and is charged the whole patience, the most any request can be.
    #[test]
    fn abandoning_never_increases_smooth_goodput(times in times_strategy(), cut in 0usize..60, alpha in 0.0f64..20.0, patience_s in 0.0f64..40.0) {
        let window = UxWindow { start: 0, end: 1_000_000_000, duration_s: 1.0, outcome_independent: true };
        let cut = cut.min(times.len());
        let schemes = [
            UxParams::default().scheme,
            READER,
            DeadlineScheme::TtftTbt { ttft_ms: 200.0, tbt_ms: 50.0 },
            DeadlineScheme::E2e { e2e_ms: 1000.0 },
        ];
        for scheme in schemes {
            for cost in [IdleCost::Linear, IdleCost::Quadratic, IdleCost::Log1p] {
                let p = UxParams { scheme, alpha, idle_cost: cost, patience_s };
                let full = judge_times(&times, &p, Ending::Complete);
                let abandoned = judge_times(&times[..cut], &p, Ending::Failed);
                let g_full = smooth_goodput(&[full], &p, &window).value;
                let g_cut = smooth_goodput(&[abandoned], &p, &window).value;
                prop_assert!(g_cut <= g_full + 1e-9, "{scheme}: {g_cut} > {g_full}");
            }
        }
    }

    /// Delaying a token never lowers a request's idle latency (reading and e2e deadlines).
    #[test]
    fn delaying_a_token_never_decreases_idle_latency(times in times_strategy(), which in 0usize..60, delay in 0.0f64..2000.0) {
        let which = which % times.len();
        let mut delayed = times.clone();
        for t in delayed.iter_mut().skip(which) {
            *t = t.max(times[which] + delay);
        }
        for scheme in [READER, DeadlineScheme::E2e { e2e_ms: 1000.0 }, UxParams::default().scheme] {
            let a = evaluate_times(&times, &scheme, None).user_idle_ms;
            let b = evaluate_times(&delayed, &scheme, None).user_idle_ms;
            prop_assert!(b >= a - 1e-9, "{scheme}: {a} -> {b}");
        }
    }
}
