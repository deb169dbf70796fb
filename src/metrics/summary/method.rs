//! How the summary's figures were obtained, disclosed beside them: the ITL option chosen
//! from the chunks, and where each token count came from (with the per-request token
//! counts the summary adds up).

use crate::metrics::request::ItlOption;
use crate::record::{ChunkTokenSource, RequestRecord, TokenSource};
use serde::Serialize;
use std::collections::BTreeMap;

/// How the ITL samples were formed and why.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct ItlChoice {
    pub option: ItlOption,
    pub description: String,
    pub reason: String,
    /// Share of answer tokens that arrived in single-token chunks.
    pub single_token_share: f64,
    pub mean_tokens_per_chunk: f64,
}

impl ItlChoice {
    /// The report's name for the figure: per token, or per chunk under option A.
    pub fn title(&self) -> &'static str {
        match self.option {
            ItlOption::A => "Time Between Chunks",
            _ => "Inter-Token Latency",
        }
    }
}

/// How token counts were obtained.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct TokenCounting {
    /// Output token count `N`: requests per source.
    pub output_tokens_source: BTreeMap<String, u64>,
    /// Tokens per chunk: requests per source.
    pub chunk_tokens_source: BTreeMap<String, u64>,
    /// Input tokens: `server_usage` when the server reported prompt tokens, else the tokenizer.
    pub input_tokens_source: String,
}

/// Chooses the ITL option per draft B.2.1: server per-token times when every request has
/// them; direct (B) when more than 90 % of the answer tokens arrived in single-token chunks;
/// time between chunks (A) otherwise. Counting tokens rather than chunks matters: with one
/// 8-token chunk per nine single-token ones, 90 % of chunks carry one token but almost half
/// of the tokens arrive in bulk.
pub fn choose_itl(records: &[&RequestRecord]) -> ItlChoice {
    let mut chunks = ChunkShares::default();
    for r in records {
        chunks.add(r);
    }
    let has_server_times = !records.is_empty() && records.iter().all(|r| has_server_times(r));
    choose_itl_from(&chunks, has_server_times)
}

/// Whether the server gave per-token times for `r` (ITL option C).
pub fn has_server_times(r: &RequestRecord) -> bool {
    r.server_timing
        .as_ref()
        .and_then(|t| t.token_times_ms.as_ref())
        .is_some_and(|t| !t.is_empty())
}

/// Chunks and the tokens they carried, for the ITL choice.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChunkShares {
    pub chunks: u64,
    pub single_tokens: u64,
    pub tokens: u64,
}

impl ChunkShares {
    pub fn add(&mut self, r: &RequestRecord) {
        for c in &r.chunks {
            self.chunks += 1;
            self.tokens += c.tokens as u64;
            if c.tokens == 1 {
                self.single_tokens += 1;
            }
        }
    }
}

/// [`choose_itl`] from counts already made.
pub fn choose_itl_from(c: &ChunkShares, has_server_times: bool) -> ItlChoice {
    let (chunks, single_tokens, tokens) = (c.chunks, c.single_tokens, c.tokens);
    let share = if tokens == 0 {
        1.0
    } else {
        single_tokens as f64 / tokens as f64
    };
    let mean = if chunks == 0 {
        0.0
    } else {
        tokens as f64 / chunks as f64
    };
    let (option, reason) = if has_server_times {
        (
            ItlOption::C,
            "the server reported per-token times for every request".to_owned(),
        )
    } else if share > 0.9 {
        (
            ItlOption::B,
            format!(
                "{:.1} % of answer tokens arrived in single-token chunks (> 90 %): direct measurement",
                share * 100.0
            ),
        )
    } else {
        (
            ItlOption::A,
            format!(
                "only {:.1} % of answer tokens arrived in single-token chunks ({mean:.2} tokens per chunk) and the server gave no per-token times",
                share * 100.0
            ),
        )
    };
    ItlChoice {
        option,
        description: option.describe().to_owned(),
        reason,
        single_token_share: share,
        mean_tokens_per_chunk: mean,
    }
}

/// Input tokens of a request: the server's count when it gave one.
pub fn input_tokens(r: &RequestRecord) -> u64 {
    r.usage_prompt_tokens().unwrap_or(r.input_tokens as u64)
}

/// Output tokens a request delivered (a failed one keeps what it received).
pub(crate) fn delivered_tokens(r: &RequestRecord) -> u64 {
    if r.outcome.is_ok() {
        r.output_tokens as u64
    } else {
        r.chunks.iter().map(|c| c.tokens as u64).sum::<u64>() + r.reasoning_tokens as u64
    }
}

/// Answer tokens a request delivered.
pub(crate) fn delivered_answer_tokens(r: &RequestRecord) -> u64 {
    if r.outcome.is_ok() {
        r.answer_tokens() as u64
    } else {
        r.chunks.iter().map(|c| c.tokens as u64).sum()
    }
}

pub(super) fn token_counting(ok: &[&RequestRecord]) -> TokenCounting {
    let mut tally = TokenSources::default();
    for r in ok {
        tally.add(r);
    }
    tally.finish()
}

/// How each successful request's tokens were counted, one request at a time.
#[derive(Debug, Clone, Default)]
pub struct TokenSources {
    by_out: BTreeMap<String, u64>,
    by_chunk: BTreeMap<String, u64>,
    requests: u64,
    server_prompt_counts: u64,
}

impl TokenSources {
    /// Counts a successful request.
    pub fn add(&mut self, r: &RequestRecord) {
        let o = match r.output_tokens_source {
            TokenSource::ServerUsage => "server_usage",
            TokenSource::Tokenizer => "tokenizer",
            TokenSource::None => "none",
        };
        *self.by_out.entry(o.into()).or_default() += 1;
        let c = match r.chunk_tokens_source {
            ChunkTokenSource::StreamedUsage => "streamed_usage",
            ChunkTokenSource::OnePerChunk => "one_per_chunk",
            ChunkTokenSource::Tokenizer => "tokenizer",
        };
        *self.by_chunk.entry(c.into()).or_default() += 1;
        self.requests += 1;
        if r.usage_prompt_tokens().is_some() {
            self.server_prompt_counts += 1;
        }
    }

    pub fn finish(&self) -> TokenCounting {
        TokenCounting {
            output_tokens_source: self.by_out.clone(),
            chunk_tokens_source: self.by_chunk.clone(),
            input_tokens_source: if self.requests > 0 && self.server_prompt_counts == self.requests
            {
                "server_usage".into()
            } else {
                "tokenizer".into()
            },
        }
    }
}
