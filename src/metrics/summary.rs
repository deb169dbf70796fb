//! From all records of a run to its summary: distributions, throughput, goodput, warnings.

use super::distribution::{samples_needed, Distribution};
use super::request::{measure, ItlOption, RequestMetrics};
use super::slo::{evaluate, SloResult, SloSpec};
use crate::clock::Nanos;
use crate::record::{ChunkTokenSource, Phase, RequestRecord, TokenSource};
use serde::Serialize;
use std::collections::BTreeMap;

/// Request counts of the measured phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RequestCounts {
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    pub failed_by_kind: BTreeMap<String, u64>,
    /// Completed with fewer output tokens than `max_tokens` asked for.
    pub ended_early: u64,
}

/// The measurement window: first send to last byte of measured requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Window {
    #[serde(skip)]
    pub start: Nanos,
    #[serde(skip)]
    pub end: Nanos,
    pub duration_s: f64,
}

/// Throughput over the steady part of the window (the first 10 % excluded, draft 5.2.3.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SteadyState {
    pub excluded_s: f64,
    pub output_tokens_per_s: f64,
    pub requests_per_s: f64,
}

/// How the ITL samples were formed and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItlChoice {
    pub option: ItlOption,
    pub description: String,
    pub reason: String,
    /// Share of content chunks that carried exactly one token.
    pub single_token_chunk_share: f64,
    pub mean_tokens_per_chunk: f64,
}

/// How token counts were obtained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenCounting {
    /// Output token count `N`: requests per source.
    pub output_tokens_source: BTreeMap<String, u64>,
    /// Tokens per chunk: requests per source.
    pub chunk_tokens_source: BTreeMap<String, u64>,
    /// Input tokens: `server_usage` when the server reported prompt tokens, else the tokenizer.
    pub input_tokens_source: String,
}

/// TTFT percentiles of one input-length bucket (draft 5.1.4.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputBucket {
    pub label: String,
    pub n: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

/// Client measurements next to what the server said about the same requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerComparison {
    /// Server prompt (prefill) time, ms.
    pub prompt_ms: Option<Distribution>,
    /// Client TTFT − server prompt time: queueing plus transport, ms.
    pub ttft_minus_prompt_ms: Option<Distribution>,
    /// Server generation time per token, ms.
    pub server_tpot_ms: Option<Distribution>,
    /// Client decode rate / server decode rate, per request.
    pub decode_rate_ratio: Option<Distribution>,
    /// Requests whose prompt was partly served from the server's cache.
    pub requests_with_cache_hits: u64,
}

/// Everything summarised about a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub requests: RequestCounts,
    pub window: Window,
    pub ttft_ms: Option<Distribution>,
    pub tpot_ms: Option<Distribution>,
    pub itl_ms: Option<Distribution>,
    pub e2e_ms: Option<Distribution>,
    pub jitter_ms: Option<Distribution>,
    pub max_pause_ms: Option<Distribution>,
    pub ttfb_ms: Option<Distribution>,
    pub time_to_first_reasoning_ms: Option<Distribution>,
    pub normalized_latency_ms_per_token: Option<Distribution>,
    pub decode_tokens_per_s: Option<Distribution>,
    /// Open loop: TTFT and E2E measured from the scheduled send time.
    pub ttft_from_schedule_ms: Option<Distribution>,
    pub e2e_from_schedule_ms: Option<Distribution>,
    /// Pool wait plus connection set-up, ms (never inside TTFT).
    pub connect_ms: Option<Distribution>,
    /// P99 / P50 of ITL (draft 5.4.4.3 tail indicator).
    pub itl_tail_ratio: Option<f64>,
    pub output_tokens_per_s: f64,
    pub input_tokens_per_s: f64,
    pub requests_per_s: f64,
    pub total_output_tokens: u64,
    pub total_input_tokens: u64,
    pub success_rate: f64,
    pub steady_state: SteadyState,
    pub itl_method: ItlChoice,
    pub token_counting: TokenCounting,
    pub ttft_by_input_tokens: Vec<InputBucket>,
    pub server: Option<ServerComparison>,
    /// Goodput and SLO attainment, when SLOs were given.
    pub goodput: Option<SloResult>,
    pub warnings: Vec<String>,
    /// User-experience metrics (deadlines, smooth goodput, fluidity, fairness), added by
    /// `experience::summarize`; flattened into `summary` in `run.json`.
    #[serde(flatten)]
    pub experience: Option<super::experience::Experience>,
}

