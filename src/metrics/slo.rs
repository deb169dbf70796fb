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

use super::distribution::Distribution;
use super::request::{own_itl_p99, RequestMetrics};
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

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
    fn parse(s: &str) -> Option<Self> {
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
    fn parse(s: &str) -> Option<Self> {
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
    fn parse(s: &str) -> Option<Self> {
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
    fn parse(s: &str) -> Option<Self> {
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
                terms.push(SloTerm::AtLeast {
                    metric,
                    min: number(value)?,
                });
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

/// Per-request attainment and goodput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Attainment {
    /// The per-request bounds, as written.
    pub spec: String,
    /// Share of measured requests (failed ones included) meeting every bound.
    pub attainment: f64,
    /// Share meeting each bound alone: `(bound, share)`.
    pub attainment_by_threshold: Vec<(String, f64)>,
    /// Requests meeting every bound.
    pub met: u64,
    /// Measured requests.
    pub total: u64,
    pub goodput_requests_per_s: f64,
    /// Output tokens (reasoning included) of the requests meeting every bound, per second.
    pub goodput_tokens_per_s: f64,
    pub target_attainment: f64,
    pub passed: bool,
}

/// A run-level check: the observed figure against its bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunCheck {
    /// The term, as written (`p99(ttft_ms)<=500`).
    pub term: String,
    /// The run's figure; `None` when the run had no samples of it (which fails).
    pub observed: Option<f64>,
    /// Samples behind the figure.
    pub samples: usize,
    pub passed: bool,
}

/// Every SLO verdict of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SloResult {
    pub spec: String,
    /// Per-request bounds, when any were given.
    pub per_request: Option<Attainment>,
    /// Run-level statistic bounds and floors, in the order given.
    pub run_checks: Vec<RunCheck>,
    /// Every verdict passed.
    pub passed: bool,
}

/// What run-level checks read.
pub struct RunFigures<'a> {
    pub distribution: &'a dyn Fn(RunMetric) -> Option<Distribution>,
    pub output_tokens_per_s: f64,
    pub requests_per_s: f64,
    pub success_rate: f64,
}

/// Per-request bound counts, built one request at a time (the streamed summary feeds it
/// request by request; [`evaluate`] over a slice).
#[derive(Debug, Clone, Default)]
pub struct AttainmentTally {
    /// Measured requests, failed ones included.
    pub total: u64,
    pub met: u64,
    pub met_tokens: u64,
    /// Requests meeting each per-request bound alone, in the spec's order.
    pub by_bound: Vec<u64>,
}

impl AttainmentTally {
    /// Counts one measured request (`None`: failed or no answer, which meets nothing).
    pub fn add(&mut self, spec: &SloSpec, m: Option<&RequestMetrics>) {
        let bounds: Vec<(RequestMetric, f64)> = spec.per_request().collect();
        if self.by_bound.len() < bounds.len() {
            self.by_bound.resize(bounds.len(), 0);
        }
        self.total += 1;
        let Some(m) = m else { return };
        if spec.met_by(m) {
            self.met += 1;
            self.met_tokens += m.output_tokens as u64;
        }
        for (i, &(metric, max)) in bounds.iter().enumerate() {
            if metric.value(m).is_none_or(|v| v <= max) {
                self.by_bound[i] += 1;
            }
        }
    }
}

/// Evaluates `spec` over the measured requests (`None` for a failed request) and the run's
/// figures; `window_s` is the measurement window that goodput is counted over.
pub fn evaluate(
    spec: &SloSpec,
    requests: &[Option<&RequestMetrics>],
    window_s: f64,
    figures: &RunFigures<'_>,
) -> SloResult {
    let mut tally = AttainmentTally::default();
    for m in requests {
        tally.add(spec, *m);
    }
    evaluate_tally(spec, &tally, window_s, figures)
}

