//! What one request left behind: the domain record every later stage reads.
//!
//! A `RequestRecord` holds times as nanosecond offsets on the run's clock
//! ([`crate::clock::RunClock`]). It is the single source of truth for metrics: nothing is
//! summarised while the run is going, so every figure can be recomputed from
//! `requests.jsonl` later. The wire form written to disk lives in [`wire`].

pub mod outcome;
pub mod wire;

pub use outcome::{FailureKind, Outcome};

use crate::clock::Nanos;
use serde::{Deserialize, Serialize};

/// One content event (a chunk with non-blank text) as it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Arrival, taken when the bytes completing the event were read (before JSON parsing).
    pub at: Nanos,
    /// Output tokens this chunk carried (see [`TokenSource`] for how it was counted).
    pub tokens: u32,
    /// Bytes of text the chunk carried.
    pub bytes: u32,
}

/// Which part of the run a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Warm-up (draft 4.5): recorded, never summarised.
    Warmup,
    /// Warm-up verification probe.
    Probe,
    /// The measured run.
    #[default]
    Measure,
}

/// Where the output token count `N` of a request came from (declared in every report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's `usage.completion_tokens`.
    #[default]
    ServerUsage,
    /// The reference tokenizer on the concatenated output text.
    Tokenizer,
    /// Nothing counted (no usage and no text).
    None,
}

/// How the per-chunk token counts were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ChunkTokenSource {
    /// Cumulative usage streamed in every chunk (vLLM `continuous_usage_stats`).
    StreamedUsage,
    /// Usage equals the number of content chunks: one token each.
    #[default]
    OnePerChunk,
    /// The reference tokenizer run once over the whole output with byte offsets; each token
    /// goes to the chunk holding its last byte, scaled to the server's count when they differ.
    Tokenizer,
}

/// Timings the server reported about this request (llama.cpp `timings`, simulator truth).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTiming {
    /// Prompt tokens the server processed (not counting cached ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_n: Option<u64>,
    /// Server time spent on the prompt (prefill), in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_ms: Option<f64>,
    /// Tokens generated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_n: Option<u64>,
    /// Server time spent generating, in ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_ms: Option<f64>,
    /// Server's generation rate, tokens/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_per_second: Option<f64>,
    /// Prompt tokens served from the server's cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_n: Option<u64>,
    /// Per-token emit times the server reported (ms since it received the request), when it
    /// reports them; enables ITL option C (draft 4.6.3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_times_ms: Option<Vec<f64>>,
}

/// Everything measured about one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestRecord {
    /// Position in the workload sequence (0-based, warm-up requests included).
    pub id: u64,
    pub phase: Phase,
    /// Request class (fairness), when the workload has classes.
    pub class: Option<String>,
    /// Multi-turn: (session id, 0-based turn).
    pub session: Option<(u64, u32)>,
    /// The `id` the server put in its chunks, to join with server logs.
    pub response_id: Option<String>,
    /// Open loop: when the plan said to send. `None` in closed loop.
    pub scheduled_at: Option<Nanos>,
    /// When the request began waiting for a connection.
    pub queued_at: Nanos,
    /// Time spent getting a connection (pool wait, TCP and TLS set-up), ns.
    pub connect_ns: Nanos,
    /// Whether the connection was reused from the keep-alive pool.
    pub reused_connection: bool,
    /// Just before the request bytes were written.
    pub sent_at: Nanos,
    /// First response byte (status line).
    pub first_byte_at: Option<Nanos>,
    /// Content events (non-empty text), in arrival order.
    pub chunks: Vec<Chunk>,
    /// Index in `chunks` of the first one with non-blank text: the first token (draft
    /// 5.1.3.1 excludes whitespace-only output). `None` when the answer was all blank.
    pub first_content: Option<usize>,
    /// Reasoning events (`reasoning_content` / `reasoning` deltas), in arrival order.
    pub reasoning_chunks: Vec<Chunk>,
    /// When the response ended (or failed).
    pub finished_at: Nanos,
    pub outcome: Outcome,
    /// Input tokens by the workload's tokenizer.
    pub input_tokens: u32,
    /// `max_tokens` sent.
    pub max_tokens: u32,
    /// Output tokens `N`, from `output_tokens_source`.
    pub output_tokens: u32,
    pub output_tokens_source: TokenSource,
    pub chunk_tokens_source: ChunkTokenSource,
    /// `usage` exactly as the server sent it.
    pub usage: Option<serde_json::Value>,
    pub server_timing: Option<ServerTiming>,
    pub finish_reason: Option<String>,
    /// HTTP status of the response, when one came.
    pub http_status: Option<u16>,
}

impl RequestRecord {
    /// Time of the first content event with non-blank text.
    pub fn first_token_at(&self) -> Option<Nanos> {
        self.chunks.get(self.first_content?).map(|c| c.at)
    }

    /// Chunks from the first token on (leading whitespace-only chunks dropped).
    pub fn token_chunks(&self) -> &[Chunk] {
        match self.first_content {
            Some(i) => &self.chunks[i..],
            None => &[],
        }
    }

    /// Time of the last content event.
    pub fn last_token_at(&self) -> Option<Nanos> {
        self.chunks.last().map(|c| c.at)
    }

    /// Time of the first reasoning event.
    pub fn first_reasoning_at(&self) -> Option<Nanos> {
        self.reasoning_chunks.first().map(|c| c.at)
    }

    /// Prompt tokens the server counted, if it said.
    pub fn usage_prompt_tokens(&self) -> Option<u64> {
        self.usage.as_ref()?.get("prompt_tokens")?.as_u64()
    }

    /// Completion tokens the server counted, if it said.
    pub fn usage_completion_tokens(&self) -> Option<u64> {
        self.usage.as_ref()?.get("completion_tokens")?.as_u64()
    }

    /// Prompt tokens served from the server's prefix cache, if it said.
    pub fn usage_cached_tokens(&self) -> Option<u64> {
        self.usage
            .as_ref()?
            .get("prompt_tokens_details")?
            .get("cached_tokens")?
            .as_u64()
    }
}

#[cfg(test)]
impl RequestRecord {
    /// A completed request for tests: sent at `sent_ms`, one token at each of `token_ms`
    /// (ms on the run clock), `input_tokens` prompt tokens, HTTP 200.
    pub fn completed_for_tests(id: u64, sent_ms: u64, token_ms: &[u64], input_tokens: u32) -> Self {
        const MS: u64 = 1_000_000;
        RequestRecord {
            id,
            sent_at: sent_ms * MS,
            chunks: token_ms
                .iter()
                .map(|&t| Chunk {
                    at: t * MS,
                    tokens: 1,
                    bytes: 3,
                })
                .collect(),
            first_content: (!token_ms.is_empty()).then_some(0),
            finished_at: token_ms.last().copied().unwrap_or(sent_ms) * MS,
            output_tokens: token_ms.len() as u32,
            max_tokens: token_ms.len() as u32,
            input_tokens,
            http_status: Some(200),
            ..Default::default()
        }
    }
}
