//! Runs a phase: starts the closed loop's workers or the open loop's dispatcher, watches for
//! the first limit reached, then drains what is in flight (grace, then cancel).

use super::dispatch::{dispatch, Timing};
use super::request::{claim_slot, follow_up_turns, lead_in_request, PhaseCtx};
use super::{Controls, FailureStreak, PhaseEnd, PhasePlan, Shared, LEAD_IN_MAX};
use crate::config::LoadPattern;
use crate::runner::cpu::ThreadCpu;
use crate::runner::feeder::Feed;
use crate::schedule::ArrivalPlan;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::{watch, Semaphore};

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
