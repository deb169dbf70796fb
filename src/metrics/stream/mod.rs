//! The run summary of a run too long to keep: built one record at a time, in memory that
//! does not grow with the number of requests.
//!
//! [`summarize`] reads every measured record at once and gives exact figures; it stays the
//! summary of every run whose records fit in memory (`--exact-summary-limit`). Beyond that,
//! [`StreamSummary`] takes each measured record as it is written and keeps only:
//! - exact counts and sums: requests by outcome, failures by kind and message, tokens, the
//!   window's ends, SLO attainment and goodput, deadline attainment and smooth goodput (each
//!   request's judgement depends on itself alone, and T on the plan or the window's ends);
//! - a [`Sketch`] per distribution (exact up to [`EXACT_VALUES`] values, then within
//!   [`RELATIVE_ERROR`]), for each of the three ITL options until the choice is known;
//! - [`TimeBins`] for the amounts that fall after a cut known only at the end (the steady
//!   state, the arrival balance);
//! - a seeded uniform [`Reservoir`] of measured records, which the figures that need whole
//!   requests side by side are computed from: the fluidity distribution and fluid token
//!   rate, fairness, the ITL modes, the server comparison and the start-up transient.
//!
//! The summary says so in [`Streamed`]; a test holds every figure to the exact summary of
//! the same records within the stated error.

pub mod reservoir;
mod spans;
mod verdicts;

use super::experience::{Experience, RateComparison};
use super::failures::FailureTally;
use super::modality::shape;
use super::request::{itl_samples, measure, ItlOption, RequestMetrics};
use super::slo::AttainmentTally;
use super::summary::{
    add_warnings, choose_itl_from, delivered_answer_tokens, delivered_tokens, from_sketch,
    has_server_times, input_tokens, summarize, ChunkShares, InputBucket, ItlChoice, RequestCounts,
    RunSummary, SummaryBounds, SummaryParams, TokenSources, Window, INPUT_BUCKETS,
};
use super::ux::{committed_at, judge, smooth_goodput_of, GoodputSums, UxWindow};
use crate::clock::Nanos;
use crate::record::{Phase, RequestRecord};
use crate::stats::distribution::Distribution;
use crate::stats::sketch::{Sketch, RELATIVE_ERROR};
use crate::stats::time_bins::TimeBins;
pub use reservoir::Reservoir;
use verdicts::{sample_transient, slo_of};

/// Values a distribution keeps exactly before it turns to buckets.
pub const EXACT_VALUES: usize = 65_536;
/// Measured records kept as the sample.
pub const SAMPLE_REQUESTS: usize = 2_000;

/// How a streamed summary was made, for its readers.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Streamed {
    /// Measured requests summarised.
    pub requests: u64,
    /// Measured requests kept as the sample the whole-request figures come from.
    pub sample_requests: u64,
    /// Largest relative error of a percentile of a distribution of more than
    /// `exact_values` values (counts, means, deviations, extremes are exact).
    pub percentile_relative_error: f64,
    pub exact_values: u64,
    /// Width of the time bins the steady state and arrival balance were cut from, ms.
    pub time_bin_ms: f64,
    /// The figures computed from the sample.
    pub from_sample: Vec<String>,
}

/// Sketches that depend on the ITL option, and the SLO counts that read them.
#[derive(Debug, Clone)]
struct PerOption {
    itl: Sketch,
    jitter: Sketch,
    max_pause: Sketch,
    slo: AttainmentTally,
}

impl PerOption {
    fn new(exact_values: usize) -> Self {
        Self {
            itl: Sketch::new(exact_values),
            jitter: Sketch::new(exact_values),
            max_pause: Sketch::new(exact_values),
            slo: AttainmentTally::default(),
        }
    }
}

/// Distributions that do not depend on the ITL option.
#[derive(Debug, Clone)]
struct Latencies {
    ttft: Sketch,
    tpot: Sketch,
    e2e: Sketch,
    ttfb: Sketch,
    reasoning: Sketch,
    normalized: Sketch,
    decode: Sketch,
    ttft_scheduled: Sketch,
    e2e_scheduled: Sketch,
    connect: Sketch,
}

