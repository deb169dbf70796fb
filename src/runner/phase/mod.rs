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

use super::cpu::ThreadCpu;
use super::feeder::Feed;
use crate::client::{execute, Exchange, Pool, PreparedRequest};
use crate::clock::{Nanos, RunClock};
use crate::config::LoadPattern;
use crate::record::{Draft, FailureKind, Phase};
use crate::schedule::ArrivalPlan;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::{watch, Semaphore};

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
    pub shard: Option<crate::scaleout::shard::Shard>,
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
    pub retry: crate::config::RetryPolicy,
    pub url: Arc<str>,
    pub sink: Sender<Draft>,
    pub sent: Arc<AtomicU64>,
    pub in_flight: Arc<AtomicU64>,
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

/// One request from start to record, honouring timeout and both cancellations (the
/// phase's, after its grace; the run's, on Ctrl-C). Returns how it failed (`None`: it
/// succeeded).
async fn run_one(
    shared: &Shared,
    req: PreparedRequest,
    phase: Phase,
    scheduled_at: Option<Nanos>,
    attempted_at: Option<Nanos>,
    mut cancels: (watch::Receiver<bool>, watch::Receiver<bool>),
) -> Option<FailureKind> {
    let mut ex = Exchange::new(&req, phase, scheduled_at);
    // The attempt is stamped before racing against cancellation, so even a request
    // cancelled before its first poll has a real attempt time. A caller that made the
    // request wait first (for a --max-concurrency slot) passes when it started waiting.
    let first_attempt = attempted_at.unwrap_or_else(|| shared.clock.now());
    ex.draft.record.queued_at = first_attempt;
    enum End {
        Done,
        Timeout,
        Cancelled,
    }
    let deadline = tokio::time::Instant::now() + shared.timeout;
    let mut retries = 0u32;
    let mut first_sent = None;
    let end = loop {
        let end = tokio::select! {
            r = tokio::time::timeout_at(deadline, execute(&mut ex, &shared.pool, &shared.clock, &req, &shared.url, &shared.limits)) => {
                if r.is_ok() { End::Done } else { End::Timeout }
            }
            _ = cancels.0.wait_for(|c| *c) => End::Cancelled,
            _ = cancels.1.wait_for(|c| *c) => End::Cancelled,
        };
        first_sent = first_sent.or(ex.record().sent_at);
        let Some(wait) = retry_wait(&shared.retry, ex.record(), retries) else {
            break end;
        };
        if !matches!(end, End::Done) {
            break end;
        }
        // Try again after the wait; the user is still waiting, so latency keeps counting
        // from the first attempt.
        let cancelled = tokio::select! {
            _ = tokio::time::sleep(wait) => false,
            _ = cancels.0.wait_for(|c| *c) => true,
            _ = cancels.1.wait_for(|c| *c) => true,
        };
        if cancelled {
            break End::Done;
        }
        retries += 1;
        ex = Exchange::new(&req, phase, scheduled_at);
        ex.draft.record.queued_at = shared.clock.now();
    };
    let r = &mut ex.draft.record;
    r.retries = retries;
    if retries > 0 {
        // The whole wait is the user's: attempt and send times are the first attempt's.
        r.queued_at = first_attempt;
        r.sent_at = first_sent.or(r.sent_at);
    }
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
            "still in flight when the run stopped (duration limit plus --grace, or Ctrl-C)",
            now,
        ),
    }
    shared.in_flight.fetch_sub(1, Ordering::AcqRel);
    let failure = ex.record().outcome.failure_kind();
    let _ = shared.sink.send(ex.into_draft());
    failure
}

