//! The key metrics a comparison and a regression gate look at, read from one run's report:
//! one value per run (the run is the unit of evidence, see `stats::compare`).
//!
//! Pure: a `RunReport` and the normalisation inputs in, numbers out.

use crate::artifacts::RunReport;
use crate::stats::compare::Direction;
use serde::{Deserialize, Serialize};

/// A figure compared across runs. Every one is a run-level value from `run.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Output tokens (reasoning included) per second of the measurement window.
    OutputTokensPerS,
    /// Requests per second of the measurement window.
    RequestsPerS,
    TtftP50Ms,
    TtftP99Ms,
    TpotP50Ms,
    TpotP99Ms,
    E2eP99Ms,
    /// Share of measured requests that succeeded (0–1).
    SuccessRate,
    /// Requests per second meeting every per-request SLO bound (only with `--slo`).
    GoodputRequestsPerS,
    /// Sessions (multi-turn, agents): a complete session's wall time, P50 and P99.
    SessionWallP50Ms,
    SessionWallP99Ms,
    /// Sessions: share of prompt tokens the server served from its prefix cache (0–1).
    SessionCachedShare,
    /// Output tokens per second per GPU serving the model (draft 6.2).
    OutputTokensPerGpuS,
    /// Output tokens per dollar of serving cost (draft 6.2): tokens/s × 3600 / ($/h).
    OutputTokensPerDollar,
}

impl Metric {
    /// The metrics every comparison shows and `regress` gates on, in display order
    /// (goodput only appears where the runs had per-request SLOs, the session figures where
    /// their workload had sessions).
    pub const KEY: [Metric; 12] = [
        Metric::OutputTokensPerS,
        Metric::RequestsPerS,
        Metric::TtftP50Ms,
        Metric::TtftP99Ms,
        Metric::TpotP50Ms,
        Metric::TpotP99Ms,
        Metric::E2eP99Ms,
        Metric::SuccessRate,
        Metric::GoodputRequestsPerS,
        Metric::SessionWallP50Ms,
        Metric::SessionWallP99Ms,
        Metric::SessionCachedShare,
    ];

    /// The normalised figures of draft 6.2, shown when the inputs are known.
    pub const NORMALISED: [Metric; 2] =
        [Metric::OutputTokensPerGpuS, Metric::OutputTokensPerDollar];

