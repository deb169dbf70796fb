//! One generation request from body to tokens: its output length and injected faults drawn
//! from its seed, then the engine (or a fixed-timing timer) started on it.

use super::answer::{answer, Stream};
use super::request::SimRequest;
use super::{error_body, Responder};
use crate::sim::config::{FixedTiming, SimConfig};
use crate::sim::engine::{block_hashes, Admission, Event};
use crate::sim::server::{Request, ResponseWriter};
use crate::sim::truth::TruthRecord;
use crate::sim::wire::{SimApi, SimToolCall, StreamWriter};
use crate::tokenizer::Tokenizer;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Faults drawn for one request.
#[derive(Default)]
pub(super) struct RequestFaults {
    pub(super) status: Option<u16>,
    pub(super) cut_at: Option<u32>,
    pub(super) stall_at: Option<u32>,
    pub(super) malformed_at: Option<u32>,
    pub(super) error_event_at: Option<u32>,
    pub(super) refusal_at: Option<u32>,
}

fn draw_faults(cfg: &SimConfig, rng: &mut ChaCha8Rng, n: u32) -> RequestFaults {
    let f = &cfg.faults;
    let mut out = RequestFaults::default();
    // Draw every decision, in a fixed order, so one fault rate never shifts another's draws.
    let (e, c, s, m) = (
        rng.random::<f64>(),
        rng.random::<f64>(),
        rng.random::<f64>(),
        rng.random::<f64>(),
    );
    let at = 1 + rng.random_range(0..n.max(1));
    if e < f.error_rate {
        let statuses = if f.error_statuses.is_empty() {
            &[500, 503, 429][..]
        } else {
            &f.error_statuses[..]
        };
        out.status = Some(statuses[rng.random_range(0..statuses.len())]);
    }
    if c < f.cut_rate {
        out.cut_at = Some(at.min(n.saturating_sub(1)).max(1));
    }
    if s < f.stall_rate {
        out.stall_at = Some(at);
    }
    if m < f.malformed_rate {
        out.malformed_at = Some(at);
    }
    // Drawn after the others, so adding it left every earlier configuration's draws alone.
    if f.error_event_rate > 0.0 && rng.random::<f64>() < f.error_event_rate {
        out.error_event_at = Some(at);
    }
    // Likewise drawn last, and only when configured, so earlier draws stay as they were.
    if f.refusal_rate > 0.0 && rng.random::<f64>() < f.refusal_rate {
        out.refusal_at = Some(at);
    }
    out
}

/// Fixed-timing mode: a timer per request stands in for the engine.
fn spawn_fixed(
    timing: FixedTiming,
    time_scale: f64,
    received: Instant,
    prompt_tokens: u32,
    n: u32,
    seed: u64,
    tx: mpsc::UnboundedSender<Event>,
) {
    tokio::spawn(async move {
        let scale = |ms: f64| Duration::from_secs_f64((ms / time_scale.max(1e-9)).max(0.0) / 1e3);
        let _ = tx.send(Event::Scheduled {
            at: received,
            cached_tokens: 0,
        });
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut next =
            received + scale(timing.ttft_ms + timing.prefill_ms_per_token * prompt_tokens as f64);
        let per = timing.tokens_per_chunk.max(1);
        let mut sent = 0;
        while sent < n {
            tokio::time::sleep_until(next.into()).await;
            let k = per.min(n - sent);
            sent += k;
            if tx.send(Event::Tokens { n: k, at: next }).is_err() {
                return;
            }
            let mut gap = timing.itl_ms;
            if timing.itl_jitter_ms > 0.0 {
                gap += rng.random_range(-timing.itl_jitter_ms..=timing.itl_jitter_ms);
            }
            next += scale(gap.max(0.0)) * k;
        }
        let _ = tx.send(Event::Finished { at: next });
    });
}

/// What is known of a request before the engine sees it: its id, arrival, prompt, planned
/// length and the trace context it carried.
fn first_truth(req: &Request, id: &str, prompt_tokens: u32, completion_tokens: u32) -> TruthRecord {
    TruthRecord {
        response_id: id.to_owned(),
        received: req.received,
        prompt_tokens,
        completion_tokens,
        body_bytes: req.body.len() as u64,
        traceparent: req.header("traceparent").map(str::to_owned),
        ..Default::default()
    }
}