/// How long to wait before retrying a refused request, when the policy retries it:
/// its `Retry-After` (seconds) capped by the policy, or 0.5 s doubling per retry.
fn retry_wait(
    policy: &crate::config::RetryPolicy,
    r: &crate::record::RequestRecord,
    retries: u32,
) -> Option<Duration> {
    if retries >= policy.max_retries {
        return None;
    }
    let retryable = match (&r.outcome, r.http_status) {
        (
            crate::record::Outcome::Failed {
                kind: FailureKind::HttpStatus,
                ..
            },
            Some(s),
        ) => policy.statuses.contains(&s),
        (
            crate::record::Outcome::Failed {
                kind: FailureKind::Connect,
                ..
            },
            _,
        ) => policy.connect_errors,
        _ => false,
    };
    if !retryable {
        return None;
    }
    let advised = match &r.outcome {
        crate::record::Outcome::Failed { detail, .. } => detail
            .split("(Retry-After: ")
            .nth(1)
            .and_then(|s| s.trim_end_matches(')').trim().parse::<f64>().ok()),
        _ => None,
    };
    let backoff = 0.5 * f64::from(1u32 << retries.min(10));
    Some(Duration::from_secs_f64(
        advised.unwrap_or(backoff).clamp(0.0, policy.max_wait_s),
    ))
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

/// What each request task needs to know about its phase.
#[derive(Clone)]
struct PhaseCtx {
    shared: Shared,
    phase: Phase,
    phase_cancel: watch::Receiver<bool>,
    run_cancel: watch::Receiver<bool>,
    should_stop: Arc<dyn Fn() -> bool + Send + Sync>,
    claim: Arc<dyn Fn() -> bool + Send + Sync>,
    streak: Arc<FailureStreak>,
}

impl PhaseCtx {
    fn cancels(&self) -> (watch::Receiver<bool>, watch::Receiver<bool>) {
        (self.phase_cancel.clone(), self.run_cancel.clone())
    }

    /// Runs one request of the phase (see [`run_one`]) and notes its end in the phase's
    /// failure streak; true when it succeeded.
    async fn send(
        &self,
        req: PreparedRequest,
        scheduled_at: Option<Nanos>,
        attempted_at: Option<Nanos>,
    ) -> bool {
        let failure = run_one(
            &self.shared,
            req,
            self.phase,
            scheduled_at,
            attempted_at,
            self.cancels(),
        )
        .await;
        self.streak.note(failure);
        failure.is_none()
    }
}

/// Runs the turns of a session after its first one: each `think_ms` after the previous
/// answer ended, while the phase goes on; a failed turn abandons the rest (as a user would).
async fn follow_up_turns(ctx: &PhaseCtx, turns: Vec<PreparedRequest>, open_loop: bool) {
    for req in turns {
        let due = ctx.shared.clock.now() + (req.think_ms.max(0.0) * 1e6) as u64;
        let (mut phase_cancel, mut run_cancel) = ctx.cancels();
        tokio::select! {
            _ = tokio::time::sleep_until(ctx.shared.clock.instant_at(due).into()) => {}
            _ = phase_cancel.wait_for(|c| *c) => return,
            _ = run_cancel.wait_for(|c| *c) => return,
        }
        if (ctx.should_stop)() || !(ctx.claim)() {
            return;
        }
        ctx.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        let scheduled = open_loop.then_some(due);
        if !ctx.send(req, scheduled, None).await {
            return;
        }
    }
}

/// A stream's lead-in (see [`LeadIn`]): its share of the spread, then the first turn of one
/// session of the warm-up's stream, recorded as a warm-up request.
async fn lead_in_request(ctx: &PhaseCtx, feed: &Feed, wait: Duration) {
    let (mut phase_cancel, mut run_cancel) = ctx.cancels();
    tokio::select! {
        _ = tokio::time::sleep(wait) => {}
        _ = phase_cancel.wait_for(|c| *c) => return,
        _ = run_cancel.wait_for(|c| *c) => return,
    }
    if (ctx.should_stop)() {
        return;
    }
    let Some(mut session) = feed.next().await else {
        return;
    };
    session.truncate(1);
    let Some(req) = session.pop() else { return };
    ctx.shared.in_flight.fetch_add(1, Ordering::AcqRel);
    run_one(&ctx.shared, req, Phase::Warmup, None, None, ctx.cancels()).await;
}

/// Why sending stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    Count,
    Timed,
    /// [`GIVE_UP_AFTER`] failures in a row, none succeeded.
    GaveUp,
}

