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
//! * power law with an intercept, y = a + b·x^k — the draft's exponent k of
//!   the length-dependent part. Without the intercept (y = b·x^k), a fixed
//!   overhead bends the log-log line, and an exactly linear TTFT with an
//!   overhead reads as k ≈ 0.9.
//!
//! All three are least-squares fits in the original (ms) space and report R²
//! there. Beside them, the draft's literal reading, y = b·x^k through the
//! origin ([`fit_origin_power_law`]), is reported, not named. The model
//! named is the simplest that fits within the noise ([`choice`]): the line
//! unless a curve is significant and departs from it by more than twice a
//! length's standard error, then BIC among the curves that did.
//!
//! Lengths span two or three orders of magnitude (1K to 128K), so x² spans
//! five or six, and textbook normal equations lose most of their digits.
//! The fits therefore centre and scale x to [−1, 1] first and solve the
//! least-squares problem by Householder QR, then map the coefficients back.

pub mod choice;

use serde::{Deserialize, Serialize};

/// Which scaling model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelKind {
    /// y = a + b·x
    Linear,
    /// y = a + b·x + c·x²
    Quadratic,
    /// y = a + b·x^k
    PowerLaw,
}

/// A fitted scaling model of latency (ms) against input length (tokens).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Model {
    /// `a` in ms, `b` in ms per token.
    Linear { a: f64, b: f64 },
    /// `a` in ms, `b` in ms per token, `c` in ms per token².
    Quadratic { a: f64, b: f64, c: f64 },
    /// `a` in ms (the fixed overhead), `b` in ms per token^k, `k` dimensionless.
    PowerLaw { a: f64, b: f64, k: f64 },
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
            Model::Linear { .. } => 2,
            Model::Quadratic { .. } | Model::PowerLaw { .. } => 3,
        }
    }

    /// Predicted latency in ms at input length `x` tokens.
    pub fn predict(&self, x: f64) -> f64 {
        match *self {
            Model::Linear { a, b } => a + b * x,
            Model::Quadratic { a, b, c } => a + b * x + c * x * x,
            Model::PowerLaw { a, b, k } => a + b * x.powf(k),
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
    /// Bayesian information criterion n·ln(RSS/n) + p·ln n (lower is better; only
    /// differences between fits to the same points mean anything). A residual sum of
    /// squares below 10⁻¹² of the total counts as that floor, so exact fits tie.
    #[serde(default)]
    pub bic: f64,
    /// Residual sum of squares Σ(y − ŷ)², ms² (what the F-test between nested fits reads).
    #[serde(default)]
    pub rss: f64,
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

/// Residual sums of squares below this share of the total count as this share: exact
/// fits then tie on BIC instead of racing rounding residue to −∞.
const RSS_FLOOR: f64 = 1e-12;

/// R², adjusted R², BIC and the residual sum of squares (ms²) of predictions against `ys`,
/// or None when the ys have no variance (nothing to explain) or n ≤ p.
fn goodness(ys: &[f64], predicted: &[f64], params: usize) -> Option<(f64, f64, f64, f64)> {
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
    let nf = n as f64;
    let rss = ss_res.max(ss_tot * RSS_FLOOR);
    let bic = nf * (rss / nf).ln() + params as f64 * nf.ln();
    Some((r2, adj, bic, ss_res))
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
    let (r_squared, adj_r_squared, bic, rss) = goodness(ys, &predicted, 2)?;
    // y = α + β(x − m)/s.
    let b = beta[1] / s;
    Some(Fit {
        model: Model::Linear {
            a: beta[0] - b * m,
            b,
        },
        r_squared,
        adj_r_squared,
        bic,
        rss,
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
    let (r_squared, adj_r_squared, bic, rss) = goodness(ys, &predicted, 3)?;
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
        bic,
        rss,
    })
}

/// Exponents the power law searches: a grid from `K_MIN` to `K_MAX` in steps of `K_STEP`,
/// then refined between the best grid point's neighbours.
const K_MIN: f64 = 0.1;
const K_MAX: f64 = 4.0;
const K_STEP: f64 = 0.05;

/// y = a + b·x^k at a fixed k, with a and b by least squares: (a, b, RSS, dRSS/dk). With a
/// and b optimal for k, dRSS/dk = −2·Σ rᵢ·b·xᵢ^k·ln xᵢ (their own change adds nothing).
fn power_at(xs: &[f64], ys: &[f64], k: f64) -> Option<(f64, f64, f64, f64)> {
    let z: Vec<f64> = xs.iter().map(|x| x.powf(k)).collect();
    let (u, m, s) = standardise(&z)?;
    let beta = least_squares(&[vec![1.0; u.len()], u.clone()], ys)?;
    let b = beta[1] / s;
    let (mut rss, mut slope) = (0.0, 0.0);
    for ((ui, zi), (x, y)) in u.iter().zip(&z).zip(xs.iter().zip(ys)) {
        let r = y - (beta[0] + beta[1] * ui);
        rss += r * r;
        slope -= 2.0 * r * b * zi * x.ln();
    }
    Some((beta[0] - b * m, b, rss, slope))
}

/// The k of least RSS for y = a + b·x^k: the best point of the grid, then bisection on the
/// sign of dRSS/dk between its neighbours (to the edge of the grid when the least RSS lies
/// beyond it).
fn best_exponent(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let steps = ((K_MAX - K_MIN) / K_STEP).round() as usize;
    let grid: Vec<(f64, f64)> = (0..=steps)
        .filter_map(|i| {
            let k = K_MIN + i as f64 * K_STEP;
            Some((k, power_at(xs, ys, k)?.2))
        })
        .collect();
    let best = (0..grid.len()).min_by(|&i, &j| grid[i].1.total_cmp(&grid[j].1))?;
    let mut lo = grid[best.saturating_sub(1)].0;
    let mut hi = grid[(best + 1).min(grid.len() - 1)].0;
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        match power_at(xs, ys, mid) {
            Some((_, _, _, slope)) if slope > 0.0 => hi = mid,
            Some(_) => lo = mid,
            None => break,
        }
    }
    Some(0.5 * (lo + hi))
}

/// Fits y = a + b·x^k (a fixed overhead plus a power of the length) by least squares in ms:
/// for each k the best a and b, and the k of least residual (see [`best_exponent`]). Needs
/// 4 points or more (three parameters), x > 0 and some spread in x and in y.
pub fn fit_power_law(xs: &[f64], ys: &[f64]) -> Option<Fit> {
    if !usable(xs, ys, 4) || xs.iter().any(|&x| x <= 0.0) {
        return None;
    }
    let k = best_exponent(xs, ys)?;
    let (a, b, _, _) = power_at(xs, ys, k)?;
    let predicted: Vec<f64> = xs.iter().map(|x| a + b * x.powf(k)).collect();
    let (r_squared, adj_r_squared, bic, rss) = goodness(ys, &predicted, 3)?;
    Some(Fit {
        model: Model::PowerLaw { a, b, k },
        r_squared,
        adj_r_squared,
        bic,
        rss,
    })
}

/// Fits y = b·x^k through the origin: the draft's literal "TTFT proportional to
/// context_length^k" (5.9.4), a straight line of ln y on ln x by least squares. R² and BIC are
/// taken in ms like the other fits, so the four can be read side by side. Needs 3 points or
/// more and every x and y above 0. The model is a [`Model::PowerLaw`] with `a` = 0.
pub fn fit_origin_power_law(xs: &[f64], ys: &[f64]) -> Option<Fit> {
    if !usable(xs, ys, 3) || xs.iter().chain(ys).any(|&v| v <= 0.0) {
        return None;
    }
    let ln_x: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let ln_y: Vec<f64> = ys.iter().map(|y| y.ln()).collect();
    let (u, m, s) = standardise(&ln_x)?;
    let beta = least_squares(&[vec![1.0; u.len()], u.clone()], &ln_y)?;
    // ln y = α + β(ln x − m)/s: k = β/s, ln b = α − k·m.
    let k = beta[1] / s;
    let b = (beta[0] - k * m).exp();
    let predicted: Vec<f64> = xs.iter().map(|x| b * x.powf(k)).collect();
    let (r_squared, adj_r_squared, bic, rss) = goodness(ys, &predicted, 2)?;
    Some(Fit {
        model: Model::PowerLaw { a: 0.0, b, k },
        r_squared,
        adj_r_squared,
        bic,
        rss,
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
    /// Power-law fit (with its intercept), when it could be made (4+ points, positive x).
    pub power_law: Option<Fit>,
    /// The draft's literal reading, y = b·x^k through the origin ([`fit_origin_power_law`]).
    pub origin_power_law: Option<Fit>,
    /// The simplest model that fits within the noise ([`choice::within_noise`]).
    pub best: Option<ModelKind>,
    /// Scaling exponent k of y = a + b·x^k from the power-law fit (the draft's
    /// 5.9.4 "Scaling exponent" of the length-dependent part), whichever model
    /// fits best.
    pub exponent: Option<f64>,
    /// k of y = b·x^k through the origin (the draft's literal reading).
    pub origin_exponent: Option<f64>,
    /// Marginal cost: slope of the linear fit × 1000, ms per 1K tokens.
    pub ms_per_1k_tokens: Option<f64>,
    /// What the quadratic term is worth against the noise (None without both fits).
    pub curvature: Option<choice::Curvature>,
    /// Average cost at each length: y/x × 1000, in input order.
    pub per_length: Vec<LengthRatio>,
}

/// Models whose BIC is within this of the lowest are as well supported by the data (a
/// difference under 2 is "not worth more than a bare mention", Kass and Raftery 1995).
const BIC_TIE: f64 = 2.0;

/// The model BIC prefers among `fits`: among fits whose BIC is within [`BIC_TIE`] of the
/// lowest, the one with the fewest parameters, then the lowest BIC, then the one listed
/// first. [`choice::within_noise`] uses it to rank the curved models that earned their place
/// over the straight line; on its own it let a bow smaller than the TTFT noise make a
/// straight line "quadratic".
pub fn best_fit(fits: &[Option<Fit>]) -> Option<Fit> {
    let candidates: Vec<Fit> = fits.iter().flatten().copied().collect();
    let lowest = candidates
        .iter()
        .map(|f| f.bic)
        .fold(f64::INFINITY, f64::min);
    let mut supported: Vec<Fit> = candidates
        .into_iter()
        .filter(|f| f.bic <= lowest + BIC_TIE)
        .collect();
    // Stable: equal keys keep the caller's order.
    supported.sort_by(|a, b| {
        a.model
            .parameters()
            .cmp(&b.model.parameters())
            .then(a.bic.total_cmp(&b.bic))
    });
    supported.into_iter().next()
}

/// [`scaling_within_noise`] without a measured noise: the curved models are judged against
/// the scatter of the points around them alone.
pub fn scaling(xs_tokens: &[f64], ys_ms: &[f64]) -> Option<Scaling> {
    scaling_within_noise(xs_tokens, ys_ms, None)
}

/// Fits the models to latency `ys_ms` against input length `xs_tokens` (per-length means,
/// or one point per request) and derives the draft's 5.9.4 measures. `se_ms`, when given,
/// is each point's standard error in ms (a length's TTFT standard deviation over √requests):
/// the noise the curved models must beat ([`choice::within_noise`]); a slice of another
/// length is ignored. None when the slices differ in length or are empty; otherwise each
/// part is present when it can be computed.
pub fn scaling_within_noise(
    xs_tokens: &[f64],
    ys_ms: &[f64],
    se_ms: Option<&[f64]>,
) -> Option<Scaling> {
    if xs_tokens.len() != ys_ms.len() || xs_tokens.is_empty() {
        return None;
    }
    let se_ms = se_ms.filter(|s| s.len() == xs_tokens.len());
    let linear = fit_linear(xs_tokens, ys_ms);
    let quadratic = fit_quadratic(xs_tokens, ys_ms);
    let power_law = fit_power_law(xs_tokens, ys_ms);
    let origin_power_law = fit_origin_power_law(xs_tokens, ys_ms);
    let points = choice::Points {
        xs: xs_tokens,
        ys: ys_ms,
        se_ms,
    };
    // The quadratic first: on an exact tie (TTFT = a + c·L², which the power law with k = 2
    // fits as exactly) it names the mechanism, attention's cost.
    let best =
        choice::within_noise(&points, linear, &[quadratic, power_law]).map(|f| f.model.kind());
    let curvature = linear
        .zip(quadratic)
        .map(|(l, q)| choice::curvature(&points, &l, &q));
    let exponent_of = |f: Option<Fit>| match f?.model {
        Model::PowerLaw { k, .. } => Some(k),
        _ => None,
    };
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
        origin_power_law,
        best,
        exponent: exponent_of(power_law),
        origin_exponent: exponent_of(origin_power_law),
        ms_per_1k_tokens,
        curvature,
        per_length,
    })
}

#[cfg(test)]
mod tests;
