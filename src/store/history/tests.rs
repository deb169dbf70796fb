//! Tests of the run history against run and test folders built in a temporary
//! directory from a trimmed copy of a real `run.json`.
//!
//! This file holds the fixtures; the tests are grouped by subject in
//! `tests/database.rs` (opening, labels and notes), `tests/runs.rs` (run
//! folders), `tests/test_folders.rs` (test folders and their levels) and
//! `tests/typed.rs` (a whole run.json written from the real types fills every
//! column).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value as Json};

use super::{History, RunRow};

mod database;
mod runs;
mod test_folders;
mod typed;

/// The fields the index reads from a real run.json (servebench 0.1.0,
/// simulator run), plus some it ignores.
const SAMPLE_RUN_JSON: &str = r#"{
 "schema_version": 2,
 "started_at": "2026-11-22T21:16:39.462Z", "started_at_us": 1795382199462657,
 "finished_at": "2026-11-22T21:16:40.674Z", "finished_at_us": 1795382200674316,
 "interrupted": false,
 "command_line": ["./target/release/servebench", "run", "--requests", "200", "--warmup", "none",
   "--sim-preset", "fast", "--quiet", "--out", "runs/sample", "--force"],
 "host": {"arch": "x86_64", "cpu_model": "AMD EPYC", "cpus": 2, "hostname": "vm", "os": "linux"},
 "server": {"context_tokens": 1073741824, "engine": "servebench-sim", "models": ["sim-fast"],
   "server_header": null, "version": "0.1.0"},
 "system": {"gpus": null, "hardware": null, "notes": [], "sut_boundary": "engine"},
 "verdict": {"exit_status": 0, "reasons": ["100.0 % of requests succeeded"]},
 "tool": {"name": "servebench", "version": "0.1.0"},
 "config": {
  "target": {"api_key": null, "builtin_simulator": true, "endpoint": "chat", "headers": {},
    "model": "sim-fast", "url": "http://127.0.0.1:36463/v1"},
  "workload": {"body": {}, "classes": [], "content": "random",
    "description": "draft A.1: random tokens, input Uniform(128, 512), output Uniform(64, 256), no prefix sharing",
    "input": {"dist": "uniform", "max": 512, "min": 128}, "name": "synthetic-uniform",
    "output": {"dist": "uniform", "max": 256, "min": 64}, "prefix_groups": null,
    "question_tokens": 100, "sessions": null, "system_prompt": null},
  "seed": 42,
  "load": {"concurrency": 64, "model": "closed"},
  "limits": {"duration": null, "requests": 200},
  "warmup": "none"
 },
 "summary": {
  "requests": {"completed": 200, "ended_early": 0, "failed": 0, "failed_by_kind": {},
    "never_sent": 0, "total": 200, "with_reasoning": 0},
  "window": {"duration_s": 0.856265761},
  "ttft_ms": {"p50": 11.374519, "p90": 39.9231968, "p99": 41.58921297, "n": 200},
  "tpot_ms": {"p50": 1.3144828407225329, "p90": 1.6799281034713671, "p99": 1.823151947200577},
  "itl_ms": {"p50": 0.0, "p90": 4.3367987999999995, "p99": 8.740478620000003, "n": 31783},
  "e2e_ms": {"p50": 230.807955, "p90": 346.0800974, "p99": 410.2957410099999, "n": 200},
  "output_tokens_per_s": 37351.721225718844,
  "requests_per_s": 233.5723429679445,
  "success_rate": 1.0
 }
}"#;

/// A temporary directory removed when the test ends.
pub(super) struct Scratch(pub(super) PathBuf);

impl Scratch {
    pub(super) fn new() -> Scratch {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("sb-history-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(fs::canonicalize(dir).unwrap())
    }

    pub(super) fn db(&self) -> History {
        History::open(&self.0.join("db/history.db")).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

pub(super) fn sample() -> Json {
    serde_json::from_str(SAMPLE_RUN_JSON).unwrap()
}

/// Sets `pointer` in `doc`, creating objects on the way.
pub(super) fn set(doc: &mut Json, pointer: &str, value: Json) {
    let mut node = doc;
    for key in pointer.trim_start_matches('/').split('/') {
        if !node.is_object() {
            *node = json!({});
        }
        node = node
            .as_object_mut()
            .unwrap()
            .entry(key.to_owned())
            .or_insert(Json::Null);
    }
    *node = value;
}

/// Writes `run.json` into `dir` (created) and returns the folder.
pub(super) fn write_run(dir: &Path, doc: &Json) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("run.json"), doc.to_string()).unwrap();
    dir.to_path_buf()
}

/// A sample run with a few fields changed.
pub(super) fn run_with(dir: &Path, edits: &[(&str, Json)]) -> PathBuf {
    let mut doc = sample();
    for (pointer, value) in edits {
        set(&mut doc, pointer, value.clone());
    }
    write_run(dir, &doc)
}

pub(super) fn ids(rows: &[RunRow]) -> Vec<i64> {
    rows.iter().map(|r| r.id).collect()
}

/// A test folder with one run folder per concurrency level.
pub(super) fn write_test(dir: &Path, levels: &[u32]) -> PathBuf {
    let mut entries = Vec::new();
    for (i, c) in levels.iter().enumerate() {
        let rel = format!("levels/c{c}");
        run_with(
            &dir.join(&rel),
            &[
                ("/config/load", json!({"model": "closed", "concurrency": c})),
                ("/started_at_us", json!(1795382199462657_i64 + i as i64)),
            ],
        );
        entries.push(json!({"concurrency": c, "run": rel}));
    }
    let test = json!({
        "schema_version": 1, "test": "max-throughput", "started_at": "2026-11-22T21:00:00.000Z",
        "parameters": {"ttft_p99_ms": 500}, "levels": entries,
        "result": {"max_concurrency": 64}, "compliance": {"verdict": "pass"}
    });
    fs::write(dir.join("test.json"), test.to_string()).unwrap();
    dir.to_path_buf()
}
