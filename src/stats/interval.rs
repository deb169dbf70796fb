//! Confidence intervals: how far a measured number can be trusted.
//!
//! The draft asks for confidence intervals on key metrics (section 6.3)
//! and for SLO compliance checks at each load level (5.2.3 step 3e). Three
//! kinds of interval cover those needs:
//!
//! * the Wilson score interval for a proportion (share of requests that
//!   met an SLO), which stays inside [0, 1] and behaves at 0 % and 100 %,
//!   where the textbook normal interval collapses to a point;
//! * the Student-t interval for the mean of a few run-level values;
//! * the percentile bootstrap for a mean or a difference of means over
//!   run-level values, which assumes no shape for the distribution.
//!
//! The bootstrap here resamples *runs*, never requests: requests inside one
//! run share a warm cache, a queue and a batch, so they are not independent
//! and resampling them would give intervals that are far too narrow.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::dist::{normal_quantile, student_t_quantile};

/// Resamples drawn by the bootstrap unless the caller asks otherwise. At
/// 10,000 the Monte Carlo error of a 95 % percentile bound is well under a
/// tenth of the interval's width.
pub const DEFAULT_RESAMPLES: usize = 10_000;

/// Seed of the bootstrap unless the caller asks otherwise. Fixed so that the
/// same runs always produce the same report.
pub const DEFAULT_SEED: u64 = 0x5EED_BE4C;

/// Fewest run-level values a bootstrap interval is computed from: the
/// draft's "at least 3" independent runs (section 6.3).
pub const MIN_RUNS: usize = 3;

/// Arithmetic mean; None for an empty slice.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// Sample variance with the n − 1 denominator; None with fewer than two
/// values. Two-pass (deviations from the mean) to avoid the cancellation of
/// the sum-of-squares shortcut.
pub fn sample_variance(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    let ss: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    Some(ss / (values.len() - 1) as f64)
}

fn valid_confidence(confidence: f64) -> bool {
    confidence > 0.0 && confidence < 1.0
}

/// Wilson score interval `(lo, hi)` for a binomial proportion: `successes`
/// of `trials`, at two-sided `confidence` (e.g. 0.95). Both bounds are
/// proportions in [0, 1]. None when `trials` is 0, `successes > trials`, or
/// the confidence is not strictly between 0 and 1.
///
/// Example: 95 of 100 at 95 % gives (0.8882, 0.9785).
pub fn wilson(successes: u64, trials: u64, confidence: f64) -> Option<(f64, f64)> {
    if trials == 0 || successes > trials || !valid_confidence(confidence) {
        return None;
    }
    let z = normal_quantile(0.5 + confidence / 2.0)?;
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At 0 or `trials` successes the bound is exactly 0 or 1, but the
    // subtraction leaves a rounding residue; pin it so that "0 failures"
    // reports an upper bound of exactly 1.
    let lo = if successes == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if successes == trials {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some((lo, hi))
}

/// Verdict of an SLO attainment check against a target proportion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum SloVerdict {
    /// The whole interval is at or above the target.
    Pass,
    /// The whole interval is below the target.
    Fail,
    /// The interval straddles the target: the level has not yet shown
    /// either way, and the caller should extend it (more requests).
    Undecided,
}

/// Decides whether `successes` of `trials` requests meeting their SLO
/// demonstrates an attainment of at least `target` (a proportion, e.g.
/// 0.99), using the Wilson interval at `confidence`: `Pass` when the lower
/// bound is ≥ target, `Fail` when the upper bound is < target, `Undecided`
/// otherwise. None for invalid input (see [`wilson`]; target outside [0, 1]).
///
/// The interval, not the point estimate, decides, so that 99 of 100 is not
/// declared a pass of a 99 % target on the strength of a single request.
pub fn slo_verdict(
    successes: u64,
    trials: u64,
    target: f64,
    confidence: f64,
) -> Option<SloVerdict> {
    if !(0.0..=1.0).contains(&target) {
        return None;
    }
    let (lo, hi) = wilson(successes, trials, confidence)?;
    Some(if lo >= target {
        SloVerdict::Pass
    } else if hi < target {
        SloVerdict::Fail
    } else {
        SloVerdict::Undecided
    })
}

