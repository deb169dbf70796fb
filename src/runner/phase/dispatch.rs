//! The open loop's dispatcher: a thread of its own that follows the arrival schedule with
//! sub-millisecond precision and spawns each request on the runtime at its planned time.

use super::request::{run_session, PhaseCtx};
use super::Controls;
use crate::client::PreparedRequest;
use crate::clock::Nanos;
use crate::runner::feeder::Feed;
use crate::schedule::ArrivalPlan;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::Semaphore;

#[allow(clippy::too_many_arguments)]
pub(super) fn dispatch(
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
        let Some(session) = feed.next_blocking() else {
            return;
        };
        let Some(req) = session.first() else { continue };
        let offset = timing.offset_of(req, sharded, &mut consumed);
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
            run_session(&ctx2, session, Some(at), attempted, true).await;
            ctx2.shared.open_sessions.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Where open-loop send times come from.
pub(super) enum Timing {
    /// A seeded arrival process.
    Plan(Box<ArrivalPlan>),
    /// Each request's own trace timestamp, sped up by `speed`, relative to the first one.
    Trace { speed: f64, base_ms: Option<f64> },
}

impl Timing {
    /// When `req` is due, from the phase's start (`u64::MAX` past the plan's end). Scale-out
    /// (`sharded`): `consumed` counts the global schedule's arrivals taken so far.
    #[inline]
    fn offset_of(&mut self, req: &PreparedRequest, sharded: bool, consumed: &mut u64) -> Nanos {
        match self {
            Timing::Plan(plan) if sharded => {
                // This shard's request `id` goes at the global schedule's `id`-th time:
                // skip the times of the other shards' ordinals.
                let mut at = None;
                while *consumed <= req.id {
                    at = plan.next();
                    *consumed += 1;
                }
                at.unwrap_or(u64::MAX)
            }
            Timing::Plan(plan) => plan.next().unwrap_or(u64::MAX),
            Timing::Trace { speed, base_ms } => {
                let at = req.arrival_ms.unwrap_or(0.0);
                let base = *base_ms.get_or_insert(at);
                ((at - base).max(0.0) / speed.max(1e-9) * 1e6) as u64
            }
        }
    }
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
