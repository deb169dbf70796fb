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
//!
//! [`ArrivalPlan`]: crate::schedule::ArrivalPlan

mod bench;
pub mod coverage;
mod engine;
mod prefix;
pub mod readings;

pub use bench::VirtualBench;
pub use readings::{
    capacity_truth, check_reading, knee_point, run_reading, Accept, Reading, ReadingCheck,
    ReadingRun, READINGS,
};

use super::level::Bench;
use super::report::Finding;
use super::throughput::ThroughputResult;
use super::{Disclosure, OneResult, Options, TestName};
use crate::sim::config::{PrefillPolicy, StepModel};
use crate::sim::SimConfig;
use crate::workload::lengths::LengthDist;
use crate::workload::WorkloadSpec;
use anyhow::Context;
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
    run_test_with(case, test, seed, true)
}

/// Runs `servebench test TEST` on a case with a seed, `--quick` when `quick`, else with the
/// full durations.
pub fn run_test_with(
    case: &Case,
    test: TestName,
    seed: u64,
    quick: bool,
) -> anyhow::Result<(Finding, VirtualBench)> {
    let mut o = options_for(quick, case.level_duration, case.workload.clone(), seed);
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
    /// The answer's own 95 % interval.
    pub bound: Option<crate::stats::percentile_bounds::Bound>,
}

impl CaseRun {
    /// Whether the answer's interval holds the truth (`None` without either).
    pub fn held(&self) -> Option<bool> {
        Some(self.bound?.covers(self.truth_per_s?))
    }

    /// Answer ÷ truth.
    pub fn ratio(&self) -> Option<f64> {
        Some(self.answer_per_s? / self.truth_per_s.filter(|t| *t > 0.0)?)
    }
}

/// `servebench test throughput` on a case with a seed (`--quick` when `quick`).
pub fn run_case(case: &Case, seed: u64, quick: bool) -> anyhow::Result<CaseRun> {
    let (finding, bench) = run_test_with(case, TestName::Throughput, seed, quick)?;
    let result = ThroughputResult::of(&finding.result).context("the throughput result")?;
    Ok(CaseRun {
        seed,
        answer_per_s: result.sustained_rate_per_s,
        truth_per_s: result.sustainable_level.and_then(|i| bench.truth_at(i)),
        test_s: bench.elapsed_s,
        answer: finding.answer,
        bound: result.sustained_bound_per_s,
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

    /// How many runs' answer intervals held the truth, of those with both.
    pub fn intervals_held(&self) -> (usize, usize) {
        let judged: Vec<bool> = self.runs.iter().filter_map(CaseRun::held).collect();
        (judged.iter().filter(|h| **h).count(), judged.len())
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
                    "seed {}: {} vs {} req/s{}{} in {:.1} min ({})",
                    r.seed,
                    r.answer_per_s.map_or("-".into(), super::level::rate),
                    r.truth_per_s.map_or("-".into(), super::level::rate),
                    r.ratio()
                        .map(|x| format!(" ({:.1} %)", x * 100.0))
                        .unwrap_or_default(),
                    match r.held() {
                        Some(true) => ", interval holds the truth",
                        Some(false) => ", interval MISSES the truth",
                        None => "",
                    },
                    r.test_s / 60.0,
                    r.answer
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Runs a case's `test throughput --quick` with every seed of `seeds`.
pub fn check(case: &Case, seeds: &[u64]) -> anyhow::Result<CaseCheck> {
    check_with(case, seeds, true)
}

/// Runs a case's `test throughput` with every seed of `seeds`, `--quick` when `quick`, else
/// with the full durations.
pub fn check_with(case: &Case, seeds: &[u64], quick: bool) -> anyhow::Result<CaseCheck> {
    let runs = seeds
        .iter()
        .map(|&s| run_case(case, s, quick))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(CaseCheck { runs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedure::level::{LevelSpec, LevelVerdict, Load, Role};
    use crate::procedure::session::{Criteria, Session};

    /// Issue 31, item 8: one seed on the slow server answered 67 % of the truth (a short
    /// level failed on a false alarm at 0.245 req/s, below the truth of 0.326). The answer
    /// carries its interval, and the interval holds the truth: its lower side is the
    /// sustainable level's Garwood bound, its upper side open, because the failing level's
    /// completions kept up with what it asked.
    #[test]
    fn the_throughput_answer_carries_an_interval_that_holds_the_truth() {
        let slow = case("slow").unwrap();
        let run = run_case(&slow, 5, true).unwrap();
        let b = run.bound.expect("an interval");
        let (answer, truth) = (run.answer_per_s.unwrap(), run.truth_per_s.unwrap());
        assert!(
            answer < 0.8 * truth,
            "the seed that answers low: {answer} vs {truth}"
        );
        assert!(b.lo.unwrap() < answer && b.hi.is_none(), "{b:?}");
        assert_eq!(run.held(), Some(true));
        assert!(run.answer.contains(" [≥ "), "{}", run.answer);
    }

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
