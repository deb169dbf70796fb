//! Tests of the run summary: hand-computed runs, the window, steady state and arrival
//! balance, the ITL choice, reasoning tokens, smooth goodput and the start-up transient.

use super::*;
use crate::metrics::request::ItlOption;
use crate::record::{Chunk, FailureKind, Outcome};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn ok(id: u64, sent_ms: u64, token_ms: &[u64]) -> RequestRecord {
    RequestRecord::completed_for_tests(id, sent_ms, token_ms, 100)
}

fn summarize_plain(records: &[RequestRecord]) -> RunSummary {
    summarize(records, &SummaryParams::default())
}

/// The steady input rate counts a prompt when its prefill ends after the cut: the one
/// whose first token came before it is left out, like its tokens are from the output.
#[test]
fn steady_input_rate_counts_prefills_after_the_cut() {
    // Window 0–2,000 ms, cut at 200 ms. First tokens at 150 (before), 600 and 1,500 ms.
    let a = ok(0, 0, &[150, 400]);
    let b = ok(1, 300, &[600, 900]);
    let c = ok(2, 1_000, &[1_500, 2_000]);
    let s = summarize_plain(&[a, b, c]);
    assert_eq!(s.window.duration_s, 2.0);
    assert_eq!(s.steady_state.excluded_s, 0.2);
    assert!((s.steady_state.input_tokens_per_s - 200.0 / 1.8).abs() < 1e-9);
    // Output over the same span: every token at or after 200 ms, 5 of them.
    assert!((s.steady_state.output_tokens_per_s - 5.0 / 1.8).abs() < 1e-9);
}

/// Issue 23: every stream started at once on an idle server, TTFT 690 ms in the first
/// second and 35 ms after, and the run's P99 TTFT was that burst. It is flagged; the
/// same run without the burst is not.
#[test]
fn a_start_up_burst_is_flagged_as_a_transient() {
    // One request every 100 ms for 20 s; the first 10 wait 690 ms for their first token.
    let run = |burst: bool| -> Vec<RequestRecord> {
        (0..200u64)
            .map(|i| {
                let sent = i * 100;
                let ttft = if burst && i < 10 { 690 } else { 35 };
                ok(i, sent, &[sent + ttft, sent + ttft + 10])
            })
            .collect()
    };
    let s = summarize_plain(&run(true));
    let w = s
        .warnings
        .iter()
        .find(|w| w.kind() == "startup_transient")
        .expect("the burst is flagged");
    let Warning::StartupTransient {
        early_s,
        early_p99_ms,
        rest_p99_ms,
        ..
    } = w
    else {
        unreachable!()
    };
    // The first 10 % of the 19.945-s window, 20 requests of which 10 in the burst.
    assert!((early_s - 1.9945).abs() < 1e-9, "{early_s}");
    assert_eq!((*early_p99_ms, *rest_p99_ms), (690.0, 35.0));
    assert!(w.to_string().contains("the run's P99 TTFT"), "{w}");
    let steady = summarize_plain(&run(false));
    assert!(steady
        .warnings
        .iter()
        .all(|w| w.kind() != "startup_transient"));
}

