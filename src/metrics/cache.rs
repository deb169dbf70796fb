//! Prefix-cache use as the responses report it: usage `prompt_tokens_details.cached_tokens`
//! (OpenAI, vLLM, SGLang) or llama.cpp's `timings.cache_n`, summed over requests. The
//! prefix-cache test reads it per level, the session summary per session.

use crate::record::{Phase, RequestRecord};
use serde::{Deserialize, Serialize};

/// Prefix-cache use reported in the responses of a level's measured requests: usage
/// `prompt_tokens_details.cached_tokens` (OpenAI, vLLM, SGLang) or llama.cpp's
/// `timings.cache_n`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CacheFigures {
    /// Requests whose response said how many prompt tokens were cached.
    pub requests_reporting: u64,
    /// Prompt tokens of those requests (usage `prompt_tokens`, else the client's count).
    pub prompt_tokens: u64,
    /// Of those, tokens served from the cache.
    pub cached_tokens: u64,
    /// Requests with more than half of their prompt served from the cache: a replayed
    /// prompt, where a chat template's common first tokens alone never come near half.
    #[serde(default)]
    pub mostly_cached_requests: u64,
}

impl CacheFigures {
    /// Cached ÷ prompt tokens, 0-1; `None` when no response reported it.
    pub fn hit_rate(&self) -> Option<f64> {
        (self.requests_reporting > 0 && self.prompt_tokens > 0)
            .then(|| self.cached_tokens as f64 / self.prompt_tokens as f64)
    }

    /// Sums what the measured, completed records report.
    pub fn of(records: &[RequestRecord]) -> Self {
        let mut out = Self::default();
        for r in records {
            out.add(r);
        }
        out
    }

    /// Sums what the measured, completed records among `records` report.
    pub fn of_measured<'a>(records: impl IntoIterator<Item = &'a RequestRecord>) -> Self {
        let mut out = Self::default();
        for r in records {
            out.add(r);
        }
        out
    }

    /// These figures when some response reported its cached tokens, else `None` (a share
    /// nobody reported is unknown, not zero).
    pub fn reported(self) -> Option<Self> {
        (self.requests_reporting > 0).then_some(self)
    }

    /// Adds what one record reports, when it is measured and completed.
    pub fn add(&mut self, r: &RequestRecord) {
        if r.phase != Phase::Measure || !r.outcome.is_ok() {
            return;
        }
        if let Some((prompt, cached)) = prompt_and_cached(r) {
            self.requests_reporting += 1;
            self.prompt_tokens += prompt;
            self.cached_tokens += cached;
            if cached * 2 > prompt {
                self.mostly_cached_requests += 1;
            }
        }
    }
}

/// A response's prompt tokens and, of them, the cached ones; `None` when it did not say
/// how many were cached.
pub fn prompt_and_cached(r: &RequestRecord) -> Option<(u64, u64)> {
    let usage = r.usage.as_ref();
    let cached = usage
        .and_then(|u| u.pointer("/prompt_tokens_details/cached_tokens"))
        .and_then(|v| v.as_u64())
        .or_else(|| r.server_timing.as_ref().and_then(|t| t.cache_n))?;
    let prompt = usage
        .and_then(|u| u.get("prompt_tokens"))
        .and_then(|v| v.as_u64())
        .or_else(|| {
            // llama.cpp: prompt_n counts only the tokens it had to process.
            let t = r.server_timing.as_ref()?;
            Some(t.prompt_n? + t.cache_n.unwrap_or(0))
        })
        .unwrap_or(r.input_tokens as u64);
    Some((prompt, cached.min(prompt)))
}
