//! The load group of `run`'s flags: closed loop, open loop and its arrival process, trace
//! replay.

use super::*;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ArrivalArg {
    Poisson,
    Constant,
    Gamma,
    /// The timestamps of a trace given with --dataset (replayed at --speed).
    Trace,
}

/// How load is offered.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Load")]
pub struct LoadArgs {
    /// Closed loop: keep N requests in flight (default when no --rate is given: 32, or 64
    /// against the built-in simulator, or the server's own slot count when it reports fewer:
    /// llama.cpp's /props, SGLang's /get_server_info).
    #[arg(long, conflicts_with = "rate")]
    pub concurrency: Option<u32>,
    /// Open loop: arrivals per second (any positive real, e.g. 0.5), from a seeded schedule
    /// independent of responses.
    // A negative number is read as the value (then refused as not positive), not as a flag.
    #[arg(long, allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Open loop: at most N requests in flight; later arrivals wait for a slot (as vLLM's
    /// `bench serve --max-concurrency`: a gateway's limit). The wait counts in latency from
    /// the schedule, never as the generator's lateness.
    #[arg(long, requires = "rate")]
    pub max_concurrency: Option<u32>,
    /// Open-loop arrival process.
    #[arg(long, value_enum, default_value = "poisson")]
    pub arrival: ArrivalArg,
    /// Gamma arrivals: coefficient of variation of the gaps (1 = Poisson-like, > 1 burstier).
    /// vLLM's --burstiness b corresponds to 1/sqrt(b).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub burstiness: f64,
    /// Trace replay: speed factor on the recorded arrival times (2 = twice as fast).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub speed: f64,
}
