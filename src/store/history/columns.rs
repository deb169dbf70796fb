//! The columns of the `runs` table and how a run.json fills them: numbers, text,
//! flags and the command line read by JSON pointer, the load in words, and the
//! `workload_key` (see the module documentation of `history`).

use rusqlite::types::Value as Sql;
use serde_json::Value as Json;

use crate::artifacts::fingerprint;

/// The columns of `runs` filled from the files, in table order. Anything a
/// folder does not provide is written as NULL, so a re-index never leaves a
/// stale value behind.
pub(super) const DATA_COLUMNS: [&str; 40] = [
    "test_name",
    "schema_version",
    "started_at",
    "started_at_us",
    "finished_at_us",
    "interrupted",
    "command_line",
    "target",
    "endpoint",
    "model",
    "engine",
    "engine_version",
    "workload",
    "workload_key",
    "seed",
    "load",
    "limit_requests",
    "limit_duration_s",
    "hardware",
    "gpus",
    "hostname",
    "requests_total",
    "completed",
    "failed",
    "duration_s",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "itl_p99_ms",
    "e2e_p50_ms",
    "e2e_p99_ms",
    "output_tokens_per_s",
    "requests_per_s",
    "success_rate",
    "slo",
    "goodput_requests_per_s",
    "exit_status",
    "verdict",
    "indexed_at",
];

/// What a test row copies from its levels when they all agree, so that
/// filtering by model or target finds the test as well as its runs.
pub(super) const INHERITED: [&str; 11] = [
    "target",
    "endpoint",
    "model",
    "engine",
    "engine_version",
    "workload",
    "workload_key",
    "seed",
    "hardware",
    "gpus",
    "hostname",
];

/// Column values read from one file, by column name.
pub(super) type Fields = Vec<(&'static str, Sql)>;

pub(super) fn get<'a>(fields: &'a Fields, column: &str) -> &'a Sql {
    fields
        .iter()
        .find(|(c, _)| *c == column)
        .map_or(&Sql::Null, |(_, v)| v)
}

pub(super) fn run_fields(doc: &Json) -> Fields {
    let seed = doc.pointer("/config/seed").and_then(Json::as_u64);
    vec![
        ("schema_version", int(doc, "/schema_version").into()),
        ("started_at", text(doc, "/started_at").into()),
        ("started_at_us", int(doc, "/started_at_us").into()),
        ("finished_at_us", int(doc, "/finished_at_us").into()),
        ("interrupted", flag(doc, "/interrupted").into()),
        ("command_line", command_line(doc).into()),
        ("target", text(doc, "/config/target/url").into()),
        ("endpoint", text(doc, "/config/target/endpoint").into()),
        ("model", text(doc, "/config/target/model").into()),
        ("engine", text(doc, "/server/engine").into()),
        ("engine_version", text(doc, "/server/version").into()),
        ("workload", text(doc, "/config/workload/name").into()),
        ("workload_key", workload_key(doc).into()),
        ("seed", seed.map(|s| s.to_string()).into()),
        (
            "load",
            doc.pointer("/config/load").and_then(load_text).into(),
        ),
        ("limit_requests", int(doc, "/config/limits/requests").into()),
        (
            "limit_duration_s",
            real(doc, "/config/limits/duration").into(),
        ),
        ("hardware", json_text(doc, "/system/hardware").into()),
        ("gpus", json_text(doc, "/system/gpus").into()),
        ("hostname", text(doc, "/host/hostname").into()),
        ("requests_total", int(doc, "/summary/requests/total").into()),
        ("completed", int(doc, "/summary/requests/completed").into()),
        ("failed", int(doc, "/summary/requests/failed").into()),
        ("duration_s", real(doc, "/summary/window/duration_s").into()),
        ("ttft_p50_ms", real(doc, "/summary/ttft_ms/p50").into()),
        ("ttft_p99_ms", real(doc, "/summary/ttft_ms/p99").into()),
        ("tpot_p50_ms", real(doc, "/summary/tpot_ms/p50").into()),
        ("tpot_p99_ms", real(doc, "/summary/tpot_ms/p99").into()),
        ("itl_p99_ms", real(doc, "/summary/itl_ms/p99").into()),
        ("e2e_p50_ms", real(doc, "/summary/e2e_ms/p50").into()),
        ("e2e_p99_ms", real(doc, "/summary/e2e_ms/p99").into()),
        (
            "output_tokens_per_s",
            real(doc, "/summary/output_tokens_per_s").into(),
        ),
        (
            "requests_per_s",
            real(doc, "/summary/requests_per_s").into(),
        ),
        ("success_rate", real(doc, "/summary/success_rate").into()),
        ("slo", text(doc, "/summary/slo/spec").into()),
        (
            "goodput_requests_per_s",
            real(doc, "/summary/slo/per_request/goodput_requests_per_s").into(),
        ),
        ("exit_status", int(doc, "/verdict/exit_status").into()),
    ]
}

pub(super) fn text(doc: &Json, pointer: &str) -> Option<String> {
    doc.pointer(pointer)?.as_str().map(str::to_owned)
}

