//! Amounts over time in bounded memory: how many tokens (or completions, or arrivals) fell
//! after a cut that is only known when the run ends.
//!
//! The steady-state rates exclude the first 10 % of the measurement window, and the window
//! ends with the last byte of the run: a one-pass summary cannot know the cut while the
//! amounts stream past. Amounts are added into bins of the run clock; when the bins would
//! pass [`MAX_BINS`], neighbours merge and the width doubles, so memory stays fixed and the
//! width stays within 2/[`MAX_BINS`] of the run's length. A sum from a cut takes the whole
//! bins after it and the straddled bin's share in proportion to the time it covers, so it
//! is off by at most the amount of one bin at each end of a span, and only when that bin is
//! unevenly filled.

use crate::clock::Nanos;

/// Bins kept at most.
pub const MAX_BINS: usize = 4096;
/// The first width, ns (1 ms).
const FIRST_WIDTH: Nanos = 1_000_000;

/// Amounts added at moments of the run clock.
#[derive(Debug, Clone)]
pub struct TimeBins {
    width: Nanos,
    sums: Vec<f64>,
}

impl Default for TimeBins {
    fn default() -> Self {
        Self {
            width: FIRST_WIDTH,
            sums: Vec::new(),
        }
    }
}

impl TimeBins {
    /// Adds `amount` at `at` (ns on the run clock).
    pub fn add(&mut self, at: Nanos, amount: f64) {
        while (at / self.width) as usize >= MAX_BINS {
            self.coarsen();
        }
        let i = (at / self.width) as usize;
        if i >= self.sums.len() {
            self.sums.resize(i + 1, 0.0);
        }
        self.sums[i] += amount;
    }

    fn coarsen(&mut self) {
        self.sums = self.sums.chunks(2).map(|p| p.iter().sum()).collect();
        self.width *= 2;
    }

    /// The bin width now, ns.
    pub fn width(&self) -> Nanos {
        self.width
    }

    /// Amount added at times in `[from, to)`, the bins at either end prorated by time.
    pub fn sum_between(&self, from: Nanos, to: Nanos) -> f64 {
        if to <= from {
            return 0.0;
        }
        let w = self.width;
        let mut total = 0.0;
        for (i, &s) in self.sums.iter().enumerate() {
            if s == 0.0 {
                continue;
            }
            let (lo, hi) = (i as Nanos * w, (i as Nanos + 1) * w);
            let covered = hi.min(to).saturating_sub(lo.max(from));
            if covered > 0 {
                total += s * covered as f64 / w as f64;
            }
        }
        total
    }

    /// Amount added at `from` or later.
    pub fn sum_from(&self, from: Nanos) -> f64 {
        self.sum_between(from, Nanos::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_after_a_cut_by_hand() {
        let mut b = TimeBins::default();
        // 1 ms bins: 10 tokens at 0.5 ms, 4 at 1.2 ms, 6 at 2.9 ms.
        b.add(500_000, 10.0);
        b.add(1_200_000, 4.0);
        b.add(2_900_000, 6.0);
        assert_eq!(b.sum_from(1_000_000), 10.0);
        // A cut at 1.5 ms takes half of bin 1 (prorated) and all of bin 2.
        assert_eq!(b.sum_from(1_500_000), 2.0 + 6.0);
        assert_eq!(b.sum_between(0, 1_000_000), 10.0);
    }

    #[test]
    fn long_runs_keep_fixed_memory_and_every_amount() {
        let mut b = TimeBins::default();
        let hour: Nanos = 3_600 * 1_000_000_000;
        for i in 0..100_000u64 {
            b.add(i * (hour / 100_000), 1.0);
        }
        assert!(b.sums.len() <= MAX_BINS);
        assert_eq!(b.sum_from(0), 100_000.0);
        assert!(b.width() <= 2 * hour / MAX_BINS as u64);
        // Half the arrivals lie after the half-hour, within one bin's amount.
        let half = b.sum_from(hour / 2);
        let bin = 100_000.0 * b.width() as f64 / hour as f64;
        assert!((half - 50_000.0).abs() <= bin, "{half}");
    }
}