    /// Machine name, as in `--json` output.
    pub fn key(self) -> &'static str {
        match self {
            Metric::OutputTokensPerS => "output_tokens_per_s",
            Metric::RequestsPerS => "requests_per_s",
            Metric::TtftP50Ms => "ttft_p50_ms",
            Metric::TtftP99Ms => "ttft_p99_ms",
            Metric::TpotP50Ms => "tpot_p50_ms",
            Metric::TpotP99Ms => "tpot_p99_ms",
            Metric::E2eP99Ms => "e2e_p99_ms",
            Metric::SuccessRate => "success_rate",
            Metric::GoodputRequestsPerS => "goodput_requests_per_s",
            Metric::SessionWallP50Ms => "session_wall_p50_ms",
            Metric::SessionWallP99Ms => "session_wall_p99_ms",
            Metric::SessionCachedShare => "session_cached_share",
            Metric::OutputTokensPerGpuS => "output_tokens_per_gpu_s",
            Metric::OutputTokensPerDollar => "output_tokens_per_dollar",
        }
    }

    /// Name for people.
    pub fn label(self) -> &'static str {
        match self {
            Metric::OutputTokensPerS => "Output throughput",
            Metric::RequestsPerS => "Request throughput",
            Metric::TtftP50Ms => "TTFT P50",
            Metric::TtftP99Ms => "TTFT P99",
            Metric::TpotP50Ms => "TPOT P50",
            Metric::TpotP99Ms => "TPOT P99",
            Metric::E2eP99Ms => "E2E P99",
            Metric::SuccessRate => "Success rate",
            Metric::GoodputRequestsPerS => "Goodput",
            Metric::SessionWallP50Ms => "Session wall P50",
            Metric::SessionWallP99Ms => "Session wall P99",
            Metric::SessionCachedShare => "Prompt from cache",
            Metric::OutputTokensPerGpuS => "Output per GPU",
            Metric::OutputTokensPerDollar => "Output per dollar",
        }
    }

    /// Unit of the values.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::OutputTokensPerS => "tok/s",
            Metric::RequestsPerS | Metric::GoodputRequestsPerS => "req/s",
            Metric::TtftP50Ms
            | Metric::TtftP99Ms
            | Metric::TpotP50Ms
            | Metric::TpotP99Ms
            | Metric::E2eP99Ms
            | Metric::SessionWallP50Ms
            | Metric::SessionWallP99Ms => "ms",
            Metric::SuccessRate | Metric::SessionCachedShare => "share",
            Metric::OutputTokensPerGpuS => "tok/GPU-s",
            Metric::OutputTokensPerDollar => "tok/$",
        }
    }

    /// Which way is better.
    pub fn direction(self) -> Direction {
        match self {
            Metric::TtftP50Ms
            | Metric::TtftP99Ms
            | Metric::TpotP50Ms
            | Metric::TpotP99Ms
            | Metric::E2eP99Ms
            | Metric::SessionWallP50Ms
            | Metric::SessionWallP99Ms => Direction::LowerIsBetter,
            _ => Direction::HigherIsBetter,
        }
    }

    /// The run's value; `None` when the run has none (no completed request, no SLO, no
    /// GPU count or cost for the normalised figures).
    pub fn value(self, run: &RunReport, norm: &Normalisation) -> Option<f64> {
        let s = &run.summary;
        let v = match self {
            Metric::OutputTokensPerS => Some(s.output_tokens_per_s),
            Metric::RequestsPerS => Some(s.requests_per_s),
            Metric::TtftP50Ms => s.ttft_ms.as_ref().map(|d| d.p50),
            Metric::TtftP99Ms => s.ttft_ms.as_ref().map(|d| d.p99),
            Metric::TpotP50Ms => s.tpot_ms.as_ref().map(|d| d.p50),
            Metric::TpotP99Ms => s.tpot_ms.as_ref().map(|d| d.p99),
            Metric::E2eP99Ms => s.e2e_ms.as_ref().map(|d| d.p99),
            Metric::SuccessRate => (s.requests.total > 0).then_some(s.success_rate),
            Metric::GoodputRequestsPerS => s
                .slo
                .as_ref()
                .and_then(|slo| slo.per_request.as_ref())
                .map(|a| a.goodput_requests_per_s),
            Metric::SessionWallP50Ms => session_wall(run, |d| d.p50),
            Metric::SessionWallP99Ms => session_wall(run, |d| d.p99),
            Metric::SessionCachedShare => s.sessions.as_ref().and_then(|x| x.cached_share),
            Metric::OutputTokensPerGpuS => norm
                .gpus(run)
                .filter(|g| *g > 0.0)
                .map(|g| s.output_tokens_per_s / g),
            Metric::OutputTokensPerDollar => norm
                .cost_per_hour
                .filter(|c| *c > 0.0)
                .map(|c| s.output_tokens_per_s * 3600.0 / c),
        };
        v.filter(|v| v.is_finite())
    }
}

/// A figure of the complete sessions' wall time, when the run had sessions.
fn session_wall(run: &RunReport, f: fn(&crate::stats::Distribution) -> f64) -> Option<f64> {
    run.summary.sessions.as_ref()?.wall_ms.as_ref().map(f)
}

/// What the normalised figures divide by, for one system (draft 6.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Normalisation {
    /// GPUs serving the model (`compare --gpus`); `None`: each run's own `--gpus`.
    pub gpus: Option<f64>,
    /// Serving cost of the whole system, dollars per hour (`compare --cost-per-hour`).
    pub cost_per_hour: Option<f64>,
}

impl Normalisation {
    /// GPUs of `run`: the comparison's value, else what the run recorded.
    pub fn gpus(&self, run: &RunReport) -> Option<f64> {
        self.gpus.or(run.system.gpus.map(f64::from))
    }
}
