//! Scheduling fairness across request classes (draft 5.6).
//!
//! A request that failed stays in its class: it waited and got nothing, so it is the most
//! starved of all. It counts in the class's `count`, in `failed`, and as starved.

use super::request::RequestMetrics;
use crate::stats::distribution::percentile_sorted;
use serde::Serialize;
use std::collections::BTreeMap;

/// Per-class latency and starvation.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct ClassStats {
    /// Measured requests of the class, failed ones included.
    pub count: usize,
    /// Of those, requests that failed.
    pub failed: usize,
    /// TTFT of the class's completed requests, ms (`None` when every one failed).
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub tpot_p50_ms: Option<f64>,
    pub tpot_p95_ms: Option<f64>,
    pub tpot_p99_ms: Option<f64>,
    /// Share of the class that starved: TTFT above 5× the class median, or failed.
    pub starvation_rate: f64,
    /// Mixed / isolated TTFT P50, when a baseline run of the class was given.
    pub latency_inflation_p50: Option<f64>,
    /// Mixed / isolated TTFT P99.
    pub latency_inflation_p99: Option<f64>,
}

/// Fairness of a run with request classes.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
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

/// Fairness over `(class, metrics)` of measured requests (`None`: the request failed);
/// `baseline` maps a class to its isolated TTFT (P50, P99) in ms. `None` without requests.
pub fn fairness(
    requests: &[(&str, Option<&RequestMetrics>)],
    baseline: &BTreeMap<String, (f64, f64)>,
) -> Option<Fairness> {
    if requests.is_empty() {
        return None;
    }
    let normalized: Vec<f64> = requests
        .iter()
        .filter_map(|(_, m)| m.and_then(|m| m.normalized_ms_per_token))
        .collect();
    let mut by_class: BTreeMap<String, Vec<Option<&RequestMetrics>>> = BTreeMap::new();
    for (c, m) in requests {
        by_class.entry((*c).to_owned()).or_default().push(*m);
    }
    let classes = by_class
        .into_iter()
        .map(|(class, ms)| {
            let ok: Vec<&RequestMetrics> = ms.iter().flatten().copied().collect();
            let failed = ms.len() - ok.len();
            let mut ttft: Vec<f64> = ok.iter().map(|m| m.ttft_ms).collect();
            let mut tpot: Vec<f64> = ok.iter().filter_map(|m| m.tpot_ms).collect();
            let median = if ttft.is_empty() {
                f64::NAN
            } else {
                pct(&mut ttft, 50.0)
            };
            let starving = ttft.iter().filter(|&&t| t > 5.0 * median).count() + failed;
            let p99 = if ttft.is_empty() {
                f64::NAN
            } else {
                pct(&mut ttft, 99.0)
            };
            let base = baseline.get(&class);
            let some = |v: &mut Vec<f64>, p: f64| (!v.is_empty()).then(|| pct(v, p));
            let stats = ClassStats {
                count: ms.len(),
                failed,
                ttft_p50_ms: median.is_finite().then_some(median),
                ttft_p95_ms: some(&mut ttft, 95.0),
                ttft_p99_ms: p99.is_finite().then_some(p99),
                tpot_p50_ms: some(&mut tpot, 50.0),
                tpot_p95_ms: some(&mut tpot, 95.0),
                tpot_p99_ms: some(&mut tpot, 99.0),
                starvation_rate: starving as f64 / ms.len() as f64,
                latency_inflation_p50: base
                    .filter(|b| b.0 > 0.0 && median.is_finite())
                    .map(|b| median / b.0),
                latency_inflation_p99: base
                    .filter(|b| b.1 > 0.0 && p99.is_finite())
                    .map(|b| p99 / b.1),
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
    fn jain_index_hand_computed() {
        assert_eq!(jain_index(&[1.0, 1.0, 1.0]), 1.0);
        // (1)² / (4·1) = 0.25: one user got everything.
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1 + 3)² / (2·(1 + 9)) = 16 / 20.
        assert!((jain_index(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
        assert_eq!(jain_index(&[]), 1.0);
    }

    fn m(ttft: f64) -> RequestMetrics {
        RequestMetrics {
            ttft_ms: ttft,
            e2e_ms: ttft + 90.0,
            tpot_ms: Some(10.0),
            itl_ms: vec![10.0; 9],
            jitter_ms: Some(0.0),
            max_pause_ms: Some(10.0),
            normalized_ms_per_token: Some((ttft + 90.0) / 10.0),
            decode_tokens_per_s: None,
            ttfb_ms: None,
            time_to_first_reasoning_ms: None,
            ttft_from_schedule_ms: None,
            e2e_from_schedule_ms: None,
            output_tokens: 10,
            answer_tokens: 10,
        }
    }

    #[test]
    fn failed_requests_are_starved_and_counted() {
        let (a, b, c, slow) = (m(100.0), m(100.0), m(120.0), m(1000.0));
        let reqs = vec![
            ("chat", Some(&a)),
            ("chat", Some(&b)),
            ("chat", Some(&c)),
            ("chat", Some(&slow)),
            ("chat", None),
            ("batch", Some(&a)),
        ];
        let mut base = BTreeMap::new();
        base.insert("chat".to_owned(), (50.0, 100.0));
        let f = fairness(&reqs, &base).unwrap();
        let chat = &f.classes["chat"];
        assert_eq!((chat.count, chat.failed), (5, 1));
        // Median TTFT of the four answers: 110 ms. 1,000 > 5·110 starves; so does the failure.
        assert_eq!(chat.ttft_p50_ms, Some(110.0));
        assert_eq!(chat.starvation_rate, 2.0 / 5.0);
        assert_eq!(chat.latency_inflation_p50, Some(110.0 / 50.0));
        assert_eq!(f.classes["batch"].starvation_rate, 0.0);
        // Jain over E2E/N of the five answers: 19, 19, 21, 109, 19.
        let xs = [19.0, 19.0, 21.0, 109.0, 19.0];
        let expect = xs.iter().sum::<f64>().powi(2) / (5.0 * xs.iter().map(|x| x * x).sum::<f64>());
        assert!((f.jain_index - expect).abs() < 1e-12);
    }
}
