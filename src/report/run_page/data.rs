//! The per-request values a run's charts draw, taken from its records: every TTFT and ITL
//! sample (the summary keeps only their percentiles), a sample of token timelines, and the
//! share of fluid requests on a dense grid of decode deadlines (the summary has seven).
//! Pure: records in, values out, computed with the same per-request definitions as the
//! summary (`metrics::request::measure`, `FluidityParams::input`).

use crate::artifacts::RunReport;
use crate::metrics::experience::{FluidityParams, FluiditySummary};
use crate::metrics::request::{measure, ItlOption};
use crate::record::{Phase, RequestRecord};

/// Most token timelines a report draws.
pub const TIMELINE_ROWS: usize = 40;
/// Of those, the ones picked for having the longest pauses; the rest are spread evenly
/// over the run.
pub const TIMELINE_WORST: usize = 12;
/// Decode deadlines on the fluidity curve.
pub const FLUID_GRID: usize = 48;
/// Most requests the dense fluidity curve is computed from (evenly spaced in send order):
/// every point costs a pass over every token of every request.
pub const FLUID_REQUESTS: usize = 2000;

/// One request's token arrivals.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenTimeline {
    pub id: u64,
    pub class: Option<String>,
    /// Arrival of each answer token, ms since the request was sent; a chunk of n tokens
    /// gives n equal times.
    pub token_ms: Vec<f64>,
    /// Its longest gap between consecutive tokens, ms.
    pub max_gap_ms: f64,
}

/// What the charts need beyond `run.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunData {
    /// TTFT of every measured request that got an answer, ms, in send order.
    pub ttft_ms: Vec<f64>,
    /// Every ITL sample of measured requests by the run's ITL option, ms.
    pub itl_ms: Vec<f64>,
    /// A sample of measured requests' token timelines, in send order.
    pub timelines: Vec<TokenTimeline>,
    /// Measured requests with at least one answer token (the timelines' population).
    pub streams: usize,
    /// `(D_d ms, share of requests with fluidity ≥ the threshold)` on a geometric grid;
    /// empty when the run has no fluidity figures.
    pub fluid_curve: Vec<(f64, f64)>,
    /// `(requests used, measured requests)` behind `fluid_curve`.
    pub fluid_requests: (usize, usize),
}

impl RunData {
    /// The chart data of a run: its report says how ITL samples were formed and what the
    /// fluidity parameters were.
    pub fn of(report: &RunReport, records: &[RequestRecord]) -> Self {
        let mut data = Self::from_records(records, report.summary.itl_method.option);
        if let Some(f) = &report.summary.experience.fluidity {
            let bounded = report
                .summary
                .experience
                .fluid_token_rate
                .as_ref()
                .and_then(|r| match r {
                    crate::metrics::fluidity::FluidRate::Bounded {
                        decode_deadline_ms, ..
                    } => Some(*decode_deadline_ms),
                    _ => None,
                });
            (data.fluid_curve, data.fluid_requests) = fluid_curve(records, f, bounded);
        }
        data
    }

    /// Extracts the chart data of the measured phase of `records`, with ITL samples
    /// formed by `itl` (the run's `summary.itl_method.option`); no fluidity curve.
    pub fn from_records(records: &[RequestRecord], itl: ItlOption) -> Self {
        let mut measured: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| r.phase == Phase::Measure)
            .collect();
        measured.sort_by_key(|r| (r.sent_at.unwrap_or(u64::MAX), r.id));
        let mut data = RunData::default();
        let mut all = Vec::new();
        for r in &measured {
            if let Some(m) = measure(r, itl) {
                // A non-generative answer (items) has no first token to chart.
                if r.items == 0 {
                    data.ttft_ms.push(m.ttft_ms);
                }
                data.itl_ms.extend(m.itl_ms.iter().copied());
            }
            if let Some(t) = timeline(r) {
                all.push(t);
            }
        }
        data.streams = all.len();
        data.timelines = sample(all, TIMELINE_ROWS, TIMELINE_WORST);
        data
    }
}