/// Chooses the ITL option per draft B.2.1: server per-token times when every request has
/// them; direct (B) when more than 90 % of chunks carry one token; chunk timing (A) otherwise.
pub fn choose_itl(records: &[&RequestRecord]) -> ItlChoice {
    let (mut chunks, mut single, mut tokens) = (0u64, 0u64, 0u64);
    for r in records {
        for c in &r.chunks {
            chunks += 1;
            tokens += c.tokens as u64;
            if c.tokens == 1 {
                single += 1;
            }
        }
    }
    let share = if chunks == 0 {
        1.0
    } else {
        single as f64 / chunks as f64
    };
    let mean = if chunks == 0 {
        0.0
    } else {
        tokens as f64 / chunks as f64
    };
    let has_server_times = !records.is_empty()
        && records.iter().all(|r| {
            r.server_timing
                .as_ref()
                .and_then(|t| t.token_times_ms.as_ref())
                .is_some_and(|t| !t.is_empty())
        });
    let (option, reason) = if has_server_times {
        (
            ItlOption::C,
            "the server reported per-token times for every request".to_owned(),
        )
    } else if share > 0.9 {
        (
            ItlOption::B,
            format!(
                "{:.1} % of chunks carried one token (> 90 %): direct measurement",
                share * 100.0
            ),
        )
    } else {
        (
            ItlOption::A,
            format!(
                "only {:.1} % of chunks carried one token and the server gave no per-token times: reported as time between chunks",
                share * 100.0
            ),
        )
    };
    ItlChoice {
        option,
        description: option.describe().to_owned(),
        reason,
        single_token_chunk_share: share,
        mean_tokens_per_chunk: mean,
    }
}

const INPUT_BUCKETS: [(u32, u32, &str); 6] = [
    (0, 256, "0-256"),
    (256, 512, "256-512"),
    (512, 1024, "512-1024"),
    (1024, 2048, "1024-2048"),
    (2048, 4096, "2048-4096"),
    (4096, u32::MAX, "4096+"),
];

fn dist<I: IntoIterator<Item = f64>>(values: I) -> Option<Distribution> {
    Distribution::of(&mut values.into_iter().collect())
}

/// Input tokens of a request: the server's count when it gave one.
fn input_tokens(r: &RequestRecord) -> u64 {
    r.usage_prompt_tokens().unwrap_or(r.input_tokens as u64)
}

/// Output tokens a request delivered (a failed one keeps what it received).
fn delivered_tokens(r: &RequestRecord) -> u64 {
    if r.outcome.is_ok() {
        r.output_tokens as u64
    } else {
        r.chunks.iter().map(|c| c.tokens as u64).sum()
    }
}