/// A mean with its Student-t confidence interval, in the unit of the values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeanCi {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1 denominator).
    pub std_dev: f64,
    /// Lower bound of the interval.
    pub lo: f64,
    /// Upper bound of the interval.
    pub hi: f64,
    /// Two-sided confidence level the bounds were computed at.
    pub confidence: f64,
}

/// Mean of `values` with the interval mean ± t·s/√n, t the Student-t
/// quantile with n − 1 degrees of freedom. Assumes the values are
/// independent and roughly normal (true of run-level means more often than
/// of raw latencies). None with fewer than 2 values, a non-finite value, or
/// a confidence outside (0, 1).
pub fn mean_t_ci(values: &[f64], confidence: f64) -> Option<MeanCi> {
    if values.len() < 2 || !valid_confidence(confidence) || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let n = values.len();
    let m = mean(values)?;
    let sd = sample_variance(values)?.sqrt();
    let t = student_t_quantile(0.5 + confidence / 2.0, (n - 1) as f64)?;
    let half = t * sd / (n as f64).sqrt();
    Some(MeanCi {
        n,
        mean: m,
        std_dev: sd,
        lo: m - half,
        hi: m + half,
        confidence,
    })
}

/// The exact (Garwood) interval of a Poisson rate: `count` events in `span_s` seconds, per
/// second. Lower `Gamma⁻¹(α/2; count)`, upper `Gamma⁻¹(1 − α/2; count + 1)`, over the span
/// (the classic chi-square form, χ²(2k)/2, written with the gamma quantile). The count may
/// be fractional (a rate times a span). `None` for an empty span or an invalid confidence;
/// a count of 0 has a lower bound of 0.
pub fn poisson_rate(count: f64, span_s: f64, confidence: f64) -> Option<(f64, f64)> {
    if !(span_s > 0.0 && count >= 0.0 && valid_confidence(confidence)) {
        return None;
    }
    let tail = (1.0 - confidence) / 2.0;
    let lo = if count > 0.0 {
        super::dist::gamma_quantile(tail, count)?
    } else {
        0.0
    };
    let hi = super::dist::gamma_quantile(1.0 - tail, count + 1.0)?;
    Some((lo / span_s, hi / span_s))
}

/// How a bootstrap interval is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// Two-sided confidence level, strictly between 0 and 1 (e.g. 0.95).
    pub confidence: f64,
    /// Number of resamples B.
    pub resamples: usize,
    /// Seed of the ChaCha8 generator; the same seed and data give the same
    /// interval bit for bit.
    pub seed: u64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        Self {
            confidence: 0.95,
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
        }
    }
}

impl BootstrapConfig {
    fn is_valid(&self) -> bool {
        valid_confidence(self.confidence) && self.resamples > 0
    }
}

/// A statistic with its percentile-bootstrap interval, in the statistic's
/// unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapCi {
    /// The statistic on the original data (not the bootstrap average).
    pub estimate: f64,
    /// Lower percentile bound.
    pub lo: f64,
    /// Upper percentile bound.
    pub hi: f64,
    /// Two-sided confidence level.
    pub confidence: f64,
    /// Resamples drawn.
    pub resamples: usize,
}

/// Quantile of sorted data by linear interpolation between order statistics
/// (the "type 7" rule of R and NumPy), `q` in [0, 1].
fn sorted_quantile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let below = h.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    sorted[below] + (h - below as f64) * (sorted[above] - sorted[below])
}

/// Percentile bounds of the bootstrap replicates.
fn percentile_bounds(mut replicates: Vec<f64>, confidence: f64) -> (f64, f64) {
    replicates.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    (
        sorted_quantile(&replicates, tail),
        sorted_quantile(&replicates, 1.0 - tail),
    )
}

