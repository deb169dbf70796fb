//! Is a quantity drifting over a measurement window?
//!
//! The draft declares saturation when the queue "grows continuously during
//! test duration" (5.2.3.1) and asks that steady state be verified by a
//! queue depth that is "stable (not growing)" (5.2.3.2). Eyeballing a
//! sampled in-flight count cannot tell a real climb from noise, so this
//! module fits an ordinary least-squares line through the samples and asks
//! whether its slope is positive beyond what noise explains: a two-sided
//! Student-t test on the slope with n − 2 degrees of freedom.
//!
//! Samples of a queue are autocorrelated, which makes the p-value
//! optimistic; callers should sample sparsely (e.g. once a second) and use
//! a strict alpha rather than treat the p-value as exact.

use serde::{Deserialize, Serialize};

use super::dist::student_t_two_sided_p;

/// An OLS line y = intercept + slope·x with the inference on its slope.
/// Units follow the inputs: slope in y-units per x-unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slope {
    /// Number of (x, y) points.
    pub n: usize,
    /// Fitted slope, y-units per x-unit.
    pub slope: f64,
    /// Fitted intercept, y-units (value at x = 0).
    pub intercept: f64,
    /// Standard error of the slope, y-units per x-unit.
    pub std_error: f64,
    /// slope / std_error (±∞ for a perfect non-flat fit, 0 for a flat one).
    pub t_stat: f64,
    /// Two-sided p-value of "slope = 0" against Student t with n − 2 df.
    pub p_value: f64,
}

/// Least-squares slope of `ys` over `xs` with its standard error, t
/// statistic and two-sided p-value. None when the lengths differ, there
/// are fewer than 3 points (no degrees of freedom left for the error), a
/// value is not finite, or every x is the same (the slope is undefined).
///
/// Works on deviations from the means, which keeps large x (timestamps in
/// seconds since the epoch, say) from cancelling. When the points lie
/// exactly on a line the standard error is 0: a non-zero slope then gets
/// t = ±∞ and p = 0, a zero slope t = 0 and p = 1.
pub fn ols_slope(xs: &[f64], ys: &[f64]) -> Option<Slope> {
    let n = xs.len();
    if n != ys.len() || n < 3 {
        return None;
    }
    if xs.iter().chain(ys).any(|v| !v.is_finite()) {
        return None;
    }
    // Exact comparison on purpose: equal inputs are what make the slope
    // undefined, and any real spread is usable after centring.
    if xs.iter().all(|&x| x == xs[0]) {
        return None;
    }
    let nf = n as f64;
    let mx = xs.iter().sum::<f64>() / nf;
    let my = ys.iter().sum::<f64>() / nf;
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        sxx += (x - mx) * (x - mx);
        sxy += (x - mx) * (y - my);
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    // Residuals around the fitted line, computed on centred values.
    let rss: f64 = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| {
            let r = (y - my) - slope * (x - mx);
            r * r
        })
        .sum();
    let df = nf - 2.0;
    let std_error = (rss / df / sxx).sqrt();
    let (t_stat, p_value) = if std_error > 0.0 {
        let t = slope / std_error;
        (t, student_t_two_sided_p(t, df))
    } else if slope == 0.0 {
        (0.0, 1.0)
    } else {
        (slope.signum() * f64::INFINITY, 0.0)
    };
    Some(Slope {
        n,
        slope,
        intercept,
        std_error,
        t_stat,
        p_value,
    })
}

