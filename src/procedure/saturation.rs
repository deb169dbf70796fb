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
//! - **Waits that never settle** (open loop; the draft's steady state, 5.2.3.2): the
//!   steady span's completed arrivals waited for their first token ever longer, with
//!   confidence and materially: the one-sided 95 % lower bound of their waits' growth,
//!   fitted on the means of ten blocks of them (consecutive waits in a queue are correlated,
//!   so a fit on each wait has too small an error; [`super::arrivals`]), times the span it
//!   was fitted over exceeds the level's P50 end-to-end latency. A server that keeps up has waits without a trend; one whose queue
//!   piles up more than a whole request's time of waiting within the span never reached a
//!   steady state, even when it completed nearly all of them (a slow server of few slots
//!   passed a level whose P99 TTFT had grown to 23.5 s, 80 times the level below, because
//!   every arrival completed in the drain: the completion check reads b against 10 %, a
//!   growth of 0.1 s per s, and the queue count of four slots is too small to trend). The
//!   bound is on the lower bound, so a queue's random walk near capacity (waits are
//!   correlated from one request to the next, which narrows the slope's error) must still
//!   rise by a request's time at the least.
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
use crate::artifacts::RunReport;
use crate::metrics::RunSummary;
use crate::record::RequestRecord;
use serde::{Deserialize, Serialize};

mod steady;
#[cfg(test)]
mod tests;

pub use steady::{
    in_flight_growth, material_growth, steady_span, throughput_change, throughput_ci, QueueGrowth,
    SteadyThroughput,
};

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

/// Which signals fired at a level, with the figures behind each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The steady arrivals' waits for a first token grew, with confidence, by more than the
    /// level's P50 end-to-end latency: the queue never settled (open loop).
    #[serde(default)]
    pub waits_growth: bool,
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
        if self.queue_growth || self.server_queue_growth || self.waits_growth {
            "growing"
        } else {
            "stable"
        }
    }
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
        waits_growth(s, &mut out);
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
    blowup(&mut out, reference_ms_per_token_p99);
    out
}

/// The waits-that-never-settle signal (see the module documentation), from the judged
/// arrivals and the level's P50 end-to-end latency.
fn waits_growth(s: &RunSummary, out: &mut Signals) {
    let Some(a) = out.arrivals else { return };
    let (Some(rise_s), Some(e2e)) = (a.wait_rise_low_s(), s.e2e_ms) else {
        return;
    };
    let p50_s = e2e.p50 / 1e3;
    out.waits_growth = p50_s > 0.0 && rise_s > p50_s;
    if out.waits_growth {
        out.fired.push(format!(
            "waits never settled: the arrivals' waits for a first token rose at least {rise_s:.1} s over {:.0} s, more than the level's P50 end-to-end latency ({p50_s:.1} s)",
            a.delay_span_s.unwrap_or(0.0)
        ));
    }
}

/// The latency blow-up signal (see the module documentation).
fn blowup(out: &mut Signals, reference_ms_per_token_p99: Option<f64>) {
    if let (Some(p99), Some(reference)) = (out.ms_per_token_p99, reference_ms_per_token_p99) {
        out.latency_blowup = p99 > BLOWUP_FACTOR * reference;
        if out.latency_blowup {
            out.fired.push(format!(
                "P99 latency per output token {p99:.1} ms > 10 × {reference:.1} ms at the lowest load"
            ));
        }
    }
}
