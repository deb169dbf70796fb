//! The fluidity-index and fluid token generation rate of "Etalon: Holistic Performance
//! Evaluation Framework for LLM Inference Systems" (its Algorithm 1).
//!
//! Each request gets a prefill deadline D_p = predicted prefill time for its prompt length +
//! a scheduling slack, and every later token a decode deadline D_d. A token early by s
//! lends s of slack to the tokens after it; a token late resets the slack and counts one
//! missed deadline per D_d it overran. The fluidity-index is the share of deadlines met.
//! The fluid token generation rate is 1 / (the smallest D_d at which at least q of the
//! requests have a fluidity-index ≥ f), found by bisection, or "unbounded" when the data
//! cannot bound it.
//!
//! The prediction of prefill time comes from requests profiled in isolation (Etalon §4:
//! "profiling the request in isolation, in the absence of any other variables like
//! scheduling delays"), never from the run under test: otherwise queueing would move every
//! request's deadline and two loads of one server would be judged against different targets.

use serde::{Deserialize, Serialize};

/// TTFT (ms) predicted from prompt tokens: a + b·P + c·P², fitted by least squares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// A prefill curve with where it was profiled, as saved by `servebench profile-prefill`
/// and by every run that profiled one. Using it against another server, model or engine
/// version is allowed but warned about: the deadlines would be someone else's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfiledCurve {
    pub curve: PrefillCurve,
    /// Base URL of the server it was profiled on.
    pub target: String,
    pub model: String,
    #[serde(default)]
    pub engine: Option<String>,
    #[serde(default)]
    pub engine_version: Option<String>,
    /// ISO 8601.
    #[serde(default)]
    pub created_at: String,
    /// `(prompt_tokens, ttft_ms)` points the curve was fitted to.
    #[serde(default)]
    pub points: Vec<(f64, f64)>,
}

impl ProfiledCurve {
    /// What differs between where the curve was profiled and `(target, model, engine,
    /// version)`, in words; empty when nothing does.
    pub fn mismatches(
        &self,
        target: &str,
        model: &str,
        engine: Option<&str>,
        version: Option<&str>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        if self.target != target {
            out.push(format!("server {} (now {target})", self.target));
        }
        if self.model != model {
            out.push(format!("model {} (now {model})", self.model));
        }
        if engine.is_some() && self.engine.as_deref() != engine {
            out.push(format!(
                "engine {} (now {})",
                self.engine.as_deref().unwrap_or("unknown"),
                engine.unwrap_or("unknown")
            ));
        }
        if version.is_some() && self.engine_version.as_deref() != version {
            out.push(format!(
                "engine version {} (now {})",
                self.engine_version.as_deref().unwrap_or("unknown"),
                version.unwrap_or("unknown")
            ));
        }
        out
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
    fluidity_index_with_missing(gaps_ms, decode_deadline_ms, prefill_deadline_ms, 0)
}

/// Algorithm 1 for a request that ended before delivering `missing` of its tokens: each
/// token that never came is one more missed deadline.
pub fn fluidity_index_with_missing(
    gaps_ms: &[f64],
    decode_deadline_ms: f64,
    prefill_deadline_ms: f64,
    missing: u64,
) -> f64 {
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
    total += missing;
    missed += missing;
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
    /// Tokens the request never delivered (it failed): each a missed deadline.
    pub missing: u64,
}

impl FluidityInput {
    pub fn index(&self, decode_deadline_ms: f64) -> f64 {
        fluidity_index_with_missing(
            &self.gaps_ms,
            decode_deadline_ms,
            self.prefill_deadline_ms,
            self.missing,
        )
    }
}

/// The fluid token generation rate, or why the data cannot give one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FluidRate {
    /// 1 / D_d at the smallest decode deadline D_d meeting the target.
    Bounded {
        tokens_per_s: f64,
        decode_deadline_ms: f64,
    },
    /// Even the smallest deadline the bisection tries (0.01 ms) meets the target: the time
    /// requests saved against their prefill deadlines covers every later token, so the data
    /// put no upper bound on the rate.
    Unbounded { reason: String },
    /// Even a 60 s decode deadline does not meet the target (failures, or huge stalls).
    NotReached { reason: String },
}

