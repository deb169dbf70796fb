//! Comparing two systems (or two builds of one) on one metric, as section 6
//! of the draft asks: at least 3 independent runs each, confidence
//! intervals on the key numbers, and an appropriate statistical test
//! (6.3).
//!
//! Choices, and why:
//!
//! * The unit of evidence is the *run*: each input value is one run's
//!   summary (its mean TTFT, its P99, its throughput). Requests within a
//!   run share warm caches, queue state and batches, so they are
//!   correlated; treating thousands of them as independent samples would
//!   make any difference look significant.
//! * Intervals are the hull of a percentile bootstrap over runs, which
//!   assumes no distribution shape (a P99 per run is far from normal), and
//!   Student's t interval (Welch's for the difference), which knows that 3
//!   to 5 runs are a small sample: the bootstrap alone covers the truth only
//!   about 80 % (3 runs) to 87 % (5 runs) of the time at a nominal 95 %.
//! * The verdict is read from that interval of the difference
//!   against a relative tolerance, not from a p-value: "statistically
//!   significant" says nothing about whether 0.3 % matters, and a
//!   tolerance makes the verdict say so. Welch's t-test (unequal variances
//!   and group sizes) is still reported as the conventional test.
//! * With fewer than 3 runs on either side the result says so instead of
//!   producing numbers that look meaningful.

use serde::{Deserialize, Serialize};

use super::dist::{student_t_quantile, student_t_two_sided_p};
use super::interval::{
    bootstrap_diff_of_means_ci, bootstrap_mean_ci, mean, mean_t_ci, sample_variance, BootstrapCi,
    BootstrapConfig, MIN_RUNS,
};

/// Which way the metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    /// Latencies, error rates.
    LowerIsBetter,
    /// Throughput, goodput, attainment.
    HigherIsBetter,
}

/// Outcome of a comparison of the candidate against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// The whole interval of the difference is better than the baseline by
    /// more than the tolerance.
    Better,
    /// The whole interval is worse than the baseline by more than the
    /// tolerance.
    Worse,
    /// The whole interval lies within ± the tolerance: any difference is
    /// too small to matter, even if it is statistically significant.
    NoDifference,
    /// The interval reaches across a tolerance boundary: more runs needed.
    Inconclusive,
}

/// One group's runs, summarised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Number of runs.
    pub runs: usize,
    /// Mean over runs, in the metric's unit.
    pub mean: f64,
    /// Confidence interval of the mean: the hull of the bootstrap and Student's t, metric's
    /// unit.
    pub ci: (f64, f64),
}

/// Welch's unequal-variance t-test of mean(b) − mean(a).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WelchTest {
    /// t statistic (positive when b's mean is higher).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (fractional).
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// Welch's t-test of the difference mean(b) − mean(a): t = Δ / sqrt(va/na +
/// vb/nb) with Welch–Satterthwaite degrees of freedom. None unless both
/// groups have at least 2 finite values. When neither group varies, the
/// p-value is 1 for equal means and 0 otherwise, with df = na + nb − 2.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<WelchTest> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let diff = mean(b)? - mean(a)?;
    let (qa, qb) = (sample_variance(a)? / na, sample_variance(b)? / nb);
    let se2 = qa + qb;
    if se2 <= 0.0 {
        let (t, p_value) = if diff == 0.0 {
            (0.0, 1.0)
        } else {
            (diff.signum() * f64::INFINITY, 0.0)
        };
        return Some(WelchTest {
            t,
            df: na + nb - 2.0,
            p_value,
        });
    }
    let t = diff / se2.sqrt();
    let df = se2 * se2 / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
    Some(WelchTest {
        t,
        df,
        p_value: student_t_two_sided_p(t, df),
    })
}

/// Hedges' g: the difference of means over the pooled standard deviation,
/// with the small-sample correction 1 − 3/(4(na + nb) − 9). Unitless,
/// positive when b's mean is higher. None when the pooled SD is 0 or a
/// group has fewer than 2 values.
pub fn hedges_g(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let pooled = (((na - 1.0) * sample_variance(a)? + (nb - 1.0) * sample_variance(b)?)
        / (na + nb - 2.0))
        .sqrt();
    if pooled.is_nan() || pooled <= 0.0 {
        return None;
    }
    let correction = 1.0 - 3.0 / (4.0 * (na + nb) - 9.0);
    Some((mean(b)? - mean(a)?) / pooled * correction)
}

