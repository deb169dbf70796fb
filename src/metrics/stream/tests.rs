//! The streamed summary against the exact one, on the same records.

use super::*;
use crate::metrics::slo::SloSpec;
use crate::record::{Chunk, FailureKind, Outcome};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MS: u64 = 1_000_000;

/// An open-loop run of `n` requests: planned every 20 ms, sent up to 5 ms late; TTFT from
/// 30 to 600 ms; 8–64 answer tokens 5–60 ms apart, one chunk in ten carrying 3 tokens;
/// inputs of 100–3,000 tokens; one request in 25 failed (a fifth of them cancelled by the
/// benchmark); one in 10 never sent in time... all drawn from a seeded generator.
fn run(n: u64, seed: u64) -> Vec<RequestRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|id| {
            let planned = 1_000 * MS + id * 20 * MS;
            let sent = planned + rng.random_range(0..5 * MS);
            let mut at = sent + rng.random_range(30 * MS..600 * MS);
            let tokens = rng.random_range(8..64u32);
            let mut chunks = Vec::new();
            let mut given = 0;
            while given < tokens {
                let t = if rng.random_range(0..10) == 0 { 3 } else { 1 };
                chunks.push(Chunk {
                    at,
                    tokens: t,
                    bytes: 4,
                });
                given += t;
                at += rng.random_range(5 * MS..60 * MS);
            }
            let mut r = RequestRecord {
                id,
                phase: Phase::Measure,
                scheduled_at: Some(planned),
                queued_at: planned,
                sent_at: Some(sent),
                first_content: Some(0),
                finished_at: chunks.last().map_or(sent, |c| c.at),
                output_tokens: given,
                max_tokens: 64,
                input_tokens: rng.random_range(100..3_000),
                http_status: Some(200),
                connect_ns: rng.random_range(0..2 * MS),
                chunks,
                ..Default::default()
            };
            if id % 25 == 7 {
                let kind = if id % 125 == 7 {
                    FailureKind::Cancelled
                } else {
                    FailureKind::StreamCut
                };
                r.outcome = Outcome::failed(kind, format!("cut after {} chunks", id % 3));
                r.chunks.truncate(2);
            }
            r
        })
        .collect()
}

fn params() -> SummaryParams {
    SummaryParams {
        slo: Some(SloSpec::parse("ttft_ms<=400,tpot_ms<=40,p99(itl_ms)<=80", 0.9).unwrap()),
        ..SummaryParams::default()
    }
}

fn streamed(records: &[RequestRecord], exact_values: usize) -> RunSummary {
    let mut s = StreamSummary::with_limits(params(), exact_values, 300);
    for r in records {
        s.add(r.clone());
    }
    s.finish()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()) + 1e-9
}

/// Percentiles within twice the sketch's stated error (each of the two order statistics
/// a type-7 percentile interpolates is within it), everything else exact.
fn same_distribution(name: &str, got: Option<Distribution>, want: Option<Distribution>) {
    let (Some(g), Some(w)) = (got, want) else {
        assert_eq!(got.is_some(), want.is_some(), "{name}");
        return;
    };
    assert_eq!((g.n, g.min, g.max), (w.n, w.min, w.max), "{name}");
    assert!(
        close(g.mean, w.mean, 1e-9) && close(g.std, w.std, 1e-6),
        "{name}"
    );
    for (p, a, b) in [
        (50, g.p50, w.p50),
        (90, g.p90, w.p90),
        (95, g.p95, w.p95),
        (99, g.p99, w.p99),
        (999, g.p999, w.p999),
    ] {
        assert!(close(a, b, 2.0 * RELATIVE_ERROR), "{name} p{p}: {a} vs {b}");
    }
}

#[test]
fn the_streamed_summary_is_the_exact_one_within_its_stated_error() {
    let records = run(3_000, 11);
    let exact = summarize(&records, &params());
    // 100 values exactly: every distribution here turns to buckets.
    let s = streamed(&records, 100);
    same_counts(&s, &exact);
    same_distributions(&s, &exact);
    same_steady_state(&s, &exact);
    same_judgements(&s, &exact);
    let note = s.streamed.unwrap();
    assert_eq!((note.requests, note.sample_requests), (3_000, 300));
    assert!(exact.streamed.is_none());
}

/// Counts, totals and rates over the window: exact.
fn same_counts(s: &RunSummary, exact: &RunSummary) {
    assert_eq!(s.requests, exact.requests);
    assert_eq!(s.failures, exact.failures);
    assert_eq!(s.window, exact.window);
    assert_eq!(s.itl_method, exact.itl_method);
    assert_eq!(s.token_counting, exact.token_counting);
    assert_eq!(
        (
            s.total_output_tokens,
            s.total_input_tokens,
            s.total_reasoning_tokens
        ),
        (
            exact.total_output_tokens,
            exact.total_input_tokens,
            exact.total_reasoning_tokens
        )
    );
    assert_eq!(
        (s.output_tokens_per_s, s.requests_per_s, s.success_rate),
        (
            exact.output_tokens_per_s,
            exact.requests_per_s,
            exact.success_rate
        )
    );
}

