//! The draft's "completion rate below 90 % of the arrival rate" (5.2.3.1), read per arrival:
//! the requests that arrived in a level's steady span, followed to their own ends, and the
//! rate the server completed *them* at against the rate they came.
//!
//! Counting completions and arrivals over one span compares two counts a request's latency
//! L apart: completions trail arrivals by L, so over a steady span S (the arrival span less
//! its first 10 %) a server that keeps up completes in the span only the arrivals of its
//! first S − L seconds once L exceeds the 10 % skipped, and the share falls below 90 % as
//! soon as L > 0.19 × the arrival span. A 12 s level at 2 req/s whose requests take 4 s:
//! 8 s of completions against 10.8 s of arrivals, 74 %, "saturated" with an empty queue.
//! Following each arrival to its own end has no such lag.
//!
//! Every open-loop arrival planned in the steady span (the one the other signals read: from
//! the first planned send plus the larger of 10 % of the arrival span, the draft's 5.2.3.2,
//! and the time the first requests took, to the last; the 10 % alone when that span is too
//! short) is, by how its request ended (the level's drain and `--grace` included):
//!
//! - **completed**: a complete response;
//! - **failed**: failed for the server's reasons (an error status, a timeout, a cut stream);
//! - **late**: cancelled by the benchmark at the level's end after waiting longer than the
//!   blow-up bound allows for its whole answer: time from its planned send to its
//!   cancellation > 10 × the reference latency per output token × its `max_tokens`. Even had
//!   every token it asked for arrived the moment it was stopped, its latency per token would
//!   be beyond the bound: the server was too slow for it;
//! - **unresolved**: cancelled before that (the level ended while it was being served or
//!   briefly queued), or with no bound to judge it by. It says nothing about the server and
//!   is left out.
//!
//! How late they completed: the delay of each completed arrival (planned send to the end of
//! its response) is fitted against its planned send time by least squares. A server that
//! keeps up has delays without a trend, however long; one that falls behind completes the
//! arrivals of T seconds over T·(1 + b) seconds when their delays grow by b seconds per
//! second. So the arrivals' completion rate over their arrival rate is
//!
//! ```text
//! ratio = completed ÷ (completed + failed + late) ÷ (1 + max(b, 0))
//! ```
//!
//! and below 90 % the server did not keep up. The reference latency per output token is
//! the P99 at the procedure's concurrency-1 level; without one (levels that run before or
//! without it), the level's own fastest completed request stands in, as the latency without
//! queueing.

use super::saturation::{steady_span, BLOWUP_FACTOR};
use crate::clock::Nanos;
use crate::metrics::request::latencies;
use crate::record::{FailureKind, Phase, RequestRecord};
use crate::stats::trend::ols_slope;
use serde::{Deserialize, Serialize};

/// Fewer planned arrivals than this give no reading.
pub const MIN_ARRIVALS: usize = 10;

/// How the arrivals of a level's steady span ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ArrivalOutcomes {
    /// Open-loop arrivals planned in the steady span.
    pub arrivals: u64,
    /// Of those, completed (whenever: the drain and grace included).
    pub completed: u64,
    /// Failed for the server's reasons (every failure kind but `cancelled`).
    pub failed: u64,
    /// Cancelled at the level's end after waiting past the blow-up bound for their answer.
    pub late: u64,
    /// Cancelled at the level's end within that bound: left out of the share.
    pub unresolved: u64,
    /// How fast the completed arrivals' delay (planned send to the end of the response)
    /// grew with their planned send time, s per s (least squares); `None` with fewer than
    /// [`MIN_ARRIVALS`] completed.
    pub delay_growth: Option<f64>,
    /// The bound per output token a cancelled arrival was judged against, ms (10 × the
    /// reference); `None` when there was none.
    pub bound_ms_per_token: Option<f64>,
}

