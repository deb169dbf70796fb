//! Length distributions (in tokens) for inputs and outputs.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use serde::Serialize;
use std::fmt;

/// A distribution of token counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LengthDist {
    Fixed(u32),
    /// Uniform over the integers `min..=max`.
    Uniform {
        min: u32,
        max: u32,
    },
    /// exp(Normal(mu, sigma)), rounded, then clamped to `min..=max` (floors and caps).
    LogNormal {
        mu: f64,
        sigma: f64,
        min: u32,
        max: u32,
    },
}

impl LengthDist {
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> u32 {
        match *self {
            LengthDist::Fixed(n) => n,
            LengthDist::Uniform { min, max } => rng.random_range(min..=max.max(min)),
            LengthDist::LogNormal {
                mu,
                sigma,
                min,
                max,
            } => {
                let d = LogNormal::new(mu, sigma).expect("sigma is non-negative");
                let v: f64 = d.sample(rng);
                (v.round() as u64).clamp(min as u64, max as u64) as u32
            }
        }
    }
}

impl fmt::Display for LengthDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LengthDist::Fixed(n) => write!(f, "{n} tokens"),
            LengthDist::Uniform { min, max } => write!(f, "Uniform({min}, {max}) tokens"),
            LengthDist::LogNormal {
                mu,
                sigma,
                min,
                max,
            } => {
                write!(
                    f,
                    "LogNormal(mu={mu}, sigma={sigma}) in [{min}, {max}] tokens"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn lognormal_median_respects_floor_and_cap() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let d = LengthDist::LogNormal {
            mu: 5.5,
            sigma: 1.0,
            min: 32,
            max: 4096,
        };
        let mut v: Vec<u32> = (0..100_000).map(|_| d.sample(&mut rng)).collect();
        v.sort_unstable();
        let median = v[v.len() / 2] as f64;
        assert!((median - 5.5f64.exp()).abs() < 8.0, "median {median}"); // e^5.5 ≈ 245
        assert!(v[0] >= 32 && *v.last().unwrap() <= 4096);
    }

    #[test]
    fn uniform_covers_both_ends() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let d = LengthDist::Uniform { min: 3, max: 5 };
        let v: Vec<u32> = (0..1000).map(|_| d.sample(&mut rng)).collect();
        assert!(v.contains(&3) && v.contains(&5) && v.iter().all(|x| (3..=5).contains(x)));
    }
}
