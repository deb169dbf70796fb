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

use serde::{Deserialize, Serialize};

use super::histogram::Histogram;
use super::prometheus::Scrape;

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

fn read_vllm(s: &Scrape) -> ServerSample {
    // V1 renamed `gpu_cache_usage_perc` and `gpu_prefix_cache_*`; ~0.10 emits both, V0
    // and early V1 only the old ones, so the new name wins and the old one fills in.
    let itl = s
        .histogram("vllm:inter_token_latency_seconds")
        .or_else(|| s.histogram("vllm:time_per_output_token_seconds"));
    ServerSample {
        running: sum(s, "vllm:num_requests_running"),
        waiting: sum(s, "vllm:num_requests_waiting"),
        swapped: sum(s, "vllm:num_requests_swapped"),
        kv_cache_usage: mean(s, "vllm:kv_cache_usage_perc", &[])
            .or_else(|| mean(s, "vllm:gpu_cache_usage_perc", &[])),
        preemptions_total: sum(s, "vllm:num_preemptions_total"),
        prefix_cache_queries_total: sum(s, "vllm:prefix_cache_queries_total")
            .or_else(|| sum(s, "vllm:gpu_prefix_cache_queries_total")),
        prefix_cache_hits_total: sum(s, "vllm:prefix_cache_hits_total")
            .or_else(|| sum(s, "vllm:gpu_prefix_cache_hits_total")),
        prefix_cache_unit: Some(CacheUnit::Tokens),
        cache_hit_rate_gauge: mean(s, "vllm:gpu_prefix_cache_hit_rate", &[]),
        prompt_tokens_total: sum(s, "vllm:prompt_tokens_total"),
        prompt_tokens_cached_total: sum(s, "vllm:prompt_tokens_cached_total"),
        generation_tokens_total: sum(s, "vllm:generation_tokens_total"),
        // Summed over `finished_reason`.
        requests_finished_total: sum(s, "vllm:request_success_total"),
        // Not in vLLM itself; servebench's simulator adds it.
        requests_failed_total: sum(s, "vllm:request_failure_total"),
        decode_steps_total: None,
        spec_drafts_total: sum(s, "vllm:spec_decode_num_drafts_total"),
        spec_draft_tokens_total: sum(s, "vllm:spec_decode_num_draft_tokens_total"),
        spec_accepted_tokens_total: sum(s, "vllm:spec_decode_num_accepted_tokens_total"),
        ttft_histogram: s.histogram("vllm:time_to_first_token_seconds"),
        // The pre-0.11 `time_per_output_token_seconds` also observed each token gap.
        itl_histogram: itl,
        itl_kind: Some(ItlKind::InterToken),
        e2e_histogram: s.histogram("vllm:e2e_request_latency_seconds"),
    }
}

fn read_sglang(s: &Scrape) -> ServerSample {
    let prompt = sum(s, "sglang:prompt_tokens_total");
    let cached = sum(s, "sglang:cached_tokens_total");
    ServerSample {
        running: sum(s, "sglang:num_running_reqs"),
        waiting: sum(s, "sglang:num_queue_reqs"),
        kv_cache_usage: mean(s, "sglang:token_usage", &[]),
        // The counter, not the `num_retracted_reqs` gauge (which is a current count).
        preemptions_total: sum(s, "sglang:num_retracted_requests_total"),
        // SGLang's prompt counter includes cached tokens: hit rate = cached / prompt.
        prefix_cache_queries_total: prompt,
        prefix_cache_hits_total: cached,
        prefix_cache_unit: Some(CacheUnit::Tokens),
        cache_hit_rate_gauge: mean(s, "sglang:cache_hit_rate", &[]),
        prompt_tokens_total: prompt,
        prompt_tokens_cached_total: cached,
        generation_tokens_total: sum(s, "sglang:generation_tokens_total"),
        requests_finished_total: sum(s, "sglang:num_requests_total"),
        requests_failed_total: sum(s, "sglang:num_aborted_requests_total"),
        ttft_histogram: s.histogram("sglang:time_to_first_token_seconds"),
        itl_histogram: s.histogram("sglang:inter_token_latency_seconds"),
        itl_kind: Some(ItlKind::InterToken),
        e2e_histogram: s.histogram("sglang:e2e_request_latency_seconds"),
        ..ServerSample::default()
    }
}

