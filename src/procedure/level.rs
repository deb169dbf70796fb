//! One load level of a procedure: what to run ([`LevelSpec`]), what came back ([`LevelRun`]),
//! and what the procedure made of it ([`LevelOutcome`], one entry of `test.json`'s `levels`).
//!
//! Procedures never run anything themselves: they hand a spec to a [`Bench`], which runs it
//! as a full run folder (or refuses: interrupted, out of budget), so the searches can be
//! tested with a bench made of arithmetic.

use super::saturation::Signals;
use super::slo_check::SloCheck;
use crate::artifacts::RunReport;
use crate::metrics::failures::ServerOutcomes;
use crate::metrics::RunSummary;
use crate::record::RequestRecord;
use crate::workload::WorkloadSpec;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The load of a level: an open-loop rate or a closed-loop concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Load {
    /// Open loop (Poisson arrivals unless the run options say otherwise), requests per second.
    Rate { rate_per_s: f64 },
    /// Closed loop: this many requests always in flight.
    Concurrency { concurrency: u32 },
}

impl Load {
    /// `12.5 req/s` or `concurrency 8`.
    pub fn describe(&self) -> String {
        match self {
            Self::Rate { rate_per_s } => format!("{} req/s", rate(*rate_per_s)),
            Self::Concurrency { concurrency } => format!("concurrency {concurrency}"),
        }
    }

    /// A name fragment for the level's folder: `rate-12.5`, `c8`.
    pub fn folder_part(&self) -> String {
        match self {
            Self::Rate { rate_per_s } => format!("rate-{}", rate(*rate_per_s)),
            Self::Concurrency { concurrency } => format!("c{concurrency}"),
        }
    }
}

/// A rate with as many decimals as it needs (never rounded to an integer: 0.35 req/s is a
/// real capacity).
pub fn rate(r: f64) -> String {
    let digits = if r >= 100.0 {
        1
    } else if r >= 10.0 {
        2
    } else {
        3
    };
    let s = format!("{r:.digits$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

/// Why a level ran (shown in tables and `test.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// One request alone, before anything else: the server's own latency, which sizes the
    /// calibration levels after it.
    Alone,
    /// Concurrency 1: the latency without contention that saturation is judged against.
    Reference,
    /// A short closed-loop run whose completion rate estimates capacity.
    Estimate,
    /// Doubling or halving to bracket the limit.
    Bracket,
    /// Bisection between a passing and a failing level.
    Bisect,
    /// A level re-run longer because its SLO interval straddled the target.
    Extend,
    /// One point of a fixed sweep (curve, ITL, guardrail, memory levels).
    Sweep,
    /// One class alone at the mixed run's total load (fairness baseline).
    Isolated,
    /// The mixed workload (fairness).
    Mixed,
    /// Prefix cache disabled.
    CacheOff,
    /// Prefix cache enabled, starting empty.
    CacheCold,
    /// Prefix cache enabled, already holding the workload's prefixes.
    CacheWarm,
    /// One context length (long context).
    Length,
    /// A single measured run (TTFT).
    Measure,
}

/// Warm-up before a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarmupChoice {
    /// The run options' warm-up (the draft's 4.5 procedure by default).
    AsConfigured,
    /// None: the server was warmed by an earlier level.
    Skip,
    /// None, and the next level still gets the configured warm-up: the single request that
    /// measures the server's own speed before the warm-up is sized from it.
    Cold,
    /// None, and the level does not take the test's warm-up: a calibration level (the
    /// concurrency-1 reference, the closed-loop capacity estimate) runs at a load of its
    /// own, so the test warms up at the load of its own first level instead.
    Calibration,
}

