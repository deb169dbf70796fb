//! The Parquet tables written and read back with the same crate's reader: every row and
//! value against the records they came from, across row groups; the documented schema
//! against the code's.

use super::super::fixture;
use super::table::Kind;
use super::*;
use crate::record::wire::{WireOutcome, WireRecord};
use ::parquet::file::reader::{FileReader, SerializedFileReader};
use ::parquet::record::Field;
use std::collections::BTreeMap;

/// A file's rows as maps from column name to value, and its footer's key-value pairs.
fn read(
    bytes: Vec<u8>,
) -> (
    Vec<BTreeMap<String, Field>>,
    BTreeMap<String, String>,
    usize,
) {
    let reader = SerializedFileReader::new(bytes::Bytes::from(bytes)).expect("a Parquet file");
    let meta = reader.metadata();
    let kv = meta
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
        .collect();
    let groups = meta.num_row_groups();
    let rows = reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            row.unwrap()
                .get_column_iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect();
    (rows, kv, groups)
}

fn long(f: &Field) -> Option<i64> {
    match f {
        Field::Long(v) | Field::TimestampMicros(v) => Some(*v),
        Field::Null => None,
        other => panic!("not an integer: {other:?}"),
    }
}

fn double(f: &Field) -> Option<f64> {
    match f {
        Field::Double(v) => Some(*v),
        Field::Null => None,
        other => panic!("not a double: {other:?}"),
    }
}

fn text(f: &Field) -> Option<&str> {
    match f {
        Field::Str(s) => Some(s),
        Field::Null => None,
        other => panic!("not a string: {other:?}"),
    }
}

fn flag(f: &Field) -> bool {
    match f {
        Field::Bool(b) => *b,
        other => panic!("not a boolean: {other:?}"),
    }
}

/// `records` through [`RecordTables`] with small row groups (3 requests, 16 chunks).
fn write(records: &[WireRecord]) -> (Rows, Vec<u8>, Vec<u8>) {
    let mut t = RecordTables::with_groups(Vec::new(), Vec::new(), 3, 16).unwrap();
    for w in records {
        t.push(w).unwrap();
    }
    t.finish().unwrap()
}

fn us(v: Option<u64>) -> Option<i64> {
    v.map(|v| v as i64)
}

#[test]
fn one_request_row_per_record_with_its_values() {
    let records = fixture::records();
    let (rows, requests, _) = write(&records);
    assert_eq!(rows.requests, records.len() as u64);
    let (read_back, kv, groups) = read(requests);
    assert_eq!(read_back.len(), records.len());
    assert_eq!(groups, records.len().div_ceil(3));
    assert_eq!(kv["servebench.table"], "requests");
    assert_eq!(kv["servebench.schema_version"], SCHEMA_VERSION);
    let mut failed = 0;
    for (i, (w, row)) in records.iter().zip(&read_back).enumerate() {
        assert_eq!(long(&row["record_index"]), Some(i as i64));
        let names: Vec<&String> = row.keys().collect();
        assert_eq!(names.len(), requests::COLUMNS.len());
        let d = w.derived.as_ref();
        assert_eq!(long(&row["id"]), Some(w.id as i64));
        assert_eq!(text(&row["phase"]), Some("measure"));
        assert_eq!(double(&row["ttft_ms"]), d.and_then(|d| d.ttft_ms));
        assert_eq!(double(&row["tpot_ms"]), d.and_then(|d| d.tpot_ms));
        assert_eq!(double(&row["e2e_ms"]), d.and_then(|d| d.e2e_ms));
        assert_eq!(
            long(&row["output_tokens"]),
            Some(i64::from(w.output_tokens))
        );
        assert_eq!(long(&row["input_tokens"]), Some(i64::from(w.input_tokens)));
        assert_eq!(long(&row["chunks"]), Some(w.chunks.len() as i64));
        assert_eq!(long(&row["sent_at_us"]), us(w.sent_at_us));
        assert_eq!(long(&row["first_token_at_us"]), us(w.first_token_at_us));
        assert_eq!(
            long(&row["last_token_at_us"]),
            us(w.chunks.last().map(|c| c.0))
        );
        assert_eq!(long(&row["finished_at_us"]), us(Some(w.finished_at_us)));
        assert_eq!(double(&row["connect_ms"]), Some(w.connect_ms));
        assert_eq!(flag(&row["reused_connection"]), w.reused_connection);
        let usage = w.usage.as_ref().map(|u| u.to_string());
        assert_eq!(text(&row["usage_json"]), usage.as_deref());
        match &w.outcome {
            WireOutcome::Ok(_) => {
                assert_eq!(text(&row["outcome"]), Some("ok"));
                assert_eq!(row["failure_kind"], Field::Null);
            }
            WireOutcome::Failed { kind, detail } => {
                failed += 1;
                assert_eq!(text(&row["outcome"]), Some("failed"));
                assert_eq!(text(&row["failure_kind"]), Some(kind.as_str()));
                assert_eq!(text(&row["failure_detail"]), Some(detail.as_str()));
            }
        }
    }
    assert!(failed > 0, "the fixture has failed requests");
}

