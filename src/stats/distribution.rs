//! Summary statistics of a sample, with one stated percentile method.
//!
//! Percentiles use linear interpolation between closest ranks (Hyndman–Fan type 7, the
//! default of NumPy and of vLLM's and AIPerf's reports), so numbers line up with theirs.
//! The standard deviation is the population one (divide by n), as in NumPy's default.

use serde::{Deserialize, Serialize};

/// Summary of a sample (units are those of the sample, e.g. ms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Distribution {
    pub n: usize,
    pub mean: f64,
    pub std: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Distribution {
    /// Summarises `values` (sorted in place; NaNs dropped). `None` for an empty sample.
    pub fn of(values: &mut Vec<f64>) -> Option<Self> {
        values.retain(|v| v.is_finite());
        if values.is_empty() {
            return None;
        }
        values.sort_unstable_by(f64::total_cmp);
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        Some(Self {
            n,
            mean,
            std: var.sqrt(),
            min: values[0],
            p50: percentile_sorted(values, 50.0),
            p90: percentile_sorted(values, 90.0),
            p95: percentile_sorted(values, 95.0),
            p99: percentile_sorted(values, 99.0),
            p999: percentile_sorted(values, 99.9),
            max: values[n - 1],
        })
    }

    /// The reported percentile `percentile` (50, 90, 95, 99 or 99.9; anything else reads
    /// as the nearest of them above, 99.9 at most).
    pub fn at(&self, percentile: f64) -> f64 {
        [
            (50.0, self.p50),
            (90.0, self.p90),
            (95.0, self.p95),
            (99.0, self.p99),
        ]
        .into_iter()
        .find(|(p, _)| percentile <= *p + 1e-9)
        .map_or(self.p999, |(_, v)| v)
    }

    /// Summarises a copy of `values`.
    pub fn of_slice(values: &[f64]) -> Option<Self> {
        Self::of(&mut values.to_vec())
    }
}

/// The `p`-th percentile (0–100) of sorted values, by linear interpolation.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let (lo, hi, frac) = type7_rank(n, p);
            sorted[lo] + (sorted[hi] - sorted[lo]) * frac
        }
    }
}

/// The `p`-th percentile (0–100), type 7, of the sample made of `sorted` and `beyond` more
/// values known only to lie above all of them (requests that never answered, against a
/// latency bound). `None` when the percentile reaches into those (no finite value) or the
/// sample is empty; with `beyond` = 0 it is [`percentile_sorted`].
pub fn percentile_with_beyond(sorted: &[f64], beyond: usize, p: f64) -> Option<f64> {
    let n = sorted.len() + beyond;
    if n == 0 {
        return None;
    }
    let (lo, hi, frac) = type7_rank(n, p);
    // The weight on `hi` is `frac`, so a value beyond at `hi` with `frac` = 0 (then
    // `lo` = `hi`, beyond too) is still no finite value.
    (hi < sorted.len()).then(|| sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// Where the type-7 `p`-th percentile (0–100) of `n` ≥ 1 sorted values lies: the ranks
/// either side (0-based) and the weight of the upper one.
fn type7_rank(n: usize, p: f64) -> (usize, usize, f64) {
    let rank = (p / 100.0).clamp(0.0, 1.0) * (n - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    (lo, hi, rank - lo as f64)
}

/// Population standard deviation (0 for fewer than two values).
pub fn std_dev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / values.len() as f64).sqrt()
}

/// Samples a percentile needs to be trusted (draft 5.1.4.3): 1,000 for P99, 10,000 for P99.9.
pub fn samples_needed(percentile: f64) -> usize {
    if percentile >= 99.9 {
        10_000
    } else if percentile >= 99.0 {
        1_000
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_percentiles() {
        // 1..=10: type-7 P50 = 5.5, P90 = 9.1, P99 = 9.91.
        let d = Distribution::of(&mut (1..=10).map(f64::from).collect()).unwrap();
        assert_eq!(d.n, 10);
        assert!((d.p50 - 5.5).abs() < 1e-12);
        assert!((d.p90 - 9.1).abs() < 1e-12);
        assert!((d.p99 - 9.91).abs() < 1e-12);
        assert!((d.p999 - 9.991).abs() < 1e-12);
        assert_eq!((d.min, d.max, d.mean), (1.0, 10.0, 5.5));
        assert!((d.std - 8.25f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn single_value_and_empty() {
        let d = Distribution::of(&mut vec![7.0]).unwrap();
        assert_eq!((d.p50, d.p99, d.std), (7.0, 7.0, 0.0));
        assert!(Distribution::of(&mut vec![]).is_none());
        assert!(Distribution::of(&mut vec![f64::NAN]).is_none());
    }

    #[test]
    fn percentiles_with_values_beyond_the_sample() {
        // 100 and 200 plus one value beyond both: type-7 P50 of 3 values is the 2nd (200);
        // P99 (rank 1.98) weighs the value beyond, so it has no finite value.
        assert_eq!(
            percentile_with_beyond(&[100.0, 200.0], 1, 50.0),
            Some(200.0)
        );
        assert_eq!(percentile_with_beyond(&[100.0, 200.0], 1, 99.0), None);
        assert_eq!(percentile_with_beyond(&[], 2, 0.0), None);
        assert_eq!(percentile_with_beyond(&[], 0, 50.0), None);
        let sorted: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(
            percentile_with_beyond(&sorted, 0, 99.0),
            Some(percentile_sorted(&sorted, 99.0))
        );
    }
}