/// Runs a phase to its end (see the module documentation for how it ends).
pub async fn run_phase(
    plan: PhasePlan,
    feed: Feed,
    shared: Shared,
    controls: Controls,
    cpu: ThreadCpu,
) -> PhaseEnd {
    let clock = shared.clock;
    let phase_start = match plan.start_at {
        Some(at) => {
            tokio::time::sleep_until(clock.instant_at(at).into()).await;
            at
        }
        None => clock.now(),
    };
    let sent_at_start = shared.sent.load(Ordering::Acquire);
    let (phase_cancel_tx, phase_cancel) = watch::channel(false);
    let lead_in = match plan.load {
        LoadPattern::Closed { .. } => plan.lead_in.clone(),
        _ => None,
    };
    // The duration counts from the end of the lead-in's spread.
    let lead_ns = lead_in
        .as_ref()
        .map_or(0, |l| l.cycle.min(LEAD_IN_MAX).as_nanos() as u64);
    let duration_ns = plan.max_duration.map(|d| d.as_nanos() as u64 + lead_ns);
    let timed_out = move || duration_ns.is_some_and(|d| clock.now() - phase_start >= d);
    let streak = Arc::new(FailureStreak::default());
    let should_stop: Arc<dyn Fn() -> bool + Send + Sync> = {
        let controls = controls.clone();
        let sent = shared.sent.clone();
        let plan_max = plan.max_requests;
        let done_when = plan.done_when.clone();
        let streak = streak.clone();
        Arc::new(move || {
            controls.stop_sending.load(Ordering::Acquire)
                || plan_max.is_some_and(|m| sent.load(Ordering::Acquire) - sent_at_start >= m)
                || timed_out()
                || done_when.as_ref().is_some_and(|f| f())
                || streak.gave_up().is_some()
        })
    };
    let claim: Arc<dyn Fn() -> bool + Send + Sync> = {
        let sent = shared.sent.clone();
        let max = plan.max_requests;
        Arc::new(move || claim_slot(&sent, sent_at_start, max))
    };
    let ctx = PhaseCtx {
        shared: shared.clone(),
        phase: plan.phase,
        phase_cancel,
        run_cancel: controls.cancel.subscribe(),
        should_stop: should_stop.clone(),
        claim,
        streak: streak.clone(),
    };
    let sending_done = Arc::new(AtomicBool::new(false));
    match plan.load {
        LoadPattern::Closed { concurrency } => {
            let mut workers = tokio::task::JoinSet::new();
            let streams = concurrency.max(1);
            for k in 0..streams {
                let ctx = ctx.clone();
                let feed = feed.clone();
                let lead = lead_in
                    .as_ref()
                    .map(|l| (l.feed.clone(), l.wait(k, streams)));
                workers.spawn(async move {
                    if let Some((warm_feed, wait)) = lead {
                        lead_in_request(&ctx, &warm_feed, wait).await;
                    }
                    loop {
                        if (ctx.should_stop)() || !(ctx.claim)() {
                            return;
                        }
                        let Some(mut session) = feed.next().await else {
                            ctx.shared.sent.fetch_sub(1, Ordering::AcqRel);
                            return;
                        };
                        let rest = session.split_off(1);
                        let Some(first) = session.pop() else { continue };
                        ctx.shared.in_flight.fetch_add(1, Ordering::AcqRel);
                        if ctx.send(first, None, None).await && !rest.is_empty() {
                            follow_up_turns(&ctx, rest, false).await;
                        }
                    }
                });
            }
            let done = sending_done.clone();
            tokio::spawn(async move {
                while workers.join_next().await.is_some() {}
                done.store(true, Ordering::Release);
            });
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
            let controls2 = controls.clone();
            let ctx2 = ctx.clone();
            let slots = plan
                .max_concurrency
                .map(|n| Arc::new(Semaphore::new(n.max(1) as usize)));
            let done = sending_done.clone();
            let max_duration = plan.max_duration;
            let sharded = plan.shard.is_some();
            std::thread::Builder::new()
                .name("dispatcher".into())
                .spawn(move || {
                    cpu.register_current();
                    dispatch(
                        timing,
                        sharded,
                        phase_start,
                        max_duration,
                        feed,
                        ctx2,
                        controls2,
                        handle,
                        slots,
                    );
                    done.store(true, Ordering::Release);
                })
                .expect("spawning the dispatcher thread");
        }
    }

    // Wait until sending stops, noting why.
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let reason = loop {
        tick.tick().await;
        if controls.stop_sending.load(Ordering::Acquire) || timed_out() {
            break StopReason::Timed;
        }
        if streak.gave_up().is_some() {
            break StopReason::GaveUp;
        }
        if sending_done.load(Ordering::Acquire) || should_stop() {
            break StopReason::Count;
        }
    };
    let stopped_sending_at = clock.now();

    // Drain. After a timed stop (or giving up on failures), in-flight requests get the grace
    // period, then are cancelled.
    let drain_start = Instant::now();
    let mut cancelled = false;
    while !sending_done.load(Ordering::Acquire)
        || shared.in_flight.load(Ordering::Acquire) > 0
        || shared.open_sessions.load(Ordering::Acquire) > 0
    {
        if reason != StopReason::Count && !cancelled && drain_start.elapsed() >= plan.grace {
            phase_cancel_tx.send_replace(true);
            cancelled = true;
        }
        tick.tick().await;
    }
    PhaseEnd {
        started_at: phase_start,
        stopped_sending_at,
        timed_stop: reason == StopReason::Timed,
        cancelled_in_flight: cancelled,
        gave_up_after: (reason == StopReason::GaveUp)
            .then(|| streak.gave_up())
            .flatten(),
    }
}

