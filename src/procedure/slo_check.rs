//! Whether a level met the SLO *with confidence*: each bound's attainment with its Wilson
//! interval, so a search never calls a level sustainable on the strength of a lucky sample.
//!
//! - Per-request bounds (`ttft_ms<=500`): successes are the measured requests meeting every
//!   per-request bound (failed requests count as missing it, as in the run's attainment),
//!   against `--slo-target`.
//! - Percentile bounds (`p99(ttft_ms)<=500`): "the P99 is at most 500 ms" is "at least 99 %
//!   of values are at most 500 ms", so successes are the values within the bound, trials all
//!   values (requests that produced one; ITL: every gap, which are correlated within a
//!   request, so that interval is narrower than it should be, as noted in the docs).
//!   The interval is the declared method; when it cannot decide, a level is read on its
//!   observed percentile, the type-7 figure the report prints ([`SloCheck::observed_met`]),
//!   never on the share: 99 of 100 values within 500 ms is a 99 % share, yet the printed
//!   P99 of 99 × 500 ms and one 10 s is 595 ms.
//! - Mean, maximum and floors (`output_tokens_per_s>=X`) have no binomial reading: they pass
//!   or fail on the observed value.
//!
//! A request the benchmark cancelled when the level ended (kind `cancelled`) is not the
//! server's failure: against a TTFT or end-to-end bound it counts as a miss only when it had
//! already passed the bound when it was stopped, as met when its first token came within a
//! TTFT bound, and otherwise not at all ([`cancelled_against`]).
//!
//! Pass when every bound's interval lies at or above its target; fail when any lies wholly
//! below; otherwise undecided (the procedure extends the level).

use crate::metrics::request::{measure, RequestMetrics};
use crate::metrics::slo::{RequestMetric, RunMetric, SloSpec, SloTerm, Stat};
use crate::metrics::RunSummary;
use crate::record::{FailureKind, Phase, RequestRecord};
use crate::stats::distribution::percentile_with_beyond;
use crate::stats::interval::{slo_verdict, wilson, SloVerdict};
use serde::{Deserialize, Serialize};

/// Confidence of the intervals.
pub const CONFIDENCE: f64 = 0.95;

/// One bound's check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TermCheck {
    /// The bound as written (`p99(ttft_ms)<=500`, or the joint per-request bounds).
    pub term: String,
    /// Values (or requests) within the bound.
    pub met: u64,
    pub trials: u64,
    /// Share required, 0-1 (`None`: a point check).
    pub target: Option<f64>,
    /// Wilson interval of the share, 0-1.
    pub interval: Option<(f64, f64)>,
    /// The observed value: for point checks the run's own; for percentile bounds the
    /// level's percentile by linear interpolation (type 7, the figure the report prints), a
    /// request that failed counting as a value beyond the bound (`null` when the percentile
    /// falls among those, or there were no values).
    pub observed: Option<f64>,
    /// A percentile bound's limit (`500` in `p99(ttft_ms)<=500`), in the metric's unit;
    /// absent for the other bounds (and in files written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
    pub verdict: SloVerdict,
}

/// The SLO at one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SloCheck {
    pub spec: String,
    pub confidence: f64,
    pub terms: Vec<TermCheck>,
    pub verdict: SloVerdict,
}

impl SloCheck {
    /// Whether the observed values meet every bound, whatever the intervals say: each
    /// percentile bound's observed percentile (type 7, as the report prints it) within it,
    /// the per-request bounds' observed share at or above `--slo-target`, each point check
    /// passed. What a sweep reads a level by when its interval straddles the target (too
    /// few requests to decide either way); no values or trials at all is not met.
    pub fn observed_met(&self) -> bool {
        self.terms.iter().all(|t| match (t.target, t.bound) {
            (Some(_), Some(bound)) => t.observed.is_some_and(|v| v <= bound),
            (Some(target), None) if t.trials > 0 => {
                t.met as f64 / t.trials as f64 + 1e-12 >= target
            }
            (Some(_), None) => false,
            (None, _) => t.verdict == SloVerdict::Pass,
        })
    }