#[test]
fn hand_computed_run() {
    // Two requests over a 1 s window; one failure; one warm-up request ignored.
    let a = ok(0, 0, &[100, 120, 140, 160, 180]);
    let b = ok(1, 500, &[700, 750, 800, 850, 1000]);
    let mut failed = ok(2, 200, &[400]);
    failed.outcome = Outcome::failed(FailureKind::StreamCut, "cut");
    failed.finished_at = 450 * MS;
    let mut warm = ok(3, 0, &[5000]);
    warm.phase = Phase::Warmup;
    let s = summarize_plain(&[a, b, failed, warm]);
    assert_eq!(
        (s.requests.total, s.requests.completed, s.requests.failed),
        (3, 2, 1)
    );
    assert_eq!(s.requests.failed_by_kind["stream_cut"], 1);
    assert_eq!(s.failures.by_kind[&FailureKind::StreamCut], 1);
    assert_eq!(s.window.duration_s, 1.0);
    assert_eq!(s.total_output_tokens, 11); // 5 + 5 + 1 delivered before the cut
    assert_eq!(s.output_tokens_per_s, 11.0);
    assert_eq!(s.requests_per_s, 2.0);
    assert_eq!(s.total_input_tokens, 300);
    let ttft = s.ttft_ms.unwrap();
    assert_eq!(
        (ttft.n, ttft.min, ttft.max, ttft.mean),
        (2, 100.0, 200.0, 150.0)
    );
    let tpot = s.tpot_ms.unwrap();
    assert_eq!((tpot.min, tpot.max), (20.0, 75.0));
    let itl = s.itl_ms.unwrap();
    assert_eq!(itl.n, 8);
    assert_eq!(itl.max, 150.0);
    assert_eq!(s.max_pause_ms.unwrap().max, 150.0);
    assert_eq!(s.itl_method.option, ItlOption::B);
    // Steady state keeps what arrived from 100 ms on (a token at 100 ms included): 11 over 0.9 s.
    assert!((s.steady_state.output_tokens_per_s - 11.0 / 0.9).abs() < 1e-9);
    // Prompts whose first token came at 100, 400 and 700 ms: 300 tokens over 0.9 s.
    assert!((s.steady_state.input_tokens_per_s - 300.0 / 0.9).abs() < 1e-9);
    assert!(s.warnings.iter().any(|w| matches!(
        w,
        Warning::FewSamples {
            metric: "TTFT",
            samples: 2,
            ..
        }
    )));
    assert!(s.ttft_by_input_tokens.is_empty());
}

/// A request that could not connect never got a `sent_at`; its attempt time still places
/// it in the window. Before, the window started at the clock's origin: a connect failure
/// at 60 s cut a 100 tok/s run to 37.5 tok/s.
#[test]
fn a_connect_failure_does_not_stretch_the_window() {
    let records: Vec<RequestRecord> = (0..10)
        .map(|i| {
            let start = 60_000 + i * 100;
            ok(
                i,
                start,
                &(1..=10).map(|k| start + k * 10).collect::<Vec<_>>(),
            )
        })
        .chain(std::iter::once(RequestRecord {
            id: 10,
            queued_at: 60_500 * MS,
            finished_at: 60_501 * MS,
            outcome: Outcome::failed(FailureKind::Connect, "connection refused"),
            max_tokens: 10,
            ..Default::default()
        }))
        .collect();
    let s = summarize_plain(&records);
    // 100 tokens from 60.0 s to 61.0 s.
    assert_eq!(s.window.duration_s, 1.0);
    assert_eq!(s.output_tokens_per_s, 100.0);
    assert_eq!(s.requests.never_sent, 1);
}

#[test]
fn option_a_is_chosen_by_the_share_of_tokens_not_of_chunks() {
    // Nine single-token chunks and one 8-token chunk: 90 % of chunks carry one token,
    // but only 9 of 17 tokens (53 %) arrived alone.
    let mut a = ok(0, 0, &[100, 110, 120, 130, 140, 150, 160, 170, 180, 190]);
    a.chunks[9].tokens = 8;
    a.output_tokens = 17;
    a.max_tokens = 17;
    let s = summarize_plain(&[a]);
    assert_eq!(s.itl_method.option, ItlOption::A);
    assert!((s.itl_method.single_token_share - 9.0 / 17.0).abs() < 1e-12);
    assert_eq!(s.itl_method.title(), "Time Between Chunks");
}

#[test]
fn reasoning_tokens_count_as_output_and_the_answer_is_reported_beside() {
    let mut a = ok(0, 0, &[500, 600, 700, 800]);
    a.reasoning_chunks = (1..=4)
        .map(|k| Chunk {
            at: k * 100 * MS,
            tokens: 3,
            bytes: 9,
        })
        .collect();
    a.reasoning_tokens = 12;
    a.output_tokens = 16;
    a.max_tokens = 16;
    let s = summarize_plain(&[a]);
    // 16 tokens over the 0.8 s window; 4 of them answer.
    assert_eq!(s.output_tokens_per_s, 20.0);
    assert_eq!(s.answer_tokens_per_s, 5.0);
    assert_eq!(s.total_reasoning_tokens, 12);
    assert_eq!(s.requests.ended_early, 0, "reasoning is not ending early");
    assert_eq!(s.requests.with_reasoning, 1);
    assert_eq!(s.time_to_first_reasoning_ms.unwrap().p50, 100.0);
    assert_eq!(s.ttft_ms.unwrap().p50, 500.0);
}

