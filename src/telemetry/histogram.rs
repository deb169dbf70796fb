//! Cumulative histograms read from a `/metrics` page: mean, quantiles and window deltas.
//!
//! Engines publish latency distributions (TTFT, inter-token latency, end-to-end) only as
//! Prometheus histograms: cumulative bucket counts since the server started. A benchmark
//! needs what happened during its own run, so the useful operations are a delta between
//! two scrapes and the statistics of that delta. Quantiles follow Prometheus'
//! `histogram_quantile` exactly, so figures agree with the engine's own dashboards.

use serde::{Deserialize, Serialize};

use super::prometheus::Scrape;
use super::sample_line::parse_value;

/// A cumulative histogram, summed over label sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// `(upper bound, cumulative count)` sorted by bound, ending with `+Inf` when read from
    /// a page. Empty for a summary read through [`Scrape::histogram`] (mean only). In JSON
    /// the `+Inf` bound is written as the string `"+Inf"`, which JSON numbers cannot hold.
    #[serde(with = "bounds_serde")]
    pub buckets: Vec<(f64, f64)>,
    /// Sum of observations, in the metric's unit; `None` if the page had no `_sum`.
    pub sum: Option<f64>,
    /// Number of observations.
    pub count: f64,
}

/// A histogram over a window, from [`Histogram::delta`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramDelta {
    pub histogram: Histogram,
    /// True when a count went down or the bucket layout changed (a server restart): the
    /// histogram is then the later one whole, covering only the time since the restart.
    pub reset: bool,
}

impl Histogram {
    /// Reads the histogram `family` from a page, summed over the series carrying `labels`
    /// (every other label but `le` may differ). Also gives a bucketless histogram (mean
    /// only) for a summary's `_sum` / `_count`. `None` when the page has neither a `_count`
    /// nor a `+Inf` bucket for it.
    pub fn from_scrape(
        scrape: &Scrape,
        family: &str,
        labels: &[(&str, &str)],
    ) -> Option<Histogram> {
        let bucket_name = format!("{family}_bucket");
        let sum_name = format!("{family}_sum");
        let count_name = format!("{family}_count");
        let mut buckets: Vec<(f64, f64)> = Vec::new();
        let (mut sum, mut count): (Option<f64>, Option<f64>) = (None, None);
        for s in scrape
            .samples()
            .filter(|s| s.name.starts_with(family) && s.has_labels(labels))
        {
            if s.name == bucket_name {
                let Some(le) = s.label("le").and_then(parse_value) else {
                    continue;
                };
                if le.is_nan() {
                    continue;
                }
                match buckets.iter_mut().find(|(b, _)| *b == le) {
                    Some(bucket) => bucket.1 += s.value,
                    None => buckets.push((le, s.value)),
                }
            } else if s.name == sum_name {
                *sum.get_or_insert(0.0) += s.value;
            } else if s.name == count_name {
                *count.get_or_insert(0.0) += s.value;
            }
        }
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let inf_count = buckets
            .last()
            .filter(|(le, _)| *le == f64::INFINITY)
            .map(|b| b.1);
        // With neither `_count` nor a `+Inf` bucket there is no total to trust.
        let count = count.or(inf_count)?;
        if inf_count.is_none() && !buckets.is_empty() {
            buckets.push((f64::INFINITY, count));
        }
        Some(Histogram {
            buckets,
            sum,
            count,
        })
    }

    /// Mean observation (`sum / count`), in the metric's unit; `None` with no observations.
    pub fn mean(&self) -> Option<f64> {
        let sum = self.sum.filter(|s| s.is_finite())?;
        (self.count > 0.0).then(|| sum / self.count)
    }

