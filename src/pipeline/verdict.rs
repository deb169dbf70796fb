//! A finished run's exit status and why: failed requests against `--max-failures`, requests
//! that never finished (an overloaded run), the SLO. One verdict for the terminal, `run.json`
//! and both report files: `assemble` calls it for every run, recovered and merged ones too.

use super::exit;
use crate::artifacts::Verdict;
use crate::config::RunConfig;
use crate::metrics::summary::failed_share;
use crate::record::FailureKind;
use crate::schedule::LoadPattern;

/// The least share of a run's measured requests that must have finished (answered, or
/// failed) before the run ended. Below it, the rest were still unanswered at the end and
/// were cancelled after `--grace`: the offered load mostly never completed, so the run is
/// overloaded and does not pass (exit status 1), whatever its failure rate says (cancelled
/// requests stay out of the server's failure rate, not out of the verdict).
pub const MIN_FINISHED_SHARE: f64 = 0.9;

/// Rounds of its streams a closed loop must have completed for the requests cut at its
/// end (one a stream at most) not to make it overloaded.
pub const CLOSED_ROUNDS: u64 = 3;

/// Why a run whose measured requests mostly never finished does not pass; `None` when at
/// least [`MIN_FINISHED_SHARE`] of the `total` finished (`cancelled` did not). A closed
/// loop always ends with its streams in flight: at most one request per stream is cut
/// there, so it also passes when no more than its streams were cut and at least
/// [`CLOSED_ROUNDS`] rounds of them completed. A test's closed-loop level of 4 streams and
/// 24 requests, 4 cut at the end, read "overloaded: 4 of 24" beside a verdict on its TTFT.
pub fn unfinished_reason(
    total: u64,
    completed: u64,
    cancelled: u64,
    load: LoadPattern,
) -> Option<String> {
    let finished = total.saturating_sub(cancelled);
    let share_met = finished as f64 >= MIN_FINISHED_SHARE * total as f64;
    let kept_up = match load {
        LoadPattern::Closed { concurrency } => {
            let c = u64::from(concurrency.max(1));
            share_met || (cancelled <= c && completed >= CLOSED_ROUNDS * c)
        }
        _ => share_met,
    };
    if total == 0 || kept_up {
        return None;
    }
    let must = match load {
        LoadPattern::Closed { .. } => format!(
            "at least {:.0} % must finish, or {CLOSED_ROUNDS} rounds of the streams complete",
            MIN_FINISHED_SHARE * 100.0
        ),
        _ => format!("at least {:.0} % must finish", MIN_FINISHED_SHARE * 100.0),
    };
    let what = format!(
        "overloaded: {cancelled} of {total} measured requests ({:.0} %) were still unanswered when the run ended and were cancelled; {completed} completed, and {must}",
        cancelled as f64 / total as f64 * 100.0
    );
    let fix = match load {
        LoadPattern::Closed { .. } => {
            "the server cannot answer this many concurrent requests within --duration: lower --concurrency, or lengthen --duration or --grace"
        }
        _ => "the server does not keep up with the offered load: lower --rate, or lengthen --duration or --grace",
    };
    Some(format!("{what}. {fix}"))
}

