//! The live view's figures: TTFT and ITL percentiles over the last seconds, and failures by
//! kind, fed by the record writer as requests finish.
//!
//! A window of recent values, pruned by age and bounded in size, so the live view costs a
//! fixed amount of memory however long the run. Percentiles here are for watching a run;
//! the report's figures come from the records.

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
}
