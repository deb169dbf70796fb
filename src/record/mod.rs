//! What one request left behind: the domain record every later stage reads.
//!
//! A `RequestRecord` holds times as nanosecond offsets on the run's clock
//! ([`crate::clock::RunClock`]). It is the single source of truth for metrics: every figure
//! can be recomputed from `requests.jsonl` later. A record is built by the client as a
//! [`draft::Draft`], settled once (token counts, per-request figures: [`settle`]) and then
//! written once; nothing reads it back to patch it. The wire form lives in [`wire`]; facts
//! about the run as a whole (warm-up, the generator's own health) live in [`run`].

pub mod draft;
pub mod outcome;
pub mod run;
pub mod settle;
pub mod speed;
pub mod wire;

pub use draft::Draft;
pub use outcome::{FailureKind, Outcome};

use crate::clock::Nanos;
use schemars::JsonSchema;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Warm-up (draft 4.5): recorded, never summarised.
    Warmup,
    /// Warm-up verification probe.
    Probe,
    /// Isolated prefill profiling at concurrency 1 (the fluidity-index's prefill deadline).
    Profile,
    /// The measured run.
    #[default]
    Measure,
}

/// Where the output token count `N` of a request came from (declared in every report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
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

/// Images and audio a request carried, and what its input-token count means then.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MediaCounts {
    /// Images sent.
    pub images: u32,
    /// Encoded bytes of the images (before base64).
    pub image_bytes: u64,
    /// Audio clips sent.
    pub audio: u32,
    /// Encoded bytes of the audio clips (before base64).
    pub audio_bytes: u64,
}

impl MediaCounts {
    /// Whether the request carried any image or clip.
    pub fn any(&self) -> bool {
        self.images + self.audio > 0
    }
}

/// Where a record's `input_tokens` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputTokenSource {
    /// The workload's tokenizer on the prompt text (every text-only request).
    #[default]
    Workload,
    /// The server's `usage.prompt_tokens`: a request with images or audio, whose tokens
    /// only the server's model can count.
    ServerUsage,
    /// A request with images or audio whose answer had no usage: the text's tokens alone
    /// (the images' are not counted).
    TextOnly,
}

/// Timings the server reported about this request (llama.cpp `timings`, simulator truth).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
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

/// Request bodies up to this size go to the kernel whole in the write that starts them: the
/// smallest send buffer Linux gives a TCP socket before autotuning (`tcp_wmem`'s default,
/// 16 KiB). See [`RequestRecord::submitted_at`].
pub const ONE_WRITE_BYTES: u64 = 16 * 1024;

/// Everything measured about one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestRecord {
    /// Position in its phase's workload sequence (0-based). Warm-up requests come from a
    /// stream of their own (seed mixed with a constant), so the measured requests of one seed
    /// are the same, in the same order, whatever the warm-up took.
    pub id: u64,
    pub phase: Phase,
    /// Request class (fairness), when the workload has classes.
    pub class: Option<String>,
    /// Multi-turn: (session id, 0-based turn).
    pub session: Option<(u64, u32)>,
    /// Sessions: the steps (turns) the session plans (0: not recorded).
    pub session_steps: u32,
    /// Agent sessions: the request's branch in its step's fan-out (0-based).
    pub branch: u32,
    /// Sessions: the tool time planned after the previous step's answers, ms.
    pub planned_tool_ms: f64,
    /// Sessions: the think time planned after the previous turn (and its tools), ms.
    pub planned_think_ms: f64,
    /// The `id` the server put in its chunks, to join with server logs.
    pub response_id: Option<String>,
    /// Open loop: when the plan said to send. `None` in closed loop.
    pub scheduled_at: Option<Nanos>,
    /// When the request was attempted: it began waiting for a connection. Always set, also
    /// for requests that never reached the server.
    pub queued_at: Nanos,
    /// Time spent getting a connection (pool wait, TCP and TLS set-up), ns.
    pub connect_ns: Nanos,
    /// Whether the connection was reused from the keep-alive pool.
    pub reused_connection: bool,
    /// Just before the request bytes were written; `None` when they never were (no
    /// connection could be made).
    pub sent_at: Option<Nanos>,
    /// When the write of the request's last byte returned: T_submit, where TTFT and E2E
    /// start ([`RequestRecord::submitted_at`]); `body_sent_at − sent_at` is the time to send
    /// it (the upload, kept beside TTFT). `None` when it was never all written.
    pub body_sent_at: Option<Nanos>,
    /// Bytes of the request body (JSON, base64 media included).
    pub body_bytes: u64,
    /// Images and audio the request carried.
    pub media: MediaCounts,
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
    /// Input tokens: by the workload's tokenizer, or for a request with images or audio the
    /// server's `usage.prompt_tokens` (`input_tokens_source` says which).
    pub input_tokens: u32,
    pub input_tokens_source: InputTokenSource,
    /// A request with images or audio: its text's tokens by the workload's tokenizer.
    pub text_input_tokens: Option<u32>,
    /// `max_tokens` sent.
    pub max_tokens: u32,
    /// Items a non-generative request carried (embeddings inputs, rerank documents; the
    /// rerank query not counted); 0 for the generative APIs. Such a request has no
    /// chunks: its latency is the whole answer's.
    pub items: u32,
    /// Output tokens `N`: every token generated, reasoning included (from
    /// `output_tokens_source`). For a failed request, what was counted before it ended.
    pub output_tokens: u32,
    /// Of `output_tokens`, those spent on reasoning (`reasoning_content` / `reasoning`
    /// deltas, or `completion_tokens_details.reasoning_tokens`).
    pub reasoning_tokens: u32,
    pub output_tokens_source: TokenSource,
    pub chunk_tokens_source: ChunkTokenSource,
    /// `usage` exactly as the server sent it.
    pub usage: Option<serde_json::Value>,
    pub server_timing: Option<ServerTiming>,
    pub finish_reason: Option<String>,
    /// Tool calls the server's answer made (distinct calls, however many events each took);
    /// 0 for a text answer. Their arguments are output: they are in `chunks` and
    /// `output_tokens` like answer text.
    pub tool_calls: u32,
    /// HTTP status of the response, when one came.
    pub http_status: Option<u16>,
    /// Per-request figures computed when the record settled (see [`settle`]).
    pub derived: Option<Derived>,
    /// Times the request was retried (`--retry`); its latency counts from the first attempt.
    pub retries: u32,
}

