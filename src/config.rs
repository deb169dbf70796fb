//! The validated configuration of a run.
//!
//! The CLI (`cli/`) parses strings into these types once; nothing downstream sees a string
//! that means a mode. Everything here serialises into `run.json`, with secrets redacted.

use crate::client::{ArrivalClock, RequestOptions, RetryPolicy, Target};
use crate::metrics::slo::SloSpec;
use crate::schedule::LoadPattern;
use crate::workload::WorkloadSpec;
use serde::{Serialize, Serializer};
use std::path::PathBuf;
use std::time::Duration;

/// When the measured run ends: the first limit reached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Limits {
    pub requests: Option<u64>,
    #[serde(serialize_with = "opt_secs", deserialize_with = "opt_from_secs")]
    #[schemars(with = "Option<f64>")]
    pub duration: Option<Duration>,
}

fn opt_secs<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

fn secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn from_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let v = <f64 as serde::Deserialize>::deserialize(d)?;
    Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
}

fn opt_from_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let v = <Option<f64> as serde::Deserialize>::deserialize(d)?;
    v.map(|v| Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom))
        .transpose()
}

/// Warm-up before measuring (draft 4.5).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Warmup {
    /// Cold start: nothing before measuring; reports flag it.
    None,
    /// Exactly this many requests at the run's load, then drain.
    Requests(u64),
    /// The draft's procedure: ≥ 100 requests and ≥ 10,000 output tokens, drain, then probe
    /// until two consecutive probes differ by less than 10 %.
    Auto,
}

/// Where the prefill curve of the fluidity-index comes from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum PrefillSetup {
    /// Profile prefill in isolation before the measured phase.
    Profile(ProfilePlan),
    /// A curve profiled earlier (`--prefill-curve FILE`).
    Curve(crate::metrics::fluidity::ProfiledCurve),
    /// No fluidity metrics (`--no-fluidity`).
    Off,
}

/// How to profile prefill in isolation (concurrency 1, one output token, no prefix reuse).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct ProfilePlan {
    /// Prompt lengths, tokens; `None`: spread over the workload's input lengths.
    pub lengths: Option<Vec<u32>>,
    /// Requests kept per length (one more is sent first and discarded: it pays cold caches).
    pub repeats: u32,
    /// Stop profiling after this long (fewer points, reported).
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    #[schemars(with = "f64")]
    pub budget: Duration,
    /// Longest prompt the server accepts, when it said (lengths are capped to it).
    pub max_prompt_tokens: Option<u32>,
}

impl Default for ProfilePlan {
    fn default() -> Self {
        Self {
            lengths: None,
            repeats: 3,
            budget: Duration::from_secs(60),
            max_prompt_tokens: None,
        }
    }
}

/// Who chose the warm-up's length and cap, so its line says whose choice a short warm-up
/// was: "--warmup 3 is short of it" was printed for a count no flag gave.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WarmupSizing {
    /// `--warmup` and `--warmup-max` (or their defaults).
    #[default]
    Flags,
    /// `--warmup-max` not given: capped at half the run's planned measured phase.
    RunLength,
    /// A `--quick` test's level: about ten seconds of its load.
    QuickTest,
}

impl WarmupSizing {
    /// The default: nothing to record.
    pub fn is_flags(&self) -> bool {
        *self == WarmupSizing::Flags
    }
}