/// The share of fluid requests at `FLUID_GRID` decode deadlines spaced geometrically over
/// the summary's range (widened to twice the fluid rate's deadline), from at most
/// `FLUID_REQUESTS` measured requests.
fn fluid_curve(
    records: &[RequestRecord],
    f: &FluiditySummary,
    fluid_deadline_ms: Option<f64>,
) -> (Vec<(f64, f64)>, (usize, usize)) {
    let params = FluidityParams {
        tbt_deadline_ms: f.tbt_deadline_ms,
        slack_ms: f.slack_ms,
        threshold: f.threshold,
        quantile: f.quantile,
        curve: Some(f.prefill_curve),
        curve_source: String::new(),
    };
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    let picked = crate::report::chart::data::even_indices(measured.len(), FLUID_REQUESTS);
    let inputs: Vec<_> = picked
        .iter()
        .filter_map(|&i| params.input(measured[i]))
        .collect();
    if inputs.is_empty() {
        return (Vec::new(), (0, measured.len()));
    }
    let first = f.curve_vs_tbt.first().map_or(10.0, |p| p.0);
    let last = f.curve_vs_tbt.last().map_or(500.0, |p| p.0);
    let (mut lo, mut hi) = (first.min(f.tbt_deadline_ms), last.max(f.tbt_deadline_ms));
    if let Some(d) = fluid_deadline_ms.filter(|d| d.is_finite() && *d > 0.0) {
        lo = lo.min(d / 2.0);
        hi = hi.max(d * 2.0);
    }
    let lo = lo.max(0.01);
    let curve = (0..FLUID_GRID)
        .map(|k| {
            let dd = lo * (hi / lo).powf(k as f64 / (FLUID_GRID - 1) as f64);
            let fluid = inputs.iter().filter(|i| i.index(dd) >= f.threshold).count();
            (dd, fluid as f64 / inputs.len() as f64)
        })
        .collect();
    (curve, (inputs.len(), measured.len()))
}

/// A request's answer-token arrivals relative to T_submit (its last byte written), where
/// TTFT starts.
fn timeline(r: &RequestRecord) -> Option<TokenTimeline> {
    let sent = r.submitted_at()?;
    let mut token_ms = Vec::new();
    for c in r.token_chunks() {
        let t = c.at.saturating_sub(sent) as f64 / 1e6;
        token_ms.extend(std::iter::repeat_n(t, c.tokens.max(1) as usize));
    }
    if token_ms.is_empty() {
        return None;
    }
    let max_gap_ms = token_ms.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    Some(TokenTimeline {
        id: r.id,
        class: r.class.clone(),
        token_ms,
        max_gap_ms,
    })
}