impl ArrivalOutcomes {
    /// Completed ÷ (completed + failed + late), 0-1; `None` when no arrival was decided.
    pub fn share(&self) -> Option<f64> {
        let decided = self.completed + self.failed + self.late;
        (decided > 0).then(|| self.completed as f64 / decided as f64)
    }

    /// The arrivals' completion rate over their arrival rate: [`share`](Self::share) ÷ (1 +
    /// the delay growth, when positive). `None` when no arrival was decided.
    pub fn completion_ratio(&self) -> Option<f64> {
        let growth = self.delay_growth.unwrap_or(0.0).max(0.0);
        self.share().map(|s| s / (1.0 + growth))
    }
}

/// When an open-loop request was planned to be sent (else when it was attempted).
fn planned(r: &RequestRecord) -> Nanos {
    r.scheduled_at.unwrap_or(r.queued_at)
}

/// The fastest completed request's end-to-end latency per output token, ms.
fn fastest_ms_per_token(measured: &[&RequestRecord]) -> Option<f64> {
    measured
        .iter()
        .filter(|r| r.output_tokens > 0)
        .filter_map(|r| Some(latencies(r)?.1 / r.output_tokens as f64))
        .filter(|v| *v > 0.0)
        .min_by(f64::total_cmp)
}

/// Whether a cancelled arrival had waited past the blow-up bound for its whole answer when
/// the benchmark stopped it (`false` without a bound or without a `max_tokens`).
fn is_late(r: &RequestRecord, bound_ms_per_token: Option<f64>) -> bool {
    let Some(bound) = bound_ms_per_token else {
        return false;
    };
    if r.max_tokens == 0 {
        return false;
    }
    let waited_ms = r.finished_at.saturating_sub(planned(r)) as f64 / 1e6;
    waited_ms > bound * r.max_tokens as f64
}

