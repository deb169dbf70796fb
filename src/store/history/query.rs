//! The reading half of the run history: listing and filtering rows, fetching
//! one, and turning what a user typed ([`RunRef`]) into a row.
//!
//! Kept apart from the parent module only to keep each file a readable size.

use std::path::{Path, PathBuf};

use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, OptionalExtension, Row};

use super::{canonical_folder, path_key, Filter, History, HistoryError, Kind, RunRef, RunRow};

/// Every column of a run plus the test name, which levels take from their
/// parent row. Filters below refer to the run's columns as `r.`.
const SELECT: &str = "SELECT r.*, coalesce(r.test_name, p.test_name) AS any_test_name \
                      FROM runs r LEFT JOIN runs p ON p.id = r.parent_test";

/// Newest first; rows without a start time last; the id breaks ties so the
/// order is stable.
const ORDER: &str = " ORDER BY r.started_at_us IS NULL, r.started_at_us DESC, r.id DESC";

/// How many candidates an ambiguity error lists before "and N more".
const MAX_CANDIDATES: usize = 20;

impl History {
    /// The rows matching `filter`, newest first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<RunRow>, HistoryError> {
        let mut sql = format!("{SELECT} WHERE 1 = 1");
        let mut args: Vec<Sql> = Vec::new();
        let substrings = [
            ("target", &filter.target),
            ("model", &filter.model),
            ("workload", &filter.workload),
            ("engine", &filter.engine),
        ];
        for (column, wanted) in substrings {
            if let Some(wanted) = wanted {
                // instr rather than LIKE: no wildcards to escape in URLs.
                args.push(wanted.to_lowercase().into());
                sql.push_str(&format!(
                    " AND instr(lower(r.{column}), ?{}) > 0",
                    args.len()
                ));
            }
        }
        if let Some(label) = &filter.label {
            args.push(label.trim().to_owned().into());
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM labels l WHERE l.path = r.path AND l.label = ?{})",
                args.len()
            ));
        }
        if let Some(kind) = filter.kind {
            args.push(kind.as_str().to_owned().into());
            sql.push_str(&format!(" AND r.kind = ?{}", args.len()));
        }
        if let Some(parent) = filter.parent_test {
            args.push(parent.into());
            sql.push_str(&format!(" AND r.parent_test = ?{}", args.len()));
        }
        if let Some(since) = &filter.since {
            args.push(self.since_us(since)?.into());
            sql.push_str(&format!(" AND r.started_at_us >= ?{}", args.len()));
        }
        sql.push_str(ORDER);
        if let Some(limit) = filter.limit {
            args.push(i64::try_from(limit).unwrap_or(i64::MAX).into());
            sql.push_str(&format!(" LIMIT ?{}", args.len()));
        }
        self.query_rows(&sql, args)
    }

    /// One row, with its labels and notes.
    pub fn get(&self, run: &RunRef) -> Result<RunRow, HistoryError> {
        let (id, _) = self.resolve(run)?;
        let sql = format!("{SELECT} WHERE r.id = ?1");
        self.query_rows(&sql, vec![id.into()])?
            .pop()
            .ok_or_else(|| HistoryError::NotFound {
                what: run.to_string(),
            })
    }

    /// The rows carrying `label`, newest first (what `compare --label`
    /// picks from).
    pub fn runs_with_label(&self, label: &str) -> Result<Vec<RunRow>, HistoryError> {
        self.list(&Filter {
            label: Some(label.to_owned()),
            ..Filter::default()
        })
    }

    /// The id and path key of the row `run` names.
    pub(super) fn resolve(&self, run: &RunRef) -> Result<(i64, String), HistoryError> {
        let not_found = || HistoryError::NotFound {
            what: run.to_string(),
        };
        match run {
            RunRef::Id(id) => self
                .conn
                .query_row("SELECT id, path FROM runs WHERE id = ?1", [id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?
                .ok_or_else(not_found),
            RunRef::Path(path) => {
                let path = lookup_path(path)?;
                self.conn
                    .query_row(
                        "SELECT id, path FROM runs WHERE path = ?1",
                        [path_key(&path)?],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?
                    .ok_or_else(not_found)
            }
            RunRef::Prefix(prefix) => self.resolve_prefix(prefix),
        }
    }

    fn resolve_prefix(&self, prefix: &str) -> Result<(i64, String), HistoryError> {
        if prefix.is_empty() {
            return Err(HistoryError::NotFound {
                what: "an empty name".to_owned(),
            });
        }
        // An exact name wins, so `run1` is not ambiguous with `run10`.
        for sql in [
            "SELECT id, path FROM runs WHERE name = ?1 ORDER BY id",
            "SELECT id, path FROM runs WHERE substr(name, 1, length(?1)) = ?1 \
             ORDER BY started_at_us IS NULL, started_at_us DESC, id DESC",
        ] {
            let mut found: Vec<(i64, String)> = self
                .conn
                .prepare_cached(sql)?
                .query_map([prefix], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            match found.len() {
                0 => continue,
                1 => return Ok(found.remove(0)),
                n => {
                    let candidates = found
                        .into_iter()
                        .take(MAX_CANDIDATES)
                        .map(|(id, path)| (id, PathBuf::from(path)))
                        .collect();
                    return Err(HistoryError::Ambiguous {
                        prefix: prefix.to_owned(),
                        candidates,
                        more: n.saturating_sub(MAX_CANDIDATES),
                    });
                }
            }
        }
        Err(HistoryError::NotFound {
            what: RunRef::Prefix(prefix.to_owned()).to_string(),
        })
    }

    /// Microseconds since the epoch of an ISO 8601 date or time, read by
    /// SQLite's date functions (the same ones that order the rows).
    fn since_us(&self, since: &str) -> Result<i64, HistoryError> {
        let us: Option<i64> = self.conn.query_row(
            "SELECT CAST(round((julianday(?1) - 2440587.5) * 86400000.0) AS INTEGER) * 1000",
            [since.trim()],
            |r| r.get(0),
        )?;
        us.ok_or_else(|| HistoryError::InvalidSince {
            value: since.to_owned(),
        })
    }

    fn query_rows(&self, sql: &str, args: Vec<Sql>) -> Result<Vec<RunRow>, HistoryError> {
        let mut rows: Vec<RunRow> = self
            .conn
            .prepare(sql)?
            .query_map(params_from_iter(args), read_row)?
            .collect::<Result<_, _>>()?;
        let mut labels = self
            .conn
            .prepare_cached("SELECT label FROM labels WHERE path = ?1 ORDER BY label")?;
        let mut notes = self
            .conn
            .prepare_cached("SELECT text FROM notes WHERE path = ?1 ORDER BY id")?;
        for row in &mut rows {
            let key = path_key(&row.path)?;
            row.labels = labels
                .query_map([key], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            row.notes = notes
                .query_map([key], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
        }
        Ok(rows)
    }
}

/// The path key a `RunRef::Path` stands for: canonical when the folder still
/// exists, otherwise made absolute as typed (its row may outlive the folder).
fn lookup_path(path: &Path) -> Result<PathBuf, HistoryError> {
    if path.exists() {
        return canonical_folder(path);
    }
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(|source| HistoryError::Io {
        path: PathBuf::from("."),
        source,
    })?;
    Ok(cwd.join(path))
}

fn read_row(row: &Row<'_>) -> rusqlite::Result<RunRow> {
    let kind: String = row.get("kind")?;
    let path: String = row.get("path")?;
    let command_line: Option<String> = row.get("command_line")?;
    let seed: Option<String> = row.get("seed")?;
    Ok(RunRow {
        id: row.get("id")?,
        kind: if kind == "test" {
            Kind::Test
        } else {
            Kind::Run
        },
        path: PathBuf::from(path),
        name: row.get("name")?,
        parent_test: row.get("parent_test")?,
        test_name: row.get("any_test_name")?,
        schema_version: row.get("schema_version")?,
        started_at: row.get("started_at")?,
        started_at_us: row.get("started_at_us")?,
        finished_at_us: row.get("finished_at_us")?,
        interrupted: row.get("interrupted")?,
        command_line: command_line.and_then(|c| serde_json::from_str(&c).ok()),
        target: row.get("target")?,
        endpoint: row.get("endpoint")?,
        model: row.get("model")?,
        engine: row.get("engine")?,
        engine_version: row.get("engine_version")?,
        workload: row.get("workload")?,
        workload_key: row.get("workload_key")?,
        seed: seed.and_then(|s| s.parse().ok()),
        load: row.get("load")?,
        limit_requests: row.get("limit_requests")?,
        limit_duration_s: row.get("limit_duration_s")?,
        hardware: row.get("hardware")?,
        gpus: row.get("gpus")?,
        hostname: row.get("hostname")?,
        requests_total: row.get("requests_total")?,
        completed: row.get("completed")?,
        failed: row.get("failed")?,
        duration_s: row.get("duration_s")?,
        ttft_p50_ms: row.get("ttft_p50_ms")?,
        ttft_p99_ms: row.get("ttft_p99_ms")?,
        tpot_p50_ms: row.get("tpot_p50_ms")?,
        tpot_p99_ms: row.get("tpot_p99_ms")?,
        itl_p99_ms: row.get("itl_p99_ms")?,
        e2e_p50_ms: row.get("e2e_p50_ms")?,
        e2e_p99_ms: row.get("e2e_p99_ms")?,
        output_tokens_per_s: row.get("output_tokens_per_s")?,
        requests_per_s: row.get("requests_per_s")?,
        success_rate: row.get("success_rate")?,
        slo: row.get("slo")?,
        goodput_requests_per_s: row.get("goodput_requests_per_s")?,
        exit_status: row.get("exit_status")?,
        verdict: row.get("verdict")?,
        answer: row.get("answer")?,
        indexed_at: row.get("indexed_at")?,
        labels: Vec::new(),
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::{json, Value as Json};

    use super::super::tests::{ids, run_with, write_test, Scratch};
    use super::super::{Filter, HistoryError, Kind, RunRef};

    #[test]
    fn prefix_refs_resolve_or_list_the_candidates() {
        let tmp = Scratch::new();
        let mut db = tmp.db();
        let a = db
            .index(&run_with(&tmp.0.join("20261122-aaa"), &[]))
            .unwrap();
        let b = db
            .index(&run_with(&tmp.0.join("20261122-bbb"), &[]))
            .unwrap();
        let run1 = db.index(&run_with(&tmp.0.join("run1"), &[])).unwrap();
        db.index(&run_with(&tmp.0.join("run10"), &[])).unwrap();

        let err = db.get(&RunRef::Prefix("2026".into())).err().unwrap();
        match &err {
            HistoryError::Ambiguous {
                candidates, more, ..
            } => {
                let mut found = ids_of(candidates);
                found.sort();
                assert_eq!((found, *more), (vec![a.id, b.id], 0));
            }
            other => panic!("expected ambiguity, got {other}"),
        }
        let message = err.to_string();
        assert!(message.contains("matches 2 runs"), "{message}");
        assert!(
            message.contains(&format!("#{} {}", a.id, a.path.display())),
            "{message}"
        );
        assert!(
            message.contains(&format!("#{} {}", b.id, b.path.display())),
            "{message}"
        );

        assert_eq!(
            db.get(&RunRef::Prefix("20261122-b".into())).unwrap().id,
            b.id
        );
        assert_eq!(db.get(&RunRef::Prefix("run1".into())).unwrap().id, run1.id);
        let err = db.get(&RunRef::Prefix("zzz".into())).err().unwrap();
        assert!(err.to_string().contains("\"zzz\""), "{err}");
        assert!(db.get(&RunRef::Prefix(String::new())).is_err());
    }

    fn ids_of(candidates: &[(i64, PathBuf)]) -> Vec<i64> {
        candidates.iter().map(|(id, _)| *id).collect()
    }

    #[test]
    fn run_refs_parse_from_arguments() {
        assert_eq!(RunRef::parse("#12"), RunRef::Id(12));
        assert_eq!(RunRef::parse("12"), RunRef::Prefix("12".into()));
        assert_eq!(
            RunRef::parse("20261122-21"),
            RunRef::Prefix("20261122-21".into())
        );
        assert_eq!(RunRef::parse("runs/x"), RunRef::Path("runs/x".into()));
        assert_eq!(RunRef::parse("/"), RunRef::Path("/".into()));
    }

    #[test]
    fn each_filter_narrows_the_list() {
        let tmp = Scratch::new();
        let mut db = tmp.db();
        let base = 1_795_000_000_000_000_i64; // 2026-11-18T11:06:40Z
        let day = 86_400_000_000_i64;
        let mk = |name: &str, i: i64, edits: &[(&str, Json)]| {
            let mut all = vec![("/started_at_us", json!(base + i * day))];
            all.push(("/started_at", Json::Null));
            all.extend(edits.iter().cloned());
            run_with(&tmp.0.join(name), &all)
        };
        let old = db.index(&mk("old", 0, &[])).unwrap().id;
        let vllm = db
            .index(&mk(
                "vllm",
                1,
                &[
                    ("/config/target/url", json!("http://GPU-box:8000/v1")),
                    ("/config/target/model", json!("meta-llama/Llama-3.1-8B")),
                    ("/server/engine", json!("vllm")),
                    ("/config/workload/name", json!("sharegpt")),
                ],
            ))
            .unwrap()
            .id;
        let new = db.index(&mk("new", 2, &[])).unwrap().id;
        let test = db.index(&write_test(&tmp.0.join("t"), &[4])).unwrap();
        db.label(&RunRef::Id(old), "baseline").unwrap();

        let list = |f: Filter| ids(&db.list(&f).unwrap());
        let by = |edit: &dyn Fn(&mut Filter)| {
            let mut filter = Filter::default();
            edit(&mut filter);
            list(filter)
        };
        let all = list(Filter::default());
        // Newest first: the test's level (2026-11-22T21:16Z), the test
        // (21:00 that day), then the runs by day.
        assert_eq!(all[..2], [test.levels[0], test.id]);
        assert_eq!(all[2..], [new, vllm, old]);
        assert_eq!(by(&|f| f.target = Some("gpu-BOX".into())), [vllm]);
        assert_eq!(by(&|f| f.model = Some("llama".into())), [vllm]);
        assert_eq!(by(&|f| f.workload = Some("share".into())), [vllm]);
        assert_eq!(by(&|f| f.engine = Some("VLLM".into())), [vllm]);
        assert_eq!(by(&|f| f.label = Some("baseline".into())), [old]);
        assert_eq!(by(&|f| f.kind = Some(Kind::Test)), [test.id]);
        assert_eq!(by(&|f| f.kind = Some(Kind::Run)).len(), 4);
        assert_eq!(by(&|f| f.parent_test = Some(test.id)), test.levels);
        assert_eq!(by(&|f| f.limit = Some(2)), all[..2]);
        let since = |s: &str| {
            by(&|f| {
                f.since = Some(s.into());
                f.kind = Some(Kind::Run);
            })
        };
        // base + 1 day is 2026-11-19T11:06:40Z; [0] is the test's level.
        assert_eq!(since("2026-11-19T11:06:40Z")[1..], [new, vllm]);
        assert_eq!(since("2026-11-19T11:06:40.001Z")[1..], [new]);
        assert_eq!(since("2026-11-19T13:06:40+02:00")[1..], [new, vllm]);
        assert_eq!(since("2026-11-19").len(), 3);
        let bad = Filter {
            since: Some("last week".into()),
            ..Filter::default()
        };
        let err = db.list(&bad).err().unwrap();
        assert!(matches!(err, HistoryError::InvalidSince { .. }), "{err}");
        // Filters combine with AND.
        let both = by(&|f| {
            f.engine = Some("servebench".into());
            f.label = Some("baseline".into());
        });
        assert_eq!(both, [old]);
    }
}