/// Full comparison of a candidate against a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Baseline runs.
    pub baseline: GroupSummary,
    /// Candidate runs.
    pub candidate: GroupSummary,
    /// mean(candidate) − mean(baseline), metric's unit.
    pub difference: f64,
    /// Confidence interval of the difference: the hull of the bootstrap and Welch's t,
    /// metric's unit.
    pub difference_ci: (f64, f64),
    /// difference / |mean(baseline)| (0.05 = 5 % higher); None when the
    /// baseline mean is 0.
    pub relative_difference: Option<f64>,
    /// Welch's t-test of the same difference.
    pub welch: WelchTest,
    /// Standardised effect size (Hedges' g, candidate minus baseline);
    /// None when neither group varies.
    pub hedges_g: Option<f64>,
    /// The relative tolerance the verdict used (0.05 = 5 %).
    pub tolerance: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// Result of [`compare`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Both groups had enough runs.
    Compared(Comparison),
    /// A group had fewer than `required` runs: no numbers are produced.
    NotEnoughRuns {
        /// Runs in the baseline.
        baseline_runs: usize,
        /// Runs in the candidate.
        candidate_runs: usize,
        /// Runs needed in each ([`MIN_RUNS`]).
        required: usize,
    },
    /// A value was not finite, or the tolerance or configuration was
    /// invalid.
    InvalidInput {
        /// What was wrong.
        reason: String,
    },
}

/// Verdict from the interval of the difference (candidate − baseline) and
/// an absolute tolerance, oriented so that "better" is positive.
fn verdict(diff_ci: (f64, f64), direction: Direction, tolerance_abs: f64) -> Verdict {
    let (lo, hi) = match direction {
        Direction::HigherIsBetter => diff_ci,
        Direction::LowerIsBetter => (-diff_ci.1, -diff_ci.0),
    };
    if hi < -tolerance_abs {
        Verdict::Worse
    } else if lo > tolerance_abs {
        Verdict::Better
    } else if lo >= -tolerance_abs && hi <= tolerance_abs {
        Verdict::NoDifference
    } else {
        Verdict::Inconclusive
    }
}

/// Compares `candidate` run values against `baseline` run values of one
/// metric. `tolerance` is relative to the baseline mean (0.05 = 5 %; 0
/// makes any clear difference count). The verdict is `Worse` only when the
/// interval of the difference (bootstrap and Welch, see the module) lies entirely beyond the tolerance
/// in the bad direction, `Better` symmetrically, `NoDifference` when it
/// lies entirely within ± the tolerance, and `Inconclusive` otherwise.
pub fn compare(
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    tolerance: f64,
    config: &BootstrapConfig,
) -> Outcome {
    if baseline.len() < MIN_RUNS || candidate.len() < MIN_RUNS {
        return Outcome::NotEnoughRuns {
            baseline_runs: baseline.len(),
            candidate_runs: candidate.len(),
            required: MIN_RUNS,
        };
    }
    let invalid = |reason: &str| Outcome::InvalidInput {
        reason: reason.to_string(),
    };
    if baseline.iter().chain(candidate).any(|v| !v.is_finite()) {
        return invalid("a run value is not finite");
    }
    if !(tolerance >= 0.0 && tolerance.is_finite()) {
        return invalid("tolerance must be a finite number >= 0");
    }
    let (Some(base_ci), Some(cand_ci), Some(diff_ci), Some(welch)) = (
        mean_interval(baseline, config),
        mean_interval(candidate, config),
        bootstrap_diff_of_means_ci(baseline, candidate, config),
        welch_t_test(baseline, candidate),
    ) else {
        return invalid("bootstrap configuration is invalid");
    };
    // The difference's interval is the hull of the bootstrap's and Welch's, for the same
    // reason as each mean's (see [`mean_interval`]).
    let diff_ci = widen(
        diff_ci,
        welch_ci(baseline, candidate, &welch, config.confidence),
    );
    let base_mean = base_ci.estimate;
    let difference = diff_ci.estimate;
    let relative_difference = (base_mean != 0.0).then(|| difference / base_mean.abs());
    let tolerance_abs = tolerance * base_mean.abs();
    Outcome::Compared(Comparison {
        baseline: GroupSummary {
            runs: baseline.len(),
            mean: base_mean,
            ci: (base_ci.lo, base_ci.hi),
        },
        candidate: GroupSummary {
            runs: candidate.len(),
            mean: cand_ci.estimate,
            ci: (cand_ci.lo, cand_ci.hi),
        },
        difference,
        difference_ci: (diff_ci.lo, diff_ci.hi),
        relative_difference,
        welch,
        hedges_g: hedges_g(baseline, candidate),
        tolerance,
        verdict: verdict((diff_ci.lo, diff_ci.hi), direction, tolerance_abs),
    })
}

