//! What a server did during a measurement window, from two scrapes of its `/metrics`.
//!
//! Engine counters are cumulative since the server started, so the run's own figures are
//! differences between a scrape at the start of the window and one at the end: tokens,
//! requests, preemptions, prefix-cache hits over queries, and the latency histograms'
//! observations inside the window. A counter that went down means the server restarted
//! inside the window; its difference would be meaningless, so it is reported as missing
//! and named, rather than guessed.

use serde::{Deserialize, Serialize};

use super::engines::{CacheUnit, ItlKind, ServerSample};
use super::histogram::Histogram;
use crate::clock::Nanos;

/// The readings that bracket the window `[start, end]`, as indices into `times` (sorted):
/// the last at or before `start` (else the first) and the first at or after `end` (else
/// the last). Every figure over the window (the server's counters, the CPU's and the GPUs'
/// energy) reads from the same pair, so none covers a shorter span than another.
pub fn bracketing_indices(times: &[Nanos], start: Nanos, end: Nanos) -> Option<(usize, usize)> {
    let first = times.iter().rposition(|t| *t <= start).unwrap_or(0);
    let last = times
        .iter()
        .position(|t| *t >= end)
        .unwrap_or(times.len().checked_sub(1)?);
    Some((first, last))
}

/// What the server did between two samples. Counter fields are `None` when either side
/// lacks the counter or when it went down (the server restarted inside the window; the
/// field's name is then listed in `reset_fields`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerDelta {
    /// Preemptions (vLLM) or retractions (SGLang), count.
    pub preemptions: Option<f64>,
    /// Prefix-cache lookups, in `prefix_cache_unit`.
    pub prefix_cache_queries: Option<f64>,
    /// Prefix-cache hits, in `prefix_cache_unit`.
    pub prefix_cache_hits: Option<f64>,
    pub prefix_cache_unit: Option<CacheUnit>,
    /// Hits ÷ queries over the window, 0–1; `None` without queries in the window.
    pub prefix_cache_hit_rate: Option<f64>,
    /// Prompt tokens, cached ones included, tokens.
    pub prompt_tokens: Option<f64>,
    /// Prompt tokens served from the prefix cache, tokens.
    pub prompt_tokens_cached: Option<f64>,
    /// Output tokens, tokens.
    pub generation_tokens: Option<f64>,
    /// Requests finished successfully, count.
    pub requests_finished: Option<f64>,
    /// Requests failed or aborted, count.
    pub requests_failed: Option<f64>,
    /// Forward passes (llama.cpp), count.
    pub decode_steps: Option<f64>,
    /// Accepted ÷ draft tokens over the window, 0–1.
    pub spec_acceptance_rate: Option<f64>,
    /// 1 + accepted tokens ÷ verification steps: tokens gained per step, as vLLM defines it.
    pub spec_mean_acceptance_length: Option<f64>,
    /// Time to first token of the requests observed inside the window, seconds.
    pub ttft: Option<Histogram>,
    /// Inter-token latency observed inside the window, seconds (see `itl_kind`).
    pub itl: Option<Histogram>,
    pub itl_kind: Option<ItlKind>,
    /// End-to-end latency of requests finished inside the window, seconds.
    pub e2e: Option<Histogram>,
    /// Mean of `ttft`, seconds.
    pub mean_ttft_s: Option<f64>,
    /// Mean of `itl`, seconds.
    pub mean_itl_s: Option<f64>,
    /// Mean of `e2e`, seconds.
    pub mean_e2e_s: Option<f64>,
    /// True when any counter or histogram went down: the server restarted.
    pub restarted: bool,
    /// Which quantities went down, by name (`preemptions`, `prompt_tokens`, `ttft`, ...).
    pub reset_fields: Vec<String>,
}

