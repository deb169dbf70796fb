//! Runs a phase: starts the closed loop's workers or the open loop's dispatcher, watches for
//! the first limit reached, then drains what is in flight (grace, then cancel).

use super::dispatch::{dispatch, Timing};
use super::request::{claim_slot, lead_in_request, run_session, PhaseCtx};
use super::{Controls, FailureStreak, LeadIn, PhaseEnd, PhasePlan, Shared, LEAD_IN_MAX};
use crate::clock::Nanos;
use crate::runner::cpu::ThreadCpu;
use crate::runner::feeder::Feed;
use crate::schedule::ArrivalPlan;
use crate::schedule::LoadPattern;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::{watch, Semaphore};
use tokio::time::Interval;

/// Why sending stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    Count,
    Timed,
    /// [`GIVE_UP_AFTER`](super::GIVE_UP_AFTER) failures in a row, none succeeded.
    GaveUp,
}

/// Runs a phase to its end (see the `phase` module's documentation for how it ends).
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
    let should_stop = stop_condition(&plan, &controls, &shared, sent_at_start, timed_out, &streak);
    let ctx = PhaseCtx {
        shared: shared.clone(),
        phase: plan.phase,
        phase_cancel,
        run_cancel: controls.cancel.subscribe(),
        should_stop: should_stop.clone(),
        claim: claim_fn(&shared, sent_at_start, plan.max_requests),
        streak: streak.clone(),
    };
    let sending_done = Arc::new(AtomicBool::new(false));
    match plan.load {
        LoadPattern::Closed { concurrency } => {
            spawn_workers(&ctx, &feed, concurrency, lead_in.as_ref(), &sending_done)
        }
        LoadPattern::Open { .. } | LoadPattern::Trace { .. } => spawn_dispatcher(
            &plan,
            phase_start,
            feed,
            ctx.clone(),
            controls.clone(),
            cpu,
            &sending_done,
        ),
    }
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let reason = wait_for_stop(&mut tick, &ctx, &controls, timed_out, &sending_done).await;
    let stopped_sending_at = clock.now();
    let cancelled = drain(
        &mut tick,
        &shared,
        &sending_done,
        reason,
        plan.grace,
        &phase_cancel_tx,
    )
    .await;
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

/// Whether the phase should stop sending: Ctrl-C, its request count or duration reached,
/// its own condition met (warm-up targets), or too many failures in a row.
fn stop_condition(
    plan: &PhasePlan,
    controls: &Controls,
    shared: &Shared,
    sent_at_start: u64,
    timed_out: impl Fn() -> bool + Send + Sync + 'static,
    streak: &Arc<FailureStreak>,
) -> Arc<dyn Fn() -> bool + Send + Sync> {
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
}

/// Claims a request slot of the phase (see [`claim_slot`]).
fn claim_fn(
    shared: &Shared,
    sent_at_start: u64,
    max: Option<u64>,
) -> Arc<dyn Fn() -> bool + Send + Sync> {
    let sent = shared.sent.clone();
    Arc::new(move || claim_slot(&sent, sent_at_start, max))
}

/// Closed loop: starts one worker per stream, each sending its next request as soon as its
/// last one ends (after its lead-in request, if any); `sending_done` is set once all stopped.
fn spawn_workers(
    ctx: &PhaseCtx,
    feed: &Feed,
    concurrency: u32,
    lead_in: Option<&LeadIn>,
    sending_done: &Arc<AtomicBool>,
) {
    let mut workers = tokio::task::JoinSet::new();
    let streams = concurrency.max(1);
    for k in 0..streams {
        let ctx = ctx.clone();
        let feed = feed.clone();
        let lead = lead_in.map(|l| (l.feed.clone(), l.wait(k, streams)));
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
                if session.is_empty() {
                    continue;
                }
                ctx.shared.in_flight.fetch_add(1, Ordering::AcqRel);
                run_session(&ctx, std::mem::take(&mut session), None, None, false).await;
            }
        });
    }
    let done = sending_done.clone();
    tokio::spawn(async move {
        while workers.join_next().await.is_some() {}
        done.store(true, Ordering::Release);
    });
}

/// Open loop (a seeded arrival plan, or a trace's timestamps): starts the dispatcher
/// thread; `sending_done` is set once it stopped.
fn spawn_dispatcher(
    plan: &PhasePlan,
    phase_start: Nanos,
    feed: Feed,
    ctx: PhaseCtx,
    controls: Controls,
    cpu: ThreadCpu,
    sending_done: &Arc<AtomicBool>,
) {
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
        LoadPattern::Closed { .. } => unreachable!("handled by the caller"),
    };
    let handle = Handle::current();
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
                ctx,
                controls,
                handle,
                slots,
            );
            done.store(true, Ordering::Release);
        })
        .expect("spawning the dispatcher thread");
}

/// Waits until sending stops (by the phase's own `should_stop` and failure streak), noting
/// why.
async fn wait_for_stop(
    tick: &mut Interval,
    ctx: &PhaseCtx,
    controls: &Controls,
    timed_out: impl Fn() -> bool,
    sending_done: &AtomicBool,
) -> StopReason {
    loop {
        tick.tick().await;
        if controls.stop_sending.load(Ordering::Acquire) || timed_out() {
            return StopReason::Timed;
        }
        if ctx.streak.gave_up().is_some() {
            return StopReason::GaveUp;
        }
        if sending_done.load(Ordering::Acquire) || (ctx.should_stop)() {
            return StopReason::Count;
        }
    }
}

/// Waits for what is in flight to end. After a timed stop (or giving up on failures),
/// in-flight requests get the grace period, then are cancelled: true when they were.
async fn drain(
    tick: &mut Interval,
    shared: &Shared,
    sending_done: &AtomicBool,
    reason: StopReason,
    grace: Duration,
    phase_cancel_tx: &watch::Sender<bool>,
) -> bool {
    let drain_start = Instant::now();
    let mut cancelled = false;
    while !sending_done.load(Ordering::Acquire)
        || shared.in_flight.load(Ordering::Acquire) > 0
        || shared.open_sessions.load(Ordering::Acquire) > 0
    {
        if reason != StopReason::Count && !cancelled && drain_start.elapsed() >= grace {
            phase_cancel_tx.send_replace(true);
            cancelled = true;
        }
        tick.tick().await;
    }
    cancelled
}
