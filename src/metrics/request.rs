//! Per-request measurements, derived from one record: TTFT, TPOT, E2E, ITL samples, jitter,
//! pauses (docs/metrics.md gives the definitions and their sources).
//!
//! Every latency starts at T_submit, the request's last byte written (the draft, Appendix
//! B.1.1), so the time to upload images or audio is kept beside TTFT, not inside it; only the
//! open-loop "from schedule" figures start earlier, at the planned send time.
//!
//! With a reasoning model, TTFT is the time to the first *answer* token (the draft's 5.1.3.1
//! asks the report to say which; the time to the first reasoning token is kept beside it), so
//! TPOT and the decode rate are taken over answer tokens, the ones between TTFT and E2E.

use crate::clock::Nanos;
use crate::record::RequestRecord;
use crate::stats::distribution::{percentile_sorted, std_dev};
use serde::Serialize;

/// How inter-token latency samples are formed from chunk arrivals (draft 4.6.3).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
pub enum ItlOption {
    /// Gaps between content events ("time between chunks").
    A,
    /// A chunk of n tokens at time T: its first token gets the gap, the other n−1 get 0.
    B,
    /// Server-reported per-token times.
    C,
}

impl ItlOption {
    pub fn describe(self) -> &'static str {
        match self {
            ItlOption::A => "A: time between chunks (a multi-token chunk is one sample)",
            ItlOption::B => "B: chunk arrival time given to each of its tokens (direct when chunks carry one token)",
            ItlOption::C => "C: server-reported per-token times",
        }
    }
}

fn ms(ns: Nanos) -> f64 {
    ns as f64 / 1e6
}

/// What one successful request measured. Times in ms unless named otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct RequestMetrics {
    /// First content event − T_submit (the request's last byte written).
    pub ttft_ms: f64,
    /// Last content event − T_submit.
    pub e2e_ms: f64,
    /// (E2E − TTFT) / (N − 1), for N ≥ 2.
    pub tpot_ms: Option<f64>,
    /// ITL samples by the chosen option.
    pub itl_ms: Vec<f64>,
    /// Standard deviation of `itl_ms` (needs ≥ 2 samples).
    pub jitter_ms: Option<f64>,
    /// Largest ITL sample.
    pub max_pause_ms: Option<f64>,
    /// E2E / N (N: every generated token, reasoning included).
    pub normalized_ms_per_token: Option<f64>,
    /// (N − 1) / (t_last − t_first), tokens/s.
    pub decode_tokens_per_s: Option<f64>,
    /// First response byte − T_submit (0 when the server answered before the upload ended).
    pub ttfb_ms: Option<f64>,
    /// First reasoning event − T_submit.
    pub time_to_first_reasoning_ms: Option<f64>,
    /// Open loop: first content event − scheduled (no coordinated omission).
    pub ttft_from_schedule_ms: Option<f64>,
    /// Open loop: last content event − scheduled.
    pub e2e_from_schedule_ms: Option<f64>,
    /// Every generated token (reasoning included).
    pub output_tokens: u32,
    /// Answer tokens (what TPOT counts; goodput counts every generated token).
    pub answer_tokens: u32,
}

/// TTFT, E2E and TPOT (ms) of a request that completed with an answer.
pub fn latencies(r: &RequestRecord) -> Option<(f64, f64, Option<f64>)> {
    if !r.outcome.is_ok() {
        return None;
    }
    let sent = r.submitted_at()?;
    if r.items > 0 {
        // Answered whole (embeddings, rerank): the request latency stands for both ends.
        let e2e_ms = ms(r.finished_at.saturating_sub(sent));
        return Some((e2e_ms, e2e_ms, None));
    }
    let first = r.first_token_at()?;
    let last = r.last_token_at()?;
    let n = answer_tokens_from_first(r);
    let ttft_ms = ms(first.saturating_sub(sent));
    let e2e_ms = ms(last.saturating_sub(sent));
    let tpot_ms = (n >= 2).then(|| (e2e_ms - ttft_ms) / (n - 1) as f64);
    Some((ttft_ms, e2e_ms, tpot_ms))
}

/// Answer tokens from the first (non-blank) token on: leading whitespace is outside TTFT's span.
fn answer_tokens_from_first(r: &RequestRecord) -> u32 {
    if r.first_content == Some(0) {
        r.answer_tokens()
    } else {
        r.token_chunks().iter().map(|c| c.tokens).sum()
    }
}

