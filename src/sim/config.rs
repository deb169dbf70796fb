//! Parameters of the simulated server.

use serde::Serialize;

/// How the simulator answers. Times are in ms of simulated time; `time_scale` divides them
/// all (2.0 runs twice as fast), so tests can run quickly with realistic shapes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimConfig {
    /// Model name reported in responses and `/v1/models`.
    pub model: String,
    /// Time from a request's arrival to its first token, ms.
    pub ttft_ms: f64,
    /// Extra time to first token per prompt token, ms (prefill cost).
    pub prefill_ms_per_token: f64,
    /// Time between tokens, ms.
    pub itl_ms: f64,
    /// Uniform jitter added to each gap, ± ms.
    pub itl_jitter_ms: f64,
    /// Tokens per streamed chunk (> 1 imitates speculative decoding or stream intervals).
    pub tokens_per_chunk: u32,
    /// Output length when the request sets no `max_tokens`.
    pub default_output_tokens: u32,
    /// Divides every delay.
    pub time_scale: f64,
    pub seed: u64,
    /// Report per-token emit times in a `timings.token_times_ms` extension (ITL option C).
    pub report_token_times: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            model: "sim-llama".into(),
            ttft_ms: 50.0,
            prefill_ms_per_token: 0.02,
            itl_ms: 10.0,
            itl_jitter_ms: 0.0,
            tokens_per_chunk: 1,
            default_output_tokens: 128,
            time_scale: 1.0,
            seed: 0,
            report_token_times: false,
        }
    }
}
