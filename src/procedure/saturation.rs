//! The draft's saturation signals (5.2.3.1), read on a level's steady window (5.2.3.2: the
//! first 10 % excluded), each reported separately so a reader knows which one fired.
//!
//! - **Queue growth.** The requests waiting for their first token (sent, no token streamed
//!   yet) are the server's queue, and the prefills in progress (open loop: nothing holds
//!   requests back). Not the whole in-flight count: that is the queue plus the batch, and the
//!   batch of a server that keeps up is the arrival rate times the answer's length, so with
//!   answers of a few seconds it rose with every stretch of a seeded Poisson schedule that
//!   came a little faster, and a level at half of capacity "grew". The waiting count's time
//!   average over ten equal blocks of the steady window (here: past the first 10 % *and*
//!   past the P90 request duration, the time the count needs to climb from zero) is fitted
//!   with a least-squares line; the queue grows when the slope
//!   is positive with p < 0.01 *and* the growth over the window is material (see
//!   [`material_growth`]). Ten block means rather than raw samples,
//!   because in-flight counts a second apart are strongly correlated and a t-test on them
//!   would call every wobble growth; the materiality bound keeps a statistically clear but
//!   tiny drift from counting as "grows continuously". Where the server's `/metrics` gives a
//!   waiting-queue gauge, its trend is a second, server-side reading of the same signal.
//! - **Completions short of arrivals** (open loop): the requests that arrived in the steady
//!   part of the arrival span, each followed to its own end, completed at below 90 % of
//!   the rate they came: the share of them completed, divided by 1 + the growth of their
//!   delays (s per s) ([`super::arrivals`]: completions trail arrivals by the request
//!   latency, so two counts over one span call a server with long requests saturated).
//!   Requests the benchmark cancelled when the level ended count against the server only
//!   when they had already waited past the blow-up bound for their answer. The rate is
//!   judged with the one-sided 95 % lower bound of the waits' growth, so a few dozen
//!   arrivals that bunched at a short level's end are not a shortfall.
//! - **Completions far short of what was offered** (open loop, [`arrivals::offered`]): the
//!   whole level completed less than 75 % of its arrivals that were due (every arrival but
//!   those cancelled before they had waited as long as their answer takes alone). A slow
//!   server far past capacity completes what it can in the level and its grace, a fraction
//!   of what came, while too few of its requests complete for the other signals to fire.
//! - **Latency blow-up**: the level's P99 end-to-end latency *per output token* above 10×
//!   the P99 of the same figure at the lowest load (the procedure's concurrency-1 reference
//!   level). Per output token, because a whole request's latency grows with its answer:
//!   with Synthetic-Skewed outputs (LogNormal(4.5, 1.2)) P99 ÷ P50 of end-to-end latency is
//!   about 16 with no load at all, so a P99 against ten times the low-load P50 fired on an
//!   idle server. The same percentile at low load, because a tail compared with a median
//!   calls the workload's own spread saturation. Not TTFT: at low load a TTFT can be a single
//!   short prefill step, and waiting for one batch step already multiplies it several times
//!   while the server still has capacity to spare (on the simulator's prefill-first preset,
//!   P99 TTFT passed 10× its isolated P50 at 57 % of capacity). With fixed output lengths the
//!   reading is the old end-to-end one (every figure divided by the same count), so ten times
//!   is still a queue nine requests deep; with skewed lengths the tail is the short answers,
//!   and ten times their per-token latency is a wait of nine times their service.

use super::arrivals::{self, ArrivalOutcomes};
use crate::metrics::RunSummary;
use crate::record::{Phase, RequestRecord};
use crate::report::RunReport;
use crate::stats::trend::ols_slope;
use serde::{Deserialize, Serialize};

/// Blocks the steady window is cut into for the queue trend.
pub const QUEUE_BLOCKS: usize = 10;
/// Significance of the queue slope.
pub const QUEUE_ALPHA: f64 = 0.01;
/// Arrivals completed below this share signal saturation.
pub const COMPLETION_SHARE: f64 = 0.9;
pub use super::arrivals::OFFERED_SHARE;
/// A P99 latency per output token above this multiple of the reference's P99 signals
/// saturation.
pub const BLOWUP_FACTOR: f64 = 10.0;

