//! The span a summary's rates are counted over: the measurement window, its steady part,
//! and (open loop) whether completions kept up with the arrivals over it.

use crate::clock::Nanos;
use crate::record::RequestRecord;
use crate::stats::distribution::Distribution;
use serde::Serialize;

/// The measurement window: from the first measured request's attempt (its planned send time
/// in open loop) to the last byte of any measured request.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
pub struct Window {
    #[serde(skip)]
    pub start: Nanos,
    #[serde(skip)]
    pub end: Nanos,
    pub duration_s: f64,
}

/// Throughput over the steady part of the run: the load's own span, without its ramp-up
/// (the first 10 % of it, draft 5.2.3.2, or longer while the first requests fill the
/// server) and without the drain after the last arrival, when sending had stopped
/// ([`steady_span`]). Runs too short for that span count from the 10 % cut of the whole
/// window to its last byte (`basis` says which).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
pub struct SteadyState {
    /// From the first arrival to the start of the steady span, s.
    pub excluded_s: f64,
    /// Length of the span the steady rates are counted over, s.
    #[serde(default)]
    pub span_s: f64,
    /// What the span is: the load's steady span (to the last arrival), or the window after
    /// its first 10 % (a run too short or too bursty to have one).
    #[serde(default)]
    pub basis: SteadyBasis,
    pub output_tokens_per_s: f64,
    pub requests_per_s: f64,
    /// Prompt tokens per second whose prefill finished in the steady part (the request's
    /// first streamed token at or after the cut): the input rate over the same span as the
    /// output rate beside it.
    #[serde(default)]
    pub input_tokens_per_s: f64,
}

/// The span a [`SteadyState`] counts over.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SteadyBasis {
    /// From the ramp-up's end to the last arrival ([`steady_span`]).
    Arrivals,
    /// From 10 % of the window to its last byte, drain included (fewer than 20 requests,
    /// or a ramp-up longer than half the arrival span). Also what older run folders say.
    #[default]
    Window,
}

/// When a request arrived: its planned time (open loop), else when it began waiting for a
/// connection.
pub fn arrived_at(r: &RequestRecord) -> Nanos {
    r.scheduled_at.unwrap_or(r.queued_at)
}

/// The steady part of a run's load, ns on the run clock: from the first measured arrival
/// plus the larger of 10 % of the arrival span (the draft's 5.2.3.2) and the P90 duration
/// of the requests that arrived in the first fifth of the span (the time the in-flight
/// count needs to climb from zero), to the last arrival (after it, sending has stopped and
/// the load decays: the draft's throughput is "total output tokens divided by test
/// duration", the load's span). `None` with fewer than 20 measured requests, or when the
/// skip would leave less than half the span.
pub fn steady_span(measured: &[&RequestRecord]) -> Option<(Nanos, Nanos)> {
    if measured.len() < 20 {
        return None;
    }
    let first = measured.iter().map(|r| arrived_at(r)).min()?;
    let last = measured.iter().map(|r| arrived_at(r)).max()?;
    let skip = ramp_up_skip(measured.iter().copied(), first, last);
    if skip > (last - first) / 2 || last <= first + skip {
        return None;
    }
    Some((first + skip, last))
}

/// The ramp-up a steady span skips after the first arrival: the larger of 10 % of the
/// arrival span `first..last` and the P90 duration of the completed `records` that arrived
/// in its first fifth. They met no queue yet, so they say how long the in-flight count
/// takes to climb, where later requests of an overloaded run would say how long the queue
/// has grown. `records` may be a uniform sample of the run's (a streamed summary's).
pub fn ramp_up_skip<'a>(
    records: impl Iterator<Item = &'a RequestRecord>,
    first: Nanos,
    last: Nanos,
) -> Nanos {
    let early = first + (last - first) / 5;
    let mut durations: Vec<Nanos> = records
        .filter(|r| r.outcome.is_ok() && arrived_at(r) <= early)
        .map(|r| r.finished_at.saturating_sub(arrived_at(r)))
        .collect();
    durations.sort_unstable();
    let p90 = durations
        .get((durations.len() * 9 / 10).min(durations.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0);
    ((last - first) / 10).max(p90)
}

/// Open loop: did the server keep up with the arrivals (draft 5.2.3.1)?
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct ArrivalBalance {
    /// Planned arrivals per second over the steady part of the arrival span.
    pub arrival_rate_per_s: f64,
    /// Completions per second over the same span.
    pub completion_rate_per_s: f64,
    /// completion / arrival; below 0.9 the draft calls the server saturated. `None` when the
    /// run was too short compared with its latency to tell (arrival span < 3× the shortest
    /// E2E, the latency without queueing).
    pub completion_share: Option<f64>,
    pub saturated: bool,
}

/// The measurement window of `measured`: first attempt to last byte.
pub fn window_of(measured: &[&RequestRecord]) -> Window {
    let start = measured.iter().map(|r| r.attempted_at()).min().unwrap_or(0);
    let end = measured
        .iter()
        .map(|r| r.finished_at.max(r.attempted_at()))
        .max()
        .unwrap_or(0);
    Window {
        start,
        end,
        duration_s: end.saturating_sub(start) as f64 / 1e9,
    }
}

/// Arrivals against completions over the steady part of an open-loop run's arrival span
/// (draft 5.2.3.1: completion rate below 90 % of the arrival rate means saturation).
pub(super) fn arrival_balance(
    measured: &[&RequestRecord],
    e2e: Option<Distribution>,
) -> Option<ArrivalBalance> {
    let planned: Vec<Nanos> = measured.iter().filter_map(|r| r.scheduled_at).collect();
    if planned.len() < 10 || planned.len() != measured.len() {
        return None;
    }
    let first = *planned.iter().min()?;
    let last = *planned.iter().max()?;
    let cut = first + (last - first) / 10;
    let span_s = (last - cut) as f64 / 1e9;
    if span_s <= 0.0 {
        return None;
    }
    let arrivals = planned.iter().filter(|&&t| t >= cut && t <= last).count();
    let completions = measured
        .iter()
        .filter(|r| r.outcome.is_ok() && r.finished_at >= cut && r.finished_at <= last)
        .count();
    Some(balance_from(
        arrivals as f64,
        completions as f64,
        span_s,
        e2e,
    ))
}

/// The arrival balance from the arrivals and completions counted over the steady part of
/// the arrival span (`span_s` long).
pub(crate) fn balance_from(
    arrivals: f64,
    completions: f64,
    span_s: f64,
    e2e: Option<Distribution>,
) -> ArrivalBalance {
    let arrival_rate = arrivals / span_s;
    let completion_rate = completions / span_s;
    // Completions trail arrivals by a request's latency: over a span not much longer than
    // that, a server that keeps up would still look short. The shortest E2E stands for the
    // latency without queueing (a saturated server's median grows with the run).
    let long_enough = e2e.is_some_and(|d| span_s * 1e3 >= 3.0 * d.min)
        || (e2e.is_none() && completions == 0.0 && span_s >= 10.0);
    let share = (long_enough && arrival_rate > 0.0).then(|| completion_rate / arrival_rate);
    ArrivalBalance {
        arrival_rate_per_s: arrival_rate,
        completion_rate_per_s: completion_rate,
        completion_share: share,
        saturated: share.is_some_and(|s| s < 0.9),
    }
}
