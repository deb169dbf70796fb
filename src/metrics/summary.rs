//! From all records of a run to its one summary: distributions, throughput, goodput, the
//! user-experience figures, failures and warnings. Pure: records and parameters in, one
//! `RunSummary` out; every per-request measurement is computed once, here.

use super::distribution::{samples_needed, Distribution};
use super::experience::{experience, Experience, FluidityParams};
use super::failures::{breakdown, FailureBreakdown};
use super::modality::{shape, Shape};
use super::request::{measure, ItlOption, RequestMetrics};
use super::slo::{evaluate, RunFigures, RunMetric, SloResult, SloSpec};
use super::ux::UxParams;
use super::warnings::Warning;
use crate::clock::Nanos;
use crate::record::{ChunkTokenSource, FailureKind, Phase, RequestRecord, TokenSource};
use serde::Serialize;
use std::collections::BTreeMap;

/// Everything the summary needs besides the records (all known before the run).
#[derive(Debug, Clone, Default)]
pub struct SummaryParams {
    pub slo: Option<SloSpec>,
    pub ux: UxParams,
    pub fluidity: FluidityParams,
    /// Isolated TTFT (P50, P99) per class, from `--baseline`.
    pub baseline: BTreeMap<String, (f64, f64)>,
    /// What the warm-up did (for its warnings), when the run had one to report.
    pub warmup: Option<crate::record::run::WarmupReport>,
    /// Warnings the caller knows of (e.g. a prefill curve profiled elsewhere), appended.
    pub extra_warnings: Vec<Warning>,
}

/// Request counts of the measured phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct RequestCounts {
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    pub failed_by_kind: BTreeMap<String, u64>,
    /// Requests whose bytes never reached the server (no connection).
    pub never_sent: u64,
    /// Completed with fewer output tokens than `max_tokens` asked for.
    pub ended_early: u64,
    /// Completed requests that streamed reasoning before their answer.
    pub with_reasoning: u64,
}

/// The measurement window: from the first measured request's attempt (its planned send time
/// in open loop) to the last byte of any measured request.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
pub struct Window {
    #[serde(skip)]
    pub start: Nanos,
    #[serde(skip)]
    pub end: Nanos,
    pub duration_s: f64,
}

/// Throughput over the steady part of the window (the first 10 % excluded, draft 5.2.3.2).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
pub struct SteadyState {
    pub excluded_s: f64,
    pub output_tokens_per_s: f64,
    pub requests_per_s: f64,
    /// Prompt tokens per second whose prefill finished in the steady part (the request's
    /// first streamed token at or after the cut): the input rate over the same span as the
    /// output rate beside it.
    #[serde(default)]
    pub input_tokens_per_s: f64,
}

/// Open loop: did the server keep up with the arrivals (draft 5.2.3.1)?
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct ArrivalBalance {
    /// Planned arrivals per second over the steady part of the arrival span.
    pub arrival_rate_per_s: f64,
    /// Completions per second over the same span.
    pub completion_rate_per_s: f64,
    /// completion / arrival; below 0.9 the draft calls the server saturated. `None` when the
    /// run was too short compared with its latency to tell (arrival span < 3× the shortest
    /// E2E, the latency without queueing).
    pub completion_share: Option<f64>,
    pub saturated: bool,
}

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

/// TTFT percentiles of one input-length bucket (draft 5.1.4.2).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct InputBucket {
    pub label: String,
    pub n: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

/// Client measurements next to what the server said about the same requests.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct RunSummary {
    pub requests: RequestCounts,
    pub failures: FailureBreakdown,
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
    /// Modes and tail of the ITL distribution.
    pub itl_shape: Shape,
    /// Every generated token (reasoning included) per second of the window.
    pub output_tokens_per_s: f64,
    /// Answer tokens only, per second of the window.
    pub answer_tokens_per_s: f64,
    pub input_tokens_per_s: f64,
    pub requests_per_s: f64,
    pub total_output_tokens: u64,
    pub total_reasoning_tokens: u64,
    pub total_input_tokens: u64,
    pub success_rate: f64,
    pub steady_state: SteadyState,
    pub arrival_balance: Option<ArrivalBalance>,
    pub itl_method: ItlChoice,
    pub token_counting: TokenCounting,
    pub ttft_by_input_tokens: Vec<InputBucket>,
    pub server: Option<ServerComparison>,
    /// SLO verdicts, when `--slo` was given.
    pub slo: Option<SloResult>,
    /// User-experience metrics; flattened into `summary` in `run.json`.
    #[serde(flatten)]
    pub experience: Experience,
    pub warnings: Vec<Warning>,
    /// Present when the run had more requests than the summary keeps in memory, and was
    /// summarised as its records streamed past (docs/metrics.md, "Long runs").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streamed: Option<super::stream::Streamed>,
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

