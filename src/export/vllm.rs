//! The result JSON of vLLM's `vllm bench serve --save-result` (vllm/benchmarks/serve.py),
//! with its keys in the order vLLM writes them, so tools that plot vLLM's results read a
//! servebench run as if `bench serve` had made it.
//!
//! What is written, as vLLM writes it without `--save-detailed`, as if run with
//! `--percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,95,99,99.9`:
//! `date` … `num_prompts`, one `--metadata` key (`servebench_version`), `request_rate`,
//! `burstiness`, `max_concurrency`, then `duration` … `rtfx` with `latencies` and
//! `queue_times`, then `mean_X_ms`, `median_X_ms`, `std_X_ms` and `pP_X_ms` for each metric.
//! The figures follow vLLM's definitions, computed from `requests.jsonl`: latency to the end
//! of the stream, TPOT = (latency − TTFT) / (output tokens − 1), ITL = every gap between
//! answer chunks, statistics over successful requests only, population standard
//! deviation, numpy's linear percentiles. Pure.

use super::{measured, num, Ordered, Req, Stats};
use crate::artifacts::RunReport;
use crate::client::Endpoint;
use crate::record::wire::WireRecord;
use crate::schedule::{Arrival, LoadPattern};
use serde_json::Value as Json;

/// The percentiles written, as `--metric-percentiles` would name them.
pub const PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 99.9];

/// The metrics with statistics, as `--percentile-metrics` would name them.
pub const METRICS: [&str; 4] = ["ttft", "tpot", "itl", "e2el"];

/// vLLM's name for a percentile: `99` for whole numbers, `99.9` otherwise.
pub fn p_word(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{}", p as i64)
    } else {
        format!("{p}")
    }
}

/// The `bench serve` result of a run.
pub fn result(report: &RunReport, records: &[WireRecord]) -> Ordered {
    let reqs = measured(records);
    let ok: Vec<&Req> = reqs.iter().filter(|r| r.ok).collect();
    let c = &report.config;
    let backend = backend_name(&c.target.endpoint);
    let mut o = Ordered::default();
    o.push("date", date(report.started_at_us));
    o.push("endpoint_type", backend);
    o.push("backend", backend);
    o.push("label", Json::Null);
    o.push("model_id", c.target.model.clone());
    o.push("tokenizer_id", report.tokenizer.name.clone());
    o.push("num_prompts", reqs.len() as u64);
    // `--metadata KEY=VALUE` pairs land here in vLLM's file, as strings.
    o.push("servebench_version", report.tool.version.clone());
    push_load(&mut o, report);
    push_throughput(&mut o, report, &reqs, &ok);
    push_metrics(&mut o, &ok);
    o
}

/// vLLM's `--backend` names where it has one; the others are named after the API, so a
/// dashboard can tell them apart.
fn backend_name(endpoint: &Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Chat => "openai-chat",
        Endpoint::Completions => "openai",
        Endpoint::Responses => "openai-responses",
        Endpoint::Messages => "anthropic-messages",
        Endpoint::Llamacpp => "llama.cpp",
        Endpoint::Tgi => "tgi",
        Endpoint::Sglang => "sglang",
        Endpoint::Websocket => "websocket",
        Endpoint::Grpc => "kserve-grpc",
        Endpoint::Embeddings => "openai-embeddings",
        Endpoint::Rerank => "rerank",
    }
}

