//! Reading run and test folders into rows of the `runs` table: `index` and
//! `reindex`. Each file is read through its typed view (`view.rs`); the
//! helpers that turn the views into columns (`workload_key`, the load in
//! words) are in `columns.rs`.
//!
//! Each folder is read completely before anything is written, so a bad file
//! never leaves half a test in the database.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection};
use serde_json::Value as Json;

use crate::store::folder::{RunFolder, TestFolder};
use crate::store::runs::run_subfolders;

use super::columns::{get, run_fields, test_fields, Fields, DATA_COLUMNS, INHERITED};
use super::view::{RunView, TestView};
use super::{
    canonical_dir, canonical_folder, path_key, History, HistoryError, Indexed, Kind, ReindexReport,
    Unreadable, NOW_SQL,
};

/// A folder read from disk, not yet written.
enum Parsed {
    Run(Fields),
    Test {
        fields: Fields,
        levels: Vec<(PathBuf, Fields)>,
        skipped: Vec<Unreadable>,
    },
}

impl History {
    /// Indexes a run folder or a test folder (with its levels). Indexing the
    /// same folder again, by any spelling of its path, updates its row.
    pub fn index(&mut self, folder: &Path) -> Result<Indexed, HistoryError> {
        let folder = canonical_folder(folder)?;
        let parsed = read_folder(&folder)?;
        let tx = self.conn.transaction()?;
        let indexed = write_parsed(&tx, &folder, parsed)?;
        tx.commit()?;
        Ok(indexed)
    }

    /// Indexes every folder under `root` (itself included) that holds
    /// `run.json` or `test.json`, and drops the rows of folders under `root`
    /// that no longer hold one. A folder that cannot be read is reported and
    /// keeps its previous row; only database errors stop the walk.
    pub fn reindex(&mut self, root: &Path) -> Result<ReindexReport, HistoryError> {
        let root = canonical_dir(root)?;
        let mut report = ReindexReport::default();
        let mut found = Vec::new();
        walk(&root, &mut found, &mut report.unreadable);
        // Tests first, so their levels get parent links and are not read twice.
        found.sort_by_key(|(path, is_test)| (!is_test, path.clone()));
        let mut present: HashSet<PathBuf> = found.iter().map(|(p, _)| p.clone()).collect();
        let mut done: HashSet<PathBuf> = HashSet::new();
        // One transaction: thousands of folders would otherwise mean
        // thousands of disk syncs.
        let tx = self.conn.transaction()?;
        for (folder, _) in &found {
            if done.contains(folder) {
                continue;
            }
            let parsed = match read_folder(folder) {
                Ok(parsed) => parsed,
                Err(err) => {
                    report.unreadable.push(unreadable(folder, &err));
                    continue;
                }
            };
            done.insert(folder.clone());
            if let Parsed::Test { levels, .. } = &parsed {
                for (dir, _) in levels {
                    // A level may live outside `root`; it still exists.
                    present.insert(dir.clone());
                    done.insert(dir.clone());
                }
            }
            let indexed = write_parsed(&tx, folder, parsed)?;
            match indexed.kind {
                Kind::Run => report.runs += 1,
                Kind::Test => report.tests += 1,
            }
            report.runs += indexed.levels.len();
            for skip in indexed.skipped {
                done.insert(skip.path.clone());
                report.unreadable.push(skip);
            }
        }
        let rows: Vec<(i64, String)> = tx
            .prepare("SELECT id, path FROM runs")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for (id, path) in rows {
            let path = PathBuf::from(path);
            if path.starts_with(&root) && !present.contains(&path) {
                tx.execute("DELETE FROM runs WHERE id = ?1", [id])?;
                report.removed += 1;
            }
        }
        tx.commit()?;
        Ok(report)
    }
}

fn unreadable(path: &Path, err: &HistoryError) -> Unreadable {
    Unreadable {
        path: path.to_path_buf(),
        reason: err.to_string(),
    }
}

/// Collects every folder under `dir` holding test.json (`true`) or run.json.
/// Symlinked folders are not followed, which keeps the walk finite.
fn walk(root: &Path, found: &mut Vec<(PathBuf, bool)>, problems: &mut Vec<Unreadable>) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if TestFolder::new(&dir).holds_test() {
            found.push((dir.clone(), true));
        } else if RunFolder::new(&dir).holds_run() {
            found.push((dir.clone(), false));
        }
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) => {
                problems.push(Unreadable {
                    path: dir,
                    reason: format!("cannot list the folder: {err}"),
                });
                continue;
            }
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
}

fn read_json(file: &Path) -> Result<Json, HistoryError> {
    let text = fs::read_to_string(file).map_err(|source| HistoryError::Io {
        path: file.to_path_buf(),
        source,
    })?;
    let doc: Json = serde_json::from_str(&text).map_err(|e| HistoryError::Malformed {
        path: file.to_path_buf(),
        reason: format!("not JSON ({e})"),
    })?;
    if !doc.is_object() {
        return Err(HistoryError::Malformed {
            path: file.to_path_buf(),
            reason: "the top level is not a JSON object".to_owned(),
        });
    }
    Ok(doc)
}

/// Reads a canonical folder: test.json wins if both files are present.
fn read_folder(folder: &Path) -> Result<Parsed, HistoryError> {
    path_key(folder)?;
    let test_file = TestFolder::new(folder).test_json();
    if test_file.is_file() {
        return read_test(folder, &TestView::read(&read_json(&test_file)?));
    }
    let run_file = RunFolder::new(folder).run_json();
    if run_file.is_file() {
        return Ok(Parsed::Run(run_fields(&RunView::read(&read_json(
            &run_file,
        )?))));
    }
    Err(HistoryError::NotARunFolder {
        path: folder.to_path_buf(),
    })
}

