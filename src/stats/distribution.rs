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
            let rank = (p / 100.0).clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = rank.floor() as usize;
            let hi = rank.ceil() as usize;
            sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
        }
    }
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
}