fn read_tgi(s: &Scrape) -> ServerSample {
    // TGI has no token counters; the `_sum` of its length histograms is one. Input lengths
    // are observed at validation, generated lengths when a request ends.
    let sum_of = |family: &str| s.histogram(family).and_then(|h| h.sum);
    ServerSample {
        running: sum(s, "tgi_batch_current_size"),
        waiting: sum(s, "tgi_queue_size"),
        prompt_tokens_total: sum_of("tgi_request_input_length"),
        generation_tokens_total: sum_of("tgi_request_generated_tokens"),
        requests_finished_total: sum(s, "tgi_request_success"),
        // Summed over `err` (overloaded, validation, dropped, incomplete, ...).
        requests_failed_total: sum(s, "tgi_request_failure"),
        itl_histogram: s.histogram("tgi_request_mean_time_per_token_duration"),
        itl_kind: Some(ItlKind::PerRequestTpotWithPrefill),
        e2e_histogram: s.histogram("tgi_request_duration"),
        ..ServerSample::default()
    }
}

fn read_llama_cpp(s: &Scrape) -> ServerSample {
    // llama.cpp's `prompt_tokens_total` excludes tokens reused from the cache (its HELP
    // says so), unlike every other engine's; add them back for the common field.
    let computed = sum(s, "llamacpp:prompt_tokens_total");
    let cached = sum(s, "llamacpp:prompt_tokens_cached_total");
    let all_prompt = match (computed, cached) {
        (Some(p), Some(c)) => Some(p + c),
        (p, _) => p,
    };
    let kv_ratio = sum(s, "llamacpp:kv_cache_usage_ratio");
    ServerSample {
        running: sum(s, "llamacpp:requests_processing"),
        waiting: sum(s, "llamacpp:requests_deferred"),
        // Only older builds publish this.
        kv_cache_usage: kv_ratio,
        prefix_cache_queries_total: cached.and(all_prompt),
        prefix_cache_hits_total: cached,
        prefix_cache_unit: Some(CacheUnit::Tokens),
        prompt_tokens_total: all_prompt,
        prompt_tokens_cached_total: cached,
        generation_tokens_total: sum(s, "llamacpp:tokens_predicted_total"),
        decode_steps_total: sum(s, "llamacpp:n_decode_total"),
        spec_drafts_total: sum(s, "llamacpp:spec_decode_num_drafts_total"),
        spec_draft_tokens_total: sum(s, "llamacpp:spec_decode_num_draft_tokens_total"),
        spec_accepted_tokens_total: sum(s, "llamacpp:spec_decode_num_accepted_tokens_total"),
        ..ServerSample::default()
    }
}

/// Triton counts a request once per model it passes through (ensemble, preprocessing,
/// tensorrt_llm, postprocessing), so per-request metrics must come from one model: the
/// ensemble (what the client called) when present, else the TRT-LLM model, else the sum.
const TRITON_MODELS: [&str; 3] = ["ensemble", "tensorrt_llm_bls", "tensorrt_llm"];

fn triton_value(s: &Scrape, name: &str) -> Option<f64> {
    TRITON_MODELS
        .iter()
        .find_map(|m| s.value(name, &[("model", m)]))
        .or_else(|| sum(s, name))
}

fn triton_histogram(s: &Scrape, name: &str) -> Option<Histogram> {
    TRITON_MODELS
        .iter()
        .find_map(|m| s.histogram_with(name, &[("model", m)]))
        .or_else(|| s.histogram(name))
}

