//! The draft's "completion rate below 90 % of the arrival rate" (5.2.3.1), read per arrival:
//! the requests that arrived in a level's steady span, followed to their own ends, and the
//! rate the server completed *them* at against the rate they came; and, over the whole
//! level, what it completed of what it offered ([`offered`]).
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
//! How late they completed: the wait of each completed arrival for its first token (planned
//! send to the first streamed token) is fitted against its planned send time by least
//! squares. A server that keeps up has waits without a trend; one that falls behind
//! completes the arrivals of T seconds over T·(1 + b) seconds when their waits grow by b
//! seconds per second (the rest of a request, its answer, takes as long early or late). The
//! wait rather than the whole delay, because the answer's length is noise in that fit: with
//! Synthetic-Skewed outputs of 16 to 2,048 tokens the delays of a few dozen arrivals scatter
//! by seconds and their slope says nothing. So the arrivals' completion rate over their
//! arrival rate is
//!
//! ```text
//! ratio = completed ÷ (completed + failed + late) ÷ (1 + max(b₉₅, 0))
//! ```
//!
//! with b₉₅ the one-sided 95 % lower bound of the slope (the slope less Student's t(0.95,
//! n − 2) standard errors): a level falls short when its waits grow *with confidence*, not
//! when a few dozen Poisson arrivals happened to bunch at its end. Below 90 % the server
//! did not keep up. The reference latency per output token is the P99 at the procedure's
//! concurrency-1 level; without one (levels that run before or without it), the level's own
//! fastest completed request stands in, as the latency without queueing.
//!
//! What the level sustained ([`ArrivalOutcomes::sustained_rate_per_s`]) is the rate its
//! steady arrivals came at (planned sends, not the rate asked: a seeded Poisson schedule of
//! n arrivals is off by about 1/√n) times the share completed at that rate (with the slope
//! itself): a level that passed while the server completed less than it was offered reports
//! what the server completed.

use super::saturation::{steady_span, BLOWUP_FACTOR};
use crate::clock::Nanos;
use crate::metrics::request::latencies;
use crate::record::{FailureKind, Phase, RequestRecord};
use crate::stats::trend::ols_slope;
use serde::{Deserialize, Serialize};

/// Fewer planned arrivals than this give no reading.
pub const MIN_ARRIVALS: usize = 10;
/// Blocks the steady arrivals' waits are averaged in for the block-means fit.
pub const WAIT_BLOCKS: usize = 10;
/// A level that completed less than this share of the requests it offered (and that were
/// due) fell far short of its offered rate ([`offered`]).
pub const OFFERED_SHARE: f64 = 0.75;

/// How the arrivals of a level's steady span ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// How fast the completed arrivals' wait for their first token (planned send to the
    /// first streamed token) grew with their planned send time, s per s (least squares);
    /// `None` with fewer than [`MIN_ARRIVALS`] completed.
    pub delay_growth: Option<f64>,
    /// Its one-sided 95 % lower bound (the slope less t(0.95, n − 2) standard errors): the
    /// growth the completion ratio is judged with.
    #[serde(default)]
    pub delay_growth_low: Option<f64>,
    /// The planned sends the wait growth was fitted over: from the first completed steady
    /// arrival's to the last's, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_span_s: Option<f64>,
    /// The one-sided 95 % lower bound of the waits' growth fitted on the means of
    /// [`WAIT_BLOCKS`] equal blocks of the steady arrivals (in order of planned send), s per
    /// s: consecutive waits in a queue are correlated, so a fit on each of them has too
    /// small an error; the block means are nearly independent. What "waits that never
    /// settle" is judged with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_block_growth_low: Option<f64>,
    /// The rate the steady span's arrivals were planned at: arrivals − 1 over the time from
    /// the first to the last, requests per second; `None` with fewer than two.
    #[serde(default)]
    pub arrival_rate_per_s: Option<f64>,
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
    /// the lower bound of the wait growth, when positive). `None` when no arrival was
    /// decided.
    pub fn completion_ratio(&self) -> Option<f64> {
        let growth = self
            .delay_growth_low
            .or(self.delay_growth)
            .unwrap_or(0.0)
            .max(0.0);
        self.share().map(|s| s / (1.0 + growth))
    }

    /// What the level sustained, requests per second: the steady arrivals' planned rate
    /// times the share completed at that rate, [`share`](Self::share) ÷ (1 + the wait
    /// growth, when positive), at most 1. `None` without an arrival rate or a decided
    /// arrival.
    pub fn sustained_rate_per_s(&self) -> Option<f64> {
        let growth = self.delay_growth.unwrap_or(0.0).max(0.0);
        let kept = (self.share()? / (1.0 + growth)).min(1.0);
        self.arrival_rate_per_s.map(|r| r * kept)
    }

    /// How much the waits grew over the span they were fitted on at least (the block
    /// means' lower bound of the growth times the span), s; `None` without a fit.
    pub fn wait_rise_low_s(&self) -> Option<f64> {
        Some(self.wait_block_growth_low? * self.delay_span_s?)
    }
}

