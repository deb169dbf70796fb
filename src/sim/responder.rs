//! The OpenAI-compatible side of the simulator: routes, request parsing, streamed answers.
//!
//! Tokens come from the engine (`engine.rs`) or, in fixed-timing mode, from a per-request
//! timer; either way they arrive as [`Event`]s and are written here, one HTTP chunk per
//! event, with guardrail delay, output smoothing and fault injection applied on the way out.

use super::config::{FixedTiming, SimConfig};
use super::engine::{self, block_hashes, Admission, EngineHandle, Event, Stats};
use super::server::{Request, ResponseWriter};
use super::truth::{TruthLog, TruthRecord};
use crate::tokenizer::{TiktokenTokenizer, Tokenizer};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use serde::Deserialize;
use std::fmt::Write as _;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Words the simulator "generates", one token each under cl100k.
pub const SIM_WORDS: [&str; 16] = [
    " the", " model", " serves", " tokens", " quickly", " and", " every", " user", " reads",
    " them", " as", " they", " arrive", " on", " time", " here",
];

/// Shared state of the simulated server. Build it inside the server's runtime.
pub struct Responder {
    pub config: SimConfig,
    truth: TruthLog,
    tokenizer: TiktokenTokenizer,
    counter: AtomicU64,
    engine: EngineHandle,
    /// Requests answered with an injected error status.
    errors: AtomicU64,
    /// Distinguishes this server's response ids from another instance's (a restarted
    /// server must not reuse ids a client already saw).
    instance: u32,
}

impl Responder {
    pub fn new(config: SimConfig, truth: TruthLog) -> Self {
        let engine = engine::spawn(config.clone());
        Self {
            config,
            truth,
            tokenizer: TiktokenTokenizer::cl100k(),
            counter: AtomicU64::new(0),
            engine,
            errors: AtomicU64::new(0),
            instance: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
                .unwrap_or(0),
        }
    }

    pub fn stats(&self) -> &Stats {
        &self.engine.stats
    }

    fn scaled(&self, ms: f64) -> Duration {
        Duration::from_secs_f64((ms / self.config.time_scale.max(1e-9)).max(0.0) / 1e3)
    }
}

#[derive(Deserialize, Default)]
struct CompletionRequest {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
    #[serde(default)]
    prompt: Option<serde_json::Value>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    min_tokens: Option<u32>,
    #[serde(default)]
    ignore_eos: bool,
    /// llama.cpp's per-request switch: `false` means no prompt reuse, as the real server.
    #[serde(default)]
    cache_prompt: Option<bool>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: serde_json::Value,
}

#[derive(Deserialize, Default)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
    #[serde(default)]
    continuous_usage_stats: bool,
}

