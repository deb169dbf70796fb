//! Flag definitions. The doc comments are the `--help` text: keep them complete.
//!
//! One file per group of flags, each struct re-exported here as `flags::X`: `run`'s
//! groups (`target`, `workload`, `load`, `limits`, `ux`, `output`, `sim`), which `RunArgs`
//! below gathers, and the other commands' flags (`commands`, `procedure`, `runs`,
//! `scaleout`). This file keeps the command line itself and the value parsers.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

mod commands;
mod limits;
mod load;
mod media;
mod output;
mod procedure;
mod runs;
mod scaleout;
mod sim;
mod target;
mod ux;
mod workload;

pub use commands::*;
pub use limits::*;
pub use load::*;
pub use media::*;
pub use output::*;
pub use procedure::*;
pub use runs::*;
pub use scaleout::*;
pub use sim::*;
pub use target::*;
pub use ux::*;
pub use workload::*;

#[derive(Debug, Parser)]
#[command(name = "servebench", version, about = "Benchmark LLM serving systems the way their users feel them", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// How long a run takes (the help of `run`).
const RUN_LENGTHS: &str =
    "How long: servebench prints the planned length of each phase before it starts (warm-up, \
prefill profile, measurement at the rate the test request measured) and an ETA from the \
first second. Typical: the built-in simulator's default run (64 streams, 1,000 requests) \
takes under a minute. llama.cpp on two CPU cores (Gemma 3 270M, 4 slots) completes about \
0.5 requests/s of 256 prompt and 128 output tokens, so --requests 1000 takes about 35 \
minutes: start with --duration 2m (about 3.5 minutes in all: the draft's warm-up would not \
fit, so it stops at half the measured phase, as its line says before it starts).";

/// How `run`'s options read inside a test (the help of `test` and `suite`).
const TEST_RUN_OPTIONS: &str =
    "Run options inside a test: the target, workload, request body, SLO, telemetry and output \
options apply to every level. --duration is each level's length (as --level-duration), not \
the whole test's: --budget bounds the whole test. --requests is the count of the \
single-level tests (ttft: default 10,000, the draft's count behind P99.9; prefix-cache: \
per configuration). --rate/--concurrency set the load of ttft and prefix-cache; the \
searches and sweeps choose their own loads. --max-concurrency is not used.

