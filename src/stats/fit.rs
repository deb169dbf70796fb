//! Long-context scaling: how latency grows with input length (draft 5.9).
//!
//! The draft asks for the prefill time per input token, the exponent k of
//! TTFT ∝ length^k, and a best fit among scaling models (its example:
//! "Best fit: Linear (R^2 = 0.9987), ~68 microseconds per input token").
//! Three models are fitted to latency y (ms) against input length x
//! (tokens):
//!
//! * linear, y = a + b·x — compute-bound prefill with a fixed overhead;
//! * quadratic, y = a + b·x + c·x² — attention's quadratic term showing;
//! * power law, y = a·x^k — the draft's exponent, fitted by OLS of ln y on
//!   ln x.
//!
//! All three report R² in the original (ms) space, including the power law
//! whose parameters come from log space: a log-space R² measures relative
//! error and would not be comparable with the other two.
//!
//! Lengths span two or three orders of magnitude (1K to 128K), so x² spans
//! five or six, and textbook normal equations lose most of their digits.
//! The fits therefore centre and scale x to [−1, 1] first and solve the
//! least-squares problem by Householder QR, then map the coefficients back.

use serde::{Deserialize, Serialize};

/// Which scaling model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelKind {
    /// y = a + b·x
    Linear,
    /// y = a + b·x + c·x²
    Quadratic,
    /// y = a·x^k
    PowerLaw,
}

/// A fitted scaling model of latency (ms) against input length (tokens).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Model {
    /// `a` in ms, `b` in ms per token.
    Linear { a: f64, b: f64 },
    /// `a` in ms, `b` in ms per token, `c` in ms per token².
    Quadratic { a: f64, b: f64, c: f64 },
    /// `a` in ms per token^k, `k` dimensionless.
    PowerLaw { a: f64, k: f64 },
}

impl Model {
    /// The model's kind.
    pub fn kind(&self) -> ModelKind {
        match self {
            Model::Linear { .. } => ModelKind::Linear,
            Model::Quadratic { .. } => ModelKind::Quadratic,
            Model::PowerLaw { .. } => ModelKind::PowerLaw,
        }
    }

    /// Number of fitted parameters (2 or 3).
    pub fn parameters(&self) -> usize {
        match self {
            Model::Quadratic { .. } => 3,
            _ => 2,
        }
    }

    /// Predicted latency in ms at input length `x` tokens.
    pub fn predict(&self, x: f64) -> f64 {
        match *self {
            Model::Linear { a, b } => a + b * x,
            Model::Quadratic { a, b, c } => a + b * x + c * x * x,
            Model::PowerLaw { a, k } => a * x.powf(k),
        }
    }
}

/// A model with its goodness of fit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// The fitted model and coefficients.
    pub model: Model,
    /// Coefficient of determination 1 − SS_res/SS_tot in the original ms
    /// space (also for the power law).
    pub r_squared: f64,
    /// R² adjusted for the number of parameters p over n points:
    /// 1 − (1 − R²)(n − 1)/(n − p).
    pub adj_r_squared: f64,
}

/// Solves min ‖A·β − y‖ by Householder QR. `columns` holds the columns of
/// A (each of y's length). None when A is rank deficient.
fn least_squares(columns: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let p = columns.len();
    let mut a: Vec<Vec<f64>> = columns.to_vec();
    let mut b = y.to_vec();
    let scale = a
        .iter()
        .map(|c| c.iter().map(|v| v * v).sum::<f64>().sqrt())
        .fold(0.0, f64::max);
    for k in 0..p {
        let norm = a[k][k..].iter().map(|v| v * v).sum::<f64>().sqrt();
        // A column with nothing left beyond the span of the previous ones.
        if norm <= 1e-12 * scale {
            return None;
        }
        let alpha = if a[k][k] > 0.0 { -norm } else { norm };
        let mut v = a[k][k..].to_vec();
        v[0] -= alpha;
        let vv: f64 = v.iter().map(|x| x * x).sum();
        // Reflect the remaining columns and the right-hand side.
        for col in a.iter_mut().skip(k).chain(std::iter::once(&mut b)) {
            let dot: f64 = v.iter().zip(&col[k..]).map(|(vi, ci)| vi * ci).sum();
            let f = 2.0 * dot / vv;
            for (ci, vi) in col[k..].iter_mut().zip(&v) {
                *ci -= f * vi;
            }
        }
    }
    // Back substitution on R (upper triangle, a[j][i] for i <= j).
    let mut beta = vec![0.0; p];
    for i in (0..p).rev() {
        let s: f64 = ((i + 1)..p).map(|j| a[j][i] * beta[j]).sum();
        beta[i] = (b[i] - s) / a[i][i];
    }
    Some(beta)
}