    /// A one-line account: `met (99.6 % [99.1, 99.8] ≥ 99 %)`.
    pub fn describe(&self) -> String {
        let word = match self.verdict {
            SloVerdict::Pass => "SLO met",
            SloVerdict::Fail => "SLO missed",
            SloVerdict::Undecided => "SLO undecided",
        };
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| match (t.interval, t.target) {
                (Some((lo, hi)), Some(target)) => format!(
                    "{}: {:.1} % [{:.1}, {:.1}] vs {:.1} %{}",
                    t.term,
                    100.0 * t.met as f64 / t.trials.max(1) as f64,
                    lo * 100.0,
                    hi * 100.0,
                    target * 100.0,
                    observed_percentile(t)
                ),
                _ => format!(
                    "{}: {}",
                    t.term,
                    t.observed
                        .map(|v| format!("{v:.3}"))
                        .unwrap_or_else(|| "no value".into())
                ),
            })
            .collect();
        format!("{word} ({})", parts.join("; "))
    }

    /// The verdict on the observed shares alone, without their intervals: a bound with a
    /// target passes when its observed share meets it (a point check keeps its own
    /// verdict). For a level too short for any interval to decide (`--quick` capacity on a
    /// slow server: 100 of 100 within a 99 % bound is undecided); pass when every bound
    /// passes ([`SloCheck::observed_met`]).
    pub fn observed_verdict(&self) -> SloVerdict {
        if self.observed_met() {
            SloVerdict::Pass
        } else {
            SloVerdict::Fail
        }
    }
}

/// `, observed 595.0`: a percentile bound's observed percentile, as its reading states it.
fn observed_percentile(t: &TermCheck) -> String {
    match (t.bound, t.observed) {
        (None, _) => String::new(),
        (Some(_), Some(v)) => format!(", observed {v:.1}"),
        (Some(_), None) => ", observed: among the failed requests".into(),
    }
}

/// Checks `spec` on a level's records (the ITL option is the summary's).
pub fn check(spec: &SloSpec, records: &[RequestRecord], summary: &RunSummary) -> SloCheck {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    let metrics: Vec<Option<RequestMetrics>> = measured
        .iter()
        .map(|r| measure(r, summary.itl_method.option))
        .collect();
    let mut terms = Vec::new();
    if let Some(joint) = per_request_term(spec, &measured, &metrics) {
        terms.push(joint);
    }
    for term in &spec.terms {
        match *term {
            SloTerm::PerRequest { .. } => {}
            SloTerm::RunStat {
                stat: Stat::Percentile(p),
                metric,
                max,
            } => terms.push(percentile_term(term, p, metric, max, &measured, &metrics)),
            SloTerm::RunStat { .. } | SloTerm::AtLeast { .. } => {
                terms.push(point_term(term, summary))
            }
        }
    }
    let verdict = if terms.iter().any(|t| t.verdict == SloVerdict::Fail) {
        SloVerdict::Fail
    } else if terms.iter().any(|t| t.verdict == SloVerdict::Undecided) {
        SloVerdict::Undecided
    } else {
        SloVerdict::Pass
    };
    SloCheck {
        spec: spec.to_string(),
        confidence: CONFIDENCE,
        terms,
        verdict,
    }
}