/// Counter deltas, hit rates and mean latencies between `first` and `last` (two samples of
/// the same server, `first` taken earlier).
pub fn window_delta(first: &ServerSample, last: &ServerSample) -> ServerDelta {
    let mut resets: Vec<String> = Vec::new();
    let mut counter = |field: &str, get: fn(&ServerSample) -> Option<f64>| -> Option<f64> {
        let (a, b) = (get(first)?, get(last)?);
        if b < a {
            resets.push(field.to_string());
            return None;
        }
        // NaN on either side gives NaN; a NaN counter is not a number to report.
        Some(b - a).filter(|d| !d.is_nan())
    };
    let preemptions = counter("preemptions", |s| s.preemptions_total);
    let queries = counter("prefix_cache_queries", |s| s.prefix_cache_queries_total);
    let hits = counter("prefix_cache_hits", |s| s.prefix_cache_hits_total);
    let prompt = counter("prompt_tokens", |s| s.prompt_tokens_total);
    let cached = counter("prompt_tokens_cached", |s| s.prompt_tokens_cached_total);
    let generation = counter("generation_tokens", |s| s.generation_tokens_total);
    let finished = counter("requests_finished", |s| s.requests_finished_total);
    let failed = counter("requests_failed", |s| s.requests_failed_total);
    let decode_steps = counter("decode_steps", |s| s.decode_steps_total);
    let drafted = counter("spec_draft_tokens", |s| s.spec_draft_tokens_total);
    let accepted = counter("spec_accepted_tokens", |s| s.spec_accepted_tokens_total);
    let drafts = counter("spec_drafts", |s| s.spec_drafts_total);
    let mut histogram = |field: &str, get: fn(&ServerSample) -> &Option<Histogram>| {
        let delta = get(last).as_ref()?.delta(get(first).as_ref()?);
        if delta.reset {
            resets.push(field.to_string());
            return None;
        }
        Some(delta.histogram)
    };
    let ttft = histogram("ttft", |s| &s.ttft_histogram);
    let itl = histogram("itl", |s| &s.itl_histogram);
    let e2e = histogram("e2e", |s| &s.e2e_histogram);
    ServerDelta {
        preemptions,
        prefix_cache_queries: queries,
        prefix_cache_hits: hits,
        prefix_cache_unit: last.prefix_cache_unit,
        prefix_cache_hit_rate: ratio(hits, queries),
        prompt_tokens: prompt,
        prompt_tokens_cached: cached,
        generation_tokens: generation,
        requests_finished: finished,
        requests_failed: failed,
        decode_steps,
        spec_acceptance_rate: ratio(accepted, drafted),
        spec_mean_acceptance_length: ratio(accepted, drafts).map(|r| 1.0 + r),
        mean_ttft_s: ttft.as_ref().and_then(Histogram::mean),
        mean_itl_s: itl.as_ref().and_then(Histogram::mean),
        mean_e2e_s: e2e.as_ref().and_then(Histogram::mean),
        itl_kind: last.itl_kind.filter(|_| itl.is_some()),
        ttft,
        itl,
        e2e,
        restarted: !resets.is_empty(),
        reset_fields: resets,
    }
}

/// `part / whole` when the whole is positive.
fn ratio(part: Option<f64>, whole: Option<f64>) -> Option<f64> {
    let (p, w) = (part?, whole?);
    (w > 0.0).then(|| p / w)
}

#[cfg(test)]
mod tests {
    use super::super::engines::read;
    use super::super::prometheus::parse;
    use super::*;

