//! The confidence interval of every headline percentile (TTFT, TPOT, ITL, end to end), so a
//! P99 of 200 requests is not read as exact.
//!
//! TTFT, TPOT and end-to-end latency have one value per request and take the wider of the
//! order-statistic interval and Woodruff's with requests sent in the same block of time as
//! clusters (they share the queue); ITL has many values per request, which share the
//! request's pace and, with every other running request, the server's step, and takes
//! Woodruff's interval with two-way clusters, by request and by block of time
//! ([`crate::stats::percentile_bounds`]). The window is cut into [`TIME_BLOCKS`] blocks. The streamed summary of a long run bounds its
//! per-request figures at the order statistics of the whole run, read from its sketches,
//! and its ITL from the seeded sample of requests it keeps, which can only widen that
//! interval (fewer requests than the run had).

use super::RequestMetrics;
use crate::clock::Nanos;
use crate::record::RequestRecord;
use crate::stats::percentile_bounds::{order_statistic_ranks, Bound, REPORTED_PERCENTILES};
use crate::stats::percentile_bounds::{Clustered, PercentileBounds, DEFAULT_CONFIDENCE};
use crate::stats::sketch::Sketch;
use serde::{Deserialize, Serialize};

/// The intervals of a summary's headline percentiles, in ms; absent for a metric with no
/// values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SummaryBounds {
    /// Two-sided confidence of every interval (0–1), `--confidence`.
    pub confidence: f64,
    /// TTFT's percentiles, ms: one value per request.
    pub ttft_ms: Option<PercentileBounds>,
    /// TPOT's percentiles, ms: one value per request.
    pub tpot_ms: Option<PercentileBounds>,
    /// ITL's percentiles, ms: the gaps between tokens, clustered by request and by block of
    /// time (Woodruff's interval), not taken as independent.
    pub itl_ms: Option<PercentileBounds>,
    /// End-to-end latency's percentiles, ms: one value per request.
    pub e2e_ms: Option<PercentileBounds>,
}

impl Default for SummaryBounds {
    fn default() -> Self {
        Self {
            confidence: DEFAULT_CONFIDENCE,
            ttft_ms: None,
            tpot_ms: None,
            itl_ms: None,
            e2e_ms: None,
        }
    }
}

/// A summary's metric that carries bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounded {
    Ttft,
    Tpot,
    Itl,
    E2e,
}

impl SummaryBounds {
    /// The bound on `percentile` (0–100, one of the reported five) of `metric`.
    pub fn of(&self, metric: Bounded, percentile: f64) -> Option<Bound> {
        let b = match metric {
            Bounded::Ttft => self.ttft_ms,
            Bounded::Tpot => self.tpot_ms,
            Bounded::Itl => self.itl_ms,
            Bounded::E2e => self.e2e_ms,
        };
        b?.at(percentile)
    }
}

/// Blocks of time the measured window is cut into for the two-way clusters: enough for the
/// variance of a share to be estimated (about 50 degrees of freedom), few enough that each
/// block spans many engine steps and the queue's swings.
pub const TIME_BLOCKS: u64 = 50;

/// The most ITL values the bounds are computed from (about 100 MB of working memory: the
/// values, a sorted copy, their cluster numbers and the cells' map).
pub const MAX_ITL_VALUES: usize = 1 << 21;

/// The block of time `at` (ns) falls in, of [`TIME_BLOCKS`] over `start..end`.
fn block_of(at: Nanos, start: Nanos, end: Nanos) -> u32 {
    let span = end.saturating_sub(start).max(1);
    let i = at.saturating_sub(start).saturating_mul(TIME_BLOCKS) / span;
    i.min(TIME_BLOCKS - 1) as u32
}

/// One figure per request: the wider of the order-statistic interval and the two-way one
/// (requests sent in the same moment share the queue).
fn one_per_request(values: Vec<Clustered>, confidence: f64) -> Option<PercentileBounds> {
    let mut sorted: Vec<f64> = values.iter().map(|v| v.value).collect();
    sorted.sort_unstable_by(f64::total_cmp);
    let exact = PercentileBounds::independent(&sorted, confidence)?;
    let shared = PercentileBounds::two_way(&sorted, &values, confidence)?;
    Some(exact.widest(shared))
}

