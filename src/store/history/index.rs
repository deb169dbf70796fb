//! Reading run and test folders into rows of the `runs` table: `index`,
//! `reindex`, and the helpers that turn run.json values into columns
//! (`workload_key`, the load in words).
//!
//! Each folder is read completely before anything is written, so a bad file
//! never leaves half a test in the database.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection};
use serde_json::Value as Json;

use crate::compare::fingerprint;
use crate::store::runs::run_subfolders;

use super::{
    canonical_dir, canonical_folder, path_key, History, HistoryError, Indexed, Kind, ReindexReport,
    Unreadable, NOW_SQL,
};

/// The columns of `runs` filled from the files, in table order. Anything a
/// folder does not provide is written as NULL, so a re-index never leaves a
/// stale value behind.
const DATA_COLUMNS: [&str; 40] = [
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
const INHERITED: [&str; 11] = [
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
type Fields = Vec<(&'static str, Sql)>;

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
        if dir.join("test.json").is_file() {
            found.push((dir.clone(), true));
        } else if dir.join("run.json").is_file() {
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
    let test_file = folder.join("test.json");
    if test_file.is_file() {
        return read_test(folder, &read_json(&test_file)?);
    }
    let run_file = folder.join("run.json");
    if run_file.is_file() {
        return Ok(Parsed::Run(run_fields(&read_json(&run_file)?)));
    }
    Err(HistoryError::NotARunFolder {
        path: folder.to_path_buf(),
    })
}

fn read_test(folder: &Path, doc: &Json) -> Result<Parsed, HistoryError> {
    let mut fields: Fields = vec![
        ("test_name", text(doc, "/test").into()),
        ("schema_version", int(doc, "/schema_version").into()),
        ("started_at", text(doc, "/started_at").into()),
        ("started_at_us", int(doc, "/started_at_us").into()),
        ("finished_at_us", int(doc, "/finished_at_us").into()),
        ("interrupted", flag(doc, "/interrupted").into()),
        ("command_line", command_line(doc).into()),
        ("exit_status", int(doc, "/exit_status").into()),
        ("verdict", text(doc, "/compliance/verdict").into()),
    ];
    let mut levels = Vec::new();
    let mut skipped = Vec::new();
    let listed: Vec<Option<String>> = match doc.pointer("/levels").and_then(Json::as_array) {
        Some(entries) => entries
            .iter()
            .map(|level| {
                level
                    .pointer("/run")
                    .and_then(Json::as_str)
                    .map(str::to_owned)
            })
            .collect(),
        // No list: the levels are the subfolders holding a run.json.
        None => run_subfolders(folder).into_iter().map(Some).collect(),
    };
    for (i, rel) in listed.into_iter().enumerate() {
        let Some(rel) = rel else {
            skipped.push(Unreadable {
                path: folder.join("test.json"),
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
        match path_key(&dir).and_then(|_| read_json(&dir.join("run.json"))) {
            Ok(run) => levels.push((dir, run_fields(&run))),
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

fn get<'a>(fields: &'a Fields, column: &str) -> &'a Sql {
    fields
        .iter()
        .find(|(c, _)| *c == column)
        .map_or(&Sql::Null, |(_, v)| v)
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

fn run_fields(doc: &Json) -> Fields {
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

fn text(doc: &Json, pointer: &str) -> Option<String> {
    doc.pointer(pointer)?.as_str().map(str::to_owned)
}

/// An integer, also accepting a float with no fractional part (some writers
/// emit `200.0`), as long as it is exactly representable.
fn int(doc: &Json, pointer: &str) -> Option<i64> {
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

fn flag(doc: &Json, pointer: &str) -> Option<bool> {
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
fn command_line(doc: &Json) -> Option<String> {
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