/// What a whole level completed of what it offered (open loop): every measured arrival,
/// from the first planned send to the last, by how it ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OfferedBalance {
    /// Measured open-loop arrivals of the level.
    pub offered: u64,
    /// Of those, completed (the drain and grace included).
    pub completed: u64,
    /// Cancelled at the level's end before they had waited as long as their whole answer
    /// takes alone (the reference latency per output token × their `max_tokens`): not yet
    /// due, left out.
    pub not_due: u64,
}

impl OfferedBalance {
    /// Arrivals the server was due to have completed: offered less not yet due.
    pub fn due(&self) -> u64 {
        self.offered.saturating_sub(self.not_due)
    }

    /// Completed ÷ due, 0-1; `None` when none was due.
    pub fn share(&self) -> Option<f64> {
        let due = self.due();
        (due > 0).then(|| self.completed as f64 / due as f64)
    }
}

/// When an open-loop request was planned to be sent (else when it was attempted).
fn planned(r: &RequestRecord) -> Nanos {
    r.scheduled_at.unwrap_or(r.queued_at)
}

/// When a request's wait ended: its first streamed token (answer or reasoning), else its end.
pub fn first_token_or_end(r: &RequestRecord) -> Nanos {
    match (r.first_token_at(), r.first_reasoning_at()) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => r.finished_at,
    }
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

/// The measured records of an open-loop level; `None` when some has no planned send (closed
/// loop) or there are none.
fn open_loop_measured(records: &[RequestRecord]) -> Option<Vec<&RequestRecord>> {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    (!measured.is_empty() && measured.iter().all(|r| r.scheduled_at.is_some())).then_some(measured)
}

/// The reference latency per output token, ms: the caller's when usable, else the level's
/// fastest completed request's.
fn reference_or_fastest(reference: Option<f64>, measured: &[&RequestRecord]) -> Option<f64> {
    reference
        .filter(|v| v.is_finite() && *v > 0.0)
        .or_else(|| fastest_ms_per_token(measured))
}

/// Judges each arrival of the steady span (see the module documentation).
/// `reference_ms_per_token`: the P99 end-to-end latency per output token at the lowest
/// load. `None` in closed loop (some measured request has no planned send time) or with
/// fewer than [`MIN_ARRIVALS`] measured requests.
pub fn judge(
    records: &[RequestRecord],
    reference_ms_per_token: Option<f64>,
) -> Option<ArrivalOutcomes> {
    let measured = open_loop_measured(records)?;
    if measured.len() < MIN_ARRIVALS {
        return None;
    }
    let first = measured.iter().map(|r| planned(r)).min()?;
    let last = measured.iter().map(|r| planned(r)).max()?;
    // The other signals' steady span when there is one (past the ramp-up, while the batch
    // fills and delays rise for that reason alone); else the draft's 10 %.
    let cut = steady_span(records).map_or(first + (last - first) / 10, |(from, _)| from);
    let bound = reference_or_fastest(reference_ms_per_token, &measured).map(|v| BLOWUP_FACTOR * v);
    let mut out = ArrivalOutcomes {
        bound_ms_per_token: bound,
        ..Default::default()
    };
    // Planned send (x) and wait for the first token (y) of each completed arrival, s.
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let mut sends: Vec<Nanos> = Vec::new();
    for r in measured.iter().filter(|r| planned(r) >= cut) {
        out.arrivals += 1;
        sends.push(planned(r));
        match r.outcome.failure_kind() {
            None => {
                out.completed += 1;
                xs.push(planned(r).saturating_sub(first) as f64 / 1e9);
                ys.push(first_token_or_end(r).saturating_sub(planned(r)) as f64 / 1e9);
            }
            Some(FailureKind::Cancelled) if is_late(r, bound) => out.late += 1,
            Some(FailureKind::Cancelled) => out.unresolved += 1,
            Some(_) => out.failed += 1,
        }
    }
    out.arrival_rate_per_s = rate_of(&sends);
    if xs.len() >= MIN_ARRIVALS {
        if let Some(f) = ols_slope(&xs, &ys) {
            out.delay_growth = Some(f.slope);
            out.delay_growth_low = Some(lower_bound(f.slope, f.std_error, f.n));
            let (lo, hi) = xs
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
            out.delay_span_s = Some(hi - lo);
            out.wait_block_growth_low = block_growth_low(&xs, &ys);
        }
    }
    Some(out)
}

