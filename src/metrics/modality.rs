//! Shape of a latency distribution (draft 5.4.4.3): one mode or several.
//!
//! A histogram over log10 of the values (latencies spread over orders of magnitude),
//! lightly smoothed; a mode is a local maximum holding at least 5 % of the tallest bin,
//! and two modes count as distinct only when the valley between them falls below half of
//! the smaller one.

use serde::Serialize;

/// The modes found, each as its bin's central value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Modality {
    pub modes: usize,
    pub unimodal: bool,
    /// Central value of each mode (same unit as the sample).
    pub mode_values: Vec<f64>,
}

/// Modes of a sample of positive values (zeros and negatives are ignored).
pub fn modality(values: &[f64]) -> Option<Modality> {
    let logs: Vec<f64> = values
        .iter()
        .filter(|v| **v > 0.0)
        .map(|v| v.log10())
        .collect();
    if logs.len() < 50 {
        return None;
    }
    let (lo, hi) = logs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    if hi - lo < 1e-9 {
        return Some(Modality {
            modes: 1,
            unimodal: true,
            mode_values: vec![10f64.powf(lo)],
        });
    }
    const BINS: usize = 40;
    let width = (hi - lo) / BINS as f64;
    let mut hist = [0f64; BINS];
    for x in &logs {
        hist[(((x - lo) / width) as usize).min(BINS - 1)] += 1.0;
    }
    let smooth: Vec<f64> = (0..BINS)
        .map(|i| {
            let a = if i > 0 { hist[i - 1] } else { 0.0 };
            let c = if i + 1 < BINS { hist[i + 1] } else { 0.0 };
            (a + 2.0 * hist[i] + c) / 4.0
        })
        .collect();
    let top = smooth.iter().copied().fold(0.0, f64::max);
    let mut peaks: Vec<usize> = (0..BINS)
        .filter(|&i| {
            let left = if i > 0 { smooth[i - 1] } else { 0.0 };
            let right = if i + 1 < BINS { smooth[i + 1] } else { 0.0 };
            smooth[i] >= 0.05 * top && smooth[i] > left && smooth[i] >= right
        })
        .collect();
    // Merge peaks without a deep enough valley between them.
    let mut merged: Vec<usize> = Vec::new();
    for p in peaks.drain(..) {
        if let Some(&q) = merged.last() {
            let valley = smooth[q..=p].iter().copied().fold(f64::MAX, f64::min);
            if valley >= 0.5 * smooth[q].min(smooth[p]) {
                if smooth[p] > smooth[q] {
                    merged.pop();
                    merged.push(p);
                }
                continue;
            }
        }
        merged.push(p);
    }
    let mode_values = merged
        .iter()
        .map(|&i| 10f64.powf(lo + (i as f64 + 0.5) * width))
        .collect();
    Some(Modality {
        modes: merged.len(),
        unimodal: merged.len() <= 1,
        mode_values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded normal sample (Box–Muller over ChaCha8).
    fn normal(n: usize, mean: f64, sd: f64, seed: u64) -> Vec<f64> {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
                mean + sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
            })
            .collect()
    }

    #[test]
    fn one_and_two_modes() {
        let uni = normal(2000, 20.0, 2.0, 1);
        assert!(modality(&uni).unwrap().unimodal, "{:?}", modality(&uni));
        // Most gaps near 10 ms, a second regime near 200 ms (prefill stalls).
        let mut bi = normal(1800, 10.0, 1.0, 2);
        bi.extend(normal(200, 200.0, 15.0, 3));
        let m = modality(&bi).unwrap();
        assert_eq!(m.modes, 2, "{m:?}");
        assert!(m.mode_values[0] < 20.0 && m.mode_values[1] > 100.0);
        assert!(modality(&[1.0; 10]).is_none(), "too few samples");
    }
}
