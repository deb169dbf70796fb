//! What every request of a run shares on the wire, owned by the client: the body options,
//! the retry policy and the clock that stamps arrivals.

use serde::Serialize;

/// Options that shape every request body.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema, serde::Deserialize)]
pub struct RequestOptions {
    /// Ask the server to ignore EOS so outputs reach `max_tokens`.
    pub ignore_eos: bool,
    /// `false` sends `cache_prompt: false` (llama.cpp) so no prompt reuse happens.
    pub prefix_cache: bool,
    /// Ask for cumulative usage in every chunk (vLLM `continuous_usage_stats`).
    pub usage_per_chunk: bool,
    pub temperature: Option<f64>,
    /// Extra top-level JSON fields merged into every body.
    pub extra_body: Vec<(String, serde_json::Value)>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self {
            ignore_eos: true,
            prefix_cache: true,
            usage_per_chunk: false,
            temperature: Some(0.0),
            extra_body: Vec::new(),
        }
    }
}

/// When a request that was refused is tried again (`--retry`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RetryPolicy {
    /// Most retries per request (0: never retry).
    pub max_retries: u32,
    /// HTTP statuses that are retried.
    pub statuses: Vec<u16>,
    /// Also retry when no connection could be made.
    pub connect_errors: bool,
    /// Longest wait before a retry, honouring `Retry-After` up to it, s.
    pub max_wait_s: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 0,
            statuses: vec![429, 503],
            connect_errors: false,
            max_wait_s: 30.0,
        }
    }
}

/// Which clock timestamps chunk arrivals.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    clap::ValueEnum,
    Default,
    schemars::JsonSchema,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalClock {
    /// The kernel's receive timestamp of the bytes (`SO_TIMESTAMPNS`; Linux), falling back
    /// to the read's return where the platform gives none.
    #[default]
    Kernel,
    /// The moment `read` returned (moves with the client's own load).
    Read,
}
