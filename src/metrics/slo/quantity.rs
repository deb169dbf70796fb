//! The quantities an SLO term can bound (per-request metrics, run-level distributions and
//! their statistics, rate floors) and the names `--slo` spells them by.

use crate::metrics::request::{own_itl_p99, RequestMetrics};
use crate::stats::distribution::Distribution;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A per-request quantity a bound can apply to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequestMetric {
    TtftMs,
    TpotMs,
    E2eMs,
    /// The request's own P99 inter-token latency.
    ItlP99Ms,
    /// The request's largest inter-token gap.
    MaxPauseMs,
}

impl RequestMetric {
    pub(super) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ttft_ms" | "ttft" => Self::TtftMs,
            "tpot_ms" | "tpot" => Self::TpotMs,
            "e2e_ms" | "e2e" | "e2el_ms" => Self::E2eMs,
            "itl_p99_ms" => Self::ItlP99Ms,
            "max_pause_ms" => Self::MaxPauseMs,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::TtftMs => "ttft_ms",
            Self::TpotMs => "tpot_ms",
            Self::E2eMs => "e2e_ms",
            Self::ItlP99Ms => "itl_p99_ms",
            Self::MaxPauseMs => "max_pause_ms",
        }
    }

    /// The request's value; `None` when it has none (e.g. TPOT of a 1-token answer), which
    /// counts as meeting the bound.
    pub fn value(self, m: &RequestMetrics) -> Option<f64> {
        match self {
            Self::TtftMs => Some(m.ttft_ms),
            Self::TpotMs => m.tpot_ms,
            Self::E2eMs => Some(m.e2e_ms),
            Self::ItlP99Ms => own_itl_p99(m),
            Self::MaxPauseMs => m.max_pause_ms,
        }
    }
}

/// A run-level distribution a statistic bound can apply to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunMetric {
    TtftMs,
    TpotMs,
    E2eMs,
    /// All ITL samples of the run.
    ItlMs,
    /// Per-request jitter (ITL standard deviation).
    JitterMs,
    /// Per-request largest gap.
    MaxPauseMs,
    /// Per-request user idle latency.
    UserIdleMs,
}

impl RunMetric {
    pub(super) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ttft_ms" | "ttft" => Self::TtftMs,
            "tpot_ms" | "tpot" => Self::TpotMs,
            "e2e_ms" | "e2e" | "e2el_ms" => Self::E2eMs,
            "itl_ms" | "itl" => Self::ItlMs,
            "jitter_ms" => Self::JitterMs,
            "max_pause_ms" => Self::MaxPauseMs,
            "user_idle_ms" => Self::UserIdleMs,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::TtftMs => "ttft_ms",
            Self::TpotMs => "tpot_ms",
            Self::E2eMs => "e2e_ms",
            Self::ItlMs => "itl_ms",
            Self::JitterMs => "jitter_ms",
            Self::MaxPauseMs => "max_pause_ms",
            Self::UserIdleMs => "user_idle_ms",
        }
    }
}

/// A statistic of a run-level distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "stat", content = "value")]
pub enum Stat {
    /// A percentile among the reported ones (50, 90, 95, 99, 99.9).
    Percentile(f64),
    Mean,
    Max,
}

impl Stat {
    pub(super) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "mean" | "avg" => Self::Mean,
            "max" => Self::Max,
            "median" => Self::Percentile(50.0),
            p => {
                let v: f64 = p.strip_prefix('p')?.parse().ok()?;
                if ![50.0, 90.0, 95.0, 99.0, 99.9].contains(&v) {
                    return None;
                }
                Self::Percentile(v)
            }
        })
    }

    /// The statistic of `d`, exactly as the report prints it.
    pub fn of(self, d: &Distribution) -> f64 {
        match self {
            Self::Mean => d.mean,
            Self::Max => d.max,
            Self::Percentile(50.0) => d.p50,
            Self::Percentile(90.0) => d.p90,
            Self::Percentile(95.0) => d.p95,
            Self::Percentile(99.0) => d.p99,
            Self::Percentile(_) => d.p999,
        }
    }
}

impl fmt::Display for Stat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mean => f.write_str("mean"),
            Self::Max => f.write_str("max"),
            Self::Percentile(p) => write!(f, "p{p}"),
        }
    }
}

/// A run figure that must reach a minimum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateMetric {
    OutputTokensPerS,
    RequestsPerS,
    SuccessRate,
}

impl RateMetric {
    pub(super) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "output_tokens_per_s" | "output_throughput" => Self::OutputTokensPerS,
            "requests_per_s" | "request_throughput" => Self::RequestsPerS,
            "success_rate" => Self::SuccessRate,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::OutputTokensPerS => "output_tokens_per_s",
            Self::RequestsPerS => "requests_per_s",
            Self::SuccessRate => "success_rate",
        }
    }
}
