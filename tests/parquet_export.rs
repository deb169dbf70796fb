//! Parquet files of a run against the built-in simulator (some requests failing, a warm-up
//! before the measurement), written by `run --parquet` and by `export --format parquet`,
//! read back with the Apache `parquet` crate and checked value by value against the run's
//! own `requests.jsonl` and `run.json`. (scripts/check-parquet.sh reads the same files
//! with pandas, Polars and DuckDB where they are installed.)

use crate::common::{servebench, temp_dir};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

type Row = BTreeMap<String, Field>;

/// Every row of a Parquet file, by column name.
fn read(path: &Path) -> Vec<Row> {
    let reader = SerializedFileReader::try_from(path)
        .unwrap_or_else(|e| panic!("{} is not a Parquet file: {e}", path.display()));
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            row.unwrap()
                .get_column_iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect()
}

/// A value as JSON, the way requests.jsonl and run.json write it (instants as integers).
fn json(f: &Field) -> Value {
    match f {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::from(*b),
        Field::Long(v) | Field::TimestampMicros(v) => Value::from(*v),
        Field::Double(v) => Value::from(*v),
        Field::Str(s) => Value::from(s.as_str()),
        other => panic!("a type the files do not use: {other:?}"),
    }
}

fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A run of 48 measured requests after 8 warm-up ones, on a simulator that fails some
/// with HTTP 500 and cuts some streams; `--parquet` writes the files into its folder.
fn run(root: &Path) -> std::path::PathBuf {
    let sim = root.join("faulty.toml");
    std::fs::write(
        &sim,
        "preset = \"fast\"\n[faults]\nerror_rate = 0.1\nerror_statuses = [500]\ncut_rate = 0.1\n",
    )
    .unwrap();
    let dir = root.join("run");
    let o = servebench(&[
        "run",
        "--sim-config",
        sim.to_str().unwrap(),
        "--requests",
        "48",
        "--concurrency",
        "4",
        "--warmup",
        "8",
        "--input-tokens",
        "16",
        "--output-tokens",
        "12",
        "--no-fluidity",
        "--max-failures",
        "0.9",
        "--no-gpu-metrics",
        "--no-store",
        "--parquet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("Wrote Parquet: "), "{err}");
    dir
}

/// requests.parquet holds every record of requests.jsonl, in order, with its values.
fn check_requests(rows: &[Row], records: &[Value]) {
    assert_eq!(rows.len(), records.len());
    for (index, (row, rec)) in rows.iter().zip(records).enumerate() {
        assert_eq!(json(&row["record_index"]), Value::from(index));
        for field in [
            "id",
            "phase",
            "sent_at_us",
            "first_token_at_us",
            "finished_at_us",
        ] {
            assert_eq!(json(&row[field]), rec[field], "{field} of {rec}");
        }
        for field in [
            "output_tokens",
            "input_tokens",
            "connect_ms",
            "reused_connection",
        ] {
            assert_eq!(json(&row[field]), rec[field], "{field} of {rec}");
        }
        for figure in ["ttft_ms", "tpot_ms", "e2e_ms", "user_idle_ms"] {
            assert_eq!(json(&row[figure]), rec[figure], "{figure} of {rec}");
        }
        let chunks = rec["chunks"].as_array().unwrap();
        assert_eq!(json(&row["chunks"]), Value::from(chunks.len()));
        let last = chunks.last().map_or(Value::Null, |c| c[0].clone());
        assert_eq!(json(&row["last_token_at_us"]), last);
        if rec["outcome"] == "ok" {
            assert_eq!(json(&row["outcome"]), "ok");
            assert_eq!(row["failure_kind"], Field::Null);
        } else {
            assert_eq!(json(&row["outcome"]), "failed");
            assert_eq!(json(&row["failure_kind"]), rec["outcome"]["kind"]);
            assert_eq!(json(&row["failure_detail"]), rec["outcome"]["detail"]);
        }
    }
}

/// chunks.parquet holds every chunk of every record, in order: arrival, tokens, the time
/// since the request was sent.
fn check_chunks(rows: &[Row], records: &[Value]) {
    let mut rows = rows.iter();
    for (index, rec) in records.iter().enumerate() {
        let sent = rec["sent_at_us"].as_u64();
        let chunks = rec["chunks"].as_array().unwrap();
        // Absent: 0 (the usual case); null: the whole answer was blank.
        let first = match rec.get("leading_blank_chunks") {
            None => 0,
            Some(Value::Null) => chunks.len(),
            Some(n) => n.as_u64().unwrap() as usize,
        };
        for (i, c) in chunks.iter().enumerate() {
            let row = rows.next().expect("a row per chunk");
            assert_eq!(json(&row["record_index"]), Value::from(index));
            assert_eq!(json(&row["request_id"]), rec["id"]);
            assert_eq!(json(&row["phase"]), rec["phase"]);
            assert_eq!(json(&row["chunk_index"]), Value::from(i));
            assert_eq!(json(&row["arrived_at_us"]), c[0]);
            assert_eq!(json(&row["tokens"]), c[1]);
            assert_eq!(json(&row["reasoning"]), false);
            let since = (c[0].as_u64().unwrap() - sent.unwrap()) as f64 / 1000.0;
            assert_eq!(json(&row["since_sent_ms"]), Value::from(since));
            // From the first token on, the gap to the chunk before: the ITL samples.
            let gap = (i > first).then(|| {
                (c[0].as_u64().unwrap() - chunks[i - 1][0].as_u64().unwrap()) as f64 / 1000.0
            });
            assert_eq!(json(&row["gap_ms"]), gap.map_or(Value::Null, Value::from));
            assert_eq!(json(&row["leading_blank"]), Value::from(i < first));
        }
    }
    assert!(rows.next().is_none(), "no rows beyond the records' chunks");
}

/// timeseries.parquet holds run.json's timeseries, second by second.
fn check_timeseries(rows: &[Row], report: &Value) {
    let seconds = report["timeseries"].as_array().unwrap();
    assert_eq!(rows.len(), seconds.len());
    let start = report["started_at_us"].as_u64().unwrap();
    for (row, s) in rows.iter().zip(seconds) {
        let at = start + s["t_s"].as_u64().unwrap() * 1_000_000;
        assert_eq!(json(&row["at_us"]), Value::from(at));
        for (name, value) in s.as_object().unwrap() {
            assert_eq!(&json(&row[name]), value, "{name} at {s}");
        }
    }
}

#[test]
fn a_run_as_parquet_equals_its_records() {
    let root = temp_dir("parquet");
    let dir = run(&root);
    let records = records(&dir);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    // The run as the simulator served it: a warm-up, failures of both kinds, whole answers.
    let phase = |p: &str| records.iter().filter(|r| r["phase"] == p).count();
    assert_eq!(phase("measure"), 48);
    assert!(phase("warmup") >= 8);
    let kinds: Vec<&Value> = records.iter().map(|r| &r["outcome"]["kind"]).collect();
    assert!(kinds.contains(&&Value::from("http_status")), "{kinds:?}");
    let requests = read(&dir.join("requests.parquet"));
    let chunks = read(&dir.join("chunks.parquet"));
    let timeseries = read(&dir.join("timeseries.parquet"));
    check_requests(&requests, &records);
    check_chunks(&chunks, &records);
    check_timeseries(&timeseries, &report);
    // Each successful request's tokens, added up over its chunks' rows (joined on
    // record_index: ids restart in each phase), are its count.
    let mut tokens: BTreeMap<i64, i64> = BTreeMap::new();
    for c in &chunks {
        let key = json(&c["record_index"]).as_i64().unwrap();
        *tokens.entry(key).or_default() += json(&c["tokens"]).as_i64().unwrap();
    }
    for r in requests.iter().filter(|r| json(&r["outcome"]) == "ok") {
        let key = json(&r["record_index"]).as_i64().unwrap();
        assert_eq!(Some(tokens[&key]), json(&r["output_tokens"]).as_i64());
    }
    // `export` writes the same files anywhere.
    let out = root.join("exported");
    let o = servebench(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "parquet",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for file in ["requests.parquet", "chunks.parquet", "timeseries.parquet"] {
        assert_eq!(read(&out.join(file)), read(&dir.join(file)), "{file}");
    }
    // Without -o there is nowhere to put three files: said, with the fix.
    let o = servebench(&["export", dir.to_str().unwrap(), "--format", "parquet"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("name a folder for them with -o"), "{err}");
}
