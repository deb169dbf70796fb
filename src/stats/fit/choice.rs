//! Which scaling model to name: the simplest that fits within the measurement's noise.
//!
//! A label is a claim a reader acts on: "quadratic" says attention's cost shows at these
//! lengths. On a server whose TTFT is linear, the per-length means still bow a little by
//! chance, and an exact parabola through a slight bow beats the line on any criterion that
//! reads the residuals alone (BIC printed "quadratic" beside "exponent 1.002,
//! R² 0.99999996"). So the straight line is the answer unless a curved model earns its
//! place twice over:
//!
//! 1. **It is statistically better.** The F-test of nested models: with n points, the line's
//!    and the curve's residual sums of squares RSS₁ and RSS₂, F = (RSS₁ − RSS₂) ÷ (RSS₂ ÷
//!    (n − 3)) must exceed the 95 % quantile of F(1, n − 3) (18.51 for 5 points, 6.61 for 8).
//!    The power law nests the line at k = 1 as the quadratic does at c = 0.
//! 2. **It is worth more than the noise.** The curve must depart from the line, at some
//!    measured length, by more than twice that length's noise: the standard error of its mean
//!    TTFT (the per-request standard deviation over √requests) when the requests were
//!    measured, else the curve's own residual standard error √(RSS₂ ÷ (n − 3)). A curvature
//!    smaller than what the means would wander by on a repeat is not a finding.
//!
//! Among the curved models that pass both, BIC ranks them (`fit::best_fit`).

use super::{best_fit, Fit, RSS_FLOOR};
use serde::{Deserialize, Serialize};

/// A departure counts when it exceeds this many standard errors (two-sided 95 %: 1.96).
pub const NOISE_Z: f64 = 2.0;

/// 95 % quantiles of F(1, d) for d = 1 … 20 residual degrees of freedom (F(1, d) = t(d)²).
const F_1_D_95: [f64; 20] = [
    161.45, 18.51, 10.13, 7.71, 6.61, 5.99, 5.59, 5.32, 5.12, 4.96, 4.84, 4.75, 4.67, 4.60, 4.54,
    4.49, 4.45, 4.41, 4.38, 4.35,
];

/// The 95 % quantile of F(1, d), rounded up past d = 20 (each band takes the value of its
/// lowest d, which is the largest): a curved model is never let in by the table's coarseness.
pub fn f_critical(d: usize) -> f64 {
    match d {
        0 => f64::INFINITY,
        1..=20 => F_1_D_95[d - 1],
        21..=30 => 4.35,
        31..=60 => 4.17,
        61..=120 => 4.00,
        _ => 3.92,
    }
}

/// The points the fits were made to, and each one's standard error when it was measured.
#[derive(Debug, Clone, Copy)]
pub struct Points<'a> {
    /// Input lengths, tokens.
    pub xs: &'a [f64],
    /// Latencies, ms.
    pub ys: &'a [f64],
    /// Standard error of each latency, ms (None: not measured).
    pub se_ms: Option<&'a [f64]>,
}

/// What a curved model is worth against the straight line and the noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Curvature {
    /// F statistic of the curve over the line (nested models).
    pub f: f64,
    /// Its 95 % critical value, F(1, n − 3).
    pub f_critical: f64,
    /// The curve's largest departure from the line at a measured length, ms (at the length
    /// where departure ÷ noise is largest).
    pub worth_ms: f64,
    /// That length, tokens.
    pub at_tokens: f64,
    /// The noise there, ms: [`NOISE_Z`] standard errors (of that length's mean TTFT when
    /// measured, else of the curve's residuals).
    pub noise_ms: f64,
    /// The noise came from the requests (per-length standard errors), not the residuals.
    pub measured_noise: bool,
}

impl Curvature {
    /// Both tests passed: the curve is significant and worth more than the noise.
    pub fn earned(&self) -> bool {
        self.f > self.f_critical && self.worth_ms > self.noise_ms
    }
}

/// The curve `curved` against the line `linear` on `points` (see the module's two tests).
pub fn curvature(points: &Points, linear: &Fit, curved: &Fit) -> Curvature {
    let n = points.xs.len();
    let d = n.saturating_sub(curved.model.parameters());
    let mean = points.ys.iter().sum::<f64>() / n.max(1) as f64;
    let ss_tot: f64 = points.ys.iter().map(|y| (y - mean) * (y - mean)).sum();
    // Exact fits leave rounding residue: the same floor as BIC's, so two exact fits tie.
    let floor = ss_tot * RSS_FLOOR;
    let (rss_line, rss_curve) = (linear.rss.max(floor), curved.rss.max(floor));
    let f = if d == 0 {
        0.0
    } else {
        (rss_line - rss_curve) / (rss_curve / d as f64)
    };
    let residual_se = if d == 0 {
        f64::INFINITY
    } else {
        (rss_curve / d as f64).sqrt()
    };
    let measured = points
        .se_ms
        .is_some_and(|s| s.iter().all(|v| v.is_finite()));
    let mut worst = (f64::NEG_INFINITY, 0.0, 0.0, f64::INFINITY);
    for (i, &x) in points.xs.iter().enumerate() {
        let se = match points.se_ms {
            Some(s) if measured => s[i],
            _ => residual_se,
        };
        let worth = (curved.model.predict(x) - linear.model.predict(x)).abs();
        let noise = NOISE_Z * se;
        // The length where the departure stands out most (an exact zero noise: any departure).
        let ratio = if noise > 0.0 {
            worth / noise
        } else {
            worth * f64::MAX
        };
        if ratio > worst.0 {
            worst = (ratio, worth, x, noise);
        }
    }
    Curvature {
        f,
        f_critical: f_critical(d),
        worth_ms: worst.1,
        at_tokens: worst.2,
        noise_ms: worst.3,
        measured_noise: measured,
    }
}

/// The model to name: the straight line unless a curved model in `curved` earned its place
/// ([`Curvature::earned`]); among those that did, BIC's choice. Without a line (fewer than 3
/// usable points) BIC's choice among whatever was fitted.
pub fn within_noise(points: &Points, linear: Option<Fit>, curved: &[Option<Fit>]) -> Option<Fit> {
    let Some(line) = linear else {
        return best_fit(curved);
    };
    let earned: Vec<Option<Fit>> = curved
        .iter()
        .flatten()
        .filter(|c| curvature(points, &line, c).earned())
        .map(|c| Some(*c))
        .collect();
    best_fit(&earned).or(Some(line))
}