impl Latencies {
    fn new(exact_values: usize) -> Self {
        let s = || Sketch::new(exact_values);
        Self {
            ttft: s(),
            tpot: s(),
            e2e: s(),
            ttfb: s(),
            reasoning: s(),
            normalized: s(),
            decode: s(),
            ttft_scheduled: s(),
            e2e_scheduled: s(),
            connect: s(),
        }
    }

    /// Adds one request's figures; `generative`: it has a first token (not embeddings or
    /// rerank, whose `ttft_ms` only repeats the latency).
    fn add(&mut self, m: &RequestMetrics, generative: bool) {
        let opt = |s: &mut Sketch, v: Option<f64>| {
            if let Some(v) = v {
                s.add(v);
            }
        };
        if generative {
            self.ttft.add(m.ttft_ms);
        }
        self.e2e.add(m.e2e_ms);
        opt(&mut self.tpot, m.tpot_ms);
        opt(&mut self.ttfb, m.ttfb_ms);
        opt(&mut self.reasoning, m.time_to_first_reasoning_ms);
        opt(&mut self.normalized, m.normalized_ms_per_token);
        opt(&mut self.decode, m.decode_tokens_per_s);
        opt(&mut self.ttft_scheduled, m.ttft_from_schedule_ms);
        opt(&mut self.e2e_scheduled, m.e2e_from_schedule_ms);
    }
}

/// The planned send times of the measured requests.
#[derive(Debug, Clone, Copy)]
struct Plan {
    planned: u64,
    first: Nanos,
    last: Nanos,
}

/// A run's summary, one measured record at a time.
#[derive(Debug, Clone)]
pub struct StreamSummary {
    params: SummaryParams,
    exact_values: usize,
    counts: RequestCounts,
    failures: FailureTally,
    window: (Nanos, Nanos),
    /// Output, answer and input tokens, and items answered.
    totals: (u64, u64, u64, u64),
    steady_tokens: TimeBins,
    steady_done: TimeBins,
    steady_input: TimeBins,
    arrivals: TimeBins,
    plan: Plan,
    chunks: ChunkShares,
    ok: u64,
    ok_with_server_times: u64,
    /// A, B and C.
    options: [PerOption; 3],
    latencies: Latencies,
    sources: TokenSources,
    input_range: (u64, u64),
    ttft_by_input: Vec<Sketch>,
    idle: Sketch,
    deadlines_met: u64,
    goodput: GoodputSums,
    /// Earliest commitment and latest end, for T in closed loop.
    commitments: (Nanos, Nanos),
    sample: Reservoir<RequestRecord>,
    media: super::media::MediaTally,
    sessions: super::sessions::SessionTally,
    prompt_cache: super::cache::CacheFigures,
    arrived: (Nanos, Nanos), // First and last `summary::arrived_at`, ns.
}

fn option_index(o: ItlOption) -> usize {
    match o {
        ItlOption::A => 0,
        ItlOption::B => 1,
        ItlOption::C => 2,
    }
}

impl StreamSummary {
    /// An empty summary; `params` are those [`summarize`] would be given.
    pub fn new(params: SummaryParams) -> Self {
        Self::with_limits(params, EXACT_VALUES, SAMPLE_REQUESTS)
    }

    /// An empty summary whose distributions keep `exact_values` values exactly and whose
    /// sample holds `sample_requests` records.
    pub fn with_limits(params: SummaryParams, exact_values: usize, sample_requests: usize) -> Self {
        let sketch = || Sketch::new(exact_values);
        Self {
            exact_values,
            params,
            counts: RequestCounts::default(),
            failures: FailureTally::default(),
            window: (Nanos::MAX, 0),
            totals: (0, 0, 0, 0),
            steady_tokens: TimeBins::default(),
            steady_done: TimeBins::default(),
            steady_input: TimeBins::default(),
            arrivals: TimeBins::default(),
            plan: Plan {
                planned: 0,
                first: Nanos::MAX,
                last: 0,
            },
            chunks: ChunkShares::default(),
            ok: 0,
            ok_with_server_times: 0,
            options: [
                PerOption::new(exact_values),
                PerOption::new(exact_values),
                PerOption::new(exact_values),
            ],
            latencies: Latencies::new(exact_values),
            sources: TokenSources::default(),
            input_range: (u64::MAX, 0),
            ttft_by_input: INPUT_BUCKETS.iter().map(|_| sketch()).collect(),
            idle: sketch(),
            deadlines_met: 0,
            goodput: GoodputSums::default(),
            commitments: (Nanos::MAX, 0),
            sample: Reservoir::new(sample_requests),
            media: Default::default(),
            sessions: Default::default(),
            prompt_cache: Default::default(),
            arrived: (Nanos::MAX, 0),
        }
    }