/// True when `ys` (e.g. the in-flight request count) rises with `xs` (e.g.
/// seconds into the window): the OLS slope is positive and its two-sided
/// p-value is below `alpha` (e.g. 0.01). A significant *fall* is not
/// growth. None when [`ols_slope`] is None or alpha is not in (0, 1).
pub fn growing(xs: &[f64], ys: &[f64], alpha: f64) -> Option<bool> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let fit = ols_slope(xs, ys)?;
    Some(fit.slope > 0.0 && fit.p_value < alpha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_worked_example() {
        // x = 1..5, y = 2, 4, 5, 4, 5.
        // x̄ = 3, ȳ = 4; Sxx = 10; Sxy = (-2)(-2) + (-1)(0) + 0 + 1·0 + 2·1 = 6.
        // slope = 0.6, intercept = 4 − 1.8 = 2.2.
        // Fitted: 2.8, 3.4, 4.0, 4.6, 5.2; residuals −0.8, 0.6, 1.0, −0.6, −0.2;
        // RSS = 0.64 + 0.36 + 1 + 0.36 + 0.04 = 2.4.
        // se = sqrt(2.4 / 3 / 10) = sqrt(0.08) = 0.282843; t = 2.121320.
        // p = I_{3/(3+4.5)}(1.5, 0.5) = I_{0.4}(1.5, 0.5); for df = 3 the
        // two-sided p has the closed form
        // 1 − (2/π)(atan(u) + u/(1+u²)) with u = t/√3 = 1.224745:
        // atan(u) = 0.886077, u/(1+u²) = 0.489898, p = 0.124027.
        let fit = ols_slope(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 5.0, 4.0, 5.0]).unwrap();
        assert!((fit.slope - 0.6).abs() < 1e-12);
        assert!((fit.intercept - 2.2).abs() < 1e-12);
        assert!((fit.std_error - 0.08f64.sqrt()).abs() < 1e-12);
        assert!((fit.t_stat - 2.121_320_343_559_642).abs() < 1e-9);
        let u = fit.t_stat / 3f64.sqrt();
        let p = 1.0 - 2.0 / std::f64::consts::PI * (u.atan() + u / (1.0 + u * u));
        assert!((fit.p_value - p).abs() < 1e-12, "{} vs {p}", fit.p_value);
        assert!((fit.p_value - 0.124_027_062_657_554_7).abs() < 1e-9);
        // Not significant at 5 %, so not "growing" even though the slope is up.
        assert_eq!(
            growing(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 5.0, 4.0, 5.0], 0.05),
            Some(false)
        );
    }

    #[test]
    fn steady_climb_is_growing() {
        // In-flight count sampled each second, climbing ~2 per second with
        // ±1 jitter: slope is significant far beyond 1 %.
        let xs: Vec<f64> = (0..20).map(f64::from).collect();
        let jitter = [1.0, -1.0, 0.0, 1.0, -1.0];
        let ys: Vec<f64> = xs
            .iter()
            .enumerate()
            .map(|(i, x)| 10.0 + 2.0 * x + jitter[i % 5])
            .collect();
        assert_eq!(growing(&xs, &ys, 0.01), Some(true));
        // The same climb downwards is not growth.
        let down: Vec<f64> = ys.iter().map(|y| 100.0 - y).collect();
        assert_eq!(growing(&xs, &down, 0.01), Some(false));
    }

    #[test]
    fn flat_noise_is_not_growing() {
        // Alternating 50, 52: slope is tiny and far from significant.
        let xs: Vec<f64> = (0..20).map(f64::from).collect();
        let ys: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 50.0 } else { 52.0 })
            .collect();
        let fit = ols_slope(&xs, &ys).unwrap();
        assert!(fit.p_value > 0.5, "{fit:?}");
        assert_eq!(growing(&xs, &ys, 0.05), Some(false));
    }

    #[test]
    fn exact_lines() {
        // Perfect rise: se = 0, p = 0, growing.
        let fit = ols_slope(&[0.0, 1.0, 2.0], &[1.0, 3.0, 5.0]).unwrap();
        assert_eq!(fit.std_error, 0.0);
        assert_eq!(fit.p_value, 0.0);
        assert_eq!(fit.t_stat, f64::INFINITY);
        assert_eq!(
            growing(&[0.0, 1.0, 2.0], &[1.0, 3.0, 5.0], 0.05),
            Some(true)
        );
        // Constant y: slope 0, p = 1.
        let fit = ols_slope(&[0.0, 1.0, 2.0], &[7.0, 7.0, 7.0]).unwrap();
        assert_eq!((fit.slope, fit.t_stat, fit.p_value), (0.0, 0.0, 1.0));
    }

    #[test]
    fn large_x_offset_does_not_cancel() {
        // Epoch-like timestamps: y = 3 + 0.5·(x − 1.7e9).
        let xs: Vec<f64> = (0..10).map(|i| 1.7e9 + f64::from(i)).collect();
        let ys: Vec<f64> = (0..10).map(|i| 3.0 + 0.5 * f64::from(i)).collect();
        let fit = ols_slope(&xs, &ys).unwrap();
        assert!((fit.slope - 0.5).abs() < 1e-9, "{}", fit.slope);
    }

    #[test]
    fn degenerate_inputs_are_none() {
        assert!(ols_slope(&[1.0, 2.0], &[1.0, 2.0]).is_none());
        assert!(ols_slope(&[3.0, 3.0, 3.0], &[1.0, 2.0, 3.0]).is_none());
        assert!(ols_slope(&[1.0, 2.0, 3.0], &[1.0, 2.0]).is_none());
        assert!(ols_slope(&[1.0, 2.0, f64::NAN], &[1.0, 2.0, 3.0]).is_none());
        assert!(growing(&[1.0, 2.0], &[1.0, 2.0], 0.05).is_none());
        assert!(growing(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0], 0.0).is_none());
    }
}
