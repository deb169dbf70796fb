//! A distribution summary in bounded memory: exact while the sample is small, a log-linear
//! histogram with a stated relative error beyond.
//!
//! A long run cannot keep every TTFT and every inter-token gap (an hour at 200 requests/s of
//! 256 tokens is 184 million gaps). No crate gives the three things the summary needs at
//! once: the same type-7 percentiles as [`Distribution::of`] while the sample fits, exact
//! count, mean, standard deviation, minimum and maximum always, and signed values (a
//! difference of two clocks can be negative), so the few lines are written here. Beyond
//! `exact_cap` values, each value is counted in a bucket of its binary exponent and top 7
//! mantissa bits (128 buckets per power of two); a percentile read back takes each rank's
//! bucket midpoint, so every order statistic it interpolates between is within
//! [`RELATIVE_ERROR`] (1/256, 0.39 %) of the true one, and the result is clamped to the
//! exact minimum and maximum. Memory is bounded by the range of values, not their number:
//! a range of 10^6 (30 powers of two) costs 3,840 counters.

use super::distribution::{percentile_sorted, Distribution};

/// Mantissa bits kept in a bucket index.
const MANTISSA_BITS: u32 = 7;
/// Bits of an `f64` below the kept mantissa bits.
const SHIFT: u32 = 52 - MANTISSA_BITS;

/// Largest relative distance of a bucket's midpoint from any value in it.
pub const RELATIVE_ERROR: f64 = 1.0 / (1u64 << (MANTISSA_BITS + 1)) as f64;

/// Counters over a contiguous range of bucket indices (values of one sign, by magnitude).
#[derive(Debug, Clone, Default)]
struct Buckets {
    first: u64,
    counts: Vec<u64>,
}

impl Buckets {
    fn index(magnitude: f64) -> u64 {
        magnitude.to_bits() >> SHIFT
    }

    fn add(&mut self, magnitude: f64) {
        let i = Self::index(magnitude);
        if self.counts.is_empty() {
            self.first = i;
        }
        if i < self.first {
            let grow = (self.first - i) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = i;
        }
        let at = (i - self.first) as usize;
        if at >= self.counts.len() {
            self.counts.resize(at + 1, 0);
        }
        self.counts[at] += 1;
    }

    fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The midpoint of the bucket `at` positions above the first.
    fn midpoint(&self, at: usize) -> f64 {
        let i = self.first + at as u64;
        let lo = f64::from_bits(i << SHIFT);
        let hi = f64::from_bits((i + 1) << SHIFT);
        (lo + hi) / 2.0
    }

    /// The magnitude of the `k`-th smallest magnitude (0-based).
    fn nth_smallest(&self, mut k: u64) -> f64 {
        for (at, &c) in self.counts.iter().enumerate() {
            if k < c {
                return self.midpoint(at);
            }
            k -= c;
        }
        f64::NAN
    }
}

/// One metric's values, summarised in bounded memory.
#[derive(Debug, Clone)]
pub struct Sketch {
    exact: Option<Vec<f64>>,
    exact_cap: usize,
    negative: Buckets,
    zeros: u64,
    positive: Buckets,
    n: u64,
    mean: f64,
    /// Σ (x − mean)², Welford's running form.
    m2: f64,
    min: f64,
    max: f64,
}

