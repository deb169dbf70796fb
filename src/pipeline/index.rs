//! The last stage of every run, test and merge: the finished folder indexed in the history
//! database (`store::history`). The folder is the truth; a failure to index warns and never
//! costs a run, since `servebench reindex` adds it later.

use crate::store::history::{self, store_path};
use std::path::Path;

/// Indexes a finished run (or test) folder with its labels; prints a warning instead of
/// failing, since the folder holds everything and `servebench reindex` can add it later.
/// Returns the row id when indexed.
pub fn record_run(store: Option<&Path>, dir: &Path, labels: &[String], quiet: bool) -> Option<i64> {
    let path = store_path(store);
    match history::record_folder(&path, dir, labels) {
        Ok(indexed) => {
            if !quiet {
                eprintln!(
                    "History: #{} in {} (`servebench history` lists runs)",
                    indexed.id,
                    path.display()
                );
            }
            Some(indexed.id)
        }
        Err(e) => {
            eprintln!(
                "WARNING: the run was not indexed in the history ({e}). Its folder {} is complete; `servebench reindex {}` adds it later.",
                dir.display(),
                dir.parent().unwrap_or(dir).display()
            );
            None
        }
    }
}
