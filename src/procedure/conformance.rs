//! Conformance: the procedures against engines whose capacity is known exactly (issue 19),
//! on any machine, however loaded.
//!
//! [`VirtualBench`] runs each level the procedure asks for on the simulator's engine model
//! (the step-time model of [`crate::sim::engine`]: FCFS admission up to `max_num_seqs`,
//! prefill-first or chunked prefill under the token budget, one token per decoding sequence
//! per step, every step costing what `docs/sim.md` says) in *virtual* time, with the run
//! engine's own arrival plan ([`ArrivalPlan`], seeded as a run's is), the default `--grace`
//! of 10 s after a timed level and the cancellations at its end, and hands the procedure
//! records shaped as a real run's. No wall clock is read anywhere: a server of 0.3 requests
//! per second costs milliseconds of CPU, and the answer is judged against the engine's own
//! analytic capacity ([`SimConfig::capacity`]), never against how fast this machine ran.
//! The KV cache, preemption and speculative decoding are not modelled; the cases keep clear
//! of them (their KV holds every sequence). The prefix cache is modelled as far as the
//! prefix-cache test needs it (module `prefix`: shared prompt segments served from the cache
//! skip their prefill, and the responses' usage says how many prompt tokens were cached),
//! and so are the guardrail delays of [`SimConfig`] (`input_guardrail_ms` holds a request
//! before it is queued, `output_guardrail_ms` every token after it is generated), on
//! labelled targets ([`VirtualBench::with_target`]).
//!
//! The cases ([`cases`]): fixed lengths, Synthetic-Skewed lengths, long requests (latency
//! above 0.2 × the level), and a slow server of 0.33 requests per second. Each runs
//! `servebench test throughput --quick` with [`SEEDS`]; the median of its answers (what the
//! sustainable level sustained) must lie within [`TOLERANCE`] of the truth. The answer of a
//! `--quick` search is a statistic of a seeded Poisson schedule of a few dozen arrivals per
//! level, so one seed can land further off; the median of five does not. The virtual time
//! each test would have taken is kept too ([`VirtualBench::elapsed_s`]), to hold the times
//! `servebench test --help` states ([`SLOW_SERVER_MINUTES`]).
//!
//! The other procedures' answers (the curve's saturation point and knee, the capacity
//! test's concurrency, the long-context exponent, the prefix-cache hit rate, a latency-only
//! guardrail's Table 14) are checked against their own truths in [`readings`].

mod prefix;
pub mod readings;

pub use readings::{
    capacity_truth, check_reading, knee_point, run_reading, saturation_point, Accept, Reading,
    ReadingCheck, ReadingRun, READINGS,
};

use super::level::{Bench, LevelRun, LevelSpec, Load, Stop, WarmupChoice};
use super::report::Finding;
use super::throughput::ThroughputResult;
use super::{Disclosure, Options, TestName};
use crate::config::Arrival;
use crate::metrics::{summarize, SummaryParams};
use crate::record::{Chunk, FailureKind, Outcome, Phase, RequestRecord};
use crate::report::RunReport;
use crate::schedule::ArrivalPlan;
use crate::sim::config::{PrefillPolicy, StepModel};
use crate::sim::SimConfig;
use crate::workload::lengths::LengthDist;
use crate::workload::WorkloadSpec;
use anyhow::Context;
use prefix::{PrefixCache, SharedPrefixes};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::Duration;

/// The run engine's default `--grace`, s: what still runs this long after a timed level's
/// end is cancelled.
pub const GRACE_S: f64 = 10.0;
/// What a level costs beyond its run, s: the runner's readiness check and drain (the time
/// budget's first guess).
pub const LEVEL_OVERHEAD_S: f64 = 5.0;
/// The default `--warmup-max`, s: the warm-up a level without a cap of its own is charged.
pub const WARMUP_MAX_S: f64 = 120.0;
/// Seeds each case runs with; the answer checked is their median.
pub const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];
/// How far the median answer may lie from the truth (10 %).
pub const TOLERANCE: f64 = 0.10;
/// The longest each `--quick` test that sizes its levels from a capacity takes on a server
/// of 0.3 requests per second, minutes, as `servebench test --help` states it.
pub const SLOW_SERVER_MINUTES: [(TestName, f64); 5] = [
    (TestName::Throughput, 35.0),
    (TestName::Curve, 60.0),
    (TestName::Ttft, 15.0),
    (TestName::Itl, 35.0),
    (TestName::Capacity, 15.0),
];
/// No level runs past this in virtual time, s.
const HORIZON_S: f64 = 100_000.0;
/// A real run's report, whose summary, telemetry and warm-up each level replaces.
const RUN_TEMPLATE: &str = include_str!("../../tests/fixtures/run-sim/run.json");

