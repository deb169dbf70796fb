//! The OpenAI-compatible side of the simulator: routes, request parsing, streamed answers.

use super::config::SimConfig;
use super::server::{Request, ResponseWriter};
use super::truth::{TruthLog, TruthRecord};
use crate::tokenizer::{TiktokenTokenizer, Tokenizer};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Words the simulator "generates", one token each under cl100k.
pub const SIM_WORDS: [&str; 16] = [
    " the", " model", " serves", " tokens", " quickly", " and", " every", " user", " reads",
    " them", " as", " they", " arrive", " on", " time", " here",
];

/// Shared state of the simulated server.
pub struct Responder {
    pub config: SimConfig,
    truth: TruthLog,
    tokenizer: TiktokenTokenizer,
    counter: AtomicU64,
    running: AtomicU64,
    prompt_tokens_total: AtomicU64,
    generation_tokens_total: AtomicU64,
    requests_total: AtomicU64,
}

impl Responder {
    pub fn new(config: SimConfig, truth: TruthLog) -> Self {
        Self {
            config,
            truth,
            tokenizer: TiktokenTokenizer::cl100k(),
            counter: AtomicU64::new(0),
            running: AtomicU64::new(0),
            prompt_tokens_total: AtomicU64::new(0),
            generation_tokens_total: AtomicU64::new(0),
            requests_total: AtomicU64::new(0),
        }
    }

