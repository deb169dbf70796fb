//! Length distributions (in tokens) for inputs and outputs (draft 4.3.1).

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Normal};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A distribution of token counts. Every variant is clamped to at least 1 token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum LengthDist {
    Fixed {
        value: u32,
    },
    /// Uniform over the integers `min..=max`.
    Uniform {
        min: u32,
        max: u32,
    },
    /// Normal(mean, std), rounded, clamped to `min..=max`.
    Normal {
        mean: f64,
        std: f64,
        min: u32,
        max: u32,
    },
    /// exp(Normal(mu, sigma)), rounded, clamped to `min..=max` (floors and caps).
    LogNormal {
        mu: f64,
        sigma: f64,
        min: u32,
        max: u32,
    },
    /// An empirical histogram: `values[i]` drawn with probability ∝ `weights[i]`.
    Empirical {
        values: Vec<u32>,
        weights: Vec<f64>,
    },
}

impl LengthDist {
    pub fn fixed(value: u32) -> Self {
        LengthDist::Fixed { value }
    }

    /// The smallest length this distribution can draw, tokens.
    pub fn min_value(&self) -> u32 {
        match self {
            LengthDist::Fixed { value } => *value,
            LengthDist::Uniform { min, .. }
            | LengthDist::Normal { min, .. }
            | LengthDist::LogNormal { min, .. } => *min,
            LengthDist::Empirical { values, .. } => values.iter().copied().min().unwrap_or(0),
        }
    }

    /// The mean length, tokens, for estimates (what a run will cost): exact for fixed,
    /// uniform and empirical lengths; the untruncated mean clamped to the bounds for the
    /// normal and log-normal ones.
    pub fn mean(&self) -> f64 {
        let within = |v: f64, min: u32, max: u32| v.clamp(f64::from(min), f64::from(max.max(min)));
        let m = match self {
            LengthDist::Fixed { value } => f64::from(*value),
            LengthDist::Uniform { min, max } => {
                (f64::from(*min) + f64::from((*max).max(*min))) / 2.0
            }
            LengthDist::Normal { mean, min, max, .. } => within(*mean, *min, *max),
            LengthDist::LogNormal {
                mu,
                sigma,
                min,
                max,
            } => within((mu + sigma * sigma / 2.0).exp(), *min, *max),
            LengthDist::Empirical { values, weights } => {
                let total: f64 = weights.iter().sum();
                if total > 0.0 {
                    values
                        .iter()
                        .zip(weights)
                        .map(|(v, w)| f64::from(*v) * w)
                        .sum::<f64>()
                        / total
                } else {
                    0.0
                }
            }
        };
        m.max(1.0)
    }

    /// Checks parameters; returns a message saying what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            LengthDist::Fixed { value } if *value == 0 => {
                Err("fixed length must be at least 1".into())
            }
            LengthDist::Uniform { min, max }
            | LengthDist::Normal { min, max, .. }
            | LengthDist::LogNormal { min, max, .. }
                if min > max =>
            {
                Err(format!("min {min} is above max {max}"))
            }
            LengthDist::Normal { std, .. } if std.is_nan() || *std < 0.0 => {
                Err("std must be non-negative".into())
            }
            LengthDist::LogNormal { sigma, .. } if sigma.is_nan() || *sigma < 0.0 => {
                Err("sigma must be non-negative".into())
            }
            LengthDist::Empirical { values, weights }
                if values.is_empty() || values.len() != weights.len() =>
            {
                Err("empirical: values and weights must be non-empty and of equal length".into())
            }
            LengthDist::Empirical { weights, .. }
                if weights.iter().any(|w| w.is_nan() || *w < 0.0)
                    || weights.iter().sum::<f64>() <= 0.0 =>
            {
                Err("empirical: weights must be non-negative with a positive sum".into())
            }
            _ => Ok(()),
        }
    }

    /// A count from the command line (`--items-per-request`): `N` (fixed) or `MIN..MAX`
    /// (uniform over the integers, both ends included); at least 1.
    pub fn parse_count(text: &str) -> Result<Self, String> {
        let int = |s: &str| {
            s.trim()
                .parse::<u32>()
                .ok()
                .filter(|&v| v >= 1)
                .ok_or_else(|| format!("`{text}` is not N or MIN..MAX with whole numbers >= 1"))
        };
        match text.split_once("..") {
            Some((lo, hi)) => {
                let (min, max) = (int(lo)?, int(hi.trim_start_matches('='))?);
                if min > max {
                    return Err(format!("`{text}`: MIN is above MAX"));
                }
                Ok(LengthDist::Uniform { min, max })
            }
            None => Ok(LengthDist::fixed(int(text)?)),
        }
    }

    pub fn sample(&self, rng: &mut ChaCha8Rng) -> u32 {
        let clamp = |v: f64, min: u32, max: u32| {
            (v.round().max(0.0) as u64).clamp(min as u64, max as u64) as u32
        };
        let v = match self {
            LengthDist::Fixed { value } => *value,
            LengthDist::Uniform { min, max } => rng.random_range(*min..=(*max).max(*min)),
            LengthDist::Normal {
                mean,
                std,
                min,
                max,
            } => {
                let d = Normal::new(*mean, *std).expect("validated std");
                clamp(d.sample(rng), *min, *max)
            }
            LengthDist::LogNormal {
                mu,
                sigma,
                min,
                max,
            } => {
                let d = LogNormal::new(*mu, *sigma).expect("validated sigma");
                clamp(d.sample(rng), *min, *max)
            }
            LengthDist::Empirical { values, weights } => {
                let total: f64 = weights.iter().sum();
                let mut x = rng.random::<f64>() * total;
                let mut pick = values[values.len() - 1];
                for (v, w) in values.iter().zip(weights) {
                    if x < *w {
                        pick = *v;
                        break;
                    }
                    x -= w;
                }
                pick
            }
        };
        v.max(1)
    }
}

