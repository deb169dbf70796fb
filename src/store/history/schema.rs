//! The database layout: the `runs`, `labels` and `notes` tables, the version of that
//! layout, and the migration that brings an older database up to it when it is opened.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::HistoryError;

/// The layout version this code reads and writes.
pub const SCHEMA_VERSION: i64 = 2;

/// Migration `i` brings a database from version `i` to `i + 1`; they run in
/// order inside one transaction, so a crash leaves the old version intact.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [SCHEMA_V1, SCHEMA_V2];

/// Version 2: a test's one-line answer (`test.json`'s `answer`), for the listing. Rows
/// indexed before it read NULL until `servebench reindex` fills them.
const SCHEMA_V2: &str = "ALTER TABLE runs ADD COLUMN answer TEXT;";

pub(super) const SCHEMA_V1: &str = "
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('run', 'test')),
    path TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    parent_test INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    test_name TEXT,
    schema_version INTEGER,
    started_at TEXT,
    started_at_us INTEGER,
    finished_at_us INTEGER,
    interrupted INTEGER,
    command_line TEXT,
    target TEXT,
    endpoint TEXT,
    model TEXT,
    engine TEXT,
    engine_version TEXT,
    workload TEXT,
    workload_key TEXT,
    seed TEXT,
    load TEXT,
    limit_requests INTEGER,
    limit_duration_s REAL,
    hardware TEXT,
    gpus TEXT,
    hostname TEXT,
    requests_total INTEGER,
    completed INTEGER,
    failed INTEGER,
    duration_s REAL,
    ttft_p50_ms REAL,
    ttft_p99_ms REAL,
    tpot_p50_ms REAL,
    tpot_p99_ms REAL,
    itl_p99_ms REAL,
    e2e_p50_ms REAL,
    e2e_p99_ms REAL,
    output_tokens_per_s REAL,
    requests_per_s REAL,
    success_rate REAL,
    slo TEXT,
    goodput_requests_per_s REAL,
    exit_status INTEGER,
    verdict TEXT,
    indexed_at TEXT NOT NULL
);
CREATE INDEX runs_started ON runs (started_at_us);
CREATE INDEX runs_parent ON runs (parent_test);
CREATE INDEX runs_name ON runs (name);
CREATE TABLE labels (
    path TEXT NOT NULL,
    label TEXT NOT NULL,
    added_at TEXT NOT NULL,
    PRIMARY KEY (path, label)
) WITHOUT ROWID;
CREATE INDEX labels_label ON labels (label);
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    text TEXT NOT NULL,
    added_at TEXT NOT NULL
);
CREATE INDEX notes_path ON notes (path);
";

pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), HistoryError> {
    // IMMEDIATE takes the write lock up front, so two processes opening a new
    // file at once cannot both create the schema.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")?;
    let found: Option<i64> =
        tx.query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))?;
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(HistoryError::TooNew {
            path: path.to_path_buf(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < SCHEMA_VERSION {
        for sql in &MIGRATIONS[found.max(0) as usize..] {
            tx.execute_batch(sql)?;
        }
        tx.execute("DELETE FROM schema_version", [])?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [SCHEMA_VERSION],
        )?;
    }
    tx.commit()?;
    Ok(())
}