/// One request inside the engine.
struct Seq {
    /// Index of its record.
    rec: usize,
    prompt: u32,
    output: u32,
    prefilled: u32,
    generated: u32,
    /// What the prompt is made of, when the level's workload shares prefixes: the cache
    /// serves it at admission, and the record's usage says how much it served.
    content: Option<prefix::Content>,
}

/// One step's work: prefill chunks (running index, tokens) and the decoding sequences.
type Plan = (Vec<(usize, u32)>, Vec<usize>);

/// The simulator's engine model, stepping in virtual time.
struct Engine<'a> {
    cfg: &'a SimConfig,
    waiting: VecDeque<Seq>,
    running: Vec<Seq>,
    /// The prefix cache, kept by the bench from level to level.
    cache: PrefixCache,
}

impl Engine<'_> {
    fn idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }

    /// FCFS admission while a batch slot is free. A prompt of shared prefixes is served
    /// from the prefix cache as it is admitted (its prefill starts past what was cached, as
    /// the simulator's engine does), and its record gets the usage a response reports.
    fn admit(&mut self, records: &mut [RequestRecord]) {
        while (self.running.len() as u32) < self.cfg.max_num_seqs.max(1) {
            let Some(mut s) = self.waiting.pop_front() else {
                break;
            };
            if let Some(c) = s.content.take() {
                let cached = if c.use_cache && self.cfg.prefix_cache {
                    self.cache.serve(&c.chain, s.prompt, self.cfg.block_size)
                } else {
                    0
                };
                s.prefilled = cached;
                records[s.rec].usage = Some(serde_json::json!({
                    "prompt_tokens": s.prompt,
                    "prompt_tokens_details": {"cached_tokens": cached},
                }));
            }
            self.running.push(s);
        }
    }

    /// The next step's work, as the simulator's engine plans it.
    fn plan(&self) -> Plan {
        let target = |s: &Seq| s.prompt.max(1);
        let mut budget = self.cfg.max_batched_tokens.max(1);
        let (mut prefill, mut decode) = (Vec::new(), Vec::new());
        let prefilling: Vec<usize> = (0..self.running.len())
            .filter(|&i| self.running[i].prefilled < target(&self.running[i]))
            .collect();
        if self.cfg.prefill_policy == PrefillPolicy::PrefillFirst && !prefilling.is_empty() {
            // Whole prompts, as many as the budget holds (at least one): decodes stall.
            for (k, &i) in prefilling.iter().enumerate() {
                let left = target(&self.running[i]) - self.running[i].prefilled;
                if k > 0 && left > budget {
                    break;
                }
                prefill.push((i, left));
                budget = budget.saturating_sub(left);
            }
            return (prefill, decode);
        }
        for i in (0..self.running.len())
            .filter(|&i| self.running[i].prefilled >= target(&self.running[i]))
        {
            decode.push(i);
            budget = budget.saturating_sub(1);
        }
        for &i in &prefilling {
            if budget == 0 {
                break;
            }
            let left = target(&self.running[i]) - self.running[i].prefilled;
            let chunk = left.min(budget);
            prefill.push((i, chunk));
            budget -= chunk;
        }
        (prefill, decode)
    }

    /// The step's cost, ns of (virtual) wall time: the step-time model over `time_scale`.
    fn cost_ns(&self, plan: &Plan) -> u64 {
        let m: &StepModel = &self.cfg.step;
        let mut ms = m.base_ms;
        for &(i, chunk) in &plan.0 {
            let ctx_mid = self.running[i].prefilled as f64 + chunk as f64 / 2.0;
            ms += m.prefill_ms_per_token * chunk as f64;
            ms += m.prefill_attention_ms_per_token_per_1k_ctx * chunk as f64 * ctx_mid / 1000.0;
        }
        let kv: u64 = plan
            .1
            .iter()
            .map(|&i| {
                let s = &self.running[i];
                (s.prompt + s.generated).max(s.prompt.max(1)) as u64
            })
            .sum();
        ms += m.decode_ms_per_seq * plan.1.len() as f64;
        ms += m.attention_ms_per_1k_kv * kv as f64 / 1000.0;
        (ms / self.cfg.time_scale.max(1e-9) * 1e6).round() as u64
    }

    /// Runs a step that ends at `at`: its tokens go to the records, `shift` ns later (the
    /// output guardrail holds each token that long); returns the records of the requests
    /// it finished.
    fn apply(
        &mut self,
        plan: &Plan,
        at: u64,
        shift: u64,
        records: &mut [RequestRecord],
    ) -> Vec<usize> {
        let mut done: Vec<usize> = Vec::new();
        for &(i, chunk) in &plan.0 {
            let s = &mut self.running[i];
            s.prefilled += chunk;
            if s.prefilled >= s.prompt.max(1) && s.generated == 0 {
                // The first token is sampled from the prefill's last logits.
                s.generated = 1;
                token(&mut records[s.rec], at + shift);
                if s.generated >= s.output {
                    done.push(i);
                }
            }
        }
        for &i in &plan.1 {
            let s = &mut self.running[i];
            s.generated += 1;
            token(&mut records[s.rec], at + shift);
            if s.generated >= s.output {
                done.push(i);
            }
        }
        // Highest index first keeps the others valid.
        done.sort_unstable_by(|a, b| b.cmp(a));
        done.dedup();
        done.into_iter()
            .map(|i| self.running.swap_remove(i).rec)
            .collect()
    }
}