fn read_test(folder: &Path, test: &TestView) -> Result<Parsed, HistoryError> {
    let mut fields = test_fields(test);
    let mut levels = Vec::new();
    let mut skipped = Vec::new();
    let listed: Vec<Option<String>> = match &test.levels.0 {
        Some(entries) => entries
            .iter()
            .map(|level| level.view().and_then(|l| l.run.get()))
            .collect(),
        // No list: the levels are the subfolders holding a run.json.
        None => run_subfolders(folder).into_iter().map(Some).collect(),
    };
    for (i, rel) in listed.into_iter().enumerate() {
        let Some(rel) = rel else {
            skipped.push(Unreadable {
                path: TestFolder::new(folder).test_json(),
                reason: format!("level {} has no `run` folder", i + 1),
            });
            continue;
        };
        let dir = match canonical_dir(&folder.join(&rel)) {
            Ok(dir) => dir,
            Err(err) => {
                skipped.push(unreadable(&folder.join(rel), &err));
                continue;
            }
        };
        match path_key(&dir).and_then(|_| read_json(&RunFolder::new(&dir).run_json())) {
            Ok(run) => levels.push((dir, run_fields(&RunView::read(&run)))),
            // Canonical, so that `reindex` recognises the folder and does not
            // read it a second time.
            Err(err) => skipped.push(unreadable(&dir, &err)),
        }
    }
    for column in INHERITED {
        let mut values = levels.iter().map(|(_, f)| get(f, column));
        if let Some(first) = values.next().filter(|v| **v != Sql::Null) {
            if values.all(|v| v == first) {
                fields.push((column, first.clone()));
            }
        }
    }
    Ok(Parsed::Test {
        fields,
        levels,
        skipped,
    })
}

fn write_parsed(conn: &Connection, folder: &Path, parsed: Parsed) -> Result<Indexed, HistoryError> {
    match parsed {
        Parsed::Run(fields) => {
            let id = upsert(conn, Kind::Run, folder, None, &fields)?;
            // If the folder was a test before, its old levels are orphans now.
            conn.execute(
                "UPDATE runs SET parent_test = NULL WHERE parent_test = ?1",
                [id],
            )?;
            Ok(Indexed {
                id,
                kind: Kind::Run,
                path: folder.to_path_buf(),
                levels: Vec::new(),
                skipped: Vec::new(),
            })
        }
        Parsed::Test {
            fields,
            levels,
            skipped,
        } => {
            let id = upsert(conn, Kind::Test, folder, None, &fields)?;
            let mut level_ids = Vec::new();
            for (dir, fields) in &levels {
                level_ids.push(upsert(conn, Kind::Run, dir, Some(id), fields)?);
            }
            // A level dropped from test.json is no longer part of the test.
            let children: Vec<i64> = conn
                .prepare("SELECT id FROM runs WHERE parent_test = ?1")?
                .query_map([id], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            for child in children.iter().filter(|c| !level_ids.contains(c)) {
                conn.execute("UPDATE runs SET parent_test = NULL WHERE id = ?1", [child])?;
            }
            Ok(Indexed {
                id,
                kind: Kind::Test,
                path: folder.to_path_buf(),
                levels: level_ids,
                skipped,
            })
        }
    }
}

/// Inserts or updates the row of `folder`, returning its (unchanged) id. A
/// run indexed on its own keeps the test it was found in before.
fn upsert(
    conn: &Connection,
    kind: Kind,
    folder: &Path,
    parent: Option<i64>,
    fields: &Fields,
) -> Result<i64, HistoryError> {
    debug_assert!(fields.iter().all(|(c, _)| DATA_COLUMNS.contains(c)));
    let path = path_key(folder)?;
    let name = folder
        .file_name()
        .map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned());
    let mut values: Vec<Sql> = vec![
        kind.as_str().to_owned().into(),
        path.to_owned().into(),
        name.into(),
        parent.into(),
    ];
    let mut placeholders: Vec<String> = (1..=4).map(|i| format!("?{i}")).collect();
    for column in DATA_COLUMNS {
        if column == "indexed_at" {
            placeholders.push(NOW_SQL.to_owned());
        } else {
            values.push(get(fields, column).clone());
            placeholders.push(format!("?{}", values.len()));
        }
    }
    let updates: Vec<String> = DATA_COLUMNS
        .iter()
        .map(|c| format!("{c} = excluded.{c}"))
        .collect();
    let sql = format!(
        "INSERT INTO runs (kind, path, name, parent_test, {}) VALUES ({}) \
         ON CONFLICT (path) DO UPDATE SET kind = excluded.kind, name = excluded.name, \
         parent_test = coalesce(excluded.parent_test, runs.parent_test), {} RETURNING id",
        DATA_COLUMNS.join(", "),
        placeholders.join(", "),
        updates.join(", "),
    );
    let id: i64 = conn
        .prepare_cached(&sql)?
        .query_row(params_from_iter(values), |r| r.get(0))?;
    // Fill either start time from the other, so every row sorts and filters
    // by time. SQLite's date functions keep milliseconds, enough for
    // ordering; microseconds are truncated to them, as servebench does when
    // it writes `started_at`.
    conn.execute(
        "UPDATE runs SET
             started_at_us = coalesce(started_at_us,
                 CAST(round((julianday(started_at) - 2440587.5) * 86400000.0) AS INTEGER) * 1000),
             started_at = coalesce(started_at,
                 strftime('%Y-%m-%dT%H:%M:%fZ', started_at_us / 1000 / 1000.0, 'unixepoch'))
         WHERE id = ?1",
        [id],
    )?;
    Ok(id)
}
