//! `run.json`: the machine-readable record of a run.

use super::{RunReport, SCHEMA_VERSION};
use crate::clock::iso8601_ms;
use crate::config::RunConfig;
use serde_json::{json, Value};

/// Host facts recorded with every run.
pub fn host_info() -> Value {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    json!({
        "hostname": hostname,
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "cpu_model": cpu_model,
    })
}

/// The whole `run.json` document.
pub fn run_json(report: &RunReport, config: &RunConfig) -> Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "servebench", "version": env!("CARGO_PKG_VERSION")},
        "started_at": iso8601_ms(report.started_unix_us),
        "finished_at": iso8601_ms(report.finished_unix_us),
        "started_at_us": report.started_unix_us,
        "finished_at_us": report.finished_unix_us,
        "interrupted": report.interrupted,
        "host": host_info(),
        "config": config,
        "tokenizer": report.tokenizer,
        "warmup": report.warmup,
        "timing": {
            "clock": "monotonic, anchored once to the wall clock; times are Unix-epoch microseconds",
            "resolution_us": 1,
            "arrival": "taken when the bytes completing an SSE event were read, before JSON parsing",
            "ttft": "first content event (non-blank text) minus sent_at; role-only, empty and usage-only events never count",
            "percentiles": "linear interpolation between closest ranks (type 7)",
        },
        "summary": report.summary,
        "generator": report.generator,
    })
}
