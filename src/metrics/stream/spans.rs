//! The spans a streamed summary's rates are counted over: the steady span (the ramp-up's
//! skip estimated from the seeded sample, as the exact summary measures it from every
//! request) and the arrival balance's.

use super::StreamSummary;
use crate::metrics::summary::{
    balance_from, ramp_up_skip, ArrivalBalance, SteadyBasis, SteadyState, Window,
};
use crate::record::RequestRecord;
use crate::stats::distribution::Distribution;

impl StreamSummary {
    /// Steady rates over the load's steady span, as the exact summary's
    /// (`summary::steady_span`), the first requests' P90 duration read from `sample`; else
    /// over the window after its first 10 % (fewer than 20 requests, or a ramp-up past half
    /// the arrival span: a burst).
    pub(super) fn steady_state(&self, w: Window, sample: &[RequestRecord]) -> SteadyState {
        let (first, last) = self.arrived;
        let span = last.saturating_sub(first);
        let skip = ramp_up_skip(sample.iter(), first, last.max(first));
        let (cut, end, basis) = if self.counts.total >= 20 && skip <= span / 2 && span > skip {
            (first + skip, last, SteadyBasis::Arrivals)
        } else {
            let cut = w.start + w.end.saturating_sub(w.start) / 10;
            (cut, w.end, SteadyBasis::Window)
        };
        let steady_s = end.saturating_sub(cut) as f64 / 1e9;
        let per_s = |x: f64| if steady_s > 0.0 { x / steady_s } else { 0.0 };
        // Time bins count `[from, to)`: the span's last nanosecond is in.
        SteadyState {
            excluded_s: cut.saturating_sub(w.start) as f64 / 1e9,
            span_s: steady_s,
            basis,
            output_tokens_per_s: per_s(self.steady_tokens.sum_between(cut, end + 1)),
            requests_per_s: per_s(self.steady_done.sum_between(cut, end + 1)),
            input_tokens_per_s: per_s(self.steady_input.sum_between(cut, end + 1)),
        }
    }

    /// Arrivals against completions over the steady part of the planned arrival span.
    pub(super) fn arrival_balance(&self, e2e: Option<Distribution>) -> Option<ArrivalBalance> {
        let p = self.plan;
        if p.planned < 10 || p.planned != self.counts.total {
            return None;
        }
        let cut = p.first + (p.last - p.first) / 10;
        let span_s = (p.last - cut) as f64 / 1e9;
        if span_s <= 0.0 {
            return None;
        }
        // Every arrival is at or before the last planned one: only the cut end is prorated.
        let arrivals = self.arrivals.sum_from(cut);
        let completions = self.steady_done.sum_between(cut, p.last + 1);
        Some(balance_from(arrivals, completions, span_s, e2e))
    }
}