/// Judges each arrival of the steady span (see the module documentation).
/// `reference_ms_per_token`: the P99 end-to-end latency per output token at the lowest
/// load. `None` in closed loop (some measured request has no planned send time) or with
/// fewer than [`MIN_ARRIVALS`] measured requests.
pub fn judge(
    records: &[RequestRecord],
    reference_ms_per_token: Option<f64>,
) -> Option<ArrivalOutcomes> {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    if measured.len() < MIN_ARRIVALS || measured.iter().any(|r| r.scheduled_at.is_none()) {
        return None;
    }
    let first = measured.iter().map(|r| planned(r)).min()?;
    let last = measured.iter().map(|r| planned(r)).max()?;
    // The other signals' steady span when there is one (past the ramp-up, while the batch
    // fills and delays rise for that reason alone); else the draft's 10 %.
    let cut = steady_span(records).map_or(first + (last - first) / 10, |(from, _)| from);
    let reference = reference_ms_per_token
        .filter(|v| v.is_finite() && *v > 0.0)
        .or_else(|| fastest_ms_per_token(&measured));
    let bound = reference.map(|v| BLOWUP_FACTOR * v);
    let mut out = ArrivalOutcomes {
        bound_ms_per_token: bound,
        ..Default::default()
    };
    // Planned send (x) and delay to the end of the response (y) of each completed arrival, s.
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for r in measured.iter().filter(|r| planned(r) >= cut) {
        out.arrivals += 1;
        match r.outcome.failure_kind() {
            None => {
                out.completed += 1;
                xs.push(planned(r).saturating_sub(first) as f64 / 1e9);
                ys.push(r.finished_at.saturating_sub(planned(r)) as f64 / 1e9);
            }
            Some(FailureKind::Cancelled) if is_late(r, bound) => out.late += 1,
            Some(FailureKind::Cancelled) => out.unresolved += 1,
            Some(_) => out.failed += 1,
        }
    }
    if xs.len() >= MIN_ARRIVALS {
        out.delay_growth = ols_slope(&xs, &ys).map(|f| f.slope);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    const MS: u64 = 1_000_000;

    /// An open-loop request planned (and sent) at `at_ms`, one token every `gap_ms` from
    /// `at_ms + gap_ms` for `tokens` tokens; cancelled at `cancel_ms` when that comes before
    /// its last token (keeping the tokens received by then).
    fn arrival(id: u64, at_ms: u64, tokens: u64, gap_ms: u64, cancel_ms: u64) -> RequestRecord {
        let times: Vec<u64> = (1..=tokens)
            .map(|k| at_ms + k * gap_ms)
            .filter(|&t| t <= cancel_ms)
            .collect();
        let mut r = RequestRecord::completed_for_tests(id, at_ms, &times, 10);
        r.scheduled_at = Some(at_ms * MS);
        r.max_tokens = tokens as u32;
        if times.len() < tokens as usize {
            r.outcome = Outcome::failed(FailureKind::Cancelled, "still in flight");
            r.finished_at = cancel_ms * MS;
        }
        r
    }

    #[test]
    fn a_long_request_that_keeps_up_is_not_short_of_completions() {
        // 2 req/s for 12 s (arrivals at 0, 0.5, … 11.5 s), each 30 tokens 100 ms apart
        // (3 s, 100 ms per token), grace 1 s: whatever runs at 13 s is cancelled.
        // Steady span from max(10 % of 11.5 s, the first requests' 3 s) = 3 s: arrivals
        // 6..=23 (18). Those planned by 10 s (6..=20, 15) complete; 21, 22, 23 are cancelled
        // after 2.5, 2.0 and 1.5 s, under the bound 10 × 100 ms × 30 tokens = 30 s:
        // unresolved. Share 15 / 15 = 100 %.
        let recs: Vec<RequestRecord> = (0..24)
            .map(|i| arrival(i, i * 500, 30, 100, 13_000))
            .collect();
        let a = judge(&recs, Some(100.0)).unwrap();
        assert_eq!(
            (a.arrivals, a.completed, a.failed, a.late, a.unresolved),
            (18, 15, 0, 0, 3)
        );
        assert_eq!(a.share(), Some(1.0));
        // Every completed arrival took 3 s: no delay growth, ratio 100 %.
        assert_eq!(a.delay_growth, Some(0.0));
        assert_eq!(a.completion_ratio(), Some(1.0));
        assert_eq!(a.bound_ms_per_token, Some(1000.0));
        // Without a reference the fastest completed request (100 ms per token) stands in.
        assert_eq!(judge(&recs, None).unwrap(), a);
        // The old reading, completions against arrivals within the span 1.15-11.5 s: the
        // completions of arrivals planned by 8.5 s (0..=17, 18) against 21 arrivals,
        // 85.7 % (< 90 %), "saturated". The level's signal now reads the arrivals.
        let s = crate::metrics::summarize(&recs, &crate::metrics::SummaryParams::default());
        let old = s.arrival_balance.unwrap().completion_share.unwrap();
        assert!((old - 18.0 / 21.0).abs() < 1e-9, "{old}");
        let sig = super::super::saturation::evaluate(&s, &recs, Some(100.0), true);
        assert!(!sig.completion_shortfall, "{sig:?}");
        assert_eq!(sig.completion_share, Some(1.0));
        assert_eq!(sig.arrivals, Some(a));
    }

    /// Arrivals every 100 ms (0-9.9 s) served one at a time, `service_ms` each (≥ 100 ms, so
    /// request i starts at service·i), two tokens (at half and all of its service); the
    /// level stops at `stop_ms` with no grace, cancelling what is unfinished.
    fn one_at_a_time(service_ms: u64, stop_ms: u64) -> Vec<RequestRecord> {
        (0..100u64)
            .map(|i| {
                let start = service_ms * i;
                let times: Vec<u64> = [start + service_ms / 2, start + service_ms]
                    .into_iter()
                    .filter(|&t| t <= stop_ms)
                    .collect();
                let mut r = RequestRecord::completed_for_tests(i, 100 * i, &times, 10);
                r.scheduled_at = Some(100 * i * MS);
                r.max_tokens = 2;
                if times.len() < 2 {
                    r.outcome = Outcome::failed(FailureKind::Cancelled, "still in flight");
                    r.finished_at = stop_ms * MS;
                }
                r
            })
            .collect()
    }

    #[test]
    fn arrivals_queued_past_the_bound_count_against_the_server() {
        // 200 ms each (100 ms per token unqueued) against an arrival every 100 ms, stopped
        // at 10 s: request i finishes at 200(i+1) ms, so 0..=49 complete and 50..=99 are
        // cancelled after 10,000 − 100i ms. Bound 10 × 100 ms × 2 tokens = 2,000 ms: 50..=79
        // (5.0 down to 2.1 s) are late, 80..=99 (≤ 2.0 s) unresolved. Steady span from
        // max(990 ms, the P90 of the first fifth's durations 100i + 200 ms: 2,000 ms):
        // arrivals 20..=99 (80), completed 20..=49 (30), share 30 / (30 + 30) = 50 %. Their
        // delays 100i + 200 ms grow 1 s per s: ratio 50 % ÷ 2 = 25 %.
        let recs = one_at_a_time(200, 10_000);
        let a = judge(&recs, Some(100.0)).unwrap();
        assert_eq!(
            (a.arrivals, a.completed, a.failed, a.late, a.unresolved),
            (80, 30, 0, 30, 20)
        );
        assert_eq!(a.share(), Some(0.5));
        assert!((a.delay_growth.unwrap() - 1.0).abs() < 1e-9, "{a:?}");
        assert!((a.completion_ratio().unwrap() - 0.25).abs() < 1e-9);
        let s = crate::metrics::summarize(&recs, &crate::metrics::SummaryParams::default());
        let sig = super::super::saturation::evaluate(&s, &recs, Some(100.0), true);
        assert!(sig.completion_shortfall, "{sig:?}");
    }

    #[test]
    fn arrivals_completed_ever_later_fall_short() {
        // 120 ms each against an arrival every 100 ms (83 % of the arrival rate), nothing
        // stopped: every arrival completes, share 100 %. Request i finishes at 120(i+1) ms,
        // its delay 20i + 120 ms grows 0.2 s per s: the server completes the arrivals of
        // the steady span (from max(990 ms, the first fifth's P90 480 ms): 10..=99) at
        // 1 / 1.2 = 83.3 % of the rate they came, < 90 %.
        // (The old count agreed here: 74 completions within 0.99-9.9 s against 90
        // arrivals, 82.2 %.)
        let recs = one_at_a_time(120, 100_000);
        let a = judge(&recs, Some(60.0)).unwrap();
        assert_eq!((a.arrivals, a.completed, a.unresolved), (90, 90, 0));
        assert_eq!(a.share(), Some(1.0));
        assert!((a.delay_growth.unwrap() - 0.2).abs() < 1e-9, "{a:?}");
        assert!((a.completion_ratio().unwrap() - 1.0 / 1.2).abs() < 1e-9);
        let s = crate::metrics::summarize(&recs, &crate::metrics::SummaryParams::default());
        let old = s.arrival_balance.unwrap().completion_share.unwrap();
        assert!((old - 74.0 / 90.0).abs() < 1e-9, "{old}");
        let sig = super::super::saturation::evaluate(&s, &recs, Some(60.0), true);
        assert!(sig.completion_shortfall, "{sig:?}");
    }

    #[test]
    fn closed_loop_and_short_levels_give_no_reading() {
        let mut recs: Vec<RequestRecord> = (0..20)
            .map(|i| arrival(i, i * 500, 3, 10, 99_000))
            .collect();
        assert!(judge(&recs[..9], Some(1.0)).is_none());
        recs[3].scheduled_at = None;
        assert!(judge(&recs, Some(1.0)).is_none());
    }
}