/// Everything a run needs.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct RunConfig {
    pub target: Target,
    pub request: RequestOptions,
    pub workload: WorkloadSpec,
    /// What `--dataset` held (the records themselves are in `dataset`).
    pub dataset_info: Option<crate::workload::datasets::DatasetInfo>,
    #[serde(skip)]
    pub dataset: Option<std::sync::Arc<crate::workload::datasets::Dataset>>,
    pub load: LoadPattern,
    pub limits: Limits,
    pub warmup: Warmup,
    /// Longest the warm-up may run before measuring starts anyway (then flagged).
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    #[schemars(with = "f64")]
    pub warmup_max: Duration,
    /// Who sized the warm-up: the flags, or servebench for this run (a short run's cap, a
    /// `--quick` test's level).
    #[serde(default, skip_serializing_if = "WarmupSizing::is_flags")]
    pub warmup_sizing: WarmupSizing,
    /// The load the warm-up runs at, when not the run's: a test's one-at-a-time reference
    /// warms up at the server's parallelism, since the draft's 100 requests one at a time
    /// outlast any sensible cap on a server that batches (4.5.1 fixes a count, not a load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_load: Option<LoadPattern>,
    pub seed: u64,
    /// The words of this run's prompts (`--prompt-salt`; fresh for every run unless given):
    /// the seed fixes lengths, classes, sessions and arrivals, the salt the text, so a
    /// server's prefix cache cannot answer a run from an earlier run's or level's prompts.
    /// 0: the seed's own prompts (`workload export`'s). Older run folders read as 0.
    #[serde(default)]
    pub prompt_salt: u64,
    pub slo: Option<SloSpec>,
    /// Exit non-zero when more than this share of measured requests fail (requests still in
    /// flight when a duration-limited run stopped do not count).
    pub max_failure_share: f64,
    /// Open loop: at most this many requests in flight (vLLM's `--max-concurrency`).
    pub max_concurrency: Option<u32>,
    pub arrival_clock: ArrivalClock,
    /// Open a new connection for every request instead of reusing kept-alive ones
    /// (`--new-connection-per-request`; real clients reuse, so the default does).
    #[serde(default)]
    pub new_connection_per_request: bool,
    /// Requests kept in memory for an exact summary; past it the summary streams in
    /// bounded memory (`--exact-summary-limit`; `None`: keep every one, as test levels do).
    #[serde(default)]
    pub exact_summary_limit: Option<usize>,
    /// Bytes the records kept for an exact summary may take (`--memory-budget`); past it
    /// the summary streams as past `exact_summary_limit`. `None`: no budget (test levels).
    #[serde(default)]
    pub memory_budget_bytes: Option<u64>,
    /// Two-sided confidence of the percentiles' intervals and of decisions read from them
    /// (`--confidence`, 0–1); `None`: 95 %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    pub prefill: PrefillSetup,
    /// Deadlines of user idle latency and smooth goodput.
    pub ux: crate::metrics::ux::UxParams,
    /// Fluidity-index parameters (the curve comes from `prefill`).
    pub fluidity: crate::metrics::experience::FluidityParams,
    /// Server metrics, GPUs and energy collected beside the run.
    pub telemetry: crate::telemetry::TelemetryConfig,
    /// Seconds of GPU power sampled before the run to know the idle draw (when GPUs are
    /// measured).
    pub idle_power_s: f64,
    /// Per-request time limit.
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    #[schemars(with = "f64")]
    pub request_timeout: Duration,
    /// Per-request limits below the total timeout: first byte, first token, response and
    /// line sizes.
    #[serde(skip)]
    #[schemars(skip)]
    pub exchange_limits: crate::client::exchange::ExchangeLimits,
    /// Retries of rate-limited or unavailable answers; off by default so measurements are
    /// never silently retried.
    pub retry: RetryPolicy,
    /// After Ctrl-C or the duration limit: how long in-flight requests may finish.
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    #[schemars(with = "f64")]
    pub grace: Duration,
    /// Worker threads of the client runtime.
    pub client_threads: usize,
    /// Run folder.
    pub out_dir: PathBuf,
    /// The command line that started the run, credentials redacted.
    pub command_line: Vec<String>,
    /// Draw no progress line.
    pub quiet: bool,
    /// In a terminal, draw the live view rather than a one-line bar (`--no-live-view`).
    #[serde(default)]
    pub live_view: bool,
    /// After the run, also write its Parquet files into the run folder (`--parquet`; the
    /// command line records it, `run.json`'s configuration does not).
    #[serde(skip)]
    #[schemars(skip)]
    pub parquet: bool,
    /// Scale-out: the share of a plan this process sends (`run --plan --shard`); `None` in
    /// a plain run. Recorded in the shard's `shard.json`, not in `run.json`.
    #[serde(skip)]
    #[schemars(skip)]
    pub shard: Option<crate::schedule::shard::ShardRun>,
    /// How fast the server answered the test request sent before any load
    /// (`runner::preflight`): what the warm-up's and the run's planned lengths are estimated
    /// from. `None` when no test request was sent (a configuration built in code).
    #[serde(skip)]
    #[schemars(skip)]
    pub preflight: Option<crate::record::speed::Speed>,
}
