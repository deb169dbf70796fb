//! Drives one phase of a run (warm-up, measurement) under closed- or open-loop load.
//!
//! Closed loop: N workers, each sending its next request as soon as its last one ends.
//! Open loop: a dispatcher thread follows the seeded plan with sub-millisecond precision
//! (the async timer's 1 ms granularity is not enough at 1,000 req/s), spawning each request
//! on the runtime at its planned time, whatever is still in flight (draft 4.2.5); with
//! `--max-concurrency`, at most that many run at once and later arrivals wait for a slot.
//!
//! How a phase ends: sending stops at the first limit reached. After a request-count limit,
//! in-flight requests run to completion (each bounded by `--timeout`). After the duration
//! limit or Ctrl-C, in-flight requests get `--grace`, then are cancelled and recorded as
//! `cancelled`, in both loops.
//!
//! A closed-loop measured phase after a warm-up starts with a lead-in ([`LeadIn`]): each
//! stream first sends one more warm-up request, the streams spread over one request's time,
//! so the measured requests start as those end, as a running closed loop starts them.
//!
//! `drive` runs a phase ([`run_phase`]), `request` runs each of its requests (retries,
//! timeout, cancellation, follow-up turns), `dispatch` is the open loop's dispatcher thread.

mod dispatch;
mod drive;
mod request;

use super::feeder::Feed;
use crate::client::Pool;
use crate::clock::{Nanos, RunClock};
use crate::record::{Draft, FailureKind, Phase};
use crate::schedule::LoadPattern;
pub use drive::run_phase;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Shared controls of a run: stop sending, cancel in-flight requests.
#[derive(Clone)]
pub struct Controls {
    /// No new requests once set (Ctrl-C).
    pub stop_sending: Arc<AtomicBool>,
    /// In-flight requests end as `cancelled` once this is true (Ctrl-C after its grace).
    pub cancel: watch::Sender<bool>,
    /// Set by Ctrl-C: the whole run is ending.
    pub interrupted: Arc<AtomicBool>,
}

