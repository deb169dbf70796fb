//! Maps each serving engine's `/metrics` names onto one set of common fields.
//!
//! vLLM, SGLang, TGI, llama.cpp, Triton with the TensorRT-LLM backend and trtllm-serve all
//! report queue depth, batch size, KV-cache use and token counters, under different names,
//! units and meanings (llama.cpp's prompt counter excludes cached tokens, Triton times in
//! milliseconds, TGI's per-token histogram is a per-request mean that includes prefill).
//! This module hides those differences so a run report can compare the server's view with
//! the client's. A field the engine does not publish stays `None`, never 0: a missing
//! source must read as missing. Names follow `SERVER-FORMATS.md` section 1.
//!
//! Counters are cumulative since the server started;
//! [`window_delta`](super::window::window_delta) turns two samples (start and end of a
//! measurement window) into what happened inside the window.
//!
//! This file holds the common fields and engine detection; each engine's reader is in
//! `engines/readers.rs`.

use serde::{Deserialize, Serialize};

use super::histogram::Histogram;
use super::prometheus::Scrape;

mod readers;
#[cfg(test)]
mod tests;

use readers::{read_llama_cpp, read_sglang, read_tgi, read_triton, read_trtllm_serve, read_vllm};

/// The serving engine behind a `/metrics` page, told apart by metric name prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// vLLM (V1, and the older V0 names); also servebench's simulator.
    Vllm,
    Sglang,
    /// Hugging Face Text Generation Inference.
    Tgi,
    LlamaCpp,
    /// Triton Inference Server, usually with the TensorRT-LLM backend.
    TritonTrtLlm,
    /// TensorRT-LLM's own OpenAI server (`/prometheus/metrics`).
    TrtllmServe,
    Unknown,
}

/// Name prefixes that identify each engine, checked against every family name.
const PREFIXES: [(Engine, &str); 6] = [
    (Engine::Vllm, "vllm:"),
    (Engine::Sglang, "sglang:"),
    (Engine::Tgi, "tgi_"),
    (Engine::LlamaCpp, "llamacpp:"),
    // `nv_inference_*`, `nv_trt_llm_*`, `nv_gpu_*`, `nv_energy_*`: all Triton.
    (Engine::TritonTrtLlm, "nv_"),
    (Engine::TrtllmServe, "trtllm_"),
];

/// Unit of the prefix-cache hit and query counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheUnit {
    Tokens,
    /// trtllm-serve counts reused and missed KV-cache blocks, not tokens.
    Blocks,
}

/// What one observation of the ITL histogram is; engines differ, and only `InterToken` is
/// comparable with the client's inter-token latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItlKind {
    /// One observation per gap between output tokens (vLLM; SGLang, whose buckets count
    /// each token of a multi-token chunk at chunk interval ÷ tokens).
    InterToken,
    /// One observation per request: its mean time per output token after the first
    /// (trtllm-serve's `time_per_output_token_seconds`).
    PerRequestTpot,
    /// One observation per request: its mean time per token, prefill included (TGI).
    PerRequestTpotWithPrefill,
}

