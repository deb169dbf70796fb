//! Shape of a latency distribution (draft 5.4.4.3): one mode or several.
//!
//! A histogram over log10 of the values (latencies spread over orders of magnitude),
//! lightly smoothed; a mode is a local maximum holding at least 5 % of the tallest bin,
//! and two modes count as distinct only when the valley between them falls below half of
//! the smaller one.

use crate::stats::distribution::Distribution;
use serde::Serialize;

/// How the upper tail of a latency distribution behaves (draft 5.4.4.3 asks to characterise
/// it and to report P99/P50).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TailKind {
    /// P99 within 2× P50: steady delivery.
    Light,
    /// The tail grows like an exponential's: the quantile gap P99.9 − P99 is about P99 − P90
    /// (each is ln 10 / λ for an exponential).
    Exponential,
    /// The tail grows faster than an exponential's (P99.9 − P99 > 1.5 × (P99 − P90)), or
    /// P99 is at least 5× P50: a few long pauses dominate.
    Heavy,
}

/// Shape of the ITL distribution: modes and tail, with a sentence that says which dominates.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Shape {
    pub modality: Option<Modality>,
    /// P99 / P50 (the draft's tail heaviness indicator).
    pub p99_over_p50: Option<f64>,
    pub tail: Option<TailKind>,
    /// One line for the report, e.g. "one mode near 44 ms, but the tail dominates: P99 is
    /// 19× P50 (long pauses)".
    pub statement: String,
}

/// The tail of `d`. P99.9 is used only with the 10,000 samples the draft asks of it.
pub fn tail(d: &Distribution) -> Option<TailKind> {
    if d.p50 <= 0.0 || d.n < 100 {
        return None;
    }
    let ratio = d.p99 / d.p50;
    if ratio >= 5.0 {
        return Some(TailKind::Heavy);
    }
    if ratio <= 2.0 {
        return Some(TailKind::Light);
    }
    if d.n >= 10_000 {
        let (d1, d2) = (d.p99 - d.p90, d.p999 - d.p99);
        if d1 > 0.0 && d2 > 1.5 * d1 {
            return Some(TailKind::Heavy);
        }
    }
    Some(TailKind::Exponential)
}

/// Modes and tail of a sample whose distribution is `d`.
pub fn shape(values: &[f64], d: Option<&Distribution>) -> Shape {
    let modality = modality(values);
    let ratio = d.filter(|d| d.p50 > 0.0).map(|d| d.p99 / d.p50);
    let tail = d.and_then(tail);
    let modes = match &modality {
        None => "too few samples to tell its modes".to_owned(),
        Some(m) if m.unimodal => match m.mode_values.first() {
            Some(v) => format!("one mode near {}", fmt_value(*v)),
            None => "one mode".to_owned(),
        },
        Some(m) => format!(
            "{} modes (near {}): distinct regimes such as batching or prefill stalls",
            m.modes,
            m.mode_values
                .iter()
                .map(|v| fmt_value(*v))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let statement = match (tail, ratio) {
        (Some(TailKind::Heavy), Some(r)) => {
            format!("{modes}, but the tail dominates: P99 is {r:.1}× P50 (long pauses)")
        }
        (Some(TailKind::Exponential), Some(r)) => {
            format!("{modes}; exponential-like tail (P99 {r:.1}× P50)")
        }
        (Some(TailKind::Light), Some(r)) => format!("{modes}; light tail (P99 {r:.1}× P50)"),
        _ => modes,
    };
    Shape {
        modality,
        p99_over_p50: ratio,
        tail,
        statement,
    }
}

fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 1.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.3} ms")
    }
}

/// The modes found, each as its bin's central value.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
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

    #[test]
    fn a_unimodal_sample_with_a_dominating_tail_says_so() {
        // 970 gaps of 40–48 ms and 30 pauses of 850 ms: one mode, P99/P50 ≈ 19.
        let mut v: Vec<f64> = (0..970).map(|i| 40.0 + (i % 9) as f64).collect();
        v.extend(std::iter::repeat_n(850.0, 30));
        let d = Distribution::of_slice(&v).unwrap();
        let s = shape(&v, Some(&d));
        assert_eq!(s.tail, Some(TailKind::Heavy));
        assert!(
            s.statement.contains("the tail dominates"),
            "{}",
            s.statement
        );
        assert!((s.p99_over_p50.unwrap() - 850.0 / 44.0).abs() < 1e-9);
        // Steady delivery: light.
        let v: Vec<f64> = (0..1000).map(|i| 40.0 + (i % 9) as f64).collect();
        let d = Distribution::of_slice(&v).unwrap();
        assert_eq!(shape(&v, Some(&d)).tail, Some(TailKind::Light));
    }
}