    /// Measured records summarised so far.
    pub fn requests(&self) -> u64 {
        self.counts.total
    }

    /// Takes one record; records of other phases than the measured one are ignored.
    pub fn add(&mut self, r: RequestRecord) {
        if r.phase != Phase::Measure {
            return;
        }
        self.count(&r);
        self.time(&r);
        self.media.add(&r);
        self.sessions.add(&r);
        self.prompt_cache.add(&r);
        let ok = r.outcome.is_ok();
        if ok {
            self.chunks.add(&r);
            self.sources.add(&r);
            self.ok += 1;
        }
        let with_server_times = ok && has_server_times(&r);
        if with_server_times {
            self.ok_with_server_times += 1;
        }
        // Option C is only ever chosen when every successful request had server times.
        let c_possible = self.ok_with_server_times == self.ok;
        let input = input_tokens(&r);
        self.input_range = (self.input_range.0.min(input), self.input_range.1.max(input));
        for option in [ItlOption::A, ItlOption::B, ItlOption::C] {
            if option == ItlOption::C && !c_possible {
                continue;
            }
            let m = measure(&r, option);
            let o = &mut self.options[option_index(option)];
            if let Some(m) = &m {
                m.itl_ms.iter().for_each(|&v| o.itl.add(v));
                m.jitter_ms.inspect(|&v| o.jitter.add(v));
                m.max_pause_ms.inspect(|&v| o.max_pause.add(v));
            }
            if let Some(spec) = &self.params.slo {
                o.slo.add(spec, m.as_ref());
            }
            if option == ItlOption::A {
                if let Some(m) = m.as_ref().filter(|_| r.items == 0) {
                    self.latencies.add(m, true);
                    if let Some(i) = INPUT_BUCKETS
                        .iter()
                        .position(|&(lo, hi, _)| input >= lo as u64 && input < hi as u64)
                    {
                        self.ttft_by_input[i].add(m.ttft_ms);
                    }
                } else if let Some(m) = &m {
                    self.latencies.add(m, false);
                }
            }
        }
        self.latencies.connect.add(r.connect_ns as f64 / 1e6);
        let o = judge(&r, &self.params.ux);
        self.idle.add(o.user_idle_ms);
        self.deadlines_met += u64::from(o.met);
        self.goodput.add(&o, &self.params.ux);
        self.sample.offer(r);
    }

    fn count(&mut self, r: &RequestRecord) {
        self.counts.add(r);
        self.failures.add(r);
        let (output, answer) = (delivered_tokens(r), delivered_answer_tokens(r));
        self.totals.0 += output;
        self.totals.1 += answer;
        if r.http_status == Some(200) {
            self.totals.2 += input_tokens(r);
        }
        if r.outcome.is_ok() {
            self.totals.3 += u64::from(r.items);
        }
    }

    fn time(&mut self, r: &RequestRecord) {
        let arrived = super::summary::arrived_at(r);
        self.arrived = (self.arrived.0.min(arrived), self.arrived.1.max(arrived));
        let attempted = r.attempted_at();
        self.window.0 = self.window.0.min(attempted);
        self.window.1 = self.window.1.max(r.finished_at.max(attempted));
        for c in r.chunks.iter().chain(&r.reasoning_chunks) {
            self.steady_tokens.add(c.at, c.tokens as f64);
        }
        if r.outcome.is_ok() {
            self.steady_done.add(r.finished_at, 1.0);
        }
        if let Some(at) = r.input_done_at() {
            self.steady_input.add(at, input_tokens(r) as f64);
        }
        if let Some(s) = r.scheduled_at {
            self.plan.planned += 1;
            self.plan.first = self.plan.first.min(s);
            self.plan.last = self.plan.last.max(s);
            self.arrivals.add(s, 1.0);
        }
        let commit = r.scheduled_at.unwrap_or_else(|| committed_at(r));
        self.commitments.0 = self.commitments.0.min(commit);
        self.commitments.1 = self.commitments.1.max(r.finished_at.max(commit));
    }