/// `request_rate`, `burstiness` and `max_concurrency`, as `bench serve` would have been
/// asked for the run's load.
fn push_load(o: &mut Ordered, report: &RunReport) {
    let c = &report.config;
    let (rate, burstiness, max_concurrency) = match c.load {
        LoadPattern::Closed { concurrency } => {
            (Json::from("inf"), num(1.0), Json::from(concurrency))
        }
        LoadPattern::Open {
            rate_per_s,
            arrival,
        } => (
            num(rate_per_s),
            match arrival {
                Arrival::Poisson => num(1.0),
                // vLLM's gamma arrivals have shape b and CV 1/sqrt(b).
                Arrival::Gamma { cv } => num(1.0 / (cv * cv)),
                // Equal gaps are the limit b → ∞, which JSON cannot hold.
                Arrival::Constant => Json::Null,
            },
            c.max_concurrency.map_or(Json::Null, Json::from),
        ),
        LoadPattern::Trace { .. } => (
            Json::from("inf"),
            Json::Null,
            c.max_concurrency.map_or(Json::Null, Json::from),
        ),
    };
    o.push("request_rate", rate);
    o.push("burstiness", burstiness);
    o.push("max_concurrency", max_concurrency);
}

/// `duration` … `rtfx`: counts, token totals, throughputs, every request's latency and
/// queue time, and the peaks.
fn push_throughput(o: &mut Ordered, report: &RunReport, reqs: &[Req], ok: &[&Req]) {
    let duration = report.summary.window.duration_s;
    let total_input: u64 = ok.iter().map(|r| r.input_tokens).sum();
    let total_output: u64 = ok.iter().map(|r| u64::from(r.wire.output_tokens)).sum();
    let per_s = |n: f64| {
        if duration > 0.0 {
            num(n / duration)
        } else {
            Json::Null
        }
    };
    o.push("duration", num(duration));
    o.push("completed", ok.len() as u64);
    o.push("failed", (reqs.len() - ok.len()) as u64);
    o.push("total_input_tokens", total_input);
    o.push("total_output_tokens", total_output);
    o.push("request_throughput", per_s(ok.len() as f64));
    o.push(
        "request_goodput",
        report
            .summary
            .slo
            .as_ref()
            .and_then(|s| s.per_request.as_ref())
            .map_or(Json::Null, |a| num(a.goodput_requests_per_s)),
    );
    o.push("output_throughput", per_s(total_output as f64));
    o.push(
        "total_token_throughput",
        per_s((total_input + total_output) as f64),
    );
    // Kept by vLLM even without --save-detailed: every request's latency (0 when it
    // failed) and its wait for a --max-concurrency slot, seconds.
    o.push(
        "latencies",
        reqs.iter()
            .map(|r| {
                num(if r.ok {
                    r.latency_s.unwrap_or(0.0)
                } else {
                    0.0
                })
            })
            .collect::<Vec<_>>(),
    );
    o.push(
        "queue_times",
        reqs.iter()
            .map(|r| {
                let w = r.wire;
                num(w
                    .scheduled_at_us
                    .map_or(0.0, |s| w.queued_at_us.saturating_sub(s) as f64 / 1e6))
            })
            .collect::<Vec<_>>(),
    );
    let (peak_tokens, peak_concurrency) = peaks(ok);
    o.push("max_output_tokens_per_s", num(peak_tokens));
    o.push("max_concurrent_requests", peak_concurrency);
    o.push("rtfx", num(0.0));
}

/// `mean_X_ms`, `median_X_ms`, `std_X_ms` and `pP_X_ms` for each of [`METRICS`], over the
/// successful requests.
fn push_metrics(o: &mut Ordered, ok: &[&Req]) {
    let ttft = Stats::of(ok.iter().filter_map(|r| r.ttft_s));
    let tpot = Stats::of(ok.iter().filter_map(|r| {
        let n = r.wire.output_tokens;
        if n > 1 {
            Some((r.latency_s? - r.ttft_s?) / f64::from(n - 1))
        } else {
            None
        }
    }));
    let itl = Stats::of(ok.iter().flat_map(|r| r.chunk_gaps_s.iter().copied()));
    let e2el = Stats::of(ok.iter().filter_map(|r| r.latency_s));
    for (name, s) in METRICS.iter().zip([ttft, tpot, itl, e2el]) {
        o.push(format!("mean_{name}_ms"), num(s.mean() * 1000.0));
        o.push(
            format!("median_{name}_ms"),
            num(s.percentile(50.0) * 1000.0),
        );
        o.push(format!("std_{name}_ms"), num(s.std_population() * 1000.0));
        for p in PERCENTILES {
            o.push(
                format!("p{}_{name}_ms", p_word(p)),
                num(s.percentile(p) * 1000.0),
            );
        }
    }
}