/// One token streamed to a record at `at`.
fn token(r: &mut RequestRecord, at: u64) {
    if r.chunks.is_empty() {
        r.first_content = Some(0);
        r.first_byte_at = Some(at);
    }
    r.chunks.push(Chunk {
        at,
        tokens: 1,
        bytes: 4,
    });
    r.output_tokens += 1;
}

/// One level running in virtual time (ns from its start).
struct Level<'a> {
    engine: Engine<'a>,
    workload: &'a WorkloadSpec,
    lengths: ChaCha8Rng,
    /// The workload's shared prefixes, when it has any.
    prefixes: Option<SharedPrefixes>,
    records: Vec<RequestRecord>,
    ended: Vec<bool>,
    /// Prompt tokens of shared prefixes, by record.
    shared: Vec<u32>,
    arrivals: Option<std::iter::Peekable<ArrivalPlan>>,
    /// Requests sent and not yet queued in the engine, with when they enter its queue (the
    /// input guardrail holds each `in_delay`), in that order.
    pending: VecDeque<(u64, Seq)>,
    /// ns the input guardrail holds a request before it is queued.
    in_delay: u64,
    /// ns each token, and so each request's end, reaches the client after the engine made
    /// it (the output guardrail).
    out_delay: u64,
    now: u64,
    /// Sending stops here (the level's duration).
    send_until: u64,
    /// What is still running here (duration + grace) is cancelled.
    stop_at: u64,
    /// Requests still to send (`u64::MAX` without a count).
    left: u64,
}