/// Centres and scales `xs` to [−1, 1]: returns (u, mean, half-range).
/// None when all x are equal.
fn standardise(xs: &[f64]) -> Option<(Vec<f64>, f64, f64)> {
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let s = xs.iter().map(|x| (x - m).abs()).fold(0.0, f64::max);
    // Equal inputs can leave a rounding residue in the mean, hence the
    // exact test alongside the zero-range one.
    if s <= 0.0 || xs.iter().all(|&x| x == xs[0]) {
        return None;
    }
    Some((xs.iter().map(|x| (x - m) / s).collect(), m, s))
}

/// R² and adjusted R² of predictions against `ys`, or None when the ys
/// have no variance (nothing to explain) or n ≤ p.
fn goodness(ys: &[f64], predicted: &[f64], params: usize) -> Option<(f64, f64)> {
    let n = ys.len();
    if n <= params {
        return None;
    }
    let my = ys.iter().sum::<f64>() / n as f64;
    let ss_tot: f64 = ys.iter().map(|y| (y - my) * (y - my)).sum();
    if ss_tot <= 0.0 {
        return None;
    }
    let ss_res: f64 = ys
        .iter()
        .zip(predicted)
        .map(|(y, f)| (y - f) * (y - f))
        .sum();
    let r2 = 1.0 - ss_res / ss_tot;
    let adj = 1.0 - (1.0 - r2) * (n - 1) as f64 / (n - params) as f64;
    Some((r2, adj))
}

fn usable(xs: &[f64], ys: &[f64], min_points: usize) -> bool {
    xs.len() == ys.len() && xs.len() >= min_points && xs.iter().chain(ys).all(|v| v.is_finite())
}

/// Fits y = a + b·x. Needs 3 points or more (2 would fit exactly and leave
/// adjusted R² undefined), finite values, some spread in x and in y.
pub fn fit_linear(xs: &[f64], ys: &[f64]) -> Option<Fit> {
    if !usable(xs, ys, 3) {
        return None;
    }
    let (u, m, s) = standardise(xs)?;
    let beta = least_squares(&[vec![1.0; u.len()], u.clone()], ys)?;
    let predicted: Vec<f64> = u.iter().map(|ui| beta[0] + beta[1] * ui).collect();
    let (r_squared, adj_r_squared) = goodness(ys, &predicted, 2)?;
    // y = α + β(x − m)/s.
    let b = beta[1] / s;
    Some(Fit {
        model: Model::Linear {
            a: beta[0] - b * m,
            b,
        },
        r_squared,
        adj_r_squared,
    })
}

/// Fits y = a + b·x + c·x². Needs 4 points or more, at least 3 distinct x.
pub fn fit_quadratic(xs: &[f64], ys: &[f64]) -> Option<Fit> {
    if !usable(xs, ys, 4) {
        return None;
    }
    let (u, m, s) = standardise(xs)?;
    let u2: Vec<f64> = u.iter().map(|v| v * v).collect();
    let beta = least_squares(&[vec![1.0; u.len()], u.clone(), u2], ys)?;
    let predicted: Vec<f64> = u
        .iter()
        .map(|ui| beta[0] + beta[1] * ui + beta[2] * ui * ui)
        .collect();
    let (r_squared, adj_r_squared) = goodness(ys, &predicted, 3)?;
    // y = α + β(x − m)/s + γ(x − m)²/s², expanded in powers of x.
    let (alpha, b1, g) = (beta[0], beta[1] / s, beta[2] / (s * s));
    Some(Fit {
        model: Model::Quadratic {
            a: alpha - b1 * m + g * m * m,
            b: b1 - 2.0 * g * m,
            c: g,
        },
        r_squared,
        adj_r_squared,
    })
}

