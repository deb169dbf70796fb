//! Drives one phase of a run (warm-up, probe or measurement) under closed- or open-loop load.
//!
//! Closed loop: N workers, each sending its next request as soon as its last one ends.
//! Open loop: a dispatcher thread follows the seeded plan with sub-millisecond precision
//! (the async timer's 1 ms granularity is not enough at 1,000 req/s), spawning each request
//! on the runtime at its planned time, whatever is still in flight (draft 4.2.5).

use super::cpu::ThreadCpu;
use super::feeder::Feed;
use crate::client::{execute, Exchange, Pool, PreparedRequest};
use crate::clock::{Nanos, RunClock};
use crate::config::LoadPattern;
use crate::record::{FailureKind, Phase};
use crate::schedule::ArrivalPlan;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::watch;

/// Shared controls of a run: stop sending, cancel in-flight requests.
#[derive(Clone)]
pub struct Controls {
    /// No new requests once set (Ctrl-C, duration reached, phase limit reached).
    pub stop_sending: Arc<AtomicBool>,
    /// In-flight requests end as `cancelled` once this is true.
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
    /// Stop sending after this long.
    pub max_duration: Option<Duration>,
    /// Stop sending once this returns true (checked after each completion; warm-up targets).
    pub done_when: Option<DoneWhen>,
    pub seed: u64,
    /// Once sending stopped because of the duration limit or Ctrl-C: how long in-flight
    /// requests may still finish before they are cancelled.
    pub grace: Duration,
}

/// Shared things every request needs.
#[derive(Clone)]
pub struct Shared {
    pub pool: Arc<Pool>,
    pub clock: RunClock,
    pub timeout: Duration,
    pub url: Arc<str>,
    pub sink: Sender<Exchange>,
    pub sent: Arc<AtomicU64>,
    pub in_flight: Arc<AtomicU64>,
    /// Open loop: sessions whose later turns are still to come (waiting on think time).
    pub open_sessions: Arc<AtomicU64>,
}

/// One request from start to record, honouring timeout and cancellation.
async fn run_one(
    shared: &Shared,
    req: PreparedRequest,
    phase: Phase,
    scheduled_at: Option<Nanos>,
    mut cancel: watch::Receiver<bool>,
) -> bool {
    let mut ex = Exchange::new(&req, phase, scheduled_at);
    enum End {
        Done,
        Timeout,
        Cancelled,
    }
    let end = tokio::select! {
        r = tokio::time::timeout(shared.timeout, execute(&mut ex, &shared.pool, &shared.clock, &req, &shared.url)) => {
            if r.is_ok() { End::Done } else { End::Timeout }
        }
        _ = cancel.wait_for(|c| *c) => End::Cancelled,
    };
    let now = shared.clock.now();
    match end {
        End::Done => {}
        End::Timeout => ex.fail_if_unfinished(
            FailureKind::Timeout,
            &format!(
                "no complete response within {:.0} s (--timeout)",
                shared.timeout.as_secs_f64()
            ),
            now,
        ),
        End::Cancelled => ex.fail_if_unfinished(
            FailureKind::Cancelled,
            "run stopped before the response finished",
            now,
        ),
    }
    shared.in_flight.fetch_sub(1, Ordering::AcqRel);
    let ok = ex.record.outcome.is_ok();
    let _ = shared.sink.send(ex);
    ok
}

/// Reserves one request slot of the phase (`sent` counts from `start`); false, with nothing
/// reserved, once `max` requests have been claimed.
fn claim_slot(sent: &AtomicU64, start: u64, max: Option<u64>) -> bool {
    let claimed = sent.fetch_add(1, Ordering::AcqRel) - start;
    if max.is_some_and(|m| claimed >= m) {
        sent.fetch_sub(1, Ordering::AcqRel);
        return false;
    }
    true
}

