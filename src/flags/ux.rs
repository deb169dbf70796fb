//! The user-experience group of `run`'s flags: per-token deadlines, smooth goodput, the
//! fluidity-index and its prefill profile, the isolated baseline.

use super::*;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum DeadlinesArg {
    /// A reader at --reading-rate tokens/s: token k is due k/R after sending (the paper's
    /// equation 4), or with --d0-ms, D0 + (k − 1)/R.
    Reading,
    /// --deadline-ttft-ms for the first token, then --deadline-tbt-ms after each one.
    #[value(name = "ttft+tbt", alias = "ttft-tbt")]
    TtftTbt,
    /// Every token by --deadline-e2e-ms.
    E2e,
}

/// User-experience metric parameters.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "User experience")]
pub struct UxArgs {
    /// Per-token deadlines for user idle latency and smooth goodput (docs/metrics.md).
    #[arg(long, value_enum, default_value = "reading")]
    pub deadlines: DeadlinesArg,
    /// Reading deadlines: the reader's speed R, tokens/s.
    #[arg(long, default_value_t = 20.0)]
    pub reading_rate: f64,
    /// Reading deadlines: D0, the wait for the first token a user accepts, ms; then token
    /// k is due at D0 + (k − 1)/R. Without it, the paper's d_k = k/R.
    #[arg(long)]
    pub d0_ms: Option<f64>,
    /// ttft+tbt deadlines: TTFT bound, ms.
    #[arg(long, default_value_t = 1000.0)]
    pub deadline_ttft_ms: f64,
    /// ttft+tbt deadlines: TBT bound, ms.
    #[arg(long, default_value_t = 100.0)]
    pub deadline_tbt_ms: f64,
    /// e2e deadlines: end-to-end bound, ms.
    #[arg(long, default_value_t = 30000.0)]
    pub deadline_e2e_ms: f64,
    /// Smooth goodput: weight α of idle cost (tokens per unit of f).
    #[arg(long, default_value_t = 5.0)]
    pub alpha: f64,
    /// Smooth goodput: idle cost f(l), l in seconds.
    #[arg(long, value_enum, default_value = "linear")]
    pub idle_cost: crate::metrics::ux::IdleCost,
    /// Smooth goodput: how long past a token's deadline a user waits before giving up on
    /// the request; a failed request is charged this wait, wherever in the run it failed.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub patience: Duration,
    /// Fluidity-index: decode deadline D_d for the reported distribution, ms.
    #[arg(long, default_value_t = 50.0)]
    pub fluidity_tbt_ms: f64,
    /// Fluidity-index: scheduling slack added to the isolated prefill time, ms.
    #[arg(long, default_value_t = 50.0)]
    pub fluidity_slack_ms: f64,
    /// Fluidity-index: a request is fluid at or above this index (f).
    #[arg(long, default_value_t = 0.9)]
    pub fluidity_threshold: f64,
    /// Fluid token rate: share of requests that must be fluid (q).
    #[arg(long, default_value_t = 0.99)]
    pub fluidity_quantile: f64,
    /// Prefill curve profiled earlier (`servebench profile-prefill`, or a run's
    /// prefill-curve.json) instead of profiling before this run.
    #[arg(long, conflicts_with = "no_fluidity")]
    pub prefill_curve: Option<PathBuf>,
    /// Skip the isolated prefill profile and the fluidity metrics.
    #[arg(long)]
    pub no_fluidity: bool,
    /// Prefill profile: requests kept per prompt length (one more is sent first, discarded).
    #[arg(long, default_value_t = 3)]
    pub profile_repeats: u32,
    /// Prefill profile: the longest it may take.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub profile_budget: Duration,
    /// Run folder of an isolated baseline (per class) for latency inflation (draft 5.6).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
}
