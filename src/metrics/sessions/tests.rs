//! Session figures on hand-built records whose times are whole milliseconds.

use super::*;
use crate::record::{Chunk, FailureKind, Outcome};

const MS: u64 = 1_000_000;

/// A measured, successful request of `session` step `step`: sent at `sent` ms, first
/// token `ttft` ms later, ended at `end` ms.
fn rec(session: u64, step: u32, sent: u64, ttft: u64, end: u64) -> RequestRecord {
    RequestRecord {
        phase: Phase::Measure,
        session: Some((session, step)),
        sent_at: Some(sent * MS),
        queued_at: sent * MS,
        chunks: vec![Chunk {
            at: (sent + ttft) * MS,
            tokens: 1,
            bytes: 1,
        }],
        first_content: Some(0),
        finished_at: end * MS,
        input_tokens: 100 * (step + 1),
        ..Default::default()
    }
}

#[test]
fn an_agent_session_by_hand() {
    // Step 0: 0 → 100 ms. Tool 50 ms. Step 1: a fan-out of two branches, 150 → 300 and
    // 160 → 250 (the second one's late start is inside the first one's flight). Tool 20 +
    // think 30 ms. Step 2: 350 → 400.
    let mut s1 = rec(1, 1, 150, 40, 300);
    s1.planned_tool_ms = 50.0;
    let mut s1b = rec(1, 1, 160, 20, 250);
    s1b.branch = 1;
    s1b.planned_tool_ms = 50.0;
    let mut s2 = rec(1, 2, 350, 10, 400);
    s2.planned_tool_ms = 20.0;
    s2.planned_think_ms = 30.0;
    s2.tool_calls = 0;
    let mut s0 = rec(1, 0, 0, 30, 100);
    s0.tool_calls = 1;
    s0.usage = Some(
        serde_json::json!({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 0}}),
    );
    s2.usage = Some(
        serde_json::json!({"prompt_tokens": 300, "prompt_tokens_details": {"cached_tokens": 240}}),
    );
    let t = SessionTally::of(&[s0, s1, s1b, s2]);
    let s = t.finish().unwrap();
    assert_eq!((s.sessions, s.sessions_ok), (1, 1));
    assert_eq!((s.requests_per_session, s.steps_per_session), (4.0, 3.0));
    assert_eq!((s.fan_out_steps, s.max_branches), (1, 2));
    let p50 = |d: &Option<Distribution>| d.as_ref().unwrap().p50;
    assert_eq!(p50(&s.wall_ms), 400.0);
    // In flight: 0-100, 150-300 (the branches overlap), 350-400 = 300 ms.
    assert_eq!(p50(&s.model_ms), 300.0);
    assert_eq!(p50(&s.tool_ms), 70.0);
    assert_eq!(p50(&s.think_ms), 30.0);
    assert_eq!(s.model_share, Some(0.75));
    assert!((s.other_share.unwrap() - 0.0).abs() < 1e-12, "{s:?}");
    // TTFT by step: 30; 40 and 20; 10.
    let rows: Vec<(u32, u64, f64, f64)> = s
        .ttft_by_step
        .iter()
        .map(|r| {
            (
                r.step,
                r.requests,
                r.mean_input_tokens,
                r.ttft_ms.as_ref().unwrap().mean,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (0, 1, 100.0, 30.0),
            (1, 2, 200.0, 30.0),
            (2, 1, 300.0, 10.0)
        ]
    );
    assert_eq!(s.tool_calls_answered, 1);
    assert_eq!(
        (s.prompt_tokens_reporting, s.cached_prompt_tokens),
        (400, 240)
    );
    assert_eq!(s.cached_share, Some(0.6));
}

#[test]
fn failed_sessions_count_but_have_no_times_and_other_phases_are_skipped() {
    let mut bad = rec(2, 1, 200, 10, 260);
    bad.outcome = Outcome::Failed {
        kind: FailureKind::HttpStatus,
        detail: "500".into(),
    };
    let mut warm = rec(9, 0, 0, 1, 2);
    warm.phase = Phase::Warmup;
    let plain = RequestRecord {
        phase: Phase::Measure,
        ..Default::default()
    };
    // Session 4 plans 3 steps; the run ended after its first.
    let mut cut = rec(4, 0, 0, 5, 30);
    cut.session_steps = 3;
    let mut whole = rec(3, 0, 0, 5, 50);
    whole.session_steps = 1;
    let t = SessionTally::of(&[rec(2, 0, 0, 10, 100), bad, whole, warm, plain, cut]);
    let s = t.finish().unwrap();
    assert_eq!((s.sessions, s.sessions_ok, s.sessions_cut), (3, 1, 1));
    assert_eq!(s.wall_ms.as_ref().unwrap().n, 1);
    assert_eq!(s.wall_ms.as_ref().unwrap().p50, 50.0);
    // The failed request has no TTFT row entry; its step's row is absent entirely.
    assert_eq!(s.ttft_by_step.len(), 1);
    assert_eq!(s.ttft_by_step[0].requests, 3);
    assert_eq!(s.cached_share, None, "no answer said what was cached");
    assert!(SessionTally::of(&[RequestRecord::default()])
        .finish()
        .is_none());
}

#[test]
fn late_steps_share_the_last_row() {
    let recs: Vec<RequestRecord> = (0..20)
        .map(|k| {
            rec(
                1,
                k,
                u64::from(k) * 10,
                1 + u64::from(k),
                u64::from(k) * 10 + 5,
            )
        })
        .collect();
    let s = SessionTally::of(&recs).finish().unwrap();
    assert_eq!(s.ttft_by_step.len(), STEPS_SHOWN as usize);
    let last = s.ttft_by_step.last().unwrap();
    assert!(last.and_later);
    assert_eq!(last.requests, 20 - u64::from(STEPS_SHOWN - 1));
}