    fn scaled(&self, ms: f64) -> Duration {
        Duration::from_secs_f64((ms / self.config.time_scale.max(1e-6)).max(0.0) / 1e3)
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
            let body = serde_json::json!({"object": "list", "data": [{"id": r.config.model, "object": "model", "owned_by": "servebench-sim"}]});
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
            let text = v
                .get("content")
                .or_else(|| v.get("prompt"))
                .map(text_of)
                .unwrap_or_default();
            let tokens = r.tokenizer.encode(&text);
            let body = serde_json::json!({"tokens": tokens, "count": tokens.len()});
            w.full(200, "application/json", body.to_string().as_bytes(), "")
                .await?
        }
        ("POST", "/v1/chat/completions") => return completion(r, &req, w, true).await,
        ("POST", "/v1/completions") => return completion(r, &req, w, false).await,
        (_, "/v1/chat/completions" | "/v1/completions" | "/health" | "/v1/models" | "/metrics") => {
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

fn metrics_text(r: &Responder) -> String {
    format!(
        "# TYPE sim:num_requests_running gauge\nsim:num_requests_running {}\n# TYPE sim:prompt_tokens_total counter\nsim:prompt_tokens_total {}\n# TYPE sim:generation_tokens_total counter\nsim:generation_tokens_total {}\n# TYPE sim:request_success_total counter\nsim:request_success_total {}\n",
        r.running.load(Ordering::Relaxed),
        r.prompt_tokens_total.load(Ordering::Relaxed),
        r.generation_tokens_total.load(Ordering::Relaxed),
        r.requests_total.load(Ordering::Relaxed),
    )
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
    let prompt_tokens = r.tokenizer.count(&prompt) as u32;
    let n = parsed
        .max_completion_tokens
        .or(parsed.max_tokens)
        .unwrap_or(r.config.default_output_tokens)
        .max(1);
    let seq = r.counter.fetch_add(1, Ordering::Relaxed);
    let id = format!("{}-sim-{seq}", if chat { "chatcmpl" } else { "cmpl" });
    let model = parsed
        .model
        .clone()
        .unwrap_or_else(|| r.config.model.clone());
    let mut rng =
        ChaCha8Rng::seed_from_u64(r.config.seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    r.running.fetch_add(1, Ordering::Relaxed);
    r.prompt_tokens_total
        .fetch_add(prompt_tokens as u64, Ordering::Relaxed);

    let first_delay =
        r.scaled(r.config.ttft_ms + r.config.prefill_ms_per_token * prompt_tokens as f64);
    let mut next = received + first_delay;
    let per_chunk = r.config.tokens_per_chunk.max(1);
    let mut truth = TruthRecord {
        response_id: id.clone(),
        received,
        chunk_writes: Vec::with_capacity((n / per_chunk + 1) as usize),
        prompt_tokens,
        completion_tokens: n,
    };
    let object = if chat {
        "chat.completion.chunk"
    } else {
        "text_completion"
    };
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let include_usage = parsed
        .stream_options
        .as_ref()
        .is_some_and(|s| s.include_usage);
    let continuous = parsed
        .stream_options
        .as_ref()
        .is_some_and(|s| s.continuous_usage_stats);
    let mut token_times_ms: Vec<f64> = Vec::new();
    let mut text = String::new();

    let result: io::Result<()> = async {
        if parsed.stream {
            w.start_stream().await?;
            if chat {
                let role = format!(
                    "data: {{\"id\":\"{id}\",\"object\":\"{object}\",\"created\":{created},\"model\":\"{model}\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"finish_reason\":null}}]}}\n\n"
                );
                w.chunk(role.as_bytes()).await?;
            }
        }
        let mut sent = 0u32;
        let mut payload = String::with_capacity(512);
        while sent < n {
            tokio::time::sleep_until(next.into()).await;
            let k = per_chunk.min(n - sent);
            let mut piece = String::new();
            for _ in 0..k {
                piece.push_str(SIM_WORDS[rng.random_range(0..SIM_WORDS.len())]);
            }
            sent += k;
            let finish = if sent == n { "\"length\"" } else { "null" };
            let now = Instant::now();
            let since_ms = now.duration_since(received).as_secs_f64() * 1e3;
            for _ in 0..k {
                token_times_ms.push(since_ms);
            }
            if parsed.stream {
                payload.clear();
                let body = if chat {
                    format!("\"delta\":{{\"content\":\"{piece}\"}}")
                } else {
                    format!("\"text\":\"{piece}\"")
                };
                let usage = if continuous {
                    format!(",\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{sent},\"total_tokens\":{}}}", prompt_tokens + sent)
                } else {
                    String::new()
                };
                payload.push_str(&format!(
                    "data: {{\"id\":\"{id}\",\"object\":\"{object}\",\"created\":{created},\"model\":\"{model}\",\"choices\":[{{\"index\":0,{body},\"finish_reason\":{finish}}}]{usage}}}\n\n"
                ));
                truth.chunk_writes.push((Instant::now(), k));
                w.chunk(payload.as_bytes()).await?;
            } else {
                text.push_str(&piece);
                truth.chunk_writes.push((now, k));
            }
            let mut gap = r.config.itl_ms;
            if r.config.itl_jitter_ms > 0.0 {
                gap += rng.random_range(-r.config.itl_jitter_ms..=r.config.itl_jitter_ms);
            }
            next += r.scaled(gap.max(0.0)) * k;
        }
        let usage = format!(
            "{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{n},\"total_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":0}}}}",
            prompt_tokens + n
        );
        let timings = if r.config.report_token_times {
            format!(",\"timings\":{{\"predicted_n\":{n},\"token_times_ms\":{}}}", serde_json::to_string(&token_times_ms).unwrap_or_default())
        } else {
            String::new()
        };
        if parsed.stream {
            if include_usage {
                let last = format!(
                    "data: {{\"id\":\"{id}\",\"object\":\"{object}\",\"created\":{created},\"model\":\"{model}\",\"choices\":[],\"usage\":{usage}{timings}}}\n\n"
                );
                w.chunk(last.as_bytes()).await?;
            }
            w.chunk(b"data: [DONE]\n\n").await?;
            w.end_stream().await?;
        } else {
            let choice = if chat {
                serde_json::json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"})
            } else {
                serde_json::json!({"index": 0, "text": text, "finish_reason": "length"})
            };
            let body = serde_json::json!({
                "id": id, "object": if chat { "chat.completion" } else { "text_completion" }, "created": created,
                "model": model, "choices": [choice], "usage": serde_json::from_str::<serde_json::Value>(&usage).unwrap_or_default(),
            });
            w.full(200, "application/json", body.to_string().as_bytes(), "").await?;
        }
        Ok(())
    }
    .await;
    r.running.fetch_sub(1, Ordering::Relaxed);
    if result.is_ok() {
        r.requests_total.fetch_add(1, Ordering::Relaxed);
        r.generation_tokens_total
            .fetch_add(n as u64, Ordering::Relaxed);
    }
    r.truth.push(truth);
    result.map(|_| true)
}