/// The in-flight trend over a level's steady window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Which signals fired at a level, with the figures behind each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    /// The client's in-flight count grew over the steady window.
    pub queue_growth: bool,
    /// The server's waiting-queue gauge grew (its `/metrics`).
    pub server_queue_growth: bool,
    /// The steady span's arrivals, each followed to its end, completed at below 90 % of
    /// the rate they came.
    pub completion_shortfall: bool,
    /// P99 latency per output token above 10× the reference's P99.
    pub latency_blowup: bool,
    /// The level completed less than 75 % of the arrivals it offered that were due.
    #[serde(default)]
    pub offered_shortfall: bool,
    /// What the whole level completed of what it offered (open loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered: Option<super::arrivals::OfferedBalance>,
    /// The in-flight trend (open loop).
    pub queue: Option<QueueGrowth>,
    /// The steady span's arrivals' completion rate over their arrival rate
    /// ([`ArrivalOutcomes::completion_ratio`]; open loop).
    pub completion_share: Option<f64>,
    /// How the steady span's arrivals ended (open loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<ArrivalOutcomes>,
    pub ttft_p99_ms: Option<f64>,
    /// P99 end-to-end latency, ms.
    pub e2e_p99_ms: Option<f64>,
    /// P99 end-to-end latency per output token, ms (the blow-up reading).
    #[serde(default)]
    pub ms_per_token_p99: Option<f64>,
    /// The reference the blow-up is judged against: the P99 end-to-end latency per output
    /// token at the lowest load, ms.
    #[serde(default)]
    pub reference_ms_per_token_p99: Option<f64>,
    /// Output throughput of the steady span's second half relative to its first
    /// (+0.05 = 5 % higher).
    pub steady_throughput_change: Option<f64>,
    /// Output throughput over the steady span with its 95 % interval (batch means of
    /// tokens received).
    pub steady_throughput: Option<SteadyThroughput>,
    /// Names of the signals that fired, in words.
    pub fired: Vec<String>,
}

impl Signals {
    /// True when any signal fired.
    pub fn any(&self) -> bool {
        !self.fired.is_empty()
    }

    /// Whether the steady span decided too few arrivals to judge the level by (fewer than
    /// [`arrivals::MIN_ARRIVALS`] completed, failed or late; no reading at all in closed
    /// loop or on a level of fewer than that many requests).
    pub fn too_few_to_judge(&self) -> bool {
        self.arrivals
            .is_none_or(|a| a.completed + a.failed + a.late < arrivals::MIN_ARRIVALS as u64)
    }

    /// "stable" or "growing", the draft's queue growth indicator (5.3.4).
    pub fn queue_indicator(&self) -> &'static str {
        if self.queue_growth || self.server_queue_growth {
            "growing"
        } else {
            "stable"
        }
    }
}

