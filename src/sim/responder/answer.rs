//! Writes one response as its tokens arrive: guardrail delay, smoothing and the drawn faults
//! applied on the way out, in the API's stream format or as one JSON body.

use super::generation::RequestFaults;
use super::{error_body, Responder, SIM_WORDS};
use crate::sim::engine::Event;
use crate::sim::server::ResponseWriter;
use crate::sim::truth::TruthRecord;
use crate::sim::wire::{ServerTimes, SimApi, StreamWriter};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Fixed facts of one response beside its writer.
pub(super) struct Stream {
    pub(super) model: String,
    /// The client asked for a stream (else one JSON answer).
    pub(super) streaming: bool,
    /// The answer ends at the request's length limit.
    pub(super) limit_hit: bool,
    /// Seed of the generated words.
    pub(super) text_seed: u64,
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn answer(
    r: &Responder,
    mut wr: StreamWriter,
    s: &Stream,
    n: u32,
    faults: &RequestFaults,
    rx: &mut mpsc::UnboundedReceiver<Event>,
    truth: &mut TruthRecord,
    w: &mut ResponseWriter<'_>,
) -> io::Result<bool> {
    // The words are drawn from the request's own seeded stream: same seed, same text.
    let mut rng_text = ChaCha8Rng::seed_from_u64(s.text_seed);
    let mut sent = 0u32;
    let mut text = String::new();
    let mut out = String::new();
    let mut last_release: Option<Instant> = None;
    let mut started = false;
    let og = r.scaled(r.config.output_guardrail_ms);
    let smooth = r.scaled(r.config.smoothing_tbt_ms);
    while let Some(event) = rx.recv().await {
        match event {
            Event::Scheduled { at, cached_tokens } => {
                truth.scheduled = Some(at);
                truth.cached_tokens = cached_tokens;
                wr.cached = cached_tokens;
            }
            Event::Preempted { .. } => truth.preemptions += 1,
            Event::Rejected => return reject(&wr, truth, started, w).await,
            Event::Finished { .. } => break,
            Event::Tokens { n: k, at } => {
                truth.token_times.push((at, k));
                // Output guardrail and smoothing decide when the tokens leave.
                let release = release_at(at, og, smooth, &mut last_release);
                if release > Instant::now() {
                    tokio::time::sleep_until(release.into()).await;
                }
                out.clear();
                if s.streaming && !started {
                    w.start_stream().await?;
                    started = true;
                    wr.start(&mut out);
                }
                let piece = draw_words(&mut rng_text, k);
                let before = sent;
                sent += k;
                if !s.streaming {
                    text.push_str(&piece);
                    continue;
                }
                let ended = inject_faults(r, &mut wr, faults, &mut out, truth, w, before, sent);
                if let Some(keep) = ended.await? {
                    return Ok(keep);
                }
                wr.tokens(&mut out, &piece, k, before, n);
                truth.tool_calls = wr.tool_calls_made();
                truth.chunk_writes.push((Instant::now(), k));
                w.chunk(out.as_bytes()).await?;
            }
        }
    }
    let times = server_times(r, truth);
    if s.streaming {
        out.clear();
        if !started {
            w.start_stream().await?;
            wr.start(&mut out);
        }
        wr.end(&mut out, sent, s.limit_hit, Some(&times));
        w.chunk(out.as_bytes()).await?;
        w.end_stream().await?;
    } else {
        let body = whole_answer(&wr, s, &text, sent, truth);
        w.full(200, "application/json", body.to_string().as_bytes(), "")
            .await?;
    }
    truth.completion_tokens = sent;
    Ok(true)
}

/// The engine refused the request (its prompt does not fit in the KV cache): a 400 answer
/// when the stream has not started, else a cut stream.
async fn reject(
    wr: &StreamWriter,
    truth: &mut TruthRecord,
    started: bool,
    w: &mut ResponseWriter<'_>,
) -> io::Result<bool> {
    let msg = format!(
        "the prompt ({} tokens) does not fit in the KV cache",
        wr.prompt_tokens
    );
    truth.status = 400;
    if !started {
        w.full(
            400,
            "application/json",
            &error_body(&msg, "invalid_request_error", 400),
            "",
        )
        .await?;
        return Ok(true);
    }
    w.cut().await?;
    truth.cut = true;
    Ok(false)
}

/// When tokens that came at `at` leave: after the output guardrail `og`, and no sooner than
/// `smooth` after the previous write left (`last_release`, which this updates).
fn release_at(
    at: Instant,
    og: Duration,
    smooth: Duration,
    last_release: &mut Option<Instant>,
) -> Instant {
    let mut release = at + og;
    if let Some(prev) = *last_release {
        release = release.max(prev + smooth);
    }
    *last_release = Some(release);
    release
}

/// `k` words from the request's own seeded text stream.
fn draw_words(rng_text: &mut ChaCha8Rng, k: u32) -> String {
    let mut piece = String::new();
    for _ in 0..k {
        piece.push_str(SIM_WORDS[rng_text.random_range(0..SIM_WORDS.len())]);
    }
    piece
}

/// Applies the faults drawn for the write that takes the answer from `before` to `sent`
/// tokens (`out` holds what is to go before its tokens): a stall, a malformed event, a cut,
/// an error event, a refusal. `Some` (what [`answer`] returns) when one ended the response,
/// `None` when its tokens are to be written.
#[allow(clippy::too_many_arguments)]
async fn inject_faults(
    r: &Responder,
    wr: &mut StreamWriter,
    faults: &RequestFaults,
    out: &mut String,
    truth: &mut TruthRecord,
    w: &mut ResponseWriter<'_>,
    before: u32,
    sent: u32,
) -> io::Result<Option<bool>> {
    let hits = |at: Option<u32>| at.is_some_and(|a| before < a && sent >= a);
    if hits(faults.stall_at) {
        tokio::time::sleep(r.scaled(r.config.faults.stall_ms)).await;
    }
    if hits(faults.malformed_at) {
        out.push_str("data: {\"id\": malformed\n\n");
    }
    if hits(faults.cut_at) {
        if !out.is_empty() {
            w.chunk(out.as_bytes()).await?;
        }
        w.cut().await?;
        truth.cut = true;
        return Ok(Some(false));
    }
    if hits(faults.error_event_at) {
        // The tokens before this write were delivered; the stream then ends
        // with an error event in the API's form and a well-framed body.
        wr.error_event(out, "injected error event");
        w.chunk(out.as_bytes()).await?;
        w.end_stream().await?;
        truth.error_event = true;
        truth.completion_tokens = before;
        return Ok(Some(true));
    }
    if hits(faults.refusal_at) && wr.refusal(out, before) {
        // The tokens before this write were delivered; the filter then refuses
        // in the API's own form and the stream ends normally.
        w.chunk(out.as_bytes()).await?;
        w.end_stream().await?;
        truth.refused = true;
        truth.completion_tokens = before;
        return Ok(Some(true));
    }
    Ok(None)
}

/// The server-side times of a finished response, from its ground truth.
fn server_times(r: &Responder, truth: &TruthRecord) -> ServerTimes {
    let ms = |t: Instant| t.saturating_duration_since(truth.received).as_secs_f64() * 1e3;
    let first = truth
        .token_times
        .first()
        .map(|&(t, _)| ms(t))
        .unwrap_or(0.0);
    let last = truth
        .token_times
        .last()
        .map(|&(t, _)| ms(t))
        .unwrap_or(first);
    ServerTimes {
        prompt_ms: first,
        predicted_ms: last - first,
        token_times_ms: r.config.report_token_times.then(|| {
            truth
                .token_times
                .iter()
                .flat_map(|&(at, k)| std::iter::repeat_n(ms(at), k as usize))
                .collect()
        }),
    }
}

/// A whole answer as one JSON body (`stream: false`): a tool call when the request asked
/// for one (counted in `truth`), else text.
fn whole_answer(
    wr: &StreamWriter,
    s: &Stream,
    text: &str,
    sent: u32,
    truth: &mut TruthRecord,
) -> serde_json::Value {
    match &wr.tool_call {
        Some(call) if sent > 0 => {
            truth.tool_calls = 1;
            super::tool_answer::non_streamed_call(wr, call, s, text, sent)
        }
        _ => non_streamed(wr, s, text, sent),
    }
}

/// A whole answer as one JSON body (`stream: false`), in the API's shape.
fn non_streamed(wr: &StreamWriter, s: &Stream, text: &str, sent: u32) -> serde_json::Value {
    use serde_json::json;
    let (p, c) = (wr.prompt_tokens, wr.cached);
    let created = wr.created;
    match wr.api {
        SimApi::Chat | SimApi::Completions => {
            let chat = wr.api == SimApi::Chat;
            let choice = if chat {
                json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"})
            } else {
                json!({"index": 0, "text": text, "finish_reason": "length"})
            };
            json!({
                "id": wr.id, "object": if chat { "chat.completion" } else { "text_completion" },
                "created": created, "model": s.model, "choices": [choice],
                "usage": {"prompt_tokens": p, "completion_tokens": sent, "total_tokens": p + sent,
                          "prompt_tokens_details": {"cached_tokens": c}},
            })
        }
        SimApi::Responses => json!({
            "id": wr.id, "object": "response", "status": "completed", "model": s.model,
            "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}],
            "usage": {"input_tokens": p, "output_tokens": sent, "input_tokens_details": {"cached_tokens": c}},
        }),
        SimApi::Messages => json!({
            "id": wr.id, "type": "message", "role": "assistant", "model": s.model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": if s.limit_hit { "max_tokens" } else { "end_turn" },
            "usage": {"input_tokens": p - c.min(p), "cache_read_input_tokens": c, "output_tokens": sent},
        }),
        SimApi::Llamacpp => json!({
            "content": text, "stop": true, "tokens_predicted": sent, "tokens_evaluated": p,
        }),
        SimApi::Tgi | SimApi::Sglang | SimApi::Websocket | SimApi::Grpc => {
            json!({"generated_text": text, "text": text})
        }
    }
}