/// One scrape of a server, in common fields. Counters (`*_total`) are cumulative since the
/// server started; gauges are instantaneous. Every field is `None` when the engine does not
/// publish it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// Requests in the running batch (count, summed over data-parallel ranks).
    pub running: Option<f64>,
    /// Requests queued, not yet scheduled (count).
    pub waiting: Option<f64>,
    /// Requests swapped out to CPU (count; vLLM V0 only).
    pub swapped: Option<f64>,
    /// KV-cache usage as a fraction 0–1 (mean over ranks).
    pub kv_cache_usage: Option<f64>,
    /// Preemptions (vLLM) or retractions (SGLang) since start (count).
    pub preemptions_total: Option<f64>,
    /// Prefix-cache lookups since start, in `prefix_cache_unit`.
    pub prefix_cache_queries_total: Option<f64>,
    /// Prefix-cache hits since start, in `prefix_cache_unit`.
    pub prefix_cache_hits_total: Option<f64>,
    /// Unit of the two prefix-cache counters; `Some` whenever both are.
    pub prefix_cache_unit: Option<CacheUnit>,
    /// The engine's own hit-rate gauge, 0–1 (SGLang, trtllm-serve, vLLM V0); its window is
    /// the engine's choice, so prefer
    /// [`ServerDelta::prefix_cache_hit_rate`](super::window::ServerDelta::prefix_cache_hit_rate).
    pub cache_hit_rate_gauge: Option<f64>,
    /// Prompt tokens since start, cached ones included (tokens).
    pub prompt_tokens_total: Option<f64>,
    /// Prompt tokens served from the prefix cache since start (tokens).
    pub prompt_tokens_cached_total: Option<f64>,
    /// Output tokens since start (tokens). llama.cpp adds a request's tokens only when it
    /// completes, so its deltas lag.
    pub generation_tokens_total: Option<f64>,
    /// Requests finished successfully since start (count). llama.cpp has no such counter.
    pub requests_finished_total: Option<f64>,
    /// Requests failed or aborted since start (count).
    pub requests_failed_total: Option<f64>,
    /// Forward passes since start (llama.cpp `n_decode_total`; count).
    pub decode_steps_total: Option<f64>,
    /// Speculative-decoding verification steps since start (count).
    pub spec_drafts_total: Option<f64>,
    /// Draft tokens proposed since start (tokens).
    pub spec_draft_tokens_total: Option<f64>,
    /// Draft tokens accepted since start (tokens).
    pub spec_accepted_tokens_total: Option<f64>,
    /// Time to first token, seconds.
    pub ttft_histogram: Option<Histogram>,
    /// Inter-token latency, seconds; see `itl_kind` for what one observation is.
    pub itl_histogram: Option<Histogram>,
    pub itl_kind: Option<ItlKind>,
    /// End-to-end request latency, seconds.
    pub e2e_histogram: Option<Histogram>,
}

/// Which engine published `scrape`: the one owning the most family names, `Unknown` if none.
pub fn detect(scrape: &Scrape) -> Engine {
    let mut counts = [0_usize; PREFIXES.len()];
    for family in &scrape.families {
        if let Some(i) = PREFIXES
            .iter()
            .position(|(_, p)| family.name.starts_with(p))
        {
            counts[i] += 1;
        }
    }
    // Ties go to the earlier entry of PREFIXES, so the answer never depends on page order.
    let mut best: Option<(usize, usize)> = None;
    for (i, &n) in counts.iter().enumerate() {
        if n > 0 && best.is_none_or(|(_, m)| n > m) {
            best = Some((i, n));
        }
    }
    best.map_or(Engine::Unknown, |(i, _)| PREFIXES[i].0)
}

/// Detects the engine and reads its metrics into common fields.
pub fn read(scrape: &Scrape) -> (Engine, ServerSample) {
    let engine = detect(scrape);
    let mut sample = match engine {
        Engine::Vllm => read_vllm(scrape),
        Engine::Sglang => read_sglang(scrape),
        Engine::Tgi => read_tgi(scrape),
        Engine::LlamaCpp => read_llama_cpp(scrape),
        Engine::TritonTrtLlm => read_triton(scrape),
        Engine::TrtllmServe => read_trtllm_serve(scrape),
        Engine::Unknown => ServerSample::default(),
    };
    if sample.prefix_cache_hits_total.is_none() || sample.prefix_cache_queries_total.is_none() {
        sample.prefix_cache_unit = None;
    }
    if sample.itl_histogram.is_none() {
        sample.itl_kind = None;
    }
    (engine, sample)
}

/// Sum over every series of `name`.
fn sum(s: &Scrape, name: &str) -> Option<f64> {
    s.value(name, &[])
}

/// Mean over the series of `name`: for fractions, which must not add up across ranks.
fn mean(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let (n, total) = s
        .series(name, labels)
        .fold((0_u32, 0.0), |(n, t), x| (n + 1, t + x.value));
    (n > 0).then(|| total / f64::from(n))
}