impl fmt::Display for LengthDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthDist::Fixed { value } => write!(f, "{value} tokens"),
            LengthDist::Uniform { min, max } => write!(f, "Uniform({min}, {max}) tokens"),
            LengthDist::Normal {
                mean,
                std,
                min,
                max,
            } => write!(f, "Normal({mean}, {std}) in [{min}, {max}] tokens"),
            LengthDist::LogNormal {
                mu,
                sigma,
                min,
                max,
            } => write!(
                f,
                "LogNormal(mu={mu}, sigma={sigma}) in [{min}, {max}] tokens"
            ),
            LengthDist::Empirical { values, .. } => {
                write!(f, "empirical histogram over {} values", values.len())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn counts_parse_as_fixed_or_uniform() {
        assert_eq!(LengthDist::parse_count("8"), Ok(LengthDist::fixed(8)));
        assert_eq!(
            LengthDist::parse_count("4..16"),
            Ok(LengthDist::Uniform { min: 4, max: 16 })
        );
        assert!(LengthDist::parse_count("0").is_err());
        assert!(LengthDist::parse_count("9..3").is_err());
        assert!(LengthDist::parse_count("x").is_err());
    }

    fn draws(d: &LengthDist, n: usize) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        (0..n).map(|_| d.sample(&mut rng) as f64).collect()
    }

    fn mean_std(v: &[f64]) -> (f64, f64) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (
            m,
            (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt(),
        )
    }

    #[test]
    fn moments_on_100k_draws() {
        const N: usize = 100_000;
        // Uniform(128, 512): mean 320, std = sqrt(((385)^2 - 1) / 12) ≈ 111.1.
        let (m, s) = mean_std(&draws(&LengthDist::Uniform { min: 128, max: 512 }, N));
        assert!(
            (m - 320.0).abs() < 1.5 && (s - 111.14).abs() < 1.0,
            "{m} {s}"
        );
        // Normal(300, 50), far from its bounds.
        let (m, s) = mean_std(&draws(
            &LengthDist::Normal {
                mean: 300.0,
                std: 50.0,
                min: 1,
                max: 10_000,
            },
            N,
        ));
        assert!((m - 300.0).abs() < 1.0 && (s - 50.0).abs() < 1.0, "{m} {s}");
        // LogNormal(5.5, 1.0) in [32, 4096]: median e^5.5 ≈ 245; the draft quotes mean ≈ 405.
        let mut v = draws(
            &LengthDist::LogNormal {
                mu: 5.5,
                sigma: 1.0,
                min: 32,
                max: 4096,
            },
            N,
        );
        let (m, _) = mean_std(&v);
        v.sort_by(f64::total_cmp);
        assert!((v[N / 2] - 244.7).abs() < 6.0, "median {}", v[N / 2]);
        assert!((m - 400.0).abs() < 15.0, "mean {m}");
        assert!(v[0] >= 32.0 && v[N - 1] <= 4096.0);
        // Empirical: 10 with weight 3, 20 with weight 1 → mean 12.5.
        let (m, _) = mean_std(&draws(
            &LengthDist::Empirical {
                values: vec![10, 20],
                weights: vec![3.0, 1.0],
            },
            N,
        ));
        assert!((m - 12.5).abs() < 0.1, "{m}");
        assert_eq!(mean_std(&draws(&LengthDist::fixed(7), 10)), (7.0, 0.0));
    }

    #[test]
    fn validation_explains() {
        assert!(LengthDist::Uniform { min: 5, max: 1 }
            .validate()
            .unwrap_err()
            .contains("above max"));
        assert!(LengthDist::Empirical {
            values: vec![1],
            weights: vec![]
        }
        .validate()
        .is_err());
        assert!(LengthDist::fixed(0).validate().is_err());
    }

    #[test]
    fn means_for_estimates() {
        assert_eq!(LengthDist::fixed(128).mean(), 128.0);
        assert_eq!(LengthDist::Uniform { min: 128, max: 512 }.mean(), 320.0);
        let m = LengthDist::Empirical {
            values: vec![10, 20],
            weights: vec![3.0, 1.0],
        }
        .mean();
        assert!((m - 12.5).abs() < 1e-9, "{m}");
        // The untruncated log-normal mean, e^(5.5 + 0.5) ≈ 403, within its bounds.
        let m = LengthDist::LogNormal {
            mu: 5.5,
            sigma: 1.0,
            min: 32,
            max: 4096,
        }
        .mean();
        assert!((m - 403.4).abs() < 1.0, "{m}");
        let clamped = LengthDist::Normal {
            mean: 900.0,
            std: 10.0,
            min: 1,
            max: 500,
        };
        assert_eq!(clamped.mean(), 500.0);
    }
}
