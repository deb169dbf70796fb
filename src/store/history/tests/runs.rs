//! Indexing run folders: one row per folder whatever the spelling of its path,
//! values read back exactly, missing or mistyped fields as NULL, unreadable
//! files reported, and rows of deleted folders dropped by a reindex.

use std::fs;

use serde_json::{json, Value as Json};

use super::super::{workload_key, Filter, HistoryError, Kind, RunRef, RunRow};
use super::{run_with, sample, set, write_run, Scratch};

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
    summary_figures_read_back(&row);
    assert_eq!(row.success_rate, Some(1.0));
    assert_eq!(row.exit_status, Some(0));
    assert_eq!(row.verdict, None);
    assert!(row.indexed_at.starts_with("20") && row.indexed_at.ends_with('Z'));
    assert!(row.labels.is_empty() && row.notes.is_empty());
}

/// The summary's figures of the sample run, as the index read them.
fn summary_figures_read_back(row: &RunRow) {
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