/// Measurements of a request that completed with at least one content event.
pub fn measure(r: &RequestRecord, itl: ItlOption) -> Option<RequestMetrics> {
    if r.items > 0 {
        return measure_whole(r);
    }
    let (ttft_ms, e2e_ms, tpot_ms) = latencies(r)?;
    let sent = r.submitted_at()?;
    let first = r.first_token_at()?;
    let last = r.last_token_at()?;
    let n_all = r.output_tokens;
    let n = answer_tokens_from_first(r);
    let itl_ms = itl_samples(r, itl);
    let jitter_ms = (itl_ms.len() >= 2).then(|| std_dev(&itl_ms));
    let max_pause_ms = itl_ms
        .iter()
        .copied()
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let span = last.saturating_sub(first);
    Some(RequestMetrics {
        ttft_ms,
        e2e_ms,
        tpot_ms,
        jitter_ms,
        max_pause_ms,
        itl_ms,
        normalized_ms_per_token: (n_all >= 1).then(|| e2e_ms / n_all as f64),
        decode_tokens_per_s: (n >= 2 && span > 0).then(|| (n - 1) as f64 / (span as f64 / 1e9)),
        ttfb_ms: r.first_byte_at.map(|t| ms(t.saturating_sub(sent))),
        time_to_first_reasoning_ms: r.first_reasoning_at().map(|t| ms(t.saturating_sub(sent))),
        ttft_from_schedule_ms: r.scheduled_at.map(|s| ms(first.saturating_sub(s))),
        e2e_from_schedule_ms: r.scheduled_at.map(|s| ms(last.saturating_sub(s))),
        output_tokens: n_all,
        answer_tokens: r.answer_tokens(),
    })
}

/// Measurements of a non-generative request that completed (embeddings, rerank): only its
/// request latency is real. `ttft_ms` repeats it so the type stays one, but summaries and
/// SLOs never read TTFT, ITL or token figures of such requests.
fn measure_whole(r: &RequestRecord) -> Option<RequestMetrics> {
    let (_, e2e_ms, _) = latencies(r)?;
    let sent = r.submitted_at()?;
    Some(RequestMetrics {
        ttft_ms: e2e_ms,
        e2e_ms,
        tpot_ms: None,
        itl_ms: Vec::new(),
        jitter_ms: None,
        max_pause_ms: None,
        normalized_ms_per_token: None,
        decode_tokens_per_s: None,
        ttfb_ms: r.first_byte_at.map(|t| ms(t.saturating_sub(sent))),
        time_to_first_reasoning_ms: None,
        ttft_from_schedule_ms: None,
        e2e_from_schedule_ms: r.scheduled_at.map(|s| ms(r.finished_at.saturating_sub(s))),
        output_tokens: 0,
        answer_tokens: 0,
    })
}

/// ITL samples of one request. The gap to the first token is never a sample.
pub fn itl_samples(r: &RequestRecord, option: ItlOption) -> Vec<f64> {
    match option {
        ItlOption::A => r
            .token_chunks()
            .windows(2)
            .map(|w| ms(w[1].at - w[0].at))
            .collect(),
        ItlOption::B => {
            let mut out = Vec::with_capacity(r.output_tokens as usize);
            let mut prev: Option<Nanos> = None;
            for c in r.token_chunks().iter().filter(|c| c.tokens > 0) {
                if let Some(p) = prev {
                    out.push(ms(c.at.saturating_sub(p)));
                }
                // The chunk's other tokens arrived together with its first.
                out.extend(std::iter::repeat_n(0.0, c.tokens as usize - 1));
                prev = Some(c.at);
            }
            out
        }
        ItlOption::C => match r
            .server_timing
            .as_ref()
            .and_then(|t| t.token_times_ms.as_ref())
        {
            Some(times) => times.windows(2).map(|w| w[1] - w[0]).collect(),
            None => Vec::new(),
        },
    }
}

