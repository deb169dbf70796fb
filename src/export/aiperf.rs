//! AIPerf's profile exports (ai-dynamo/aiperf, JSON export schema 1.5): the summary
//! `profile_export_aiperf.json` and the per-request `profile_export.jsonl`, so dashboards
//! built on AIPerf read a servebench run.
//!
//! The summary has the documented top-level fields (`schema_version` … `error_summary`,
//! `runtime_submission_invalid_reasons`; `telemetry_data` and `warmup_metrics` are
//! optional and left out) and one block per metric tag: record metrics with `unit`, `avg`,
//! `min`, `max`, `p1` … `p99`, `std` (sample), `count`, `sum` over successful requests;
//! derived and aggregate metrics with `unit` and `avg` only. AIPerf's definitions are
//! followed: request latency to the end of the stream, `inter_token_latency` =
//! (latency − TTFT) / (OSL − 1), `inter_chunk_latency` = gaps between answer chunks,
//! `output_token_throughput_per_user` = 1000 / inter_token_latency, OSL counting reasoning
//! tokens and `output_token_count` only answer tokens. `aiperf_version` says
//! `servebench-<version>`: the file was not made by AIPerf, and says so. Pure.

use super::{measured, num, Ordered, Req, Stats};
use crate::artifacts::RunReport;
use crate::client::Endpoint;
use crate::record::wire::{WireOutcome, WireRecord};
use crate::record::Phase;
use crate::schedule::LoadPattern;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// The schema version of `profile_export_aiperf.json` this export follows.
pub const SCHEMA_VERSION: &str = "1.5";

/// The statistics of a record metric, in AIPerf's order.
pub const STAT_KEYS: [&str; 15] = [
    "avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std",
    "count", "sum",
];

/// Record metrics (a value per request), with their units.
pub const RECORD_METRICS: [(&str, &str); 9] = [
    ("request_latency", "ms"),
    ("time_to_first_token", "ms"),
    ("time_to_second_token", "ms"),
    ("inter_token_latency", "ms"),
    ("inter_chunk_latency", "ms"),
    ("output_token_throughput_per_user", "tokens/sec/user"),
    ("input_sequence_length", "tokens"),
    ("output_sequence_length", "tokens"),
    ("output_token_count", "tokens"),
];

/// Derived and aggregate metrics (one value per run), with their units.
pub const RUN_METRICS: [(&str, &str); 6] = [
    ("request_throughput", "requests/sec"),
    ("output_token_throughput", "tokens/sec"),
    ("total_token_throughput", "tokens/sec"),
    ("benchmark_duration", "sec"),
    ("request_count", "requests"),
    ("error_request_count", "requests"),
];

/// A request's record-metric values (`inter_chunk_latency` is a list).
fn record_values(r: &Req) -> Vec<(&'static str, Json)> {
    let w = r.wire;
    let ms = |s: f64| num(s * 1000.0);
    let mut v = Vec::new();
    if let Some(l) = r.latency_s {
        v.push(("request_latency", ms(l)));
    }
    if let Some(t) = r.ttft_s {
        v.push(("time_to_first_token", ms(t)));
    }
    if let Some(g) = r.chunk_gaps_s.first() {
        v.push(("time_to_second_token", ms(*g)));
    }
    if !r.chunk_gaps_s.is_empty() {
        v.push((
            "inter_chunk_latency",
            Json::Array(r.chunk_gaps_s.iter().map(|g| ms(*g)).collect()),
        ));
    }
    if let Some(itl) = itl_s(r) {
        v.push(("inter_token_latency", ms(itl)));
        if itl > 0.0 {
            v.push(("output_token_throughput_per_user", num(1.0 / itl)));
        }
    }
    v.push(("input_sequence_length", Json::from(r.input_tokens)));
    v.push(("output_sequence_length", Json::from(w.output_tokens)));
    v.push((
        "output_token_count",
        Json::from(w.output_tokens.saturating_sub(w.reasoning_tokens)),
    ));
    v
}

/// (latency − TTFT) / (OSL − 1), seconds; OSL of at least 2.
fn itl_s(r: &Req) -> Option<f64> {
    let n = r.wire.output_tokens;
    if n > 1 {
        Some((r.latency_s? - r.ttft_s?) / f64::from(n - 1))
    } else {
        None
    }
}