/// Answers one generation request of `api` (the HTTP routes and the WebSocket alike).
pub async fn completion(
    r: &Responder,
    req: &Request,
    w: &mut ResponseWriter<'_>,
    api: SimApi,
) -> io::Result<bool> {
    let received = req.received;
    let Some(parsed) = parse_request(req, w, api).await? else {
        return Ok(true);
    };
    let (prompt_ids, media) = prompt_ids(r, &parsed, api);
    let prompt_tokens = prompt_ids.len() as u32;
    let seq = r.counter.fetch_add(1, Ordering::Relaxed);
    let seed = r.config.seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cap = parsed.max_tokens(api);
    let n = output_length(&r.config, &parsed, api, cap, &mut rng);
    let faults = draw_faults(&r.config, &mut rng, n);
    let id = format!("{}-sim{:08x}-{seq}", api.id_prefix(), r.instance);
    let mut truth = first_truth(req, &id, prompt_tokens, n);
    truth.media = media;
    if let Some(status) = faults.status {
        return injected_error(r, w, truth, status).await;
    }
    if r.config.input_guardrail_ms > 0.0 {
        tokio::time::sleep(r.scaled(r.config.input_guardrail_ms)).await;
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let aborted = Arc::new(AtomicBool::new(false));
    match &r.config.fixed {
        Some(t) => spawn_fixed(
            t.clone(),
            r.config.time_scale,
            received,
            prompt_tokens,
            n,
            seed,
            tx,
        ),
        None => {
            r.engine.submit(Admission {
                seq_no: seq,
                arrived: received,
                prompt_tokens,
                block_hashes: if parsed.cache_prompt == Some(false) {
                    Vec::new()
                } else {
                    block_hashes(&prompt_ids, r.config.block_size)
                },
                output_tokens: n,
                rng_seed: seed,
                events: tx,
                aborted: aborted.clone(),
            });
        }
    }
    let model = parsed
        .model
        .clone()
        .unwrap_or_else(|| r.config.model.clone());
    let writer = stream_writer(r, &parsed, api, (id, seq), &model, prompt_tokens);
    let stream = Stream {
        model,
        streaming: parsed.streams(api),
        limit_hit: cap.is_some_and(|c| n >= c),
        text_seed: seed ^ 0xA5A5_A5A5,
    };
    let result = answer(r, writer, &stream, n, &faults, &mut rx, &mut truth, w).await;
    if result.is_err() || truth.cut {
        aborted.store(true, Ordering::Relaxed);
    }
    r.truth.push(truth);
    result.map(|keep| keep && !aborted.load(Ordering::Relaxed))
}

/// The prompt's token ids: its text's, then its images' and audio's stand-ins (as many as
/// their tiles and seconds cost), with what the media cost.
fn prompt_ids(
    r: &Responder,
    parsed: &SimRequest,
    api: SimApi,
) -> (Vec<u32>, crate::sim::truth::MediaTruth) {
    let mut ids = r.tokenizer.encode(&parsed.prompt_text(api));
    let media = super::vision::media_of(&parsed.content_parts(api), &r.config.vision);
    ids.extend_from_slice(&media.token_ids);
    let truth = crate::sim::truth::MediaTruth {
        images: media.images,
        image_tiles: media.image_tiles,
        audio: media.audio,
        audio_ms: media.audio_ms,
        tokens: media.tokens,
    };
    (ids, truth)
}

/// The request's body, or `None` when it was refused (the 400 answer written): not JSON, or
/// a Messages request without Anthropic's version header.
async fn parse_request(
    req: &Request,
    w: &mut ResponseWriter<'_>,
    api: SimApi,
) -> io::Result<Option<SimRequest>> {
    let parsed: SimRequest = match serde_json::from_slice(&req.body) {
        Ok(p) => p,
        Err(e) => {
            let body = error_body(
                &format!("invalid JSON body: {e}"),
                "invalid_request_error",
                400,
            );
            w.full(400, "application/json", &body, "").await?;
            return Ok(None);
        }
    };
    // Anthropic refuses a Messages request without its version header; so does the
    // simulator, so a client that forgets it fails here as it would there.
    if api == SimApi::Messages && req.header("anthropic-version").is_none() {
        let body = serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": "anthropic-version: header is required"}});
        w.full(400, "application/json", body.to_string().as_bytes(), "")
            .await?;
        return Ok(None);
    }
    Ok(Some(parsed))
}

/// Output length: exact with ignore_eos or min_tokens; otherwise the model's "EOS" comes
/// from a seeded log-normal draw, capped by max_tokens (`cap`).
fn output_length(
    cfg: &SimConfig,
    parsed: &SimRequest,
    api: SimApi,
    cap: Option<u32>,
    rng: &mut ChaCha8Rng,
) -> u32 {
    let natural = {
        let d = LogNormal::new(
            cfg.output_median_tokens.max(1.0).ln(),
            cfg.output_sigma.max(0.0),
        )
        .expect("valid log-normal");
        (d.sample(rng).round() as u32).max(1)
    };
    let min_tokens = parsed.min_tokens.unwrap_or(0);
    match cap {
        Some(c) if parsed.ignores_eos(api) || min_tokens >= c => c.max(1),
        Some(c) => natural.min(c).max(min_tokens).max(1),
        None => natural,
    }
}

/// Answers with the injected error `status` (429 with a `Retry-After`), recorded as such.
async fn injected_error(
    r: &Responder,
    w: &mut ResponseWriter<'_>,
    mut truth: TruthRecord,
    status: u16,
) -> io::Result<bool> {
    r.errors.fetch_add(1, Ordering::Relaxed);
    truth.status = status;
    truth.completion_tokens = 0;
    r.truth.push(truth);
    let extra = if status == 429 {
        "Retry-After: 1\r\n"
    } else {
        ""
    };
    let body = error_body("injected fault", "server_error", status);
    w.full(status, "application/json", &body, extra).await?;
    Ok(true)
}

/// The writer of the answer's events, in `api`'s dialect, with the usage the request asked
/// for and the tool call it asked for; `(id, seq)` are the response's id and the server's
/// request counter.
fn stream_writer(
    r: &Responder,
    parsed: &SimRequest,
    api: SimApi,
    (id, seq): (String, u64),
    model: &str,
    prompt_tokens: u32,
) -> StreamWriter {
    let stream_options = parsed.stream_options.as_ref();
    let mut writer = StreamWriter::new(
        api,
        id,
        serde_json::to_string(model).unwrap_or_else(|_| "\"\"".into()),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        stream_options.is_some_and(|s| s.include_usage),
        stream_options.is_some_and(|s| s.continuous_usage_stats),
        prompt_tokens,
        r.config.reasoning_tokens,
    );
    writer.tool_call = parsed.tool_to_call(api).map(|name| {
        // Deterministic from the request: the server's request counter.
        let prefix = if api == SimApi::Messages {
            "toolu"
        } else {
            "call"
        };
        SimToolCall::new(format!("{prefix}_{seq}"), &name)
    });
    writer
}