    /// The `q`-quantile (0 ≤ q ≤ 1) by linear interpolation within the bucket that holds
    /// it, as Prometheus' `histogram_quantile`: the first bucket starts at 0 (if its bound
    /// is positive), and a rank in the `+Inf` bucket returns the largest finite bound.
    /// `None` without observations, without at least two buckets, or for q outside [0, 1].
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if !(0.0..=1.0).contains(&q) || self.buckets.len() < 2 {
            return None;
        }
        if self.buckets.last()?.0 != f64::INFINITY {
            return None;
        }
        // Counts from sloppy or racing exporters can dip; Prometheus forces them monotonic.
        let mut high = 0.0_f64;
        let cumulative: Vec<(f64, f64)> = self
            .buckets
            .iter()
            .map(|&(le, c)| {
                high = high.max(c);
                (le, high)
            })
            .collect();
        let total = cumulative.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let last = cumulative.len() - 1;
        let b = cumulative
            .iter()
            .position(|&(_, c)| c >= rank)
            .unwrap_or(last);
        if b == last {
            return Some(cumulative[last - 1].0);
        }
        let (upper, upper_count) = cumulative[b];
        if b == 0 && upper <= 0.0 {
            return Some(upper);
        }
        let (lower, lower_count) = if b == 0 {
            (0.0, 0.0)
        } else {
            cumulative[b - 1]
        };
        let in_bucket = upper_count - lower_count;
        if in_bucket <= 0.0 {
            return Some(lower);
        }
        Some(lower + (upper - lower) * (rank - lower_count) / in_bucket)
    }

    /// Observations between `earlier` and `self` (counter deltas of every bucket, the sum
    /// and the count). If any count went down, or the bucket bounds differ, the server
    /// restarted: returns `self` unchanged, flagged `reset`.
    pub fn delta(&self, earlier: &Histogram) -> HistogramDelta {
        let same_bounds = self.buckets.len() == earlier.buckets.len()
            && self
                .buckets
                .iter()
                .zip(&earlier.buckets)
                .all(|(a, b)| a.0 == b.0);
        let went_down = self.count < earlier.count
            || self
                .buckets
                .iter()
                .zip(&earlier.buckets)
                .any(|(a, b)| a.1 < b.1);
        if !same_bounds || went_down {
            return HistogramDelta {
                histogram: self.clone(),
                reset: true,
            };
        }
        let buckets = self
            .buckets
            .iter()
            .zip(&earlier.buckets)
            .map(|(a, b)| (a.0, a.1 - b.1))
            .collect();
        HistogramDelta {
            histogram: Histogram {
                buckets,
                sum: self.sum.zip(earlier.sum).map(|(a, b)| a - b),
                count: self.count - earlier.count,
            },
            reset: false,
        }
    }

    /// The same histogram in another unit: bounds and sum multiplied by `factor`
    /// (e.g. `0.001` turns Triton's milliseconds into seconds).
    pub fn scaled(&self, factor: f64) -> Histogram {
        Histogram {
            buckets: self
                .buckets
                .iter()
                .map(|&(le, c)| (le * factor, c))
                .collect(),
            sum: self.sum.map(|s| s * factor),
            count: self.count,
        }
    }
}