impl Level<'_> {
    /// Sends the next request of the workload at `at`; `open`: it was planned (open loop).
    /// It enters the engine's queue `in_delay` later.
    fn send(&mut self, at: u64, open: bool) {
        let own = self.workload.input.sample(&mut self.lengths).max(1);
        let output = self.workload.output.sample(&mut self.lengths).max(1);
        let rec = self.records.len();
        // Shared prefixes are added to the drawn length, as the workload generator adds them.
        let lengths = &mut self.lengths;
        let drawn = self
            .prefixes
            .as_mut()
            .map(|p| p.draw(lengths, rec as u64, own));
        let prompt = drawn.as_ref().map_or(own, |d| d.tokens);
        self.shared.push(drawn.as_ref().map_or(0, |d| d.shared));
        self.records.push(RequestRecord {
            id: rec as u64,
            phase: Phase::Measure,
            scheduled_at: open.then_some(at),
            queued_at: at,
            sent_at: Some(at),
            input_tokens: prompt,
            max_tokens: output,
            http_status: Some(200),
            ..Default::default()
        });
        self.ended.push(false);
        let seq = Seq {
            rec,
            prompt,
            output,
            prefilled: 0,
            generated: 0,
            content: drawn.map(|d| d.content),
        };
        let enter = at + self.in_delay;
        let i = self.pending.partition_point(|p| p.0 <= enter);
        self.pending.insert(i, (enter, seq));
        self.left = self.left.saturating_sub(1);
    }

    /// Queues in the engine every sent request whose input guardrail has let it through.
    fn enter(&mut self) {
        while self.pending.front().is_some_and(|p| p.0 <= self.now) {
            if let Some((_, s)) = self.pending.pop_front() {
                self.engine.waiting.push_back(s);
            }
        }
    }

    /// The next planned arrival still to send.
    fn next_arrival(&mut self) -> Option<u64> {
        let at = *self.arrivals.as_mut()?.peek()?;
        (at < self.send_until && self.left > 0).then_some(at)
    }

    /// Sends every planned arrival due by now.
    fn arrive(&mut self) {
        while let Some(at) = self.next_arrival().filter(|&at| at <= self.now) {
            if let Some(plan) = self.arrivals.as_mut() {
                plan.next();
            }
            self.send(at, true);
        }
    }

    /// Runs the level (a closed loop of `concurrency`, else its arrival plan) until nothing
    /// is left to run or its stop; returns when it ended.
    fn run(&mut self, concurrency: Option<u32>) -> u64 {
        for _ in 0..concurrency.map_or(0, |c| c.max(1)) {
            if self.left > 0 {
                self.send(0, false);
            }
        }
        loop {
            self.arrive();
            self.enter();
            if self.engine.idle() {
                let entering = self.pending.front().map(|p| p.0);
                match self.next_arrival().into_iter().chain(entering).min() {
                    Some(at) => {
                        self.now = self.now.max(at);
                        continue;
                    }
                    None => return self.now,
                }
            }
            self.engine.admit(&mut self.records);
            let plan = self.engine.plan();
            let end = self.now + self.engine.cost_ns(&plan).max(1);
            if end > self.stop_at {
                return self.stop_at;
            }
            let done = self
                .engine
                .apply(&plan, end, self.out_delay, &mut self.records);
            self.now = end;
            for rec in done {
                // The client sees the end when the output guardrail lets the last token go.
                let seen = end + self.out_delay;
                self.records[rec].finished_at = seen;
                self.ended[rec] = true;
                if concurrency.is_some() && seen < self.send_until && self.left > 0 {
                    self.send(seen, false);
                }
            }
        }
    }

    /// Cancels what had not ended at `end`, as the runner does after the grace.
    fn finish(&mut self, end: u64) {
        for (r, ended) in self.records.iter_mut().zip(&self.ended) {
            if !ended {
                r.outcome = Outcome::failed(
                    FailureKind::Cancelled,
                    "still in flight when the level ended",
                );
                r.finished_at = end;
            }
        }
    }
}

/// Runs levels on an engine model in virtual time ([module documentation](self)).
pub struct VirtualBench {
    sim: SimConfig,
    /// Labelled targets (`--target NAME=…`) and their engines; a level naming none runs on
    /// `sim`.
    targets: Vec<(String, SimConfig)>,
    /// The prefix cache, from level to level (emptied by a level that asks).
    cache: RefCell<PrefixCache>,
    workload: WorkloadSpec,
    seed: u64,
    arrival: Arrival,
    template: RunReport,
    /// Seconds the test would have taken: every level with its grace, the runner's overhead
    /// and the warm-ups (charged their cap).
    pub elapsed_s: f64,
    /// The requests each level offered, (prompt, output) tokens, by level index.
    pub offered: Vec<Vec<(u32, u32)>>,
    /// Prompt tokens of shared prefixes of each request each level offered, by level index.
    pub shared: Vec<Vec<u32>>,
}

impl VirtualBench {
    /// A bench on `sim` with the options' workload, seed and arrival process.
    pub fn new(sim: SimConfig, o: &Options) -> anyhow::Result<Self> {
        let template: RunReport =
            serde_json::from_str(RUN_TEMPLATE).context("the run report template")?;
        Ok(Self {
            sim,
            targets: Vec::new(),
            cache: RefCell::new(PrefixCache::default()),
            workload: o.workload.clone(),
            seed: o.seed,
            arrival: match o.arrival.as_str() {
                "constant" => Arrival::Constant,
                _ => Arrival::Poisson,
            },
            template,
            elapsed_s: 0.0,
            offered: Vec::new(),
            shared: Vec::new(),
        })
    }