/// The steady part of a level, ns on the run clock: from the first measured arrival plus
/// the larger of 10 % of the arrival span (the draft's 5.2.3.2) and the P90 duration of
/// the requests that arrived in the first fifth of the span (the time the in-flight count
/// needs to climb from zero), to the last arrival
/// (after it, sending has stopped and the load decays). `None` with fewer than 20 measured
/// requests, or when the skip would leave less than half the span.
pub fn steady_span(records: &[RequestRecord]) -> Option<(u64, u64)> {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    if measured.len() < 20 {
        return None;
    }
    let first = measured.iter().map(|r| arrive(r)).min()?;
    let last = measured.iter().map(|r| arrive(r)).max()?;
    // Durations of the requests that arrived first (the first fifth of the span): they met
    // no queue yet, so they say how long the count takes to climb, where later requests of
    // an overloaded level would say how long the queue has grown.
    let early = first + (last - first) / 5;
    let mut durations: Vec<u64> = measured
        .iter()
        .filter(|r| r.outcome.is_ok() && arrive(r) <= early)
        .map(|r| r.finished_at.saturating_sub(arrive(r)))
        .collect();
    durations.sort_unstable();
    let p90 = durations
        .get((durations.len() * 9 / 10).min(durations.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0);
    let skip = ((last - first) / 10).max(p90);
    if skip > (last - first) / 2 || last <= first + skip {
        return None;
    }
    Some((first + skip, last))
}

/// When a request arrived: its planned time (open loop), else when it was attempted.
fn arrive(r: &RequestRecord) -> u64 {
    r.scheduled_at.unwrap_or(r.queued_at)
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyThroughput {
    /// Mean over the blocks, tokens per second.
    pub output_tokens_per_s: f64,
    /// 95 % interval, tokens per second.
    pub ci: (f64, f64),
    /// Length of the steady span, s.
    pub window_s: f64,
}

/// Evaluates every signal at one level. `reference_ms_per_token_p99`: the P99 end-to-end
/// latency per output token at the lowest load (`None`: the blow-up signal is not
/// evaluated, and [`arrivals::judge`] uses the level's fastest request). `open_loop`: queue
/// growth and the completion balance only mean something when arrivals do not wait for
/// completions.
pub fn signals(
    report: &RunReport,
    records: &[RequestRecord],
    reference_ms_per_token_p99: Option<f64>,
    open_loop: bool,
) -> Signals {
    let mut out = evaluate(
        &report.summary,
        records,
        reference_ms_per_token_p99,
        open_loop,
    );
    if let Some(q) = report
        .telemetry
        .server
        .as_ref()
        .and_then(|w| w.queue.as_ref())
    {
        // A server-side queue that grows while the client holds concurrency fixed is still
        // a queue that grows; in closed loop it settles instead, so this fires in open loop.
        // The gauge's once-a-second samples are correlated, so a significant slope alone
        // would call every wobble growth: like the client's in-flight test, the rise over
        // the window must also be material for a queue of that size.
        let window_s = q.samples.saturating_sub(1) as f64;
        let rise = q.slope_per_s * window_s;
        out.server_queue_growth = q.growing && open_loop && rise > material_growth(q.waiting_mean);
        if out.server_queue_growth {
            out.fired.push(format!(
                "server waiting queue grew {:.2}/s, {rise:.1} requests over {window_s:.0} s (p = {:.1e})",
                q.slope_per_s, q.p_value
            ));
        }
    }
    out
}

/// The client-side signals, from a level's summary and records alone: queue growth and the
/// arrivals' completion (open loop), and the latency blow-up.
pub fn evaluate(
    s: &RunSummary,
    records: &[RequestRecord],
    reference_ms_per_token_p99: Option<f64>,
    open_loop: bool,
) -> Signals {
    let mut out = Signals {
        ttft_p99_ms: s.ttft_ms.map(|d| d.p99),
        e2e_p99_ms: s.e2e_ms.map(|d| d.p99),
        ms_per_token_p99: s.normalized_latency_ms_per_token.map(|d| d.p99),
        reference_ms_per_token_p99,
        steady_throughput_change: throughput_change(records),
        steady_throughput: throughput_ci(records),
        ..Default::default()
    };
    if open_loop {
        out.queue = in_flight_growth(records);
        out.queue_growth = out.queue.as_ref().is_some_and(|q| q.growing);
        out.arrivals = arrivals::judge(records, reference_ms_per_token_p99);
        out.completion_share = out.arrivals.and_then(|a| a.completion_ratio());
        out.completion_shortfall = out.completion_share.is_some_and(|c| c < COMPLETION_SHARE);
        out.offered = arrivals::offered(records, reference_ms_per_token_p99);
        let offered_share = out.offered.and_then(|b| b.share());
        out.offered_shortfall = offered_share.is_some_and(|c| c < OFFERED_SHARE);
        if out.queue_growth {
            let q = out.queue.as_ref().expect("set above");
            out.fired.push(format!(
                "queue growth: requests waiting for a first token rose {:.1} over {:.0} s (p = {:.1e})",
                q.growth, q.window_s, q.p_value
            ));
        }
        if let (true, Some(a)) = (out.completion_shortfall, out.arrivals) {
            out.fired.push(format!(
                "the steady span's arrivals completed at {:.0} % of their arrival rate (< 90 %): {} of {} decided completed ({} failed, {} cancelled past the blow-up bound), their waits growing at least {:.2} s per s",
                out.completion_share.unwrap_or(0.0) * 100.0,
                a.completed,
                a.completed + a.failed + a.late,
                a.failed,
                a.late,
                a.delay_growth_low.or(a.delay_growth).unwrap_or(0.0).max(0.0)
            ));
        }
        if let (true, Some(b)) = (out.offered_shortfall, out.offered) {
            out.fired.push(format!(
                "the level completed {} of the {} requests it offered that were due ({:.0} % < {:.0} %)",
                b.completed,
                b.due(),
                offered_share.unwrap_or(0.0) * 100.0,
                OFFERED_SHARE * 100.0
            ));
        }
    }
    if let (Some(p99), Some(reference)) = (out.ms_per_token_p99, reference_ms_per_token_p99) {
        out.latency_blowup = p99 > BLOWUP_FACTOR * reference;
        if out.latency_blowup {
            out.fired.push(format!(
                "P99 latency per output token {p99:.1} ms > 10 × {reference:.1} ms at the lowest load"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;

    /// A measured request arriving at `arrive_s` and finishing `dur_s` later.
    fn req(id: u64, arrive_s: f64, dur_s: f64) -> RequestRecord {
        let at = (arrive_s * 1e9) as u64;
        RequestRecord {
            id,
            phase: Phase::Measure,
            scheduled_at: Some(at),
            queued_at: at,
            sent_at: Some(at),
            finished_at: at + (dur_s * 1e9) as u64,
            outcome: Outcome::Ok,
            ..Default::default()
        }
    }

    #[test]
    fn a_stable_queue_does_not_grow() {
        // One arrival every 0.1 s for 100 s, each lasting 1 s: 10 in flight throughout.
        let recs: Vec<RequestRecord> = (0..1000).map(|i| req(i, i as f64 * 0.1, 1.0)).collect();
        let q = in_flight_growth(&recs).unwrap();
        assert!((q.mean_in_flight - 10.0).abs() < 0.05, "{q:?}");
        assert!(!q.growing, "{q:?}");
        assert!(q.slope_per_s.abs() < 1e-6);
    }

    #[test]
    fn an_overloaded_queue_grows() {
        // Arrivals every 0.1 s, served one at a time at 0.125 s each (80 % of the arrival
        // rate): request i finishes at 0.125(i+1), so in flight at t ≈ 10t − 8t = 2t.
        let recs: Vec<RequestRecord> = (0..1000)
            .map(|i| {
                let a = i as f64 * 0.1;
                let f = 0.125 * (i + 1) as f64;
                req(i, a, f - a)
            })
            .collect();
        let q = in_flight_growth(&recs).unwrap();
        // Durations 0.025i + 0.125 s grow with the queue; the early ones (arrivals in the
        // first fifth, i ≤ 199) last at most 5.1 s, under 10 % of the 99.9 s span, so the
        // window is 9.99 … 99.9 s (89.91 s): slope ≈ 2 /s, growth ≈ 180 requests.
        assert!((q.window_s - 89.91).abs() < 1e-6, "{q:?}");
        assert!((q.slope_per_s - 2.0).abs() < 0.05, "{q:?}");
        assert!((q.growth - 2.0 * 89.91).abs() < 5.0, "{q:?}");
        assert!(q.growing);
    }

    #[test]
    fn a_small_drift_is_not_material() {
        // In flight drifts from 100 to 105 over the window: significant but small
        // (5 < 0.25 × ~102), not "grows continuously".
        let mut recs = Vec::new();
        let mut id = 0;
        for k in 0..100 {
            // 100 + k/20 long-lived requests active in second k: model as one request per
            // slot restarted every second, plus the drift.
            let n = 100 + k / 20;
            for _ in 0..n {
                recs.push(req(id, k as f64, 1.0));
                id += 1;
            }
        }
        let q = in_flight_growth(&recs).unwrap();
        assert!(q.slope_per_s > 0.0);
        assert!(!q.growing, "{q:?}");
    }

    fn chunk(at_s: f64, tokens: u32) -> crate::record::Chunk {
        crate::record::Chunk {
            at: (at_s * 1e9) as u64,
            tokens,
            bytes: tokens,
        }
    }

    #[test]
    fn throughput_change_compares_the_halves_of_the_steady_span() {
        // Arrivals every 1 s at 0..39 s, each lasting 0.5 s with one chunk at its end:
        // span 39 s, skip max(3.9, 0.5) → steady span 3.9-39 s, halves split at 21.45 s.
        // Chunks of arrivals 4..=20 (10 tokens) fall in the first half: 170 tokens;
        // arrivals 21..=38 (12 tokens) in the second: 216 (39's lands after 39 s).
        let recs: Vec<RequestRecord> = (0..40)
            .map(|i| {
                let mut r = req(i, i as f64, 0.5);
                r.chunks = vec![chunk(i as f64 + 0.5, if i <= 20 { 10 } else { 12 })];
                r
            })
            .collect();
        let c = throughput_change(&recs).unwrap();
        assert!((c - (216.0 / 170.0 - 1.0)).abs() < 1e-12, "{c}");
        assert!(throughput_change(&recs[..10]).is_none());
    }

    #[test]
    fn throughput_interval_by_batch_means() {
        // 100 arrivals every 0.11 s (0-10.89 s, instantaneous): steady span 1.089-10.89 s,
        // ten blocks of 0.9801 s. Block k receives 30 tokens (k even) or 50 (k odd):
        // rates 30/0.9801 and 50/0.9801; interval mean ± t(0.975, 9)·sd/√10.
        let mut recs: Vec<RequestRecord> = (0..100).map(|i| req(i, i as f64 * 0.11, 0.0)).collect();
        for (k, r) in recs.iter_mut().take(10).enumerate() {
            let at = 1.089 + 0.9801 * k as f64 + 0.1;
            r.chunks = vec![chunk(at, if k % 2 == 0 { 30 } else { 50 })];
        }
        let t = throughput_ci(&recs).unwrap();
        let rates: Vec<f64> = (0..10)
            .map(|k| {
                if k % 2 == 0 {
                    30.0 / 0.9801
                } else {
                    50.0 / 0.9801
                }
            })
            .collect();
        let m = rates.iter().sum::<f64>() / 10.0;
        let sd = (rates.iter().map(|r| (r - m).powi(2)).sum::<f64>() / 9.0).sqrt();
        let half = 2.262_157_163 * sd / 10f64.sqrt();
        assert!((t.output_tokens_per_s - m).abs() < 1e-6, "{t:?}");
        assert!((t.ci.0 - (m - half)).abs() < 1e-3, "{t:?} vs {}", m - half);
        assert!((t.ci.1 - (m + half)).abs() < 1e-3);
        assert!((t.window_s - 9.801).abs() < 1e-9);
    }

    /// A request sent at `sent_ms` that waits `wait_ms`, then gets its first token 50 ms
    /// later and one every 10 ms: `n` tokens, end to end wait + 50 + 10(n − 1) ms.
    fn answer(id: u64, sent_ms: u64, wait_ms: u64, n: u64) -> RequestRecord {
        let tokens: Vec<u64> = (0..n).map(|k| sent_ms + wait_ms + 50 + 10 * k).collect();
        RequestRecord::completed_for_tests(id, sent_ms, &tokens, 10)
    }

    /// One at a time: 90 answers of 20 tokens and 10 of 400, each waiting `wait_ms` first.
    fn skewed(wait_ms: u64) -> Vec<RequestRecord> {
        (0..100u64)
            .map(|i| answer(i, i * 10_000, wait_ms, if i % 10 == 9 { 400 } else { 20 }))
            .collect()
    }

    /// Issue 19, item 2: skewed output lengths alone are not a latency blow-up.
    #[test]
    fn skewed_lengths_alone_are_not_a_latency_blowup() {
        // No load: 240 ms end to end for 20 tokens, 4,040 ms for 400; P50 240 ms, P99
        // 4,040 ms, so the old reading (P99 end to end > 10 × the reference P50 = 2,400 ms)
        // fired on an idle server. Per output token: 240 / 20 = 12 ms and 4,040 / 400 =
        // 10.1 ms, P99 12 ms, against 10 × 12 = 120 ms: no blow-up.
        let params = crate::metrics::SummaryParams::default();
        let idle = skewed(0);
        let reference = crate::metrics::summarize(&idle, &params);
        let e2e = reference.e2e_ms.unwrap();
        assert_eq!((e2e.p50, e2e.p99), (240.0, 4040.0));
        assert!(e2e.p99 > BLOWUP_FACTOR * e2e.p50, "the old signal fired");
        let per_token = reference.normalized_latency_ms_per_token.unwrap().p99;
        assert!((per_token - 12.0).abs() < 1e-9, "{per_token}");
        let sig = evaluate(&reference, &idle, Some(per_token), false);
        assert!(!sig.latency_blowup && !sig.any(), "{sig:?}");
        // Waiting 2 s in a queue first: the short answers take 2,240 / 20 = 112 ms a token,
        // within 120 ms. Waiting 3 s: 3,240 / 20 = 162 ms a token > 120 ms, a blow-up.
        let waited = skewed(2_000);
        let s = crate::metrics::summarize(&waited, &params);
        assert!(!evaluate(&s, &waited, Some(per_token), false).latency_blowup);
        let queued = skewed(3_000);
        let s = crate::metrics::summarize(&queued, &params);
        let sig = evaluate(&s, &queued, Some(per_token), false);
        assert!(sig.latency_blowup, "{sig:?}");
        assert!((sig.ms_per_token_p99.unwrap() - 162.0).abs() < 1e-9);
        assert_eq!(sig.reference_ms_per_token_p99, Some(12.0));
    }

    /// Issue 19, item 12: a server that keeps up, answering every request's first token in
    /// 50 ms and its last 5 s later, while the arrivals double from 10 to 20 per second
    /// half-way (a stretch of a seeded Poisson schedule that came faster). The old reading,
    /// everything in flight, rose from 50 to 101 with the batch (75 requests over the
    /// window, t = 6.4): "queue growth". Waiting for a first token: 0.5 to 1.0, under the
    /// materiality bound of 2.
    #[test]
    fn a_batch_that_follows_the_arrivals_is_not_a_queue() {
        let arrivals: Vec<f64> = (0..200)
            .map(|i| i as f64 * 0.1)
            .chain((0..400).map(|i| 20.0 + i as f64 * 0.05))
            .collect();
        let answered: Vec<RequestRecord> = arrivals
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                let mut r = req(i as u64, a, 5.05);
                r.chunks = vec![chunk(a + 0.05, 1), chunk(a + 5.05, 1)];
                r.first_content = Some(0);
                r
            })
            .collect();
        let q = in_flight_growth(&answered).unwrap();
        assert!(!q.growing, "{q:?}");
        assert!(q.growth < 1.0 && q.mean_in_flight < 1.0, "{q:?}");
        // The old reading: the same requests without their tokens wait until they end.
        let whole: Vec<RequestRecord> = arrivals
            .iter()
            .enumerate()
            .map(|(i, &a)| req(i as u64, a, 5.05))
            .collect();
        let old = in_flight_growth(&whole).unwrap();
        assert!(old.growing && old.growth > 70.0, "{old:?}");
    }

    /// Issue 19, item 12: the 6 s level at 5.67 requests per second on a server finishing one
    /// every 2.56 s ([`super::super::arrivals::tests::issue_level`]). Two of its steady
    /// span's arrivals completed, too few for a trend, the others were cancelled within the
    /// blow-up bound (unresolved), the first requests took more than half the level (no
    /// steady span, no queue reading), and the completed ones stayed under 10 × the
    /// reference per token: no old signal fired, and the level "passed". It completed 6 of
    /// the 34 it offered: far short, and too few to judge.
    #[test]
    fn a_level_far_past_a_slow_servers_capacity_is_not_sustained() {
        let recs = super::super::arrivals::tests::issue_level();
        let s = crate::metrics::summarize(&recs, &crate::metrics::SummaryParams::default());
        let sig = evaluate(&s, &recs, Some(160.0), true);
        assert!(
            !sig.queue_growth && !sig.completion_shortfall && !sig.latency_blowup,
            "{sig:?}"
        );
        assert!(sig.offered_shortfall, "{sig:?}");
        assert_eq!(sig.fired.len(), 1, "{:?}", sig.fired);
        assert!(
            sig.fired[0].contains("completed 6 of the 34"),
            "{:?}",
            sig.fired
        );
        assert!(sig.too_few_to_judge());
    }

    #[test]
    fn materiality_bounds() {
        assert_eq!(material_growth(1.0), 3.0); // 3·√1
        assert_eq!(material_growth(0.0), 2.0);
        assert!((material_growth(400.0) - 100.0).abs() < 1e-12); // 0.25·400 > 3·20
        assert!((material_growth(64.0) - 24.0).abs() < 1e-12); // 3·8 > 16
    }

    #[test]
    fn too_few_requests_give_no_trend() {
        let recs: Vec<RequestRecord> = (0..10).map(|i| req(i, i as f64, 1.0)).collect();
        assert!(in_flight_growth(&recs).is_none());
    }
}