fn fill_resample(rng: &mut ChaCha8Rng, source: &[f64], into: &mut Vec<f64>) {
    into.clear();
    into.extend((0..source.len()).map(|_| source[rng.random_range(0..source.len())]));
}

/// Percentile bootstrap interval of `statistic` over run-level `values`:
/// draw B resamples of the same size with replacement, evaluate the
/// statistic on each, and take the (1 − c)/2 and (1 + c)/2 quantiles of the
/// replicates. None with fewer than [`MIN_RUNS`] values, a non-finite
/// value, or an invalid configuration.
///
/// With 3 runs there are only 10 distinct resamples of the mean, so the
/// interval is coarse and on the narrow side; it still beats pretending
/// that requests are independent samples.
pub fn bootstrap_ci<F>(
    values: &[f64],
    statistic: F,
    config: &BootstrapConfig,
) -> Option<BootstrapCi>
where
    F: Fn(&[f64]) -> f64,
{
    if values.len() < MIN_RUNS || !config.is_valid() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut sample = Vec::with_capacity(values.len());
    let replicates: Vec<f64> = (0..config.resamples)
        .map(|_| {
            fill_resample(&mut rng, values, &mut sample);
            statistic(&sample)
        })
        .collect();
    let (lo, hi) = percentile_bounds(replicates, config.confidence);
    Some(BootstrapCi {
        estimate: statistic(values),
        lo,
        hi,
        confidence: config.confidence,
        resamples: config.resamples,
    })
}

