//! A run folder's Parquet files (`export::parquet`): `requests.parquet` and
//! `chunks.parquet` from `requests.jsonl`, read one line at a time (a run of millions of
//! requests is written in the memory of one row group per file), and `timeseries.parquet`
//! from the report. `servebench export --format parquet` writes them into a folder of its
//! own; `run --parquet` into the run folder, after the run, off the measured path.

use crate::artifacts::RunReport;
use crate::config::RunConfig;
use crate::export::parquet::{timeseries, RecordTables, Rows};
use crate::store::folder::RunFolder;
use anyhow::{Context, Result};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// What was written, where.
#[derive(Debug, Clone)]
pub struct Written {
    pub requests: PathBuf,
    pub chunks: PathBuf,
    pub timeseries: PathBuf,
    pub rows: Rows,
    /// Rows of `timeseries.parquet`: seconds of the run.
    pub seconds: u64,
}

impl Written {
    /// One line for the terminal.
    pub fn describe(&self) -> String {
        format!(
            "{} ({} requests), {} ({} chunks), {} ({} seconds)",
            self.requests.display(),
            self.rows.requests,
            self.chunks.display(),
            self.rows.chunks,
            self.timeseries.display(),
            self.seconds
        )
    }
}

/// The file being written under a temporary name, renamed into place once whole, so a
/// reader never finds half a file under the final name.
fn temporary(path: &Path) -> PathBuf {
    path.with_extension("parquet.tmp")
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    Ok(BufWriter::with_capacity(1 << 20, file))
}

/// Writes the Parquet files of the run in `run_dir` (its `report` already read) into
/// `out_dir`, created when missing: `requests.parquet`, `chunks.parquet`,
/// `timeseries.parquet`, replacing files of those names.
pub fn write_files(run_dir: &Path, report: &RunReport, out_dir: &Path) -> Result<Written> {
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("creating the folder {}", out_dir.display()))?;
    let out = RunFolder::new(out_dir);
    let written = Written {
        requests: out.requests_parquet(),
        chunks: out.chunks_parquet(),
        timeseries: out.timeseries_parquet(),
        rows: Rows::default(),
        seconds: 0,
    };
    let finals = [&written.requests, &written.chunks, &written.timeseries];
    let result = write_temporary(run_dir, report, &written);
    if result.is_err() {
        for path in finals {
            let _ = std::fs::remove_file(temporary(path));
        }
    }
    let (rows, seconds) = result?;
    for path in finals {
        std::fs::rename(temporary(path), path)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(Written {
        rows,
        seconds,
        ..written
    })
}

/// The three files under their temporary names; the rows of each.
fn write_temporary(run_dir: &Path, report: &RunReport, paths: &Written) -> Result<(Rows, u64)> {
    let jsonl = RunFolder::new(run_dir).requests_jsonl();
    let mut tables = RecordTables::new(
        create(&temporary(&paths.requests))?,
        create(&temporary(&paths.chunks))?,
    )?;
    let mut failure: Option<::parquet::errors::ParquetError> = None;
    crate::store::run_dir::for_each_wire(&jsonl, |w| {
        if failure.is_none() {
            failure = tables.push(&w).err();
        }
    })?;
    if let Some(e) = failure {
        return Err(e).with_context(|| format!("writing {}", paths.requests.display()));
    }
    let (rows, requests, chunks) = tables
        .finish()
        .with_context(|| format!("writing {}", paths.chunks.display()))?;
    for w in [requests, chunks] {
        w.into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()
            .context("writing the Parquet files")?;
    }
    let (seconds, file) = timeseries::write(
        create(&temporary(&paths.timeseries))?,
        &report.timeseries,
        report.started_at_us,
    )
    .with_context(|| format!("writing {}", paths.timeseries.display()))?;
    file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok((rows, seconds))
}

/// After a run: writes its Parquet files into its folder when `--parquet` asked for them,
/// saying so on stderr. A failure is a warning: the run itself is complete, and
/// `servebench export DIR --format parquet -o DIR` writes them again.
pub fn write_after_run(config: &RunConfig, report: &RunReport) {
    if !config.parquet {
        return;
    }
    let dir = &config.out_dir;
    match write_files(dir, report, dir) {
        Ok(w) if !config.quiet => eprintln!("Wrote Parquet: {}", w.describe()),
        Ok(_) => {}
        Err(err) => eprintln!(
            "warning: the Parquet files were not written: {err:#}. The run itself is complete; `servebench export {} --format parquet -o {}` writes them again.",
            dir.display(),
            dir.display()
        ),
    }
}