    /// The bench with a labelled target (`--target NAME=…`): the levels that name it run
    /// on `sim` (a guardrail configuration of the same engine).
    pub fn with_target(mut self, name: &str, sim: SimConfig) -> Self {
        self.targets.push((name.to_owned(), sim));
        self
    }

    /// The engine of a level's target.
    fn config_for(&self, target: Option<&str>) -> &SimConfig {
        target
            .and_then(|t| self.targets.iter().find(|(n, _)| n.as_str() == t))
            .map_or(&self.sim, |(_, c)| c)
    }

    /// The shared prefixes' share of the prompt tokens level `index` offered, 0-1: the hit
    /// rate of a cache that holds every shared prefix and nothing of the requests' own.
    pub fn prefix_share_at(&self, index: usize) -> Option<f64> {
        let prompt: u64 = self.offered.get(index)?.iter().map(|o| o.0 as u64).sum();
        let shared: u64 = self.shared.get(index)?.iter().map(|&s| s as u64).sum();
        (prompt > 0).then(|| shared as f64 / prompt as f64)
    }

    /// The engine's analytic capacity for the requests level `index` offered (their mean
    /// prompt and output lengths), requests per second.
    pub fn truth_at(&self, index: usize) -> Option<f64> {
        let offered = self.offered.get(index).filter(|o| !o.is_empty())?;
        let n = offered.len() as f64;
        let prompt = offered.iter().map(|x| x.0 as f64).sum::<f64>() / n;
        let output = offered.iter().map(|x| x.1 as f64).sum::<f64>() / n;
        let c = self
            .sim
            .capacity(prompt.round() as u32, output.round() as u32)?;
        Some(c.requests_per_s)
    }

    /// Runs one level; returns its records, when it ended (ns) and the shared-prefix tokens
    /// of each record's prompt.
    fn simulate(&self, spec: &LevelSpec) -> (Vec<RequestRecord>, u64, Vec<u32>) {
        let s_to_ns = |s: f64| (s * 1e9) as u64;
        let cfg = self.config_for(spec.target.as_deref());
        let ms_to_ns = |ms: f64| (ms.max(0.0) / cfg.time_scale.max(1e-9) * 1e6).round() as u64;
        let workload = spec.workload.as_ref().unwrap_or(&self.workload);
        let mut cache = self.cache.take();
        if spec.flush_cache {
            cache.clear();
        }
        let (arrivals, concurrency) = match spec.load {
            Load::Rate { rate_per_s } => (
                Some(ArrivalPlan::new(rate_per_s, self.arrival, self.seed).peekable()),
                None,
            ),
            Load::Concurrency { concurrency } => (None, Some(concurrency)),
        };
        let mut level = Level {
            engine: Engine {
                cfg,
                waiting: VecDeque::new(),
                running: Vec::new(),
                cache,
            },
            workload,
            // The requests' own draws, from the seed and the workload's request salt (a
            // salted level sends other requests of the same workload), as the generator's.
            lengths: ChaCha8Rng::seed_from_u64(self.seed ^ workload.request_salt),
            prefixes: SharedPrefixes::of(workload, self.seed, spec.prefix_cache.unwrap_or(true)),
            records: Vec::new(),
            ended: Vec::new(),
            shared: Vec::new(),
            arrivals,
            pending: VecDeque::new(),
            in_delay: ms_to_ns(cfg.input_guardrail_ms),
            out_delay: ms_to_ns(cfg.output_guardrail_ms),
            now: 0,
            send_until: spec.duration.map_or(u64::MAX, |d| d.as_nanos() as u64),
            stop_at: spec.duration.map_or(s_to_ns(HORIZON_S), |d| {
                d.as_nanos() as u64 + s_to_ns(GRACE_S)
            }),
            left: spec.requests.unwrap_or(u64::MAX),
        };
        let end = level.run(concurrency);
        level.finish(end);
        *self.cache.borrow_mut() = level.engine.cache;
        (level.records, end, level.shared)
    }
}