/// The per-request bounds, jointly: the measured requests meeting every one of them,
/// against `--slo-target`. `None` when the SLO has no per-request bound.
fn per_request_term(
    spec: &SloSpec,
    measured: &[&RequestRecord],
    metrics: &[Option<RequestMetrics>],
) -> Option<TermCheck> {
    let bounds: Vec<_> = spec.per_request().collect();
    if bounds.is_empty() {
        return None;
    }
    // A cancelled request is a trial only when it had already missed a TTFT or
    // end-to-end bound (it cannot be shown to meet the others).
    let trials = measured
        .iter()
        .filter(|r| {
            !is_cancelled(r)
                || bounds.iter().any(|&(m, max)| {
                    let ttft = match m {
                        RequestMetric::TtftMs => true,
                        RequestMetric::E2eMs => false,
                        _ => return false,
                    };
                    cancelled_against(r, ttft, max) == Some(false)
                })
        })
        .count() as u64;
    let met = metrics.iter().flatten().filter(|m| spec.met_by(m)).count() as u64;
    Some(binomial(
        bounds
            .iter()
            .map(|(m, v)| format!("{}<={v}", m.name()))
            .collect::<Vec<_>>()
            .join(","),
        met,
        trials,
        spec.target_attainment,
    ))
}

/// A percentile bound (`p99(ttft_ms)<=500`, `p` = 99): the values within `max` against
/// the share `p` %.
fn percentile_term(
    term: &SloTerm,
    p: f64,
    metric: RunMetric,
    max: f64,
    measured: &[&RequestRecord],
    metrics: &[Option<RequestMetrics>],
) -> TermCheck {
    let mut values = values_of(metric, measured, metrics);
    let mut met = values.iter().filter(|&&v| v <= max).count() as u64;
    // A request that failed never gave its user a first token or an answer in
    // time: for TTFT and end-to-end bounds it counts as a miss, so that an
    // overloaded level cannot pass by timing out its slowest requests. One the
    // benchmark cancelled counts only as far as it was decided when stopped.
    let mut beyond = 0;
    if matches!(metric, RunMetric::TtftMs | RunMetric::E2eMs) {
        let ttft = metric == RunMetric::TtftMs;
        for r in measured.iter().filter(|r| !r.outcome.is_ok()) {
            match (is_cancelled(r), cancelled_against(r, ttft, max)) {
                (false, _) | (true, Some(false)) => beyond += 1,
                (true, Some(true)) => {
                    met += 1;
                    // Its first token came within the bound: that time is its value.
                    values.extend(r.first_token_at().map(|t| ms_from_start(r, t)));
                }
                (true, None) => {}
            }
        }
    }
    let trials = values.len() as u64 + beyond;
    let mut check = binomial(term.to_string(), met, trials, p / 100.0);
    values.sort_unstable_by(f64::total_cmp);
    check.observed = percentile_with_beyond(&values, beyond as usize, p);
    check.bound = Some(max);
    check
}

/// A bound with no binomial reading (mean, maximum, floor): the run's own check, pass or
/// fail on the observed value.
fn point_term(term: &SloTerm, summary: &RunSummary) -> TermCheck {
    let found = summary.slo.as_ref().and_then(|r| {
        r.run_checks
            .iter()
            .find(|c| c.term == term.to_string())
            .cloned()
    });
    TermCheck {
        term: term.to_string(),
        met: 0,
        trials: 0,
        target: None,
        interval: None,
        observed: found.as_ref().and_then(|c| c.observed),
        bound: None,
        verdict: if found.is_some_and(|c| c.passed) {
            SloVerdict::Pass
        } else {
            SloVerdict::Fail
        },
    }
}

/// Whether the benchmark cancelled the request (still in flight when the level ended).
fn is_cancelled(r: &RequestRecord) -> bool {
    r.outcome.failure_kind() == Some(FailureKind::Cancelled)
}

/// A request the benchmark cancelled, against a TTFT (`ttft`) or end-to-end bound of
/// `max_ms` (both from T_submit, or its attempt when it was never sent): `Some(true)` when
/// its first token came within a TTFT bound, `Some(false)` when the bound had passed by the
/// time it was stopped (no first token by then, or not finished), `None` when the stop came
/// first: the level ended, not the server, and the request says nothing either way.
pub fn cancelled_against(r: &RequestRecord, ttft: bool, max_ms: f64) -> Option<bool> {
    let ms = |t: u64| ms_from_start(r, t);
    if ttft {
        if let Some(first) = r.first_token_at() {
            return Some(ms(first) <= max_ms);
        }
    }
    (ms(r.finished_at) > max_ms).then_some(false)
}

