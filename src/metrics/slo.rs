//! Service-level objectives: parsing `--slo`, per-request attainment, goodput.
//!
//! A request meets the SLO when it succeeded and meets every threshold. Goodput counts only
//! those requests (and their output tokens) per second of the measurement window. The run
//! passes when the share of requests meeting the SLO reaches the target (default 99 %: a
//! `ttft_ms<=500` SLO then means "P99 TTFT at most 500 ms", the draft's 5.2.2.3 reading).

use super::request::{own_itl_p99, RequestMetrics};
use serde::Serialize;
use std::fmt;
use thiserror::Error;

/// A per-request quantity an SLO can bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SloMetric {
    TtftMs,
    TpotMs,
    E2eMs,
    /// The request's own P99 inter-token latency.
    ItlP99Ms,
    /// The request's largest inter-token gap.
    MaxPauseMs,
}

impl SloMetric {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ttft_ms" | "ttft" => SloMetric::TtftMs,
            "tpot_ms" | "tpot" => SloMetric::TpotMs,
            "e2e_ms" | "e2e" | "e2el_ms" => SloMetric::E2eMs,
            "itl_p99_ms" => SloMetric::ItlP99Ms,
            "max_pause_ms" => SloMetric::MaxPauseMs,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SloMetric::TtftMs => "ttft_ms",
            SloMetric::TpotMs => "tpot_ms",
            SloMetric::E2eMs => "e2e_ms",
            SloMetric::ItlP99Ms => "itl_p99_ms",
            SloMetric::MaxPauseMs => "max_pause_ms",
        }
    }

    /// The request's value; `None` when it has none (e.g. TPOT of a 1-token answer), which
    /// counts as meeting the bound.
    pub fn value(self, m: &RequestMetrics) -> Option<f64> {
        match self {
            SloMetric::TtftMs => Some(m.ttft_ms),
            SloMetric::TpotMs => m.tpot_ms,
            SloMetric::E2eMs => Some(m.e2e_ms),
            SloMetric::ItlP99Ms => own_itl_p99(m),
            SloMetric::MaxPauseMs => m.max_pause_ms,
        }
    }
}

/// One bound: `metric <= max`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Threshold {
    pub metric: SloMetric,
    pub max: f64,
}

/// All bounds and the attainment the run must reach.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SloSpec {
    pub thresholds: Vec<Threshold>,
    /// Share of requests (0–1) that must meet every bound for the run to pass.
    pub target_attainment: f64,
}

#[derive(Debug, Error, PartialEq)]
pub enum SloParseError {
    #[error("SLO term `{0}` is not of the form name<=number (example: ttft_ms<=500,tpot_ms<=50)")]
    Form(String),
    #[error("unknown SLO metric `{0}`: use ttft_ms, tpot_ms, e2e_ms, itl_p99_ms or max_pause_ms")]
    Metric(String),
    #[error("SLO bound `{0}` is not a positive number")]
    Number(String),
}

impl SloSpec {
    /// Parses `ttft_ms<=500,tpot_ms<=50`.
    pub fn parse(s: &str, target_attainment: f64) -> Result<Self, SloParseError> {
        let mut thresholds = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (name, value) = term
                .split_once("<=")
                .or_else(|| term.split_once('<'))
                .or_else(|| term.split_once(':'))
                .or_else(|| term.split_once('='))
                .ok_or_else(|| SloParseError::Form(term.into()))?;
            let metric = SloMetric::parse(name.trim())
                .ok_or_else(|| SloParseError::Metric(name.trim().into()))?;
            let max: f64 = value
                .trim()
                .trim_end_matches("ms")
                .parse()
                .ok()
                .filter(|v: &f64| *v > 0.0 && v.is_finite())
                .ok_or_else(|| SloParseError::Number(value.trim().into()))?;
            thresholds.push(Threshold { metric, max });
        }
        if thresholds.is_empty() {
            return Err(SloParseError::Form(s.into()));
        }
        Ok(Self {
            thresholds,
            target_attainment,
        })
    }

    /// Whether a successful request's measurements meet every bound.
    pub fn met_by(&self, m: &RequestMetrics) -> bool {
        self.thresholds
            .iter()
            .all(|t| t.metric.value(m).is_none_or(|v| v <= t.max))
    }
}

