//! Run history: a SQLite index over the folders that `servebench run` and
//! `servebench test` write.
//!
//! Every run leaves a folder (`run.json`, `requests.jsonl`, ...) and every test
//! procedure a folder with `test.json` and one run folder per load level. Those
//! files stay the source of truth. Scanning hundreds of folders and parsing each
//! `run.json` on every `servebench history` would be slow, and labels ("baseline",
//! "before-upgrade") and free-text notes need somewhere to live, so this module
//! keeps a small database beside them:
//!
//! * `runs`: one row per indexed folder (kind `run` or `test`), keyed by the
//!   folder's canonical absolute path, with only the columns needed to list,
//!   filter and pick runs for `compare`/`regress`. Everything in it can be
//!   rebuilt from the folders with [`History::reindex`], so the row id of a
//!   run may change across a rebuild.
//! * `labels` and `notes`: what the user said about a run. They cannot be
//!   rebuilt, so they are keyed by the folder path rather than the row id:
//!   they survive a reindex, and reattach if a folder that disappeared (an
//!   unmounted disk) comes back.
//! * `schema_version`: one row with the version of the layout above (1), so
//!   that a later servebench can migrate an old database in place and an old
//!   servebench refuses a newer one instead of misreading it.
//!
//! `workload_key` is computed here because `run.json` does not carry a hash of
//! the workload: it is the FNV-1a 64-bit hash, as 16 lowercase hex digits,
//! of the compact JSON text `{"seed":S,"workload":W}` (with `"dataset":D`
//! first when the run read a `--dataset`) where `S` is `/config/seed`, `W` is
//! `/config/workload` and `D` is `/config/dataset_info`, with the keys of every
//! object sorted (byte order) at every depth (see
//! [`crate::artifacts::fingerprint`]). Two runs with the same key were offered
//! the same requests; runs missing either value get no key, since without a
//! seed the requests are not reproducible.
//!
//! A test folder gives one row of kind `test` (name, start, compliance
//! verdict) plus one row of kind `run` per level, linked by `parent_test`.
//! The test row also carries the descriptive columns (target, model, engine,
//! workload, ...) on which all its readable levels agree, so that filtering
//! by model finds the test and not only its runs; its metrics stay NULL,
//! since a test has no single TTFT.
//!
//! A test folder whose `test.json` has no `levels` list is read as the list of
//! its subfolders that hold a `run.json`.
//!
//! This file holds the error and reference types, opening, labels and notes,
//! and [`record_folder`] (what `servebench run` calls when a run ends, and what
//! a test procedure calls for its folder); `history/schema.rs` holds the schema
//! and its migration, and `history/rows.rs` the rows and reports handed back;
//! `history/index.rs` reads folders into rows (`index`, `reindex`) through the
//! typed views of `history/view.rs` (what the index reads of run.json and
//! test.json, field by field, tolerant of older and partial files), with
//! `history/columns.rs` turning the views into columns (`workload_key`, the
//! load in words), and `history/query.rs` lists and looks them up (`list`,
//! `get`, `runs_with_label`, resolving a [`RunRef`]).

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode};

use crate::store::folder::{RUN_JSON, TEST_JSON};

mod columns;
mod index;
mod query;
mod rows;
mod schema;
#[cfg(test)]
mod tests;
mod view;

pub use columns::workload_key;
pub use rows::{Filter, Indexed, ReindexReport, RunRow, Unreadable};
use schema::migrate;
pub use schema::SCHEMA_VERSION;

/// SQLite expression for "now" in the same ISO 8601 form run.json uses.
const NOW_SQL: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// The index of run and test folders; see the module documentation.
pub struct History {
    conn: Connection,
}

