//! Indexing test folders: the test and its levels, linked; what the levels share
//! copied to the test; levels dropped, missing or unreadable; and a test.json
//! without a list of levels.

use std::fs;

use serde_json::Value as Json;

use super::super::{workload_key, Filter, HistoryError, Kind, RunRef};
use super::{run_with, sample, write_test, Scratch};

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
