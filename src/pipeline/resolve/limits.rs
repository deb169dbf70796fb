//! The limits group of flags: when the run ends (requests, duration), the warm-up, and what
//! counts as failing (`--max-failures`, the SLO); per request, the timeouts, the size limits
//! and the retries.

use crate::client::exchange::ExchangeLimits;
use crate::client::RetryPolicy;
use crate::config::{Limits, Warmup};
use crate::flags::{LimitArgs, SloArgs};
use crate::metrics::slo::SloSpec;
use anyhow::{bail, Context, Result};

/// When the run ends and its warm-up; checks `--max-failures`.
pub(crate) fn limits(lim: &LimitArgs) -> Result<(Limits, Warmup)> {
    let limits = Limits {
        requests: lim.requests.or(if lim.duration.is_none() {
            Some(1000)
        } else {
            None
        }),
        duration: lim.duration,
    };
    if limits.duration.is_some_and(|d| d.is_zero()) {
        bail!("--duration must be longer than zero");
    }
    if limits.requests == Some(0) {
        bail!("--requests must be at least 1 (a run of no requests measures nothing)");
    }
    if lim.timeout.is_zero() {
        bail!("--timeout must be longer than zero (every request would time out at once), e.g. --timeout 600s");
    }
    let warmup =
        match lim.warmup.as_str() {
            "auto" => Warmup::Auto,
            "none" | "0" => Warmup::None,
            n => Warmup::Requests(n.parse().with_context(|| {
                format!("--warmup `{n}`: use auto, none, or a number of requests")
            })?),
        };
    if !(0.0..=1.0).contains(&lim.max_failures) {
        bail!("--max-failures must be a share between 0 and 1 (0.05 = 5 %)");
    }
    Ok((limits, warmup))
}

/// `--slo`, else the workload profile's default (`profile_default`), at `--slo-target`.
pub(crate) fn slo(s: &SloArgs, profile_default: Option<&str>) -> Result<Option<SloSpec>> {
    if !(0.0..=1.0).contains(&s.slo_target) {
        bail!("--slo-target must be between 0 and 1 (0.99 = 99 % of requests)");
    }
    let slo = s
        .slo
        .as_deref()
        .or(profile_default)
        .map(|v| SloSpec::parse(v, s.slo_target))
        .transpose()?;
    Ok(slo)
}

/// Per-request limits: first byte, first token, response and line sizes.
pub(crate) fn exchange_limits(lim: &LimitArgs) -> ExchangeLimits {
    ExchangeLimits {
        first_byte: lim.first_byte_timeout,
        first_token: lim.first_token_timeout,
        max_response_bytes: lim.max_response_mib.max(1) << 20,
        max_line_bytes: (lim.max_line_mib.max(1) << 20) as usize,
    }
}

/// Retries of requests answered 429 or 503 (and, with `--retry-connect`, not connected).
pub(crate) fn retry(lim: &LimitArgs) -> RetryPolicy {
    RetryPolicy {
        max_retries: lim.retry,
        connect_errors: lim.retry_connect,
        max_wait_s: lim.retry_max_wait.as_secs_f64(),
        ..Default::default()
    }
}

/// Refuses SLO terms a non-generative endpoint cannot meet: embeddings and rerank answer
/// whole, so they have a request latency (`e2e_ms`) but no TTFT, TPOT, ITL or output tokens.
pub(crate) fn slo_fits(slo: Option<&SloSpec>, endpoint: crate::client::Endpoint) -> Result<()> {
    let Some(spec) = slo.filter(|_| !endpoint.is_generative()) else {
        return Ok(());
    };
    let terms = spec.token_terms();
    if let Some(first) = terms.first() {
        anyhow::bail!(
            "--slo term `{first}` needs generated tokens, which --endpoint {} does not stream: bound the request latency instead (`e2e_ms<=500`, `p99(e2e_ms)<=500`), or requests_per_s / success_rate",
            endpoint.path().trim_start_matches('/')
        );
    }
    Ok(())
}