fn read_triton(s: &Scrape) -> ServerSample {
    let request = |t: &str| s.value("nv_trt_llm_request_metrics", &[("request_type", t)]);
    let block = |t: &str| {
        s.value(
            "nv_trt_llm_kv_cache_block_metrics",
            &[("kv_cache_block_type", t)],
        )
    };
    let kv_fraction = mean(
        s,
        "nv_trt_llm_kv_cache_block_metrics",
        &[("kv_cache_block_type", "fraction")],
    );
    let kv_from_blocks = match (block("used"), block("max")) {
        (Some(used), Some(max)) if max > 0.0 => Some(used / max),
        _ => None,
    };
    ServerSample {
        running: request("scheduled").or_else(|| request("active")),
        // Triton's own queue is summed over models: a request waits in one of them.
        waiting: request("waiting").or_else(|| sum(s, "nv_inference_pending_request_count")),
        kv_cache_usage: kv_fraction.or(kv_from_blocks),
        requests_finished_total: triton_value(s, "nv_inference_request_success"),
        requests_failed_total: triton_value(s, "nv_inference_request_failure"),
        // Opt-in (`histogram_latencies=true`), in milliseconds, timing the first response.
        ttft_histogram: triton_histogram(s, "nv_inference_first_response_histogram_ms")
            .map(|h| h.scaled(1e-3)),
        ..ServerSample::default()
    }
}