/// The warm-up a level is charged, s: its cap when it warms up (a slow server's warm-up
/// runs to it), nothing otherwise.
fn warmup_s(spec: &LevelSpec) -> f64 {
    match spec.warmup {
        WarmupChoice::AsConfigured => spec
            .warmup_max
            .map_or(WARMUP_MAX_S, |d| d.as_secs_f64().min(WARMUP_MAX_S)),
        _ => 0.0,
    }
}

impl Bench for VirtualBench {
    fn run_level(&mut self, spec: &LevelSpec) -> Result<LevelRun, Stop> {
        let (records, end, shared) = self.simulate(spec);
        let mut report = self.template.clone();
        report.summary = summarize(&records, &SummaryParams::default());
        report.warmup = Default::default();
        report.telemetry.server = None;
        report.interrupted = false;
        report.timeseries = Vec::new();
        report.prefill_curve = None;
        self.elapsed_s += end as f64 / 1e9 + LEVEL_OVERHEAD_S + warmup_s(spec);
        self.offered.push(
            records
                .iter()
                .map(|r| (r.input_tokens, r.max_tokens))
                .collect(),
        );
        self.shared.push(shared);
        Ok(LevelRun {
            run: format!(
                "virtual/{:02}-{}",
                self.offered.len(),
                spec.load.folder_part()
            ),
            report,
            records,
            note: spec
                .flush_cache
                .then(|| "cache emptied: the virtual bench's prefix cache".to_string()),
        })
    }

    fn progress(&mut self, _line: &str) {}

    fn load_run(&mut self, dir: &std::path::Path) -> Result<LevelRun, Stop> {
        Err(Stop::Failed(anyhow::anyhow!(
            "the virtual bench reads no run folder ({})",
            dir.display()
        )))
    }
}

/// A server of known capacity and the workload it is measured with.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: &'static str,
    /// What it stands for, in words.
    pub what: &'static str,
    pub sim: SimConfig,
    pub workload: WorkloadSpec,
    /// `--level-duration`, when the case gives one.
    pub level_duration: Option<Duration>,
}

/// A chunked engine of `slots` sequences whose step costs `base_ms` plus
/// `prefill_ms_per_token` per prompt token: decoding costs nothing more, so its requests
/// last as long under load as alone, and its KV cache holds every sequence.
fn flat(slots: u32, base_ms: f64, prefill_ms_per_token: f64) -> SimConfig {
    SimConfig {
        step: StepModel {
            base_ms,
            prefill_ms_per_token,
            prefill_attention_ms_per_token_per_1k_ctx: 0.0,
            decode_ms_per_seq: 0.0,
            attention_ms_per_1k_kv: 0.0,
        },
        prefill_policy: PrefillPolicy::Chunked,
        max_num_seqs: slots,
        max_batched_tokens: 8192,
        kv_capacity_tokens: 1 << 30,
        prefix_cache: false,
        ..SimConfig::preset("h100-llama3-8b").expect("a built-in preset")
    }
}

/// The conformance cases.
pub fn cases() -> Vec<Case> {
    let tiny = SimConfig::preset("cpu-tiny").expect("a built-in preset");
    vec![
        Case {
            name: "fixed",
            what: "fixed lengths, 256 in and 128 out, on cpu-tiny (4 slots, prefill-first): 1.17 req/s",
            sim: tiny.clone(),
            workload: WorkloadSpec::fixed(256, 128),
            level_duration: None,
        },
        Case {
            name: "skewed",
            what: "Synthetic-Skewed lengths on 128 slots of 5 ms steps (chunked): about 125 req/s",
            sim: flat(128, 5.0, 0.002),
            workload: WorkloadSpec::named("synthetic-skewed").expect("a built-in workload"),
            level_duration: None,
        },
        Case {
            name: "long",
            what: "long requests, 128 in and 256 out (2.6 s each) on 64 slots of 10 ms steps, 6 s levels: latency above 0.2 × the level; 24.2 req/s",
            sim: flat(64, 10.0, 0.01),
            workload: WorkloadSpec::fixed(128, 256),
            level_duration: Some(Duration::from_secs(6)),
        },
        Case {
            name: "slow",
            what: "a slow server: cpu-tiny answering 640 tokens, 4 slots (llama.cpp on two CPU cores): 0.33 req/s",
            sim: tiny,
            workload: WorkloadSpec::fixed(256, 640),
            level_duration: None,
        },
    ]
}