pub(crate) const INPUT_BUCKETS: [(u32, u32, &str); 6] = [
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

/// The measurement window of `measured`: first attempt to last byte.
pub fn window_of(measured: &[&RequestRecord]) -> Window {
    let start = measured.iter().map(|r| r.attempted_at()).min().unwrap_or(0);
    let end = measured
        .iter()
        .map(|r| r.finished_at.max(r.attempted_at()))
        .max()
        .unwrap_or(0);
    Window {
        start,
        end,
        duration_s: end.saturating_sub(start) as f64 / 1e9,
    }
}

/// Summarises the measured requests among `records`.
pub fn summarize(records: &[RequestRecord], params: &SummaryParams) -> RunSummary {
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
        if r.sent_at.is_none() {
            counts.never_sent += 1;
        }
        match r.outcome.failure_kind() {
            None => {
                counts.completed += 1;
                if r.output_tokens < r.max_tokens {
                    counts.ended_early += 1;
                }
                if !r.reasoning_chunks.is_empty() {
                    counts.with_reasoning += 1;
                }
            }
            Some(kind) => {
                counts.failed += 1;
                *counts.failed_by_kind.entry(kind.to_string()).or_default() += 1;
            }
        }
    }

    let window = window_of(&measured);
    let duration_s = window.duration_s;
    let per_s = |x: f64| {
        if duration_s > 0.0 {
            x / duration_s
        } else {
            0.0
        }
    };
    let total_output_tokens: u64 = measured.iter().map(|r| delivered_tokens(r)).sum();
    let total_answer_tokens: u64 = measured.iter().map(|r| delivered_answer_tokens(r)).sum();
    let total_reasoning_tokens = total_output_tokens - total_answer_tokens;
    let total_input_tokens: u64 = measured
        .iter()
        .filter(|r| r.http_status == Some(200))
        .map(|r| input_tokens(r))
        .sum();

    // Steady state: tokens and completions after the first 10 % of the window.
    let (start, end) = (window.start, window.end);
    let cut = start + (end.saturating_sub(start)) / 10;
    let steady_s = end.saturating_sub(cut) as f64 / 1e9;
    let steady_tokens: u64 = measured
        .iter()
        .flat_map(|r| r.chunks.iter().chain(&r.reasoning_chunks))
        .filter(|c| c.at >= cut)
        .map(|c| c.tokens as u64)
        .sum();
    let steady_done = ok.iter().filter(|r| r.finished_at >= cut).count();
    let steady_input: u64 = measured
        .iter()
        .filter(|r| {
            // Prefill is done when the first token (answer or reasoning) streams.
            let first = r
                .chunks
                .first()
                .into_iter()
                .chain(r.reasoning_chunks.first());
            first.map(|c| c.at).min().is_some_and(|t| t >= cut)
        })
        .map(|r| input_tokens(r))
        .sum();
    let steady_per_s = |x: f64| if steady_s > 0.0 { x / steady_s } else { 0.0 };
    let steady_state = SteadyState {
        excluded_s: cut.saturating_sub(start) as f64 / 1e9,
        output_tokens_per_s: steady_per_s(steady_tokens as f64),
        requests_per_s: steady_per_s(steady_done as f64),
        input_tokens_per_s: steady_per_s(steady_input as f64),
    };

    let itl_values: Vec<f64> = metrics
        .iter()
        .flat_map(|m| m.itl_ms.iter().copied())
        .collect();
    let itl_ms = dist(itl_values.iter().copied());
    let ttft_ms = dist(metrics.iter().map(|m| m.ttft_ms));
    let tpot_ms = dist(metrics.iter().filter_map(|m| m.tpot_ms));
    let e2e_ms = dist(metrics.iter().map(|m| m.e2e_ms));
    let jitter_ms = dist(metrics.iter().filter_map(|m| m.jitter_ms));
    let max_pause_ms = dist(metrics.iter().filter_map(|m| m.max_pause_ms));

    let token_counting = token_counting(&ok);
    let ttft_by_input_tokens = bucket_ttft(&measured, &per_request);
    let server = server_comparison(&measured, &per_request);
    let exp = experience(
        &measured,
        &per_request,
        &params.ux,
        &params.fluidity,
        &params.baseline,
        tpot_ms,
        itl_ms,
    );
    let output_tokens_per_s = per_s(total_output_tokens as f64);
    let requests_per_s = per_s(counts.completed as f64);
    let success_rate = if counts.total == 0 {
        0.0
    } else {
        counts.completed as f64 / counts.total as f64
    };
    let slo = params.slo.as_ref().map(|spec| {
        let idle = exp.user_idle_ms;
        let distribution = |m: RunMetric| match m {
            RunMetric::TtftMs => ttft_ms,
            RunMetric::TpotMs => tpot_ms,
            RunMetric::E2eMs => e2e_ms,
            RunMetric::ItlMs => itl_ms,
            RunMetric::JitterMs => jitter_ms,
            RunMetric::MaxPauseMs => max_pause_ms,
            RunMetric::UserIdleMs => idle,
        };
        evaluate(
            spec,
            &per_request.iter().map(Option::as_ref).collect::<Vec<_>>(),
            duration_s,
            &RunFigures {
                distribution: &distribution,
                output_tokens_per_s,
                requests_per_s,
                success_rate,
            },
        )
    });
    let arrival_balance = arrival_balance(&measured, e2e_ms);

    let mut summary = RunSummary {
        failures: breakdown(&measured),
        window,
        ttft_ms,
        tpot_ms,
        itl_tail_ratio: itl_ms.filter(|d| d.p50 > 0.0).map(|d| d.p99 / d.p50),
        itl_shape: shape(&itl_values, itl_ms.as_ref()),
        itl_ms,
        e2e_ms,
        jitter_ms,
        max_pause_ms,
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
        output_tokens_per_s,
        answer_tokens_per_s: per_s(total_answer_tokens as f64),
        input_tokens_per_s: per_s(total_input_tokens as f64),
        requests_per_s,
        total_output_tokens,
        total_reasoning_tokens,
        total_input_tokens,
        success_rate,
        requests: counts,
        steady_state,
        arrival_balance,
        itl_method,
        token_counting,
        ttft_by_input_tokens,
        server,
        slo,
        experience: exp,
        warnings: Vec::new(),
        streamed: None,
    };
    let transient = startup_transient(&measured, &per_request, window, ttft_ms.map(|d| d.p99));
    add_warnings(&mut summary, transient, params);
    summary
}