/// The interval of a mean over run-level `values`, as the comparison reports it for each
/// system (table, chart and JSON alike): the hull of the percentile bootstrap and Student's
/// t interval. With 3 to 5 runs a percentile bootstrap is too narrow: it resamples a handful
/// of values as if they were the population, and its 95 % interval covers the truth only
/// about 80 % (3 runs) to 87 % (5 runs) of the time; with 3 runs it never reaches past the
/// smallest and largest value. Student's t knows the sample is small. The hull keeps the
/// bootstrap's freedom from a normal shape and the t interval's small-sample width. None
/// with fewer than [`MIN_RUNS`] values, a non-finite value or an invalid configuration.
pub fn mean_interval(values: &[f64], config: &BootstrapConfig) -> Option<BootstrapCi> {
    let bootstrap = bootstrap_mean_ci(values, config)?;
    Some(widen(
        bootstrap,
        mean_t_ci(values, config.confidence).map(|c| (c.lo, c.hi)),
    ))
}

/// The interval stretched to cover `other` too.
fn widen(ci: BootstrapCi, other: Option<(f64, f64)>) -> BootstrapCi {
    match other {
        Some((lo, hi)) if lo.is_finite() && hi.is_finite() => BootstrapCi {
            lo: ci.lo.min(lo),
            hi: ci.hi.max(hi),
            ..ci
        },
        _ => ci,
    }
}

/// Welch's interval of the difference of means mean(b) − mean(a): Δ ± t(df)·SE with
/// SE = sqrt(va/na + vb/nb) from the variances themselves (deriving it from the statistic,
/// SE = Δ / t, loses it when the means are equal and t = 0). None when neither group varies:
/// the bootstrap's interval then stands.
fn welch_ci(a: &[f64], b: &[f64], w: &WelchTest, confidence: f64) -> Option<(f64, f64)> {
    let se2 = sample_variance(a)? / a.len() as f64 + sample_variance(b)? / b.len() as f64;
    if !(se2 > 0.0 && se2.is_finite()) {
        return None;
    }
    let se = se2.sqrt();
    let q = student_t_quantile(0.5 + confidence / 2.0, w.df)?;
    let difference = mean(b)? - mean(a)?;
    Some((difference - q * se, difference + q * se))
}

