//! Service-level objectives: parsing `--slo`, and the verdicts users know from other tools.
//!
//! Two forms, deliberately kept apart because they answer different questions:
//!
//! - **Per-request bounds** (`ttft_ms<=500`): a request *meets the SLO* when it succeeded and
//!   meets every per-request bound. Attainment is the share of measured requests (failed ones
//!   included) that do; goodput counts only those per second (vLLM's `--goodput`, DistServe's
//!   definition). The verdict passes when attainment reaches `--slo-target` (default 99 %).
//! - **Run-level bounds** (`p99(ttft_ms)<=500`, `mean(tpot_ms)<=40`, as k6 thresholds): the
//!   run's own statistic, computed exactly as the report prints it (successful requests,
//!   linear interpolation), must meet the bound. Never PASS while the printed P99 breaks it.
//! - **Rate floors** (`output_tokens_per_s>=2000`, `success_rate>=0.99`): run figures that
//!   must reach a minimum.
//!
//! The two can disagree: 99 % of requests under 500 ms still allows an interpolated P99 of
//! 595 ms when the slowest request took 10 s. docs/metrics.md shows the worked example.

use super::request::RequestMetrics;
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

mod quantity;
#[cfg(test)]
mod tests;
mod verdict;

pub use quantity::{RateMetric, RequestMetric, RunMetric, Stat};
pub use verdict::{
    evaluate, evaluate_tally, Attainment, AttainmentTally, RunCheck, RunFigures, SloResult,
};

/// One term of `--slo`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum SloTerm {
    /// Every request should meet `metric <= max` (`ttft_ms<=500`).
    PerRequest { metric: RequestMetric, max: f64 },
    /// The run's statistic must meet `stat(metric) <= max` (`p99(ttft_ms)<=500`).
    RunStat {
        stat: Stat,
        metric: RunMetric,
        max: f64,
    },
    /// The run figure must reach `min` (`output_tokens_per_s>=2000`).
    AtLeast { metric: RateMetric, min: f64 },
}

impl fmt::Display for SloTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PerRequest { metric, max } => write!(f, "{}<={max}", metric.name()),
            Self::RunStat { stat, metric, max } => write!(f, "{stat}({})<={max}", metric.name()),
            Self::AtLeast { metric, min } => write!(f, "{}>={min}", metric.name()),
        }
    }
}

/// All terms and the attainment per-request bounds must reach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SloSpec {
    pub terms: Vec<SloTerm>,
    /// Share of requests (0–1) that must meet every per-request bound.
    pub target_attainment: f64,
}

impl SloSpec {
    /// The terms that need generated tokens (TTFT, TPOT, ITL, pauses, idle time, output
    /// tokens/s): a non-generative endpoint (embeddings, rerank) has none of them, so only
    /// `e2e_ms` bounds, `requests_per_s` and `success_rate` apply there.
    pub fn token_terms(&self) -> Vec<SloTerm> {
        self.terms
            .iter()
            .copied()
            .filter(|t| match t {
                SloTerm::PerRequest { metric, .. } => *metric != RequestMetric::E2eMs,
                SloTerm::RunStat { metric, .. } => *metric != RunMetric::E2eMs,
                SloTerm::AtLeast { metric, .. } => *metric == RateMetric::OutputTokensPerS,
            })
            .collect()
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum SloParseError {
    #[error("SLO term `{0}` is not of a known form: `ttft_ms<=500` (every request), `p99(ttft_ms)<=500` (the run's P99) or `output_tokens_per_s>=2000` (a floor)")]
    Form(String),
    #[error("unknown per-request SLO metric `{0}`: use ttft_ms, tpot_ms, e2e_ms, itl_p99_ms or max_pause_ms")]
    Metric(String),
    #[error("unknown run-level SLO metric `{0}`: use ttft_ms, tpot_ms, e2e_ms, itl_ms, jitter_ms, max_pause_ms or user_idle_ms")]
    RunMetric(String),
    #[error("unknown statistic `{0}`: use p50, p90, p95, p99, p99.9, mean or max")]
    Stat(String),
    #[error("unknown SLO floor `{0}`: use output_tokens_per_s, requests_per_s or success_rate")]
    Rate(String),
    #[error("SLO bound `{0}` is not a positive number")]
    Number(String),
    #[error(
        "success_rate>={0}: a success rate is a share between 0 and 1 (0.99 = 99 % of requests)"
    )]
    Share(String),
}

fn number(v: &str) -> Result<f64, SloParseError> {
    v.trim()
        .trim_end_matches("ms")
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| *v > 0.0 && v.is_finite())
        .ok_or_else(|| SloParseError::Number(v.trim().into()))
}

impl SloSpec {
    /// Parses `ttft_ms<=500,p99(tpot_ms)<=50,output_tokens_per_s>=1000`.
    pub fn parse(s: &str, target_attainment: f64) -> Result<Self, SloParseError> {
        let mut terms = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if let Some((name, value)) = term.split_once(">=") {
                let metric = RateMetric::parse(name.trim())
                    .ok_or_else(|| SloParseError::Rate(name.trim().into()))?;
                let min = number(value)?;
                if metric == RateMetric::SuccessRate && min > 1.0 {
                    return Err(SloParseError::Share(value.trim().into()));
                }
                terms.push(SloTerm::AtLeast { metric, min });
                continue;
            }
            let (lhs, value) = term
                .split_once("<=")
                .ok_or_else(|| SloParseError::Form(term.into()))?;
            let lhs = lhs.trim();
            let max = number(value)?;
            if let Some((stat, rest)) = lhs.split_once('(') {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| SloParseError::Form(term.into()))?
                    .trim();
                let stat = Stat::parse(&stat.trim().to_ascii_lowercase())
                    .ok_or_else(|| SloParseError::Stat(stat.trim().into()))?;
                let metric = RunMetric::parse(inner)
                    .ok_or_else(|| SloParseError::RunMetric(inner.into()))?;
                terms.push(SloTerm::RunStat { stat, metric, max });
            } else {
                let metric =
                    RequestMetric::parse(lhs).ok_or_else(|| SloParseError::Metric(lhs.into()))?;
                terms.push(SloTerm::PerRequest { metric, max });
            }
        }
        if terms.is_empty() {
            return Err(SloParseError::Form(s.into()));
        }
        Ok(Self {
            terms,
            target_attainment,
        })
    }

    /// The per-request bounds.
    pub fn per_request(&self) -> impl Iterator<Item = (RequestMetric, f64)> + '_ {
        self.terms.iter().filter_map(|t| match *t {
            SloTerm::PerRequest { metric, max } => Some((metric, max)),
            _ => None,
        })
    }

    /// Whether a successful request's measurements meet every per-request bound.
    pub fn met_by(&self, m: &RequestMetrics) -> bool {
        self.per_request()
            .all(|(metric, max)| metric.value(m).is_none_or(|v| v <= max))
    }
}

impl fmt::Display for SloSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let terms: Vec<String> = self.terms.iter().map(|t| t.to_string()).collect();
        write!(f, "{}", terms.join(","))
    }
}