/// Serialises bucket bounds as JSON numbers, with `+Inf` as the string `"+Inf"`.
mod bounds_serde {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Bound {
        Number(f64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(buckets: &[(f64, f64)], s: S) -> Result<S::Ok, S::Error> {
        let out: Vec<(Bound, f64)> = buckets
            .iter()
            .map(|&(le, c)| {
                let bound = if le.is_finite() {
                    Bound::Number(le)
                } else {
                    Bound::Text(super::format_bound(le))
                };
                (bound, c)
            })
            .collect();
        out.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(f64, f64)>, D::Error> {
        let raw: Vec<(Bound, f64)> = Vec::deserialize(d)?;
        raw.into_iter()
            .map(|(bound, c)| match bound {
                Bound::Number(le) => Ok((le, c)),
                Bound::Text(t) => super::parse_value(&t)
                    .map(|le| (le, c))
                    .ok_or_else(|| serde::de::Error::custom(format!("bad bucket bound `{t}`"))),
            })
            .collect()
    }
}

/// A bound as Prometheus writes it: `+Inf`, `-Inf`, `NaN` or the number.
fn format_bound(le: f64) -> String {
    if le == f64::INFINITY {
        "+Inf".to_string()
    } else if le == f64::NEG_INFINITY {
        "-Inf".to_string()
    } else if le.is_nan() {
        "NaN".to_string()
    } else {
        le.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::prometheus::parse;
    use super::*;

    const VLLM: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/metrics/vllm.txt"
    ));

    #[test]
    fn vllm_ttft_histogram_by_hand() {
        let h = parse(VLLM)
            .unwrap()
            .histogram("vllm:time_to_first_token_seconds")
            .unwrap();
        // Both engines summed: cumulative 0.02→6, 0.04→24, 0.06→52, 0.08→68, 0.1→78,
        // 0.25→80; sum 2.04 + 2.46 = 4.5 over 80 requests.
        assert_eq!(h.count, 80.0);
        assert_eq!(h.buckets.len(), 23);
        assert!((h.sum.unwrap() - 4.5).abs() < 1e-12);
        assert!((h.mean().unwrap() - 0.05625).abs() < 1e-12);
        // p50: rank 40 lies in (0.04, 0.06] holding 52 - 24 = 28; 0.04 + 0.02 * 16/28.
        assert!((h.quantile(0.5).unwrap() - (0.04 + 0.02 * 16.0 / 28.0)).abs() < 1e-12);
        // p90: rank 72 in (0.08, 0.1] holding 10; 0.08 + 0.02 * 4/10 = 0.088.
        assert!((h.quantile(0.9).unwrap() - 0.088).abs() < 1e-12);
        // p99: rank 79.2 in (0.1, 0.25] holding 2; 0.1 + 0.15 * 1.2/2 = 0.19.
        assert!((h.quantile(0.99).unwrap() - 0.19).abs() < 1e-12);
        assert_eq!(h.quantile(1.5), None);
        let one = parse(VLLM)
            .unwrap()
            .histogram_with("vllm:time_to_first_token_seconds", &[("engine", "0")])
            .unwrap();
        assert_eq!(one.count, 40.0);
    }

    #[test]
    fn quantile_edge_cases() {
        let h = Histogram {
            buckets: vec![(1.0, 0.0), (2.0, 10.0), (f64::INFINITY, 12.0)],
            sum: Some(25.0),
            count: 12.0,
        };
        // Rank 11.4 falls in +Inf: Prometheus answers the largest finite bound.
        assert_eq!(h.quantile(0.95), Some(2.0));
        // Rank 6 in (1, 2] holding 10: 1 + 1 * 6/10.
        assert!((h.quantile(0.5).unwrap() - 1.6).abs() < 1e-12);
        let empty = Histogram {
            buckets: vec![(1.0, 0.0), (f64::INFINITY, 0.0)],
            sum: Some(0.0),
            count: 0.0,
        };
        assert_eq!(empty.quantile(0.5), None);
        assert_eq!(empty.mean(), None);
        // A dip in cumulative counts is flattened as Prometheus does: (0.5,1]→5, (1,2]→5.
        let dip = Histogram {
            buckets: vec![(0.5, 0.0), (1.0, 5.0), (2.0, 4.0), (f64::INFINITY, 10.0)],
            sum: Some(9.0),
            count: 10.0,
        };
        assert!((dip.quantile(0.25).unwrap() - 0.75).abs() < 1e-12);
    }

    #[test]
    fn histogram_delta_and_reset() {
        let earlier = Histogram {
            buckets: vec![(0.1, 2.0), (1.0, 5.0), (f64::INFINITY, 6.0)],
            sum: Some(3.0),
            count: 6.0,
        };
        let later = Histogram {
            buckets: vec![(0.1, 3.0), (1.0, 9.0), (f64::INFINITY, 10.0)],
            sum: Some(5.5),
            count: 10.0,
        };
        let d = later.delta(&earlier);
        assert!(!d.reset);
        assert_eq!(
            d.histogram.buckets,
            vec![(0.1, 1.0), (1.0, 4.0), (f64::INFINITY, 4.0)]
        );
        assert_eq!(d.histogram.count, 4.0);
        assert!((d.histogram.mean().unwrap() - 0.625).abs() < 1e-12);
        let restarted = Histogram {
            buckets: vec![(0.1, 1.0), (1.0, 1.0), (f64::INFINITY, 1.0)],
            sum: Some(0.05),
            count: 1.0,
        };
        let d = restarted.delta(&earlier);
        assert!(d.reset);
        assert_eq!(d.histogram, restarted);
        // JSON cannot hold +Inf as a number; the bound survives as "+Inf".
        let json = serde_json::to_string(&later).unwrap();
        assert!(json.contains(r#"["+Inf",10.0]"#), "{json}");
        assert_eq!(serde_json::from_str::<Histogram>(&json).unwrap(), later);
    }
}