fn text_of(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| {
                p.get("text")
                    .and_then(|t| t.as_str())
                    .or_else(|| p.as_str())
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn error_body(message: &str, kind: &str, code: u16) -> Vec<u8> {
    serde_json::json!({"error": {"message": message, "type": kind, "code": code}})
        .to_string()
        .into_bytes()
}

/// Handles one request; returns whether the connection may be kept.
pub async fn handle(r: &Responder, req: Request, w: &mut ResponseWriter<'_>) -> io::Result<bool> {
    let path = req.path.split('?').next().unwrap_or("");
    match (req.method.as_str(), path) {
        ("GET", "/health") => {
            w.full(200, "application/json", br#"{"status":"ok"}"#, "")
                .await?
        }
        ("GET", "/v1/models") => {
            let body = serde_json::json!({"object": "list", "data": [{"id": r.config.model, "object": "model", "owned_by": "servebench-sim", "max_model_len": r.config.kv_capacity_tokens}]});
            w.full(200, "application/json", body.to_string().as_bytes(), "")
                .await?
        }
        ("GET", "/metrics") => {
            w.full(
                200,
                "text/plain; version=0.0.4",
                metrics_text(r).as_bytes(),
                "",
            )
            .await?
        }
        ("POST", "/tokenize") => {
            let v: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
            // `messages` (vLLM style) are joined as the chat endpoint joins them to count.
            let text = match v.get("messages").and_then(|m| m.as_array()) {
                Some(msgs) => msgs
                    .iter()
                    .map(|m| m.get("content").map(text_of).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join("\n"),
                None => v
                    .get("content")
                    .or_else(|| v.get("prompt"))
                    .map(text_of)
                    .unwrap_or_default(),
            };
            let tokens = r.tokenizer.encode(&text);
            let body = serde_json::json!({"tokens": tokens, "count": tokens.len()});
            w.full(200, "application/json", body.to_string().as_bytes(), "")
                .await?
        }
        ("POST", "/reset_prefix_cache") => {
            // vLLM's endpoint: empties the prefix cache (the prefix-cache test's cold level).
            r.engine
                .stats
                .reset_prefix_cache
                .store(true, std::sync::atomic::Ordering::Release);
            w.full(200, "application/json", b"{}", "").await?
        }
        ("POST", "/v1/chat/completions") => return completion(r, &req, w, true).await,
        ("POST", "/v1/completions") => return completion(r, &req, w, false).await,
        (
            _,
            "/v1/chat/completions"
            | "/v1/completions"
            | "/health"
            | "/v1/models"
            | "/metrics"
            | "/tokenize"
            | "/reset_prefix_cache",
        ) => {
            w.full(
                405,
                "application/json",
                &error_body("method not allowed", "invalid_request_error", 405),
                "",
            )
            .await?
        }
        _ => {
            w.full(
                404,
                "application/json",
                &error_body("not found", "invalid_request_error", 404),
                "",
            )
            .await?
        }
    }
    Ok(true)
}

/// Prometheus text with vLLM's metric names, so scrapers and dashboards built for vLLM work.
fn metrics_text(r: &Responder) -> String {
    let s = r.stats();
    // Label values escape backslash, quote and newline (exposition format 0.0.4): a client
    // may name any model.
    let m = r
        .config
        .model
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    let total = s.kv_total_blocks.load(Ordering::Relaxed).max(1) as f64;
    let mut out = String::new();
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
    let rows: [(&str, &str, f64); 10] = [
        ("num_requests_running", "gauge", load(&s.running)),
        ("num_requests_waiting", "gauge", load(&s.waiting)),
        (
            "kv_cache_usage_perc",
            "gauge",
            load(&s.kv_used_blocks) / total,
        ),
        ("num_preemptions_total", "counter", load(&s.preemptions)),
        (
            "prefix_cache_queries_total",
            "counter",
            load(&s.prefix_queries),
        ),
        ("prefix_cache_hits_total", "counter", load(&s.prefix_hits)),
        ("prompt_tokens_total", "counter", load(&s.prompt_tokens)),
        (
            "generation_tokens_total",
            "counter",
            load(&s.generation_tokens),
        ),
        ("request_success_total", "counter", load(&s.finished)),
        ("request_failure_total", "counter", load(&r.errors)),
    ];
    for (name, kind, v) in rows {
        let _ = writeln!(
            out,
            "# TYPE vllm:{name} {kind}\nvllm:{name}{{model_name=\"{m}\"}} {v}"
        );
    }
    out
}

/// Faults drawn for one request.
#[derive(Default)]
struct RequestFaults {
    status: Option<u16>,
    cut_at: Option<u32>,
    stall_at: Option<u32>,
    malformed_at: Option<u32>,
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

async fn completion(
    r: &Responder,
    req: &Request,
    w: &mut ResponseWriter<'_>,
    chat: bool,
) -> io::Result<bool> {
    let received = req.received;
    let parsed: CompletionRequest = match serde_json::from_slice(&req.body) {
        Ok(p) => p,
        Err(e) => {
            let body = error_body(
                &format!("invalid JSON body: {e}"),
                "invalid_request_error",
                400,
            );
            w.full(400, "application/json", &body, "").await?;
            return Ok(true);
        }
    };
    let prompt = if chat {
        parsed
            .messages
            .as_ref()
            .map(|m| {
                m.iter()
                    .map(|m| text_of(&m.content))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    } else {
        parsed.prompt.as_ref().map(text_of).unwrap_or_default()
    };
    let prompt_ids = r.tokenizer.encode(&prompt);
    let prompt_tokens = prompt_ids.len() as u32;
    let seq = r.counter.fetch_add(1, Ordering::Relaxed);
    let seed = r.config.seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cap = parsed.max_completion_tokens.or(parsed.max_tokens);
    // Output length: exact with ignore_eos or min_tokens; otherwise the model's "EOS" comes
    // from a seeded log-normal draw, capped by max_tokens.
    let natural = {
        let d = LogNormal::new(
            r.config.output_median_tokens.max(1.0).ln(),
            r.config.output_sigma.max(0.0),
        )
        .expect("valid log-normal");
        (d.sample(&mut rng).round() as u32).max(1)
    };
    let n = match cap {
        Some(c) if parsed.ignore_eos || parsed.min_tokens.unwrap_or(0) >= c => c.max(1),
        Some(c) => natural.min(c).max(parsed.min_tokens.unwrap_or(1)).max(1),
        None => natural,
    };
    let faults = draw_faults(&r.config, &mut rng, n);
    let id = format!(
        "{}-sim{:08x}-{seq}",
        if chat { "chatcmpl" } else { "cmpl" },
        r.instance
    );
    let mut truth = TruthRecord {
        response_id: id.clone(),
        received,
        prompt_tokens,
        completion_tokens: n,
        ..Default::default()
    };
    if let Some(status) = faults.status {
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
        return Ok(true);
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
    let stream = Stream {
        id,
        object: if chat {
            "chat.completion.chunk"
        } else {
            "text_completion"
        },
        model_json: serde_json::to_string(&model).unwrap_or_else(|_| "\"\"".into()),
        model,
        created: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        chat,
        include_usage: parsed
            .stream_options
            .as_ref()
            .is_some_and(|s| s.include_usage),
        continuous: parsed
            .stream_options
            .as_ref()
            .is_some_and(|s| s.continuous_usage_stats),
        prompt_tokens,
        reasoning_tokens: r.config.reasoning_tokens,
        text_seed: seed ^ 0xA5A5_A5A5,
    };
    let result = answer(
        r,
        &stream,
        parsed.stream,
        n,
        &faults,
        &mut rx,
        &mut truth,
        w,
    )
    .await;
    if result.is_err() || truth.cut {
        aborted.store(true, Ordering::Relaxed);
    }
    r.truth.push(truth);
    result.map(|keep| keep && !aborted.load(Ordering::Relaxed))
}

/// Fixed facts of one response.
struct Stream {
    id: String,
    object: &'static str,
    model: String,
    /// `model` as a JSON string literal (quotes and escapes included): a client may send any
    /// model name, and it is echoed inside hand-built JSON.
    model_json: String,
    created: u64,
    chat: bool,
    include_usage: bool,
    continuous: bool,
    prompt_tokens: u32,
    /// Tokens at the start of each answer streamed as reasoning.
    reasoning_tokens: u32,
    /// Seed of the generated words.
    text_seed: u64,
}

impl Stream {
    fn event(&self, body: &str, finish: Option<&str>, usage: Option<String>) -> String {
        let finish = finish
            .map(|f| format!("\"{f}\""))
            .unwrap_or_else(|| "null".into());
        let usage = usage.map(|u| format!(",\"usage\":{u}")).unwrap_or_default();
        format!(
            "data: {{\"id\":\"{}\",\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[{{\"index\":0,{body},\"finish_reason\":{finish}}}]{usage}}}\n\n",
            self.id, self.object, self.created, self.model_json
        )
    }

    fn usage(&self, completion: u32, cached: u32) -> String {
        let reasoning = if self.chat {
            self.reasoning_tokens.min(completion)
        } else {
            0
        };
        format!(
            "{{\"prompt_tokens\":{},\"completion_tokens\":{completion},\"total_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}},\"completion_tokens_details\":{{\"reasoning_tokens\":{reasoning}}}}}",
            self.prompt_tokens,
            self.prompt_tokens + completion
        )
    }
}

#[allow(clippy::too_many_arguments)]
async fn answer(
    r: &Responder,
    s: &Stream,
    streaming: bool,
    n: u32,
    faults: &RequestFaults,
    rx: &mut mpsc::UnboundedReceiver<Event>,
    truth: &mut TruthRecord,
    w: &mut ResponseWriter<'_>,
) -> io::Result<bool> {
    // The words are drawn from the request's own seeded stream: same seed, same text.
    let mut rng_text = ChaCha8Rng::seed_from_u64(s.text_seed);
    let mut sent = 0u32;
    let mut cached = 0u32;
    let mut text = String::new();
    let mut last_release: Option<Instant> = None;
    let mut started = false;
    let og = r.scaled(r.config.output_guardrail_ms);
    let smooth = r.scaled(r.config.smoothing_tbt_ms);
    while let Some(event) = rx.recv().await {
        match event {
            Event::Scheduled { at, cached_tokens } => {
                truth.scheduled = Some(at);
                truth.cached_tokens = cached_tokens;
                cached = cached_tokens;
            }
            Event::Preempted { .. } => truth.preemptions += 1,
            Event::Rejected => {
                let msg = format!(
                    "the prompt ({} tokens) does not fit in the KV cache",
                    s.prompt_tokens
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
                return Ok(false);
            }
            Event::Finished { .. } => break,
            Event::Tokens { n: k, at } => {
                truth.token_times.push((at, k));
                // Output guardrail and smoothing decide when the tokens leave.
                let mut release = at + og;
                if let Some(prev) = last_release {
                    release = release.max(prev + smooth);
                }
                last_release = Some(release);
                if release > Instant::now() {
                    tokio::time::sleep_until(release.into()).await;
                }
                if streaming && !started {
                    w.start_stream().await?;
                    started = true;
                    if s.chat {
                        w.chunk(
                            s.event(
                                "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}",
                                None,
                                None,
                            )
                            .as_bytes(),
                        )
                        .await?;
                    }
                }
                let mut piece = String::new();
                for _ in 0..k {
                    piece.push_str(SIM_WORDS[rng_text.random_range(0..SIM_WORDS.len())]);
                }
                let before = sent;
                sent += k;
                if !streaming {
                    text.push_str(&piece);
                    continue;
                }
                if faults.stall_at.is_some_and(|a| before < a && sent >= a) {
                    tokio::time::sleep(r.scaled(r.config.faults.stall_ms)).await;
                }
                if faults.malformed_at.is_some_and(|a| before < a && sent >= a) {
                    w.chunk(b"data: {\"id\": malformed\n\n").await?;
                }
                if faults.cut_at.is_some_and(|a| before < a && sent >= a) {
                    w.cut().await?;
                    truth.cut = true;
                    return Ok(false);
                }
                // A reasoning model: its first tokens are reasoning deltas (chat only).
                let body = if s.chat && before < s.reasoning_tokens {
                    format!("\"delta\":{{\"reasoning_content\":\"{piece}\"}}")
                } else if s.chat {
                    format!("\"delta\":{{\"content\":\"{piece}\"}}")
                } else {
                    format!("\"text\":\"{piece}\"")
                };
                let finish = (sent >= n).then_some("length");
                let usage = s.continuous.then(|| s.usage(sent, cached));
                let payload = s.event(&body, finish, usage);
                truth.chunk_writes.push((Instant::now(), k));
                w.chunk(payload.as_bytes()).await?;
            }
        }
    }
    let timings = if r.config.report_token_times {
        let times: Vec<f64> = truth
            .token_times
            .iter()
            .flat_map(|&(at, k)| {
                std::iter::repeat_n(
                    at.duration_since(truth.received).as_secs_f64() * 1e3,
                    k as usize,
                )
            })
            .collect();
        format!(
            ",\"timings\":{{\"predicted_n\":{sent},\"token_times_ms\":{}}}",
            serde_json::to_string(&times).unwrap_or_default()
        )
    } else {
        String::new()
    };
    if streaming {
        if !started {
            w.start_stream().await?;
        }
        if s.include_usage {
            let last = format!(
                "data: {{\"id\":\"{}\",\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[],\"usage\":{}{timings}}}\n\n",
                s.id,
                s.object,
                s.created,
                s.model_json,
                s.usage(sent, cached)
            );
            w.chunk(last.as_bytes()).await?;
        }
        w.chunk(b"data: [DONE]\n\n").await?;
        w.end_stream().await?;
    } else {
        let choice = if s.chat {
            serde_json::json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"})
        } else {
            serde_json::json!({"index": 0, "text": text, "finish_reason": "length"})
        };
        let body = serde_json::json!({
            "id": s.id, "object": if s.chat { "chat.completion" } else { "text_completion" }, "created": s.created,
            "model": s.model, "choices": [choice],
            "usage": serde_json::from_str::<serde_json::Value>(&s.usage(sent, cached)).unwrap_or_default(),
        });
        w.full(200, "application/json", body.to_string().as_bytes(), "")
            .await?;
    }
    truth.completion_tokens = sent;
    Ok(true)
}