fn unit_of(tag: &str) -> &'static str {
    RECORD_METRICS
        .iter()
        .chain(&RUN_METRICS)
        .find(|(t, _)| *t == tag)
        .map_or("", |(_, u)| u)
}

/// A record metric's block.
fn record_block(unit: &str, s: &Stats) -> Ordered {
    let mut b = Ordered::default();
    b.push("unit", unit);
    b.push("avg", num(s.mean()));
    b.push("min", num(s.min()));
    b.push("max", num(s.max()));
    for p in [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0] {
        b.push(format!("p{}", p as u32), num(s.percentile(p)));
    }
    b.push("std", num(s.std_sample()));
    b.push("count", s.count() as u64);
    b.push("sum", num(s.sum()));
    b
}

/// A derived or aggregate metric's block: its unit and its one value.
fn run_block(unit: &str, value: f64) -> Ordered {
    let mut b = Ordered::default();
    b.push("unit", unit);
    b.push("avg", num(value));
    b
}

/// ISO 8601 without a zone, to the microsecond (UTC), as AIPerf writes its times.
fn iso_us(unix_us: u64) -> String {
    let ms = crate::clock::iso8601_ms(unix_us); // 2026-11-22T01:02:03.456Z
    format!("{}{:03}", &ms[..23], unix_us % 1000)
}

fn benchmark_id(report: &RunReport) -> String {
    format!("servebench-{}", report.started_at_us)
}

/// `profile_export_aiperf.json` of a run.
pub fn summary(report: &RunReport, records: &[WireRecord]) -> Ordered {
    let reqs = measured(records);
    let ok: Vec<&Req> = reqs.iter().filter(|r| r.ok).collect();
    let mut o = Ordered::default();
    o.push("schema_version", SCHEMA_VERSION);
    o.push(
        "aiperf_version",
        format!("servebench-{}", report.tool.version),
    );
    o.push("benchmark_id", benchmark_id(report));
    o.push("start_time", iso_us(report.started_at_us));
    o.push("end_time", iso_us(report.finished_at_us));
    o.push("was_cancelled", report.interrupted);
    let command = report.command_line.join(" ");
    o.push("input_config", input_config(report, &command));
    o.push("run_info", run_info(report, &command));
    o.push("error_summary", error_summary(&reqs));
    o.push(
        "runtime_submission_invalid_reasons",
        Json::Array(Vec::new()),
    );
    push_record_metrics(&mut o, &ok);
    push_run_metrics(&mut o, report, &reqs, &ok);
    o
}

/// `input_config`: the endpoint, the load as AIPerf's `loadgen` options, the tokenizer.
fn input_config(report: &RunReport, command: &str) -> Json {
    let c = &report.config;
    json!({
        "endpoint": {
            "model_names": [c.target.model],
            "type": aiperf_endpoint_type(c.target.endpoint),
            "url": c.target.url.to_string(),
            "streaming": true,
        },
        "loadgen": loadgen(report),
        "tokenizer": {"name": report.tokenizer.name},
        "cli_command": command,
    })
}

/// The run's load and limits as AIPerf's `loadgen` options.
fn loadgen(report: &RunReport) -> serde_json::Map<String, Json> {
    let c = &report.config;
    let mut loadgen = serde_json::Map::new();
    match c.load {
        LoadPattern::Closed { concurrency } => {
            loadgen.insert("concurrency".into(), json!(concurrency));
        }
        LoadPattern::Open { rate_per_s, .. } => {
            loadgen.insert("request_rate".into(), num(rate_per_s));
            if let Some(m) = c.max_concurrency {
                loadgen.insert("concurrency".into(), json!(m));
            }
        }
        LoadPattern::Trace { .. } => {}
    }
    if let Some(n) = c.limits.requests {
        loadgen.insert("request_count".into(), json!(n));
    }
    if let Some(d) = c.limits.duration {
        loadgen.insert("benchmark_duration".into(), num(d.as_secs_f64()));
    }
    loadgen
}

