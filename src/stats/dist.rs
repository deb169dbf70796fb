//! The few probability distributions the statistics code needs: the
//! standard normal and Student's t, as cumulative distribution functions
//! and quantiles.
//!
//! They are written here rather than pulled from a crate because the
//! general-purpose statistics crates bring a linear-algebra stack with
//! them, which is a lot of compile time for four functions. Everything is
//! built on two classic special functions, the regularized incomplete beta
//! and gamma functions, evaluated by their series and continued fractions
//! to double precision; the quantiles invert the CDFs by bisection, which
//! is slow by numerical standards (about a hundred CDF calls) but cannot
//! diverge, and nothing here is called in a hot loop.

/// Relative accuracy the series and continued fractions iterate to.
const EPS: f64 = 1e-16;
/// Guard against division by zero inside Lentz's continued fraction method.
const TINY: f64 = 1e-300;
/// Iteration cap for the series and continued fractions. Convergence takes
/// a few dozen terms for the arguments used here; the cap only stops a
/// pathological input from looping forever.
const MAX_ITER: usize = 500;

/// Natural logarithm of the gamma function for `x > 0` (Lanczos
/// approximation, g = 7, nine terms; relative error around 1e-15).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection keeps the approximation in the range it is accurate for.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEF[0];
    for (i, c) in COEF.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=MAX_ITER {
        let m = m as f64;
        let m2 = 2.0 * m;
        // Even step of the fraction.
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        // Odd step.
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// Regularized incomplete beta function I_x(a, b) for `a, b > 0` and
/// `0 <= x <= 1`.
pub fn reg_inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The fraction converges quickly only on one side of the mean; the
    // symmetry I_x(a, b) = 1 - I_{1-x}(b, a) covers the other side.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

/// Regularized upper incomplete gamma function Q(a, x) for `a > 0`,
/// `x >= 0`.
fn reg_upper_gamma(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let ln_front = -x + a * x.ln() - ln_gamma(a);
    if x < a + 1.0 {
        // Series for P(a, x), then Q = 1 - P.
        let mut term = 1.0 / a;
        let mut sum = term;
        let mut ap = a;
        for _ in 0..MAX_ITER {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * EPS {
                break;
            }
        }
        1.0 - sum * ln_front.exp()
    } else {
        // Continued fraction for Q directly (modified Lentz).
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..=MAX_ITER {
            let i = i as f64;
            let an = -i * (i - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let step = d * c;
            h *= step;
            if (step - 1.0).abs() < EPS {
                break;
            }
        }
        ln_front.exp() * h
    }
}

/// Standard normal cumulative distribution function Φ(x).
pub fn normal_cdf(x: f64) -> f64 {
    // Φ(x) = erfc(-x/√2) / 2 and erfc(z) = Q(1/2, z²) for z >= 0.
    let tail = 0.5 * reg_upper_gamma(0.5, 0.5 * x * x);
    if x < 0.0 {
        tail
    } else {
        1.0 - tail
    }
}

/// Student's t cumulative distribution function with `df > 0` degrees of
/// freedom (df need not be an integer: Welch's test produces fractional df).
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    // P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2).
    let tail = 0.5 * reg_inc_beta(0.5 * df, 0.5, df / (df + t * t));
    if t < 0.0 {
        tail
    } else {
        1.0 - tail
    }
}

/// Two-sided p-value P(|T| >= |t|) of Student's t with `df` degrees of
/// freedom. Computed from the tail directly, so small p-values keep their
/// precision instead of being lost in `1 - cdf`.
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    reg_inc_beta(0.5 * df, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// Inverts a non-decreasing CDF by bisection on `[lo, hi]`, which must
/// bracket the answer. Stops when the midpoint no longer moves in f64.
fn bisect(cdf: impl Fn(f64) -> f64, p: f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..2_000 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Quantile of the Gamma(a, 1) distribution: the x ≥ 0 with P(a, x) = p (the regularized
/// lower incomplete gamma function), for `0 < p < 1` and `a > 0` (None outside). For example
/// Gamma(1, 1) is the unit exponential: p = 0.5 gives ln 2 = 0.693147.
pub fn gamma_quantile(p: f64, a: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0 && a > 0.0) {
        return None;
    }
    // The mean is a and the deviation √a: a + 40(√a + 1) brackets every p above 1e-300.
    let hi = a + 40.0 * (a.sqrt() + 1.0);
    Some(bisect(|x| 1.0 - reg_upper_gamma(a, x), p, 0.0, hi))
}

/// Quantile of the Beta(a, b) distribution: the x in [0, 1] with I_x(a, b) = p, for
/// `0 < p < 1` and `a, b > 0` (None outside). For example Beta(1, 1) is uniform: p = 0.3
/// gives 0.3.
pub fn beta_quantile(p: f64, a: f64, b: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0 && a > 0.0 && b > 0.0) {
        return None;
    }
    Some(bisect(|x| reg_inc_beta(a, b, x), p, 0.0, 1.0))
}

/// Quantile of the standard normal distribution: the z with Φ(z) = p, for
/// `0 < p < 1` (None outside). For example p = 0.975 gives 1.959964.
pub fn normal_quantile(p: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    if p == 0.5 {
        return Some(0.0);
    }
    // Φ underflows to 0 or 1 beyond |z| ≈ 38, so ±40 brackets every p.
    Some(bisect(normal_cdf, p, -40.0, 40.0))
}

/// Quantile of Student's t with `df > 0` degrees of freedom, for
/// `0 < p < 1` (None outside). For example p = 0.975, df = 4 gives 2.776445.
pub fn student_t_quantile(p: f64, df: f64) -> Option<f64> {
    let valid = p > 0.0 && p < 1.0 && df > 0.0 && df.is_finite();
    if !valid {
        return None;
    }
    if p == 0.5 {
        return Some(0.0);
    }
    // Work on the upper half and mirror: the distribution is symmetric.
    let upper = p.max(1.0 - p);
    let mut hi = 1.0;
    // Heavy tails at small df push quantiles far out (df = 1, p = 0.9995
    // is about 637), so grow the bracket until it holds the answer.
    while student_t_cdf(hi, df) < upper {
        hi *= 2.0;
        if hi > 1e300 {
            return None;
        }
    }
    let q = bisect(|t| student_t_cdf(t, df), upper, 0.0, hi);
    Some(if p < 0.5 { -q } else { q })
}

#[cfg(test)]
mod tests {
    #[test]
    fn gamma_and_beta_quantiles_invert_their_cdfs() {
        // Gamma(1, 1) is the unit exponential; Beta(1, 1) the uniform; Beta(2, 1) has CDF x².
        assert!((super::gamma_quantile(0.5, 1.0).unwrap() - 2f64.ln()).abs() < 1e-9);
        assert!((super::beta_quantile(0.3, 1.0, 1.0).unwrap() - 0.3).abs() < 1e-9);
        assert!((super::beta_quantile(0.25, 2.0, 1.0).unwrap() - 0.5).abs() < 1e-9);
        assert!(super::gamma_quantile(1.0, 1.0).is_none());
    }

    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn ln_gamma_matches_reference_values() {
        // References from Python's math.lgamma.
        assert!(close(ln_gamma(0.5), 0.572_364_942_924_700_4, 1e-13));
        assert!(close(ln_gamma(1.5), -0.120_782_237_635_245_43, 1e-13));
        assert!(close(ln_gamma(10.3), 13.482_036_786_138_36, 1e-13));
        assert!(close(ln_gamma(100.7), 362.356_775_203_430_5, 1e-13));
        // Γ(1) = Γ(2) = 1.
        assert!(ln_gamma(1.0).abs() < 1e-14);
        assert!(ln_gamma(2.0).abs() < 1e-14);
    }

    #[test]
    fn incomplete_beta_closed_forms() {
        // I_x(1, 1) = x; I_x(2, 1) = x²; I_x(1, 3) = 1 - (1-x)³.
        assert!(close(reg_inc_beta(1.0, 1.0, 0.3), 0.3, 1e-14));
        assert!(close(reg_inc_beta(2.0, 1.0, 0.7), 0.49, 1e-14));
        assert!(close(
            reg_inc_beta(1.0, 3.0, 0.2),
            1.0 - 0.8f64.powi(3),
            1e-14
        ));
        assert_eq!(reg_inc_beta(2.0, 3.0, 0.0), 0.0);
        assert_eq!(reg_inc_beta(2.0, 3.0, 1.0), 1.0);
    }

    #[test]
    fn normal_cdf_and_quantile() {
        // Φ(1.96) = 0.9750021048517795, Φ(-1) = 0.15865525393145707
        // (Python statistics.NormalDist).
        assert!(close(normal_cdf(1.96), 0.975_002_104_851_779_5, 1e-14));
        assert!(close(normal_cdf(-1.0), 0.158_655_253_931_457_07, 1e-13));
        assert_eq!(normal_cdf(0.0), 0.5);
        let z = normal_quantile(0.975).unwrap();
        assert!(close(z, 1.959_963_984_540_054, 1e-12), "{z}");
        let z = normal_quantile(0.005).unwrap();
        assert!(close(z, -2.575_829_303_548_900_4, 1e-12), "{z}");
        assert!(normal_quantile(0.0).is_none());
        assert!(normal_quantile(1.0).is_none());
        assert!(normal_quantile(f64::NAN).is_none());
    }

    #[test]
    fn student_t_closed_forms() {
        // df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/π.
        let cauchy = 0.5 + 2.0f64.atan() / std::f64::consts::PI;
        assert!(close(student_t_cdf(2.0, 1.0), cauchy, 1e-13));
        // df = 2: F(t) = 1/2 + t / (2·sqrt(2 + t²)).
        let f2 = 0.5 + 1.5 / (2.0 * (2.0f64 + 2.25).sqrt());
        assert!(close(student_t_cdf(1.5, 2.0), f2, 1e-13));
        assert!(close(student_t_cdf(-1.5, 2.0), 1.0 - f2, 1e-13));
        // Two-sided p for df = 2 at t = 1.5 is 2·(1 - F(1.5)).
        assert!(close(
            student_t_two_sided_p(1.5, 2.0),
            2.0 * (1.0 - f2),
            1e-13
        ));
        assert_eq!(student_t_two_sided_p(0.0, 5.0), 1.0);
    }

    #[test]
    fn student_t_quantiles_match_tables() {
        // Table values of t_{0.975, df}. For df = 2 the closed form is
        // t² = 2α²/(1 - α²) with α = 2p - 1 = 0.95, so t = 4.302652729749464;
        // the others were checked by Simpson integration of the t density.
        let cases = [
            (2.0, 4.302_652_729_749_464),
            (4.0, 2.776_445_105_197_799),
            (10.0, 2.228_138_851_964_938_5),
            (30.0, 2.042_272_456_301_238),
        ];
        for (df, want) in cases {
            let got = student_t_quantile(0.975, df).unwrap();
            assert!(close(got, want, 1e-11), "df {df}: {got} vs {want}");
            let low = student_t_quantile(0.025, df).unwrap();
            assert!(close(low, -want, 1e-11));
        }
        // Cauchy: t_{0.9995, 1} = tan(π·0.4995).
        let want = (std::f64::consts::PI * 0.4995).tan();
        let got = student_t_quantile(0.9995, 1.0).unwrap();
        assert!(close(got, want, 1e-10), "{got} vs {want}");
        assert!(student_t_quantile(0.5, 3.0) == Some(0.0));
        assert!(student_t_quantile(0.975, 0.0).is_none());
    }
}
