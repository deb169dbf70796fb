//! Opening the history database (creating it, refusing a newer schema or a file
//! that is not one, its default path), and what users attach to runs: labels and
//! notes, and `record_folder`.

use std::fs;
use std::path::PathBuf;

use super::super::{default_path_from, Filter, History, HistoryError, Kind, RunRef};
use super::{ids, run_with, write_test, Scratch};

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
    assert_eq!(version, 2);
    drop(conn);
    assert!(History::open(&path)
        .unwrap()
        .list(&Filter::default())
        .unwrap()
        .is_empty());
}

/// A database of version 1 (before tests kept their answer) is brought to version 2 when
/// opened: its rows stay, and the new column reads NULL until a re-index fills it.
#[test]
fn a_version_1_database_gains_the_answer_column_and_keeps_its_rows() {
    let tmp = Scratch::new();
    let path = tmp.0.join("history.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(super::super::schema::SCHEMA_V1).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version (version) VALUES (1);
             INSERT INTO runs (kind, path, name, indexed_at)
                 VALUES ('test', '/runs/t', 't', '2026-11-28T00:00:00.000Z');",
        )
        .unwrap();
    }
    let db = History::open(&path).unwrap();
    let rows = db.list(&Filter::default()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].name.as_str(), rows[0].answer.as_deref()),
        ("t", None)
    );
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
                supported: 2,
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
fn record_folder_indexes_and_labels_or_writes_nothing() {
    let tmp = Scratch::new();
    let store = tmp.0.join("db/history.db");
    let test = write_test(&tmp.0.join("t"), &[8, 64]);
    let labels = vec!["nightly".to_owned(), "vllm-0.6.3".to_owned()];
    let indexed = super::super::record_folder(&store, &test, &labels).unwrap();
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
    let err = super::super::record_folder(&store, &run, &["two words".to_owned()])
        .err()
        .unwrap();
    assert!(matches!(err, HistoryError::InvalidLabel { .. }), "{err}");
    assert!(db.get(&RunRef::Path(run)).is_err());
}