    fn window(&self) -> Window {
        if self.counts.total == 0 {
            return Window::default();
        }
        let (start, end) = self.window;
        Window {
            start,
            end,
            duration_s: end.saturating_sub(start) as f64 / 1e9,
        }
    }

    fn ux_window(&self) -> Option<UxWindow> {
        let p = self.plan;
        if self.counts.total == 0 {
            return None;
        }
        let all_planned = p.planned == self.counts.total;
        all_planned
            .then(|| UxWindow::planned(p.first, p.last, p.planned))
            .flatten()
            .or(Some(UxWindow::served(
                self.commitments.0,
                self.commitments.1,
            )))
    }

    fn ttft_by_input(&self) -> Vec<InputBucket> {
        if self.input_range.0 >= self.input_range.1 {
            return Vec::new(); // fixed input length, as the exact summary
        }
        INPUT_BUCKETS
            .iter()
            .zip(&self.ttft_by_input)
            .filter_map(|(&(_, _, label), s)| {
                let d = s.distribution()?;
                Some(InputBucket {
                    label: label.into(),
                    n: d.n,
                    p50_ms: d.p50,
                    p95_ms: d.p95,
                    p99_ms: d.p99,
                })
            })
            .collect()
    }

    /// The sample of measured records kept so far (a copy).
    pub fn sample(&self) -> Vec<RequestRecord> {
        self.sample.clone().into_items()
    }

    /// The run's summary with the parameters known only at its end (the fluidity curve
    /// profiled during the run, the warm-up, the caller's warnings); the SLO and deadline
    /// parameters stay those the records were judged with.
    pub fn finish_with(mut self, params: SummaryParams) -> RunSummary {
        self.params = SummaryParams {
            slo: self.params.slo.take(),
            ux: self.params.ux,
            ..params
        };
        self.finish()
    }

    /// The run's summary.
    pub fn finish(mut self) -> RunSummary {
        // Nothing reads the reservoir after this: its records are taken out, not copied.
        let sample = std::mem::replace(&mut self.sample, Reservoir::new(0)).into_items();
        let from_sample = summarize(&sample, &self.params);
        let has_c = self.ok > 0 && self.ok_with_server_times == self.ok;
        let itl_method = choose_itl_from(&self.chunks, has_c);
        let option = itl_method.option;
        let mut summary = self.figures(itl_method, &from_sample, &sample);
        // The SLO reads the summary's own distributions and rates.
        let tally = &self.options[option_index(option)].slo;
        summary.slo = self
            .params
            .slo
            .as_ref()
            .map(|spec| slo_of(spec, tally, &summary));
        let transient = sample_transient(&sample, option, &summary);
        add_warnings(&mut summary, transient, &self.params);
        summary
    }

