//! The limits group of `run`'s flags: when the run ends, the warm-up, per-request limits and
//! retries, and what counts as failing (`--max-failures`, the SLOs).

use super::*;

/// When the run ends and what counts as failing.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// Measured requests (default 1000 when no --duration is given: the draft's minimum for P99).
    #[arg(long)]
    pub requests: Option<u64>,
    /// Measurement duration, e.g. 60s, 5m, 1h30m, 500ms (the first limit reached ends the run;
    /// requests still in flight then get --grace, then are cancelled).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Warm-up before measuring: auto (draft 4.5: >= 100 requests and >= 10,000 output tokens,
    /// then probes until latency is stable), a number of requests, or none (cold start). Its
    /// cost at the server's measured speed is printed before it starts; a closed loop then
    /// carries its load into the measurement (the first measured requests start spread).
    #[arg(long, default_value = "auto")]
    pub warmup: String,
    /// The longest the warm-up may run; a warm-up stopped here short of its targets is
    /// reported as such and the run marked non-compliant (said before it starts when the
    /// server's speed shows it will be). Default: 120s, or half the measured phase's planned
    /// length when that is shorter (at least 10s), so a short run is not mostly warm-up.
    #[arg(long, value_parser = parse_duration)]
    pub warmup_max: Option<Duration>,
    /// Per-request time limit.
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// After Ctrl-C or the end of --duration: how long in-flight requests may still finish
    /// before they are cancelled (and recorded as `cancelled`).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub grace: Duration,
    /// No response byte within this long after sending: the request fails as a timeout.
    #[arg(long, value_parser = parse_duration)]
    pub first_byte_timeout: Option<Duration>,
    /// No token (answer or reasoning) within this long after sending: a timeout.
    #[arg(long, value_parser = parse_duration)]
    pub first_token_timeout: Option<Duration>,
    /// Largest response body, MiB; beyond it the request fails as a protocol failure (bounds
    /// memory against an endless stream).
    #[arg(long, default_value_t = 256)]
    pub max_response_mib: u64,
    /// Largest SSE line or event, MiB; beyond it the request fails as a protocol failure.
    #[arg(long, default_value_t = 16)]
    pub max_line_mib: u64,
    /// Retry a request answered 429 or 503 up to N times, after its Retry-After (capped by
    /// --retry-max-wait). Off by default: retried requests are marked and their latency
    /// counts from the first attempt.
    #[arg(long, default_value_t = 0)]
    pub retry: u32,
    /// Also retry requests that could not connect (with --retry).
    #[arg(long)]
    pub retry_connect: bool,
    /// Longest wait before a retry.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub retry_max_wait: Duration,
    /// Exit with status 1 when more than this share of measured requests failed (0–1).
    /// Requests cancelled at the end of a duration-limited run do not count.
    #[arg(long, default_value_t = 0.05)]
    pub max_failures: f64,
}

/// Service-level objectives.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "SLOs")]
pub struct SloArgs {
    /// SLOs, comma-separated. Per request: 'ttft_ms<=500' (also tpot_ms, e2e_ms, itl_p99_ms,
    /// max_pause_ms): passes when --slo-target of requests meet every such bound (goodput).
    /// Run level: 'p99(ttft_ms)<=500' (p50, p90, p95, p99, p99.9, mean, max of ttft_ms,
    /// tpot_ms, e2e_ms, itl_ms, jitter_ms, max_pause_ms, user_idle_ms): the run's own figure.
    /// Floors: 'output_tokens_per_s>=1000', 'requests_per_s>=5', 'success_rate>=0.99'.
    /// Any failing verdict makes the exit status 1 (docs/metrics.md).
    #[arg(long)]
    pub slo: Option<String>,
    /// Share of requests that must meet every per-request bound.
    #[arg(long, default_value_t = 0.99)]
    pub slo_target: f64,
}