/// The exit status of a finished run and why.
pub fn verdict(r: &crate::metrics::RunSummary, config: &RunConfig, interrupted: bool) -> Verdict {
    let cancelled = r
        .failures
        .by_kind
        .get(&FailureKind::Cancelled)
        .copied()
        .unwrap_or(0);
    let counted = r.requests.total.saturating_sub(cancelled);
    let mut failed = Vec::new();
    // Requests the run itself cancelled at its end are not the server's failures: a run
    // whose requests were all still unanswered is overloaded (below), not failed.
    if r.requests.total > 0 && r.requests.completed == 0 && counted > 0 {
        failed.push(format!(
            "no request succeeded ({} failed{})",
            r.requests.failed.saturating_sub(cancelled),
            if cancelled > 0 {
                format!(", {cancelled} still unanswered at the end")
            } else {
                String::new()
            }
        ));
    } else if counted > 0 {
        let share = r.requests.failed.saturating_sub(cancelled) as f64 / counted as f64;
        if share > config.max_failure_share {
            failed.push(format!(
                "{:.1} % of requests failed, above --max-failures {:.1} %",
                share * 100.0,
                config.max_failure_share * 100.0
            ));
        }
    }
    if !interrupted && (r.requests.completed > 0 || cancelled > 0) {
        failed.extend(unfinished_reason(
            r.requests.total,
            r.requests.completed,
            cancelled,
            config.load,
        ));
    }
    if let Some(slo) = r.slo.as_ref().filter(|slo| !slo.passed) {
        failed.push(format!("SLO not met ({})", slo.spec));
    }
    let (exit_status, mut reasons) = if interrupted {
        let why = "interrupted (Ctrl-C); everything measured was written";
        (exit::INTERRUPTED, vec![why.to_owned()])
    } else if failed.is_empty() {
        (exit::OK, Vec::new())
    } else {
        (exit::FAILED, Vec::new())
    };
    reasons.extend(failed);
    if reasons.is_empty() {
        reasons.push(format!(
            "{:.1} % of requests succeeded{}{}",
            (1.0 - failed_share(r)) * 100.0,
            if cancelled > 0 {
                format!(" ({cancelled} cancelled at the end)")
            } else {
                String::new()
            },
            if r.slo.is_some() { "; SLO met" } else { "" }
        ));
    }
    Verdict {
        exit_status,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Arrival;

    const OPEN: LoadPattern = LoadPattern::Open {
        rate_per_s: 0.5,
        arrival: Arrival::Poisson,
    };

    /// Issue 23's run: `--rate 0.5 --duration 60s` against a 4-slot server, 4 of 30
    /// completed, 26 cancelled at the end.
    #[test]
    fn a_run_that_mostly_never_finished_is_overloaded() {
        let why = unfinished_reason(30, 4, 26, OPEN).expect("does not pass");
        assert!(
            why.starts_with("overloaded: 26 of 30 measured requests (87 %)"),
            "{why}"
        );
        assert!(
            why.contains("4 completed") && why.contains("lower --rate"),
            "{why}"
        );
        let closed = unfinished_reason(30, 4, 26, LoadPattern::Closed { concurrency: 26 });
        assert!(closed.unwrap().contains("lower --concurrency"));
    }

    /// Issue 36, item 7: a closed loop of 4 streams ends with its 4 in flight; 20 of 24
    /// completed is not an overloaded run. One with 4 of 30 completed still is.
    #[test]
    fn a_closed_loop_ends_with_its_streams_in_flight() {
        let closed = LoadPattern::Closed { concurrency: 4 };
        assert_eq!(unfinished_reason(24, 20, 4, closed), None);
        assert!(unfinished_reason(30, 4, 26, closed).is_some());
        assert!(unfinished_reason(24, 20, 4, OPEN).is_some());
        // Half cut at 64 streams: one round completed, not three: overloaded.
        let wide = LoadPattern::Closed { concurrency: 64 };
        let why = unfinished_reason(128, 64, 64, wide).unwrap();
        assert!(why.contains("or 3 rounds of the streams complete"), "{why}");
    }

    #[test]
    fn a_few_cancelled_at_the_end_still_pass() {
        // Exactly 90 % finished: the threshold is met.
        assert_eq!(unfinished_reason(10, 9, 1, OPEN), None);
        assert_eq!(unfinished_reason(1000, 990, 10, OPEN), None);
        assert_eq!(unfinished_reason(0, 0, 0, OPEN), None);
        // Failed requests finished: only cancelled ones count against the threshold.
        assert_eq!(unfinished_reason(100, 50, 0, OPEN), None);
        assert!(unfinished_reason(10, 8, 2, OPEN).is_some());
    }
}
