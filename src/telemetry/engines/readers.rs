//! One reader per engine: which of its metric families fills which common field, and
//! how (summed over ranks, averaged, rescaled, or from the one model that counts a
//! request once).

use super::super::histogram::Histogram;
use super::super::prometheus::Scrape;
use super::{mean, sum, CacheUnit, ItlKind, ServerSample};

pub(super) fn read_vllm(s: &Scrape) -> ServerSample {
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

pub(super) fn read_sglang(s: &Scrape) -> ServerSample {
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

pub(super) fn read_tgi(s: &Scrape) -> ServerSample {
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

pub(super) fn read_llama_cpp(s: &Scrape) -> ServerSample {
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

pub(super) fn read_triton(s: &Scrape) -> ServerSample {
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

pub(super) fn read_trtllm_serve(s: &Scrape) -> ServerSample {
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