/// Summarises the measured requests among `records`.
pub fn summarize(records: &[RequestRecord], slo: Option<&SloSpec>) -> RunSummary {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    let ok: Vec<&RequestRecord> = measured
        .iter()
        .copied()
        .filter(|r| r.outcome.is_ok())
        .collect();
    let itl_method = choose_itl(&ok);
    let per_request: Vec<Option<RequestMetrics>> = measured
        .iter()
        .map(|r| measure(r, itl_method.option))
        .collect();
    let metrics: Vec<&RequestMetrics> = per_request.iter().flatten().collect();

    let mut counts = RequestCounts {
        total: measured.len() as u64,
        ..Default::default()
    };
    for r in &measured {
        match r.outcome.failure_kind() {
            None => {
                counts.completed += 1;
                if r.output_tokens < r.max_tokens {
                    counts.ended_early += 1;
                }
            }
            Some(kind) => {
                counts.failed += 1;
                *counts.failed_by_kind.entry(kind.to_string()).or_default() += 1;
            }
        }
    }

    let start = measured
        .iter()
        .map(|r| r.scheduled_at.unwrap_or(r.sent_at).min(r.sent_at))
        .min()
        .unwrap_or(0);
    let end = measured
        .iter()
        .map(|r| r.finished_at.max(r.sent_at))
        .max()
        .unwrap_or(0);
    let duration_s = end.saturating_sub(start) as f64 / 1e9;
    let window = Window {
        start,
        end,
        duration_s,
    };
    let per_s = |x: f64| {
        if duration_s > 0.0 {
            x / duration_s
        } else {
            0.0
        }
    };

    let total_output_tokens: u64 = measured.iter().map(|r| delivered_tokens(r)).sum();
    let total_input_tokens: u64 = measured
        .iter()
        .filter(|r| r.http_status == Some(200))
        .map(|r| input_tokens(r))
        .sum();

    // Steady state: tokens and completions after the first 10 % of the window.
    let cut = start + (end.saturating_sub(start)) / 10;
    let steady_s = end.saturating_sub(cut) as f64 / 1e9;
    let steady_tokens: u64 = measured
        .iter()
        .flat_map(|r| r.chunks.iter())
        .filter(|c| c.at >= cut)
        .map(|c| c.tokens as u64)
        .sum();
    let steady_done = ok.iter().filter(|r| r.finished_at >= cut).count();
    let steady_state = SteadyState {
        excluded_s: cut.saturating_sub(start) as f64 / 1e9,
        output_tokens_per_s: if steady_s > 0.0 {
            steady_tokens as f64 / steady_s
        } else {
            0.0
        },
        requests_per_s: if steady_s > 0.0 {
            steady_done as f64 / steady_s
        } else {
            0.0
        },
    };

    let itl_ms = dist(metrics.iter().flat_map(|m| m.itl_ms.iter().copied()));
    let ttft_ms = dist(metrics.iter().map(|m| m.ttft_ms));

    let mut by_out: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_chunk: BTreeMap<String, u64> = BTreeMap::new();
    for r in &ok {
        let o = match r.output_tokens_source {
            TokenSource::ServerUsage => "server_usage",
            TokenSource::Tokenizer => "tokenizer",
            TokenSource::None => "none",
        };
        *by_out.entry(o.into()).or_default() += 1;
        let c = match r.chunk_tokens_source {
            ChunkTokenSource::StreamedUsage => "streamed_usage",
            ChunkTokenSource::OnePerChunk => "one_per_chunk",
            ChunkTokenSource::Tokenizer => "tokenizer",
        };
        *by_chunk.entry(c.into()).or_default() += 1;
    }
    let server_prompt_counts = ok
        .iter()
        .filter(|r| r.usage_prompt_tokens().is_some())
        .count();
    let token_counting = TokenCounting {
        output_tokens_source: by_out,
        chunk_tokens_source: by_chunk,
        input_tokens_source: if !ok.is_empty() && server_prompt_counts == ok.len() {
            "server_usage".into()
        } else {
            "tokenizer".into()
        },
    };

    let ttft_by_input_tokens = bucket_ttft(&measured, &per_request);
    let server = server_comparison(&measured, &per_request);
    let slo_result = slo.map(|s| {
        evaluate(
            s,
            &per_request.iter().map(Option::as_ref).collect::<Vec<_>>(),
            duration_s,
        )
    });

    let mut summary = RunSummary {
        window,
        ttft_ms,
        tpot_ms: dist(metrics.iter().filter_map(|m| m.tpot_ms)),
        itl_tail_ratio: itl_ms.filter(|d| d.p50 > 0.0).map(|d| d.p99 / d.p50),
        itl_ms,
        e2e_ms: dist(metrics.iter().map(|m| m.e2e_ms)),
        jitter_ms: dist(metrics.iter().filter_map(|m| m.jitter_ms)),
        max_pause_ms: dist(metrics.iter().filter_map(|m| m.max_pause_ms)),
        ttfb_ms: dist(metrics.iter().filter_map(|m| m.ttfb_ms)),
        time_to_first_reasoning_ms: dist(
            metrics.iter().filter_map(|m| m.time_to_first_reasoning_ms),
        ),
        normalized_latency_ms_per_token: dist(
            metrics.iter().filter_map(|m| m.normalized_ms_per_token),
        ),
        decode_tokens_per_s: dist(metrics.iter().filter_map(|m| m.decode_tokens_per_s)),
        ttft_from_schedule_ms: dist(metrics.iter().filter_map(|m| m.ttft_from_schedule_ms)),
        e2e_from_schedule_ms: dist(metrics.iter().filter_map(|m| m.e2e_from_schedule_ms)),
        connect_ms: dist(measured.iter().map(|r| r.connect_ns as f64 / 1e6)),
        output_tokens_per_s: per_s(total_output_tokens as f64),
        input_tokens_per_s: per_s(total_input_tokens as f64),
        requests_per_s: per_s(counts.completed as f64),
        total_output_tokens,
        total_input_tokens,
        success_rate: if counts.total == 0 {
            0.0
        } else {
            counts.completed as f64 / counts.total as f64
        },
        requests: counts,
        steady_state,
        itl_method,
        token_counting,
        ttft_by_input_tokens,
        server,
        goodput: slo_result,
        warnings: Vec::new(),
        experience: None,
    };
    summary.warnings = warnings(&summary);
    summary
}