/// Per-request figures, computed once when the record settles and written with it, so
/// dashboards need not recompute them. Their parameters (deadlines, prefill curve) are known
/// before the measured phase starts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Derived {
    /// First answer token − T_submit (the request's last byte written), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// (E2E − TTFT) / (answer tokens − 1), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// Last answer token − T_submit (the request's last byte written), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
    /// How long the user was left waiting past a token deadline, ms (for a request that
    /// failed: up to the moment it ended).
    pub user_idle_ms: f64,
    /// Tokens that arrived after their deadline (for a failed request, the next token that
    /// never came counts as one).
    pub deadline_misses: u32,
    /// Etalon fluidity-index (0–1); `None` when no prefill curve was available. A failed
    /// request counts its undelivered tokens as missed deadlines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fluidity: Option<f64>,
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

    /// When the answer ended: the last content event, or for a non-generative request
    /// (`items > 0`, answered whole) the end of its body.
    pub fn answer_end_at(&self) -> Option<Nanos> {
        if self.items > 0 {
            (self.finished_at > 0).then_some(self.finished_at)
        } else {
            self.last_token_at()
        }
    }

    /// When the server had taken the whole input in: the first token (answer or reasoning),
    /// or for a non-generative request its answer (`items > 0` and completed).
    pub fn input_done_at(&self) -> Option<Nanos> {
        if self.items > 0 {
            return self.outcome.is_ok().then_some(self.finished_at);
        }
        let first = self
            .chunks
            .first()
            .into_iter()
            .chain(self.reasoning_chunks.first());
        first.map(|c| c.at).min()
    }

    /// T_submit, where TTFT, E2E and the figures from them start: when the write of the
    /// request's final byte returned (the draft, Appendix B.1.1: "time of sending final byte
    /// of HTTP request"), so an upload of images or audio is not counted as the server's
    /// latency. Falls back to `sent_at` where the client sends one message and stamps no
    /// separate end (gRPC, WebSocket) or the body was never all written.
    ///
    /// A request of at most [`ONE_WRITE_BYTES`] is handed to the kernel whole by the one
    /// write that starts it: its last byte leaves at `sent_at` (to the write's microseconds),
    /// and the stamp taken after that write returns would only add the client's own
    /// scheduling delay, which can put it after the server already answered (seen on a
    /// loaded machine: TTFT up to 1.6 ms below the simulator's prefill). A larger body's last
    /// byte leaves once the server has read the rest: its end is stamped.
    pub fn submitted_at(&self) -> Option<Nanos> {
        if self.body_bytes <= ONE_WRITE_BYTES {
            return self.sent_at.or(self.body_sent_at);
        }
        self.body_sent_at.or(self.sent_at)
    }

    /// Time to send the request (first byte written → last byte written), ms.
    pub fn upload_ms(&self) -> Option<f64> {
        Some((self.body_sent_at? as f64 - self.sent_at? as f64).max(0.0) / 1e6)
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

    /// Output tokens that were the answer (not reasoning).
    pub fn answer_tokens(&self) -> u32 {
        self.output_tokens.saturating_sub(self.reasoning_tokens)
    }

    /// About how many bytes this record holds in memory: the struct, its chunks' vectors and
    /// its strings and usage (an estimate for a memory budget, not an exact count).
    pub fn approx_bytes(&self) -> u64 {
        // Lengths, not capacities: a record read back from requests.jsonl (`report`) must
        // reach the budget where the run did.
        let chunks = self.chunks.len() + self.reasoning_chunks.len();
        let strings = [&self.class, &self.response_id, &self.finish_reason]
            .iter()
            .map(|s| s.as_ref().map_or(0, |s| s.len()))
            .sum::<usize>();
        // A usage object is a small map: a few hundred bytes of keys, values and nodes.
        let usage = if self.usage.is_some() { 512 } else { 0 };
        (std::mem::size_of::<Self>() + chunks * std::mem::size_of::<Chunk>() + strings + usage)
            as u64
    }

    /// When the request was attempted: its planned send time in open loop, else when it
    /// began waiting for a connection. Real for every record, sent or not.
    pub fn attempted_at(&self) -> Nanos {
        self.scheduled_at
            .map_or(self.queued_at, |s| s.min(self.queued_at))
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
            queued_at: sent_ms * MS,
            sent_at: Some(sent_ms * MS),
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