/// `run_info`: one trial of the base variation, with the run's seed and folder name.
fn run_info(report: &RunReport, command: &str) -> Json {
    let c = &report.config;
    json!({
        "benchmark_id": benchmark_id(report),
        "sweep_id": null,
        "random_seed": c.seed,
        "trial": 0,
        "run_label": c.out_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        "variation_label": "base",
        "variation_index": 0,
        "variation_values": {},
        "cli_command": command,
    })
}

/// One block per record metric, over the successful requests.
fn push_record_metrics(o: &mut Ordered, ok: &[&Req]) {
    let mut samples: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in ok {
        for (tag, v) in record_values(r) {
            let entry = samples.entry(tag).or_default();
            match v {
                Json::Array(items) => entry.extend(items.iter().filter_map(Json::as_f64)),
                other => entry.extend(other.as_f64()),
            }
        }
    }
    for (tag, unit) in RECORD_METRICS {
        if let Some(values) = samples.get(tag) {
            o.push_object(tag, record_block(unit, &Stats::of(values.iter().copied())));
        }
    }
}

/// One block per derived or aggregate metric: throughputs, duration and request counts.
fn push_run_metrics(o: &mut Ordered, report: &RunReport, reqs: &[Req], ok: &[&Req]) {
    let duration = report.summary.window.duration_s;
    let isl: u64 = ok.iter().map(|r| r.input_tokens).sum();
    let osl: u64 = ok.iter().map(|r| u64::from(r.wire.output_tokens)).sum();
    let rate = |n: f64| {
        if duration > 0.0 {
            n / duration
        } else {
            f64::NAN
        }
    };
    let values = [
        rate(ok.len() as f64),
        rate(osl as f64),
        rate((isl + osl) as f64),
        duration,
        ok.len() as f64,
        (reqs.len() - ok.len()) as f64,
    ];
    for ((tag, unit), v) in RUN_METRICS.iter().zip(values) {
        o.push_object(*tag, run_block(unit, v));
    }
}

/// Failed requests grouped by (code, type, message), most frequent first.
fn error_summary(reqs: &[Req]) -> Json {
    let mut counts: BTreeMap<(Option<u16>, String, String), u64> = BTreeMap::new();
    for r in reqs {
        if let WireOutcome::Failed { kind, detail } = &r.wire.outcome {
            *counts
                .entry((r.wire.http_status, kind_name(kind), detail.clone()))
                .or_default() += 1;
        }
    }
    let mut list: Vec<_> = counts.into_iter().collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Json::Array(
        list.into_iter()
            .map(|((code, kind, message), count)| {
                json!({"error_details": {"code": code, "type": kind, "message": message}, "count": count})
            })
            .collect(),
    )
}

