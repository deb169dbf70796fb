//! The live view's figures: TTFT and ITL percentiles over the last seconds, and failures by
//! kind, fed by the record writer as requests finish; and rates (tokens, requests) over a
//! trailing window, read from counts that grow as things happen.
//!
//! A window of recent values, pruned by age and bounded in size, so the live view costs a
//! fixed amount of memory however long the run. Percentiles here are for watching a run;
//! the report's figures come from the records.
//!
//! The token rate counts output chunks as they arrive, not tokens as requests finish: a
//! slow server's requests finish in bursts (four slots ending together every 18 s), so a
//! count at completion reads 0 tok/s for seconds and then a spike, while `timeseries.csv`
//! counts each token in the second it arrived. Chunks are counted live and turned into
//! tokens with the tokens per chunk of the requests settled so far, so the live figure is
//! the timeseries' rate over the last [`RATE_WINDOW_S`] seconds.

use std::collections::{BTreeMap, VecDeque};

/// Values kept at most per series (older ones go first).
const MAX_VALUES: usize = 20_000;

/// Recent values of one series, with when each was taken (seconds on any monotonic clock).
#[derive(Debug, Default, Clone)]
pub struct Series {
    values: VecDeque<(f64, f32)>,
}

impl Series {
    /// Adds `value` taken at `at_s`.
    pub fn push(&mut self, at_s: f64, value: f64) {
        if self.values.len() == MAX_VALUES {
            self.values.pop_front();
        }
        self.values.push_back((at_s, value as f32));
    }

    /// Drops values taken before `since_s`.
    pub fn prune(&mut self, since_s: f64) {
        while self.values.front().is_some_and(|v| v.0 < since_s) {
            self.values.pop_front();
        }
    }

    /// P50 and P99 (nearest rank) of the values taken at or after `since_s`.
    pub fn p50_p99(&self, since_s: f64) -> Option<(f64, f64)> {
        let mut v: Vec<f32> = self
            .values
            .iter()
            .filter(|x| x.0 >= since_s)
            .map(|x| x.1)
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable_by(f32::total_cmp);
        let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some((f64::from(rank(0.5)), f64::from(rank(0.99))))
    }
}

/// What the live view reads of the finished requests.
#[derive(Debug, Default, Clone)]
pub struct LiveWindow {
    pub ttft_ms: Series,
    pub itl_ms: Series,
    /// Failures of the current phase by kind.
    pub failures: BTreeMap<String, u64>,
}

/// How far back the live percentiles look, s.
pub const WINDOW_S: f64 = 10.0;

impl LiveWindow {
    /// Takes in one finished request at `at_s`: its TTFT, its inter-token gaps, or its
    /// failure kind.
    pub fn add(&mut self, at_s: f64, ttft_ms: Option<f64>, gaps_ms: &[f64], failure: Option<&str>) {
        if let Some(t) = ttft_ms {
            self.ttft_ms.push(at_s, t);
        }
        for g in gaps_ms {
            self.itl_ms.push(at_s, *g);
        }
        if let Some(kind) = failure {
            *self.failures.entry(kind.to_owned()).or_default() += 1;
        }
        self.ttft_ms.prune(at_s - WINDOW_S);
        self.itl_ms.prune(at_s - WINDOW_S);
    }

    /// Starts a new phase: failures count from zero again (the percentiles age out).
    pub fn new_phase(&mut self) {
        self.failures.clear();
    }
}

/// How far back the live rates look, s.
pub const RATE_WINDOW_S: f64 = 5.0;

/// A rate over the last [`RATE_WINDOW_S`] seconds from a cumulative count sampled now and
/// then (the live view samples four times a second).
#[derive(Debug, Default, Clone)]
pub struct TrailingRate {
    /// (when, s; the count then), oldest first: the samples in the window and the last one
    /// before it, which is where the window's count starts.
    samples: VecDeque<(f64, u64)>,
}

impl TrailingRate {
    /// Takes in the count `total` at `at_s` (seconds on any monotonic clock).
    pub fn update(&mut self, at_s: f64, total: u64) {
        self.samples.push_back((at_s, total));
        while self.samples.len() > 2 && self.samples[1].0 <= at_s - RATE_WINDOW_S {
            self.samples.pop_front();
        }
    }

    /// Per second over the window: the count's growth from the sample that starts the
    /// window to the latest, over the time between them; 0 before a second has passed.
    pub fn per_s(&self) -> f64 {
        match (self.samples.front(), self.samples.back()) {
            (Some(&(t0, n0)), Some(&(t1, n1))) if t1 - t0 >= 1.0 => {
                n1.saturating_sub(n0) as f64 / (t1 - t0)
            }
            _ => 0.0,
        }
    }
}

/// Output tokens per second from the rate chunks arrive at: each chunk counts the tokens
/// per chunk of the requests settled so far (`settled_tokens` over `settled_chunks`), one
/// before any has settled.
pub fn tokens_per_s(chunks_per_s: f64, settled_tokens: u64, settled_chunks: u64) -> f64 {
    if settled_chunks == 0 {
        return chunks_per_s;
    }
    chunks_per_s * settled_tokens as f64 / settled_chunks as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_over_the_last_seconds() {
        let mut w = LiveWindow::default();
        // 100 old TTFTs of 1,000 ms at t = 0, then 1..=100 ms at t = 20 s: the old ones have
        // aged out of the 10 s window, so P50 is 50 ms and P99 99 ms (nearest rank).
        for _ in 0..100 {
            w.add(0.0, Some(1000.0), &[], None);
        }
        for ms in 1..=100 {
            w.add(20.0, Some(f64::from(ms)), &[5.0, 7.0], None);
        }
        assert_eq!(w.ttft_ms.p50_p99(10.0), Some((50.0, 99.0)));
        assert_eq!(w.itl_ms.p50_p99(10.0), Some((5.0, 7.0)));
        w.add(21.0, None, &[], Some("timeout"));
        w.add(21.0, None, &[], Some("timeout"));
        assert_eq!(w.failures.get("timeout"), Some(&2));
        w.new_phase();
        assert!(w.failures.is_empty());
        assert_eq!(Series::default().p50_p99(0.0), None);
    }

    #[test]
    fn a_trailing_rate_reads_the_last_seconds() {
        let mut r = TrailingRate::default();
        r.update(0.0, 0);
        r.update(0.5, 10);
        assert_eq!(r.per_s(), 0.0, "less than a second: no rate yet");
        let mut r = TrailingRate::default();
        r.update(0.0, 0);
        // 20 a second for 10 s, sampled four times a second, then nothing for 2.5 s: the
        // window is the last 5 s, 2.5 s of them at 20/s.
        for i in 1..=40 {
            r.update(f64::from(i) * 0.25, 5 * u64::from(i as u32));
        }
        assert!((r.per_s() - 20.0).abs() < 1e-9, "{}", r.per_s());
        for i in 41..=50 {
            r.update(f64::from(i) * 0.25, 200);
        }
        assert!((r.per_s() - 10.0).abs() < 1e-9, "{}", r.per_s());
        assert!(r.samples.len() <= 22, "{} samples kept", r.samples.len());
    }

    #[test]
    fn chunks_become_tokens_at_the_settled_ratio() {
        assert_eq!(tokens_per_s(50.0, 0, 0), 50.0);
        assert_eq!(tokens_per_s(50.0, 600, 200), 150.0);
    }
}