fn mean_of(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Percentile bootstrap interval of the mean of run-level `values` (same
/// unit as the values). See [`bootstrap_ci`].
pub fn bootstrap_mean_ci(values: &[f64], config: &BootstrapConfig) -> Option<BootstrapCi> {
    bootstrap_ci(values, mean_of, config)
}

/// Percentile bootstrap interval of `mean(b) − mean(a)` (unit of the
/// values), resampling each group independently with its own size, as the
/// two systems' runs are independent of each other. None unless both groups
/// have at least [`MIN_RUNS`] finite values and the configuration is valid.
pub fn bootstrap_diff_of_means_ci(
    a: &[f64],
    b: &[f64],
    config: &BootstrapConfig,
) -> Option<BootstrapCi> {
    let finite = |xs: &[f64]| xs.len() >= MIN_RUNS && xs.iter().all(|v| v.is_finite());
    if !finite(a) || !finite(b) || !config.is_valid() {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let (mut sa, mut sb) = (Vec::with_capacity(a.len()), Vec::with_capacity(b.len()));
    let replicates: Vec<f64> = (0..config.resamples)
        .map(|_| {
            fill_resample(&mut rng, a, &mut sa);
            fill_resample(&mut rng, b, &mut sb);
            mean_of(&sb) - mean_of(&sa)
        })
        .collect();
    let (lo, hi) = percentile_bounds(replicates, config.confidence);
    Some(BootstrapCi {
        estimate: mean_of(b) - mean_of(a),
        lo,
        hi,
        confidence: config.confidence,
        resamples: config.resamples,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn poisson_rates_match_the_garwood_table() {
        // 10 events: 4.795–18.390 at 95 % (Garwood 1936; the chi-square table's
        // χ²(0.025, 20)/2 and χ²(0.975, 22)/2); none: 0–3.689.
        let (lo, hi) = super::poisson_rate(10.0, 1.0, 0.95).unwrap();
        assert!(
            (lo - 4.7954).abs() < 1e-3 && (hi - 18.3904).abs() < 1e-3,
            "{lo} {hi}"
        );
        let (lo, hi) = super::poisson_rate(0.0, 2.0, 0.95).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 3.6889 / 2.0).abs() < 1e-3, "{hi}");
        assert!(super::poisson_rate(5.0, 0.0, 0.95).is_none());
    }

    use super::*;

    #[test]
    fn wilson_95_of_100() {
        // z = 1.959964, p̂ = 0.95, n = 100:
        // denom = 1 + z²/n = 1.038415; centre = (0.95 + z²/200)/denom = 0.933353;
        // half = z/denom · sqrt(0.95·0.05/100 + z²/40000) = 0.045103;
        // (0.888250, 0.978456).
        let (lo, hi) = wilson(95, 100, 0.95).unwrap();
        assert!((lo - 0.888_249_530_768_080_8).abs() < 1e-9, "{lo}");
        assert!((hi - 0.978_456_320_845_631_9).abs() < 1e-9, "{hi}");
    }

    #[test]
    fn wilson_edges() {
        // 0 of 10: lo = 0, hi = z²/n / (1 + z²/n) = 0.384146/1.384146 = 0.277533.
        let (lo, hi) = wilson(0, 10, 0.95).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 0.277_532_799_862_889_2).abs() < 1e-9);
        // 10 of 10 mirrors it.
        let (lo, hi) = wilson(10, 10, 0.95).unwrap();
        assert!((lo - 0.722_467_200_137_110_9).abs() < 1e-9);
        assert_eq!(hi, 1.0);
        assert!(wilson(0, 0, 0.95).is_none());
        assert!(wilson(11, 10, 0.95).is_none());
        assert!(wilson(5, 10, 1.0).is_none());
    }

    #[test]
    fn slo_verdicts() {
        // 990/1000 at 95 %: (0.981691, 0.994559).
        assert_eq!(slo_verdict(990, 1000, 0.98, 0.95), Some(SloVerdict::Pass));
        assert_eq!(slo_verdict(990, 1000, 0.995, 0.95), Some(SloVerdict::Fail));
        assert_eq!(
            slo_verdict(990, 1000, 0.99, 0.95),
            Some(SloVerdict::Undecided)
        );
        // 95/100 straddles 0.9 (0.888 < 0.9 < 0.978).
        assert_eq!(
            slo_verdict(95, 100, 0.90, 0.95),
            Some(SloVerdict::Undecided)
        );
        assert_eq!(slo_verdict(95, 100, 0.88, 0.95), Some(SloVerdict::Pass));
        assert_eq!(slo_verdict(95, 100, 1.5, 0.95), None);
    }

    #[test]
    fn t_interval_by_hand() {
        // 10, 12, 14: mean 12, s = 2, t_{0.975, 2} = 4.302653,
        // half = 4.302653 · 2 / sqrt(3) = 4.968275.
        let ci = mean_t_ci(&[10.0, 12.0, 14.0], 0.95).unwrap();
        assert_eq!(ci.mean, 12.0);
        assert!((ci.std_dev - 2.0).abs() < 1e-12);
        assert!((ci.lo - (12.0 - 4.968_275_4)).abs() < 1e-6, "{}", ci.lo);
        assert!((ci.hi - (12.0 + 4.968_275_4)).abs() < 1e-6, "{}", ci.hi);
        assert!(mean_t_ci(&[1.0], 0.95).is_none());
        assert!(mean_t_ci(&[1.0, f64::NAN], 0.95).is_none());
    }

    #[test]
    fn variance_is_two_pass() {
        // Large offset, small spread: the shortcut Σx² − n·x̄² would lose it.
        let v = [1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0];
        assert!((sample_variance(&v).unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn type7_quantile() {
        // 1..=5: q = 0.25 → h = 1 → 2; q = 0.1 → h = 0.4 → 1.4.
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(sorted_quantile(&s, 0.25), 2.0);
        assert!((sorted_quantile(&s, 0.1) - 1.4).abs() < 1e-12);
        assert_eq!(sorted_quantile(&s, 1.0), 5.0);
    }

    #[test]
    fn bootstrap_is_reproducible_and_seed_dependent() {
        // Ten distinct run values, so that the resampled means are fine
        // grained and a different seed shifts the percentile bounds.
        let runs = [
            101.3, 97.52, 103.27, 99.13, 100.41, 98.77, 102.05, 100.9, 96.84, 101.66,
        ];
        let cfg = BootstrapConfig::default();
        let a = bootstrap_mean_ci(&runs, &cfg).unwrap();
        let b = bootstrap_mean_ci(&runs, &cfg).unwrap();
        assert_eq!(a, b);
        let other = BootstrapConfig { seed: 7, ..cfg };
        let c = bootstrap_mean_ci(&runs, &other).unwrap();
        assert_ne!((a.lo, a.hi), (c.lo, c.hi));
        // Mean = 1001.85 / 10.
        assert!((a.estimate - 100.185).abs() < 1e-12);
        assert!(a.lo < a.estimate && a.estimate < a.hi);
        assert!(a.lo >= 96.84 && a.hi <= 103.27);
    }

    #[test]
    fn bootstrap_mean_width_matches_theory() {
        // 1..=10: mean 5.5, s = 3.02765, plug-in standard error
        // s·sqrt((n−1)/n)/sqrt(n) = 0.908295; a 95 % interval is about
        // 5.5 ± 1.96 · 0.908 = (3.72, 7.28), up to Monte Carlo and skew.
        let runs: Vec<f64> = (1..=10).map(f64::from).collect();
        let ci = bootstrap_mean_ci(&runs, &BootstrapConfig::default()).unwrap();
        assert!((ci.lo - 3.72).abs() < 0.15, "{}", ci.lo);
        assert!((ci.hi - 7.28).abs() < 0.15, "{}", ci.hi);
    }

    #[test]
    fn bootstrap_of_a_custom_statistic() {
        // The maximum of a resample of 1..=5 is ≤ 2 with probability
        // (2/5)^5 = 1.0 % and ≤ 3 with (3/5)^5 = 7.8 %, so the 2.5 %
        // quantile of the replicates is 3; the 97.5 % quantile is 5
        // (P(max = 5) = 1 − (4/5)^5 = 67 %).
        let runs = [1.0, 2.0, 3.0, 4.0, 5.0];
        let max = |xs: &[f64]| xs.iter().copied().fold(f64::MIN, f64::max);
        let ci = bootstrap_ci(&runs, max, &BootstrapConfig::default()).unwrap();
        assert_eq!((ci.lo, ci.estimate, ci.hi), (3.0, 5.0, 5.0));
    }

    #[test]
    fn bootstrap_of_constant_runs_is_a_point() {
        let ci = bootstrap_mean_ci(&[4.0, 4.0, 4.0], &BootstrapConfig::default()).unwrap();
        assert_eq!((ci.lo, ci.estimate, ci.hi), (4.0, 4.0, 4.0));
    }

    #[test]
    fn bootstrap_needs_three_runs() {
        let cfg = BootstrapConfig::default();
        assert!(bootstrap_mean_ci(&[1.0, 2.0], &cfg).is_none());
        assert!(bootstrap_diff_of_means_ci(&[1.0, 2.0, 3.0], &[1.0, 2.0], &cfg).is_none());
        let bad = BootstrapConfig {
            resamples: 0,
            ..cfg
        };
        assert!(bootstrap_mean_ci(&[1.0, 2.0, 3.0], &bad).is_none());
    }

    #[test]
    fn bootstrap_difference_of_shifted_groups() {
        // b = a + 10 exactly: estimate 10; every replicate is
        // mean(b*) − mean(a*), which varies, but with spread 1 against a
        // shift of 10 the whole interval sits well above zero.
        let a = [20.0, 21.0, 19.0, 20.5, 19.5];
        let b: Vec<f64> = a.iter().map(|v| v + 10.0).collect();
        let cfg = BootstrapConfig::default();
        let d = bootstrap_diff_of_means_ci(&a, &b, &cfg).unwrap();
        assert!((d.estimate - 10.0).abs() < 1e-12);
        assert!(d.lo > 8.5 && d.hi < 11.5, "{d:?}");
        assert!(d.lo < 10.0 && d.hi > 10.0);
        assert_eq!(d, bootstrap_diff_of_means_ci(&a, &b, &cfg).unwrap());
    }
}