/// The summary's warnings: from its figures, the start-up transient found (if any), then
/// the caller's and the warm-up's.
pub(crate) fn add_warnings(
    summary: &mut RunSummary,
    transient: Option<Warning>,
    params: &SummaryParams,
) {
    summary.warnings = warnings(summary);
    summary.warnings.extend(transient);
    summary
        .warnings
        .extend(params.extra_warnings.iter().cloned());
    if let Some(w) = &params.warmup {
        if w.policy.starts_with("none") {
            summary.warnings.push(Warning::ColdStart);
        } else if w.capped {
            summary.warnings.push(Warning::WarmupCapped {
                requests: w.requests,
                output_tokens: w.output_tokens,
                cap_s: w.cap_s,
            });
        }
    }
}

fn token_counting(ok: &[&RequestRecord]) -> TokenCounting {
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

/// Arrivals against completions over the steady part of an open-loop run's arrival span
/// (draft 5.2.3.1: completion rate below 90 % of the arrival rate means saturation).
fn arrival_balance(
    measured: &[&RequestRecord],
    e2e: Option<Distribution>,
) -> Option<ArrivalBalance> {
    let planned: Vec<Nanos> = measured.iter().filter_map(|r| r.scheduled_at).collect();
    if planned.len() < 10 || planned.len() != measured.len() {
        return None;
    }
    let first = *planned.iter().min()?;
    let last = *planned.iter().max()?;
    let cut = first + (last - first) / 10;
    let span_s = (last - cut) as f64 / 1e9;
    if span_s <= 0.0 {
        return None;
    }
    let arrivals = planned.iter().filter(|&&t| t >= cut && t <= last).count();
    let completions = measured
        .iter()
        .filter(|r| r.outcome.is_ok() && r.finished_at >= cut && r.finished_at <= last)
        .count();
    Some(balance_from(
        arrivals as f64,
        completions as f64,
        span_s,
        e2e,
    ))
}

/// The arrival balance from the arrivals and completions counted over the steady part of
/// the arrival span (`span_s` long).
pub(crate) fn balance_from(
    arrivals: f64,
    completions: f64,
    span_s: f64,
    e2e: Option<Distribution>,
) -> ArrivalBalance {
    let arrival_rate = arrivals / span_s;
    let completion_rate = completions / span_s;
    // Completions trail arrivals by a request's latency: over a span not much longer than
    // that, a server that keeps up would still look short. The shortest E2E stands for the
    // latency without queueing (a saturated server's median grows with the run).
    let long_enough = e2e.is_some_and(|d| span_s * 1e3 >= 3.0 * d.min)
        || (e2e.is_none() && completions == 0.0 && span_s >= 10.0);
    let share = (long_enough && arrival_rate > 0.0).then(|| completion_rate / arrival_rate);
    ArrivalBalance {
        arrival_rate_per_s: arrival_rate,
        completion_rate_per_s: completion_rate,
        completion_share: share,
        saturated: share.is_some_and(|s| s < 0.9),
    }
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

fn warnings(s: &RunSummary) -> Vec<Warning> {
    let mut w = Vec::new();
    for (name, d) in [
        ("TTFT", s.ttft_ms),
        ("TPOT", s.tpot_ms),
        ("E2E", s.e2e_ms),
        ("ITL", s.itl_ms),
    ] {
        let Some(d) = d else { continue };
        if d.n < samples_needed(99.0) {
            w.push(Warning::FewSamples {
                metric: name,
                percentile: "P99",
                samples: d.n,
                needed: samples_needed(99.0),
            });
        } else if d.n < samples_needed(99.9) {
            w.push(Warning::FewSamples {
                metric: name,
                percentile: "P99.9",
                samples: d.n,
                needed: samples_needed(99.9),
            });
        }
    }
    if s.requests.total > 0 && s.requests.completed == 0 {
        w.push(Warning::NoRequestCompleted {
            total: s.requests.total,
        });
    } else if s.requests.failed > 0 {
        w.push(Warning::Failures {
            failed: s.requests.failed,
            total: s.requests.total,
            by_kind: s
                .requests
                .failed_by_kind
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    if s.requests.ended_early > 0 {
        w.push(Warning::EndedEarly {
            requests: s.requests.ended_early,
        });
    }
    if s.requests.with_reasoning > 0 {
        w.push(Warning::ReasoningBeforeAnswer {
            requests: s.requests.with_reasoning,
        });
    }
    if s.itl_method.option == ItlOption::A {
        w.push(Warning::ItlBetweenChunks {
            reason: s.itl_method.reason.clone(),
        });
    }
    if let Some(b) = s.arrival_balance.filter(|b| b.saturated) {
        w.push(Warning::ServerSaturated {
            completion_share: b.completion_share.unwrap_or(0.0),
        });
    }
    if s.experience
        .smooth_goodput
        .as_ref()
        .is_some_and(|g| !g.window.outcome_independent)
    {
        w.push(Warning::UxWindowDependsOnOutcomes);
    }
    w
}

/// The start of a run that counts as its "first seconds": this share of the window…
const STARTUP_SHARE: f64 = 0.1;
/// …and at least this long, s.
const STARTUP_MIN_S: f64 = 1.0;
/// A start-up transient: the first seconds' TTFT P99 at least this many times the rest's…
const STARTUP_RATIO: f64 = 3.0;
/// …and at least this much above it, ms (a few ms either way is not a transient).
const STARTUP_MIN_EXCESS_MS: f64 = 20.0;

/// A start-up transient: the TTFT P99 of the requests attempted in the run's first seconds
/// ([`STARTUP_SHARE`] of the window, at least [`STARTUP_MIN_S`], at most half) far above
/// the rest's. Needs 5 early and 20 later requests with a TTFT.
pub fn startup_transient(
    measured: &[&RequestRecord],
    per_request: &[Option<RequestMetrics>],
    window: Window,
    p99_ms: Option<f64>,
) -> Option<Warning> {
    let span_s = window.duration_s;
    let early_s = (span_s * STARTUP_SHARE)
        .max(STARTUP_MIN_S)
        .min(span_s / 2.0);
    let cut = window.start + (early_s * 1e9) as Nanos;
    let (mut early, mut rest): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for (r, m) in measured.iter().zip(per_request) {
        let Some(m) = m else { continue };
        if r.attempted_at() < cut {
            early.push(m.ttft_ms);
        } else {
            rest.push(m.ttft_ms);
        }
    }
    if early.len() < 5 || rest.len() < 20 {
        return None;
    }
    let early_p99_ms = Distribution::of(&mut early)?.p99;
    let rest_p99_ms = Distribution::of(&mut rest)?.p99;
    let p99_ms = p99_ms.unwrap_or(early_p99_ms);
    (early_p99_ms >= STARTUP_RATIO * rest_p99_ms
        && early_p99_ms - rest_p99_ms >= STARTUP_MIN_EXCESS_MS)
        .then_some(Warning::StartupTransient {
            early_s,
            early_p99_ms,
            rest_p99_ms,
            p99_ms,
        })
}

/// The failure kinds present, for callers that decide an exit status.
pub fn failed_share(s: &RunSummary) -> f64 {
    if s.requests.total == 0 {
        0.0
    } else {
        s.requests.failed as f64 / s.requests.total as f64
    }
}

/// Whether any failure is of `kind`.
pub fn has_failure(s: &RunSummary, kind: FailureKind) -> bool {
    s.failures.by_kind.contains_key(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Chunk, FailureKind, Outcome};
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn ok(id: u64, sent_ms: u64, token_ms: &[u64]) -> RequestRecord {
        RequestRecord::completed_for_tests(id, sent_ms, token_ms, 100)
    }

    fn summarize_plain(records: &[RequestRecord]) -> RunSummary {
        summarize(records, &SummaryParams::default())
    }

    /// The steady input rate counts a prompt when its prefill ends after the cut: the one
    /// whose first token came before it is left out, like its tokens are from the output.
    #[test]
    fn steady_input_rate_counts_prefills_after_the_cut() {
        // Window 0–2,000 ms, cut at 200 ms. First tokens at 150 (before), 600 and 1,500 ms.
        let a = ok(0, 0, &[150, 400]);
        let b = ok(1, 300, &[600, 900]);
        let c = ok(2, 1_000, &[1_500, 2_000]);
        let s = summarize_plain(&[a, b, c]);
        assert_eq!(s.window.duration_s, 2.0);
        assert_eq!(s.steady_state.excluded_s, 0.2);
        assert!((s.steady_state.input_tokens_per_s - 200.0 / 1.8).abs() < 1e-9);
        // Output over the same span: every token at or after 200 ms, 5 of them.
        assert!((s.steady_state.output_tokens_per_s - 5.0 / 1.8).abs() < 1e-9);
    }

    /// Issue 23: every stream started at once on an idle server, TTFT 690 ms in the first
    /// second and 35 ms after, and the run's P99 TTFT was that burst. It is flagged; the
    /// same run without the burst is not.
    #[test]
    fn a_start_up_burst_is_flagged_as_a_transient() {
        // One request every 100 ms for 20 s; the first 10 wait 690 ms for their first token.
        let run = |burst: bool| -> Vec<RequestRecord> {
            (0..200u64)
                .map(|i| {
                    let sent = i * 100;
                    let ttft = if burst && i < 10 { 690 } else { 35 };
                    ok(i, sent, &[sent + ttft, sent + ttft + 10])
                })
                .collect()
        };
        let s = summarize_plain(&run(true));
        let w = s
            .warnings
            .iter()
            .find(|w| w.kind() == "startup_transient")
            .expect("the burst is flagged");
        let Warning::StartupTransient {
            early_s,
            early_p99_ms,
            rest_p99_ms,
            ..
        } = w
        else {
            unreachable!()
        };
        // The first 10 % of the 19.945-s window, 20 requests of which 10 in the burst.
        assert!((early_s - 1.9945).abs() < 1e-9, "{early_s}");
        assert_eq!((*early_p99_ms, *rest_p99_ms), (690.0, 35.0));
        assert!(w.to_string().contains("the run's P99 TTFT"), "{w}");
        let steady = summarize_plain(&run(false));
        assert!(steady
            .warnings
            .iter()
            .all(|w| w.kind() != "startup_transient"));
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
        let s = summarize_plain(&[a, b, failed, warm]);
        assert_eq!(
            (s.requests.total, s.requests.completed, s.requests.failed),
            (3, 2, 1)
        );
        assert_eq!(s.requests.failed_by_kind["stream_cut"], 1);
        assert_eq!(s.failures.by_kind[&FailureKind::StreamCut], 1);
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
        // Prompts whose first token came at 100, 400 and 700 ms: 300 tokens over 0.9 s.
        assert!((s.steady_state.input_tokens_per_s - 300.0 / 0.9).abs() < 1e-9);
        assert!(s.warnings.iter().any(|w| matches!(
            w,
            Warning::FewSamples {
                metric: "TTFT",
                samples: 2,
                ..
            }
        )));
        assert!(s.ttft_by_input_tokens.is_empty());
    }

    /// A request that could not connect never got a `sent_at`; its attempt time still places
    /// it in the window. Before, the window started at the clock's origin: a connect failure
    /// at 60 s cut a 100 tok/s run to 37.5 tok/s.
    #[test]
    fn a_connect_failure_does_not_stretch_the_window() {
        let records: Vec<RequestRecord> = (0..10)
            .map(|i| {
                let start = 60_000 + i * 100;
                ok(
                    i,
                    start,
                    &(1..=10).map(|k| start + k * 10).collect::<Vec<_>>(),
                )
            })
            .chain(std::iter::once(RequestRecord {
                id: 10,
                queued_at: 60_500 * MS,
                finished_at: 60_501 * MS,
                outcome: Outcome::failed(FailureKind::Connect, "connection refused"),
                max_tokens: 10,
                ..Default::default()
            }))
            .collect();
        let s = summarize_plain(&records);
        // 100 tokens from 60.0 s to 61.0 s.
        assert_eq!(s.window.duration_s, 1.0);
        assert_eq!(s.output_tokens_per_s, 100.0);
        assert_eq!(s.requests.never_sent, 1);
    }

    #[test]
    fn option_a_is_chosen_by_the_share_of_tokens_not_of_chunks() {
        // Nine single-token chunks and one 8-token chunk: 90 % of chunks carry one token,
        // but only 9 of 17 tokens (53 %) arrived alone.
        let mut a = ok(0, 0, &[100, 110, 120, 130, 140, 150, 160, 170, 180, 190]);
        a.chunks[9].tokens = 8;
        a.output_tokens = 17;
        a.max_tokens = 17;
        let s = summarize_plain(&[a]);
        assert_eq!(s.itl_method.option, ItlOption::A);
        assert!((s.itl_method.single_token_share - 9.0 / 17.0).abs() < 1e-12);
        assert_eq!(s.itl_method.title(), "Time Between Chunks");
    }

    #[test]
    fn reasoning_tokens_count_as_output_and_the_answer_is_reported_beside() {
        let mut a = ok(0, 0, &[500, 600, 700, 800]);
        a.reasoning_chunks = (1..=4)
            .map(|k| Chunk {
                at: k * 100 * MS,
                tokens: 3,
                bytes: 9,
            })
            .collect();
        a.reasoning_tokens = 12;
        a.output_tokens = 16;
        a.max_tokens = 16;
        let s = summarize_plain(&[a]);
        // 16 tokens over the 0.8 s window; 4 of them answer.
        assert_eq!(s.output_tokens_per_s, 20.0);
        assert_eq!(s.answer_tokens_per_s, 5.0);
        assert_eq!(s.total_reasoning_tokens, 12);
        assert_eq!(s.requests.ended_early, 0, "reasoning is not ending early");
        assert_eq!(s.requests.with_reasoning, 1);
        assert_eq!(s.time_to_first_reasoning_ms.unwrap().p50, 100.0);
        assert_eq!(s.ttft_ms.unwrap().p50, 500.0);
    }

    /// An open-loop run of `n` requests planned 200 ms apart, each answering 8 tokens 50 ms
    /// apart after `ttft_ms[i]`.
    fn open_loop(ttft_ms: &[u64]) -> Vec<RequestRecord> {
        ttft_ms
            .iter()
            .enumerate()
            .map(|(i, &ttft)| {
                let start = i as u64 * 200;
                let mut r = ok(
                    i as u64,
                    start,
                    &(0..8).map(|k| start + ttft + k * 50).collect::<Vec<_>>(),
                );
                r.scheduled_at = Some(start * MS);
                r
            })
            .collect()
    }

    /// Turns request `i` into one that ended after `kept` tokens: rejected (429) when 0,
    /// else a stream cut.
    fn abandon(records: &mut [RequestRecord], i: usize, kept: usize) {
        let r = &mut records[i];
        r.chunks.truncate(kept);
        if kept == 0 {
            r.first_content = None;
            r.http_status = Some(429);
        }
        r.finished_at = r.chunks.last().map_or(r.queued_at + MS, |c| c.at + MS);
        r.outcome = Outcome::failed(FailureKind::HttpStatus, "HTTP 429");
        r.output_tokens = kept as u32;
    }

    #[test]
    fn rejecting_the_slowest_request_no_longer_raises_smooth_goodput() {
        // The last request is very slow (TTFT 20 s). Rejecting it with a 429 shortened the
        // old window (last byte) from ~22 s to ~1 s and raised smooth goodput many times.
        let mut ttfts = vec![100; 6];
        ttfts.push(20_000);
        let full = open_loop(&ttfts);
        let mut rejected = full.clone();
        abandon(&mut rejected, 6, 0);
        let g = |recs: &[RequestRecord]| {
            let s = summarize_plain(recs);
            let sg = s.experience.smooth_goodput.unwrap();
            assert!(sg.window.outcome_independent);
            (sg.value, sg.window.duration_s)
        };
        let (full_g, full_t) = g(&full);
        let (rej_g, rej_t) = g(&rejected);
        assert_eq!(full_t, rej_t, "T does not depend on outcomes");
        assert!(rej_g <= full_g, "{rej_g} > {full_g}");
    }

    proptest! {
        /// Dropping or abandoning any request of an open-loop run, after any number of its
        /// tokens, never raises smooth goodput, whatever the run's timings. T is whatever
        /// the summary computes (it is not held fixed by the test).
        #[test]
        fn abandoning_any_request_never_raises_smooth_goodput(
            ttfts in proptest::collection::vec(10u64..30_000, 2..12),
            which in 0usize..12,
            kept in 0usize..9,
            alpha in 0.0f64..20.0,
        ) {
            let params = SummaryParams {
                ux: UxParams { alpha, ..UxParams::default() },
                ..SummaryParams::default()
            };
            let full = open_loop(&ttfts);
            let which = which % full.len();
            let mut dropped = full.clone();
            abandon(&mut dropped, which, kept.min(8));
            let g_full = summarize(&full, &params).experience.smooth_goodput.unwrap().value;
            let g_drop = summarize(&dropped, &params).experience.smooth_goodput.unwrap().value;
            prop_assert!(g_drop <= g_full + 1e-9, "{g_drop} > {g_full}");
        }
    }

    #[test]
    fn open_loop_completions_below_90_percent_of_arrivals_is_saturation() {
        // 100 arrivals 100 ms apart over 9.9 s; the server finishes one every 200 ms.
        let records: Vec<RequestRecord> = (0..100)
            .map(|i| {
                let planned = i * 100;
                let done = 200 + i * 200;
                let mut r = ok(i, planned, &[done - 10, done]);
                r.scheduled_at = Some(planned * MS);
                r
            })
            .collect();
        let s = summarize_plain(&records);
        let b = s.arrival_balance.unwrap();
        assert!(b.saturated, "{b:?}");
        assert!(b.completion_share.unwrap() < 0.6);
        assert!(s
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::ServerSaturated { .. })));
    }
}
