//! Scheduling fairness across request classes (draft 5.6).

use super::distribution::percentile_sorted;
use super::request::RequestMetrics;
use serde::Serialize;
use std::collections::BTreeMap;

/// Per-class latency and starvation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassStats {
    pub count: usize,
    pub ttft_p50_ms: f64,
    pub ttft_p95_ms: f64,
    pub ttft_p99_ms: f64,
    pub tpot_p50_ms: Option<f64>,
    pub tpot_p95_ms: Option<f64>,
    pub tpot_p99_ms: Option<f64>,
    /// Share of the class whose TTFT exceeded 5× the class median.
    pub starvation_rate: f64,
    /// Mixed / isolated TTFT P50, when a baseline run of the class was given.
    pub latency_inflation_p50: Option<f64>,
    /// Mixed / isolated TTFT P99.
    pub latency_inflation_p99: Option<f64>,
}

/// Fairness of a run with request classes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fairness {
    /// Jain's index over normalized latency (E2E / output tokens) of every request: 1 is
    /// perfectly even; below 0.9 the draft calls significant unfairness.
    pub jain_index: f64,
    pub classes: BTreeMap<String, ClassStats>,
}

/// Jain's fairness index (Σx)² / (n·Σx²); 1 for an empty or all-zero sample.
pub fn jain_index(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || sq == 0.0 {
        1.0
    } else {
        sum * sum / (xs.len() as f64 * sq)
    }
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_unstable_by(f64::total_cmp);
    percentile_sorted(v, p)
}

/// Fairness over `(class, metrics)` of successful requests; `baseline` maps a class to its
/// isolated TTFT (P50, P99) in ms. `None` when fewer than one class is present.
pub fn fairness(
    requests: &[(&str, &RequestMetrics)],
    baseline: &BTreeMap<String, (f64, f64)>,
) -> Option<Fairness> {
    if requests.is_empty() {
        return None;
    }
    let normalized: Vec<f64> = requests
        .iter()
        .filter_map(|(_, m)| m.normalized_ms_per_token)
        .collect();
    let mut by_class: BTreeMap<String, Vec<&RequestMetrics>> = BTreeMap::new();
    for (c, m) in requests {
        by_class.entry((*c).to_owned()).or_default().push(m);
    }
    let classes = by_class
        .into_iter()
        .map(|(class, ms)| {
            let mut ttft: Vec<f64> = ms.iter().map(|m| m.ttft_ms).collect();
            let mut tpot: Vec<f64> = ms.iter().filter_map(|m| m.tpot_ms).collect();
            let median = pct(&mut ttft, 50.0);
            let starving = ttft.iter().filter(|&&t| t > 5.0 * median).count();
            let (p50, p99) = (median, pct(&mut ttft, 99.0));
            let base = baseline.get(&class);
            let stats = ClassStats {
                count: ms.len(),
                ttft_p50_ms: p50,
                ttft_p95_ms: pct(&mut ttft, 95.0),
                ttft_p99_ms: p99,
                tpot_p50_ms: (!tpot.is_empty()).then(|| pct(&mut tpot, 50.0)),
                tpot_p95_ms: (!tpot.is_empty()).then(|| pct(&mut tpot, 95.0)),
                tpot_p99_ms: (!tpot.is_empty()).then(|| pct(&mut tpot, 99.0)),
                starvation_rate: starving as f64 / ms.len() as f64,
                latency_inflation_p50: base.filter(|b| b.0 > 0.0).map(|b| p50 / b.0),
                latency_inflation_p99: base.filter(|b| b.1 > 0.0).map(|b| p99 / b.1),
            };
            (class, stats)
        })
        .collect();
    Some(Fairness {
        jain_index: jain_index(&normalized),
        classes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain_index(&[1.0, 1.0, 1.0]), 1.0);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!((jain_index(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
    }
}
