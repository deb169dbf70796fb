//! The summary's two breakdowns of per-request figures: TTFT by input length, and the
//! client's measurements beside the server's own timings of the same requests.

use super::{dist, input_tokens};
use crate::metrics::request::RequestMetrics;
use crate::record::RequestRecord;
use crate::stats::distribution::Distribution;
use serde::Serialize;

/// TTFT percentiles of one input-length bucket (draft 5.1.4.2).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct InputBucket {
    pub label: String,
    pub n: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

/// Client measurements next to what the server said about the same requests.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct ServerComparison {
    /// Server prompt (prefill) time, ms.
    pub prompt_ms: Option<Distribution>,
    /// Client TTFT − server prompt time: queueing plus transport, ms.
    pub ttft_minus_prompt_ms: Option<Distribution>,
    /// Server generation time per token, ms.
    pub server_tpot_ms: Option<Distribution>,
    /// Client decode rate / server decode rate, per request.
    pub decode_rate_ratio: Option<Distribution>,
    /// Requests whose prompt was partly served from the server's cache.
    pub requests_with_cache_hits: u64,
}

pub(crate) const INPUT_BUCKETS: [(u32, u32, &str); 6] = [
    (0, 256, "0-256"),
    (256, 512, "256-512"),
    (512, 1024, "512-1024"),
    (1024, 2048, "1024-2048"),
    (2048, 4096, "2048-4096"),
    (4096, u32::MAX, "4096+"),
];

pub(super) fn bucket_ttft(
    measured: &[&RequestRecord],
    per_request: &[Option<RequestMetrics>],
) -> Vec<InputBucket> {
    let mut out = Vec::new();
    let lens: Vec<u64> = measured.iter().map(|r| input_tokens(r)).collect();
    if lens.iter().min() == lens.iter().max() {
        return out; // fixed input length: one bucket says nothing more than Table 1
    }
    for (lo, hi, label) in INPUT_BUCKETS {
        let mut v: Vec<f64> = measured
            .iter()
            .zip(per_request)
            .zip(&lens)
            .filter(|(_, &len)| len >= lo as u64 && len < hi as u64)
            .filter_map(|((_, m), _)| m.as_ref().map(|m| m.ttft_ms))
            .collect();
        if let Some(d) = Distribution::of(&mut v) {
            out.push(InputBucket {
                label: label.into(),
                n: d.n,
                p50_ms: d.p50,
                p95_ms: d.p95,
                p99_ms: d.p99,
            });
        }
    }
    out
}

pub(super) fn server_comparison(
    measured: &[&RequestRecord],
    per_request: &[Option<RequestMetrics>],
) -> Option<ServerComparison> {
    let pairs: Vec<(&RequestRecord, &RequestMetrics)> = measured
        .iter()
        .zip(per_request)
        .filter_map(|(r, m)| Some((*r, m.as_ref()?)))
        .filter(|(r, _)| r.server_timing.is_some())
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let timing = |r: &RequestRecord| r.server_timing.clone().unwrap_or_default();
    Some(ServerComparison {
        prompt_ms: dist(pairs.iter().filter_map(|(r, _)| timing(r).prompt_ms)),
        ttft_minus_prompt_ms: dist(
            pairs
                .iter()
                .filter_map(|(r, m)| Some(m.ttft_ms - timing(r).prompt_ms?)),
        ),
        server_tpot_ms: dist(pairs.iter().filter_map(|(r, _)| {
            let t = timing(r);
            let n = t.predicted_n? as f64;
            let ms = t.predicted_ms?;
            (n >= 1.0).then(|| ms / n)
        })),
        decode_rate_ratio: dist(pairs.iter().filter_map(|(r, m)| {
            let server = timing(r).predicted_per_second?;
            let client = m.decode_tokens_per_s?;
            (server > 0.0).then(|| client / server)
        })),
        requests_with_cache_hits: pairs
            .iter()
            .filter(|(r, _)| timing(r).cache_n.unwrap_or(0) > 0)
            .count() as u64,
    })
}
