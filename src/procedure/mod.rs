//! The draft's ten benchmarking tests (section 5 of "Benchmarking Methodology for Large
//! Language Model Serving") as procedures on top of the run engine.
//!
//! A procedure answers one question ("how much load does this server take under my SLO?")
//! by running load levels, each a complete run folder, and reading derived points off them
//! (sustainable rate, knee, capacity, fits). The searches and readings are pure and tested
//! on made-up levels; running a level is behind the [`Bench`] trait, which `levels`
//! implements against real servers and the simulator.
//!
//! Layout: `pace` (the server's own speed, measured first, and the level sizes from it),
//! `search` (bracket and bisect), `saturation` (the draft's 5.2.3.1 signals on the
//! steady window; `arrivals` follows each arrival to its own end for them), `slo_check`
//! (attainment with a Wilson interval), `compliance` (every MUST/SHOULD per test), `budget`,
//! one file per test, `report` (the `test.json` contract), `suite` (the `suite.json` and
//! `profiles.json` contracts), `tables` (the draft's Tables 1-14 in the terminal) and
//! `conformance` (the procedures on engine models of known capacity, in virtual time).

pub mod arrivals;
pub mod budget;
pub mod capacity;
pub mod compliance;
pub mod conformance;
pub mod curve;
#[cfg(test)]
mod draft_tables;
pub mod fairness;
pub mod guardrails;
pub mod itl;
pub mod level;
pub mod long_context;
pub mod memory;
pub mod pace;
pub mod prefix_cache;
pub mod report;
pub mod result;
pub mod saturation;
pub mod search;
pub mod session;
pub mod slo_check;
pub mod suite;
pub mod throughput;
pub mod ttft;

pub use level::{Bench, LevelOutcome, LevelSpec, LevelVerdict, Load, Role, Stop};
pub use report::{TestReport, TestStatus};
pub use result::{OneResult, TestResult};

use serde::{Deserialize, Serialize};

/// The ten tests of the draft's section 5.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum TestName {
    /// 5.1 Time to First Token: the TTFT distribution at one load.
    Ttft,
    /// 5.2 Output Token Throughput: the most load sustained (optionally under an SLO).
    Throughput,
    /// 5.3 Throughput-Latency Tradeoff: the curve, its knee and saturation point.
    Curve,
    /// 5.4 Inter-Token Latency Distribution at 25/50/75/90 % of capacity.
    Itl,
    /// 5.5 Concurrent Request Capacity: the most concurrent requests meeting the criteria.
    Capacity,
    /// 5.6 Scheduling Fairness: short and long requests, isolated and mixed.
    Fairness,
    /// 5.7 Prefix Cache Effectiveness: cache off, cold and warm.
    PrefixCache,
    /// 5.8 Memory Pressure Behavior: 100-150 % of capacity.
    MemoryPressure,
    /// 5.9 Long Context Scaling: TTFT against context length, with a fitted model.
    LongContext,
    /// 5.10 Guardrail Overhead: labelled configurations at 25/50/75 % of capacity.
    Guardrails,
}

impl TestName {
    /// Every test, in the draft's order.
    pub const ALL: [TestName; 10] = [
        Self::Ttft,
        Self::Throughput,
        Self::Curve,
        Self::Itl,
        Self::Capacity,
        Self::Fairness,
        Self::PrefixCache,
        Self::MemoryPressure,
        Self::LongContext,
        Self::Guardrails,
    ];

