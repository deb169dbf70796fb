//! A run as three Parquet files, for analysts' tools (pandas, Polars, DuckDB, Spark):
//! `requests.parquet` (one row per record of `requests.jsonl`), `chunks.parquet` (one row
//! per streamed chunk of every request) and `timeseries.parquet` (one row per second).
//! docs/parquet.md lists every column, rendered from the column lists here.
//!
//! Written with the Apache `parquet` crate's own column writers (no Arrow layer), Snappy
//! compressed, as flat columns of five types: 64-bit integers, doubles, UTF-8 strings,
//! booleans and UTC timestamps in microseconds. Records come in one at a time and rows
//! leave in row groups of bounded size, so a run of millions of requests is written in the
//! memory of one row group per file. Records in, bytes out to any writer: the files are
//! opened by `pipeline::parquet`.

pub mod chunks;
pub mod requests;
pub mod table;
pub mod timeseries;

use crate::record::wire::WireRecord;
use crate::record::Phase;
use std::io::Write;
use table::{Column, Table};

/// The version of the files' columns, in every file's footer (`servebench.schema_version`):
/// raised when a column changes meaning or goes, not when one is added.
pub const SCHEMA_VERSION: &str = "1";

/// A phase as requests.jsonl names it.
pub fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Warmup => "warmup",
        Phase::Probe => "probe",
        Phase::Profile => "profile",
        Phase::Measure => "measure",
    }
}

/// A unit enum's name as serde writes it (`server_usage`, …).
fn serde_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|j| j.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// How many rows each file got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rows {
    pub requests: u64,
    pub chunks: u64,
}

/// `requests.parquet` and `chunks.parquet` being written from the records, one at a time.
pub struct RecordTables<W: Write + Send> {
    requests: Table<W>,
    chunks: Table<W>,
    phases: chunks::Phases,
    /// The next record's line in requests.jsonl.
    index: u64,
}

impl<W: Write + Send> RecordTables<W> {
    /// Both tables, to `requests` and `chunks`.
    pub fn new(requests: W, chunks: W) -> parquet::errors::Result<Self> {
        Self::with_groups(
            requests,
            chunks,
            requests::ROWS_PER_GROUP,
            chunks::ROWS_PER_GROUP,
        )
    }

    /// Both tables with the given rows per row group (small ones in tests).
    pub fn with_groups(
        requests: W,
        chunks: W,
        request_rows: usize,
        chunk_rows: usize,
    ) -> parquet::errors::Result<Self> {
        Ok(RecordTables {
            requests: Table::new(requests, requests::COLUMNS, request_rows, "requests")?,
            chunks: Table::new(chunks, chunks::COLUMNS, chunk_rows, "chunks")?,
            phases: chunks::Phases::default(),
            index: 0,
        })
    }

    /// Adds one record: its row in `requests`, its chunks' rows in `chunks`.
    pub fn push(&mut self, w: &WireRecord) -> parquet::errors::Result<()> {
        let index = self.index;
        self.index += 1;
        self.requests.push(|r| requests::fill(r, index, w))?;
        chunks::push(&mut self.chunks, &self.phases, index, w)
    }

    /// Writes the last row groups and the footers; the rows written and both outputs
    /// (requests, chunks).
    pub fn finish(self) -> parquet::errors::Result<(Rows, W, W)> {
        let (requests, r) = self.requests.finish()?;
        let (chunks, c) = self.chunks.finish()?;
        Ok((Rows { requests, chunks }, r, c))
    }
}

/// A file's columns as the Markdown table docs/parquet.md shows (column, type, unit,
/// null, meaning).
pub fn markdown_table(columns: &[Column]) -> String {
    let mut out =
        String::from("| column | type | unit | null | meaning |\n|---|---|---|---|---|\n");
    for c in columns {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            c.name,
            c.kind.name(),
            c.unit,
            if c.nullable { "yes" } else { "no" },
            c.meaning
        ));
    }
    out
}

#[cfg(test)]
mod tests;