/// The case called `name`.
pub fn case(name: &str) -> Option<Case> {
    cases().into_iter().find(|c| c.name == name)
}

/// The options of `servebench test NAME` with the defaults of its flags: `--quick` when
/// `quick`, `--level-duration`, the workload and `--seed` given.
pub fn options_for(
    quick: bool,
    level_duration: Option<Duration>,
    workload: WorkloadSpec,
    seed: u64,
) -> Options {
    Options {
        quick,
        level_duration,
        tolerance: 0.05,
        slo: None,
        seed,
        workload,
        workload_given: true,
        load: None,
        closed_loop: false,
        capacity_rate_per_s: None,
        capacity_concurrency: None,
        estimate_concurrency: 32,
        start_concurrency: 8,
        concurrency_limit: 512,
        curve_levels: 12,
        load_shares: None,
        oversubscription: vec![1.0, 1.1, 1.25, 1.5],
        lengths: None,
        requests_per_length: None,
        length_concurrency: 1,
        requests: None,
        output_tokens: None,
        context_tokens: None,
        gpus: None,
        targets: Vec::new(),
        from_runs: Default::default(),
        cache_switch: false,
        arrival: "poisson".into(),
        safety_systems: None,
        disclosure: Disclosure::default(),
    }
}

/// Runs `servebench test TEST --quick` on a case with a seed: the finding and the bench
/// (its virtual time, and what each level offered).
pub fn run_test(case: &Case, test: TestName, seed: u64) -> anyhow::Result<(Finding, VirtualBench)> {
    let mut o = options_for(true, case.level_duration, case.workload.clone(), seed);
    if let LengthDist::Fixed { value } = case.workload.output {
        // Capacity fixes the output length (64 with --quick): keep the case's.
        o.output_tokens = Some(value);
    }
    let mut bench = VirtualBench::new(case.sim.clone(), &o)?;
    let finding = procedure(test)?(&mut bench, &o);
    Ok((finding, bench))
}

/// The procedure of `servebench test TEST`, for the tests the virtual bench can run
/// (fairness and memory pressure need what it does not model: request classes, the KV
/// cache and preemption).
pub fn procedure(test: TestName) -> anyhow::Result<fn(&mut dyn Bench, &Options) -> Finding> {
    Ok(match test {
        TestName::Ttft => super::ttft::run,
        TestName::Throughput => super::throughput::run,
        TestName::Curve => super::curve::run,
        TestName::Itl => super::itl::run,
        TestName::Capacity => super::capacity::run,
        TestName::PrefixCache => super::prefix_cache::run,
        TestName::LongContext => super::long_context::run,
        TestName::Guardrails => super::guardrails::run,
        other => anyhow::bail!("{other} is not part of the conformance checks"),
    })
}

/// One throughput run on a case.
#[derive(Debug, Clone)]
pub struct CaseRun {
    pub seed: u64,
    /// The answer's rate: what the sustainable level sustained, requests per second.
    pub answer_per_s: Option<f64>,
    /// The engine's analytic capacity for the requests that level offered.
    pub truth_per_s: Option<f64>,
    /// How long the test would have taken, s.
    pub test_s: f64,
    /// The one-line answer.
    pub answer: String,
}

impl CaseRun {
    /// Answer ÷ truth.
    pub fn ratio(&self) -> Option<f64> {
        Some(self.answer_per_s? / self.truth_per_s.filter(|t| *t > 0.0)?)
    }
}

/// `servebench test throughput --quick` on a case with a seed.
pub fn run_case(case: &Case, seed: u64) -> anyhow::Result<CaseRun> {
    let (finding, bench) = run_test(case, TestName::Throughput, seed)?;
    let result: ThroughputResult =
        serde_json::from_value(finding.result).context("the throughput result")?;
    Ok(CaseRun {
        seed,
        answer_per_s: result.sustained_rate_per_s,
        truth_per_s: result.sustainable_level.and_then(|i| bench.truth_at(i)),
        test_s: bench.elapsed_s,
        answer: finding.answer,
    })
}

/// A case run with every seed.
#[derive(Debug, Clone)]
pub struct CaseCheck {
    pub runs: Vec<CaseRun>,
}