impl fmt::Display for SloSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let terms: Vec<String> = self
            .thresholds
            .iter()
            .map(|t| format!("{}<={}", t.metric.name(), t.max))
            .collect();
        write!(f, "{}", terms.join(","))
    }
}

/// SLO results of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SloResult {
    pub spec: String,
    /// Share of measured requests (failed ones included) meeting every bound.
    pub attainment: f64,
    /// Share meeting each bound alone.
    pub attainment_by_threshold: Vec<(String, f64)>,
    pub goodput_requests_per_s: f64,
    pub goodput_tokens_per_s: f64,
    pub target_attainment: f64,
    pub passed: bool,
}

/// Evaluates `spec` over the measured requests (`None` for a failed request).
pub fn evaluate(spec: &SloSpec, requests: &[Option<&RequestMetrics>], window_s: f64) -> SloResult {
    let total = requests.len().max(1) as f64;
    let mut met = 0usize;
    let mut met_tokens = 0u64;
    for m in requests.iter().flatten() {
        if spec.met_by(m) {
            met += 1;
            met_tokens += m.output_tokens as u64;
        }
    }
    let by_threshold = spec
        .thresholds
        .iter()
        .map(|t| {
            let n = requests
                .iter()
                .flatten()
                .filter(|m| t.metric.value(m).is_none_or(|v| v <= t.max))
                .count();
            (format!("{}<={}", t.metric.name(), t.max), n as f64 / total)
        })
        .collect();
    let attainment = if requests.is_empty() {
        0.0
    } else {
        met as f64 / total
    };
    let per_s = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
    SloResult {
        spec: spec.to_string(),
        attainment,
        attainment_by_threshold: by_threshold,
        goodput_requests_per_s: per_s(met as f64),
        goodput_tokens_per_s: per_s(met_tokens as f64),
        target_attainment: spec.target_attainment,
        passed: attainment + 1e-12 >= spec.target_attainment,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(ttft: f64, tpot: f64, n: u32) -> RequestMetrics {
        RequestMetrics {
            ttft_ms: ttft,
            e2e_ms: ttft + tpot * (n - 1) as f64,
            tpot_ms: Some(tpot),
            itl_ms: vec![tpot; n as usize - 1],
            jitter_ms: Some(0.0),
            max_pause_ms: Some(tpot),
            normalized_ms_per_token: None,
            decode_tokens_per_s: None,
            ttfb_ms: None,
            time_to_first_reasoning_ms: None,
            ttft_from_schedule_ms: None,
            e2e_from_schedule_ms: None,
            output_tokens: n,
        }
    }

    #[test]
    fn parses_terms_and_rejects_bad_ones() {
        let s = SloSpec::parse("ttft_ms<=500, tpot_ms<=50", 0.99).unwrap();
        assert_eq!(s.thresholds.len(), 2);
        assert_eq!(s.to_string(), "ttft_ms<=500,tpot_ms<=50");
        assert_eq!(
            SloSpec::parse("foo<=1", 0.99),
            Err(SloParseError::Metric("foo".into()))
        );
        assert_eq!(
            SloSpec::parse("ttft_ms<=-1", 0.99),
            Err(SloParseError::Number("-1".into()))
        );
        assert!(matches!(
            SloSpec::parse("ttft_ms", 0.99),
            Err(SloParseError::Form(_))
        ));
    }

    #[test]
    fn goodput_counts_only_requests_meeting_every_bound() {
        let spec = SloSpec::parse("ttft_ms<=500,tpot_ms<=50", 0.75).unwrap();
        let a = m(100.0, 20.0, 11); // meets
        let b = m(600.0, 20.0, 11); // ttft too slow
        let c = m(100.0, 60.0, 11); // tpot too slow
        let d = m(400.0, 50.0, 5); // meets (bounds inclusive)
        let reqs = vec![Some(&a), Some(&b), Some(&c), Some(&d), None];
        let r = evaluate(&spec, &reqs, 2.0);
        assert_eq!(r.attainment, 0.4);
        assert_eq!(r.goodput_requests_per_s, 1.0);
        assert_eq!(r.goodput_tokens_per_s, 8.0);
        assert_eq!(r.attainment_by_threshold[0].1, 0.6);
        assert!(!r.passed);
    }
}