    fn read_text(text: &str) -> ServerSample {
        read(&parse(text).expect("page parses")).1
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    /// The simulator's `/metrics`, as `sim::responder::metrics_text` writes it.
    fn sim_page(v: [f64; 10]) -> String {
        let names = [
            ("num_requests_running", "gauge"),
            ("num_requests_waiting", "gauge"),
            ("kv_cache_usage_perc", "gauge"),
            ("num_preemptions_total", "counter"),
            ("prefix_cache_queries_total", "counter"),
            ("prefix_cache_hits_total", "counter"),
            ("prompt_tokens_total", "counter"),
            ("generation_tokens_total", "counter"),
            ("request_success_total", "counter"),
            ("request_failure_total", "counter"),
        ];
        let mut out = String::new();
        for ((name, kind), v) in names.iter().zip(v) {
            out.push_str(&format!(
                "# TYPE vllm:{name} {kind}\nvllm:{name}{{model_name=\"sim\"}} {v}\n"
            ));
        }
        out
    }

    #[test]
    fn window_over_simulator_scrapes() {
        let first = read_text(&sim_page([
            2.0, 0.0, 0.25, 1.0, 1000.0, 400.0, 1000.0, 300.0, 10.0, 0.0,
        ]));
        let last = read_text(&sim_page([
            4.0, 1.0, 0.5, 3.0, 3000.0, 1600.0, 3000.0, 1500.0, 30.0, 2.0,
        ]));
        let d = window_delta(&first, &last);
        assert_eq!(d.preemptions, Some(2.0));
        assert_eq!(d.prefix_cache_queries, Some(2000.0));
        assert_eq!(d.prefix_cache_hits, Some(1200.0));
        assert_eq!(d.prefix_cache_hit_rate, Some(0.6)); // 1200 / 2000
        assert_eq!(d.prompt_tokens, Some(2000.0));
        assert_eq!(d.generation_tokens, Some(1200.0));
        assert_eq!(d.requests_finished, Some(20.0));
        assert_eq!(d.requests_failed, Some(2.0));
        assert_eq!((d.mean_ttft_s, d.ttft), (None, None));
        assert_eq!(d.spec_acceptance_rate, None);
        assert!(!d.restarted);
        // A window without prompts has no hit rate (not 0).
        assert_eq!(window_delta(&last, &last).prefix_cache_hit_rate, None);
    }

    #[test]
    fn window_after_restart_drops_counters_and_says_so() {
        let first = read_text(&sim_page([
            2.0, 0.0, 0.25, 1.0, 1000.0, 400.0, 1000.0, 300.0, 10.0, 0.0,
        ]));
        let after_restart = read_text(&sim_page([
            1.0, 0.0, 0.1, 0.0, 50.0, 0.0, 50.0, 20.0, 1.0, 0.0,
        ]));
        let d = window_delta(&first, &after_restart);
        assert!(d.restarted);
        assert_eq!(d.prompt_tokens, None);
        assert_eq!(d.prefix_cache_hit_rate, None);
        assert!(d.reset_fields.contains(&"requests_finished".to_string()));
        assert!(d.reset_fields.contains(&"preemptions".to_string()));
        // Failures stayed at 0: not a reset, a real zero.
        assert_eq!(d.requests_failed, Some(0.0));
    }

    #[test]
    fn window_histograms_llama_cache_and_spec_decode() {
        let page = |b1: u32, b2: u32, total: u32, sum: f64| {
            format!(
                "vllm:time_to_first_token_seconds_bucket{{le=\"0.1\"}} {b1}\n\
                 vllm:time_to_first_token_seconds_bucket{{le=\"0.5\"}} {b2}\n\
                 vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {total}\n\
                 vllm:time_to_first_token_seconds_sum {sum}\n\
                 vllm:time_to_first_token_seconds_count {total}\n\
                 vllm:spec_decode_num_draft_tokens_total {}\n\
                 vllm:spec_decode_num_accepted_tokens_total {}\n\
                 vllm:spec_decode_num_drafts_total {}\n",
                total * 10,
                total * 7,
                total * 4,
            )
        };
        let first = read_text(&page(2, 4, 4, 0.8));
        let last = read_text(&page(3, 8, 10, 4.1));
        let d = window_delta(&first, &last);
        let ttft = d.ttft.as_ref().unwrap();
        assert_eq!(
            ttft.buckets,
            vec![(0.1, 1.0), (0.5, 4.0), (f64::INFINITY, 6.0)]
        );
        assert!(close(d.mean_ttft_s, 3.3 / 6.0));
        // Drafted 40 → 100, accepted 28 → 70, steps 16 → 40.
        assert!(close(d.spec_acceptance_rate, 42.0 / 60.0));
        assert!(close(d.spec_mean_acceptance_length, 1.0 + 42.0 / 24.0));
        let restarted = window_delta(&last, &first);
        assert_eq!(restarted.ttft, None);
        assert!(restarted.reset_fields.contains(&"ttft".to_string()));

        // llama.cpp: cached / (cached + computed) over the window.
        let llama = |computed: u32, cached: u32| {
            read_text(&format!(
                "llamacpp:prompt_tokens_total {computed}\nllamacpp:prompt_tokens_cached_total {cached}\n"
            ))
        };
        let d = window_delta(&llama(65, 21), &llama(95, 111));
        // Computed +30, cached +90: 90 / 120.
        assert!(close(d.prefix_cache_hit_rate, 0.75));
        assert_eq!(d.requests_finished, None);
    }
}