/// `%Y%m%d-%H%M%S` (UTC) of a Unix time in µs, as vLLM names its results.
fn date(unix_us: u64) -> String {
    let iso = crate::clock::iso8601_ms(unix_us); // 2026-11-22T01:02:03.456Z
    let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
    format!("{}-{}", digits(&iso[..10]), digits(&iso[11..19]))
}

/// vLLM's peaks over successful requests: the most output tokens in one whole second
/// counted from the first request's start, and the most requests in flight at once.
fn peaks(ok: &[&Req]) -> (f64, u64) {
    let Some(start) = ok.iter().filter_map(|r| r.wire.sent_at_us).min() else {
        return (0.0, 0);
    };
    let mut per_second: std::collections::BTreeMap<u64, u64> = Default::default();
    let mut events: Vec<(u64, i64)> = Vec::new();
    for r in ok {
        for &(at, tokens) in &r.wire.chunks {
            *per_second
                .entry(at.saturating_sub(start) / 1_000_000)
                .or_default() += u64::from(tokens);
        }
        if let Some(s) = r.wire.sent_at_us {
            events.push((s, 1));
            events.push((r.wire.finished_at_us, -1));
        }
    }
    // Half-open intervals: a departure at the same instant comes before an arrival.
    events.sort_unstable();
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, d) in events {
        now += d;
        peak = peak.max(now);
    }
    (
        per_second.values().copied().max().unwrap_or(0) as f64,
        peak as u64,
    )
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    /// The keys of vLLM's file, in order, as shared/SERVER-FORMATS.md lists them for
    /// vllm/benchmarks/serve.py (without --save-detailed; `servebench_version` is a
    /// `--metadata` pair).
    fn documented_keys() -> Vec<String> {
        let mut keys: Vec<String> = [
            "date",
            "endpoint_type",
            "backend",
            "label",
            "model_id",
            "tokenizer_id",
            "num_prompts",
            "servebench_version",
            "request_rate",
            "burstiness",
            "max_concurrency",
            "duration",
            "completed",
            "failed",
            "total_input_tokens",
            "total_output_tokens",
            "request_throughput",
            "request_goodput",
            "output_throughput",
            "total_token_throughput",
            "latencies",
            "queue_times",
            "max_output_tokens_per_s",
            "max_concurrent_requests",
            "rtfx",
        ]
        .map(String::from)
        .to_vec();
        for m in ["ttft", "tpot", "itl", "e2el"] {
            keys.push(format!("mean_{m}_ms"));
            keys.push(format!("median_{m}_ms"));
            keys.push(format!("std_{m}_ms"));
            for p in ["50", "90", "95", "99", "99.9"] {
                keys.push(format!("p{p}_{m}_ms"));
            }
        }
        keys
    }

    #[test]
    fn keys_are_vllms_in_vllms_order() {
        let o = result(&fixture::report(), &fixture::records());
        assert_eq!(o.keys(), documented_keys());
        assert_eq!(p_word(99.0), "99");
        assert_eq!(p_word(99.9), "99.9");
    }

    #[test]
    fn values_follow_vllms_definitions() {
        let report = fixture::report();
        let records = fixture::records();
        let o = result(&report, &records);
        let f = |k: &str| o.get(k).and_then(Json::as_f64).unwrap();
        assert_eq!(o.get("backend").unwrap(), "openai-chat");
        assert_eq!(o.get("model_id").unwrap(), "sim-fast");
        assert_eq!(o.get("request_rate").unwrap(), "inf");
        assert_eq!(o.get("max_concurrency").unwrap(), 4);
        assert_eq!(o.get("date").unwrap().as_str().unwrap().len(), 15);
        let ok: Vec<&WireRecord> = records
            .iter()
            .filter(|w| matches!(w.outcome, crate::record::wire::WireOutcome::Ok(_)))
            .collect();
        assert_eq!(f("completed") as usize, ok.len());
        assert_eq!(f("failed") as usize, records.len() - ok.len());
        assert!(f("failed") > 0.0, "the fixture has failures");
        let out: u64 = ok.iter().map(|w| u64::from(w.output_tokens)).sum();
        assert_eq!(f("total_output_tokens") as u64, out);
        let d = report.summary.window.duration_s;
        assert!((f("output_throughput") - out as f64 / d).abs() < 1e-9);
        assert!((f("request_throughput") - ok.len() as f64 / d).abs() < 1e-9);
        // TTFT by hand: median of the successful requests' first-token times.
        let mut ttfts: Vec<f64> = ok
            .iter()
            .map(|w| (w.first_token_at_us.unwrap() - w.submitted_at_us().unwrap()) as f64 / 1000.0)
            .collect();
        ttfts.sort_by(f64::total_cmp);
        let median = crate::stats::distribution::percentile_sorted(&ttfts, 50.0);
        assert!((f("median_ttft_ms") - median).abs() < 1e-9);
        let mean = ttfts.iter().sum::<f64>() / ttfts.len() as f64;
        assert!((f("mean_ttft_ms") - mean).abs() < 1e-9);
        // Latencies: one per request, 0 for the failed ones.
        let lat = o.get("latencies").unwrap().as_array().unwrap();
        assert_eq!(lat.len(), records.len());
        for (w, l) in records.iter().zip(lat) {
            let l = l.as_f64().unwrap();
            match w.outcome {
                crate::record::wire::WireOutcome::Ok(_) => {
                    let want = (w.finished_at_us - w.submitted_at_us().unwrap()) as f64 / 1e6;
                    assert!((l - want).abs() < 1e-12);
                }
                _ => assert_eq!(l, 0.0),
            }
        }
        // ITL: every gap between answer chunks, so there are (chunks − 1) per request.
        let gaps: usize = ok.iter().map(|w| w.chunks.len() - 1).sum();
        assert!(gaps > 0);
        assert!(f("p99_itl_ms") >= f("median_itl_ms"));
        assert!(f("max_concurrent_requests") <= 4.0 && f("max_concurrent_requests") >= 1.0);
        assert!(f("max_output_tokens_per_s") >= 1.0);
        let goodput = report
            .summary
            .slo
            .as_ref()
            .unwrap()
            .per_request
            .as_ref()
            .unwrap();
        assert_eq!(f("request_goodput"), goodput.goodput_requests_per_s);
        // The whole thing serialises as JSON with the same keys.
        let text = serde_json::to_string(&o).unwrap();
        let back: serde_json::Map<String, Json> = serde_json::from_str(&text).unwrap();
        assert_eq!(back.len(), documented_keys().len());
    }

    #[test]
    fn peaks_by_hand() {
        let mk = |sent: u64, fin: u64, chunks: Vec<(u64, u32)>| WireRecord {
            sent_at_us: Some(sent),
            finished_at_us: fin,
            chunks,
            ..serde_json::from_str(fixture::REQUESTS.lines().next().unwrap()).unwrap()
        };
        let a = mk(
            0,
            2_000_000,
            vec![(500_000, 1), (900_000, 2), (1_500_000, 1)],
        );
        let b = mk(1_000_000, 3_000_000, vec![(1_200_000, 4)]);
        let c = mk(2_000_000, 2_500_000, vec![(2_100_000, 1)]);
        let reqs: Vec<Req> = [&a, &b, &c]
            .iter()
            .map(|w| measured(std::slice::from_ref(*w)).remove(0))
            .collect();
        let refs: Vec<&Req> = reqs.iter().collect();
        // Second 0: 3 tokens; second 1: 5; second 2: 1. a ends at 2 s as c starts: at most
        // two in flight (a and b, then b and c).
        assert_eq!(peaks(&refs), (5.0, 2));
    }
}