/// Fits y = a·x^k by OLS of ln y on ln x. Needs 3 points or more with
/// x > 0 and y > 0. R² is computed from a·x^k against y in ms, not in logs.
pub fn fit_power_law(xs: &[f64], ys: &[f64]) -> Option<Fit> {
    if !usable(xs, ys, 3) || xs.iter().chain(ys).any(|&v| v <= 0.0) {
        return None;
    }
    let lx: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let ly: Vec<f64> = ys.iter().map(|y| y.ln()).collect();
    let (u, m, s) = standardise(&lx)?;
    let beta = least_squares(&[vec![1.0; u.len()], u.clone()], &ly)?;
    let predicted: Vec<f64> = u.iter().map(|ui| (beta[0] + beta[1] * ui).exp()).collect();
    let (r_squared, adj_r_squared) = goodness(ys, &predicted, 2)?;
    let k = beta[1] / s;
    Some(Fit {
        model: Model::PowerLaw {
            a: (beta[0] - k * m).exp(),
            k,
        },
        r_squared,
        adj_r_squared,
    })
}

/// Latency per 1K input tokens at one length (the draft's Table 12
/// column).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LengthRatio {
    /// Input length, tokens.
    pub input_tokens: f64,
    /// Latency at that length, ms.
    pub latency_ms: f64,
    /// latency / length × 1000, ms per 1K tokens (None for length ≤ 0).
    pub ms_per_1k_tokens: Option<f64>,
}

/// Everything the long-context report needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    /// Linear fit, when it could be made.
    pub linear: Option<Fit>,
    /// Quadratic fit, when it could be made (4+ points).
    pub quadratic: Option<Fit>,
    /// Power-law fit, when it could be made (positive x and y).
    pub power_law: Option<Fit>,
    /// The model with the highest adjusted R² (see [`best_fit`]).
    pub best: Option<ModelKind>,
    /// Scaling exponent k of y ∝ x^k from the power-law fit (the draft's
    /// 5.9.4 "Scaling exponent"), whichever model fits best.
    pub exponent: Option<f64>,
    /// Marginal cost: slope of the linear fit × 1000, ms per 1K tokens.
    pub ms_per_1k_tokens: Option<f64>,
    /// Average cost at each length: y/x × 1000, in input order.
    pub per_length: Vec<LengthRatio>,
}

/// Two adjusted R² closer than this count as a tie, so that rounding does
/// not hand an exact straight line to the quadratic.
const TIE: f64 = 1e-12;

/// The fit with the highest adjusted R². Adjusted, not plain, R²: the
/// quadratic nests the linear model, so its plain R² can never be lower and
/// would win on every data set; the adjustment charges it for the extra
/// parameter. Ties (within 1e-12) go to the model with fewer parameters,
/// then to the one listed first (`scaling` lists linear, power law,
/// quadratic).
pub fn best_fit(fits: &[Option<Fit>]) -> Option<Fit> {
    let mut candidates: Vec<Fit> = fits.iter().flatten().copied().collect();
    // Stable sort keeps linear before power law among two-parameter models
    // when the caller lists them in that order, as `scaling` does.
    candidates.sort_by_key(|f| f.model.parameters());
    let top = candidates
        .iter()
        .map(|f| f.adj_r_squared)
        .fold(f64::NEG_INFINITY, f64::max);
    candidates
        .into_iter()
        .find(|f| f.adj_r_squared >= top - TIE)
}

