//! From all records of a run to its one summary: distributions, throughput, goodput, the
//! user-experience figures, failures and warnings. Pure: records and parameters in, one
//! `RunSummary` out; every per-request measurement is computed once, here.

use super::experience::{experience, Experience, FluidityParams};
use super::failures::{breakdown, FailureBreakdown};
use super::modality::{shape, Shape};
use super::request::{measure, RequestMetrics};
use super::slo::{evaluate, RunFigures, RunMetric, SloResult, SloSpec};
use super::ux::UxParams;
use super::warnings::Warning;
use crate::clock::Nanos;
use crate::record::{FailureKind, Phase, RequestRecord};
use crate::stats::distribution::Distribution;
use serde::Serialize;
use std::collections::BTreeMap;

mod bounds;
mod breakdowns;
mod method;
#[cfg(test)]
mod tests;
mod warnings;
mod window;

pub use bounds::{from_sketch, Bounded, SummaryBounds};
pub(crate) use breakdowns::INPUT_BUCKETS;
use breakdowns::{bucket_ttft, server_comparison};
pub use breakdowns::{InputBucket, ServerComparison};
use method::token_counting;
pub use method::{
    choose_itl, choose_itl_from, has_server_times, input_tokens, ChunkShares, ItlChoice,
    TokenCounting, TokenSources,
};
pub(crate) use method::{delivered_answer_tokens, delivered_tokens};
pub(crate) use warnings::add_warnings;
pub use warnings::startup_transient;
use window::arrival_balance;
pub(crate) use window::balance_from;
pub use window::{
    arrived_at, ramp_up_skip, steady_span, window_of, ArrivalBalance, SteadyBasis, SteadyState,
    Window,
};

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
    /// The workload reuses prompt prefixes on purpose (a system prompt, prefix groups,
    /// sessions, agents, trace blocks, a cache test's warm level): cached prompt tokens are
    /// then expected, and not warned about.
    pub expects_cached_prompts: bool,
    /// Two-sided confidence of the percentiles' intervals (0–1); `None`: 95 %.
    pub confidence: Option<f64>,
}