/// The request's own P99 ITL (for the `itl_p99_ms` SLO).
pub fn own_itl_p99(m: &RequestMetrics) -> Option<f64> {
    if m.itl_ms.is_empty() {
        return None;
    }
    let mut v = m.itl_ms.clone();
    v.sort_unstable_by(f64::total_cmp);
    Some(percentile_sorted(&v, 99.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Chunk, FailureKind, Outcome};

    const MS: u64 = 1_000_000;

    fn rec(chunks: &[(u64, u32)]) -> RequestRecord {
        RequestRecord {
            sent_at: Some(100 * MS),
            first_byte_at: Some(150 * MS),
            chunks: chunks
                .iter()
                .map(|&(at, tokens)| Chunk {
                    at: at * MS,
                    tokens,
                    bytes: 1,
                })
                .collect(),
            output_tokens: chunks.iter().map(|c| c.1).sum(),
            first_content: (!chunks.is_empty()).then_some(0),
            ..Default::default()
        }
    }

    #[test]
    fn hand_computed_request() {
        // Sent at 100 ms; tokens at 300, 320, 340 (2 tokens), 400.
        let r = rec(&[(300, 1), (320, 1), (340, 2), (400, 1)]);
        let m = measure(&r, ItlOption::B).unwrap();
        assert_eq!(m.ttft_ms, 200.0);
        assert_eq!(m.e2e_ms, 300.0);
        assert_eq!(m.tpot_ms, Some(25.0)); // (300 - 200) / (5 - 1)
        assert_eq!(m.itl_ms, vec![20.0, 20.0, 0.0, 60.0]);
        assert_eq!(m.max_pause_ms, Some(60.0));
        assert_eq!(m.ttfb_ms, Some(50.0));
        assert_eq!(m.decode_tokens_per_s, Some(40.0)); // 4 tokens over 100 ms
        assert_eq!(m.normalized_ms_per_token, Some(60.0));
        let jitter = m.jitter_ms.unwrap();
        assert!((jitter - 475f64.sqrt()).abs() < 1e-9, "{jitter}");
        // Option A: one sample per chunk gap.
        assert_eq!(itl_samples(&r, ItlOption::A), vec![20.0, 20.0, 60.0]);
    }

    #[test]
    fn first_chunk_with_several_tokens_gives_zero_gaps_not_the_ttft() {
        let r = rec(&[(300, 3), (310, 1)]);
        assert_eq!(itl_samples(&r, ItlOption::B), vec![0.0, 0.0, 10.0]);
    }

    #[test]
    fn failed_and_empty_requests_have_no_latency() {
        let mut r = rec(&[(300, 1)]);
        r.outcome = Outcome::failed(FailureKind::StreamCut, "x");
        assert!(measure(&r, ItlOption::B).is_none());
        assert!(measure(&rec(&[]), ItlOption::B).is_none());
        let one = measure(&rec(&[(300, 1)]), ItlOption::B).unwrap();
        assert_eq!(
            (one.tpot_ms, one.jitter_ms, one.max_pause_ms),
            (None, None, None)
        );
    }

    #[test]
    fn reasoning_tokens_are_output_but_tpot_is_over_the_answer() {
        // 6 reasoning tokens, then 3 answer tokens at 300, 320, 340 ms.
        let mut r = rec(&[(300, 1), (320, 1), (340, 1)]);
        r.output_tokens = 9;
        r.reasoning_tokens = 6;
        let m = measure(&r, ItlOption::B).unwrap();
        assert_eq!((m.ttft_ms, m.e2e_ms), (200.0, 240.0));
        assert_eq!(m.tpot_ms, Some(20.0)); // (240 − 200) / (3 − 1)
        assert_eq!(m.normalized_ms_per_token, Some(240.0 / 9.0));
        assert_eq!((m.output_tokens, m.answer_tokens), (9, 3));
    }

    #[test]
    fn never_sent_requests_have_no_latency() {
        let mut r = rec(&[(300, 1)]);
        r.sent_at = None;
        assert!(measure(&r, ItlOption::B).is_none());
    }

    #[test]
    fn ttft_and_e2e_start_at_the_last_byte_written() {
        // First byte written at 100 ms, the last at 180 ms (an 80 ms upload: T_submit is
        // 180 ms, the draft's Appendix B.1.1); response head at 250 ms; tokens at 300, 320,
        // 340 (2 tokens), 400 ms; planned at 90 ms.
        let mut r = rec(&[(300, 1), (320, 1), (340, 2), (400, 1)]);
        r.body_sent_at = Some(180 * MS);
        // An image's worth of body: more than one write (`ONE_WRITE_BYTES`).
        r.body_bytes = 1 << 20;
        r.first_byte_at = Some(250 * MS);
        r.scheduled_at = Some(90 * MS);
        assert_eq!(r.upload_ms(), Some(80.0));
        let m = measure(&r, ItlOption::B).unwrap();
        // 300 − 180 and 400 − 180, not 200 and 300 from the first byte.
        assert_eq!((m.ttft_ms, m.e2e_ms), (120.0, 220.0));
        assert_eq!(m.tpot_ms, Some(25.0)); // (220 − 120) / (5 − 1)
        assert_eq!(m.ttfb_ms, Some(70.0)); // 250 − 180
        assert_eq!(m.normalized_ms_per_token, Some(44.0)); // 220 / 5
                                                           // The open-loop figures keep the planned time as their start.
        assert_eq!(m.ttft_from_schedule_ms, Some(210.0));
        assert_eq!(m.e2e_from_schedule_ms, Some(310.0));
        assert_eq!(latencies(&r), Some((120.0, 220.0, Some(25.0))));
        // A body that fits one write left with its first byte: the stamp after the write
        // returned is the client's own delay, not the request's.
        r.body_bytes = 2_000;
        assert_eq!(r.submitted_at(), Some(100 * MS));
    }

    #[test]
    fn open_loop_latency_from_schedule() {
        let mut r = rec(&[(300, 1), (350, 1)]);
        r.scheduled_at = Some(90 * MS);
        let m = measure(&r, ItlOption::B).unwrap();
        assert_eq!(m.ttft_from_schedule_ms, Some(210.0));
        assert_eq!(m.e2e_from_schedule_ms, Some(260.0));
    }
}