#[allow(clippy::too_many_arguments)]
fn dispatch(
    timing: Timing,
    sharded: bool,
    phase_start: Nanos,
    max_duration: Option<Duration>,
    feed: Feed,
    ctx: PhaseCtx,
    controls: Controls,
    handle: Handle,
    slots: Option<Arc<Semaphore>>,
) {
    let mut timing = timing;
    if let (true, Timing::Trace { base_ms, .. }) = (sharded, &mut timing) {
        // The feeder made trace times relative to the global first request.
        *base_ms = Some(0.0);
    }
    // Scale-out: arrivals of the global schedule consumed so far (ordinals 0..consumed).
    let mut consumed: u64 = 0;
    let shared = &ctx.shared;
    loop {
        if (ctx.should_stop)() {
            return;
        }
        let Some(mut session) = feed.next_blocking() else {
            return;
        };
        let rest = session.split_off(1);
        let Some(req) = session.pop() else { continue };
        let offset = match &mut timing {
            Timing::Plan(plan) if sharded => {
                // This shard's request `id` goes at the global schedule's `id`-th time:
                // skip the times of the other shards' ordinals.
                let mut at = None;
                while consumed <= req.id {
                    at = plan.next();
                    consumed += 1;
                }
                at.unwrap_or(u64::MAX)
            }
            Timing::Plan(plan) => plan.next().unwrap_or(u64::MAX),
            Timing::Trace { speed, base_ms } => {
                let at = req.arrival_ms.unwrap_or(0.0);
                let base = *base_ms.get_or_insert(at);
                ((at - base).max(0.0) / speed.max(1e-9) * 1e6) as u64
            }
        };
        if let Some(d) = max_duration.filter(|d| offset >= d.as_nanos() as u64) {
            // The next arrival falls after the limit: sending is over when the limit is, not
            // now (so the phase ends as a timed stop, and in-flight requests get the grace).
            sleep_until_precise(
                shared.clock.instant_at(phase_start + d.as_nanos() as u64),
                &controls,
            );
            return;
        }
        let at = phase_start + offset;
        sleep_until_precise(shared.clock.instant_at(at), &controls);
        if (ctx.should_stop)() || !(ctx.claim)() {
            return;
        }
        shared.in_flight.fetch_add(1, Ordering::AcqRel);
        shared.open_sessions.fetch_add(1, Ordering::AcqRel);
        let ctx2 = ctx.clone();
        let slots = slots.clone();
        handle.spawn(async move {
            // With a concurrency cap the request waits here for a slot; the wait shows in its
            // connection wait (attempt → bytes written), never as the generator's lateness.
            let attempted = slots.as_ref().map(|_| ctx2.shared.clock.now());
            let _permit = match &slots {
                Some(s) => s.clone().acquire_owned().await.ok(),
                None => None,
            };
            if ctx2.send(req, Some(at), attempted).await && !rest.is_empty() {
                // Follow-up turns are sent after each answer plus think time; their planned
                // time is that moment, so any lateness still shows as send lag.
                follow_up_turns(&ctx2, rest, true).await;
            }
            ctx2.shared.open_sessions.fetch_sub(1, Ordering::AcqRel);
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
/// returns at once (lateness is recorded as dispatch lag, never hidden).
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
