//! Where rendered documents go: [`write`] is the one writer of every document's files
//! (`run.json`, `test.json`, `suite.json`, `profiles.json`, `report.md`, `report.html`, a
//! comparison's `--md` and `--html`). It takes any `report::output::Render`, the outputs a
//! command asks for and where each goes (`Files`: the folder's own names, or the user's
//! paths), renders them through the seam and writes each atomically. Here because
//! `execute`, `assemble` and scale-out's merge write a run's files as it ends, and the
//! commands in `cli` (`report`, `test`, `suite`, `compare`) the others.

use crate::clock::RunClock;
use crate::record::RequestRecord;
use crate::report::output::{render_each, Files, Output, Render, PAGES};
use crate::report::views::RunView;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Writes `text` to `path` through a temporary file beside it, so a reader never sees half
/// a file.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// Writes each of `outputs` of `doc` that `files` has a path for, in order, each atomically
/// (the page is built once for both of its forms). The texts are rendered up front; the
/// writes are lazy: each item writes one file and says where and whether it was written,
/// so a command can say so as it goes and stop at the first failure.
pub fn write<'a>(
    doc: &dyn Render,
    outputs: &[Output],
    files: &'a Files,
) -> impl Iterator<Item = (PathBuf, Result<()>)> + 'a {
    let wanted: Vec<Output> = outputs
        .iter()
        .copied()
        .filter(|&o| files.path(o).is_some())
        .collect();
    render_each(doc, &wanted)
        .into_iter()
        .filter_map(|(o, text)| {
            let path = files.path(o)?.to_path_buf();
            let written = write_atomic(&path, &text);
            Some((path, written))
        })
}

/// [`write`] to the end: the paths written, or the first failure.
pub fn write_all(doc: &dyn Render, outputs: &[Output], files: &Files) -> Result<Vec<PathBuf>> {
    write(doc, outputs, files)
        .map(|(path, written)| written.map(|()| path))
        .collect()
}

/// Writes a finished run's `run.json` into its folder.
pub fn write_run_report(report: &crate::artifacts::RunReport) -> Result<()> {
    let view = RunView {
        report,
        records: &[],
        detail: false,
    };
    write_all(&view, &[Output::Json], &view.files(&report.config.out_dir)).map(drop)
}

/// The records as `requests.jsonl` holds them (times in whole microseconds), so that the
/// reports a run writes are the ones `servebench report` rebuilds from its folder.
pub fn as_written(records: &[RequestRecord], clock: &RunClock) -> Vec<RequestRecord> {
    records
        .iter()
        .map(|r| crate::record::wire::WireRecord::from_record(r, clock).into_record(0))
        .collect()
}

/// Writes a run's `report.md` and `report.html` into its folder; returns their paths.
pub fn write_files(
    report: &crate::artifacts::RunReport,
    records: &[RequestRecord],
) -> Result<Vec<PathBuf>> {
    let view = RunView {
        report,
        records,
        detail: false,
    };
    write_all(&view, &PAGES, &view.files(&report.config.out_dir))
}