impl FluidRate {
    pub fn tokens_per_s(&self) -> Option<f64> {
        match self {
            FluidRate::Bounded { tokens_per_s, .. } => Some(*tokens_per_s),
            _ => None,
        }
    }
}

/// The smallest D_d (ms) at which at least `quantile` of requests reach `threshold`, by
/// bisection to 0.01 ms between 0.01 ms and 60 s; `None` for no requests.
pub fn fluid_rate(inputs: &[FluidityInput], threshold: f64, quantile: f64) -> Option<FluidRate> {
    const LO_MS: f64 = 0.01;
    const HI_MS: f64 = 60_000.0;
    if inputs.is_empty() {
        return None;
    }
    let share = |dd: f64| {
        inputs.iter().filter(|i| i.index(dd) >= threshold).count() as f64 / inputs.len() as f64
    };
    let meets = |dd: f64| share(dd) >= quantile - 1e-9;
    if !meets(HI_MS) {
        let failed = inputs.iter().filter(|i| i.missing > 0).count();
        return Some(FluidRate::NotReached {
            reason: format!(
                "only {:.1} % of requests reach fluidity {threshold} even at D_d = 60 s ({failed} failed requests count as not fluid); the target is {:.1} %",
                share(HI_MS) * 100.0,
                quantile * 100.0
            ),
        });
    }
    if meets(LO_MS) {
        return Some(FluidRate::Unbounded {
            reason: format!(
                "{:.1} % of requests stay fluid even at D_d = {LO_MS} ms: the time they saved against their prefill deadlines covers every later token, so the data bound no rate",
                share(LO_MS) * 100.0
            ),
        });
    }
    let (mut lo, mut hi) = (LO_MS, HI_MS);
    while hi - lo > 0.01 {
        let mid = (lo + hi) / 2.0;
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(FluidRate::Bounded {
        tokens_per_s: 1000.0 / hi,
        decode_deadline_ms: hi,
    })
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
                missing: 0,
            })
            .collect();
        let Some(FluidRate::Bounded {
            decode_deadline_ms: dd,
            tokens_per_s,
        }) = fluid_rate(&inputs, 0.9, 0.99)
        else {
            panic!("a bounded rate")
        };
        assert!((dd - 20.0).abs() < 0.05, "{dd}");
        assert!((tokens_per_s - 50.0).abs() < 0.2, "{tokens_per_s}");
    }

    #[test]
    fn slack_that_covers_every_token_is_unbounded_not_a_huge_rate() {
        // TTFT 3 s against a 10 s prefill deadline: 7 s of slack absorbs 50 gaps of 20 ms at
        // any D_d. The old bisection returned 100,000 tok/s here.
        let inputs = vec![FluidityInput {
            gaps_ms: std::iter::once(3000.0)
                .chain(std::iter::repeat_n(20.0, 50))
                .collect(),
            prefill_deadline_ms: 10_000.0,
            missing: 0,
        }];
        assert!(matches!(
            fluid_rate(&inputs, 0.9, 0.99),
            Some(FluidRate::Unbounded { .. })
        ));
    }

    #[test]
    fn failed_requests_count_their_missing_tokens_as_misses() {
        // 9 tokens on time, 1 never came: 9 met of 10.
        let gaps: Vec<f64> = std::iter::once(100.0)
            .chain(std::iter::repeat_n(50.0, 8))
            .collect();
        assert_eq!(fluidity_index_with_missing(&gaps, 50.0, 100.0, 1), 0.9);
        // A request rejected before any token: nothing met.
        assert_eq!(fluidity_index_with_missing(&[], 50.0, 100.0, 16), 0.0);
        // Most requests failed: the target is not reached at any deadline.
        let failed = FluidityInput {
            gaps_ms: vec![],
            prefill_deadline_ms: 100.0,
            missing: 10,
        };
        assert!(matches!(
            fluid_rate(&[failed], 0.9, 0.99),
            Some(FluidRate::NotReached { .. })
        ));
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