fn read_trtllm_serve(s: &Scrape) -> ServerSample {
    let reused = sum(s, "trtllm_kv_cache_reused_blocks_total");
    let missed = sum(s, "trtllm_kv_cache_missed_blocks_total");
    ServerSample {
        running: sum(s, "trtllm_num_requests_running"),
        waiting: sum(s, "trtllm_num_requests_waiting"),
        kv_cache_usage: mean(s, "trtllm_kv_cache_utilization", &[]),
        // Block counters: hit rate = reused / (reused + missed).
        prefix_cache_queries_total: reused.zip(missed).map(|(r, m)| r + m),
        prefix_cache_hits_total: reused,
        prefix_cache_unit: Some(CacheUnit::Blocks),
        cache_hit_rate_gauge: mean(s, "trtllm_kv_cache_hit_rate", &[]),
        prompt_tokens_total: sum(s, "trtllm_prompt_tokens_total"),
        prompt_tokens_cached_total: sum(s, "trtllm_prompt_cached_tokens_total"),
        generation_tokens_total: sum(s, "trtllm_generation_tokens_total"),
        requests_finished_total: sum(s, "trtllm_request_success_total"),
        requests_failed_total: sum(s, "trtllm_request_error_total"),
        spec_draft_tokens_total: sum(s, "trtllm_spec_decode_num_draft_tokens_total"),
        spec_accepted_tokens_total: sum(s, "trtllm_spec_decode_num_accepted_tokens_total"),
        ttft_histogram: s.histogram("trtllm_time_to_first_token_seconds"),
        itl_histogram: s.histogram("trtllm_time_per_output_token_seconds"),
        itl_kind: Some(ItlKind::PerRequestTpot),
        e2e_histogram: s.histogram("trtllm_e2e_request_latency_seconds"),
        ..ServerSample::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::prometheus::parse;
    use super::*;

    /// A page from `tests/fixtures/metrics/`.
    macro_rules! fixture {
        ($file:literal) => {
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/metrics/",
                $file
            ))
        };
    }

    fn read_text(text: &str) -> (Engine, ServerSample) {
        read(&parse(text).expect("fixture parses"))
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn vllm_v1_fixture() {
        let (engine, s) = read_text(fixture!("vllm.txt"));
        assert_eq!(engine, Engine::Vllm);
        assert_eq!(s.running, Some(21.0)); // 12 + 9 over two data-parallel engines
        assert_eq!(s.waiting, Some(4.0));
        assert!(close(s.kv_cache_usage, 0.40)); // mean of 0.42 and 0.38, not their sum
        assert_eq!(s.preemptions_total, Some(3.0));
        assert_eq!(s.prefix_cache_queries_total, Some(96_100.0));
        assert_eq!(s.prefix_cache_hits_total, Some(39_680.0));
        assert_eq!(s.prefix_cache_unit, Some(CacheUnit::Tokens));
        assert_eq!(s.prompt_tokens_total, Some(96_100.0));
        assert_eq!(s.generation_tokens_total, Some(25_344.0));
        assert_eq!(s.requests_finished_total, Some(80.0));
        // Absent from the page, so absent here: never 0.
        assert_eq!(s.swapped, None);
        assert_eq!(s.requests_failed_total, None);
        assert_eq!(s.prompt_tokens_cached_total, None);
        assert_eq!(s.cache_hit_rate_gauge, None);
        assert_eq!(s.ttft_histogram.as_ref().map(|h| h.count), Some(80.0));
        // ITL: (236.06 + 231.5) / (12760 + 12504) observations.
        let itl = s.itl_histogram.as_ref().unwrap();
        assert_eq!(itl.count, 25_264.0);
        assert!(close(itl.mean(), 467.56 / 25_264.0));
        assert_eq!(s.itl_kind, Some(ItlKind::InterToken));
        assert!(close(
            s.e2e_histogram.as_ref().and_then(Histogram::mean),
            2.5
        ));
    }

    #[test]
    fn vllm_v0_and_deprecated_names() {
        let page = "vllm:num_requests_running{model_name=\"m\"} 2\n\
            vllm:num_requests_swapped{model_name=\"m\"} 1\n\
            vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.7\n\
            vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 500\n\
            vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 125\n\
            vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.25\n\
            vllm:time_per_output_token_seconds_bucket{le=\"0.05\"} 9\n\
            vllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} 10\n\
            vllm:time_per_output_token_seconds_sum 0.3\n\
            vllm:time_per_output_token_seconds_count 10\n";
        let (engine, s) = read_text(page);
        assert_eq!(engine, Engine::Vllm);
        assert_eq!(s.swapped, Some(1.0));
        assert_eq!(s.kv_cache_usage, Some(0.7));
        assert_eq!(s.prefix_cache_queries_total, Some(500.0));
        assert_eq!(s.prefix_cache_hits_total, Some(125.0));
        assert_eq!(s.cache_hit_rate_gauge, Some(0.25));
        assert!(close(
            s.itl_histogram.as_ref().and_then(Histogram::mean),
            0.03
        ));
        assert_eq!(s.waiting, None);
        assert_eq!(s.ttft_histogram, None);
    }

    #[test]
    fn simulator_page_reads_as_vllm() {
        // As `sim::responder::metrics_text` writes it (the other four rows left out).
        let page = "# TYPE vllm:num_requests_running gauge\n\
            vllm:num_requests_running{model_name=\"sim\"} 3\n\
            # TYPE vllm:num_requests_waiting gauge\n\
            vllm:num_requests_waiting{model_name=\"sim\"} 1\n\
            # TYPE vllm:kv_cache_usage_perc gauge\n\
            vllm:kv_cache_usage_perc{model_name=\"sim\"} 0.5\n\
            # TYPE vllm:num_preemptions_total counter\n\
            vllm:num_preemptions_total{model_name=\"sim\"} 0\n\
            # TYPE vllm:request_success_total counter\n\
            vllm:request_success_total{model_name=\"sim\"} 2\n\
            # TYPE vllm:request_failure_total counter\n\
            vllm:request_failure_total{model_name=\"sim\"} 1\n";
        let (engine, s) = read_text(page);
        assert_eq!(engine, Engine::Vllm);
        assert_eq!((s.running, s.waiting), (Some(3.0), Some(1.0)));
        assert_eq!(s.kv_cache_usage, Some(0.5));
        assert_eq!(s.preemptions_total, Some(0.0));
        assert_eq!(s.requests_finished_total, Some(2.0));
        assert_eq!(s.requests_failed_total, Some(1.0));
        assert_eq!(s.itl_kind, None); // no histogram, so no kind either
    }

    #[test]
    fn sglang_fixture() {
        let s = read_text(fixture!("sglang.txt")).1;
        assert_eq!((s.running, s.waiting), (Some(24.0), Some(5.0)));
        assert_eq!(s.kv_cache_usage, Some(0.31));
        assert_eq!(s.preemptions_total, Some(3.0));
        assert_eq!(s.prefix_cache_queries_total, Some(150_000.0));
        assert_eq!(s.prefix_cache_hits_total, Some(52_000.0));
        assert_eq!(s.cache_hit_rate_gauge, Some(0.27));
        assert_eq!(s.generation_tokens_total, Some(40_000.0));
        assert_eq!(s.requests_finished_total, Some(120.0));
        assert_eq!(s.requests_failed_total, Some(2.0));
        let ttft = s.ttft_histogram.unwrap();
        // Cumulative 10, 40, 90, 110, 116, 120 at 0.1 … 1.0; sum 36 → mean 0.3.
        assert!(close(ttft.mean(), 0.3));
        // p50: rank 60 in (0.2, 0.4] holding 50: 0.2 + 0.2 * 20/50 = 0.28.
        assert!(close(ttft.quantile(0.5), 0.28));
        // p95: rank 114 in (0.6, 0.8] holding 6: 0.6 + 0.2 * 4/6.
        assert!(close(ttft.quantile(0.95), 0.6 + 0.2 * 4.0 / 6.0));
        assert!(close(
            s.itl_histogram.and_then(|h| h.mean()),
            478.56 / 39_880.0
        ));
    }

    #[test]
    fn tgi_fixture() {
        let s = read_text(fixture!("tgi.txt")).1;
        assert_eq!((s.running, s.waiting), (Some(16.0), Some(4.0)));
        assert_eq!(s.requests_finished_total, Some(120.0));
        assert_eq!(s.requests_failed_total, Some(8.0)); // validation 3 + overloaded 5
        assert_eq!(s.prompt_tokens_total, Some(96_000.0));
        assert_eq!(s.generation_tokens_total, Some(30_000.0));
        assert_eq!(s.itl_kind, Some(ItlKind::PerRequestTpotWithPrefill));
        assert!(close(s.itl_histogram.and_then(|h| h.mean()), 0.025));
        let e2e = s.e2e_histogram.unwrap();
        assert!(close(e2e.mean(), 2.5));
        assert_eq!(e2e.buckets.len(), 36);
        // TGI publishes neither TTFT nor KV usage nor preemptions.
        assert_eq!(s.ttft_histogram, None);
        assert_eq!(s.kv_cache_usage, None);
        assert_eq!(s.preemptions_total, None);
    }

    #[test]
    fn llama_cpp_recorded_scrapes() {
        let (engine, s) = read_text(fixture!("llamacpp-11434.txt"));
        assert_eq!(engine, Engine::LlamaCpp);
        assert_eq!((s.running, s.waiting), (Some(0.0), Some(0.0)));
        // 65 computed + 21 cached prompt tokens.
        assert_eq!(s.prompt_tokens_total, Some(86.0));
        assert_eq!(s.prompt_tokens_cached_total, Some(21.0));
        assert_eq!(s.prefix_cache_queries_total, Some(86.0));
        assert_eq!(s.prefix_cache_hits_total, Some(21.0));
        assert_eq!(s.generation_tokens_total, Some(64.0));
        assert_eq!(s.decode_steps_total, Some(70.0));
        assert_eq!(s.spec_draft_tokens_total, Some(0.0));
        // No request counter, no histograms, no KV gauge in current builds.
        assert_eq!(s.requests_finished_total, None);
        assert_eq!(s.kv_cache_usage, None);
        assert_eq!(s.ttft_histogram, None);
        let other = read_text(fixture!("llamacpp-sample.txt")).1;
        assert_eq!(other.prompt_tokens_total, Some(115.0)); // 84 + 31
        assert_eq!(other.generation_tokens_total, Some(813.0));
    }

    #[test]
    fn llama_cpp_without_cached_counter_has_no_hit_counters() {
        let s = read_text("llamacpp:prompt_tokens_total 40\nllamacpp:kv_cache_usage_ratio 0.2\n").1;
        assert_eq!(s.prompt_tokens_total, Some(40.0));
        assert_eq!(s.prefix_cache_hits_total, None);
        assert_eq!(s.prefix_cache_queries_total, None);
        assert_eq!(s.prefix_cache_unit, None);
        assert_eq!(s.kv_cache_usage, Some(0.2));
    }

    #[test]
    fn triton_fixture_counts_each_request_once() {
        let s = read_text(fixture!("triton_trtllm.txt")).1;
        assert_eq!((s.running, s.waiting), (Some(14.0), Some(3.0)));
        assert_eq!(s.kv_cache_usage, Some(0.4));
        // 200 per model over four models: the ensemble's 200, not 800.
        assert_eq!(s.requests_finished_total, Some(200.0));
        assert_eq!(s.requests_failed_total, Some(2.0));
        let ttft = s.ttft_histogram.unwrap();
        // The ensemble's 16000 ms over 200 requests, in seconds.
        assert!(close(ttft.mean(), 0.08));
        // p50: rank 100 in [0, 100 ms] holding 150: 0.1 s * 100/150.
        assert!(close(ttft.quantile(0.5), 0.1 * 100.0 / 150.0));
        assert_eq!(s.prompt_tokens_total, None);
        assert_eq!(s.itl_histogram, None);
    }

    #[test]
    fn triton_kv_from_blocks_and_pending_queue() {
        let page = "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\",model=\"tensorrt_llm\"} 300\n\
            nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\",model=\"tensorrt_llm\"} 1200\n\
            nv_inference_pending_request_count{model=\"ensemble\"} 1\n\
            nv_inference_pending_request_count{model=\"tensorrt_llm\"} 2\n";
        let (engine, s) = read_text(page);
        assert_eq!(engine, Engine::TritonTrtLlm);
        assert_eq!(s.kv_cache_usage, Some(0.25));
        assert_eq!(s.waiting, Some(3.0));
        assert_eq!(s.running, None);
    }

    #[test]
    fn trtllm_serve_fixture() {
        let s = read_text(fixture!("trtllm_serve.txt")).1;
        assert_eq!((s.running, s.waiting), (Some(8.0), Some(2.0)));
        assert_eq!(s.kv_cache_usage, Some(0.35));
        assert_eq!(s.prefix_cache_hits_total, Some(1250.0));
        assert_eq!(s.prefix_cache_queries_total, Some(5000.0)); // 1250 reused + 3750 missed
        assert_eq!(s.prefix_cache_unit, Some(CacheUnit::Blocks));
        assert_eq!(s.cache_hit_rate_gauge, Some(0.25));
        assert_eq!(s.prompt_tokens_cached_total, Some(20_000.0));
        assert_eq!(s.requests_finished_total, Some(100.0));
        assert_eq!(s.itl_kind, Some(ItlKind::PerRequestTpot));
        assert!(close(s.itl_histogram.and_then(|h| h.mean()), 0.018));
        assert!(close(s.ttft_histogram.and_then(|h| h.mean()), 0.055));
        assert!(close(s.e2e_histogram.and_then(|h| h.mean()), 1.9));
    }

    #[test]
    fn unknown_page_gives_nothing() {
        let (engine, s) = read_text(fixture!("dcgm.txt"));
        assert_eq!(engine, Engine::Unknown);
        assert_eq!(s, ServerSample::default());
        // Mixed pages go to the engine owning the most families.
        let mixed = parse("vllm:a 1\nsglang:b 1\nsglang:c 1\n").unwrap();
        assert_eq!(detect(&mixed), Engine::Sglang);
    }

    #[test]
    fn samples_serialize_round_trip() {
        let s = read_text(fixture!("sglang.txt")).1;
        let json = serde_json::to_string(&s).unwrap();
        let back: ServerSample = serde_json::from_str(&json).unwrap();
        assert_eq!(back.running, s.running);
        assert_eq!(back.ttft_histogram.map(|h| h.count), Some(120.0));
    }
}