/// The one-sided 95 % lower bound of the slope of `ys` on `xs` fitted on the means of
/// [`WAIT_BLOCKS`] consecutive blocks of equal count (the points in order of `xs`); `None`
/// with fewer than two points a block.
fn block_growth_low(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let mut points: Vec<(f64, f64)> = xs.iter().copied().zip(ys.iter().copied()).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let per = points.len() / WAIT_BLOCKS;
    if per < 2 {
        return None;
    }
    let (mut bx, mut by) = (Vec::new(), Vec::new());
    for k in 0..WAIT_BLOCKS {
        let end = if k + 1 == WAIT_BLOCKS {
            points.len()
        } else {
            (k + 1) * per
        };
        let block = &points[k * per..end];
        let n = block.len() as f64;
        bx.push(block.iter().map(|p| p.0).sum::<f64>() / n);
        by.push(block.iter().map(|p| p.1).sum::<f64>() / n);
    }
    let f = ols_slope(&bx, &by)?;
    Some(lower_bound(f.slope, f.std_error, f.n))
}

/// Events per second: the events after the first over the time from the first to the last;
/// `None` with fewer than two or no span.
fn rate_of(times: &[Nanos]) -> Option<f64> {
    let first = *times.iter().min()?;
    let last = *times.iter().max()?;
    (times.len() >= 2 && last > first)
        .then(|| (times.len() - 1) as f64 / ((last - first) as f64 / 1e9))
}

/// The one-sided 95 % lower bound of a least-squares slope from `n` points.
fn lower_bound(slope: f64, std_error: f64, n: usize) -> f64 {
    if !(std_error > 0.0 && std_error.is_finite()) || n < 3 {
        return slope;
    }
    let t = crate::stats::dist::student_t_quantile(0.95, (n - 2) as f64).unwrap_or(1.645);
    slope - t * std_error
}

/// What the whole level completed of what it offered ([`OfferedBalance`]); `None` in closed
/// loop or without measured requests. A server that keeps up completes nearly every
/// arrival within the level and its grace; one far past capacity completes what it can in
/// that time, a share of what came. `reference_ms_per_token`: as for [`judge`].
pub fn offered(
    records: &[RequestRecord],
    reference_ms_per_token: Option<f64>,
) -> Option<OfferedBalance> {
    let measured = open_loop_measured(records)?;
    let per_token = reference_or_fastest(reference_ms_per_token, &measured);
    let mut out = OfferedBalance::default();
    for r in &measured {
        out.offered += 1;
        match r.outcome.failure_kind() {
            None => out.completed += 1,
            Some(FailureKind::Cancelled) if !is_due(r, per_token) => out.not_due += 1,
            Some(_) => {}
        }
    }
    Some(out)
}

/// Whether a cancelled arrival had waited at least as long as its whole answer takes alone
/// (`per_token` × its `max_tokens`); without a reference every arrival is due.
fn is_due(r: &RequestRecord, per_token: Option<f64>) -> bool {
    let Some(per_token) = per_token else {
        return true;
    };
    let waited_ms = r.finished_at.saturating_sub(planned(r)) as f64 / 1e6;
    waited_ms >= per_token * r.max_tokens.max(1) as f64
}

#[cfg(test)]
pub(crate) mod tests;
