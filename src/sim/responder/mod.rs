//! The OpenAI-compatible side of the simulator: routes, request parsing, streamed answers.
//!
//! Tokens come from the engine (`engine.rs`) or, in fixed-timing mode, from a per-request
//! timer; either way they arrive as [`Event`]s and are written here, one HTTP chunk per
//! event, with guardrail delay, output smoothing and fault injection applied on the way out.

use super::config::{FixedTiming, SimConfig};
use super::engine::{self, block_hashes, Admission, EngineHandle, Event, Stats};
use super::server::{Request, ResponseWriter};
use super::truth::{TruthLog, TruthRecord};
use super::wire::{ServerTimes, SimApi, StreamWriter};
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

/// A request to any of the simulated APIs: the union of the fields they use.
#[derive(Deserialize, Default)]
struct SimRequest {
    #[serde(default)]
    model: Option<String>,
    /// Chat Completions and Anthropic Messages.
    #[serde(default)]
    messages: Option<Vec<Message>>,
    /// Anthropic Messages: the system prompt (a string or text blocks).
    #[serde(default)]
    system: Option<serde_json::Value>,
    /// Completions and llama.cpp `/completion`.
    #[serde(default)]
    prompt: Option<serde_json::Value>,
    /// Responses: a string or a list of messages.
    #[serde(default)]
    input: Option<serde_json::Value>,
    /// SGLang `/generate`.
    #[serde(default)]
    text: Option<serde_json::Value>,
    /// TGI `/generate_stream`.
    #[serde(default)]
    inputs: Option<String>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    max_output_tokens: Option<u32>,
    /// llama.cpp `/completion`.
    #[serde(default)]
    n_predict: Option<i64>,
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
    /// TGI's parameters.
    #[serde(default)]
    parameters: Option<NativeParams>,
    /// SGLang's parameters.
    #[serde(default)]
    sampling_params: Option<NativeParams>,
}