impl Controls {
    pub fn new() -> Self {
        Self {
            stop_sending: Arc::new(AtomicBool::new(false)),
            cancel: watch::channel(false).0,
            interrupted: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Default for Controls {
    fn default() -> Self {
        Self::new()
    }
}

/// A condition that ends a phase early (e.g. warm-up targets reached).
pub type DoneWhen = Arc<dyn Fn() -> bool + Send + Sync>;

/// What a phase needs.
pub struct PhasePlan {
    pub phase: Phase,
    pub load: LoadPattern,
    /// Stop after this many requests have been sent.
    pub max_requests: Option<u64>,
    /// Stop sending after this long; then in-flight requests get `grace`.
    pub max_duration: Option<Duration>,
    /// Stop sending once this returns true (warm-up targets); in-flight requests finish.
    pub done_when: Option<DoneWhen>,
    pub seed: u64,
    /// After the duration limit or Ctrl-C: how long in-flight requests may still finish
    /// before they are cancelled.
    pub grace: Duration,
    /// Open loop: at most this many requests in flight; arrivals wait for a slot.
    pub max_concurrency: Option<u32>,
    /// Scale-out: when the phase starts on the run clock (the plan's common start; the
    /// phase waits for it, and when it has passed, the schedule still counts from it).
    pub start_at: Option<Nanos>,
    /// Scale-out: the feed carries only this shard's ordinals; open-loop request `k` is
    /// sent at the global schedule's `k`-th time.
    pub shard: Option<crate::schedule::shard::Shard>,
    /// Closed loop: carry the load on from the warm-up (see [`LeadIn`]); `None`: every
    /// stream starts at once. Ignored in open loop, whose arrivals follow their schedule.
    pub lead_in: Option<LeadIn>,
}

/// The longest a lead-in spreads the streams' starts over. Beyond it the server queues
/// the lead-in requests anyway and ends them one by one, which spreads the measured
/// requests as much.
pub const LEAD_IN_MAX: Duration = Duration::from_secs(30);

/// The start of a closed-loop measured phase that follows a warm-up. Stream `k` of `n`
/// first waits `k/n` of `cycle` (how long one request took under the warm-up's load), then
/// sends one request from the warm-up's own stream (recorded as a warm-up request, outside
/// the measured counts), and only then its measured requests. So the first measured
/// requests start as warm-up requests end, spread as a running closed loop spreads them,
/// instead of every stream at once on a server the warm-up's drain left empty: that burst
/// was the run's own P99 TTFT. The duration limit counts from the end of the spread.
#[derive(Clone)]
pub struct LeadIn {
    /// The warm-up's request stream.
    pub feed: Feed,
    /// How long one request took under the warm-up's load (at most [`LEAD_IN_MAX`]).
    pub cycle: Duration,
}

impl LeadIn {
    /// How long stream `k` of `streams` waits before its lead-in request.
    pub fn wait(&self, k: u32, streams: u32) -> Duration {
        self.cycle
            .min(LEAD_IN_MAX)
            .mul_f64(f64::from(k) / f64::from(streams.max(1)))
    }
}

/// Shared things every request needs.
#[derive(Clone)]
pub struct Shared {
    pub pool: Arc<Pool>,
    pub clock: RunClock,
    pub timeout: Duration,
    pub limits: crate::client::exchange::ExchangeLimits,
    pub retry: crate::client::RetryPolicy,
    pub url: Arc<str>,
    pub sink: Sender<Draft>,
    pub sent: Arc<AtomicU64>,
    pub in_flight: Arc<AtomicU64>,
    /// Output chunks received so far, all phases, counted as they arrive (the live token
    /// rate).
    pub chunks_received: Arc<AtomicU64>,
    /// Open loop: sessions whose later turns are still to come (waiting on think time).
    pub open_sessions: Arc<AtomicU64>,
}

/// How a phase went.
#[derive(Debug, Clone, Copy, Default)]
pub struct PhaseEnd {
    /// When the phase started, on the run clock.
    pub started_at: Nanos,
    /// When sending stopped.
    pub stopped_sending_at: Nanos,
    /// Sending stopped because of the duration limit (or Ctrl-C), so in-flight requests got
    /// the grace period and were then cancelled.
    pub timed_stop: bool,
    /// In-flight requests were cancelled at the end (after the grace period).
    pub cancelled_in_flight: bool,
    /// Sending stopped because this many requests in a row failed and none had succeeded
    /// (see [`GIVE_UP_AFTER`]): the phase would only have added failures.
    pub gave_up_after: Option<u64>,
}

/// A phase stops sending once this many requests in a row have failed while none of its
/// requests has succeeded: a server that answers every request with an error (an HTML page,
/// a refused key, a missing route) is not loaded for the whole warm-up or level. Requests
/// cancelled at the end do not count; a success resets the count and disarms the stop, so a
/// server that fails for a while mid-run (a restart) is still measured.
pub const GIVE_UP_AFTER: u64 = 20;

/// Consecutive failures of one phase (see [`GIVE_UP_AFTER`]).
#[derive(Debug, Default)]
pub struct FailureStreak {
    succeeded: AtomicBool,
    in_a_row: AtomicU64,
}

impl FailureStreak {
    /// Notes how a request ended: `None` for a success, else its failure kind.
    pub fn note(&self, failure: Option<FailureKind>) {
        match failure {
            None => {
                self.succeeded.store(true, Ordering::Release);
                self.in_a_row.store(0, Ordering::Release);
            }
            Some(FailureKind::Cancelled) => {}
            Some(_) => {
                self.in_a_row.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// The failures in a row, once the phase should stop sending because of them.
    pub fn gave_up(&self) -> Option<u64> {
        let n = self.in_a_row.load(Ordering::Acquire);
        (n >= GIVE_UP_AFTER && !self.succeeded.load(Ordering::Acquire)).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streak_of_failures_with_no_success_gives_up() {
        let s = FailureStreak::default();
        for _ in 0..GIVE_UP_AFTER - 1 {
            s.note(Some(FailureKind::HttpStatus));
        }
        assert_eq!(s.gave_up(), None, "one short of the limit");
        // Cancelled requests (the end of a timed phase) neither count nor reset.
        s.note(Some(FailureKind::Cancelled));
        assert_eq!(s.gave_up(), None);
        s.note(Some(FailureKind::Protocol));
        assert_eq!(s.gave_up(), Some(GIVE_UP_AFTER));
    }

    #[test]
    fn a_lead_in_spreads_the_streams_over_one_request_time() {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        drop(tx);
        let lead = LeadIn {
            feed: Feed::for_tests(rx),
            cycle: Duration::from_secs(8),
        };
        assert_eq!(lead.wait(0, 4), Duration::ZERO);
        assert_eq!(lead.wait(1, 4), Duration::from_secs(2));
        assert_eq!(lead.wait(3, 4), Duration::from_secs(6));
        // A server that queues: the spread stops at LEAD_IN_MAX.
        let long = LeadIn {
            cycle: Duration::from_secs(600),
            ..lead
        };
        assert_eq!(long.wait(2, 4), LEAD_IN_MAX / 2);
    }

    #[test]
    fn one_success_disarms_the_stop() {
        let s = FailureStreak::default();
        s.note(Some(FailureKind::Connect));
        s.note(None);
        for _ in 0..GIVE_UP_AFTER * 3 {
            s.note(Some(FailureKind::Connect));
        }
        assert_eq!(
            s.gave_up(),
            None,
            "a server that worked, then failed for a while (a restart), is still measured"
        );
    }
}