impl CaseCheck {
    /// The median of answer ÷ truth over the runs; `None` when a run has no answer.
    pub fn median_ratio(&self) -> Option<f64> {
        let mut r: Vec<f64> = self
            .runs
            .iter()
            .map(|x| x.ratio())
            .collect::<Option<Vec<f64>>>()?;
        r.sort_by(f64::total_cmp);
        r.get(r.len() / 2).copied()
    }

    /// Whether the median answer lies within [`TOLERANCE`] of the truth.
    pub fn conforms(&self) -> bool {
        self.median_ratio()
            .is_some_and(|m| (m - 1.0).abs() <= TOLERANCE)
    }

    /// The longest run, s.
    pub fn longest_s(&self) -> f64 {
        self.runs.iter().map(|r| r.test_s).fold(0.0, f64::max)
    }

    /// `0.321 vs 0.326 req/s (98.5 %) …` per run, for messages.
    pub fn describe(&self) -> String {
        self.runs
            .iter()
            .map(|r| {
                format!(
                    "seed {}: {} vs {} req/s{} in {:.1} min ({})",
                    r.seed,
                    r.answer_per_s.map_or("-".into(), super::level::rate),
                    r.truth_per_s.map_or("-".into(), super::level::rate),
                    r.ratio()
                        .map(|x| format!(" ({:.1} %)", x * 100.0))
                        .unwrap_or_default(),
                    r.test_s / 60.0,
                    r.answer
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Runs a case with every seed of `seeds`.
pub fn check(case: &Case, seeds: &[u64]) -> anyhow::Result<CaseCheck> {
    let runs = seeds
        .iter()
        .map(|&s| run_case(case, s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(CaseCheck { runs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedure::level::{LevelVerdict, Role};
    use crate::procedure::session::{Criteria, Session};

    /// The engine model in virtual time completes at the analytic capacity when saturated:
    /// a closed loop of 64 on each case's engine, past its first tenth. (A prefill-first
    /// closed loop that frees its slots together prefills them in one step, about 1 %
    /// faster than the open-loop cycle the analytic figure models.)
    #[test]
    fn the_engine_completes_at_its_analytic_capacity() {
        for c in cases() {
            let o = options_for(true, None, c.workload.clone(), 1);
            let bench = VirtualBench::new(c.sim.clone(), &o).unwrap();
            let truth = match c.workload.output {
                LengthDist::Fixed { value } => {
                    c.sim
                        .capacity(c.workload.input.min_value(), value)
                        .unwrap()
                        .requests_per_s
                }
                _ => continue,
            };
            let secs = (400.0 / truth).max(20.0);
            let spec = LevelSpec::new(
                "saturated",
                Role::Estimate,
                Load::Concurrency { concurrency: 64 },
                Duration::from_secs_f64(secs),
            );
            let (records, _, _) = bench.simulate(&spec);
            let r = crate::procedure::pace::completion_rate(&records).unwrap();
            assert!((r / truth - 1.0).abs() < 0.03, "{}: {r} vs {truth}", c.name);
        }
    }

    /// Issue 19, item 12: with `--capacity 0.4`, `test throughput --quick` on llama.cpp
    /// (4 slots, about 0.4 requests per second) answered 5.6 req/s sustainable: its 6 s
    /// levels completed a few requests each and no signal could fire. On the slow case
    /// (0.33 per second), a 6 s level at 5.6 per second after a 3 s reference, judged as the
    /// old search judged it but with the new signals: the level completed a fraction of what
    /// it offered, and is not sustained.
    #[test]
    fn a_slow_server_does_not_sustain_a_rate_far_past_it() {
        let slow = case("slow").unwrap();
        let o = options_for(true, None, slow.workload.clone(), 1);
        let mut bench = VirtualBench::new(slow.sim.clone(), &o).unwrap();
        let mut s = Session::new(&mut bench, None);
        s.reference(Duration::from_secs(3)).unwrap();
        let spec = LevelSpec::new(
            "rate 5.6 req/s",
            Role::Bracket,
            Load::Rate { rate_per_s: 5.6 },
            Duration::from_secs(6),
        );
        let criteria = Criteria {
            saturation: true,
            ..Default::default()
        };
        let v = s.probe(spec, criteria).unwrap();
        assert_eq!(v, LevelVerdict::Fail);
        let level = s.levels.last().unwrap();
        assert!(level.signals.offered_shortfall, "{}", level.reason);
        assert!(level.summary.requests.completed < 10, "{}", level.reason);
    }
}