/// What a procedure asks the bench to run.
#[derive(Debug, Clone)]
pub struct LevelSpec {
    /// Shown in progress, tables and the folder name (`rate 12.5 req/s`, `cache off`).
    pub label: String,
    pub role: Role,
    pub load: Load,
    /// Measured phase length; `None` with a request count.
    pub duration: Option<Duration>,
    /// Measured requests; `None` with a duration.
    pub requests: Option<u64>,
    /// A workload replacing the run's (long-context lengths, one fairness class).
    pub workload: Option<WorkloadSpec>,
    /// Ask for prefix caching per request (`cache_prompt`), or not; `None`: as configured.
    pub prefix_cache: Option<bool>,
    /// A labelled target (`--target NAME=URL`); `None`: the test's only target.
    pub target: Option<String>,
    pub warmup: WarmupChoice,
    /// The longest the warm-up may run (the shorter of this and `--warmup-max`); `None`:
    /// `--warmup-max`. Set from the server's own speed in `--quick` tests.
    pub warmup_max: Option<Duration>,
    /// Ask the server to drop its prefix cache first (cold-cache levels).
    pub flush_cache: bool,
    /// Send the prompts the test's other sharing levels send (the prefix-cache test's off,
    /// cold and warm levels, which must offer the same prefixes); otherwise a level's
    /// prompts are its own, so a cache holding the previous level's prompts cannot answer
    /// it (`RunConfig::prompt_salt`).
    pub shared_prompts: bool,
    /// Isolated TTFT (P50, P99) per class, ms, for latency inflation (fairness).
    pub baseline: std::collections::BTreeMap<String, (f64, f64)>,
}

impl LevelSpec {
    /// A calibration level (see [`WarmupChoice::Calibration`]) of `load` for `duration`.
    pub fn calibration(
        label: impl Into<String>,
        role: Role,
        load: Load,
        duration: Duration,
    ) -> Self {
        Self {
            warmup: WarmupChoice::Calibration,
            ..Self::new(label, role, load, duration)
        }
    }

    /// A level of `load` for `duration`, no overrides.
    pub fn new(label: impl Into<String>, role: Role, load: Load, duration: Duration) -> Self {
        Self {
            label: label.into(),
            role,
            load,
            duration: Some(duration),
            requests: None,
            workload: None,
            prefix_cache: None,
            target: None,
            warmup: WarmupChoice::Skip,
            warmup_max: None,
            flush_cache: false,
            shared_prompts: false,
            baseline: Default::default(),
        }
    }
}

/// Why a procedure stopped before its plan was done.
#[derive(Debug)]
pub enum Stop {
    /// Ctrl-C: what was measured is kept.
    Interrupted,
    /// The next level would not fit in `--budget`.
    Budget { needed_s: f64, left_s: f64 },
    /// The level could not run at all (server gone, folder not writable).
    Failed(anyhow::Error),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Interrupted => f.write_str("interrupted (Ctrl-C)"),
            Self::Budget { needed_s, left_s } => write!(
                f,
                "out of time budget: the next level needs about {needed_s:.0} s, {left_s:.0} s left"
            ),
            Self::Failed(e) => write!(f, "a level could not run: {e:#}"),
        }
    }
}

/// What the bench measured at one level.
pub struct LevelRun {
    /// The run folder, relative to the test folder.
    pub run: String,
    pub report: RunReport,
    /// Every record of the run (for the steady-window analysis).
    pub records: Vec<RequestRecord>,
    /// What the bench did besides running (e.g. how it emptied the prefix cache).
    pub note: Option<String>,
}

/// Runs levels. Implemented against real servers by `levels::LevelRunner`.
pub trait Bench {
    /// Runs one level as a full run folder.
    fn run_level(&mut self, spec: &LevelSpec) -> Result<LevelRun, Stop>;
    /// Shows a line of progress (the level's verdict, what is left).
    fn progress(&mut self, line: &str);
    /// Reads an earlier run folder as a level (`--from NAME=RUN`).
    fn load_run(&mut self, dir: &std::path::Path) -> Result<LevelRun, Stop>;
}

/// A level's verdict in its procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LevelVerdict {
    /// Sustained: no saturation signal, and the SLO (if any) met with confidence.
    Pass,
    /// Saturated, or the SLO missed with confidence.
    Fail,
    /// The SLO interval straddles the target even after extending the level.
    Undecided,
    /// Measured only; the procedure judges nothing at this level.
    Measured,
}

impl LevelVerdict {
    pub fn word(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Undecided => "undecided",
            Self::Measured => "measured",
        }
    }
}