/// At most `max` timelines: the `worst` with the longest gaps (so pauses are seen), the
/// rest evenly spaced over the others; returned in their original order.
fn sample(all: Vec<TokenTimeline>, max: usize, worst: usize) -> Vec<TokenTimeline> {
    if all.len() <= max {
        return all;
    }
    let mut by_gap: Vec<usize> = (0..all.len()).collect();
    // Longest gap first; ties by position so the choice is deterministic.
    by_gap.sort_by(|&a, &b| {
        all[b]
            .max_gap_ms
            .total_cmp(&all[a].max_gap_ms)
            .then(a.cmp(&b))
    });
    let mut keep = vec![false; all.len()];
    for &i in by_gap.iter().take(worst.min(max)) {
        keep[i] = true;
    }
    let rest: Vec<usize> = (0..all.len()).filter(|&i| !keep[i]).collect();
    let want = max - worst.min(max);
    for k in 0..want {
        // Evenly spaced, first and last included.
        let i = if want == 1 {
            0
        } else {
            k * (rest.len() - 1) / (want - 1)
        };
        keep[rest[i]] = true;
    }
    all.into_iter()
        .zip(keep)
        .filter_map(|(t, k)| k.then_some(t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Chunk, Outcome};

    fn record(id: u64, sent_ms: u64, chunks: &[(u64, u32)]) -> RequestRecord {
        let ms = 1_000_000;
        RequestRecord {
            id,
            phase: Phase::Measure,
            sent_at: Some(sent_ms * ms),
            first_byte_at: chunks.first().map(|c| c.0 * ms),
            first_content: (!chunks.is_empty()).then_some(0),
            chunks: chunks
                .iter()
                .map(|&(at, tokens)| Chunk {
                    at: at * ms,
                    tokens,
                    bytes: 4,
                })
                .collect(),
            finished_at: chunks.last().map_or(sent_ms, |c| c.0) * ms,
            outcome: Outcome::Ok,
            output_tokens: chunks.iter().map(|c| c.1).sum(),
            max_tokens: 16,
            ..Default::default()
        }
    }

    #[test]
    fn values_come_from_measured_requests_only() {
        let mut warm = record(9, 0, &[(5, 1), (6, 1)]);
        warm.phase = Phase::Warmup;
        let records = vec![
            record(2, 100, &[(150, 1), (160, 2), (200, 1)]),
            record(1, 10, &[(30, 1), (31, 1)]),
            warm,
            record(3, 300, &[]),
        ];
        let d = RunData::from_records(&records, ItlOption::B);
        // Send order: request 1, then 2.
        assert_eq!(d.ttft_ms, vec![20.0, 50.0]);
        // Option B: request 1 gap 1; request 2 chunk of 2 gives 10 then 0, then 40.
        assert_eq!(d.itl_ms, vec![1.0, 10.0, 0.0, 40.0]);
        assert_eq!(d.streams, 2);
        assert_eq!(d.timelines[1].token_ms, vec![50.0, 60.0, 60.0, 100.0]);
        assert_eq!(d.timelines[1].max_gap_ms, 40.0);
        let a = RunData::from_records(&records, ItlOption::A);
        assert_eq!(a.itl_ms, vec![1.0, 10.0, 40.0]);
    }

    #[test]
    fn the_fluid_curve_is_the_share_of_fluid_requests_on_a_geometric_grid() {
        use crate::metrics::fluidity::PrefillCurve;
        let f = FluiditySummary {
            threshold: 0.9,
            quantile: 0.99,
            tbt_deadline_ms: 50.0,
            slack_ms: 0.0,
            prefill_curve_source: String::new(),
            prefill_curve: PrefillCurve {
                a_ms: 100.0,
                b_ms_per_token: 0.0,
                c_ms_per_token2: 0.0,
                r2: 1.0,
                n: 2,
            },
            n: 3,
            p1: 0.0,
            p5: 0.0,
            p50: 0.0,
            mean: 0.0,
            share_meeting: 0.0,
            curve_vs_tbt: vec![(10.0, 0.0), (500.0, 1.0)],
        };
        // Steady 10 ms, 40 ms and 160 ms streams after a 50 ms TTFT.
        let stream = |id, gap: u64| {
            let times: Vec<(u64, u32)> = (0..20).map(|k| (50 + k * gap, 1)).collect();
            record(id, 0, &times)
        };
        let records = vec![stream(0, 10), stream(1, 40), stream(2, 160)];
        // The fluid rate's deadline 400 ms widens the range to 800 ms.
        let (curve, used) = fluid_curve(&records, &f, Some(400.0));
        assert_eq!(used, (3, 3));
        assert_eq!(curve.len(), FLUID_GRID);
        assert!((curve[0].0 - 10.0).abs() < 1e-9);
        assert!((curve[FLUID_GRID - 1].0 - 800.0).abs() < 1e-6);
        let ratio = curve[1].0 / curve[0].0;
        assert!(curve
            .windows(2)
            .all(|w| (w[1].0 / w[0].0 - ratio).abs() < 1e-9));
        // Each point is the share computed directly, and more slack never makes fewer fluid.
        let params = FluidityParams {
            curve: Some(f.prefill_curve),
            slack_ms: 0.0,
            ..Default::default()
        };
        for &(dd, share) in &curve {
            let direct = records
                .iter()
                .filter(|r| params.input(r).unwrap().index(dd) >= 0.9)
                .count() as f64
                / 3.0;
            assert_eq!(share, direct, "at {dd} ms");
        }
        assert!(curve.windows(2).all(|w| w[1].1 >= w[0].1));
        // At 800 ms every stream keeps up; at 10 ms the 160 ms one cannot.
        assert_eq!(curve[FLUID_GRID - 1].1, 1.0);
        assert!(curve[0].1 < 1.0);
    }

    #[test]
    fn the_sample_keeps_the_longest_pauses_and_spreads_the_rest() {
        let all: Vec<TokenTimeline> = (0..10)
            .map(|i| TokenTimeline {
                id: i,
                class: None,
                token_ms: vec![0.0],
                max_gap_ms: if i == 4 { 99.0 } else { i as f64 },
            })
            .collect();
        let ids = |v: Vec<TokenTimeline>| v.into_iter().map(|t| t.id).collect::<Vec<_>>();
        // Worst two: 4 (99) and 9; three more evenly over 0,1,2,3,5,6,7,8: 0, 3, 8.
        assert_eq!(ids(sample(all.clone(), 5, 2)), vec![0, 3, 4, 8, 9]);
        assert_eq!(ids(sample(all.clone(), 20, 2)).len(), 10);
        assert_eq!(ids(sample(all, 1, 2)), vec![4]);
    }
}