How long: a test prints its plan before it starts (its levels, how many, how long each, \
and the total with the warm-up and ~5 s between levels), a suite the sum, and each level's \
line the time left. Full tests measure the draft's minimum durations (60 s a level; 120 s \
for memory-pressure, 300 s for fairness's mix): throughput is about 10-15 minutes, a suite \
hours. With --quick (levels of 3-8 s, a short warm-up) a test takes 1-3 minutes on the \
built-in simulator and a suite 15-20; against llama.cpp on two CPU cores, a --quick \
test takes several minutes. --budget 30m bounds any of them.

How long a test takes: the tests that take a capacity (throughput, curve, itl, ttft, \
fairness, capacity) first measure the server's own speed: one request alone, then requests \
one at a time (10 of them with --quick, 30 without), then a closed-loop probe (20 \
completions, 60 without --quick; --capacity skips it, and the capacity test needs none). Every level then lasts at least \
--level-duration (60 s; 6 s with --quick) and long enough for 50 completions at the rate \
the server can have (200 without --quick; 10 and 50 for a sweep's point below 90 % of capacity, as many as a search level above), at most 300 s \
with --quick. On a server of 0.3 req/s --quick takes up to about 35 min (throughput, \
itl), 60 (curve: a throughput search, then its levels), 15 (ttft, capacity); checked on the simulator's engine model by `servebench \
selfbench --procedures`.";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark a streaming endpoint: OpenAI chat, completions or responses, Anthropic
    /// messages, or an engine's native route (the built-in simulator when no --url).
    #[command(after_help = RUN_LENGTHS)]
    Run(Box<RunCommand>),
    /// Serve the built-in simulated LLM server (OpenAI-compatible, SSE) until Ctrl-C.
    Sim(SimArgs),
    /// Inspect a workload without sending anything: `show` prints its specification and the
    /// statistics of a drawn sample, `export` writes the exact request sequence as JSONL.
    #[command(subcommand)]
    Workload(WorkloadCommand),
    /// Fit the server's prefill time against prompt length from isolated requests (Etalon's
    /// D_p curve for the fluidity-index) and save it for `run --prefill-curve`.
    ProfilePrefill(Box<ProfilePrefillArgs>),
    /// Measure servebench itself against the simulator's ground truth (accuracy, CPU per
    /// chunk, open-loop fidelity). A benchmark: numbers depend on the machine.
    Selfbench(SelfbenchArgs),
    /// A run's report from its folder; a run that was killed is rebuilt from its
    /// requests.jsonl first.
    Report(ReportArgs),
    /// Run one of the draft's benchmarking tests (section 5) as a procedure: load levels,
    /// each a run folder, read for the test's answer; writes test.json and the draft's
    /// tables (docs/procedures.md).
    #[command(after_help = TEST_RUN_OPTIONS)]
    Test(Box<TestArgs>),
    /// Run every test that applies to one target, one folder each, and a suite.json
    /// with every answer (the draft's full report, Appendix C.2).
    #[command(after_help = TEST_RUN_OPTIONS)]
    Suite(Box<SuiteArgs>),
    /// List indexed runs, newest first, with their key figures (docs/history.md).
    History(HistoryArgs),
    /// Attach a label to a run (or remove it with --remove); labels group runs for
    /// `compare label:NAME` and `regress --baseline label:NAME`.
    Label(LabelArgs),
    /// Attach a free-text note to a run.
    Note(NoteArgs),
    /// Rebuild the history database from the run and test folders under DIR (the folders
    /// are the truth; labels and notes are kept).
    Reindex(ReindexArgs),
    /// Compare systems from their runs: side by side key metrics, with ≥ 3 runs per system
    /// 95 % intervals, Welch's test and effect sizes, and the draft's fair-comparison
    /// checklist (docs/compare.md).
    Compare(CompareArgs),
    /// CI gate: exit 1 when a key metric of the candidate runs is worse than the baseline's
    /// beyond the tolerance with confidence, 0 otherwise, 2 on usage errors or too few runs
    /// (fewer than 3 a side), 3 when too few runs still show a key metric worse by more than
    /// 20 % (a likely regression, no statistical claim).
    Regress(RegressArgs),
    /// Write a run in another format: CSV of requests or of run summaries, vLLM's
    /// `bench serve` result JSON, AIPerf's profile exports, or Parquet files of its requests,
    /// chunks and timeseries for pandas, Polars and DuckDB.
    Export(ExportArgs),
    /// Freeze a load for several generators: the run options, seed, workload, schedule,
    /// limits and a common start, cut into --shards shares (docs/scale-out.md). --url is
    /// required: every shard sends to the server the plan names.
    #[command(
        after_help = "--url is required here (a plan never starts the built-in simulator). Every run option above is frozen into the plan; each shard runs it with `servebench run --plan PLAN.json --shard i/N --out DIR`."
    )]
    Plan(Box<PlanArgs>),
    /// Merge the run folders of a plan's shards into one run folder: every ordinal exactly
    /// once, clock offsets corrected, summarised like a single run.
    Merge(MergeArgs),
    /// Write the Kubernetes manifests that run a plan's shards as an Indexed Job and merge
    /// them (no cluster needed; pipe to `kubectl apply -f -`).
    K8s(Box<K8sArgs>),
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadFlags,
    #[command(flatten)]
    pub media: MediaFlags,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub body: BodyArgs,
    #[command(flatten)]
    pub slo: SloArgs,
    #[command(flatten)]
    pub ux: UxArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub sim: SimFlags,
    #[command(flatten)]
    pub websocket: WebSocketArgs,
}

/// Parses a share: `5%` or `0.05` (a bare number above 1 is refused as ambiguous).
pub fn parse_share(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (number, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let v: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a share: write 5% or 0.05"))?;
    let v = if percent { v / 100.0 } else { v };
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("`{s}` must be 0 or more"));
    }
    if !percent && v > 1.0 {
        return Err(format!(
            "`{s}` is ambiguous: write {s}% for a percentage, or a share such as 0.05"
        ));
    }
    Ok(v)
}

/// Parses a duration such as `60s`, `5m`, `1h30m`, `250ms` (humantime's syntax) or a bare
/// number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        return if secs >= 0.0 && secs.is_finite() {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(format!("`{s}` is not a duration"))
        };
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration ({e}); examples: 60s, 5m, 1h30m, 500ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2.5"), Ok(Duration::from_millis(2500)));
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("10").is_ok());
    }

    #[test]
    fn shares() {
        assert_eq!(parse_share("5%"), Ok(0.05));
        assert_eq!(parse_share(" 2.5 % "), Ok(0.025));
        assert_eq!(parse_share("0.1"), Ok(0.1));
        assert_eq!(parse_share("0"), Ok(0.0));
        assert!(parse_share("5").unwrap_err().contains("ambiguous"));
        assert!(parse_share("-1%").is_err());
        assert!(parse_share("five").is_err());
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