    /// The command-line and `test.json` name.
    pub fn slug(self) -> &'static str {
        match self {
            Self::Ttft => "ttft",
            Self::Throughput => "throughput",
            Self::Curve => "curve",
            Self::Itl => "itl",
            Self::Capacity => "capacity",
            Self::Fairness => "fairness",
            Self::PrefixCache => "prefix-cache",
            Self::MemoryPressure => "memory-pressure",
            Self::LongContext => "long-context",
            Self::Guardrails => "guardrails",
        }
    }

    /// The draft's section number.
    pub fn section(self) -> &'static str {
        match self {
            Self::Ttft => "5.1",
            Self::Throughput => "5.2",
            Self::Curve => "5.3",
            Self::Itl => "5.4",
            Self::Capacity => "5.5",
            Self::Fairness => "5.6",
            Self::PrefixCache => "5.7",
            Self::MemoryPressure => "5.8",
            Self::LongContext => "5.9",
            Self::Guardrails => "5.10",
        }
    }

    /// The draft's title of the section.
    pub fn title(self) -> &'static str {
        match self {
            Self::Ttft => "Time to First Token",
            Self::Throughput => "Output Token Throughput",
            Self::Curve => "Throughput-Latency Tradeoff",
            Self::Itl => "Inter-Token Latency Distribution",
            Self::Capacity => "Concurrent Request Capacity",
            Self::Fairness => "Scheduling Fairness",
            Self::PrefixCache => "Prefix Cache Effectiveness",
            Self::MemoryPressure => "Memory Pressure Behavior",
            Self::LongContext => "Long Context Scaling",
            Self::Guardrails => "Guardrail Overhead",
        }
    }
}

impl std::fmt::Display for TestName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.slug())
    }
}

use crate::metrics::slo::SloSpec;
use crate::workload::WorkloadSpec;
use std::collections::BTreeMap;
use std::time::Duration;

/// Everything a procedure may be told (from `servebench test` flags). Durations and counts
/// left `None` take the draft's minimums, or their `--quick` versions.
#[derive(Debug, Clone, Serialize)]
pub struct Options {
    /// Shortened levels for smoke tests (never compliant).
    pub quick: bool,
    /// Measured phase of each main level (`--level-duration`).
    pub level_duration: Option<Duration>,
    /// Relative tolerance of the rate bisection (0.05 = 5 %).
    pub tolerance: f64,
    pub slo: Option<SloSpec>,
    pub seed: u64,
    /// The run's workload.
    pub workload: WorkloadSpec,
    /// `--workload`/`--dataset`/lengths were given (else a test may pick the draft's
    /// recommended workload).
    pub workload_given: bool,
    /// `--rate` or `--concurrency`, when given.
    pub load: Option<Load>,
    /// 5.2 in closed loop (search concurrency instead of rate).
    pub closed_loop: bool,
    /// Known capacity, requests per second (`--capacity`): skips the estimate.
    pub capacity_rate_per_s: Option<f64>,
    /// Known concurrent capacity (`--capacity-concurrency`): memory pressure skips 5.5.
    pub capacity_concurrency: Option<u32>,
    /// Concurrency of the closed-loop capacity estimate.
    pub estimate_concurrency: u32,
    /// 5.5 search start and limit.
    pub start_concurrency: u32,
    pub concurrency_limit: u32,
    /// 5.3: number of levels (10 % steps from 10 %).
    pub curve_levels: u32,
    /// Shares of capacity for 5.4 / 5.10 / fairness, when overridden.
    pub load_shares: Option<Vec<f64>>,
    /// 5.8 levels, shares of the concurrent capacity.
    pub oversubscription: Vec<f64>,
    /// 5.9 lengths (tokens), requests per length, concurrency.
    pub lengths: Option<Vec<u32>>,
    pub requests_per_length: Option<u64>,
    pub length_concurrency: u32,
    /// Requests of a single-level test (5.1) or of each cache configuration (5.7).
    pub requests: Option<u64>,
    /// Fixed output length where a test fixes it (5.5, 5.9), tokens.
    pub output_tokens: Option<u32>,
    /// The server's context limit (asked from the server or `--context-tokens`), tokens.
    pub context_tokens: Option<u32>,
    /// GPUs serving the model (`--gpus`), for tokens per GPU-second.
    pub gpus: Option<u32>,
    /// Labelled targets, in the order given (`--target NAME=URL`).
    pub targets: Vec<String>,
    /// Earlier runs to compose (`--from NAME=RUN`), prefix cache only.
    pub from_runs: BTreeMap<String, std::path::PathBuf>,
    /// The server honours a per-request prefix-cache switch (`cache_prompt`).
    pub cache_switch: bool,
    /// Open-loop arrival process (`poisson`, `constant`, `gamma`).
    pub arrival: String,
    /// 5.10: the safety systems of the filtered configurations, by name (draft 4.8.1).
    pub safety_systems: Option<String>,
    /// What the report states about the main target that no record shows.
    pub disclosure: Disclosure,
}

