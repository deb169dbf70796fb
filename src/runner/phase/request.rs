//! One request of a phase from start to record: timeout, the phase's and the run's
//! cancellation, retries by the policy; and what follows a request in a stream (a session's
//! later turns, a closed loop's lead-in).

use super::{FailureStreak, Shared};
use crate::client::{execute, Exchange, PreparedRequest};
use crate::clock::Nanos;
use crate::record::{FailureKind, Phase, RequestRecord};
use crate::runner::feeder::Feed;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

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
    ex.count_chunks_in(shared.chunks_received.clone());
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
        first_sent = first_sent.or_else(|| written_at(ex.record()));
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
        ex.count_chunks_in(shared.chunks_received.clone());
        ex.draft.record.queued_at = shared.clock.now();
    };
    ex.draft.record.retries = retries;
    if retries > 0 {
        start_at_first_attempt(&mut ex.draft.record, first_attempt, first_sent);
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

/// When a request's bytes went out: its first byte written and its last (T_submit, where
/// TTFT starts); `None` when nothing was written.
fn written_at(r: &RequestRecord) -> Option<(Nanos, Option<Nanos>)> {
    Some((r.sent_at?, r.body_sent_at))
}

/// A retried request's times are its first attempt's, so the whole wait is the user's: when
/// it was attempted, and when the first attempt that wrote its bytes wrote them (both ends,
/// so its upload is that attempt's, not the last attempt's end against the first's start).
fn start_at_first_attempt(
    r: &mut RequestRecord,
    attempted_at: Nanos,
    written: Option<(Nanos, Option<Nanos>)>,
) {
    r.queued_at = attempted_at;
    if let Some((sent_at, body_sent_at)) = written {
        r.sent_at = Some(sent_at);
        r.body_sent_at = body_sent_at;
    }
}

/// How long to wait before retrying a refused request, when the policy retries it:
/// its `Retry-After` (seconds) capped by the policy, or 0.5 s doubling per retry.
fn retry_wait(
    policy: &crate::client::RetryPolicy,
    r: &RequestRecord,
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
pub(super) fn claim_slot(sent: &AtomicU64, start: u64, max: Option<u64>) -> bool {
    let claimed = sent.fetch_add(1, Ordering::AcqRel) - start;
    if max.is_some_and(|m| claimed >= m) {
        sent.fetch_sub(1, Ordering::AcqRel);
        return false;
    }
    true
}

/// What each request task needs to know about its phase.
#[derive(Clone)]
pub(super) struct PhaseCtx {
    pub(super) shared: Shared,
    pub(super) phase: Phase,
    pub(super) phase_cancel: watch::Receiver<bool>,
    pub(super) run_cancel: watch::Receiver<bool>,
    pub(super) should_stop: Arc<dyn Fn() -> bool + Send + Sync>,
    pub(super) claim: Arc<dyn Fn() -> bool + Send + Sync>,
    pub(super) streak: Arc<FailureStreak>,
}

impl PhaseCtx {
    fn cancels(&self) -> (watch::Receiver<bool>, watch::Receiver<bool>) {
        (self.phase_cancel.clone(), self.run_cancel.clone())
    }

    /// Runs one request of the phase (see [`run_one`]) and notes its end in the phase's
    /// failure streak; true when it succeeded.
    pub(super) async fn send(
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

/// Runs a session whose first request's slot is claimed and counted in flight: its steps in
/// order, each step's branches at once (a fan-out), the next step once all of them ended
/// plus its tool and think time, while the phase goes on. A failed request abandons the
/// rest of the session after its step (as a user, or an agent, would). `scheduled_at` and
/// `attempted_at` belong to the first request; in open loop (`open_loop`) a later step's
/// planned time is the moment its wait ends, so any lateness still shows as send lag.
pub(super) async fn run_session(
    ctx: &PhaseCtx,
    session: Vec<PreparedRequest>,
    scheduled_at: Option<Nanos>,
    attempted_at: Option<Nanos>,
    open_loop: bool,
) {
    let mut steps = steps_of(session).into_iter();
    let Some(first) = steps.next() else { return };
    if !send_step(ctx, first, scheduled_at, attempted_at, true).await {
        return;
    }
    for step in steps {
        let wait_ms = step[0].tool_ms.max(0.0) + step[0].think_ms.max(0.0);
        let due = ctx.shared.clock.now() + (wait_ms * 1e6) as u64;
        if !wait_for_step(ctx, due).await {
            return;
        }
        if !send_step(ctx, step, open_loop.then_some(due), None, false).await {
            return;
        }
    }
}

/// How often a wait between steps looks whether the phase stopped sending (a request
/// count reached cancels nothing, and a recorded think time can be minutes).
const STOP_CHECK: std::time::Duration = std::time::Duration::from_millis(250);

/// Waits until `due` on the run clock; false when the phase stopped sending or was
/// cancelled meanwhile (the session then ends).
async fn wait_for_step(ctx: &PhaseCtx, due: Nanos) -> bool {
    let (mut phase_cancel, mut run_cancel) = ctx.cancels();
    let until = tokio::time::Instant::from(ctx.shared.clock.instant_at(due));
    loop {
        if (ctx.should_stop)() {
            return false;
        }
        let now = tokio::time::Instant::now();
        if now >= until {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(until.min(now + STOP_CHECK)) => {}
            _ = phase_cancel.wait_for(|c| *c) => return false,
            _ = run_cancel.wait_for(|c| *c) => return false,
        }
    }
}

/// A session's requests grouped by step (consecutive requests of one turn).
fn steps_of(session: Vec<PreparedRequest>) -> Vec<Vec<PreparedRequest>> {
    let mut out: Vec<Vec<PreparedRequest>> = Vec::new();
    for req in session {
        let turn = req.session.map(|s| s.1);
        match out.last_mut() {
            Some(step) if step[0].session.map(|s| s.1) == turn && turn.is_some() => step.push(req),
            _ => out.push(vec![req]),
        }
    }
    out
}

/// Sends one step's requests at once and waits for all of them; true when every one was
/// sent and succeeded. The first request's slot is already claimed and counted in flight
/// when `first_claimed`; every other one claims its own, and the step stops growing when
/// the phase stops sending.
async fn send_step(
    ctx: &PhaseCtx,
    step: Vec<PreparedRequest>,
    scheduled_at: Option<Nanos>,
    attempted_at: Option<Nanos>,
    first_claimed: bool,
) -> bool {
    let n = step.len();
    let mut branches = tokio::task::JoinSet::new();
    let mut all_sent = true;
    let mut lone = None;
    for (i, req) in step.into_iter().enumerate() {
        if !(i == 0 && first_claimed) {
            if (ctx.should_stop)() || !(ctx.claim)() {
                all_sent = false;
                break;
            }
            ctx.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        }
        let attempted = if i == 0 { attempted_at } else { None };
        if n == 1 {
            // The common case: no task to spawn.
            lone = Some(req);
            break;
        }
        let ctx = ctx.clone();
        branches.spawn(async move { ctx.send(req, scheduled_at, attempted).await });
    }
    if let Some(req) = lone {
        return ctx.send(req, scheduled_at, attempted_at).await;
    }
    let mut ok = all_sent;
    while let Some(r) = branches.join_next().await {
        ok &= r.unwrap_or(false);
    }
    ok
}

/// A stream's lead-in (see [`LeadIn`]): its share of the spread, then the first turn of one
/// session of the warm-up's stream, recorded as a warm-up request.
pub(super) async fn lead_in_request(ctx: &PhaseCtx, feed: &Feed, wait: Duration) {
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
