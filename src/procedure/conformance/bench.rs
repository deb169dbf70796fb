//! The virtual bench: the procedures' `Bench` on an engine model in virtual time, with the
//! run engine's arrival plan, grace and cancellations, and what each level offered.

use super::engine::{Engine, Level};
use super::prefix::{PrefixCache, SharedPrefixes};
use super::{GRACE_S, HORIZON_S, LEVEL_OVERHEAD_S, RUN_TEMPLATE, WARMUP_MAX_S};
use crate::artifacts::RunReport;
use crate::metrics::{summarize, SummaryParams};
use crate::procedure::level::{Bench, LevelRun, LevelSpec, Load, Stop, WarmupChoice};
use crate::procedure::Options;
use crate::record::RequestRecord;
use crate::schedule::Arrival;
use crate::schedule::ArrivalPlan;
use crate::sim::SimConfig;
use crate::workload::WorkloadSpec;
use anyhow::Context;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cell::RefCell;
use std::collections::VecDeque;

/// Runs levels on an engine model in virtual time ([module documentation](super)).
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
    pub(super) fn simulate(&self, spec: &LevelSpec) -> (Vec<RequestRecord>, u64, Vec<u32>) {
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
