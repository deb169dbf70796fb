//! How results read: terminal tables in the draft's layout, and `run.json`.
//!
//! Pure: everything renders from a `RunReport` into a `String` or a JSON value; the caller
//! decides where it goes.

pub mod json;
pub mod terminal;

use crate::engine::generator::GeneratorReport;
use crate::engine::WarmupReport;
use crate::metrics::RunSummary;
use serde::Serialize;

/// Schema version of `run.json` and `requests.jsonl`.
pub const SCHEMA_VERSION: u32 = 1;

/// Which tokenizer counted what (draft 4.4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenizerInfo {
    pub name: String,
    pub source: String,
    pub vocab_size: usize,
    /// `A` (each system's native tokenizer) or `B` (a declared reference tokenizer).
    pub counting_option: String,
    /// How special and template tokens are counted.
    pub special_tokens: String,
}

/// Everything a report shows about one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub started_unix_us: u64,
    pub finished_unix_us: u64,
    pub interrupted: bool,
    pub target_url: String,
    pub model: String,
    pub endpoint: String,
    pub builtin_simulator: bool,
    pub workload: String,
    pub load: String,
    pub seed: u64,
    pub tokenizer: TokenizerInfo,
    pub warmup: WarmupReport,
    pub summary: RunSummary,
    pub generator: GeneratorReport,
}