fn bucket_ttft(
    measured: &[&RequestRecord],
    per_request: &[Option<RequestMetrics>],
) -> Vec<InputBucket> {
    let mut out = Vec::new();
    let lens: Vec<u64> = measured.iter().map(|r| input_tokens(r)).collect();
    if lens.iter().min() == lens.iter().max() {
        return out; // fixed input length: one bucket says nothing more than Table 1
    }
    for (lo, hi, label) in INPUT_BUCKETS {
        let mut v: Vec<f64> = measured
            .iter()
            .zip(per_request)
            .zip(&lens)
            .filter(|(_, &len)| len >= lo as u64 && len < hi as u64)
            .filter_map(|((_, m), _)| m.as_ref().map(|m| m.ttft_ms))
            .collect();
        if let Some(d) = Distribution::of(&mut v) {
            out.push(InputBucket {
                label: label.into(),
                n: d.n,
                p50_ms: d.p50,
                p95_ms: d.p95,
                p99_ms: d.p99,
            });
        }
    }
    out
}

fn server_comparison(
    measured: &[&RequestRecord],
    per_request: &[Option<RequestMetrics>],
) -> Option<ServerComparison> {
    let pairs: Vec<(&RequestRecord, &RequestMetrics)> = measured
        .iter()
        .zip(per_request)
        .filter_map(|(r, m)| Some((*r, m.as_ref()?)))
        .filter(|(r, _)| r.server_timing.is_some())
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let timing = |r: &RequestRecord| r.server_timing.clone().unwrap_or_default();
    Some(ServerComparison {
        prompt_ms: dist(pairs.iter().filter_map(|(r, _)| timing(r).prompt_ms)),
        ttft_minus_prompt_ms: dist(
            pairs
                .iter()
                .filter_map(|(r, m)| Some(m.ttft_ms - timing(r).prompt_ms?)),
        ),
        server_tpot_ms: dist(pairs.iter().filter_map(|(r, _)| {
            let t = timing(r);
            let n = t.predicted_n? as f64;
            let ms = t.predicted_ms?;
            (n >= 1.0).then(|| ms / n)
        })),
        decode_rate_ratio: dist(pairs.iter().filter_map(|(r, m)| {
            let server = timing(r).predicted_per_second?;
            let client = m.decode_tokens_per_s?;
            (server > 0.0).then(|| client / server)
        })),
        requests_with_cache_hits: pairs
            .iter()
            .filter(|(r, _)| timing(r).cache_n.unwrap_or(0) > 0)
            .count() as u64,
    })
}

