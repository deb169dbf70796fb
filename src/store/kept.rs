//! What a run keeps of its records in memory: every one while they fit, or, past a limit,
//! only what its reports are made of.
//!
//! Every record goes to `requests.jsonl` whatever happens here. Up to
//! `--exact-summary-limit` requests, and while they take less than `--memory-budget`, the
//! run keeps them all and its summary is exact. Past either, the records kept so far are folded into a [`StreamedRun`] and dropped, and every
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

/// How many records a run keeps for an exact summary: at most `requests` of them, taking
/// at most `bytes` ([`RequestRecord::approx_bytes`]); `None`: no such limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KeepLimits {
    pub requests: Option<usize>,
    pub bytes: Option<u64>,
}

impl KeepLimits {
    /// The limits a run of `config` keeps records by.
    pub fn of(config: &crate::config::RunConfig) -> Self {
        Self {
            requests: config.exact_summary_limit,
            bytes: config.memory_budget_bytes,
        }
    }

    /// At most `n` requests, whatever they take.
    pub fn requests(n: usize) -> Self {
        Self {
            requests: Some(n),
            bytes: None,
        }
    }

    /// Why `count` records of `bytes` in all are past the limits, in words; `None` within.
    fn passed(&self, count: usize, bytes: u64) -> Option<String> {
        if let Some(limit) = self.requests.filter(|&l| count > l) {
            return Some(format!(
                "more than {limit} requests (--exact-summary-limit)"
            ));
        }
        let budget = self.bytes.filter(|&b| bytes > b)?;
        Some(format!(
            "the {count} records kept took more than the {} MiB memory budget (--memory-budget) before --exact-summary-limit",
            budget / (1024 * 1024)
        ))
    }
}

/// The figures of a run whose records were not kept.
#[derive(Debug, Clone)]
pub struct StreamedRun {
    pub summary: StreamSummary,
    pub timeline: ClientSeconds,
    pub generator: GeneratorCounts,
    pub seen: SeenTimes,
    /// Which limit switched the run to streaming, in words.
    pub why: String,
}

impl StreamedRun {
    /// Empty figures; `params` give the SLO and deadlines each record is judged by.
    pub fn new(params: SummaryParams) -> Self {
        Self {
            summary: StreamSummary::new(params),
            timeline: ClientSeconds::new(EXACT_TTFTS_PER_SECOND),
            generator: GeneratorCounts::new(EXACT_VALUES),
            seen: SeenTimes::default(),
            why: String::new(),
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
    limits: KeepLimits,
    params: Option<SummaryParams>,
    kept: Kept,
    /// What the kept records take, bytes ([`RequestRecord::approx_bytes`]).
    kept_bytes: u64,
}

impl Keeper {
    /// Keeps every record when `limits` has none.
    pub fn new(limits: KeepLimits) -> Self {
        Self {
            limits,
            params: None,
            kept: Kept::default(),
            kept_bytes: 0,
        }
    }

    /// The keeper a run of `config` had, for reading its `requests.jsonl` back: its limit
    /// (the default one for a run that recorded none) and its SLO and deadlines.
    pub fn for_run(config: &crate::config::RunConfig) -> Self {
        let limits = KeepLimits {
            requests: Some(
                config
                    .exact_summary_limit
                    .unwrap_or(DEFAULT_EXACT_SUMMARY_LIMIT),
            ),
            bytes: config.memory_budget_bytes,
        };
        let mut keeper = Self::new(limits);
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
        self.kept_bytes += r.approx_bytes();
        self.kept.records.push(r);
        let over = self.limits.passed(self.kept.records.len(), self.kept_bytes);
        if let (Some(why), Some(params)) = (over, &self.params) {
            let mut s = Box::new(StreamedRun::new(params.clone()));
            s.why = why;
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
        let mut k = Keeper::new(KeepLimits::requests(50));
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
        let mut k = Keeper::new(KeepLimits::requests(5));
        (0..20).for_each(|i| k.add(rec(i, Phase::Warmup)));
        assert!(!k.streaming());
        let mut k = Keeper::new(KeepLimits::default());
        k.judge_by(SummaryParams::default());
        (0..20).for_each(|i| k.add(rec(i, Phase::Measure)));
        assert_eq!(k.finish().records.len(), 20);
    }

    /// Issue 31, item 9: answers of many tokens reach the memory budget long before the
    /// request limit. 40 records of 4,096 chunks (~100 KiB each) against a 1 MiB budget
    /// and a limit of 20,000 requests: the keeper streams after about ten, and says why.
    #[test]
    fn long_answers_switch_to_streaming_at_the_memory_budget() {
        let long = |id: u64| {
            let times: Vec<u64> = (0..4096).map(|k| id * 10_000 + k).collect();
            RequestRecord::completed_for_tests(id, id * 10_000, &times, 4)
        };
        let one = long(0).approx_bytes();
        assert!(one > 4096 * 16, "{one}");
        let mut k = Keeper::new(KeepLimits {
            requests: Some(20_000),
            bytes: Some(1 << 20),
        });
        k.judge_by(SummaryParams::default());
        let mut switched_at = None;
        for i in 0..40 {
            k.add(long(i));
            if k.streaming() && switched_at.is_none() {
                switched_at = Some(i + 1);
            }
        }
        let n = switched_at.expect("the budget is reached");
        assert_eq!(
            n,
            (1 << 20) / one + 1,
            "the first record past 1 MiB switches"
        );
        let kept = k.finish();
        let s = kept.streamed.unwrap();
        assert_eq!(s.summary.requests(), 40);
        assert!(s.why.contains("memory budget"), "{}", s.why);
        // Within the budget, nothing changes.
        let mut k = Keeper::new(KeepLimits {
            requests: Some(20_000),
            bytes: Some(1 << 30),
        });
        k.judge_by(SummaryParams::default());
        (0..40).for_each(|i| k.add(long(i)));
        assert!(!k.streaming());
    }
}