    /// The summary's counts, rates and distributions, before its SLO verdicts and warnings:
    /// exact or from the sketches where counted over every request, from `sample` (and
    /// `from_sample`, its own summary) where whole requests are needed.
    fn figures(
        &self,
        itl_method: ItlChoice,
        from_sample: &RunSummary,
        sample: &[RequestRecord],
    ) -> RunSummary {
        let per = &self.options[option_index(itl_method.option)];
        let l = &self.latencies;
        let (tpot_ms, e2e_ms, itl_ms) = (
            l.tpot.distribution(),
            l.e2e.distribution(),
            per.itl.distribution(),
        );
        let window = self.window();
        let per_s = |x: f64| {
            if window.duration_s > 0.0 {
                x / window.duration_s
            } else {
                0.0
            }
        };
        let counts = &self.counts;
        // The ITL modes from the sample's own gaps, read against the whole run's figures.
        let sample_itl: Vec<f64> = sample
            .iter()
            .flat_map(|r| itl_samples(r, itl_method.option))
            .collect();
        RunSummary {
            requests: counts.clone(),
            failures: self.failures.finish(),
            window,
            ttft_ms: l.ttft.distribution(),
            tpot_ms,
            itl_ms,
            e2e_ms,
            jitter_ms: per.jitter.distribution(),
            max_pause_ms: per.max_pause.distribution(),
            ttfb_ms: l.ttfb.distribution(),
            time_to_first_reasoning_ms: l.reasoning.distribution(),
            normalized_latency_ms_per_token: l.normalized.distribution(),
            decode_tokens_per_s: l.decode.distribution(),
            ttft_from_schedule_ms: l.ttft_scheduled.distribution(),
            e2e_from_schedule_ms: l.e2e_scheduled.distribution(),
            connect_ms: l.connect.distribution(),
            itl_tail_ratio: itl_ms.filter(|d| d.p50 > 0.0).map(|d| d.p99 / d.p50),
            itl_shape: shape(&sample_itl, itl_ms.as_ref()),
            output_tokens_per_s: per_s(self.totals.0 as f64),
            answer_tokens_per_s: per_s(self.totals.1 as f64),
            input_tokens_per_s: per_s(self.totals.2 as f64),
            items_per_s: per_s(self.totals.3 as f64),
            total_items: self.totals.3,
            requests_per_s: per_s(counts.completed as f64),
            total_output_tokens: self.totals.0,
            total_reasoning_tokens: self.totals.0 - self.totals.1,
            total_input_tokens: self.totals.2,
            success_rate: if counts.total == 0 {
                0.0
            } else {
                counts.completed as f64 / counts.total as f64
            },
            steady_state: self.steady_state(window, sample),
            arrival_balance: self.arrival_balance(e2e_ms),
            itl_method,
            token_counting: self.sources.finish(),
            ttft_by_input_tokens: self.ttft_by_input(),
            server: from_sample.server.clone(),
            slo: None,
            experience: self.experience(from_sample, tpot_ms, itl_ms),
            warnings: Vec::new(),
            media: self.media.finish(),
            sessions: self.sessions.finish(),
            prompt_cache: self.prompt_cache.clone().reported(),
            streamed: Some(self.streamed(sample.len() as u64)),
            percentile_bounds: Some(self.percentile_bounds(from_sample)),
        }
    }

    /// The percentiles' intervals: per-request figures at the whole run's order statistics
    /// (from the sketches), ITL from the sample's requests (fewer than the run had: wider).
    fn percentile_bounds(&self, from_sample: &RunSummary) -> SummaryBounds {
        let confidence = self.params.confidence();
        let l = &self.latencies;
        SummaryBounds {
            confidence,
            ttft_ms: from_sketch(&l.ttft, confidence),
            tpot_ms: from_sketch(&l.tpot, confidence),
            itl_ms: from_sample.percentile_bounds.and_then(|b| b.itl_ms),
            e2e_ms: from_sketch(&l.e2e, confidence),
        }
    }

    /// The user-experience figures: deadlines, idle time and smooth goodput over every
    /// request, the rest from the sample's summary.
    fn experience(
        &self,
        from_sample: &RunSummary,
        tpot_ms: Option<Distribution>,
        itl_ms: Option<Distribution>,
    ) -> Experience {
        let ux = &self.params.ux;
        Experience {
            deadlines: ux.scheme.to_string(),
            user_idle_ms: self.idle.distribution(),
            deadline_attainment: if self.counts.total == 0 {
                0.0
            } else {
                self.deadlines_met as f64 / self.counts.total as f64
            },
            smooth_goodput: self
                .ux_window()
                .map(|w| smooth_goodput_of(&self.goodput, ux, &w)),
            token_rates: RateComparison {
                fluid_tokens_per_s: from_sample.experience.token_rates.fluid_tokens_per_s,
                inverse_mean_tpot_per_s: tpot_ms.filter(|d| d.mean > 0.0).map(|d| 1000.0 / d.mean),
                inverse_p99_tbt_per_s: itl_ms.filter(|d| d.p99 > 0.0).map(|d| 1000.0 / d.p99),
            },
            ..from_sample.experience.clone()
        }
    }

    /// How this summary was made, for its readers.
    fn streamed(&self, sample_requests: u64) -> Streamed {
        Streamed {
            requests: self.counts.total,
            sample_requests,
            percentile_relative_error: RELATIVE_ERROR,
            exact_values: self.exact_values as u64,
            time_bin_ms: self.steady_tokens.width() as f64 / 1e6,
            from_sample: [
                "fluidity and the fluid token rate",
                "fairness across classes",
                "the ITL modes",
                "the server comparison",
                "the start-up transient",
            ]
            .map(String::from)
            .to_vec(),
        }
    }
}

#[cfg(test)]
mod tests;