/// Fits all three models to latency `ys_ms` against input length
/// `xs_tokens` (per-length means, or one point per request) and derives
/// the draft's 5.9.4 measures. None when the slices differ in length or are
/// empty; otherwise each part is present when it can be computed.
pub fn scaling(xs_tokens: &[f64], ys_ms: &[f64]) -> Option<Scaling> {
    if xs_tokens.len() != ys_ms.len() || xs_tokens.is_empty() {
        return None;
    }
    let linear = fit_linear(xs_tokens, ys_ms);
    let quadratic = fit_quadratic(xs_tokens, ys_ms);
    let power_law = fit_power_law(xs_tokens, ys_ms);
    let best = best_fit(&[linear, power_law, quadratic]).map(|f| f.model.kind());
    let exponent = power_law.and_then(|f| match f.model {
        Model::PowerLaw { k, .. } => Some(k),
        _ => None,
    });
    let ms_per_1k_tokens = linear.and_then(|f| match f.model {
        Model::Linear { b, .. } => Some(b * 1000.0),
        _ => None,
    });
    let per_length = xs_tokens
        .iter()
        .zip(ys_ms)
        .map(|(&x, &y)| LengthRatio {
            input_tokens: x,
            latency_ms: y,
            ms_per_1k_tokens: (x > 0.0).then(|| y / x * 1000.0),
        })
        .collect();
    Some(Scaling {
        linear,
        quadratic,
        power_law,
        best,
        exponent,
        ms_per_1k_tokens,
        per_length,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1K, 2K, ..., 128K tokens.
    fn lengths() -> Vec<f64> {
        (0..8).map(|i| 1024.0 * f64::from(1u32 << i)).collect()
    }

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs()
    }

    #[test]
    fn linear_recovered_exactly() {
        // y = 12 + 0.068·x: 68 ms per 1K tokens, the draft's example rate.
        let xs = lengths();
        let ys: Vec<f64> = xs.iter().map(|x| 12.0 + 0.068 * x).collect();
        let f = fit_linear(&xs, &ys).unwrap();
        let Model::Linear { a, b } = f.model else {
            panic!()
        };
        assert!((a - 12.0).abs() < 1e-8, "{a}");
        assert!(rel(b, 0.068) < 1e-12, "{b}");
        assert!((f.r_squared - 1.0).abs() < 1e-12);
        let s = scaling(&xs, &ys).unwrap();
        assert_eq!(s.best, Some(ModelKind::Linear));
        assert!((s.ms_per_1k_tokens.unwrap() - 68.0).abs() < 1e-9);
        // Per-length ratio at 1024: (12 + 69.632)/1024·1000 = 79.71875.
        let first = s.per_length[0];
        assert!((first.ms_per_1k_tokens.unwrap() - 79.718_75).abs() < 1e-9);
    }

    #[test]
    fn quadratic_recovered_exactly() {
        // y = 5 + 0.02·x + 3e-7·x²: at 128K the x² term (5154 ms) dominates.
        let xs = lengths();
        let ys: Vec<f64> = xs.iter().map(|x| 5.0 + 0.02 * x + 3e-7 * x * x).collect();
        let f = fit_quadratic(&xs, &ys).unwrap();
        let Model::Quadratic { a, b, c } = f.model else {
            panic!()
        };
        assert!((a - 5.0).abs() < 1e-6, "{a}");
        assert!(rel(b, 0.02) < 1e-9, "{b}");
        assert!(rel(c, 3e-7) < 1e-9, "{c}");
        let s = scaling(&xs, &ys).unwrap();
        assert_eq!(s.best, Some(ModelKind::Quadratic));
        // The linear fit is worse but still high; the quadratic's is 1.
        assert!(s.linear.unwrap().adj_r_squared < 1.0 - 1e-6);
    }

    #[test]
    fn power_law_k2_recovered() {
        // y = 3·x²: ln y = ln 3 + 2 ln x exactly.
        let xs = lengths();
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 * x * x).collect();
        let f = fit_power_law(&xs, &ys).unwrap();
        let Model::PowerLaw { a, k } = f.model else {
            panic!()
        };
        assert!((k - 2.0).abs() < 1e-9, "{k}");
        assert!(rel(a, 3.0) < 1e-9, "{a}");
        assert!((f.r_squared - 1.0).abs() < 1e-12);
        let s = scaling(&xs, &ys).unwrap();
        assert!((s.exponent.unwrap() - 2.0).abs() < 1e-9);
        // Pure x² is also an exact quadratic (a = b = 0), and with one more
        // parameter the tie goes to the power law.
        assert_eq!(s.best, Some(ModelKind::PowerLaw));
    }

    #[test]
    fn power_law_fractional_exponent_beats_linear() {
        // y = 0.5·x^1.5: no straight line or parabola through the origin
        // matches it exactly; the power law does.
        let xs = lengths();
        let ys: Vec<f64> = xs.iter().map(|x| 0.5 * x.powf(1.5)).collect();
        let s = scaling(&xs, &ys).unwrap();
        assert_eq!(s.best, Some(ModelKind::PowerLaw));
        assert!((s.exponent.unwrap() - 1.5).abs() < 1e-9);
    }

    #[test]
    fn r_squared_by_hand_and_adjustment() {
        // x = 1, 2, 3, 4; y = 1, 3, 2, 4. x̄ = 2.5, ȳ = 2.5, Sxx = 5,
        // Sxy = (−1.5)(−1.5) + (−0.5)(0.5) + (0.5)(−0.5) + (1.5)(1.5) = 4,
        // b = 0.8, a = 0.5. Fitted 1.3, 2.1, 2.9, 3.7; residuals −0.3, 0.9,
        // −0.9, 0.3; SS_res = 1.8, SS_tot = 5, R² = 0.64.
        // Adjusted: 1 − 0.36·3/2 = 0.46.
        let f = fit_linear(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        let Model::Linear { a, b } = f.model else {
            panic!()
        };
        assert!((a - 0.5).abs() < 1e-12 && (b - 0.8).abs() < 1e-12);
        assert!((f.r_squared - 0.64).abs() < 1e-12);
        assert!((f.adj_r_squared - 0.46).abs() < 1e-12);
    }

    #[test]
    fn power_law_r_squared_is_in_ms_space() {
        // x = 1, 2, 4; y = 2, 4, 16. Log fit: ln x = 0, L, 2L (L = ln 2),
        // ln y = L, 2L, 4L → k = 1.5, ln a = L·(7/3 − 1.5) = (5/6)L,
        // so a = 2^(5/6) and predictions 2^(5/6), 2^(7/3), 2^(23/6)
        // = 1.781797, 5.039684, 14.254379. Residuals 0.218203, −1.039684,
        // 1.745621: SS_res = 4.175747; ȳ = 22/3, deviations −16/3, −10/3,
        // 26/3, SS_tot = 1032/9 = 114.666667; R² = 0.963584 — not the
        // log-space R² (27/28 = 0.964286).
        let f = fit_power_law(&[1.0, 2.0, 4.0], &[2.0, 4.0, 16.0]).unwrap();
        let Model::PowerLaw { a, k } = f.model else {
            panic!()
        };
        assert!((k - 1.5).abs() < 1e-12);
        assert!((a - 2f64.powf(5.0 / 6.0)).abs() < 1e-12);
        assert!((f.r_squared - 0.963_583_6).abs() < 1e-6, "{}", f.r_squared);
    }

    #[test]
    fn degenerate_inputs() {
        assert!(fit_linear(&[1.0, 2.0], &[1.0, 2.0]).is_none());
        assert!(fit_quadratic(&[1.0, 2.0, 3.0], &[1.0, 4.0, 9.0]).is_none());
        // Three points at only two distinct lengths: no parabola.
        assert!(fit_quadratic(&[1.0, 1.0, 2.0, 2.0], &[1.0, 1.1, 2.0, 2.1]).is_none());
        assert!(fit_linear(&[5.0, 5.0, 5.0], &[1.0, 2.0, 3.0]).is_none());
        assert!(fit_linear(&[1.0, 2.0, 3.0], &[4.0, 4.0, 4.0]).is_none());
        assert!(fit_power_law(&[0.0, 1.0, 2.0], &[1.0, 2.0, 3.0]).is_none());
        assert!(scaling(&[1.0], &[]).is_none());
        // Too few points for any fit still yields the per-length ratios.
        let s = scaling(&[2000.0, 0.0], &[100.0, 5.0]).unwrap();
        assert_eq!(s.best, None);
        assert_eq!(s.per_length[0].ms_per_1k_tokens, Some(50.0));
        assert_eq!(s.per_length[1].ms_per_1k_tokens, None);
    }
}