/// [`evaluate`] from counts already made.
pub fn evaluate_tally(
    spec: &SloSpec,
    tally: &AttainmentTally,
    window_s: f64,
    figures: &RunFigures<'_>,
) -> SloResult {
    let bounds: Vec<(RequestMetric, f64)> = spec.per_request().collect();
    let per_request = (!bounds.is_empty()).then(|| {
        let total = tally.total;
        let met = tally.met;
        let share = |n: u64| {
            if total == 0 {
                0.0
            } else {
                n as f64 / total as f64
            }
        };
        let by_threshold = bounds
            .iter()
            .enumerate()
            .map(|(i, &(metric, max))| {
                let n = tally.by_bound.get(i).copied().unwrap_or(0);
                (format!("{}<={max}", metric.name()), share(n))
            })
            .collect();
        let attainment = share(met);
        let per_s = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
        Attainment {
            spec: bounds
                .iter()
                .map(|(m, v)| format!("{}<={v}", m.name()))
                .collect::<Vec<_>>()
                .join(","),
            attainment,
            attainment_by_threshold: by_threshold,
            met,
            total,
            goodput_requests_per_s: per_s(met as f64),
            goodput_tokens_per_s: per_s(tally.met_tokens as f64),
            target_attainment: spec.target_attainment,
            passed: total > 0 && attainment + 1e-12 >= spec.target_attainment,
        }
    });
    let run_checks: Vec<RunCheck> = spec
        .terms
        .iter()
        .filter_map(|t| match *t {
            SloTerm::PerRequest { .. } => None,
            SloTerm::RunStat { stat, metric, max } => {
                let d = (figures.distribution)(metric);
                let observed = d.as_ref().map(|d| stat.of(d));
                Some(RunCheck {
                    term: t.to_string(),
                    observed,
                    samples: d.map_or(0, |d| d.n),
                    passed: observed.is_some_and(|v| v <= max),
                })
            }
            SloTerm::AtLeast { metric, min } => {
                let v = match metric {
                    RateMetric::OutputTokensPerS => figures.output_tokens_per_s,
                    RateMetric::RequestsPerS => figures.requests_per_s,
                    RateMetric::SuccessRate => figures.success_rate,
                };
                Some(RunCheck {
                    term: t.to_string(),
                    observed: Some(v),
                    samples: 0,
                    passed: v + 1e-12 >= min,
                })
            }
        })
        .collect();
    let passed =
        per_request.as_ref().is_none_or(|a| a.passed) && run_checks.iter().all(|c| c.passed);
    SloResult {
        spec: spec.to_string(),
        per_request,
        run_checks,
        passed,
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
            answer_tokens: n,
        }
    }

    fn no_figures() -> RunFigures<'static> {
        RunFigures {
            distribution: &|_| None,
            output_tokens_per_s: 0.0,
            requests_per_s: 0.0,
            success_rate: 0.0,
        }
    }

    #[test]
    fn parses_every_form_and_rejects_bad_terms() {
        let s = SloSpec::parse(
            "ttft_ms<=500, p99(tpot_ms)<=50, mean(e2e_ms)<=2000, output_tokens_per_s>=100",
            0.99,
        )
        .unwrap();
        assert_eq!(s.terms.len(), 4);
        assert_eq!(
            s.to_string(),
            "ttft_ms<=500,p99(tpot_ms)<=50,mean(e2e_ms)<=2000,output_tokens_per_s>=100"
        );
        assert_eq!(
            SloSpec::parse("foo<=1", 0.99),
            Err(SloParseError::Metric("foo".into()))
        );
        assert_eq!(
            SloSpec::parse("p42(ttft_ms)<=1", 0.99),
            Err(SloParseError::Stat("p42".into()))
        );
        assert_eq!(
            SloSpec::parse("p99(bar)<=1", 0.99),
            Err(SloParseError::RunMetric("bar".into()))
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
        let r = evaluate(&spec, &reqs, 2.0, &no_figures());
        let a = r.per_request.unwrap();
        assert_eq!(a.attainment, 0.4);
        assert_eq!((a.met, a.total), (2, 5));
        assert_eq!(a.goodput_requests_per_s, 1.0);
        assert_eq!(a.goodput_tokens_per_s, 8.0);
        assert_eq!(a.attainment_by_threshold[0].1, 0.6);
        assert!(!a.passed && !r.passed);
    }

    /// 99 of 100 requests at 500 ms and one at 10 s: 99 % attainment passes a 99 % target,
    /// yet the interpolated P99 is 500 + 0.01·(10,000 − 500) = 595 ms, so `p99(ttft_ms)<=500`
    /// must fail. The two forms answer different questions and must never be conflated.
    #[test]
    fn attainment_and_percentile_bounds_are_separate_verdicts() {
        let mut metrics: Vec<RequestMetrics> = (0..99).map(|_| m(500.0, 10.0, 2)).collect();
        metrics.push(m(10_000.0, 10.0, 2));
        let reqs: Vec<Option<&RequestMetrics>> = metrics.iter().map(Some).collect();
        let ttft = Distribution::of(&mut metrics.iter().map(|m| m.ttft_ms).collect()).unwrap();
        assert!((ttft.p99 - 595.0).abs() < 1e-9, "{}", ttft.p99);
        let dist = move |metric: RunMetric| (metric == RunMetric::TtftMs).then_some(ttft);
        let figures = RunFigures {
            distribution: &dist,
            output_tokens_per_s: 0.0,
            requests_per_s: 0.0,
            success_rate: 1.0,
        };
        let per_request = SloSpec::parse("ttft_ms<=500", 0.99).unwrap();
        let r = evaluate(&per_request, &reqs, 1.0, &figures);
        assert!(r.passed, "99 % of requests met the bound");
        let run_level = SloSpec::parse("p99(ttft_ms)<=500", 0.99).unwrap();
        let r = evaluate(&run_level, &reqs, 1.0, &figures);
        assert!(!r.passed, "the printed P99 is 595 ms");
        assert_eq!(r.run_checks[0].observed, Some(ttft.p99));
        assert_eq!(r.run_checks[0].samples, 100);
        // No samples of a bounded figure fails rather than passes.
        let r = evaluate(
            &SloSpec::parse("p99(itl_ms)<=5", 0.99).unwrap(),
            &reqs,
            1.0,
            &figures,
        );
        assert!(!r.passed);
        // Floors.
        let r = evaluate(
            &SloSpec::parse("success_rate>=0.99", 0.99).unwrap(),
            &reqs,
            1.0,
            &figures,
        );
        assert!(r.passed);
    }
}