/// An open-loop run of `n` requests planned 200 ms apart, each answering 8 tokens 50 ms
/// apart after `ttft_ms[i]`.
fn open_loop(ttft_ms: &[u64]) -> Vec<RequestRecord> {
    ttft_ms
        .iter()
        .enumerate()
        .map(|(i, &ttft)| {
            let start = i as u64 * 200;
            let mut r = ok(
                i as u64,
                start,
                &(0..8).map(|k| start + ttft + k * 50).collect::<Vec<_>>(),
            );
            r.scheduled_at = Some(start * MS);
            r
        })
        .collect()
}

/// Turns request `i` into one that ended after `kept` tokens: rejected (429) when 0,
/// else a stream cut.
fn abandon(records: &mut [RequestRecord], i: usize, kept: usize) {
    let r = &mut records[i];
    r.chunks.truncate(kept);
    if kept == 0 {
        r.first_content = None;
        r.http_status = Some(429);
    }
    r.finished_at = r.chunks.last().map_or(r.queued_at + MS, |c| c.at + MS);
    r.outcome = Outcome::failed(FailureKind::HttpStatus, "HTTP 429");
    r.output_tokens = kept as u32;
}

#[test]
fn rejecting_the_slowest_request_no_longer_raises_smooth_goodput() {
    // The last request is very slow (TTFT 20 s). Rejecting it with a 429 shortened the
    // old window (last byte) from ~22 s to ~1 s and raised smooth goodput many times.
    let mut ttfts = vec![100; 6];
    ttfts.push(20_000);
    let full = open_loop(&ttfts);
    let mut rejected = full.clone();
    abandon(&mut rejected, 6, 0);
    let g = |recs: &[RequestRecord]| {
        let s = summarize_plain(recs);
        let sg = s.experience.smooth_goodput.unwrap();
        assert!(sg.window.outcome_independent);
        (sg.value, sg.window.duration_s)
    };
    let (full_g, full_t) = g(&full);
    let (rej_g, rej_t) = g(&rejected);
    assert_eq!(full_t, rej_t, "T does not depend on outcomes");
    assert!(rej_g <= full_g, "{rej_g} > {full_g}");
}

proptest! {
    /// Dropping or abandoning any request of an open-loop run, after any number of its
    /// tokens, never raises smooth goodput, whatever the run's timings. T is whatever
    /// the summary computes (it is not held fixed by the test).
    #[test]
    fn abandoning_any_request_never_raises_smooth_goodput(
        ttfts in proptest::collection::vec(10u64..30_000, 2..12),
        which in 0usize..12,
        kept in 0usize..9,
        alpha in 0.0f64..20.0,
    ) {
        let params = SummaryParams {
            ux: UxParams { alpha, ..UxParams::default() },
            ..SummaryParams::default()
        };
        let full = open_loop(&ttfts);
        let which = which % full.len();
        let mut dropped = full.clone();
        abandon(&mut dropped, which, kept.min(8));
        let g_full = summarize(&full, &params).experience.smooth_goodput.unwrap().value;
        let g_drop = summarize(&dropped, &params).experience.smooth_goodput.unwrap().value;
        prop_assert!(g_drop <= g_full + 1e-9, "{g_drop} > {g_full}");
    }
}

#[test]
fn open_loop_completions_below_90_percent_of_arrivals_is_saturation() {
    // 100 arrivals 100 ms apart over 9.9 s; the server finishes one every 200 ms.
    let records: Vec<RequestRecord> = (0..100)
        .map(|i| {
            let planned = i * 100;
            let done = 200 + i * 200;
            let mut r = ok(i, planned, &[done - 10, done]);
            r.scheduled_at = Some(planned * MS);
            r
        })
        .collect();
    let s = summarize_plain(&records);
    let b = s.arrival_balance.unwrap();
    assert!(b.saturated, "{b:?}");
    assert!(b.completion_share.unwrap() < 0.6);
    assert!(s
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::ServerSaturated { .. })));
}