/// TGI `parameters` / SGLang `sampling_params`: the fields the simulator reads.
#[derive(Deserialize, Default)]
struct NativeParams {
    #[serde(default)]
    max_new_tokens: Option<u32>,
    #[serde(default)]
    ignore_eos: bool,
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

impl SimRequest {
    /// The prompt text the API carries (messages' contents joined by newlines).
    fn prompt_text(&self, api: SimApi) -> String {
        let join = |msgs: &[Message]| {
            msgs.iter()
                .map(|m| text_of(&m.content))
                .collect::<Vec<_>>()
                .join("\n")
        };
        match api {
            SimApi::Chat | SimApi::Websocket => match (&self.messages, &self.prompt) {
                (Some(m), _) => join(m),
                (None, Some(p)) => text_of(p),
                (None, None) => String::new(),
            },
            SimApi::Messages => {
                let mut parts = Vec::new();
                if let Some(s) = &self.system {
                    parts.push(text_of(s));
                }
                if let Some(m) = &self.messages {
                    parts.push(join(m));
                }
                parts.join("\n")
            }
            SimApi::Responses => match &self.input {
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .map(|m| m.get("content").map(text_of).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join("\n"),
                Some(v) => text_of(v),
                None => String::new(),
            },
            SimApi::Completions | SimApi::Llamacpp | SimApi::Grpc => {
                self.prompt.as_ref().map(text_of).unwrap_or_default()
            }
            SimApi::Sglang => self.text.as_ref().map(text_of).unwrap_or_default(),
            SimApi::Tgi => self.inputs.clone().unwrap_or_default(),
        }
    }

    /// The length limit the API's field sets.
    fn max_tokens(&self, api: SimApi) -> Option<u32> {
        match api {
            SimApi::Chat | SimApi::Completions | SimApi::Websocket | SimApi::Grpc => {
                self.max_completion_tokens.or(self.max_tokens)
            }
            SimApi::Messages => self.max_tokens,
            SimApi::Responses => self.max_output_tokens,
            // llama.cpp: -1 means no limit.
            SimApi::Llamacpp => self.n_predict.and_then(|n| u32::try_from(n).ok()),
            SimApi::Tgi => self.parameters.as_ref().and_then(|p| p.max_new_tokens),
            SimApi::Sglang => self.sampling_params.as_ref().and_then(|p| p.max_new_tokens),
        }
    }

    /// Whether EOS is ignored (TGI has no such option).
    fn ignores_eos(&self, api: SimApi) -> bool {
        match api {
            SimApi::Sglang => self.sampling_params.as_ref().is_some_and(|p| p.ignore_eos),
            SimApi::Tgi => false,
            _ => self.ignore_eos,
        }
    }

    /// Whether the answer streams (TGI's route always does).
    fn streams(&self, api: SimApi) -> bool {
        matches!(api, SimApi::Tgi | SimApi::Websocket | SimApi::Grpc) || self.stream
    }
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

/// The page a web server (not an LLM API) answers with.
const HTML_PAGE: &[u8] = b"<!DOCTYPE html>\n<html><head><title>Welcome to the web UI</title></head>\n<body><h1>It works!</h1><p>This is a web page, not an API.</p></body></html>\n";

/// A broken server's answer, when the configuration plays one (`faults.html_status`,
/// `faults.api_key`); `None`: answer normally.
fn broken_answer(r: &Responder, req: &Request, path: &str) -> Option<(u16, &'static str, Vec<u8>)> {
    let f = &r.config.faults;
    if f.html_status != 0 {
        return Some((
            f.html_status,
            "text/html; charset=utf-8",
            HTML_PAGE.to_vec(),
        ));
    }
    let key = f.api_key.as_deref()?;
    if matches!(path, "/health" | "/metrics") {
        return None;
    }
    let bearer = req
        .header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let x_api_key = req.header("x-api-key").map(str::trim);
    if bearer == Some(key) || x_api_key == Some(key) {
        return None;
    }
    let body = error_body("Invalid API Key", "authentication_error", 401);
    Some((401, "application/json", body))
}

/// Handles one request; returns whether the connection may be kept.
pub async fn handle(r: &Responder, req: Request, w: &mut ResponseWriter<'_>) -> io::Result<bool> {
    let path = req.path.split('?').next().unwrap_or("");
    if let Some((status, content_type, body)) = broken_answer(r, &req, path) {
        w.full(status, content_type, &body, "").await?;
        return Ok(true);
    }
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
        // The engines' descriptions of themselves (what `runner::ready` reads for the
        // native routes), naming the simulator so discovery never mistakes it for them.
        ("GET", "/props") => {
            let body = serde_json::json!({"model_path": r.config.model, "build_info": format!("servebench-sim {}", env!("CARGO_PKG_VERSION")), "default_generation_settings": {"n_ctx": r.config.kv_capacity_tokens}});
            w.full(200, "application/json", body.to_string().as_bytes(), "")
                .await?
        }
        ("GET", "/info") => {
            let body = serde_json::json!({"model_id": r.config.model, "version": env!("CARGO_PKG_VERSION"), "max_input_tokens": r.config.kv_capacity_tokens, "router": "servebench-sim"});
            w.full(200, "application/json", body.to_string().as_bytes(), "")
                .await?
        }
        ("GET", "/get_model_info") => {
            let body = serde_json::json!({"model_path": r.config.model, "is_generation": true});
            w.full(200, "application/json", body.to_string().as_bytes(), "")
                .await?
        }
        ("POST", p) if SimApi::for_path(p).is_some() => {
            let api = SimApi::for_path(p).expect("checked");
            return completion(r, &req, w, api).await;
        }
        (_, p) if SimApi::for_path(p).is_some() => {
            w.full(
                405,
                "application/json",
                &error_body("method not allowed", "invalid_request_error", 405),
                "",
            )
            .await?
        }
        (_, "/health" | "/v1/models" | "/metrics" | "/tokenize" | "/reset_prefix_cache") => {
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
    error_event_at: Option<u32>,
    refusal_at: Option<u32>,
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

/// Answers one generation request of `api` (the HTTP routes and the WebSocket alike).
pub async fn completion(
    r: &Responder,
    req: &Request,
    w: &mut ResponseWriter<'_>,
    api: SimApi,
) -> io::Result<bool> {
    let received = req.received;
    let parsed: SimRequest = match serde_json::from_slice(&req.body) {
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
    // Anthropic refuses a Messages request without its version header; so does the
    // simulator, so a client that forgets it fails here as it would there.
    if api == SimApi::Messages && req.header("anthropic-version").is_none() {
        let body = serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": "anthropic-version: header is required"}});
        w.full(400, "application/json", body.to_string().as_bytes(), "")
            .await?;
        return Ok(true);
    }
    let prompt = parsed.prompt_text(api);
    let prompt_ids = r.tokenizer.encode(&prompt);
    let prompt_tokens = prompt_ids.len() as u32;
    let seq = r.counter.fetch_add(1, Ordering::Relaxed);
    let seed = r.config.seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cap = parsed.max_tokens(api);
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
    let min_tokens = parsed.min_tokens.unwrap_or(0);
    let n = match cap {
        Some(c) if parsed.ignores_eos(api) || min_tokens >= c => c.max(1),
        Some(c) => natural.min(c).max(min_tokens).max(1),
        None => natural,
    };
    let faults = draw_faults(&r.config, &mut rng, n);
    let id = format!("{}-sim{:08x}-{seq}", api.id_prefix(), r.instance);
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
    let stream_options = parsed.stream_options.as_ref();
    let writer = StreamWriter::new(
        api,
        id,
        serde_json::to_string(&model).unwrap_or_else(|_| "\"\"".into()),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        stream_options.is_some_and(|s| s.include_usage),
        stream_options.is_some_and(|s| s.continuous_usage_stats),
        prompt_tokens,
        r.config.reasoning_tokens,
    );
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

/// Fixed facts of one response beside its writer.
struct Stream {
    model: String,
    /// The client asked for a stream (else one JSON answer).
    streaming: bool,
    /// The answer ends at the request's length limit.
    limit_hit: bool,
    /// Seed of the generated words.
    text_seed: u64,
}

#[allow(clippy::too_many_arguments)]
async fn answer(
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
            Event::Rejected => {
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
                out.clear();
                if s.streaming && !started {
                    w.start_stream().await?;
                    started = true;
                    wr.start(&mut out);
                }
                let mut piece = String::new();
                for _ in 0..k {
                    piece.push_str(SIM_WORDS[rng_text.random_range(0..SIM_WORDS.len())]);
                }
                let before = sent;
                sent += k;
                if !s.streaming {
                    text.push_str(&piece);
                    continue;
                }
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
                    return Ok(false);
                }
                if hits(faults.error_event_at) {
                    // The tokens before this write were delivered; the stream then ends
                    // with an error event in the API's form and a well-framed body.
                    wr.error_event(&mut out, "injected error event");
                    w.chunk(out.as_bytes()).await?;
                    w.end_stream().await?;
                    truth.error_event = true;
                    truth.completion_tokens = before;
                    return Ok(true);
                }
                if hits(faults.refusal_at) && wr.refusal(&mut out, before) {
                    // The tokens before this write were delivered; the filter then refuses
                    // in the API's own form and the stream ends normally.
                    w.chunk(out.as_bytes()).await?;
                    w.end_stream().await?;
                    truth.refused = true;
                    truth.completion_tokens = before;
                    return Ok(true);
                }
                wr.tokens(&mut out, &piece, k, before, n);
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
        let body = non_streamed(&wr, s, &text, sent);
        w.full(200, "application/json", body.to_string().as_bytes(), "")
            .await?;
    }
    truth.completion_tokens = sent;
    Ok(true)
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