/// An integer, also accepting a float with no fractional part (some writers
/// emit `200.0`), as long as it is exactly representable.
pub(super) fn int(doc: &Json, pointer: &str) -> Option<i64> {
    let value = doc.pointer(pointer)?;
    value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

fn real(doc: &Json, pointer: &str) -> Option<f64> {
    doc.pointer(pointer)?.as_f64().filter(|f| f.is_finite())
}

pub(super) fn flag(doc: &Json, pointer: &str) -> Option<bool> {
    doc.pointer(pointer)?.as_bool()
}

/// A string as itself; an object or array as compact JSON; null as NULL.
fn json_text(doc: &Json, pointer: &str) -> Option<String> {
    match doc.pointer(pointer)? {
        Json::Null => None,
        Json::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// `/command_line` as a JSON array of strings (other elements as their JSON).
pub(super) fn command_line(doc: &Json) -> Option<String> {
    let args: Vec<String> = doc
        .pointer("/command_line")?
        .as_array()?
        .iter()
        .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
        .collect();
    serde_json::to_string(&args).ok()
}

/// `/config/load` in words: `closed c=64`, `open 12.5 req/s poisson`,
/// `open 8 req/s gamma cv=2`, `trace speed=1`. Unknown shapes are kept as
/// compact JSON rather than dropped.
pub(super) fn load_text(load: &Json) -> Option<String> {
    let num = |key: &str| load.get(key).and_then(Json::as_f64);
    let text = match load.get("model").and_then(Json::as_str) {
        Some("closed") => match num("concurrency") {
            Some(c) => format!("closed c={c}"),
            None => "closed".to_owned(),
        },
        Some("open") => {
            let mut text = match num("rate_per_s") {
                Some(rate) => format!("open {rate} req/s"),
                None => "open".to_owned(),
            };
            let arrival = load.get("arrival");
            if let Some(kind) = arrival.and_then(|a| a.get("kind")).and_then(Json::as_str) {
                text.push(' ');
                text.push_str(kind);
            }
            if let Some(cv) = arrival.and_then(|a| a.get("cv")).and_then(Json::as_f64) {
                text.push_str(&format!(" cv={cv}"));
            }
            text
        }
        Some("trace") => match num("speed") {
            Some(speed) => format!("trace speed={speed}"),
            None => "trace".to_owned(),
        },
        _ if load.is_null() => return None,
        _ => load.to_string(),
    };
    Some(text)
}

/// The `workload_key` of a parsed run.json (see the module documentation),
/// or `None` when `/config/workload` or `/config/seed` is missing or null.
pub fn workload_key(run_json: &Json) -> Option<String> {
    let present = |pointer: &str| run_json.pointer(pointer).filter(|v| !v.is_null());
    Some(fingerprint::workload_key(
        present("/config/workload")?,
        present("/config/dataset_info"),
        present("/config/seed")?,
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value as Json};

    use super::super::tests::{sample, set};
    use super::{load_text, workload_key};

    #[test]
    fn workload_key_ignores_key_order_and_depends_on_seed() {
        let doc = sample();
        let key = workload_key(&doc).unwrap();
        // The real sample's key, also computed independently in Python.
        assert_eq!(key, "71b978d9ff9a86c6");
        assert_eq!(key.len(), 16);
        assert!(key
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        // The same workload written with its keys (and nested keys) reversed.
        let text = r#"{"config": {"seed": 42, "workload": {"system_prompt": null, "sessions": null,
        "question_tokens": 100, "prefix_groups": null, "output": {"min": 64, "max": 256,
        "dist": "uniform"}, "name": "synthetic-uniform", "input": {"min": 128, "max": 512,
        "dist": "uniform"}, "description": "draft A.1: random tokens, input Uniform(128, 512), output Uniform(64, 256), no prefix sharing",
        "content": "random", "classes": [], "body": {}}}}"#;
        let reordered: Json = serde_json::from_str(text).unwrap();
        assert_eq!(workload_key(&reordered), Some(key.clone()));
        let mut other_seed = doc.clone();
        set(&mut other_seed, "/config/seed", json!(43));
        assert_ne!(workload_key(&other_seed), Some(key.clone()));
        let mut other_workload = doc.clone();
        set(
            &mut other_workload,
            "/config/workload/input/max",
            json!(1024),
        );
        assert_ne!(workload_key(&other_workload), Some(key));
        assert_eq!(workload_key(&json!({"config": {"seed": 1}})), None);
        // Pinned, so that a change to the definition shows up here.
        let tiny = json!({"config": {"seed": 1, "workload": {"b": 2, "a": 1}}});
        assert_eq!(
            workload_key(&tiny).unwrap(),
            format!("{:016x}", fnv(br#"{"seed":1,"workload":{"a":1,"b":2}}"#))
        );
    }

    /// An independent FNV-1a 64 for the pinned key above.
    fn fnv(bytes: &[u8]) -> u64 {
        let mut hash: u64 = 14695981039346656037;
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(1099511628211);
        }
        hash
    }

    #[test]
    fn load_is_described_in_words() {
        let text = |v: Json| load_text(&v);
        assert_eq!(
            text(json!({"model": "closed", "concurrency": 64})).unwrap(),
            "closed c=64"
        );
        let open = json!({"model": "open", "rate_per_s": 12.5, "arrival": {"kind": "poisson"}});
        assert_eq!(text(open).unwrap(), "open 12.5 req/s poisson");
        let gamma =
            json!({"model": "open", "rate_per_s": 8.0, "arrival": {"kind": "gamma", "cv": 2.5}});
        assert_eq!(text(gamma).unwrap(), "open 8 req/s gamma cv=2.5");
        assert_eq!(
            text(json!({"model": "trace", "speed": 2.0})).unwrap(),
            "trace speed=2"
        );
        assert_eq!(text(json!({"model": "open"})).unwrap(), "open");
        assert_eq!(
            text(json!({"model": "warp"})).unwrap(),
            r#"{"model":"warp"}"#
        );
        assert_eq!(text(Json::Null), None);
    }
}
