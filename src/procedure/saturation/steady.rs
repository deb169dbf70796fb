//! What a level's steady span reads: the span itself, the trend of the requests waiting
//! for a first token over it, and the output throughput it sustained.

use super::{QUEUE_ALPHA, QUEUE_BLOCKS};
use crate::procedure::arrivals;
use crate::record::{Phase, RequestRecord};
use crate::stats::trend::ols_slope;
use serde::{Deserialize, Serialize};

/// The in-flight trend over a level's steady window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QueueGrowth {
    /// Length of the steady window, s.
    pub window_s: f64,
    /// Time-averaged requests in flight over the window.
    pub mean_in_flight: f64,
    /// Fitted growth, requests per second.
    pub slope_per_s: f64,
    /// Two-sided p-value of the slope (t-test on the block means).
    pub p_value: f64,
    /// Fitted growth over the whole window, requests.
    pub growth: f64,
    pub growing: bool,
}

/// The steady part of a level, ns on the run clock: the run summary's steady span
/// ([`crate::metrics::summary::steady_span`]: the ramp-up skipped, to the last arrival), so
/// a level's verdict and its summary's steady rates read the same span.
pub fn steady_span(records: &[RequestRecord]) -> Option<(u64, u64)> {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    crate::metrics::summary::steady_span(&measured)
}

/// When a request arrived: its planned time (open loop), else when it was attempted.
fn arrive(r: &RequestRecord) -> u64 {
    crate::metrics::summary::arrived_at(r)
}

/// The trend of the requests waiting for their first token over a level's
/// [`steady_span`] (a request without one waits until it ends).
pub fn in_flight_growth(records: &[RequestRecord]) -> Option<QueueGrowth> {
    let (start, last) = steady_span(records)?;
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    let block_ns = (last - start) as f64 / QUEUE_BLOCKS as f64;
    let mut xs = Vec::with_capacity(QUEUE_BLOCKS);
    let mut ys = Vec::with_capacity(QUEUE_BLOCKS);
    for b in 0..QUEUE_BLOCKS {
        let lo = start as f64 + b as f64 * block_ns;
        let hi = lo + block_ns;
        // Time-average waiting = Σ overlap of [arrival, first token) with the block ÷ its
        // length.
        let busy: f64 = measured
            .iter()
            .map(|r| {
                let a = arrive(r) as f64;
                let f = (arrivals::first_token_or_end(r) as f64).max(a);
                (f.min(hi) - a.max(lo)).max(0.0)
            })
            .sum();
        xs.push((lo + block_ns / 2.0 - start as f64) / 1e9);
        ys.push(busy / block_ns);
    }
    let window_s = (last - start) as f64 / 1e9;
    let mean = ys.iter().sum::<f64>() / ys.len() as f64;
    let fit = ols_slope(&xs, &ys);
    let (slope, p) = match fit {
        Some(f) => (f.slope, f.p_value),
        // A perfectly flat (or perfectly straight) series: no residual to test against.
        None => flat_or_straight(&xs, &ys),
    };
    let growth = slope * window_s;
    Some(QueueGrowth {
        window_s,
        mean_in_flight: mean,
        slope_per_s: slope,
        p_value: p,
        growth,
        growing: slope > 0.0 && p < QUEUE_ALPHA && growth > material_growth(mean),
    })
}

/// The growth over the window that counts as "grows continuously" for a queue averaging
/// `mean` in flight: more than two requests, a quarter of the mean, and three times √mean
/// (a stable queue's count wanders by about √mean, as a Poisson count does, and ten block
/// means a few request-lengths apart are correlated enough to make such wanders look
/// significant at small counts).
pub fn material_growth(mean: f64) -> f64 {
    2.0_f64.max(0.25 * mean).max(3.0 * mean.max(0.0).sqrt())
}

/// Slope and p-value when least squares has no residual variance: a flat line (slope 0,
/// p = 1) or an exact line (its slope, p = 0).
fn flat_or_straight(xs: &[f64], ys: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    if sxx == 0.0 || sxy == 0.0 {
        (0.0, 1.0)
    } else {
        (sxy / sxx, 0.0)
    }
}

/// Output tokens received in each of `blocks` equal parts of `[from, to]` (every chunk at
/// its arrival, answer and reasoning, of completed measured requests), and the number of
/// those requests.
fn tokens_by_block(
    records: &[RequestRecord],
    from: u64,
    to: u64,
    blocks: usize,
) -> (Vec<u64>, usize) {
    let block_ns = (to - from) as f64 / blocks as f64;
    let mut tokens = vec![0u64; blocks];
    let mut n = 0;
    for r in records
        .iter()
        .filter(|r| r.phase == Phase::Measure && r.outcome.is_ok())
    {
        n += 1;
        for c in r.chunks.iter().chain(r.reasoning_chunks.iter()) {
            if c.at < from || c.at > to {
                continue;
            }
            let b = (((c.at - from) as f64 / block_ns) as usize).min(blocks - 1);
            tokens[b] += c.tokens as u64;
        }
    }
    (tokens, n)
}

/// Output throughput of the second half of the [`steady_span`] relative to its first
/// (+0.05 = 5 % higher), tokens by arrival; `None` without a steady span or with fewer
/// than 20 completed requests.
pub fn throughput_change(records: &[RequestRecord]) -> Option<f64> {
    let (from, to) = steady_span(records)?;
    let (t, n) = tokens_by_block(records, from, to, 2);
    (n >= 20 && t[0] > 0).then(|| t[1] as f64 / t[0] as f64 - 1.0)
}

/// The steady output throughput (tokens per second) with its 95 % interval, by batch
/// means: the [`steady_span`] cut into [`QUEUE_BLOCKS`] blocks, each block's rate the tokens
/// *received* in it over its length, then a Student-t interval of those ten rates. Tokens
/// by arrival rather than by completion, because completions come in lumps of a whole
/// answer; blocks rather than single tokens, because tokens close in time share the
/// server's state. Over the steady span only: the ramp-up and the drain after the last
/// arrival are not the level's load. `None` with fewer than 20 completed requests.
pub fn throughput_ci(records: &[RequestRecord]) -> Option<SteadyThroughput> {
    let (from, to) = steady_span(records)?;
    let (tokens, n) = tokens_by_block(records, from, to, QUEUE_BLOCKS);
    if n < 20 {
        return None;
    }
    let block_s = (to - from) as f64 / 1e9 / QUEUE_BLOCKS as f64;
    let rates: Vec<f64> = tokens.iter().map(|&t| t as f64 / block_s).collect();
    let ci = crate::stats::interval::mean_t_ci(&rates, 0.95)?;
    Some(SteadyThroughput {
        output_tokens_per_s: ci.mean,
        ci: (ci.lo, ci.hi),
        window_s: to.saturating_sub(from) as f64 / 1e9,
    })
}

/// Output throughput over a level's steady span.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SteadyThroughput {
    /// Mean over the blocks, tokens per second.
    pub output_tokens_per_s: f64,
    /// 95 % interval, tokens per second.
    pub ci: (f64, f64),
    /// Length of the steady span, s.
    pub window_s: f64,
}
