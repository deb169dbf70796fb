//! The OpenAI-compatible side of the simulator: routes, request parsing, streamed answers.
//!
//! Tokens come from the engine (`engine.rs`) or, in fixed-timing mode, from a per-request
//! timer; either way they arrive as [`Event`](super::engine::Event)s and are written here,
//! one HTTP chunk per event, with guardrail delay, output smoothing and fault injection
//! applied on the way out.
//!
//! `request` reads what a request asks for, `generation` draws its length and faults and
//! starts its tokens, `answer` writes them out (`tool_answer`: a tool call as one body).

mod answer;
mod generation;
mod pooling;
mod request;
mod tool_answer;
pub mod vision;

use super::config::SimConfig;
use super::engine::{self, EngineHandle, Stats};
use super::server::{Request, ResponseWriter};
use super::truth::TruthLog;
use super::wire::SimApi;
use crate::tokenizer::{TiktokenTokenizer, Tokenizer};
pub use generation::completion;
use request::text_of;
use std::fmt::Write as _;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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
    /// Slots of the non-generative routes (`max_num_seqs` passes at once; `pooling`).
    pooling_slots: tokio::sync::Semaphore,
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
            config: config.clone(),
            truth,
            tokenizer: TiktokenTokenizer::cl100k(),
            counter: AtomicU64::new(0),
            engine,
            pooling_slots: tokio::sync::Semaphore::new(config.max_num_seqs.max(1) as usize),
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
            let body = tokenize(r, &req.body);
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
        ("GET", p @ ("/props" | "/info" | "/get_model_info")) => {
            let body = self_description(r, p);
            w.full(200, "application/json", body.to_string().as_bytes(), "")
                .await?
        }
        ("POST", p) if pooling::PoolingApi::for_path(p).is_some() => {
            let api = pooling::PoolingApi::for_path(p).expect("checked");
            return pooling::pooling(r, &req, w, api).await;
        }
        ("POST", p) if SimApi::for_path(p).is_some() => {
            let api = SimApi::for_path(p).expect("checked");
            return completion(r, &req, w, api).await;
        }
        // A known route, the wrong method.
        (_, p)
            if SimApi::for_path(p).is_some()
                || pooling::PoolingApi::for_path(p).is_some()
                || matches!(
                    p,
                    "/health" | "/v1/models" | "/metrics" | "/tokenize" | "/reset_prefix_cache"
                ) =>
        {
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

/// The tokens of a `/tokenize` body's text.
fn tokenize(r: &Responder, body: &[u8]) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
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
    serde_json::json!({"tokens": tokens, "count": tokens.len()})
}

/// The engines' descriptions of themselves at `path` (what `runner::ready` reads for the
/// native routes: llama.cpp's `/props`, TGI's `/info`, SGLang's `/get_model_info`), naming
/// the simulator so discovery never mistakes it for them.
fn self_description(r: &Responder, path: &str) -> serde_json::Value {
    match path {
        "/props" => {
            serde_json::json!({"model_path": r.config.model, "build_info": format!("servebench-sim {}", env!("CARGO_PKG_VERSION")), "default_generation_settings": {"n_ctx": r.config.kv_capacity_tokens}, "total_slots": r.config.max_num_seqs})
        }
        "/info" => {
            serde_json::json!({"model_id": r.config.model, "version": env!("CARGO_PKG_VERSION"), "max_input_tokens": r.config.kv_capacity_tokens, "router": "servebench-sim"})
        }
        _ => serde_json::json!({"model_path": r.config.model, "is_generation": true}),
    }
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