fn warnings(s: &RunSummary) -> Vec<String> {
    let mut w = Vec::new();
    for (name, d) in [
        ("TTFT", s.ttft_ms),
        ("TPOT", s.tpot_ms),
        ("E2E", s.e2e_ms),
        ("ITL", s.itl_ms),
    ] {
        let Some(d) = d else { continue };
        if d.n < samples_needed(99.0) {
            w.push(format!(
                "{name} P99 from {} samples: below the 1,000 the draft requires (5.1.4.3); treat P99 as indicative",
                d.n
            ));
        }
        if d.n < samples_needed(99.9) && d.n >= samples_needed(99.0) {
            w.push(format!(
                "{name} P99.9 from {} samples: below the 10,000 the draft requires (5.1.4.3)",
                d.n
            ));
        }
    }
    if s.requests.total > 0 && s.requests.completed == 0 {
        w.push("no request completed: every latency figure is missing".into());
    } else if s.requests.failed > 0 {
        w.push(format!(
            "{} of {} requests failed ({}); latency figures cover completed requests only",
            s.requests.failed,
            s.requests.total,
            s.requests
                .failed_by_kind
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if s.requests.ended_early > 0 {
        w.push(format!(
            "{} requests ended before max_tokens (EOS or stop): output lengths differ from the workload's",
            s.requests.ended_early
        ));
    }
    if s.itl_method.option == ItlOption::A {
        w.push(format!(
            "ITL reported as time between chunks: {}",
            s.itl_method.reason
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{FailureKind, Outcome};

    const MS: u64 = 1_000_000;

    fn ok(id: u64, sent_ms: u64, token_ms: &[u64]) -> RequestRecord {
        RequestRecord::completed_for_tests(id, sent_ms, token_ms, 100)
    }

    #[test]
    fn hand_computed_run() {
        // Two requests over a 1 s window; one failure; one warm-up request ignored.
        let a = ok(0, 0, &[100, 120, 140, 160, 180]);
        let b = ok(1, 500, &[700, 750, 800, 850, 1000]);
        let mut failed = ok(2, 200, &[400]);
        failed.outcome = Outcome::failed(FailureKind::StreamCut, "cut");
        failed.finished_at = 450 * MS;
        let mut warm = ok(3, 0, &[5000]);
        warm.phase = Phase::Warmup;
        let s = summarize(&[a, b, failed, warm], None);
        assert_eq!(
            (s.requests.total, s.requests.completed, s.requests.failed),
            (3, 2, 1)
        );
        assert_eq!(s.requests.failed_by_kind["stream_cut"], 1);
        assert_eq!(s.window.duration_s, 1.0);
        assert_eq!(s.total_output_tokens, 11); // 5 + 5 + 1 delivered before the cut
        assert_eq!(s.output_tokens_per_s, 11.0);
        assert_eq!(s.requests_per_s, 2.0);
        assert_eq!(s.total_input_tokens, 300);
        let ttft = s.ttft_ms.unwrap();
        assert_eq!(
            (ttft.n, ttft.min, ttft.max, ttft.mean),
            (2, 100.0, 200.0, 150.0)
        );
        let tpot = s.tpot_ms.unwrap();
        assert_eq!((tpot.min, tpot.max), (20.0, 75.0));
        let itl = s.itl_ms.unwrap();
        assert_eq!(itl.n, 8);
        assert_eq!(itl.max, 150.0);
        assert_eq!(s.max_pause_ms.unwrap().max, 150.0);
        assert_eq!(s.itl_method.option, ItlOption::B);
        // Steady state keeps what arrived from 100 ms on (a token at 100 ms included): 11 over 0.9 s.
        assert!((s.steady_state.output_tokens_per_s - 11.0 / 0.9).abs() < 1e-9);
        assert!(s.warnings.iter().any(|w| w.contains("P99 from 2 samples")));
        assert!(s.ttft_by_input_tokens.is_empty());
    }

    #[test]
    fn multi_token_chunks_switch_to_option_a() {
        let mut a = ok(0, 0, &[100, 200]);
        a.chunks.iter_mut().for_each(|c| c.tokens = 4);
        a.output_tokens = 8;
        let s = summarize(&[a], None);
        assert_eq!(s.itl_method.option, ItlOption::A);
        assert_eq!(s.itl_method.mean_tokens_per_chunk, 4.0);
    }
}