/// Issue 31, item 2: the steady rates count the load's own span, not the drain after the
/// last arrival. 100 requests, one every 100 ms (0-9.9 s), each answering 10 tokens at
/// 100, 200, …, 1,000 ms after it was sent: the server delivers 100 tok/s and completes
/// 10 req/s while the load lasts. The steady span skips max(10 % of 9.9 s, the first
/// requests' P90 duration of 1 s) = 1 s and ends at the last arrival, 9.9 s. Counted to
/// the last byte (10.9 s) instead, as before, the falling second after sending stopped
/// pulled both rates down by about 5 %.
#[test]
fn steady_rates_stop_at_the_last_arrival() {
    let records: Vec<RequestRecord> = (0..100u64)
        .map(|i| {
            let sent = i * 100;
            let tokens: Vec<u64> = (1..=10).map(|k| sent + k * 100).collect();
            ok(i, sent, &tokens)
        })
        .collect();
    let s = summarize_plain(&records);
    let st = s.steady_state;
    assert_eq!(st.basis, SteadyBasis::Arrivals);
    assert!((st.excluded_s - 1.0).abs() < 1e-9, "{}", st.excluded_s);
    assert!((st.span_s - 8.9).abs() < 1e-9, "{}", st.span_s);
    // Tokens at 1.0-9.9 s inclusive: every 100 ms tick from 1.0 to 9.9 s carries 10 tokens
    // (one from each of the 10 requests in flight), 90 ticks.
    assert!(
        (st.output_tokens_per_s - 900.0 / 8.9).abs() < 1e-9,
        "{}",
        st.output_tokens_per_s
    );
    assert!((st.output_tokens_per_s / 100.0 - 1.0).abs() < 0.02);
    // Completions at 1.0-9.9 s: requests 0-89 (each done 1 s after it was sent).
    assert!(
        (st.requests_per_s - 90.0 / 8.9).abs() < 1e-9,
        "{}",
        st.requests_per_s
    );
}

/// A run too short for a steady span (fewer than 20 requests) counts from the window's
/// 10 % cut to its last byte, and says so.
#[test]
fn a_short_run_counts_the_window_after_its_cut() {
    let s = summarize_plain(&[ok(0, 0, &[150, 400]), ok(1, 300, &[600, 900])]);
    assert_eq!(s.steady_state.basis, SteadyBasis::Window);
    assert!((s.steady_state.span_s - 0.81).abs() < 1e-9);
}

/// The replay warning reads replays, not chat templates: every request sharing its first 16
/// tokens (a template's, cached by every engine) is 12.5 % of 128-token prompts but no
/// replay; prompts cached whole are. A workload that shares prefixes on purpose never warns.
#[test]
fn a_replay_is_warned_about_a_template_prefix_is_not() {
    let with_cached = |cached: u64| -> Vec<RequestRecord> {
        (0..40u64)
            .map(|i| {
                let mut r = ok(i, i * 100, &[i * 100 + 20, i * 100 + 40]);
                r.usage = Some(serde_json::json!({
                    "prompt_tokens": 128,
                    "completion_tokens": 2,
                    "prompt_tokens_details": {"cached_tokens": cached}
                }));
                r
            })
            .collect()
    };
    let warned = |s: &RunSummary| s.warnings.iter().any(|w| w.kind() == "prompts_from_cache");
    let template = summarize_plain(&with_cached(16));
    let c = template.prompt_cache.as_ref().unwrap();
    assert_eq!(
        (c.requests_reporting, c.prompt_tokens, c.cached_tokens),
        (40, 5120, 640)
    );
    assert_eq!(c.mostly_cached_requests, 0);
    assert!(!warned(&template));
    let replay = summarize_plain(&with_cached(127));
    assert_eq!(
        replay.prompt_cache.as_ref().unwrap().mostly_cached_requests,
        40
    );
    assert!(warned(&replay));
    let by_design = summarize(
        &with_cached(127),
        &SummaryParams {
            expects_cached_prompts: true,
            ..SummaryParams::default()
        },
    );
    assert!(!warned(&by_design));
}
