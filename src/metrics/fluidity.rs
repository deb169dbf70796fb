//! Etalon's fluidity-index (seed 002, Algorithm 1) and fluid token generation rate.
//!
//! Each request gets a prefill deadline D_p = predicted prefill time for its prompt length +
//! a scheduling slack, and every later token a decode deadline D_d. A token early by s
//! lends s of slack to the tokens after it; a token late resets the slack and counts one
//! missed deadline per D_d it overran. The fluidity-index is the share of deadlines met.
//! The fluid token generation rate is 1 / (the smallest D_d at which at least q of the
//! requests have a fluidity-index ≥ f), found by bisection.

use serde::{Deserialize, Serialize};

/// TTFT (ms) predicted from prompt tokens: a + b·P + c·P², fitted by least squares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrefillCurve {
    pub a_ms: f64,
    pub b_ms_per_token: f64,
    pub c_ms_per_token2: f64,
    /// Coefficient of determination of the fit.
    pub r2: f64,
    /// Points used.
    pub n: usize,
}

impl PrefillCurve {
    pub fn predict_ms(&self, prompt_tokens: f64) -> f64 {
        (self.a_ms
            + self.b_ms_per_token * prompt_tokens
            + self.c_ms_per_token2 * prompt_tokens * prompt_tokens)
            .max(0.0)
    }

    /// Least-squares fit of `(prompt_tokens, ttft_ms)` to a + bP + cP². With fewer than three
    /// distinct lengths the fit degrades to a line, then to a constant.
    pub fn fit(points: &[(f64, f64)]) -> Option<Self> {
        if points.is_empty() {
            return None;
        }
        let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let degree = (xs.len() - 1).min(2);
        // Scale x to keep the normal equations well conditioned.
        let scale = xs.last().copied().unwrap_or(1.0).abs().max(1.0);
        let k = degree + 1;
        let mut ata = [[0.0f64; 3]; 3];
        let mut aty = [0.0f64; 3];
        for &(x, y) in points {
            let u = x / scale;
            let row = [1.0, u, u * u];
            for i in 0..k {
                aty[i] += row[i] * y;
                for j in 0..k {
                    ata[i][j] += row[i] * row[j];
                }
            }
        }
        let coef = solve(ata, aty, k)?;
        let (a, b, c) = (
            coef[0],
            coef.get(1).copied().unwrap_or(0.0) / scale,
            coef.get(2).copied().unwrap_or(0.0) / (scale * scale),
        );
        let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
        let ss_tot: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
        let ss_res: f64 = points
            .iter()
            .map(|p| (p.1 - (a + b * p.0 + c * p.0 * p.0)).powi(2))
            .sum();
        Some(Self {
            a_ms: a,
            b_ms_per_token: b,
            c_ms_per_token2: c,
            r2: if ss_tot > 0.0 {
                1.0 - ss_res / ss_tot
            } else {
                1.0
            },
            n: points.len(),
        })
    }
}

/// Gaussian elimination with partial pivoting on the top-left k×k system.
fn solve(mut m: [[f64; 3]; 3], mut v: [f64; 3], k: usize) -> Option<Vec<f64>> {
    for col in 0..k {
        let pivot = (col..k).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        v.swap(col, pivot);
        let pivot_row = m[col];
        for row in 0..k {
            if row != col {
                let f = m[row][col] / pivot_row[col];
                for (x, p) in m[row][col..k].iter_mut().zip(&pivot_row[col..k]) {
                    *x -= f * p;
                }
                v[row] -= f * v[col];
            }
        }
    }
    Some((0..k).map(|i| v[i] / m[i][i]).collect())
}

/// Algorithm 1: the share of deadlines met. `gaps_ms[0]` is the time to the first token, the
/// rest the gaps between consecutive tokens (0 for tokens that arrived in the same chunk).
pub fn fluidity_index(gaps_ms: &[f64], decode_deadline_ms: f64, prefill_deadline_ms: f64) -> f64 {
    let dd = decode_deadline_ms.max(1e-9);
    let mut total = 0u64;
    let mut missed = 0u64;
    let mut slack = 0.0f64;
    for (i, &t) in gaps_ms.iter().enumerate() {
        let d = if i == 0 { prefill_deadline_ms } else { dd };
        if t <= d + slack {
            slack += d - t;
            total += 1;
        } else {
            let misses = ((t - slack - d) / dd).floor() as u64 + 1;
            missed += misses;
            total += misses;
            slack = 0.0;
        }
    }
    if total == 0 {
        1.0
    } else {
        (total - missed) as f64 / total as f64
    }
}