/// Every distribution within the sketch's stated error.
fn same_distributions(s: &RunSummary, exact: &RunSummary) {
    for (name, a, b) in [
        ("ttft", s.ttft_ms, exact.ttft_ms),
        ("tpot", s.tpot_ms, exact.tpot_ms),
        ("itl", s.itl_ms, exact.itl_ms),
        ("e2e", s.e2e_ms, exact.e2e_ms),
        ("jitter", s.jitter_ms, exact.jitter_ms),
        ("max_pause", s.max_pause_ms, exact.max_pause_ms),
        ("decode", s.decode_tokens_per_s, exact.decode_tokens_per_s),
        ("connect", s.connect_ms, exact.connect_ms),
        (
            "idle",
            s.experience.user_idle_ms,
            exact.experience.user_idle_ms,
        ),
        (
            "ttft_sched",
            s.ttft_from_schedule_ms,
            exact.ttft_from_schedule_ms,
        ),
    ] {
        same_distribution(name, a, b);
    }
}

/// Steady state and balance: within the straddled time bin's share.
fn same_steady_state(s: &RunSummary, exact: &RunSummary) {
    let (a, b) = (s.steady_state, exact.steady_state);
    assert_eq!(a.excluded_s, b.excluded_s);
    assert!(
        close(a.output_tokens_per_s, b.output_tokens_per_s, 0.01),
        "{a:?} {b:?}"
    );
    assert!(
        close(a.requests_per_s, b.requests_per_s, 0.01),
        "{a:?} {b:?}"
    );
    assert!(
        close(a.input_tokens_per_s, b.input_tokens_per_s, 0.01),
        "{a:?} {b:?}"
    );
    let (a, b) = (s.arrival_balance.unwrap(), exact.arrival_balance.unwrap());
    assert!(
        close(a.arrival_rate_per_s, b.arrival_rate_per_s, 0.01),
        "{a:?} {b:?}"
    );
    assert!(close(
        a.completion_rate_per_s,
        b.completion_rate_per_s,
        0.01
    ));
}

/// SLO counts, deadline attainment and smooth goodput: exact; TTFT by input length within
/// the stated error.
fn same_judgements(s: &RunSummary, exact: &RunSummary) {
    let (a, b) = (s.slo.as_ref().unwrap(), exact.slo.as_ref().unwrap());
    assert_eq!(a.per_request, b.per_request);
    assert_eq!(a.run_checks.len(), b.run_checks.len());
    assert_eq!(
        s.experience.deadline_attainment,
        exact.experience.deadline_attainment
    );
    let (a, b) = (
        s.experience.smooth_goodput.as_ref().unwrap(),
        exact.experience.smooth_goodput.as_ref().unwrap(),
    );
    assert_eq!(a.window, b.window);
    assert!(
        close(a.value, b.value, 1e-9)
            && close(a.throughput_tokens_per_s, b.throughput_tokens_per_s, 1e-12)
    );
    assert_eq!(
        s.ttft_by_input_tokens.len(),
        exact.ttft_by_input_tokens.len()
    );
    for (a, b) in s
        .ttft_by_input_tokens
        .iter()
        .zip(&exact.ttft_by_input_tokens)
    {
        assert_eq!((&a.label, a.n), (&b.label, b.n));
        assert!(close(a.p99_ms, b.p99_ms, 2.0 * RELATIVE_ERROR));
    }
}

/// While every distribution fits its exact part, the streamed figures are the exact ones.
#[test]
fn a_streamed_summary_that_fits_is_exact() {
    let records = run(200, 3);
    let exact = summarize(&records, &params());
    let s = streamed(&records, usize::MAX);
    assert_eq!(s.ttft_ms, exact.ttft_ms);
    assert_eq!(s.itl_ms, exact.itl_ms);
    assert_eq!(s.tpot_ms, exact.tpot_ms);
    assert_eq!(s.slo, exact.slo);
}

/// Memory does not follow the number of requests: the sample is capped and the sketches
/// hold buckets, not values.
#[test]
fn other_phases_are_ignored_and_the_sample_is_capped() {
    let mut records = run(1_000, 5);
    for r in records.iter_mut().take(100) {
        r.phase = Phase::Warmup;
    }
    let s = streamed(&records, 100);
    assert_eq!(s.requests.total, 900);
    assert_eq!(s.streamed.unwrap().sample_requests, 300);
}

/// A burst (every request sent at once: a closed loop as wide as its request count) has no
/// steady span: the streamed summary counts the window after its first 10 %, as the exact
/// one does, rather than rates over the sliver between the first and last send.
#[test]
fn a_burst_streams_the_window_basis_as_the_exact_summary_does() {
    let records: Vec<RequestRecord> = (0..400u64)
        .map(|id| {
            let sent = id * 10_000; // 10 µs apart: 4 ms in all
            let tokens: Vec<u64> = (1..=20).map(|k| (sent + k * 50 * MS) / MS).collect();
            RequestRecord::completed_for_tests(id, sent / MS, &tokens, 100)
        })
        .collect();
    let exact = summarize(&records, &params());
    let s = streamed(&records, 64);
    assert_eq!(
        exact.steady_state.basis,
        crate::metrics::summary::SteadyBasis::Window
    );
    assert_eq!(s.steady_state.basis, exact.steady_state.basis);
    assert!(
        close(
            s.steady_state.output_tokens_per_s,
            exact.steady_state.output_tokens_per_s,
            0.02
        ),
        "{:?} {:?}",
        s.steady_state,
        exact.steady_state
    );
}