/// Everything that can go wrong; each message says what to do about it.
#[derive(thiserror::Error, Debug)]
pub enum HistoryError {
    /// The database file could not be created or opened.
    #[error("cannot open the history database {path}: {source}; check that its folder is writable, or pass --store PATH")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// The file exists but is not SQLite.
    #[error("{path} is not a servebench history database; move it away or pass --store with another path")]
    NotADatabase { path: PathBuf },
    /// The database was written by a newer servebench.
    #[error("the history database {path} has schema version {found}, newer than this servebench understands ({supported}); upgrade servebench or pass --store with another path")]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// A file or folder could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The folder has neither `run.json` nor `test.json`.
    #[error("{path} is not a run or test folder (no run.json or test.json); pass a folder written by `servebench run` or `servebench test`")]
    NotARunFolder { path: PathBuf },
    /// `run.json` or `test.json` is not a JSON object.
    #[error("{path} is not valid: {reason}; fix or remove the file, then index again")]
    Malformed { path: PathBuf, reason: String },
    /// SQLite stores paths as text, so a path must be UTF-8.
    #[error("{path} is not valid UTF-8; rename the folder to index it")]
    NonUtf8Path { path: PathBuf },
    /// No indexed run matches the reference.
    #[error("no indexed run matches {what}; `servebench history` lists runs with their ids (#N), or index the folder first")]
    NotFound { what: String },
    /// A name prefix matches several runs.
    #[error("{prefix:?} matches {} runs; give a longer prefix, a path or an id:{}", .candidates.len() + .more, list_candidates(.candidates, *.more))]
    Ambiguous {
        prefix: String,
        /// Id and path of the matches, newest first.
        candidates: Vec<(i64, PathBuf)>,
        /// Matches left out of `candidates` to keep the message short.
        more: usize,
    },
    /// A label that would be awkward to type or list.
    #[error("invalid label {label:?}: {reason}; labels are single words like `baseline` or `vllm-0.6.3` (use a note for free text)")]
    InvalidLabel { label: String, reason: &'static str },
    /// An empty note.
    #[error("a note needs some text")]
    EmptyNote,
    /// `Filter::since` is not a date SQLite understands.
    #[error("cannot read {value:?} as a date; give an ISO 8601 date or time such as 2026-11-20 or 2026-11-20T08:00:00Z")]
    InvalidSince { value: String },
    /// Anything else the database reported.
    #[error("history database error: {0}; the run folders are intact, so reindexing them into a new --store rebuilds everything but labels and notes")]
    Db(#[from] rusqlite::Error),
}

fn list_candidates(candidates: &[(i64, PathBuf)], more: usize) -> String {
    let mut text: String = candidates
        .iter()
        .map(|(id, path)| format!("\n  #{id} {}", path.display()))
        .collect();
    if more > 0 {
        text.push_str(&format!("\n  ... and {more} more"));
    }
    text
}

/// Whether a row is a single run or a test procedure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A folder with `run.json`.
    Run,
    /// A folder with `test.json` (its levels are rows of kind `Run`).
    Test,
}

impl Kind {
    /// The name stored in the database and shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Test => "test",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a user names a run on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRef {
    /// The row id shown by `servebench history` (not stable across a rebuild).
    Id(i64),
    /// The run folder (or its `run.json`/`test.json`), relative or absolute.
    Path(PathBuf),
    /// The start of the folder's name; an exact name wins over longer ones.
    Prefix(String),
}

impl RunRef {
    /// Reads a command-line argument: `#12` is an id, anything that exists on
    /// disk or contains a path separator is a path, anything else a name
    /// prefix. Bare digits are a prefix, not an id, because default folder
    /// names start with the date (`20261122-...`).
    pub fn parse(arg: &str) -> RunRef {
        if let Some(id) = arg.strip_prefix('#').and_then(|d| d.parse().ok()) {
            return RunRef::Id(id);
        }
        if arg.contains(std::path::MAIN_SEPARATOR) || arg.contains('/') || Path::new(arg).exists() {
            return RunRef::Path(PathBuf::from(arg));
        }
        RunRef::Prefix(arg.to_owned())
    }
}

impl fmt::Display for RunRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunRef::Id(id) => write!(f, "#{id}"),
            RunRef::Path(path) => write!(f, "{}", path.display()),
            RunRef::Prefix(prefix) => write!(f, "a name starting with {prefix:?}"),
        }
    }
}

impl History {
    /// `$XDG_DATA_HOME/servebench/history.db`, or
    /// `~/.local/share/servebench/history.db` when that is unset or relative
    /// (the XDG spec says to ignore relative values).
    pub fn default_path() -> PathBuf {
        default_path_from(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
    }

    /// Opens the database at `path`, creating the file, its folders and the
    /// schema if needed, and migrating an older schema.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|source| HistoryError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let open_err = |source| HistoryError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        // A `servebench run` indexing its folder while `history` lists must
        // wait for the other's lock rather than fail at once.
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(open_err)?;
        migrate(&mut conn, path).map_err(|e| match e {
            HistoryError::Db(err) if err.sqlite_error_code() == Some(ErrorCode::NotADatabase) => {
                HistoryError::NotADatabase {
                    path: path.to_path_buf(),
                }
            }
            other => other,
        })?;
        conn.execute_batch("PRAGMA foreign_keys = ON")?;
        Ok(History { conn })
    }