/// One request's inputs to the fluidity computation.
#[derive(Debug, Clone, PartialEq)]
pub struct FluidityInput {
    /// `gaps_ms[0]` = TTFT, then inter-token gaps.
    pub gaps_ms: Vec<f64>,
    /// D_p for this request: predicted prefill time + scheduling slack, ms.
    pub prefill_deadline_ms: f64,
}

/// The smallest D_d (ms) at which at least `quantile` of requests reach `threshold`, by
/// bisection to 0.01 ms; `None` if even a 60 s deadline does not.
pub fn min_decode_deadline_ms(
    inputs: &[FluidityInput],
    threshold: f64,
    quantile: f64,
) -> Option<f64> {
    if inputs.is_empty() {
        return None;
    }
    let meets = |dd: f64| {
        let ok = inputs
            .iter()
            .filter(|i| fluidity_index(&i.gaps_ms, dd, i.prefill_deadline_ms) >= threshold)
            .count();
        ok as f64 >= quantile * inputs.len() as f64 - 1e-9
    };
    let (mut lo, mut hi) = (0.01, 60_000.0);
    if !meets(hi) {
        return None;
    }
    if meets(lo) {
        return Some(lo);
    }
    while hi - lo > 0.01 {
        let mid = (lo + hi) / 2.0;
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etalon_example_early_tokens_lend_slack() {
        // Target TBT 100 ms; the first token lands exactly on its prefill deadline.
        // System 1: ten tokens 10 ms apart, then one after 150 ms.
        let mut s1 = vec![100.0];
        s1.extend(std::iter::repeat_n(10.0, 9));
        s1.push(150.0);
        // System 2: ten tokens 100 ms apart, then one after 150 ms.
        let mut s2 = vec![100.0];
        s2.extend(std::iter::repeat_n(100.0, 9));
        s2.push(150.0);
        let f1 = fluidity_index(&s1, 100.0, 100.0);
        let f2 = fluidity_index(&s2, 100.0, 100.0);
        assert_eq!(f1, 1.0, "the early tokens' slack absorbs the 150 ms gap");
        assert!((f2 - 10.0 / 11.0).abs() < 1e-12, "{f2}");
        // A TBT miss rate would call them equal (one gap over 100 ms each).
    }

    #[test]
    fn a_long_stall_misses_one_deadline_per_period() {
        // TTFT 90 ms early (90 ms of slack), then a 350 ms stall with D_d = 100:
        // misses = (350 − 90 − 100) // 100 + 1 = 2, so one deadline met of three.
        let f = fluidity_index(&[10.0, 350.0], 100.0, 100.0);
        assert_eq!(f, 1.0 / 3.0);
        // Without slack: (350 − 100) // 100 + 1 = 3 misses; one met of four.
        assert_eq!(fluidity_index(&[100.0, 350.0], 100.0, 100.0), 1.0 / 4.0);
    }

    #[test]
    fn fluid_rate_bisection_finds_the_smallest_deadline() {
        // Every request has a steady 20 ms gap: fluidity ≥ 0.9 needs D_d ≥ 20 ms.
        let inputs: Vec<FluidityInput> = (0..10)
            .map(|_| FluidityInput {
                // First token exactly on its deadline: no slack to borrow.
                gaps_ms: std::iter::once(100.0)
                    .chain(std::iter::repeat_n(20.0, 50))
                    .collect(),
                prefill_deadline_ms: 100.0,
            })
            .collect();
        let dd = min_decode_deadline_ms(&inputs, 0.9, 0.99).unwrap();
        assert!((dd - 20.0).abs() < 0.05, "{dd}");
    }

    #[test]
    fn prefill_curve_fits_a_quadratic_exactly() {
        let pts: Vec<(f64, f64)> = [128.0, 512.0, 2048.0, 8192.0]
            .iter()
            .map(|&p| (p, 20.0 + 0.05 * p + 1e-6 * p * p))
            .collect();
        let c = PrefillCurve::fit(&pts).unwrap();
        assert!((c.a_ms - 20.0).abs() < 1e-6, "{c:?}");
        assert!((c.b_ms_per_token - 0.05).abs() < 1e-9);
        assert!((c.c_ms_per_token2 - 1e-6).abs() < 1e-12);
        assert!((c.r2 - 1.0).abs() < 1e-9);
        // One length: a constant at the mean.
        let c = PrefillCurve::fit(&[(100.0, 10.0), (100.0, 14.0)]).unwrap();
        assert_eq!(c.predict_ms(100.0), 12.0);
    }
}