/// Runs the turns of a session after its first one: each `think_ms` after the previous
/// answer ended, while the phase goes on; a failed turn abandons the rest (as a user would).
/// `claim` reserves a request slot (false: the phase's request limit is reached).
async fn follow_up_turns(
    shared: &Shared,
    turns: Vec<PreparedRequest>,
    phase: Phase,
    open_loop: bool,
    cancel: &watch::Receiver<bool>,
    should_stop: &(impl Fn() -> bool + ?Sized),
    claim: &(impl Fn() -> bool + ?Sized),
) {
    for req in turns {
        let due = shared.clock.now() + (req.think_ms.max(0.0) * 1e6) as u64;
        tokio::time::sleep_until(shared.clock.instant_at(due).into()).await;
        if should_stop() || !claim() {
            return;
        }
        shared.in_flight.fetch_add(1, Ordering::AcqRel);
        let scheduled = open_loop.then_some(due);
        if !run_one(shared, req, phase, scheduled, cancel.clone()).await {
            return;
        }
    }
}

/// Runs a phase to its end: sending stops at a limit, then in-flight requests drain
/// (cancelled after `grace` if the run is being stopped).
pub async fn run_phase(
    plan: PhasePlan,
    feed: Feed,
    shared: Shared,
    controls: Controls,
    cpu: ThreadCpu,
) {
    let phase_start = shared.clock.now();
    let sent_at_start = shared.sent.load(Ordering::Acquire);
    let stop_phase = Arc::new(AtomicBool::new(false));
    let should_stop = {
        let stop_phase = stop_phase.clone();
        let controls = controls.clone();
        let sent = shared.sent.clone();
        let plan_max = plan.max_requests;
        let done_when = plan.done_when.clone();
        let clock = shared.clock;
        let max_duration = plan.max_duration;
        move || {
            stop_phase.load(Ordering::Acquire)
                || controls.stop_sending.load(Ordering::Acquire)
                || plan_max.is_some_and(|m| sent.load(Ordering::Acquire) - sent_at_start >= m)
                || max_duration.is_some_and(|d| clock.now() - phase_start >= d.as_nanos() as u64)
                || done_when.as_ref().is_some_and(|f| f())
        }
    };
    match plan.load {
        LoadPattern::Closed { concurrency } => {
            let mut workers = tokio::task::JoinSet::new();
            for _ in 0..concurrency.max(1) {
                let shared = shared.clone();
                let feed = feed.clone();
                let should_stop = should_stop.clone();
                let cancel = controls.cancel.subscribe();
                let phase = plan.phase;
                let sent = shared.sent.clone();
                let max = plan.max_requests;
                workers.spawn(async move {
                    // Claim a slot before sending so the request count is exact across workers.
                    let claim = || claim_slot(&sent, sent_at_start, max);
                    loop {
                        if should_stop() || !claim() {
                            return;
                        }
                        let Some(mut session) = feed.next().await else {
                            sent.fetch_sub(1, Ordering::AcqRel);
                            return;
                        };
                        let rest = session.split_off(1);
                        let Some(first) = session.pop() else { continue };
                        shared.in_flight.fetch_add(1, Ordering::AcqRel);
                        if run_one(&shared, first, phase, None, cancel.clone()).await
                            && !rest.is_empty()
                        {
                            follow_up_turns(
                                &shared,
                                rest,
                                phase,
                                false,
                                &cancel,
                                &should_stop,
                                &claim,
                            )
                            .await;
                        }
                    }
                });
            }
            // The duration limit also stops waiting workers promptly.
            let waiter = async { while workers.join_next().await.is_some() {} };
            tokio::pin!(waiter);
            loop {
                tokio::select! {
                    _ = &mut waiter => break,
                    _ = tokio::time::sleep(Duration::from_millis(50)) => {
                        if should_stop() {
                            stop_phase.store(true, Ordering::Release);
                        }
                    }
                }
            }
        }
        LoadPattern::Open { .. } | LoadPattern::Trace { .. } => {
            let timing = match plan.load {
                LoadPattern::Open {
                    rate_per_s,
                    arrival,
                } => Timing::Plan(Box::new(ArrivalPlan::new(
                    rate_per_s,
                    arrival,
                    plan.seed ^ (plan.phase as u64).wrapping_mul(0x9E37_79B9),
                ))),
                LoadPattern::Trace { speed } => Timing::Trace {
                    speed,
                    base_ms: None,
                },
                LoadPattern::Closed { .. } => unreachable!("handled above"),
            };
            let handle = Handle::current();
            let shared2 = shared.clone();
            let controls2 = controls.clone();
            let phase = plan.phase;
            let should_stop2 = should_stop.clone();
            let max_duration = plan.max_duration;
            let max_requests = plan.max_requests;
            let dispatcher = std::thread::Builder::new()
                .name("dispatcher".into())
                .spawn(move || {
                    cpu.register_current();
                    dispatch(
                        timing,
                        phase,
                        phase_start,
                        max_duration,
                        (max_requests, sent_at_start),
                        feed,
                        shared2,
                        controls2,
                        handle,
                        should_stop2,
                    )
                })
                .expect("spawning the dispatcher thread");
            // Wait for the dispatcher without blocking the runtime.
            while !dispatcher.is_finished() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let _ = dispatcher.join();
        }
    }
    // Drain: wait for in-flight requests, cancelling them after the grace period when the
    // phase ended on time (duration limit) rather than on a request count.
    let drain_start = Instant::now();
    let timed_end = plan
        .max_duration
        .is_some_and(|d| shared.clock.now() - phase_start >= d.as_nanos() as u64);
    while shared.in_flight.load(Ordering::Acquire) > 0
        || shared.open_sessions.load(Ordering::Acquire) > 0
    {
        if timed_end && drain_start.elapsed() >= plan.grace {
            controls.cancel.send_replace(true);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // A cancelled drain must not cancel the next phase's requests.
    if !controls.interrupted.load(Ordering::Acquire) {
        controls.cancel.send_replace(false);
    }
}

#[allow(clippy::too_many_arguments)]
fn dispatch(
    timing: Timing,
    phase: Phase,
    phase_start: Nanos,
    max_duration: Option<Duration>,
    (max_requests, sent_at_start): (Option<u64>, u64),
    feed: Feed,
    shared: Shared,
    controls: Controls,
    handle: Handle,
    should_stop: impl Fn() -> bool + Clone + Send + Sync + 'static,
) {
    let mut timing = timing;
    loop {
        if should_stop() {
            return;
        }
        let Some(mut session) = feed.next_blocking() else {
            return;
        };
        let rest = session.split_off(1);
        let Some(req) = session.pop() else { continue };
        let offset = match &mut timing {
            Timing::Plan(plan) => plan.next().unwrap_or(u64::MAX),
            Timing::Trace { speed, base_ms } => {
                let at = req.arrival_ms.unwrap_or(0.0);
                let base = *base_ms.get_or_insert(at);
                ((at - base).max(0.0) / speed.max(1e-9) * 1e6) as u64
            }
        };
        if max_duration.is_some_and(|d| offset >= d.as_nanos() as u64) {
            return;
        }
        let at = phase_start + offset;
        sleep_until_precise(shared.clock.instant_at(at), &controls);
        if controls.stop_sending.load(Ordering::Acquire) || should_stop() {
            return;
        }
        shared.sent.fetch_add(1, Ordering::AcqRel);
        shared.in_flight.fetch_add(1, Ordering::AcqRel);
        let s = shared.clone();
        let cancel = controls.cancel.subscribe();
        let stop = should_stop.clone();
        let max = max_requests;
        shared.open_sessions.fetch_add(1, Ordering::AcqRel);
        handle.spawn(async move {
            if run_one(&s, req, phase, Some(at), cancel.clone()).await && !rest.is_empty() {
                // Follow-up turns are sent after each answer plus think time; their planned
                // time is that moment, so any lateness still shows as send lag.
                let claim = || claim_slot(&s.sent, sent_at_start, max);
                follow_up_turns(&s, rest, phase, true, &cancel, &stop, &claim).await;
            }
            s.open_sessions.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Where open-loop send times come from.
enum Timing {
    /// A seeded arrival process.
    Plan(Box<ArrivalPlan>),
    /// Each request's own trace timestamp, sped up by `speed`, relative to the first one.
    Trace { speed: f64, base_ms: Option<f64> },
}

/// Sleeps until `deadline`: coarse sleep to within 200 µs, then yield-spin. A late deadline
/// returns at once (lateness is recorded as send lag, never hidden).
fn sleep_until_precise(deadline: Instant, controls: &Controls) {
    loop {
        let now = Instant::now();
        if now >= deadline || controls.stop_sending.load(Ordering::Relaxed) {
            return;
        }
        let left = deadline - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep((left - Duration::from_micros(150)).min(Duration::from_millis(20)));
        } else {
            std::thread::yield_now();
        }
    }
}
