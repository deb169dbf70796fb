//! The columns of the `runs` table and how a run.json or a test.json fills them:
//! numbers, text, flags and the command line read through the typed views of
//! `view.rs`, the load in words, and the `workload_key` (see the module
//! documentation of `history`).

use rusqlite::types::Value as Sql;
use serde_json::Value as Json;

use super::view::{
    ConfigView, DistributionView, Int, Lenient, LoadView, RequestsView, RunView, Section,
    ServerView, SummaryView, SystemView, TargetView, TestView, WorkloadView,
};
use crate::artifacts::fingerprint;

/// The columns of `runs` filled from the files, in table order. Anything a
/// folder does not provide is written as NULL, so a re-index never leaves a
/// stale value behind.
pub(super) const DATA_COLUMNS: [&str; 41] = [
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
    "answer",
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

/// The columns a `run.json` fills.
pub(super) fn run_fields(run: &RunView) -> Fields {
    let config = run.config.view();
    let target = |pick: fn(&TargetView) -> &Lenient<String>| {
        config
            .and_then(|c| c.target.view())
            .and_then(|t| pick(t).get())
    };
    let limits = config.and_then(|c| c.limits.view());
    let system = |pick: fn(&SystemView) -> &Lenient<Json>| {
        run.system.view().and_then(|s| json_text(pick(s)))
    };
    let seed = config.and_then(|c| c.seed.0.as_ref()?.as_u64());
    let mut fields = vec![
        ("schema_version", run.schema_version.int().into()),
        ("started_at", run.started_at.get().into()),
        ("started_at_us", run.started_at_us.int().into()),
        ("finished_at_us", run.finished_at_us.int().into()),
        ("interrupted", run.interrupted.get().into()),
        ("command_line", command_line(&run.command_line).into()),
        ("target", target(|t| &t.url).into()),
        ("endpoint", target(|t| &t.endpoint).into()),
        ("model", target(|t| &t.model).into()),
        ("engine", server(run, |s| &s.engine).into()),
        ("engine_version", server(run, |s| &s.version).into()),
        ("workload", config.and_then(workload_name).into()),
        ("workload_key", run_workload_key(run).into()),
        ("seed", seed.map(|s| s.to_string()).into()),
        (
            "load",
            config.and_then(|c| load_text(c.load.0.as_ref()?)).into(),
        ),
        (
            "limit_requests",
            limits.and_then(|l| l.requests.int()).into(),
        ),
        (
            "limit_duration_s",
            limits.and_then(|l| l.duration.real()).into(),
        ),
        ("hardware", system(|s| &s.hardware).into()),
        ("gpus", system(|s| &s.gpus).into()),
        (
            "hostname",
            run.host.view().and_then(|h| h.hostname.get()).into(),
        ),
        (
            "exit_status",
            run.verdict.view().and_then(|v| v.exit_status.int()).into(),
        ),
    ];
    if let Some(summary) = run.summary.view() {
        fields.extend(summary_fields(summary));
    }
    fields
}

fn server(run: &RunView, pick: fn(&ServerView) -> &Lenient<String>) -> Option<String> {
    run.server.view().and_then(|s| pick(s).get())
}

/// The columns `run.json`'s `summary` fills.
fn summary_fields(s: &SummaryView) -> Fields {
    let requests =
        |pick: fn(&RequestsView) -> &Lenient<Int>| s.requests.view().and_then(|r| pick(r).int());
    let dist = |d: &Section<DistributionView>, pick: fn(&DistributionView) -> &Lenient<f64>| {
        d.view().and_then(|d| pick(d).real())
    };
    let slo = s.slo.view();
    vec![
        ("requests_total", requests(|r| &r.total).into()),
        ("completed", requests(|r| &r.completed).into()),
        ("failed", requests(|r| &r.failed).into()),
        (
            "duration_s",
            s.window.view().and_then(|w| w.duration_s.real()).into(),
        ),
        ("ttft_p50_ms", dist(&s.ttft_ms, |d| &d.p50).into()),
        ("ttft_p99_ms", dist(&s.ttft_ms, |d| &d.p99).into()),
        ("tpot_p50_ms", dist(&s.tpot_ms, |d| &d.p50).into()),
        ("tpot_p99_ms", dist(&s.tpot_ms, |d| &d.p99).into()),
        ("itl_p99_ms", dist(&s.itl_ms, |d| &d.p99).into()),
        ("e2e_p50_ms", dist(&s.e2e_ms, |d| &d.p50).into()),
        ("e2e_p99_ms", dist(&s.e2e_ms, |d| &d.p99).into()),
        ("output_tokens_per_s", s.output_tokens_per_s.real().into()),
        ("requests_per_s", s.requests_per_s.real().into()),
        ("success_rate", s.success_rate.real().into()),
        ("slo", slo.and_then(|v| v.spec.get()).into()),
        (
            "goodput_requests_per_s",
            slo.and_then(|v| v.per_request.view())
                .and_then(|p| p.goodput_requests_per_s.real())
                .into(),
        ),
    ]
}

/// The columns a `test.json` fills itself (its levels add what they share).
pub(super) fn test_fields(test: &TestView) -> Fields {
    vec![
        ("test_name", test.test.get().into()),
        ("schema_version", test.schema_version.int().into()),
        ("started_at", test.started_at.get().into()),
        ("started_at_us", test.started_at_us.int().into()),
        ("finished_at_us", test.finished_at_us.int().into()),
        ("interrupted", test.interrupted.get().into()),
        ("command_line", command_line(&test.command_line).into()),
        ("exit_status", test.exit_status.int().into()),
        (
            "verdict",
            test.compliance.view().and_then(|c| c.verdict.get()).into(),
        ),
        ("answer", test.answer.get().into()),
    ]
}

/// `config.workload.name`.
fn workload_name(config: &ConfigView) -> Option<String> {
    Section::<WorkloadView>::of(config.workload.0.as_ref()?)
        .view()?
        .name
        .get()
}

/// A string as itself; an object or array as compact JSON; null as NULL.
fn json_text(value: &Lenient<Json>) -> Option<String> {
    match value.0.as_ref()? {
        Json::Null => None,
        Json::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// `command_line` as a JSON array of strings (other elements as their JSON).
fn command_line(args: &Lenient<Vec<Json>>) -> Option<String> {
    let args: Vec<String> = args
        .0
        .as_ref()?
        .iter()
        .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
        .collect();
    serde_json::to_string(&args).ok()
}

/// A rate or factor as people write it: four significant digits at most, no trailing
/// zeros (`0.228`, `12.5`, `8`), never the 17 digits of the float a run recorded.
fn figure(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return x.to_string();
    }
    let decimals = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let text = format!("{x:.decimals$}");
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_owned(),
        false => text,
    }
}

/// `config.load` in words: `closed c=64`, `open 12.5 req/s poisson`,
/// `open 8 req/s gamma cv=2`, `trace speed=1`. Unknown shapes are kept as
/// compact JSON rather than dropped.
pub(super) fn load_text(load: &Json) -> Option<String> {
    if load.is_null() {
        return None;
    }
    let unknown = || Some(load.to_string());
    let Some(view) = Section::<LoadView>::of(load).0 else {
        return unknown();
    };
    let text = match view.model.0.as_deref() {
        Some("closed") => match view.concurrency.get() {
            Some(c) => format!("closed c={c}"),
            None => "closed".to_owned(),
        },
        Some("open") => {
            let mut text = match view.rate_per_s.get() {
                Some(rate) => format!("open {} req/s", figure(rate)),
                None => "open".to_owned(),
            };
            let arrival = view.arrival.view();
            if let Some(kind) = arrival.and_then(|a| a.kind.get()) {
                text.push(' ');
                text.push_str(&kind);
            }
            if let Some(cv) = arrival.and_then(|a| a.cv.get()) {
                text.push_str(&format!(" cv={}", figure(cv)));
            }
            text
        }
        Some("trace") => match view.speed.get() {
            Some(speed) => format!("trace speed={speed}"),
            None => "trace".to_owned(),
        },
        _ => return unknown(),
    };
    Some(text)
}

/// The `workload_key` of a parsed run.json (see the module documentation),
/// or `None` when `config.workload` or `config.seed` is missing or null.
pub fn workload_key(run_json: &Json) -> Option<String> {
    run_workload_key(&RunView::read(run_json))
}

fn run_workload_key(run: &RunView) -> Option<String> {
    let config = run.config.view()?;
    Some(fingerprint::workload_key(
        present(&config.workload)?,
        present(&config.dataset_info),
        present(&config.seed)?,
    ))
}

/// A field's JSON, unless it is missing or null.
fn present(value: &Lenient<Json>) -> Option<&Json> {
    value.0.as_ref().filter(|v| !v.is_null())
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
        // Issue 36, item 9: a searched rate reads as a figure.
        let searched = json!({"model": "open", "rate_per_s": 0.22825782958819435, "arrival": {"kind": "poisson"}});
        assert_eq!(text(searched).unwrap(), "open 0.2283 req/s poisson");
        let fast = json!({"model": "open", "rate_per_s": 1234.5678});
        assert_eq!(text(fast).unwrap(), "open 1235 req/s");
        assert_eq!(
            text(json!({"model": "warp"})).unwrap(),
            r#"{"model":"warp"}"#
        );
        assert_eq!(text(Json::Null), None);
    }
}