/// CI gate: true when the candidate is `Worse` than the baseline (see
/// [`compare`]) with the default bootstrap (95 %, 10,000 resamples, fixed
/// seed, so the gate is deterministic). None when either side has fewer
/// than 3 runs or the input is invalid — the caller decides whether that
/// fails the gate.
pub fn regressed(
    baseline_runs: &[f64],
    candidate_runs: &[f64],
    lower_is_better: bool,
    tolerance: f64,
) -> Option<bool> {
    let direction = if lower_is_better {
        Direction::LowerIsBetter
    } else {
        Direction::HigherIsBetter
    };
    match compare(
        baseline_runs,
        candidate_runs,
        direction,
        tolerance,
        &BootstrapConfig::default(),
    ) {
        Outcome::Compared(c) => Some(c.verdict == Verdict::Worse),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: [f64; 5] = [100.0, 101.0, 99.0, 100.5, 99.5];

    fn shifted(by: f64) -> Vec<f64> {
        BASE.iter().map(|v| v + by).collect()
    }

    fn compared(base: &[f64], cand: &[f64], dir: Direction, tol: f64) -> Comparison {
        match compare(base, cand, dir, tol, &BootstrapConfig::default()) {
            Outcome::Compared(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn welch_equal_variances_integer_df() {
        // a = 10, 12, 14; b = 16, 18, 20: means 12, 18, variances 4, 4.
        // se² = 4/3 + 4/3 = 8/3, t = 6 / sqrt(8/3) = sqrt(13.5) = 3.674235,
        // df = (8/3)² / (2 · (4/3)² / 2) = 4.
        // For df = 4, F(t) = 1/2 + (3/4)(α − α³/3), α = t/sqrt(4 + t²):
        // α = 0.878310, p = 2(1 − F) = 0.021312.
        let w = welch_t_test(&[10.0, 12.0, 14.0], &[16.0, 18.0, 20.0]).unwrap();
        assert!((w.t - 13.5f64.sqrt()).abs() < 1e-12);
        assert!((w.df - 4.0).abs() < 1e-12);
        let alpha = w.t / (4.0 + w.t * w.t).sqrt();
        let p = 2.0 * (0.5 - 0.75 * (alpha - alpha.powi(3) / 3.0));
        assert!((w.p_value - p).abs() < 1e-12, "{} vs {p}", w.p_value);
        assert!((w.p_value - 0.021_311_641_128_756_6).abs() < 1e-12);
    }

    #[test]
    fn welch_unequal_sizes_fractional_df() {
        // a = 10, 12, 14 (var 4); b = 15, 17, 19, 21 (mean 18, var 20/3).
        // se² = 4/3 + 5/3 = 3, t = 6/√3 = 3.464102;
        // df = 9 / ((4/3)²/2 + (5/3)²/3) = 9 / (8/9 + 25/27) = 4.959184;
        // p = 0.0182018 (Simpson integration of the t density at that df).
        let w = welch_t_test(&[10.0, 12.0, 14.0], &[15.0, 17.0, 19.0, 21.0]).unwrap();
        assert!((w.t - 12f64.sqrt()).abs() < 1e-12);
        assert!((w.df - 243.0 / 49.0).abs() < 1e-12, "{}", w.df);
        assert!(
            (w.p_value - 0.018_201_779_914_8).abs() < 1e-9,
            "{}",
            w.p_value
        );
        // Swapping the groups flips t, not p.
        let r = welch_t_test(&[15.0, 17.0, 19.0, 21.0], &[10.0, 12.0, 14.0]).unwrap();
        assert!((r.t + w.t).abs() < 1e-12 && (r.p_value - w.p_value).abs() < 1e-15);
    }

    #[test]
    fn welch_without_variance() {
        let same = welch_t_test(&[5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap();
        assert_eq!((same.t, same.p_value, same.df), (0.0, 1.0, 3.0));
        let apart = welch_t_test(&[5.0, 5.0], &[6.0, 6.0]).unwrap();
        assert_eq!((apart.t, apart.p_value), (f64::INFINITY, 0.0));
        assert!(welch_t_test(&[1.0], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn hedges_g_by_hand() {
        // Pooled SD of the equal-variance example is 2, d = 6/2 = 3,
        // correction 1 − 3/(4·6 − 9) = 0.8, g = 2.4.
        let g = hedges_g(&[10.0, 12.0, 14.0], &[16.0, 18.0, 20.0]).unwrap();
        assert!((g - 2.4).abs() < 1e-12);
        assert!(hedges_g(&[1.0, 1.0], &[2.0, 2.0]).is_none());
    }

    #[test]
    fn identical_groups_are_no_difference() {
        let c = compared(&BASE, &BASE, Direction::LowerIsBetter, 0.05);
        assert_eq!(c.verdict, Verdict::NoDifference);
        assert_eq!(c.difference, 0.0);
        assert_eq!(c.relative_difference, Some(0.0));
        assert!(c.difference_ci.0 <= 0.0 && c.difference_ci.1 >= 0.0);
        assert_eq!(c.welch.p_value, 1.0);
        assert_eq!(regressed(&BASE, &BASE, true, 0.05), Some(false));
    }

    #[test]
    fn shifted_groups_by_direction() {
        // +20 on a base of 100 with ±1 spread: the difference interval is
        // about (19, 21), far beyond the 5-unit (5 %) tolerance.
        let slower = shifted(20.0);
        let c = compared(&BASE, &slower, Direction::LowerIsBetter, 0.05);
        assert_eq!(c.verdict, Verdict::Worse);
        assert!((c.difference - 20.0).abs() < 1e-12);
        assert!((c.relative_difference.unwrap() - 0.2).abs() < 1e-12);
        assert!(c.welch.p_value < 1e-6);
        assert!(c.difference_ci.0 > 18.0 && c.difference_ci.1 < 22.0);
        // The same numbers as a throughput are an improvement.
        let c = compared(&BASE, &slower, Direction::HigherIsBetter, 0.05);
        assert_eq!(c.verdict, Verdict::Better);
        // A faster candidate under lower-is-better is better.
        let c = compared(&BASE, &shifted(-20.0), Direction::LowerIsBetter, 0.05);
        assert_eq!(c.verdict, Verdict::Better);
        assert_eq!(regressed(&BASE, &slower, true, 0.05), Some(true));
        assert_eq!(regressed(&BASE, &slower, false, 0.05), Some(false));
    }

    #[test]
    fn significant_but_within_tolerance_is_no_difference() {
        // +3 (3 %) is clearly real (Welch p < 0.01) but inside 5 %.
        let c = compared(&BASE, &shifted(3.0), Direction::LowerIsBetter, 0.05);
        assert!(c.welch.p_value < 0.01, "{}", c.welch.p_value);
        assert_eq!(c.verdict, Verdict::NoDifference);
        // With no tolerance the same shift is a regression.
        let c = compared(&BASE, &shifted(3.0), Direction::LowerIsBetter, 0.0);
        assert_eq!(c.verdict, Verdict::Worse);
    }

    #[test]
    fn straddling_the_tolerance_is_inconclusive() {
        // +5 sits on the 5-unit boundary: the interval (about 4 to 6)
        // crosses it.
        let c = compared(&BASE, &shifted(5.0), Direction::LowerIsBetter, 0.05);
        assert!(
            c.difference_ci.0 < 5.0 && c.difference_ci.1 > 5.0,
            "{:?}",
            c.difference_ci
        );
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert_eq!(regressed(&BASE, &shifted(5.0), true, 0.05), Some(false));
    }

    #[test]
    fn each_mean_carries_the_hull_of_bootstrap_and_t() {
        // Runs 10, 11, 12: mean 11, s = 1, t(0.975, df 2) = 4.302653, half-width
        // 4.302653 × 1 / √3 = 2.484138: t interval [8.515862, 13.484138]. The bootstrap
        // of three values never leaves [10, 12], so the hull is the t interval.
        let runs = [10.0, 11.0, 12.0];
        let ci = mean_interval(&runs, &BootstrapConfig::default()).unwrap();
        assert_eq!(ci.estimate, 11.0);
        assert!((ci.lo - 8.515_862).abs() < 1e-5, "{}", ci.lo);
        assert!((ci.hi - 13.484_138).abs() < 1e-5, "{}", ci.hi);
        let c = compared(&runs, &[20.0, 21.0, 22.0], Direction::LowerIsBetter, 0.05);
        assert!((c.baseline.ci.0 - 8.515_862).abs() < 1e-5);
        assert!((c.candidate.ci.1 - 23.484_138).abs() < 1e-5);
        assert!(mean_interval(&runs[..2], &BootstrapConfig::default()).is_none());
    }

    #[test]
    fn equal_means_keep_welchs_part_of_the_difference() {
        // Both groups 10, 11, 12: Δ = 0, SE = sqrt(1/3 + 1/3) = 0.816497, df = 4,
        // t(0.975, 4) = 2.776445: Welch's interval ±2.266958. (Before, t = 0 made
        // SE = Δ / t undefined and only the bootstrap's narrower interval was kept.)
        let runs = [10.0, 11.0, 12.0];
        let c = compared(&runs, &runs, Direction::LowerIsBetter, 0.05);
        assert_eq!(c.difference, 0.0);
        assert!(
            (c.difference_ci.0 + 2.266_958).abs() < 1e-5,
            "{:?}",
            c.difference_ci
        );
        assert!(
            (c.difference_ci.1 - 2.266_958).abs() < 1e-5,
            "{:?}",
            c.difference_ci
        );
        // ±2.27 against a 5 % tolerance of 11 (±0.55): not shown to be the same.
        assert_eq!(c.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn too_few_runs_says_so() {
        let out = compare(
            &[1.0, 2.0],
            &BASE,
            Direction::LowerIsBetter,
            0.05,
            &BootstrapConfig::default(),
        );
        assert_eq!(
            out,
            Outcome::NotEnoughRuns {
                baseline_runs: 2,
                candidate_runs: 5,
                required: 3
            }
        );
        assert_eq!(regressed(&BASE, &[1.0, 2.0], true, 0.05), None);
    }

    #[test]
    fn invalid_inputs() {
        let cfg = BootstrapConfig::default();
        let nan = [1.0, f64::NAN, 2.0];
        assert!(matches!(
            compare(&nan, &BASE, Direction::LowerIsBetter, 0.05, &cfg),
            Outcome::InvalidInput { .. }
        ));
        assert!(matches!(
            compare(&BASE, &BASE, Direction::LowerIsBetter, -0.1, &cfg),
            Outcome::InvalidInput { .. }
        ));
        let bad = BootstrapConfig {
            confidence: 1.0,
            ..cfg
        };
        assert!(matches!(
            compare(&BASE, &BASE, Direction::LowerIsBetter, 0.05, &bad),
            Outcome::InvalidInput { .. }
        ));
    }

    #[test]
    fn zero_baseline_has_no_relative_difference() {
        let c = compared(
            &[0.0, 0.0, 0.0],
            &[1.0, 1.0, 1.0],
            Direction::LowerIsBetter,
            0.05,
        );
        assert_eq!(c.relative_difference, None);
        // Tolerance of 5 % of 0 is 0: the interval (1, 1) is worse.
        assert_eq!(c.verdict, Verdict::Worse);
    }
}
