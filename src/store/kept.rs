//! What a run keeps of its records in memory: every one while they fit, or, past a limit,
//! only what its reports are made of.
//!
//! Every record goes to `requests.jsonl` whatever happens here. Up to
//! `--exact-summary-limit` requests the run keeps them all and its summary is exact. Past
//! it, the records kept so far are folded into a [`StreamedRun`] and dropped, and every
//! later one is folded in as it is written: the summary ([`StreamSummary`]), the timeline's
//! client columns ([`ClientSeconds`]), the generator's counts ([`GeneratorCounts`]) and the
//! client's token and end times for the comparison with the server's counters
//! ([`SeenTimes`]). Memory then no longer grows with the number of requests; the reports
//! draw their per-request charts from the summary's seeded sample.

use crate::metrics::generator::GeneratorCounts;
use crate::metrics::stream::{StreamSummary, EXACT_VALUES};
use crate::metrics::SummaryParams;
use crate::record::{Phase, RequestRecord};
use crate::telemetry::client_seconds::ClientSeconds;
use crate::telemetry::summary::SeenTimes;

/// Requests a run keeps in memory by default for an exact summary.
pub const DEFAULT_EXACT_SUMMARY_LIMIT: usize = 20_000;
/// TTFTs each second of a streamed run's timeline keeps exactly (for its median).
const EXACT_TTFTS_PER_SECOND: usize = 1_024;

/// The figures of a run whose records were not kept.
#[derive(Debug, Clone)]
pub struct StreamedRun {
    pub summary: StreamSummary,
    pub timeline: ClientSeconds,
    pub generator: GeneratorCounts,
    pub seen: SeenTimes,
}

impl StreamedRun {
    /// Empty figures; `params` give the SLO and deadlines each record is judged by.
    pub fn new(params: SummaryParams) -> Self {
        Self {
            summary: StreamSummary::new(params),
            timeline: ClientSeconds::new(EXACT_TTFTS_PER_SECOND),
            generator: GeneratorCounts::new(EXACT_VALUES),
            seen: SeenTimes::default(),
        }
    }

    /// Folds one record in.
    pub fn add(&mut self, r: RequestRecord) {
        self.timeline.add(&r);
        self.seen.add(&r);
        if r.phase == Phase::Measure {
            self.generator.add(&r);
            self.summary.add(r);
        }
    }
}

/// What a run kept: `records` holds every record, or, when `streamed` is there, the
/// seeded sample of measured records its summary drew the whole-request figures from.
#[derive(Debug, Default)]
pub struct Kept {
    pub records: Vec<RequestRecord>,
    pub streamed: Option<Box<StreamedRun>>,
}

/// Keeps records up to a limit, then streams them.
#[derive(Debug)]
pub struct Keeper {
    limit: Option<usize>,
    params: Option<SummaryParams>,
    kept: Kept,
}

impl Keeper {
    /// Keeps every record when `limit` is `None`.
    pub fn new(limit: Option<usize>) -> Self {
        Self {
            limit,
            params: None,
            kept: Kept::default(),
        }
    }

    /// The keeper a run of `config` had, for reading its `requests.jsonl` back: its limit
    /// (the default one for a run that recorded none) and its SLO and deadlines.
    pub fn for_run(config: &crate::config::RunConfig) -> Self {
        let limit = config
            .exact_summary_limit
            .unwrap_or(DEFAULT_EXACT_SUMMARY_LIMIT);
        let mut keeper = Self::new(Some(limit));
        keeper.judge_by(SummaryParams {
            slo: config.slo.clone(),
            ux: config.ux,
            ..SummaryParams::default()
        });
        keeper
    }

    /// Whether [`Keeper::judge_by`] has not been given its parameters yet.
    pub fn needs_params(&self) -> bool {
        self.params.is_none()
    }

    /// The SLO and deadline parameters records are judged by: until they are known
    /// (before the measured phase), records are kept whatever the limit.
    pub fn judge_by(&mut self, params: SummaryParams) {
        if self.params.is_none() {
            self.params = Some(params);
        }
    }

    /// Takes one record.
    pub fn add(&mut self, r: RequestRecord) {
        if let Some(s) = &mut self.kept.streamed {
            s.add(r);
            return;
        }
        self.kept.records.push(r);
        let over = self.limit.is_some_and(|l| self.kept.records.len() > l);
        if let (true, Some(params)) = (over, &self.params) {
            let mut s = Box::new(StreamedRun::new(params.clone()));
            for r in std::mem::take(&mut self.kept.records) {
                s.add(r);
            }
            self.kept.streamed = Some(s);
        }
    }

    /// Whether records are no longer kept.
    pub fn streaming(&self) -> bool {
        self.kept.streamed.is_some()
    }

    /// What was kept.
    pub fn finish(mut self) -> Kept {
        if let Some(s) = &self.kept.streamed {
            self.kept.records = s.summary.sample();
        }
        self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u64, phase: Phase) -> RequestRecord {
        RequestRecord {
            phase,
            ..RequestRecord::completed_for_tests(id, id * 10, &[id * 10 + 5, id * 10 + 7], 4)
        }
    }

    #[test]
    fn keeps_every_record_up_to_the_limit_then_streams() {
        let mut k = Keeper::new(Some(50));
        k.judge_by(SummaryParams::default());
        (0..50).for_each(|i| k.add(rec(i, Phase::Measure)));
        assert!(!k.streaming());
        (50..500).for_each(|i| k.add(rec(i, Phase::Measure)));
        assert!(k.streaming());
        let kept = k.finish();
        let s = kept.streamed.unwrap();
        assert_eq!(s.summary.requests(), 500);
        assert!(kept.records.len() <= crate::metrics::stream::SAMPLE_REQUESTS);
    }

    #[test]
    fn without_judging_parameters_or_a_limit_everything_is_kept() {
        let mut k = Keeper::new(Some(5));
        (0..20).for_each(|i| k.add(rec(i, Phase::Warmup)));
        assert!(!k.streaming());
        let mut k = Keeper::new(None);
        k.judge_by(SummaryParams::default());
        (0..20).for_each(|i| k.add(rec(i, Phase::Measure)));
        assert_eq!(k.finish().records.len(), 20);
    }
}
