//! The streamed summary's verdicts: the SLO's, from the counts taken request by request and
//! the summary's own distributions, and the start-up transient, from the seeded sample.

use crate::metrics::request::{measure, ItlOption, RequestMetrics};
use crate::metrics::slo::{
    evaluate_tally, AttainmentTally, RunFigures, RunMetric, SloResult, SloSpec,
};
use crate::metrics::summary::{run_distribution, startup_transient, RunSummary};
use crate::metrics::warnings::Warning;
use crate::record::RequestRecord;

/// The SLO verdicts from the counts taken request by request (`tally`, for the ITL option
/// chosen) and the summary's distributions and rates.
pub(super) fn slo_of(spec: &SloSpec, tally: &AttainmentTally, s: &RunSummary) -> SloResult {
    let distribution = |m: RunMetric| run_distribution(s, m);
    evaluate_tally(
        spec,
        tally,
        s.window.duration_s,
        &RunFigures {
            distribution: &distribution,
            output_tokens_per_s: s.output_tokens_per_s,
            requests_per_s: s.requests_per_s,
            success_rate: s.success_rate,
        },
    )
}

/// The start-up transient, from the sample's requests read against the whole run's window
/// and TTFT P99.
pub(super) fn sample_transient(
    sample: &[RequestRecord],
    option: ItlOption,
    s: &RunSummary,
) -> Option<Warning> {
    let sample_refs: Vec<&RequestRecord> = sample.iter().collect();
    let sample_metrics: Vec<Option<RequestMetrics>> =
        sample.iter().map(|r| measure(r, option)).collect();
    startup_transient(
        &sample_refs,
        &sample_metrics,
        s.window,
        s.ttft_ms.map(|d| d.p99),
    )
}