impl Sketch {
    /// A sketch that keeps values exactly until it holds `exact_cap` of them.
    pub fn new(exact_cap: usize) -> Self {
        Self {
            exact: Some(Vec::new()),
            exact_cap,
            negative: Buckets::default(),
            zeros: 0,
            positive: Buckets::default(),
            n: 0,
            mean: 0.0,
            m2: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds one value; NaN and infinities are ignored, as [`Distribution::of`] drops them.
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        match &mut self.exact {
            Some(v) if v.len() < self.exact_cap => v.push(x),
            Some(_) => {
                let kept = self.exact.take().unwrap_or_default();
                for v in kept.into_iter().chain([x]) {
                    self.bucket(v);
                }
            }
            None => self.bucket(x),
        }
    }

    fn bucket(&mut self, x: f64) {
        if x > 0.0 {
            self.positive.add(x);
        } else if x < 0.0 {
            self.negative.add(-x);
        } else {
            self.zeros += 1;
        }
    }

    /// Values added (finite ones).
    pub fn count(&self) -> u64 {
        self.n
    }

    /// True while every value is kept, so percentiles are exact.
    pub fn is_exact(&self) -> bool {
        self.exact.is_some()
    }

    /// The `k`-th smallest value (0-based), from the buckets.
    fn nth(&self, k: u64) -> f64 {
        if k == 0 {
            return self.min;
        }
        if k + 1 >= self.n {
            return self.max;
        }
        let neg = self.negative.total();
        if k < neg {
            // Negative values: the smallest has the largest magnitude.
            return -self.negative.nth_smallest(neg - 1 - k);
        }
        let k = k - neg;
        if k < self.zeros {
            return 0.0;
        }
        self.positive.nth_smallest(k - self.zeros)
    }

    /// The `p`-th percentile (0–100), type 7 as [`percentile_sorted`]; NaN when empty.
    pub fn percentile(&self, p: f64) -> f64 {
        if let Some(v) = &self.exact {
            let mut sorted = v.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            return percentile_sorted(&sorted, p);
        }
        match self.n {
            0 => f64::NAN,
            1 => self.min,
            n => {
                let rank = (p / 100.0).clamp(0.0, 1.0) * (n - 1) as f64;
                let (lo, hi) = (rank.floor() as u64, rank.ceil() as u64);
                let (a, b) = (self.nth(lo), self.nth(hi));
                (a + (b - a) * (rank - lo as f64)).clamp(self.min, self.max)
            }
        }
    }

    /// The summary [`Distribution::of`] gives of the same values: identical while exact;
    /// beyond, exact count, mean, deviation and extremes, percentiles within
    /// [`RELATIVE_ERROR`] of the order statistics they interpolate.
    pub fn distribution(&self) -> Option<Distribution> {
        if let Some(v) = &self.exact {
            return Distribution::of(&mut v.clone());
        }
        if self.n == 0 {
            return None;
        }
        Some(Distribution {
            n: self.n as usize,
            mean: self.mean,
            std: (self.m2 / self.n as f64).max(0.0).sqrt(),
            min: self.min,
            p50: self.percentile(50.0),
            p90: self.percentile(90.0),
            p95: self.percentile(95.0),
            p99: self.percentile(99.0),
            p999: self.percentile(99.9),
            max: self.max,
        })
    }

    /// Representative values with their counts, ascending (each value exact while the
    /// sketch is, else its bucket's midpoint): for shape and modality checks.
    pub fn weighted_values(&self) -> Vec<(f64, u64)> {
        if let Some(v) = &self.exact {
            let mut sorted = v.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            return sorted.into_iter().map(|x| (x, 1)).collect();
        }
        let mut out = Vec::new();
        for (at, &c) in self.negative.counts.iter().enumerate().rev() {
            if c > 0 {
                out.push((-self.negative.midpoint(at), c));
            }
        }
        if self.zeros > 0 {
            out.push((0.0, self.zeros));
        }
        for (at, &c) in self.positive.counts.iter().enumerate() {
            if c > 0 {
                out.push((self.positive.midpoint(at), c));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn both(values: &[f64], cap: usize) -> (Distribution, Distribution) {
        let mut s = Sketch::new(cap);
        for &v in values {
            s.add(v);
        }
        (
            s.distribution().unwrap(),
            Distribution::of_slice(values).unwrap(),
        )
    }

    #[test]
    fn while_exact_it_is_the_exact_distribution() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        let (s, d) = both(&values, 100);
        assert_eq!(s, d);
    }

    /// Hand-computed: 1..=10 in buckets. The midpoint of 5's bucket [5, 5 + 4/128) is
    /// 5.015625, of 6's [6, 6 + 4/128) 6.015625: P50 (rank 4.5) = 5.515625 against the
    /// exact 5.5; min and max stay exact.
    #[test]
    fn bucketed_percentiles_by_hand() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        let (s, d) = both(&values, 0);
        assert!((s.p50 - 5.515625).abs() < 1e-12, "{}", s.p50);
        assert_eq!((s.min, s.max, s.n), (1.0, 10.0, 10));
        assert!((s.mean - d.mean).abs() < 1e-12 && (s.std - d.std).abs() < 1e-12);
    }

    /// Every percentile of a bucketed sketch lies between the order statistics its rank
    /// interpolates, each widened by the stated relative error.
    #[test]
    fn bucketed_percentiles_are_within_the_stated_error() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut values: Vec<f64> = (0..50_000)
            .map(|i| match i % 5 {
                0 => 0.0,
                1 => -rng.random_range(0.01..3.0),
                _ => rng.random_range(0.0f64..12.0).exp(),
            })
            .collect();
        let mut s = Sketch::new(1_000);
        for &v in &values {
            s.add(v);
        }
        assert!(!s.is_exact());
        values.sort_unstable_by(f64::total_cmp);
        let n = values.len();
        for p in [0.0, 1.0, 10.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0] {
            let rank = p / 100.0 * (n - 1) as f64;
            let (lo, hi) = (values[rank.floor() as usize], values[rank.ceil() as usize]);
            let widen = |x: f64| x.abs() * RELATIVE_ERROR;
            let got = s.percentile(p);
            assert!(
                got >= lo - widen(lo) - 1e-12 && got <= hi + widen(hi) + 1e-12,
                "P{p}: {got} outside [{lo}, {hi}] ± {RELATIVE_ERROR}"
            );
        }
        let d = Distribution::of_slice(&values).unwrap();
        let got = s.distribution().unwrap();
        assert_eq!((got.n, got.min, got.max), (d.n, d.min, d.max));
        assert!((got.mean - d.mean).abs() < 1e-9 * d.mean.abs().max(1.0));
        assert!((got.std - d.std).abs() < 1e-9 * d.std);
    }

    #[test]
    fn memory_follows_the_range_not_the_count() {
        let mut s = Sketch::new(0);
        for i in 0..1_000_000u64 {
            s.add(1.0 + (i % 1000) as f64); // 1..1000: about 10 powers of two
        }
        assert!(
            s.positive.counts.len() <= 11 * 128,
            "{}",
            s.positive.counts.len()
        );
        assert_eq!(s.count(), 1_000_000);
        assert!(s.weighted_values().iter().map(|w| w.1).sum::<u64>() == 1_000_000);
    }

    #[test]
    fn non_finite_values_are_dropped_and_empty_is_none() {
        let mut s = Sketch::new(0);
        s.add(f64::NAN);
        assert!(s.distribution().is_none());
        s.add(3.0);
        assert_eq!(s.distribution().unwrap().p99, 3.0);
    }
}
