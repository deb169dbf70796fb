//! Tests of the run history against run and test folders built in a temporary
//! directory from a trimmed copy of a real `run.json`.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value as Json};

use super::{default_path_from, workload_key, Filter, History, HistoryError, Kind, RunRef, RunRow};

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

#[test]
fn open_creates_the_file_and_schema_and_reopens() {
    let tmp = Scratch::new();
    let path = tmp.0.join("a/b/history.db");
    drop(History::open(&path).unwrap());
    assert!(path.is_file());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 1);
    drop(conn);
    assert!(History::open(&path)
        .unwrap()
        .list(&Filter::default())
        .unwrap()
        .is_empty());
}

#[test]
fn open_refuses_a_newer_schema_and_a_non_database() {
    let tmp = Scratch::new();
    let path = tmp.0.join("history.db");
    drop(History::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE schema_version SET version = 7", [])
        .unwrap();
    drop(conn);
    let err = History::open(&path).err().unwrap();
    assert!(
        matches!(
            err,
            HistoryError::TooNew {
                found: 7,
                supported: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade servebench"));

    let junk = tmp.0.join("junk.db");
    fs::write(
        &junk,
        "this is not sqlite, just some text long enough to look like a header",
    )
    .unwrap();
    let err = History::open(&junk).err().unwrap();
    assert!(matches!(err, HistoryError::NotADatabase { .. }), "{err}");
}

#[test]
fn default_path_follows_xdg_data_home() {
    let path = default_path_from(Some("/data".into()), Some("/home/u".into()));
    assert_eq!(path, PathBuf::from("/data/servebench/history.db"));
    let path = default_path_from(None, Some("/home/u".into()));
    assert_eq!(
        path,
        PathBuf::from("/home/u/.local/share/servebench/history.db")
    );
    // A relative XDG_DATA_HOME is invalid per the spec and ignored.
    let path = default_path_from(Some("rel".into()), Some("/home/u".into()));
    assert_eq!(
        path,
        PathBuf::from("/home/u/.local/share/servebench/history.db")
    );
    assert!(History::default_path().ends_with("servebench/history.db"));
}

#[test]
fn indexing_twice_keeps_one_row() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let run = run_with(&tmp.0.join("runs/r1"), &[]);
    let first = db.index(&run).unwrap();
    // Another spelling of the same folder, and its run.json, are the same key.
    let second = db.index(&tmp.0.join("runs/./r1/../r1")).unwrap();
    let third = db.index(&run.join("run.json")).unwrap();
    assert_eq!((first.id, first.kind), (second.id, Kind::Run));
    assert_eq!(first.id, third.id);
    assert_eq!(db.list(&Filter::default()).unwrap().len(), 1);
}

#[test]
fn values_read_back_exactly() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let run = run_with(
        &tmp.0.join("runs/r1"),
        &[
            ("/system/hardware", json!("8x H100 SXM")),
            ("/system/gpus", json!([{"name": "H100", "memory_gib": 80}])),
            ("/config/limits/duration", json!(120.5)),
        ],
    );
    let id = db.index(&run).unwrap().id;
    let row = db.get(&RunRef::Id(id)).unwrap();
    assert_eq!(row.kind, Kind::Run);
    assert_eq!(row.path, run);
    assert_eq!(row.name, "r1");
    assert_eq!(row.parent_test, None);
    assert_eq!(row.test_name, None);
    assert_eq!(row.schema_version, Some(2));
    assert_eq!(row.started_at.as_deref(), Some("2026-11-22T21:16:39.462Z"));
    assert_eq!(row.started_at_us, Some(1795382199462657));
    assert_eq!(row.finished_at_us, Some(1795382200674316));
    assert_eq!(row.interrupted, Some(false));
    let cmd = row.command_line.as_ref().unwrap();
    assert_eq!(
        (cmd.len(), cmd[0].as_str(), cmd[11].as_str()),
        (12, "./target/release/servebench", "--force")
    );
    assert_eq!(row.target.as_deref(), Some("http://127.0.0.1:36463/v1"));
    assert_eq!(row.endpoint.as_deref(), Some("chat"));
    assert_eq!(row.model.as_deref(), Some("sim-fast"));
    assert_eq!(row.engine.as_deref(), Some("servebench-sim"));
    assert_eq!(row.engine_version.as_deref(), Some("0.1.0"));
    assert_eq!(row.workload.as_deref(), Some("synthetic-uniform"));
    assert_eq!(row.workload_key, workload_key(&sample()));
    assert_eq!(row.seed, Some(42));
    assert_eq!(row.load.as_deref(), Some("closed c=64"));
    assert_eq!(row.limit_requests, Some(200));
    assert_eq!(row.limit_duration_s, Some(120.5));
    assert_eq!(row.hardware.as_deref(), Some("8x H100 SXM"));
    assert_eq!(
        row.gpus.as_deref(),
        Some(r#"[{"memory_gib":80,"name":"H100"}]"#)
    );
    assert_eq!(row.hostname.as_deref(), Some("vm"));
    assert_eq!(
        (row.requests_total, row.completed, row.failed),
        (Some(200), Some(200), Some(0))
    );
    // Exactly what serde_json reads from run.json, checked against the
    // literals so that the test also shows the values are the sample's.
    let doc = sample();
    let float = |pointer: &str, literal: f64| {
        let read = doc.pointer(pointer).and_then(Json::as_f64).unwrap();
        // Default serde_json parsing may be one unit in the last place off.
        assert!((read - literal).abs() <= literal.abs() * 1e-15, "{pointer}");
        Some(read)
    };
    assert_eq!(
        row.duration_s,
        float("/summary/window/duration_s", 0.856265761)
    );
    assert_eq!(row.ttft_p50_ms, float("/summary/ttft_ms/p50", 11.374519));
    assert_eq!(row.ttft_p99_ms, float("/summary/ttft_ms/p99", 41.58921297));
    assert_eq!(
        row.tpot_p50_ms,
        float("/summary/tpot_ms/p50", 1.3144828407225329)
    );
    assert_eq!(
        row.tpot_p99_ms,
        float("/summary/tpot_ms/p99", 1.823151947200577)
    );
    assert_eq!(
        row.itl_p99_ms,
        float("/summary/itl_ms/p99", 8.740478620000003)
    );
    assert_eq!(row.e2e_p50_ms, float("/summary/e2e_ms/p50", 230.807955));
    assert_eq!(
        row.e2e_p99_ms,
        float("/summary/e2e_ms/p99", 410.2957410099999)
    );
    assert_eq!(
        row.output_tokens_per_s,
        float("/summary/output_tokens_per_s", 37351.721225718844)
    );
    assert_eq!(
        row.requests_per_s,
        float("/summary/requests_per_s", 233.5723429679445)
    );
    assert_eq!(row.success_rate, Some(1.0));
    assert_eq!(row.exit_status, Some(0));
    assert_eq!(row.verdict, None);
    assert!(row.indexed_at.starts_with("20") && row.indexed_at.ends_with('Z'));
    assert!(row.labels.is_empty() && row.notes.is_empty());
}

#[test]
fn missing_null_and_mistyped_fields_are_null() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let mut doc = sample();
    let obj = doc.as_object_mut().unwrap();
    for key in ["started_at_us", "server", "host", "verdict", "command_line"] {
        obj.remove(key);
    }
    set(&mut doc, "/config/target", Json::Null);
    set(&mut doc, "/config/seed", Json::Null);
    set(&mut doc, "/config/load", json!("closed"));
    set(&mut doc, "/summary/ttft_ms", json!([1, 2]));
    set(&mut doc, "/summary/requests/total", json!("200"));
    set(&mut doc, "/summary/requests/completed", json!(199.0));
    set(&mut doc, "/summary/success_rate", Json::Null);
    set(&mut doc, "/interrupted", json!("no"));
    let id = db.index(&write_run(&tmp.0.join("odd"), &doc)).unwrap().id;
    let row = db.get(&RunRef::Id(id)).unwrap();
    assert_eq!(row.target, None);
    assert_eq!(row.model, None);
    assert_eq!(row.engine, None);
    assert_eq!(row.hostname, None);
    assert_eq!(row.exit_status, None);
    assert_eq!(row.command_line, None);
    assert_eq!(row.seed, None);
    assert_eq!(row.workload_key, None);
    assert_eq!(row.load.as_deref(), Some(r#""closed""#));
    assert_eq!((row.ttft_p50_ms, row.ttft_p99_ms), (None, None));
    assert_eq!(row.requests_total, None);
    assert_eq!(row.completed, Some(199));
    assert_eq!(row.success_rate, None);
    assert_eq!(row.interrupted, None);
    // The start time in microseconds is derived from started_at.
    assert_eq!(row.started_at_us, Some(1795382199462000));

    // An empty object indexes too, with nothing but the path.
    let id = db
        .index(&write_run(&tmp.0.join("empty"), &json!({})))
        .unwrap()
        .id;
    let row = db.get(&RunRef::Id(id)).unwrap();
    assert_eq!(
        (row.started_at, row.target, row.success_rate),
        (None, None, None)
    );
    assert_eq!(db.list(&Filter::default()).unwrap().last().unwrap().id, id);
}

#[test]
fn started_at_is_derived_from_microseconds() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let mut doc = sample();
    doc.as_object_mut().unwrap().remove("started_at");
    let id = db.index(&write_run(&tmp.0.join("r"), &doc)).unwrap().id;
    let row = db.get(&RunRef::Id(id)).unwrap();
    assert_eq!(row.started_at.as_deref(), Some("2026-11-22T21:16:39.462Z"));
}

#[test]
fn malformed_run_json_is_a_clear_error_and_reindex_goes_on() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let root = tmp.0.join("runs");
    run_with(&root.join("good"), &[]);
    let bad = root.join("bad");
    fs::create_dir_all(&bad).unwrap();
    fs::write(
        bad.join("run.json"),
        "{\"schema_version\": 2, \"summary\": {",
    )
    .unwrap();
    let err = db.index(&bad).err().unwrap();
    assert!(matches!(err, HistoryError::Malformed { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("bad/run.json") && message.contains("not JSON"),
        "{message}"
    );
    fs::create_dir_all(root.join("array")).unwrap();
    fs::write(root.join("array/run.json"), "[1, 2]").unwrap();
    assert!(db
        .index(&root.join("array"))
        .err()
        .unwrap()
        .to_string()
        .contains("not a JSON object"));

    let err = db.index(&root).err().unwrap();
    assert!(matches!(err, HistoryError::NotARunFolder { .. }), "{err}");

    let report = db.reindex(&root).unwrap();
    assert_eq!((report.runs, report.tests, report.removed), (1, 0, 0));
    let mut bad_paths: Vec<_> = report.unreadable.iter().map(|u| u.path.clone()).collect();
    bad_paths.sort();
    assert_eq!(bad_paths, vec![root.join("array"), bad]);
    assert!(report
        .unreadable
        .iter()
        .all(|u| u.reason.contains("run.json")));
    assert_eq!(db.list(&Filter::default()).unwrap().len(), 1);
}

#[test]
fn labels_and_notes_survive_reindex_and_reopen() {
    let tmp = Scratch::new();
    let root = tmp.0.join("runs");
    let run = run_with(&root.join("20261122-211639-462abc"), &[]);
    {
        let mut db = tmp.db();
        db.index(&run).unwrap();
        let by_prefix = RunRef::Prefix("20261122".into());
        db.label(&by_prefix, "baseline").unwrap();
        db.label(&RunRef::Path(run.clone()), "vllm-0.6.3").unwrap();
        db.label(&by_prefix, "baseline").unwrap();
        db.note(&by_prefix, "  before the driver upgrade ").unwrap();
        db.note(&by_prefix, "second note").unwrap();
    }
    let mut db = tmp.db();
    let row = db.get(&RunRef::Path(run.clone())).unwrap();
    assert_eq!(row.labels, vec!["baseline", "vllm-0.6.3"]);
    assert_eq!(row.notes, vec!["before the driver upgrade", "second note"]);

    // Move the folder away (its row goes), then back (a new row id): the
    // labels and notes follow the path.
    let parked = tmp.0.join("parked");
    fs::rename(&run, &parked).unwrap();
    assert_eq!(db.reindex(&root).unwrap().removed, 1);
    assert!(db.list(&Filter::default()).unwrap().is_empty());
    run_with(&tmp.0.join("other"), &[]);
    db.index(&tmp.0.join("other")).unwrap();
    fs::rename(&parked, &run).unwrap();
    assert_eq!(db.reindex(&root).unwrap().runs, 1);
    let again = db.get(&RunRef::Path(run)).unwrap();
    assert_ne!(again.id, row.id);
    assert_eq!((again.labels, again.notes), (row.labels, row.notes));
    assert_eq!(
        ids(&db.runs_with_label("baseline").unwrap()),
        vec![again.id]
    );
}

#[test]
fn labels_are_checked_and_can_be_removed() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let id = db.index(&run_with(&tmp.0.join("r"), &[])).unwrap().id;
    let run = RunRef::Id(id);
    for bad in ["", "  ", "two words", "a,b", &"x".repeat(65)] {
        let err = db.label(&run, bad).err().unwrap();
        assert!(
            matches!(err, HistoryError::InvalidLabel { .. }),
            "{bad:?}: {err}"
        );
    }
    assert!(matches!(
        db.note(&run, " \n").err().unwrap(),
        HistoryError::EmptyNote
    ));
    db.label(&run, "keep").unwrap();
    db.label(&run, "drop").unwrap();
    assert!(db.unlabel(&run, "drop").unwrap());
    assert!(!db.unlabel(&run, "drop").unwrap());
    assert_eq!(db.get(&run).unwrap().labels, vec!["keep"]);
    let err = db.label(&RunRef::Id(id + 100), "keep").err().unwrap();
    assert!(matches!(err, HistoryError::NotFound { .. }), "{err}");
}

#[test]
fn reindex_drops_rows_of_deleted_folders_only_under_root() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let root = tmp.0.join("runs");
    let keep = run_with(&root.join("keep"), &[]);
    let gone = run_with(&root.join("deep/er/gone"), &[]);
    let outside = run_with(&tmp.0.join("elsewhere/r"), &[]);
    db.index(&outside).unwrap();
    let report = db.reindex(&root).unwrap();
    assert_eq!((report.runs, report.removed), (2, 0));
    assert!(report.unreadable.is_empty());
    fs::remove_dir_all(&gone).unwrap();
    // A folder that lost its run.json is no longer a run either.
    fs::remove_file(keep.join("run.json")).unwrap();
    let report = db.reindex(&root).unwrap();
    assert_eq!((report.runs, report.removed), (0, 2));
    let rows = db.list(&Filter::default()).unwrap();
    assert_eq!(
        rows.iter().map(|r| r.path.clone()).collect::<Vec<_>>(),
        vec![outside]
    );
    assert!(matches!(
        db.reindex(&tmp.0.join("nope")).err().unwrap(),
        HistoryError::Io { .. }
    ));
}

#[test]
fn a_test_folder_indexes_the_test_and_its_levels() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let test = write_test(&tmp.0.join("tests/max-tp"), &[8, 64]);
    let indexed = db.index(&test).unwrap();
    assert_eq!((indexed.kind, indexed.levels.len()), (Kind::Test, 2));
    assert!(indexed.skipped.is_empty());
    let row = db.get(&RunRef::Id(indexed.id)).unwrap();
    assert_eq!(row.kind, Kind::Test);
    assert_eq!(row.test_name.as_deref(), Some("max-throughput"));
    assert_eq!(row.verdict.as_deref(), Some("pass"));
    assert_eq!(row.schema_version, Some(1));
    assert_eq!(row.started_at.as_deref(), Some("2026-11-22T21:00:00.000Z"));
    // What all levels share is copied to the test; what differs is not.
    assert_eq!(row.model.as_deref(), Some("sim-fast"));
    assert_eq!(row.workload_key, workload_key(&sample()));
    assert_eq!((row.load, row.ttft_p99_ms), (None, None));

    let levels = db
        .list(&Filter {
            parent_test: Some(indexed.id),
            ..Filter::default()
        })
        .unwrap();
    let mut loads: Vec<_> = levels.iter().map(|r| r.load.clone().unwrap()).collect();
    loads.sort();
    assert_eq!(loads, vec!["closed c=64", "closed c=8"]);
    for level in &levels {
        assert_eq!(
            (level.kind, level.parent_test),
            (Kind::Run, Some(indexed.id))
        );
        assert_eq!(level.test_name.as_deref(), Some("max-throughput"));
        assert!(level.path.starts_with(&test));
    }

    // Reindexing the parent folder keeps the links and adds no rows, also
    // when a level is later indexed on its own.
    let report = db.reindex(&tmp.0).unwrap();
    assert_eq!((report.tests, report.runs, report.removed), (1, 2, 0));
    let level = db.index(&test.join("levels/c8")).unwrap();
    assert_eq!(
        db.get(&RunRef::Id(level.id)).unwrap().parent_test,
        Some(indexed.id)
    );
    assert_eq!(db.list(&Filter::default()).unwrap().len(), 3);

    // A missing level is reported, and the test still indexed.
    fs::remove_dir_all(test.join("levels/c64")).unwrap();
    let again = db.index(&test).unwrap();
    assert_eq!(
        (again.id, again.levels.len(), again.skipped.len()),
        (indexed.id, 1, 1)
    );
    assert!(again.skipped[0].path.ends_with("levels/c64"));
}

#[test]
fn a_level_dropped_from_test_json_loses_its_parent() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let test = write_test(&tmp.0.join("t"), &[8, 64]);
    let first = db.index(&test).unwrap();
    let mut doc: Json =
        serde_json::from_str(&fs::read_to_string(test.join("test.json")).unwrap()).unwrap();
    doc["levels"].as_array_mut().unwrap().remove(1);
    fs::write(test.join("test.json"), doc.to_string()).unwrap();
    let second = db.index(&test).unwrap();
    assert_eq!(
        (second.id, second.levels.clone()),
        (first.id, first.levels[..1].to_vec())
    );
    let dropped = db.get(&RunRef::Id(first.levels[1])).unwrap();
    assert_eq!((dropped.parent_test, dropped.test_name), (None, None));
}