/// `t` − the request's start (T_submit, the last byte written, as TTFT's; its attempt when
/// it was never sent), ms.
fn ms_from_start(r: &RequestRecord, t: u64) -> f64 {
    let start = r.submitted_at().unwrap_or(r.queued_at);
    t.saturating_sub(start) as f64 / 1e6
}

/// A binomial term: `met` of `trials` against `target`. No trials at all is a failure
/// (nothing was shown to meet the bound).
fn binomial(term: String, met: u64, trials: u64, target: f64) -> TermCheck {
    TermCheck {
        term,
        met,
        trials,
        target: Some(target),
        interval: wilson(met, trials, CONFIDENCE),
        observed: None,
        bound: None,
        verdict: slo_verdict(met, trials, target, CONFIDENCE).unwrap_or(SloVerdict::Fail),
    }
}

/// The values a percentile bound is about.
fn values_of(
    metric: RunMetric,
    measured: &[&RequestRecord],
    metrics: &[Option<RequestMetrics>],
) -> Vec<f64> {
    let per = |f: &dyn Fn(&RequestMetrics) -> Option<f64>| -> Vec<f64> {
        metrics.iter().flatten().filter_map(f).collect()
    };
    match metric {
        RunMetric::TtftMs => per(&|m| Some(m.ttft_ms)),
        RunMetric::TpotMs => per(&|m| m.tpot_ms),
        RunMetric::E2eMs => per(&|m| Some(m.e2e_ms)),
        RunMetric::JitterMs => per(&|m| m.jitter_ms),
        RunMetric::MaxPauseMs => per(&|m| m.max_pause_ms),
        RunMetric::ItlMs => metrics
            .iter()
            .flatten()
            .flat_map(|m| m.itl_ms.iter().copied())
            .collect(),
        RunMetric::UserIdleMs => measured
            .iter()
            .filter(|r| r.outcome.is_ok())
            .filter_map(|r| r.derived.as_ref().map(|d| d.user_idle_ms))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 19, item 12: `--quick` capacity on a slow server judged concurrency 1 (20 of 20
    /// requests within the TTFT bound) "undecided" at every extension, because no 20-request
    /// sample can show a 99 % share with confidence. On the observed share it passes; 18 of
    /// 20 (90 %) fails, and so does a point check that failed.
    #[test]
    fn an_undecided_share_is_judged_on_what_was_observed() {
        let term = |met: u64, trials: u64| TermCheck {
            term: "p99(ttft_ms)<=13860".into(),
            met,
            trials,
            target: Some(0.99),
            interval: wilson(met, trials, CONFIDENCE),
            observed: None,
            bound: None,
            verdict: SloVerdict::Undecided,
        };
        let check = |terms: Vec<TermCheck>| SloCheck {
            spec: "p99(ttft_ms)<=13860".into(),
            confidence: CONFIDENCE,
            terms,
            verdict: SloVerdict::Undecided,
        };
        let all_in = check(vec![term(20, 20)]);
        // The old reading: the Wilson interval of 20 of 20 reaches down to 0.84, below
        // 0.99, so the level stayed undecided however often it was extended.
        assert!(wilson(20, 20, CONFIDENCE).unwrap().0 < 0.99);
        assert_eq!(all_in.observed_verdict(), SloVerdict::Pass);
        assert_eq!(
            check(vec![term(18, 20)]).observed_verdict(),
            SloVerdict::Fail
        );
        assert_eq!(check(vec![term(0, 0)]).observed_verdict(), SloVerdict::Fail);
        let mut point = term(20, 20);
        point.target = None;
        point.verdict = SloVerdict::Fail;
        assert_eq!(
            check(vec![term(20, 20), point]).observed_verdict(),
            SloVerdict::Fail
        );
    }

    const MS: u64 = 1_000_000;

    /// A request sent at 0 and cancelled by the benchmark at `stop_ms`, its first token at
    /// `first_ms` if one came.
    fn cancelled(id: u64, first_ms: Option<u64>, stop_ms: u64) -> RequestRecord {
        let tokens: Vec<u64> = first_ms.into_iter().collect();
        let mut r = RequestRecord::completed_for_tests(id, 0, &tokens, 10);
        r.outcome = crate::record::Outcome::failed(FailureKind::Cancelled, "still in flight");
        r.finished_at = stop_ms * MS;
        r
    }

    #[test]
    fn a_cancelled_request_is_judged_only_as_far_as_it_got() {
        // TTFT bound 1,000 ms: a first token at 100 ms met it; none by a stop at 1,500 ms
        // missed it; none by a stop at 500 ms says nothing.
        assert_eq!(
            cancelled_against(&cancelled(0, Some(100), 2_000), true, 1000.0),
            Some(true)
        );
        assert_eq!(
            cancelled_against(&cancelled(0, None, 1_500), true, 1000.0),
            Some(false)
        );
        assert_eq!(
            cancelled_against(&cancelled(0, None, 500), true, 1000.0),
            None
        );
        // End to end: unfinished at 1,500 ms missed a 1,000 ms bound, at 500 ms undecided.
        assert_eq!(
            cancelled_against(&cancelled(0, Some(100), 1_500), false, 1000.0),
            Some(false)
        );
        assert_eq!(
            cancelled_against(&cancelled(0, Some(100), 500), false, 1000.0),
            None
        );
    }

    /// Issue 19, item 4: `p99(ttft_ms)<=1000` on a closed-loop level of 984 completed
    /// requests (TTFT 100 ms), 10 cancelled while streaming (first token at 100 ms) and 6
    /// cancelled while queued 500 ms (no token yet). New: 984 + 10 met of 994 trials
    /// (the 6 undecided left out), Wilson lower bound 994 / (994 + 1.96²) = 0.9961 ≥ 0.99:
    /// pass. Old: every cancelled request a miss, 984 of 1,000: Wilson (0.9742, 0.9901)
    /// straddles 0.99, undecided.
    #[test]
    fn cancellations_at_the_levels_end_are_not_slo_misses() {
        let mut records: Vec<RequestRecord> = (0..984)
            .map(|i| RequestRecord::completed_for_tests(i, i * 1_000, &[i * 1_000 + 100], 10))
            .collect();
        records.extend((0..10).map(|i| cancelled(1_000 + i, Some(100), 2_000)));
        records.extend((0..6).map(|i| cancelled(2_000 + i, None, 500)));
        let summary =
            crate::metrics::summarize(&records, &crate::metrics::SummaryParams::default());
        let spec = SloSpec::parse("p99(ttft_ms)<=1000", 0.99).unwrap();
        let c = check(&spec, &records, &summary);
        assert_eq!((c.terms[0].met, c.terms[0].trials), (994, 994));
        assert_eq!(c.verdict, SloVerdict::Pass);
        assert_eq!(
            binomial("old".into(), 984, 1000, 0.99).verdict,
            SloVerdict::Undecided
        );
    }

    /// Issue 31, item 7: `p99(ttft_ms)<=500` on 100 requests, 99 with TTFT 500 ms and one
    /// with 10,000 ms. The share within is 99 of 100 = 99 %, which the old observed reading
    /// called met, while the printed P99 (type 7: rank 0.99 × 99 = 98.01, so
    /// 500 + 0.01 × (10,000 − 500)) is 595 ms. Read on that percentile, it is missed; a
    /// 596 ms bound is met.
    #[test]
    fn the_observed_reading_is_the_printed_percentile_not_the_share() {
        let records: Vec<RequestRecord> = (0..100)
            .map(|i| {
                let ttft_ms = if i == 99 { 10_000 } else { 500 };
                let sent_ms = i * 20_000;
                RequestRecord::completed_for_tests(i, sent_ms, &[sent_ms + ttft_ms], 10)
            })
            .collect();
        let summary =
            crate::metrics::summarize(&records, &crate::metrics::SummaryParams::default());
        let printed = summary.ttft_ms.unwrap().p99;
        assert!((printed - 595.0).abs() < 1e-9, "{printed}");
        let c = check(
            &SloSpec::parse("p99(ttft_ms)<=500", 0.99).unwrap(),
            &records,
            &summary,
        );
        let t = &c.terms[0];
        assert_eq!((t.met, t.trials), (99, 100));
        // Wilson (0.946, 0.998) straddles 0.99: the reading falls to the observed values.
        assert_eq!(c.verdict, SloVerdict::Undecided);
        assert_eq!((t.observed, t.bound), (Some(printed), Some(500.0)));
        assert!(!c.observed_met(), "99 % within, but P99 595 ms > 500 ms");
        assert_eq!(c.observed_verdict(), SloVerdict::Fail);
        assert!(c.describe().contains("observed 595.0"), "{}", c.describe());
        let above = check(
            &SloSpec::parse("p99(ttft_ms)<=596", 0.99).unwrap(),
            &records,
            &summary,
        );
        assert!(above.observed_met());
    }

    /// A request that failed counts beyond every value: 2 completed at 100 ms and one that
    /// timed out put the type-7 P99 (rank 1.98) among the failures: no finite value, missed.
    #[test]
    fn a_percentile_reaching_the_failures_is_missed() {
        let mut records: Vec<RequestRecord> = (0..3)
            .map(|i| RequestRecord::completed_for_tests(i, i * 1_000, &[i * 1_000 + 100], 10))
            .collect();
        records[2].outcome = crate::record::Outcome::failed(FailureKind::Timeout, "timeout");
        let summary =
            crate::metrics::summarize(&records, &crate::metrics::SummaryParams::default());
        let c = check(
            &SloSpec::parse("p99(ttft_ms)<=500", 0.99).unwrap(),
            &records,
            &summary,
        );
        assert_eq!((c.terms[0].met, c.terms[0].trials), (2, 3));
        assert_eq!(c.terms[0].observed, None);
        assert!(!c.observed_met());
        let p50 = check(
            &SloSpec::parse("p50(ttft_ms)<=500", 0.99).unwrap(),
            &records,
            &summary,
        );
        assert_eq!(p50.terms[0].observed, Some(100.0));
    }

    #[test]
    fn binomial_terms_use_the_interval_not_the_point() {
        // 100 of 100 within the bound: Wilson 95 % lower bound = 100/(100 + 1.96²) = 0.963.
        // Against a 95 % target it passes; against 99 % it is undecided (0.963 < 0.99 ≤ 1).
        let t = binomial("x".into(), 100, 100, 0.95);
        assert_eq!(t.verdict, SloVerdict::Pass);
        let (lo, hi) = t.interval.unwrap();
        assert!(
            (lo - 100.0 / (100.0 + 1.959_964_f64.powi(2))).abs() < 1e-4,
            "{lo}"
        );
        assert_eq!(hi, 1.0);
        assert_eq!(
            binomial("x".into(), 100, 100, 0.99).verdict,
            SloVerdict::Undecided
        );
        // 90 of 100: Wilson (0.8256, 0.9448) is wholly below 0.95 → fail.
        assert_eq!(
            binomial("x".into(), 90, 100, 0.95).verdict,
            SloVerdict::Fail
        );
        // Nothing measured: nothing shown.
        assert_eq!(binomial("x".into(), 0, 0, 0.5).verdict, SloVerdict::Fail);
    }
}