/// Server counters over a level's window, where the server exposes them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServerFigures {
    /// Preemptions (vLLM) or retractions (SGLang) in the window.
    pub preemptions: Option<f64>,
    /// Prefix-cache hit rate from the server's counters, 0-1.
    pub prefix_cache_hit_rate: Option<f64>,
    /// Largest waiting-queue gauge seen.
    pub waiting_max: Option<f64>,
    /// Largest KV-cache usage seen, 0-1.
    pub kv_cache_usage_max: Option<f64>,
}

use crate::metrics::cache::CacheFigures;

/// One entry of `test.json`'s `levels`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LevelOutcome {
    /// 0-based, in the order run.
    pub index: usize,
    pub label: String,
    pub role: Role,
    pub load: Load,
    /// The labelled target, when the test has several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The run folder, relative to the test folder.
    pub run: String,
    /// The level's summary, exactly as in its `run.json`.
    pub summary: RunSummary,
    /// The measured requests by who ended them: completed and failed by the server, or
    /// cancelled by the benchmark when the level ended (not the server's failures; the
    /// summary's `failures` still lists them, as kind `cancelled`).
    #[serde(default)]
    pub outcomes: ServerOutcomes,
    pub verdict: LevelVerdict,
    /// The saturation signals evaluated on the steady window.
    pub signals: Signals,
    /// SLO attainment with its Wilson interval, when an SLO was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloCheck>,
    pub server: ServerFigures,
    /// Prompt tokens served from the server's prefix cache, as the responses report them.
    pub cache: CacheFigures,
    /// Why the verdict, in words.
    pub reason: String,
}

impl LevelOutcome {
    /// Mean output tokens per second over the steady window (first 10 % excluded).
    pub fn steady_output_tokens_per_s(&self) -> f64 {
        self.summary.steady_state.output_tokens_per_s
    }
}

/// Server figures from a run's telemetry.
pub fn server_figures(report: &RunReport) -> ServerFigures {
    let Some(w) = report.telemetry.server.as_ref() else {
        return ServerFigures::default();
    };
    ServerFigures {
        preemptions: w.delta.preemptions,
        prefix_cache_hit_rate: w.delta.prefix_cache_hit_rate,
        waiting_max: w.queue.as_ref().map(|q| q.waiting_max),
        kv_cache_usage_max: w.kv_cache_usage_max,
    }
}

/// Gives an outcome its summary-derived parts; the procedure fills verdict and reason.
pub fn outcome(
    index: usize,
    spec: &LevelSpec,
    run: &LevelRun,
    signals: Signals,
    slo: Option<SloCheck>,
    verdict: LevelVerdict,
    reason: String,
) -> LevelOutcome {
    let reason = match (&run.note, reason.is_empty()) {
        (Some(n), true) => n.clone(),
        (Some(n), false) => format!("{n}; {reason}"),
        (None, _) => reason,
    };
    LevelOutcome {
        index,
        label: spec.label.clone(),
        role: spec.role,
        load: spec.load,
        target: spec.target.clone(),
        run: run.run.clone(),
        summary: run.report.summary.clone(),
        outcomes: ServerOutcomes::of(&run.report.summary),
        verdict,
        signals,
        slo,
        server: server_figures(&run.report),
        cache: CacheFigures::of(&run.records),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_keep_their_decimals() {
        assert_eq!(rate(0.35), "0.35");
        assert_eq!(rate(18.4), "18.4");
        assert_eq!(rate(12.0), "12");
        assert_eq!(rate(2.1875), "2.188");
        assert_eq!(rate(150.25), "150.2");
        assert_eq!(Load::Rate { rate_per_s: 0.5 }.describe(), "0.5 req/s");
        assert_eq!(
            serde_json::to_value(Load::Rate { rate_per_s: 0.5 }).unwrap(),
            serde_json::json!({"rate_per_s": 0.5})
        );
        assert_eq!(
            serde_json::to_value(Load::Concurrency { concurrency: 8 }).unwrap(),
            serde_json::json!({"concurrency": 8})
        );
    }
}