/// The main target's configuration as the report must state it and no record shows: its
/// prefix caching state (draft 5.1.5.1) and its guardrails (4.8.1). From the tester
/// (`--prefix-caching`, `--guardrails`), or from the built-in simulator, which knows its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Disclosure {
    /// Prefix caching enabled or disabled, in words.
    pub prefix_caching: Option<String>,
    /// Input and output content filtering and the safety systems, in words.
    pub guardrails: Option<String>,
}

impl Disclosure {
    /// The built-in simulator's own configuration. `requests_use_cache`: the requests do not
    /// ask the server to skip its prefix cache (`--no-prefix-cache` absent).
    pub fn of_simulator(cfg: &crate::sim::SimConfig, requests_use_cache: bool) -> Self {
        let prefix_caching = if !cfg.prefix_cache {
            "disabled (the built-in simulator's prefix cache is off)".to_owned()
        } else if !requests_use_cache {
            "enabled in the built-in simulator, and every request asks not to use it (cache_prompt: false)".to_owned()
        } else {
            format!(
                "enabled (the built-in simulator's prefix cache, {}-token blocks)",
                cfg.block_size
            )
        };
        let (input, output) = (cfg.input_guardrail_ms, cfg.output_guardrail_ms);
        let refusals = cfg.faults.refusal_rate;
        let guardrails = if input <= 0.0 && output <= 0.0 && refusals <= 0.0 {
            "none: the built-in simulator filters neither input nor output".to_owned()
        } else {
            format!(
                "the built-in simulator's stand-in filters: input {}, output {}, refusing {:.1} % of answers",
                if input > 0.0 { format!("+{input} ms") } else { "off".to_owned() },
                if output > 0.0 { format!("+{output} ms per token") } else { "off".to_owned() },
                refusals * 100.0
            )
        };
        Self {
            prefix_caching: Some(prefix_caching),
            guardrails: Some(guardrails),
        }
    }
}

impl Options {
    /// The main level duration: `--level-duration`, else `full_s` (the draft's minimum), or
    /// `quick_s` with `--quick`.
    pub fn duration(&self, full_s: f64, quick_s: f64) -> Duration {
        self.level_duration
            .unwrap_or_else(|| Duration::from_secs_f64(if self.quick { quick_s } else { full_s }))
    }

    /// A count: `full`, or `quick` with `--quick`.
    pub fn count(&self, full: u64, quick: u64) -> u64 {
        if self.quick {
            quick
        } else {
            full
        }
    }

    /// Seconds of the reference and estimate levels (short: they calibrate, not measure).
    pub fn calibration(&self) -> Duration {
        let main = self.duration(60.0, 6.0).as_secs_f64();
        Duration::from_secs_f64((main / 2.0).clamp(3.0, 30.0))
    }
}

/// Common parameters recorded in `test.json`.
/// Runs the procedure `test` on `bench` with options `o`: the one dispatch from a test's
/// name to its section's procedure, for every driver (a test, a suite, the conformance
/// checks).
pub fn run(test: TestName, bench: &mut dyn level::Bench, o: &Options) -> report::Finding {
    match test {
        TestName::Ttft => ttft::run(bench, o),
        TestName::Throughput => throughput::run(bench, o),
        TestName::Curve => curve::run(bench, o),
        TestName::Itl => itl::run(bench, o),
        TestName::Capacity => capacity::run(bench, o),
        TestName::Fairness => fairness::run(bench, o),
        TestName::PrefixCache => prefix_cache::run(bench, o),
        TestName::MemoryPressure => memory::run(bench, o),
        TestName::LongContext => long_context::run(bench, o),
        TestName::Guardrails => guardrails::run(bench, o),
    }
}

pub fn common_parameters(o: &Options) -> serde_json::Value {
    serde_json::json!({
        "quick": o.quick,
        "level_duration_s": o.level_duration.map(|d| d.as_secs_f64()),
        "tolerance": o.tolerance,
        "slo": o.slo.as_ref().map(|s| s.to_string()),
        "slo_target": o.slo.as_ref().map(|s| s.target_attainment),
        "seed": o.seed,
        "workload": o.workload.name,
        "profile": o.workload.profile,
        "gpus": o.gpus,
        "prefix_caching": o.disclosure.prefix_caching,
        "guardrails": o.disclosure.guardrails,
    })
}