#[test]
fn an_unreadable_test_json_is_reported_and_its_runs_still_indexed() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let test = write_test(&tmp.0.join("t"), &[8, 64]);
    fs::write(test.join("test.json"), "{\"test\": ").unwrap();
    let err = db.index(&test).err().unwrap();
    assert!(err.to_string().contains("test.json"), "{err}");
    let report = db.reindex(&tmp.0).unwrap();
    assert_eq!(
        (report.tests, report.runs, report.unreadable.len()),
        (0, 2, 1)
    );
    assert_eq!(report.unreadable[0].path, test);
    let rows = db.list(&Filter::default()).unwrap();
    assert!(rows
        .iter()
        .all(|r| r.kind == Kind::Run && r.parent_test.is_none()));

    // A folder that does not exist is an I/O error naming it.
    let err = db.index(&tmp.0.join("missing")).err().unwrap();
    assert!(matches!(err, HistoryError::Io { .. }) && err.to_string().contains("missing"));
}

#[test]
fn a_test_json_without_levels_is_read_as_its_run_subfolders() {
    let tmp = Scratch::new();
    let mut db = tmp.db();
    let test = tmp.0.join("t");
    run_with(&test.join("c8"), &[]);
    run_with(&test.join("c1"), &[]);
    fs::create_dir_all(test.join("notes")).unwrap();
    fs::write(
        test.join("test.json"),
        r#"{"test": "ttft", "schema_version": 1}"#,
    )
    .unwrap();
    let indexed = db.index(&test).unwrap();
    assert_eq!((indexed.kind, indexed.levels.len()), (Kind::Test, 2));
    let levels = db
        .list(&Filter {
            parent_test: Some(indexed.id),
            ..Filter::default()
        })
        .unwrap();
    let mut names: Vec<_> = levels.iter().map(|r| r.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["c1", "c8"]);
}

#[test]
fn record_folder_indexes_and_labels_or_writes_nothing() {
    let tmp = Scratch::new();
    let store = tmp.0.join("db/history.db");
    let test = write_test(&tmp.0.join("t"), &[8, 64]);
    let labels = vec!["nightly".to_owned(), "vllm-0.6.3".to_owned()];
    let indexed = super::record_folder(&store, &test, &labels).unwrap();
    assert_eq!((indexed.kind, indexed.levels.len()), (Kind::Test, 2));
    let db = History::open(&store).unwrap();
    let row = db.get(&RunRef::Id(indexed.id)).unwrap();
    assert_eq!(row.labels, labels);
    assert_eq!(
        ids(&db.runs_with_label("nightly").unwrap()),
        vec![indexed.id]
    );
    // A bad label is refused before anything is written.
    let run = run_with(&tmp.0.join("r"), &[]);
    let err = super::record_folder(&store, &run, &["two words".to_owned()])
        .err()
        .unwrap();
    assert!(matches!(err, HistoryError::InvalidLabel { .. }), "{err}");
    assert!(db.get(&RunRef::Path(run)).is_err());
}
