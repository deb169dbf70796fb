//! Each engine's page read into common fields, from the recorded pages in
//! `tests/fixtures/metrics/` and small hand-written ones.

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