fn kind_name(kind: &crate::record::FailureKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `profile_export.jsonl`: one line per measured and warm-up request.
pub fn records_jsonl(records: &[WireRecord]) -> String {
    let mut out = String::new();
    let mut session = 0u64;
    for w in records {
        let phase = match w.phase {
            Phase::Measure => "profiling",
            Phase::Warmup => "warmup",
            _ => continue,
        };
        // `measured` reads measured records; a warm-up one is read the same way.
        let as_measured = WireRecord {
            phase: Phase::Measure,
            ..w.clone()
        };
        let r = measured(std::slice::from_ref(&as_measured)).remove(0);
        let id = w
            .response_id
            .clone()
            .unwrap_or_else(|| format!("request-{}", w.id));
        let cancelled = matches!(
            w.outcome,
            WireOutcome::Failed {
                kind: crate::record::FailureKind::Cancelled,
                ..
            }
        );
        let ns = |us: u64| Json::from(us.saturating_mul(1000));
        let mut metadata = Ordered::default();
        metadata.push("session_num", session);
        metadata.push("x_request_id", id.clone());
        metadata.push("x_correlation_id", id.clone());
        metadata.push(
            "conversation_id",
            w.session.map_or(id.clone(), |s| format!("session-{s}")),
        );
        metadata.push("turn_index", w.turn.unwrap_or(0));
        metadata.push(
            "request_start_ns",
            w.sent_at_us.map_or(ns(w.queued_at_us), ns),
        );
        metadata.push("request_ack_ns", w.first_byte_at_us.map_or(Json::Null, ns));
        metadata.push("request_end_ns", ns(w.finished_at_us));
        metadata.push("worker_id", "servebench");
        metadata.push("record_processor_id", "servebench");
        metadata.push("benchmark_phase", phase);
        metadata.push("was_cancelled", cancelled);
        metadata.push(
            "cancellation_time_ns",
            if cancelled {
                ns(w.finished_at_us)
            } else {
                Json::Null
            },
        );
        session += 1;
        let mut metrics = Ordered::default();
        let error = match &w.outcome {
            WireOutcome::Ok(_) => {
                for (tag, v) in record_values(&r) {
                    metrics.push(tag, json!({"value": v, "unit": unit_of(tag)}));
                }
                Json::Null
            }
            WireOutcome::Failed { kind, detail } => {
                metrics.push(
                    "error_request_count",
                    json!({"value": 1, "unit": "requests"}),
                );
                json!({"code": w.http_status, "type": kind_name(kind), "message": detail})
            }
        };
        let mut line = Ordered::default();
        line.push_object("metadata", metadata);
        line.push_object("metrics", metrics);
        line.push("error", error);
        out.push_str(&serde_json::to_string(&line).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// AIPerf's `--endpoint-type` for an endpoint: its own name where AIPerf has one, else
/// `template` (AIPerf's generic request template), which is what a user would have run.
fn aiperf_endpoint_type(e: Endpoint) -> &'static str {
    match e {
        Endpoint::Chat => "chat",
        Endpoint::Completions => "completions",
        Endpoint::Responses => "responses",
        Endpoint::Tgi => "huggingface_generate",
        Endpoint::Embeddings => "embeddings",
        Endpoint::Rerank => "rankings",
        Endpoint::Messages
        | Endpoint::Llamacpp
        | Endpoint::Sglang
        | Endpoint::Websocket
        | Endpoint::Grpc => "template",
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    /// Top-level fields of `profile_export_aiperf.json`, as shared/SERVER-FORMATS.md lists
    /// them (optional `telemetry_data` and `warmup_metrics` left out).
    const TOP: [&str; 10] = [
        "schema_version",
        "aiperf_version",
        "benchmark_id",
        "start_time",
        "end_time",
        "was_cancelled",
        "input_config",
        "run_info",
        "error_summary",
        "runtime_submission_invalid_reasons",
    ];

    #[test]
    fn summary_has_the_documented_fields_and_blocks() {
        let report = fixture::report();
        let records = fixture::records();
        let ordered = summary(&report, &records);
        let keys = ordered.keys();
        assert_eq!(keys[..TOP.len()], TOP);
        let o = ordered.to_json();
        assert_eq!(o["schema_version"], "1.5");
        let run_info = &o["run_info"];
        for k in [
            "benchmark_id",
            "sweep_id",
            "random_seed",
            "trial",
            "run_label",
            "variation_label",
            "variation_index",
            "variation_values",
            "cli_command",
        ] {
            assert!(run_info.get(k).is_some(), "run_info.{k}");
        }
        assert_eq!(run_info["random_seed"], 7);
        // The metric tags SERVER-FORMATS.md names, each once.
        for tag in [
            "request_latency",
            "time_to_first_token",
            "time_to_second_token",
            "inter_token_latency",
            "inter_chunk_latency",
            "output_token_throughput_per_user",
            "input_sequence_length",
            "output_sequence_length",
            "output_token_count",
            "request_throughput",
            "output_token_throughput",
            "total_token_throughput",
            "request_count",
            "error_request_count",
            "benchmark_duration",
        ] {
            let block = o.get(tag).unwrap_or_else(|| panic!("no {tag}"));
            assert_eq!(keys.iter().filter(|k| **k == tag).count(), 1, "{tag}");
            assert_metric_block(tag, block);
        }
        // Blocks keep AIPerf's key order: unit first, then the statistics.
        let text = serde_json::to_string(&ordered).unwrap();
        assert!(
            text.contains(r#""time_to_first_token":{"unit":"ms","avg":"#),
            "{text}"
        );
    }

    /// A metric's block: a unit, then every statistic for a record metric, the average
    /// alone for a derived or aggregate one.
    fn assert_metric_block(tag: &str, block: &Json) {
        assert!(block["unit"].is_string(), "{tag}");
        if RECORD_METRICS.iter().any(|(t, _)| *t == tag) {
            let mut got: Vec<&str> = block
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            got.sort();
            let mut want: Vec<&str> = STAT_KEYS.to_vec();
            want.push("unit");
            want.sort();
            assert_eq!(got, want, "{tag}");
        } else {
            assert_eq!(
                block.as_object().unwrap().len(),
                2,
                "{tag}: unit and avg only"
            );
        }
    }

    #[test]
    fn summary_figures_follow_aiperfs_definitions() {
        let report = fixture::report();
        let records = fixture::records();
        let o = summary(&report, &records).to_json();
        let ok: Vec<&WireRecord> = records
            .iter()
            .filter(|w| matches!(w.outcome, WireOutcome::Ok(_)))
            .collect();
        let avg = |tag: &str| o[tag]["avg"].as_f64().unwrap();
        assert_eq!(avg("request_count") as usize, ok.len());
        assert_eq!(
            avg("error_request_count") as usize,
            records.len() - ok.len()
        );
        assert_eq!(avg("benchmark_duration"), report.summary.window.duration_s);
        // TTFT by hand over the successful requests.
        let ttft = Stats::of(ok.iter().map(|w| {
            (w.first_token_at_us.unwrap() - w.submitted_at_us().unwrap()) as f64 / 1000.0
        }));
        let t = &o["time_to_first_token"];
        assert!((t["avg"].as_f64().unwrap() - ttft.mean()).abs() < 1e-9);
        assert!((t["p90"].as_f64().unwrap() - ttft.percentile(90.0)).abs() < 1e-9);
        assert_eq!(t["count"].as_u64().unwrap() as usize, ok.len());
        assert_eq!(t["unit"], "ms");
        assert_eq!(
            o["output_token_throughput_per_user"]["unit"],
            "tokens/sec/user"
        );
        // The failures are summarised with AIPerf's error shape.
        let errors = o["error_summary"].as_array().unwrap();
        let total: u64 = errors.iter().map(|e| e["count"].as_u64().unwrap()).sum();
        assert_eq!(total as usize, records.len() - ok.len());
        for e in errors {
            let d = &e["error_details"];
            assert!(d.get("code").is_some() && d["type"].is_string() && d["message"].is_string());
        }
        assert!(errors.iter().any(|e| e["error_details"]["code"] == 500));
        assert_eq!(o["start_time"].as_str().unwrap().len(), 26);
    }

    #[test]
    fn jsonl_records_have_the_documented_shape() {
        let records = fixture::records();
        let text = records_jsonl(&records);
        let lines: Vec<Json> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), records.len());
        for (i, (l, w)) in lines.iter().zip(&records).enumerate() {
            let m = &l["metadata"];
            for k in [
                "session_num",
                "x_request_id",
                "x_correlation_id",
                "conversation_id",
                "turn_index",
                "request_start_ns",
                "request_ack_ns",
                "request_end_ns",
                "worker_id",
                "record_processor_id",
                "benchmark_phase",
                "was_cancelled",
                "cancellation_time_ns",
            ] {
                assert!(m.get(k).is_some(), "metadata.{k}");
            }
            assert_eq!(m["session_num"], i);
            assert_eq!(m["benchmark_phase"], "profiling");
            assert_eq!(m["request_end_ns"], w.finished_at_us * 1000);
            match &w.outcome {
                WireOutcome::Ok(_) => {
                    assert!(l["error"].is_null());
                    let ttft = &l["metrics"]["time_to_first_token"];
                    assert_eq!(ttft["unit"], "ms");
                    let want = (w.first_token_at_us.unwrap() - w.submitted_at_us().unwrap()) as f64
                        / 1000.0;
                    assert!((ttft["value"].as_f64().unwrap() - want).abs() < 1e-9);
                    assert!(l["metrics"]["inter_chunk_latency"]["value"].is_array());
                    assert_eq!(
                        l["metrics"]["output_sequence_length"]["value"],
                        w.output_tokens
                    );
                }
                WireOutcome::Failed { detail, .. } => {
                    assert_eq!(l["metrics"]["error_request_count"]["value"], 1);
                    assert_eq!(l["error"]["message"], detail.as_str());
                    assert!(l["error"]["type"].is_string());
                }
            }
        }
    }
}