#[test]
fn one_chunk_row_per_streamed_chunk() {
    let records = fixture::records();
    let (rows, _, chunks) = write(&records);
    let total: usize = records
        .iter()
        .map(|w| w.chunks.len() + w.reasoning_chunks.len())
        .sum();
    assert_eq!(rows.chunks, total as u64);
    let (read_back, kv, groups) = read(chunks);
    assert_eq!(read_back.len(), total);
    assert_eq!(groups, total.div_ceil(16));
    assert_eq!(kv["servebench.table"], "chunks");
    let mut rows = read_back.iter();
    for (index, w) in records.iter().enumerate() {
        let mut gaps = 0.0;
        let first = w
            .leading_blank_chunks
            .map_or(w.chunks.len(), |n| n as usize);
        for (i, &(at, tokens)) in w.chunks.iter().enumerate() {
            let row = rows.next().unwrap();
            assert_eq!(long(&row["record_index"]), Some(index as i64));
            assert_eq!(long(&row["request_id"]), Some(w.id as i64));
            assert_eq!(long(&row["chunk_index"]), Some(i as i64));
            assert_eq!(long(&row["arrived_at_us"]), Some(at as i64));
            assert_eq!(long(&row["tokens"]), Some(i64::from(tokens)));
            assert!(!flag(&row["reasoning"]));
            let since = double(&row["since_sent_ms"]).unwrap();
            assert_eq!(since, (at - w.sent_at_us.unwrap()) as f64 / 1000.0);
            gaps += double(&row["gap_ms"]).unwrap_or(0.0);
            assert_eq!(row["gap_ms"] == Field::Null, i <= first);
        }
        // The gaps add up to the span from the first token to the last chunk.
        if let (Some(first), Some(last)) = (w.chunks.get(first), w.chunks.last()) {
            assert!((gaps - (last.0 - first.0) as f64 / 1000.0).abs() < 1e-6);
        }
    }
    assert!(rows.next().is_none());
}

/// A record with reasoning chunks and leading blank chunks, and one whose answer was blank.
fn thinking_records() -> Vec<WireRecord> {
    let mut w = fixture::records().remove(0);
    w.id = 7;
    w.phase = crate::record::Phase::Warmup;
    w.sent_at_us = Some(1_000_000);
    w.chunks = vec![(1_002_000, 1), (1_003_000, 2), (1_004_500, 1)];
    w.leading_blank_chunks = Some(1);
    w.reasoning_chunks = vec![(1_001_000, 3), (1_001_250, 1)];
    let mut blank = w.clone();
    blank.id = 8;
    blank.reasoning_chunks.clear();
    blank.leading_blank_chunks = None;
    vec![w, blank]
}

