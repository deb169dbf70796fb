//! When requests are sent: the pure plan of an open-loop run.
//!
//! Arrival times are drawn up front from a seeded, portable generator (ChaCha8), so a plan is
//! the same on every machine and independent of how the server responds (draft 4.2.3, 4.2.5).
//! The engine only follows the plan; it never drops or re-times an arrival.

use crate::clock::Nanos;
pub mod pattern;
pub mod shard;

pub use pattern::{Arrival, LoadPattern};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma};

/// An endless sequence of planned send times (ns from the start of the phase), the first at 0.
pub struct ArrivalPlan {
    rng: ChaCha8Rng,
    gaps: Gaps,
    next_s: f64,
}

enum Gaps {
    Constant(f64),
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
}

impl ArrivalPlan {
    /// A plan at `rate_per_s` (> 0) with the given arrival process.
    pub fn new(rate_per_s: f64, arrival: Arrival, seed: u64) -> Self {
        let rate = rate_per_s.max(1e-9);
        let gaps = match arrival {
            Arrival::Constant => Gaps::Constant(1.0 / rate),
            Arrival::Poisson => Gaps::Exp(Exp::new(rate).expect("rate is positive")),
            Arrival::Gamma { cv } => {
                // Mean 1/rate and coefficient of variation cv: shape 1/cv², scale 1/(rate·shape).
                let shape = 1.0 / (cv.max(1e-3) * cv.max(1e-3));
                Gaps::Gamma(
                    Gamma::new(shape, 1.0 / (rate * shape)).expect("shape and scale are positive"),
                )
            }
        };
        // A distinct stream from the workload's, so changing one never shifts the other.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(0x5c4e_d01e);
        Self {
            rng,
            gaps,
            next_s: 0.0,
        }
    }

    fn gap_s(&mut self) -> f64 {
        match &self.gaps {
            Gaps::Constant(g) => *g,
            Gaps::Exp(d) => d.sample(&mut self.rng),
            Gaps::Gamma(d) => d.sample(&mut self.rng),
        }
    }
}

impl Iterator for ArrivalPlan {
    type Item = Nanos;

    fn next(&mut self) -> Option<Nanos> {
        let at = (self.next_s * 1e9).round() as Nanos;
        self.next_s += self.gap_s();
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(plan: ArrivalPlan, n: usize) -> Vec<f64> {
        let times: Vec<Nanos> = plan.take(n + 1).collect();
        times
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e9)
            .collect()
    }

    fn mean_cv(g: &[f64]) -> (f64, f64) {
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn poisson_rate_and_dispersion_from_a_seed() {
        let g = gaps(ArrivalPlan::new(1000.0, Arrival::Poisson, 42), 100_000);
        let (mean, cv) = mean_cv(&g);
        assert!((1.0 / mean - 1000.0).abs() < 10.0, "rate {}", 1.0 / mean);
        assert!((cv - 1.0).abs() < 0.02, "cv {cv}");
        // Poisson counts per 1 s window: variance ≈ mean (index of dispersion ≈ 1).
        let times: Vec<Nanos> = ArrivalPlan::new(1000.0, Arrival::Poisson, 42)
            .take(100_000)
            .collect();
        let mut counts = vec![0f64; 100];
        for t in times {
            let w = (t / 1_000_000_000) as usize;
            if w < counts.len() {
                counts[w] += 1.0;
            }
        }
        let m = counts.iter().sum::<f64>() / counts.len() as f64;
        let v = counts.iter().map(|c| (c - m).powi(2)).sum::<f64>() / counts.len() as f64;
        assert!((v / m - 1.0).abs() < 0.35, "dispersion {}", v / m);
    }

    #[test]
    fn same_seed_same_plan_other_seed_other_plan() {
        let a: Vec<Nanos> = ArrivalPlan::new(10.0, Arrival::Poisson, 7)
            .take(50)
            .collect();
        let b: Vec<Nanos> = ArrivalPlan::new(10.0, Arrival::Poisson, 7)
            .take(50)
            .collect();
        let c: Vec<Nanos> = ArrivalPlan::new(10.0, Arrival::Poisson, 8)
            .take(50)
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a[0], 0);
    }

    #[test]
    fn constant_and_gamma_burstiness() {
        let g = gaps(ArrivalPlan::new(4.0, Arrival::Constant, 1), 10);
        assert!(g.iter().all(|&x| (x - 0.25).abs() < 1e-9));
        let g = gaps(
            ArrivalPlan::new(100.0, Arrival::Gamma { cv: 2.0 }, 3),
            100_000,
        );
        let (mean, cv) = mean_cv(&g);
        assert!((mean - 0.01).abs() < 0.0005, "mean {mean}");
        assert!((cv - 2.0).abs() < 0.1, "cv {cv}");
    }
}