    /// Adds a label to a run (a run has any number; adding one twice is a
    /// no-op).
    pub fn label(&mut self, run: &RunRef, label: &str) -> Result<(), HistoryError> {
        let label = check_label(label)?;
        let (_, path) = self.resolve(run)?;
        self.conn.execute(
            &format!(
                "INSERT OR IGNORE INTO labels (path, label, added_at) VALUES (?1, ?2, {NOW_SQL})"
            ),
            params![path, label],
        )?;
        Ok(())
    }

    /// Removes a label from a run; returns whether the run had it.
    pub fn unlabel(&mut self, run: &RunRef, label: &str) -> Result<bool, HistoryError> {
        let (_, path) = self.resolve(run)?;
        let removed = self.conn.execute(
            "DELETE FROM labels WHERE path = ?1 AND label = ?2",
            params![path, label.trim()],
        )?;
        Ok(removed > 0)
    }

    /// Appends a free-text note to a run.
    pub fn note(&mut self, run: &RunRef, text: &str) -> Result<(), HistoryError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(HistoryError::EmptyNote);
        }
        let (_, path) = self.resolve(run)?;
        self.conn.execute(
            &format!("INSERT INTO notes (path, text, added_at) VALUES (?1, ?2, {NOW_SQL})"),
            params![path, text],
        )?;
        Ok(())
    }
}

/// The database to use: `given` (from `--store` or `SERVEBENCH_STORE`, which
/// clap reads into the same flag) or [`History::default_path`].
pub fn store_path(given: Option<&Path>) -> PathBuf {
    given.map_or_else(History::default_path, Path::to_path_buf)
}

/// Indexes a finished run folder or test folder into the database at `store`
/// and attaches `labels` to it: what `servebench run` calls when a run ends,
/// and what a test procedure calls for its folder once `test.json` is written
/// (the levels are indexed with it). The folder stays the source of truth;
/// a caller should warn on an error, never lose the run over it.
pub fn record_folder(
    store: &Path,
    folder: &Path,
    labels: &[String],
) -> Result<Indexed, HistoryError> {
    // Checked before anything is written, so a bad label leaves no row behind.
    for label in labels {
        check_label(label)?;
    }
    let mut db = History::open(store)?;
    let indexed = db.index(folder)?;
    let run = RunRef::Id(indexed.id);
    for label in labels {
        db.label(&run, label)?;
    }
    Ok(indexed)
}

/// [`History::default_path`] with the environment passed in, for testing.
fn default_path_from(
    xdg_data_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> PathBuf {
    let data = match (xdg_data_home.map(PathBuf::from), home) {
        (Some(xdg), _) if xdg.is_absolute() => xdg,
        (_, Some(home)) if !home.is_empty() => PathBuf::from(home).join(".local/share"),
        // No usable home: keep the database beside the user rather than fail.
        _ => PathBuf::from("."),
    };
    data.join("servebench").join("history.db")
}

/// The label trimmed, or why it cannot be one (checked by `run --label`
/// before a run starts).
pub fn check_label(label: &str) -> Result<&str, HistoryError> {
    let label = label.trim();
    let reason = if label.is_empty() {
        Some("it is empty")
    } else if label.chars().count() > 64 {
        Some("it is longer than 64 characters")
    } else if label.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("it contains spaces or control characters")
    } else if label.contains(',') {
        Some("it contains a comma, which separates labels in listings")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(HistoryError::InvalidLabel {
            label: label.to_owned(),
            reason,
        }),
        None => Ok(label),
    }
}

/// The text key of a canonical path (SQLite keeps text, so it must be UTF-8).
fn path_key(path: &Path) -> Result<&str, HistoryError> {
    path.to_str().ok_or_else(|| HistoryError::NonUtf8Path {
        path: path.to_path_buf(),
    })
}

/// Canonical absolute form of a run or test folder; a path to its
/// `run.json`/`test.json` stands for the folder.
fn canonical_folder(path: &Path) -> Result<PathBuf, HistoryError> {
    let named_file = matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some(RUN_JSON | TEST_JSON)
    );
    match path.parent() {
        Some(parent) if named_file && path.is_file() => canonical_dir(parent),
        _ => canonical_dir(path),
    }
}

fn canonical_dir(path: &Path) -> Result<PathBuf, HistoryError> {
    // An empty parent ("run.json" alone) means the current directory.
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    fs::canonicalize(path).map_err(|source| HistoryError::Io {
        path: path.to_path_buf(),
        source,
    })
}