/// The bounds of an exact summary over the `measured` requests that completed (those with
/// figures in `per_request`, in the same order), in the measured `window`.
pub(super) fn exact(
    measured: &[&RequestRecord],
    per_request: &[Option<RequestMetrics>],
    window: &super::Window,
    confidence: f64,
) -> SummaryBounds {
    let (start, end) = (window.start, window.end);
    let requests: Vec<(&RequestRecord, &RequestMetrics)> = measured
        .iter()
        .zip(per_request)
        .filter_map(|(r, m)| m.as_ref().map(|m| (*r, m)))
        .collect();
    let sent = |r: &RequestRecord| r.sent_at.unwrap_or_else(|| r.attempted_at());
    let one = |i: usize, r: &RequestRecord, value: f64| Clustered {
        value,
        request: i as u32,
        block: block_of(sent(r), start, end),
    };
    let of = |pick: &dyn Fn(&RequestRecord, &RequestMetrics) -> Option<f64>| {
        let values: Vec<Clustered> = requests
            .iter()
            .enumerate()
            .filter_map(|(i, (r, m))| pick(r, m).filter(|v| v.is_finite()).map(|v| one(i, r, v)))
            .collect();
        one_per_request(values, confidence)
    };
    // Each token's gap in the block of the moment it arrived: the request's first token,
    // then the gaps summed. Past MAX_ITL_VALUES, every k-th request only (a smaller sample:
    // a wider interval, never a narrower one), so the bounds of a run of long answers cost
    // a bounded memory.
    let tokens: usize = requests.iter().map(|(_, m)| m.itl_ms.len()).sum();
    let every = tokens.div_ceil(MAX_ITL_VALUES).max(1);
    let mut itl = Vec::new();
    for (i, (r, m)) in requests.iter().enumerate().step_by(every) {
        let mut at = sent(r) as f64 + m.ttft_ms * 1e6;
        for &gap in m.itl_ms.iter().filter(|g| g.is_finite()) {
            at += gap * 1e6;
            itl.push(Clustered {
                value: gap,
                request: i as u32,
                block: block_of(at as Nanos, start, end),
            });
        }
    }
    let mut itl_sorted: Vec<f64> = itl.iter().map(|v| v.value).collect();
    itl_sorted.sort_unstable_by(f64::total_cmp);
    SummaryBounds {
        confidence,
        ttft_ms: of(&|r, m| (r.items == 0).then_some(m.ttft_ms)),
        tpot_ms: of(&|_, m| m.tpot_ms),
        itl_ms: PercentileBounds::two_way(&itl_sorted, &itl, confidence),
        e2e_ms: of(&|_, m| Some(m.e2e_ms)),
    }
}

/// The order-statistic bounds of a sketched sample: the values at the ranks the binomial
/// gives for the whole count, read from the sketch (within its relative error).
pub fn from_sketch(sketch: &Sketch, confidence: f64) -> Option<PercentileBounds> {
    let n = sketch.count() as usize;
    if n == 0 {
        return None;
    }
    // The value of the 1-based order statistic `r`: the type-7 percentile at its rank.
    let at_rank = |r: usize| sketch.percentile(100.0 * (r - 1) as f64 / (n - 1).max(1) as f64);
    // Each order statistic is read within the sketch's relative error: the bounds are
    // moved out by it, so reading them never narrows the interval.
    let error = crate::stats::sketch::RELATIVE_ERROR;
    let bound = |p: f64| {
        let estimate = sketch.percentile(p);
        let (l, u) = order_statistic_ranks(n, p / 100.0, confidence);
        Bound {
            lo: l.map(|l| (at_rank(l) * (1.0 - error)).min(estimate)),
            hi: u.map(|u| (at_rank(u) * (1.0 + error)).max(estimate)),
        }
    };
    let [p50, p90, p95, p99, p999] = REPORTED_PERCENTILES.map(bound);
    Some(PercentileBounds {
        p50,
        p90,
        p95,
        p99,
        p999,
    })
}
