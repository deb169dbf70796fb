//! The index's views against the real document types: a whole `run.json` written from
//! `RunReport` (the simulator fixture, with the parts it lacks filled in) fills every
//! column a run can fill, each with the document's own value. A field renamed in the
//! types (or in a view) leaves its column NULL here, and the test fails. (`test.json`'s
//! counterpart is in `procedure::report`'s tests: its type lives above `store`.)

use std::time::Duration;

use crate::artifacts::RunReport;
use crate::schedule::{Arrival, LoadPattern};
use crate::store::write_run_json;

use super::super::columns::DATA_COLUMNS;
use super::super::{workload_key, RunRef, RunRow};
use super::Scratch;

/// A real run.json of the simulator (`tests/fixtures/run-sim`).
const FIXTURE: &str = include_str!("../../../../tests/fixtures/run-sim/run.json");

/// Columns only a test (or a test's level, through its parent) fills.
const TEST_ONLY: [&str; 3] = ["test_name", "verdict", "answer"];

/// The fixture's report, with what it lacks for every column: a duration limit,
/// hardware and GPUs.
fn full_report() -> RunReport {
    let mut report: RunReport = serde_json::from_str(FIXTURE).expect("the fixture reads");
    report.config.limits.duration = Some(Duration::from_secs_f64(120.5));
    report.system.hardware = Some("8x H100 SXM".into());
    report.system.gpus = Some(8);
    assert!(report.summary.slo.is_some(), "the fixture ran with an SLO");
    report
}

/// Indexes `report` as the run.json of a new folder; its row.
fn index(tmp: &Scratch, name: &str, report: &RunReport) -> (i64, RunRow) {
    let dir = tmp.0.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    write_run_json(&dir, &serde_json::to_value(report).unwrap()).unwrap();
    let mut db = tmp.db();
    let id = db.index(&dir).unwrap().id;
    let row = db.get(&RunRef::Id(id)).unwrap();
    (id, row)
}

#[test]
fn a_run_json_from_the_types_fills_every_column_of_a_run() {
    let tmp = Scratch::new();
    let report = full_report();
    let (id, _) = index(&tmp, "full", &report);
    let db = tmp.db();
    let null: Vec<&str> = DATA_COLUMNS
        .iter()
        .copied()
        .filter(|c| !TEST_ONLY.contains(c))
        .filter(|c| {
            let sql = format!("SELECT {c} IS NULL FROM runs WHERE id = ?1");
            db.conn
                .query_row(&sql, [id], |r| r.get::<_, bool>(0))
                .unwrap()
        })
        .collect();
    assert!(
        null.is_empty(),
        "columns left NULL by a whole run.json (a field renamed in the types or the views?): {null:?}"
    );
}

#[test]
fn each_column_holds_the_value_of_the_typed_report() {
    let tmp = Scratch::new();
    let r = full_report();
    let (_, row) = index(&tmp, "full", &r);
    let s = &r.summary;
    let c = &r.config;
    assert_eq!(row.schema_version, Some(r.schema_version.into()));
    assert_eq!(row.started_at.as_deref(), Some(r.started_at.as_str()));
    assert_eq!(row.started_at_us, Some(r.started_at_us as i64));
    assert_eq!(row.finished_at_us, Some(r.finished_at_us as i64));
    assert_eq!(row.interrupted, Some(r.interrupted));
    assert_eq!(row.command_line.as_ref(), Some(&r.command_line));
    let url = serde_json::to_value(&c.target.url).unwrap();
    assert_eq!(row.target.as_deref(), url.as_str());
    assert!(row.target.as_deref().unwrap().starts_with("http://"));
    assert_eq!(row.endpoint.as_deref(), Some("chat"));
    assert_eq!(row.model.as_deref(), Some(c.target.model.as_str()));
    assert_eq!(row.engine, r.server.engine);
    assert_eq!(row.engine_version, r.server.version);
    assert_eq!(row.workload.as_deref(), Some(c.workload.name.as_str()));
    let doc = serde_json::to_value(&r).unwrap();
    assert_eq!(row.workload_key, workload_key(&doc));
    assert_eq!(row.seed, Some(c.seed));
    assert_eq!(row.load.as_deref(), Some("closed c=4"));
    assert_eq!(row.limit_requests, c.limits.requests.map(|n| n as i64));
    assert_eq!(row.limit_duration_s, Some(120.5));
    assert_eq!(row.hardware.as_deref(), Some("8x H100 SXM"));
    assert_eq!(row.gpus.as_deref(), Some("8"));
    assert_eq!(row.hostname.as_deref(), Some(r.host.hostname.as_str()));
    let counts = &s.requests;
    assert_eq!(
        (row.requests_total, row.completed, row.failed),
        (
            Some(counts.total as i64),
            Some(counts.completed as i64),
            Some(counts.failed as i64)
        )
    );
    assert_eq!(row.duration_s, Some(s.window.duration_s));
    let p = |d: &Option<crate::stats::distribution::Distribution>| d.unwrap();
    assert_eq!(
        (row.ttft_p50_ms, row.ttft_p99_ms),
        (Some(p(&s.ttft_ms).p50), Some(p(&s.ttft_ms).p99))
    );
    assert_eq!(
        (row.tpot_p50_ms, row.tpot_p99_ms),
        (Some(p(&s.tpot_ms).p50), Some(p(&s.tpot_ms).p99))
    );
    assert_eq!(row.itl_p99_ms, Some(p(&s.itl_ms).p99));
    assert_eq!(
        (row.e2e_p50_ms, row.e2e_p99_ms),
        (Some(p(&s.e2e_ms).p50), Some(p(&s.e2e_ms).p99))
    );
    assert_eq!(row.output_tokens_per_s, Some(s.output_tokens_per_s));
    assert_eq!(row.requests_per_s, Some(s.requests_per_s));
    assert_eq!(row.success_rate, Some(s.success_rate));
    let slo = s.slo.as_ref().unwrap();
    assert_eq!(row.slo.as_deref(), Some(slo.spec.as_str()));
    assert_eq!(
        row.goodput_requests_per_s,
        slo.per_request.as_ref().map(|a| a.goodput_requests_per_s)
    );
    assert_eq!(row.exit_status, Some(r.verdict.exit_status.into()));
}

#[test]
fn every_load_pattern_of_the_types_is_described_in_words() {
    let tmp = Scratch::new();
    let mut r = full_report();
    for (i, (load, words)) in [
        (
            LoadPattern::Open {
                rate_per_s: 12.5,
                arrival: Arrival::Poisson,
            },
            "open 12.5 req/s poisson",
        ),
        (
            LoadPattern::Open {
                rate_per_s: 8.0,
                arrival: Arrival::Gamma { cv: 2.5 },
            },
            "open 8 req/s gamma cv=2.5",
        ),
        (LoadPattern::Trace { speed: 2.0 }, "trace speed=2"),
        (LoadPattern::Closed { concurrency: 64 }, "closed c=64"),
    ]
    .into_iter()
    .enumerate()
    {
        r.config.load = load;
        let (_, row) = index(&tmp, &format!("load{i}"), &r);
        assert_eq!(row.load.as_deref(), Some(words));
    }
}