#[test]
fn reasoning_and_blank_chunks_are_told_apart() {
    let (rows, _, chunks) = write(&thinking_records());
    assert_eq!(rows.chunks, 3 + 2 + 3);
    let (read_back, _, _) = read(chunks);
    let flags: Vec<(i64, bool, bool, i64)> = read_back
        .iter()
        .map(|r| {
            (
                long(&r["request_id"]).unwrap(),
                flag(&r["reasoning"]),
                flag(&r["leading_blank"]),
                long(&r["tokens"]).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        flags,
        [
            (7, false, true, 1),
            (7, false, false, 2),
            (7, false, false, 1),
            (7, true, false, 3),
            (7, true, false, 1),
            (8, false, true, 1),
            (8, false, true, 2),
            (8, false, true, 1),
        ]
    );
    assert_eq!(text(&read_back[0]["phase"]), Some("warmup"));
    // Answer gaps from the first token on; reasoning gaps from the first reasoning chunk.
    let gaps: Vec<Option<f64>> = read_back.iter().map(|r| double(&r["gap_ms"])).collect();
    assert_eq!(
        gaps,
        [None, None, Some(1.5), None, Some(0.25), None, None, None]
    );
    assert_eq!(double(&read_back[3]["since_sent_ms"]), Some(1.0));
}

#[test]
fn empty_tables_are_readable() {
    let (rows, requests, chunks) = write(&[]);
    assert_eq!(rows, Rows::default());
    assert!(read(requests).0.is_empty());
    assert!(read(chunks).0.is_empty());
    let (n, bytes) = timeseries::write(Vec::new(), &[], 0).unwrap();
    assert_eq!(n, 0);
    assert!(read(bytes).0.is_empty());
}

#[test]
fn the_timeseries_with_its_instants() {
    let report = fixture::report();
    let rows = &report.timeseries;
    assert!(!rows.is_empty());
    let (n, bytes) = timeseries::write(Vec::new(), rows, report.started_at_us).unwrap();
    assert_eq!(n, rows.len() as u64);
    let (read_back, kv, _) = read(bytes);
    assert_eq!(kv["servebench.table"], "timeseries");
    for (t, row) in rows.iter().zip(&read_back) {
        let at = report.started_at_us + t.t_s * 1_000_000;
        assert_eq!(long(&row["at_us"]), Some(at as i64));
        assert_eq!(long(&row["t_s"]), Some(t.t_s as i64));
        assert_eq!(text(&row["phase"]), Some(t.phase.as_str()));
        assert_eq!(long(&row["completions"]), Some(t.completions as i64));
        assert_eq!(long(&row["output_tokens"]), Some(t.output_tokens as i64));
        assert_eq!(double(&row["ttft_p50_ms"]), t.ttft_p50_ms);
        assert_eq!(double(&row["host_rss_mib"]), t.host_rss_mib);
    }
}

const FILES: [(&str, &[table::Column]); 3] = [
    ("requests.parquet", requests::COLUMNS),
    ("chunks.parquet", chunks::COLUMNS),
    ("timeseries.parquet", timeseries::COLUMNS),
];

/// `docs` with each file's table of columns, between `<!-- columns of FILE -->` and the
/// next `<!-- end of columns -->`, rendered from the code.
fn with_tables(docs: &str) -> String {
    let mut out = docs.to_owned();
    for (file, columns) in FILES {
        let start = format!("<!-- columns of {file} -->\n");
        let Some(from) = out.find(&start).map(|i| i + start.len()) else {
            panic!("docs/parquet.md has no `{}` marker", start.trim());
        };
        let to = from
            + out[from..]
                .find("<!-- end of columns -->")
                .expect("an end marker");
        out.replace_range(from..to, &markdown_table(columns));
    }
    out
}

/// docs/parquet.md shows every file's columns as the code writes them. To update it after
/// changing them: `SERVEBENCH_UPDATE_SCHEMA=1 cargo test --lib schema`.
#[test]
fn the_documented_parquet_schema_matches_the_columns() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/parquet.md");
    let committed = std::fs::read_to_string(path).unwrap();
    let generated = with_tables(&committed);
    if std::env::var_os("SERVEBENCH_UPDATE_SCHEMA").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    assert!(
        committed == generated,
        "docs/parquet.md's column tables are out of date: run SERVEBENCH_UPDATE_SCHEMA=1 cargo test --lib schema, and review the diff"
    );
}

#[test]
fn every_column_names_its_unit_once() {
    for (file, columns) in FILES {
        let mut names: Vec<&str> = columns.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), columns.len(), "{file}: a column twice");
        for c in columns {
            let unit_in_name = match (c.kind, c.unit) {
                (Kind::Time, _) => c.name.ends_with("_us"),
                (_, "ms") => c.name.ends_with("_ms"),
                (_, "tokens") => c.name.contains("tokens") || c.name == "deadline_misses",
                (_, "s") => c.name.ends_with("_s"),
                (_, "MiB") => c.name.ends_with("_mib"),
                _ => true,
            };
            assert!(
                unit_in_name,
                "{file}: {} does not name its unit {}",
                c.name, c.unit
            );
        }
    }
}