impl SummaryParams {
    /// The confidence of the percentiles' intervals, 0–1.
    pub fn confidence(&self) -> f64 {
        self.confidence
            .unwrap_or(crate::stats::percentile_bounds::DEFAULT_CONFIDENCE)
    }
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

impl RequestCounts {
    /// Counts one measured request.
    pub fn add(&mut self, r: &RequestRecord) {
        self.total += 1;
        if r.sent_at.is_none() {
            self.never_sent += 1;
        }
        match r.outcome.failure_kind() {
            None => {
                self.completed += 1;
                if r.output_tokens < r.max_tokens {
                    self.ended_early += 1;
                }
                if !r.reasoning_chunks.is_empty() {
                    self.with_reasoning += 1;
                }
            }
            Some(kind) => {
                self.failed += 1;
                *self.failed_by_kind.entry(kind.to_string()).or_default() += 1;
            }
        }
    }
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
    /// Items answered per second of the window: embeddings inputs, or rerank documents
    /// scored, by the requests that completed (0 for the generative APIs).
    #[serde(default)]
    pub items_per_s: f64,
    /// Items answered by the requests that completed (non-generative APIs).
    #[serde(default)]
    pub total_items: u64,
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
    /// Images and audio sent, the time their upload took and its share of TTFT; present
    /// when a measured request carried any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<super::media::MediaSummary>,
    /// Sessions (multi-turn chat, agents): wall, model, tool and think time, TTFT by step,
    /// prompt tokens served from cache; present when the workload has sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<super::sessions::SessionSummary>,
    /// Prompt tokens of the measured requests served from the server's prefix cache, as the
    /// responses report them (usage `cached_tokens`, llama.cpp `timings.cache_n`); absent
    /// when no response said (never a zero for "not reported").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<super::cache::CacheFigures>,
    /// Present when the run had more requests than the summary keeps in memory, and was
    /// summarised as its records streamed past (docs/metrics.md, "Long runs").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streamed: Option<super::stream::Streamed>,
    /// The confidence interval of each headline percentile (docs/metrics.md, "How far a
    /// percentile can be trusted"); absent in runs from before they were computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile_bounds: Option<SummaryBounds>,
}

fn dist<I: IntoIterator<Item = f64>>(values: I) -> Option<Distribution> {
    Distribution::of(&mut values.into_iter().collect())
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

    let mut summary = aggregate(&measured, &ok, &per_request, itl_method, params);
    let confidence = params.confidence();
    summary.percentile_bounds = Some(bounds::exact(
        &measured,
        &per_request,
        &summary.window,
        confidence,
    ));
    // The SLO reads the summary's own distributions and rates, so it is judged once they
    // are in place.
    summary.slo = params
        .slo
        .as_ref()
        .map(|spec| slo_of(spec, &summary, &per_request));
    let transient = startup_transient(
        &measured,
        &per_request,
        summary.window,
        summary.ttft_ms.map(|d| d.p99),
    );
    add_warnings(&mut summary, transient, params);
    summary
}

/// The summary's counts, rates and distributions over the measured requests (`ok`: those
/// that completed), before its SLO verdicts and warnings.
fn aggregate(
    measured: &[&RequestRecord],
    ok: &[&RequestRecord],
    per_request: &[Option<RequestMetrics>],
    itl_method: ItlChoice,
    params: &SummaryParams,
) -> RunSummary {
    let metrics: Vec<&RequestMetrics> = per_request.iter().flatten().collect();
    let mut counts = RequestCounts::default();
    for r in measured {
        counts.add(r);
    }
    let window = window_of(measured);
    let rates = Rates::of(measured, &counts, window.duration_s);
    let itl_values: Vec<f64> = metrics
        .iter()
        .flat_map(|m| m.itl_ms.iter().copied())
        .collect();
    let itl_ms = dist(itl_values.iter().copied());
    let tpot_ms = dist(metrics.iter().filter_map(|m| m.tpot_ms));
    let e2e_ms = dist(metrics.iter().map(|m| m.e2e_ms));
    let exp = experience(
        measured,
        per_request,
        &params.ux,
        &params.fluidity,
        &params.baseline,
        tpot_ms,
        itl_ms,
    );

    RunSummary {
        failures: breakdown(measured),
        window,
        ttft_ms: dist(generative_ttft(measured, per_request)),
        tpot_ms,
        itl_tail_ratio: itl_ms.filter(|d| d.p50 > 0.0).map(|d| d.p99 / d.p50),
        itl_shape: shape(&itl_values, itl_ms.as_ref()),
        itl_ms,
        e2e_ms,
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
        output_tokens_per_s: rates.output_tokens_per_s,
        answer_tokens_per_s: rates.answer_tokens_per_s,
        input_tokens_per_s: rates.input_tokens_per_s,
        items_per_s: rates.items_per_s,
        total_items: rates.total_items,
        requests_per_s: rates.requests_per_s,
        total_output_tokens: rates.total_output_tokens,
        total_reasoning_tokens: rates.total_reasoning_tokens,
        total_input_tokens: rates.total_input_tokens,
        success_rate: rates.success_rate,
        requests: counts,
        steady_state: steady_state(measured, ok, window),
        arrival_balance: arrival_balance(measured, e2e_ms),
        itl_method,
        token_counting: token_counting(ok),
        ttft_by_input_tokens: bucket_ttft(measured, per_request),
        server: server_comparison(measured, per_request),
        slo: None,
        experience: exp,
        warnings: Vec::new(),
        media: super::media::MediaTally::of(measured.iter().copied()).finish(),
        sessions: super::sessions::SessionTally::of(measured.iter().copied()).finish(),
        prompt_cache: super::cache::CacheFigures::of_measured(measured.iter().copied()).reported(),
        streamed: None,
        percentile_bounds: None,
    }
}

/// TTFT of the requests that have a first token, ms: a non-generative request (`items >
/// 0`, answered whole) has only its end-to-end latency.
fn generative_ttft(
    measured: &[&RequestRecord],
    per_request: &[Option<RequestMetrics>],
) -> Vec<f64> {
    per_request
        .iter()
        .zip(measured)
        .filter(|(_, r)| r.items == 0)
        .filter_map(|(m, _)| m.as_ref().map(|m| m.ttft_ms))
        .collect()
}

/// Token totals and rates over the measurement window.
struct Rates {
    output_tokens_per_s: f64,
    answer_tokens_per_s: f64,
    input_tokens_per_s: f64,
    items_per_s: f64,
    total_items: u64,
    requests_per_s: f64,
    total_output_tokens: u64,
    total_reasoning_tokens: u64,
    total_input_tokens: u64,
    success_rate: f64,
}

impl Rates {
    fn of(measured: &[&RequestRecord], counts: &RequestCounts, duration_s: f64) -> Rates {
        let per_s = |x: f64| {
            if duration_s > 0.0 {
                x / duration_s
            } else {
                0.0
            }
        };
        let total_output_tokens: u64 = measured.iter().map(|r| delivered_tokens(r)).sum();
        let total_answer_tokens: u64 = measured.iter().map(|r| delivered_answer_tokens(r)).sum();
        let total_input_tokens: u64 = measured
            .iter()
            .filter(|r| r.http_status == Some(200))
            .map(|r| input_tokens(r))
            .sum();
        let total_items: u64 = measured
            .iter()
            .filter(|r| r.outcome.is_ok())
            .map(|r| r.items as u64)
            .sum();
        Rates {
            items_per_s: per_s(total_items as f64),
            total_items,
            output_tokens_per_s: per_s(total_output_tokens as f64),
            answer_tokens_per_s: per_s(total_answer_tokens as f64),
            input_tokens_per_s: per_s(total_input_tokens as f64),
            requests_per_s: per_s(counts.completed as f64),
            total_output_tokens,
            total_reasoning_tokens: total_output_tokens - total_answer_tokens,
            total_input_tokens,
            success_rate: if counts.total == 0 {
                0.0
            } else {
                counts.completed as f64 / counts.total as f64
            },
        }
    }
}

/// Steady state: tokens and completions after the first 10 % of the window.
fn steady_state(measured: &[&RequestRecord], ok: &[&RequestRecord], window: Window) -> SteadyState {
    let (cut, end, basis) = match steady_span(measured) {
        Some((from, to)) => (from, to, SteadyBasis::Arrivals),
        None => (
            window.start + (window.end.saturating_sub(window.start)) / 10,
            window.end,
            SteadyBasis::Window,
        ),
    };
    let within = |t: Nanos| t >= cut && t <= end;
    let steady_s = end.saturating_sub(cut) as f64 / 1e9;
    let steady_tokens: u64 = measured
        .iter()
        .flat_map(|r| r.chunks.iter().chain(&r.reasoning_chunks))
        .filter(|c| within(c.at))
        .map(|c| c.tokens as u64)
        .sum();
    let steady_done = ok.iter().filter(|r| within(r.finished_at)).count();
    let steady_input: u64 = measured
        .iter()
        // Prefill is done when the first token (answer or reasoning) streams, or a
        // non-generative answer comes.
        .filter(|r| r.input_done_at().is_some_and(within))
        .map(|r| input_tokens(r))
        .sum();
    let steady_per_s = |x: f64| if steady_s > 0.0 { x / steady_s } else { 0.0 };
    SteadyState {
        excluded_s: cut.saturating_sub(window.start) as f64 / 1e9,
        span_s: steady_s,
        basis,
        output_tokens_per_s: steady_per_s(steady_tokens as f64),
        requests_per_s: steady_per_s(steady_done as f64),
        input_tokens_per_s: steady_per_s(steady_input as f64),
    }
}

/// The SLO verdicts, from the summary's distributions and rates and each request's metrics.
fn slo_of(spec: &SloSpec, s: &RunSummary, per_request: &[Option<RequestMetrics>]) -> SloResult {
    let distribution = |m: RunMetric| run_distribution(s, m);
    evaluate(
        spec,
        &per_request.iter().map(Option::as_ref).collect::<Vec<_>>(),
        s.window.duration_s,
        &RunFigures {
            distribution: &distribution,
            output_tokens_per_s: s.output_tokens_per_s,
            requests_per_s: s.requests_per_s,
            success_rate: s.success_rate,
        },
    )
}

/// The run's distribution an SLO bound on `m` is judged against.
pub(crate) fn run_distribution(s: &RunSummary, m: RunMetric) -> Option<Distribution> {
    match m {
        RunMetric::TtftMs => s.ttft_ms,
        RunMetric::TpotMs => s.tpot_ms,
        RunMetric::E2eMs => s.e2e_ms,
        RunMetric::ItlMs => s.itl_ms,
        RunMetric::JitterMs => s.jitter_ms,
        RunMetric::MaxPauseMs => s.max_pause_ms,
        RunMetric::UserIdleMs => s.experience.user_idle_ms,
    }
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
