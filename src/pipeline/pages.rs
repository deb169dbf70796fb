//! A run's pages, `report.md` and `report.html`, written into its folder from its report and
//! its records as `requests.jsonl` holds them. Here because `execute` and scale-out's merge
//! write them as a run ends, and `servebench report` writes the same pages again.

use crate::artifacts::RunReport;
use crate::record::RequestRecord;
use crate::report::run_page::{self, RunData};
use crate::store::RunFolder;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The page of a run: its report and the chart data of its records.
pub(crate) fn run_page(report: &RunReport, records: &[RequestRecord]) -> crate::report::page::Page {
    let data = RunData::of(report, records);
    run_page::page(report, &data)
}

/// Writes `text` to `path` through a temporary file beside it, so a reader never sees half
/// a report.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// The records as `requests.jsonl` holds them (times in whole microseconds), so that the
/// reports a run writes are the ones `servebench report` rebuilds from its folder.
pub fn as_written(records: &[RequestRecord], clock: &crate::clock::RunClock) -> Vec<RequestRecord> {
    records
        .iter()
        .map(|r| crate::record::wire::WireRecord::from_record(r, clock).into_record(0))
        .collect()
}

/// Writes `report.md` and `report.html` into the run folder; returns their paths.
pub fn write_files(report: &RunReport, records: &[RequestRecord]) -> Result<[PathBuf; 2]> {
    let page = run_page(report, records);
    let folder = RunFolder::new(&report.config.out_dir);
    let md = folder.report_md();
    let html = folder.report_html();
    write_atomic(&md, &page.to_markdown())?;
    write_atomic(&html, &page.to_html())?;
    Ok([md, html])
}
