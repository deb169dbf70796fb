//! A finished folder read back: a run's report (rebuilt from `requests.jsonl` when the
//! run died before writing its summary: its `run.json` then still says `"status":
//! "running"`), a test's and a suite's documents with their levels' and tests' reports, and
//! their pages written again (`pipeline::pages`), as `run`, `test` and `suite` write them
//! as they end and `servebench report` does on demand.

use crate::artifacts::{RunReport, RunStart};
use crate::config::PrefillSetup;
use crate::metrics::fluidity::ProfiledCurve;
use crate::metrics::generator::GeneratorFacts;
use crate::pipeline::assemble::{assemble, Inputs};
use crate::pipeline::pages::write_all;
use crate::procedure::report::TestReport;
use crate::procedure::suite::SuiteDocument;
use crate::record::run::WarmupReport;
use crate::record::RequestRecord;
use crate::report::output::{Render, PAGES};
use crate::report::test_page::LevelReport;
use crate::report::views::{SuiteView, TestView};
use crate::store::folder::{RunFolder, SuiteFolder, TestFolder};
use crate::store::kept::Keeper;
use crate::store::run_dir::{earliest_us, for_each_request};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// A run folder's report: as written, or recovered. The flag says which.
pub fn load_or_recover(dir: &Path) -> Result<(RunReport, bool)> {
    let path = RunFolder::new(dir).run_json();
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} has no run.json: is it a run folder (the --out of `servebench run`)?",
            dir.display()
        )
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if value.get("status").and_then(|s| s.as_str()) == Some("running") {
        let start: RunStart = serde_json::from_value(value)
            .with_context(|| format!("{} is not a servebench run start", path.display()))?;
        return Ok((recover(dir, start)?, true));
    }
    let report: RunReport = serde_json::from_value(value).with_context(|| {
        format!(
            "{} is not a run.json this version of servebench reads",
            path.display()
        )
    })?;
    Ok((report, false))
}

/// Rebuilds the report of a run that died, from its records.
fn recover(dir: &Path, mut start: RunStart) -> Result<RunReport> {
    let folder = RunFolder::new(dir);
    let jsonl = folder.requests_jsonl();
    if !jsonl.exists() {
        bail!(
            "{} holds no requests.jsonl: the run died before its first request",
            dir.display()
        );
    }
    // The run folder may have moved since: write where it is now.
    start.config.out_dir = dir.to_path_buf();
    let anchor = earliest_us(&jsonl)?.min(start.started_at_us);
    // Read as the run kept them: every record up to its limit, streamed past it.
    let mut keeper = Keeper::for_run(&start.config);
    let mut last = 0;
    for_each_request(&jsonl, anchor, |r| {
        last = last.max(r.finished_at);
        keeper.add(r);
    })?;
    let kept = keeper.finish();
    let curve: Option<ProfiledCurve> = match &start.config.prefill {
        PrefillSetup::Curve(c) => Some(c.clone()),
        _ => std::fs::read(folder.prefill_curve_json())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok()),
    };
    let mut fluidity = start.config.fluidity.clone();
    fluidity.curve = curve.as_ref().map(|c| c.curve);
    fluidity.curve_source = match &curve {
        Some(c) => format!("recovered: profiled on {} at {}", c.target, c.created_at),
        None => "none recovered".into(),
    };
    let telemetry = crate::telemetry::TelemetryData {
        server_source: "not recorded: the run was interrupted".into(),
        gpu_source: "not recorded: the run was interrupted".into(),
        rapl_source: "not recorded: the run was interrupted".into(),
        ..Default::default()
    };
    let started = anchor;
    assemble(Inputs {
        start,
        records: &kept.records,
        streamed: kept.streamed.as_deref(),
        telemetry: &telemetry,
        idle_until: 0,
        end: last,
        generator: GeneratorFacts::default(),
        fluidity,
        warmup: WarmupReport {
            policy: "unknown (recovered from an interrupted run)".into(),
            ..Default::default()
        },
        prefill_profile: None,
        prefill_curve: curve,
        started_unix_us: started,
        finished_unix_us: started + last / 1_000,
        interrupted: true,
        recovered: true,
        extra_warnings: Vec::new(),
    })
}

/// The records of a run folder its page draws (read back relative to the earliest time in
/// them): every one, or past the run's exact-summary limit the summary's seeded sample of
/// the measured ones, read in the memory of the sample.
pub fn records_of(dir: &Path, report: &RunReport) -> Result<Vec<RequestRecord>> {
    let jsonl = RunFolder::new(dir).requests_jsonl();
    if !jsonl.exists() {
        return Ok(Vec::new());
    }
    let anchor = earliest_us(&jsonl)?.min(report.started_at_us);
    let mut keeper = Keeper::for_run(&report.config);
    for_each_request(&jsonl, anchor, |r| keeper.add(r))?;
    Ok(keeper.finish().records)
}

/// The `run.json` of each level of a test folder, by its folder (a level whose folder
/// cannot be read is left out of the per-level summaries, not of the tables, which come
/// from `test.json`).
pub fn level_reports(dir: &Path, r: &TestReport) -> Vec<(String, RunReport)> {
    r.levels
        .iter()
        .filter_map(|l| {
            load_or_recover(&dir.join(&l.run))
                .ok()
                .map(|(rep, _)| (l.run.clone(), rep))
        })
        .collect()
}

/// The levels as a test's view takes them.
pub fn as_levels(reports: &[(String, RunReport)]) -> Vec<LevelReport<'_>> {
    reports
        .iter()
        .map(|(folder, report)| LevelReport { folder, report })
        .collect()
}

/// Reads a test folder's `test.json`.
pub fn load_test(dir: &Path) -> Result<TestReport> {
    let path = TestFolder::new(dir).test_json();
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    crate::procedure::report::read_test_json(&text).with_context(|| {
        format!(
            "{} is not a test.json this version of servebench reads",
            path.display()
        )
    })
}

/// Writes `report.md` and `report.html` into a test folder; returns their paths.
pub fn write_test_files(dir: &Path, r: &TestReport) -> Result<Vec<PathBuf>> {
    let reports = level_reports(dir, r);
    let levels = as_levels(&reports);
    let view = TestView {
        report: r,
        levels: &levels,
    };
    write_all(&view, &PAGES, &view.files(dir))
}

/// Reads a suite folder's `suite.json`.
pub fn load_suite(dir: &Path) -> Result<SuiteDocument> {
    let path = SuiteFolder::new(dir).suite_json();
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a suite.json this version of servebench reads",
            path.display()
        )
    })
}

/// Each test of a suite folder's `suite.json`: its `test.json`, when it ran and the file
/// reads.
pub fn suite_tests(dir: &Path, suite: &SuiteDocument) -> Vec<Option<TestReport>> {
    let folder = SuiteFolder::new(dir);
    suite
        .tests
        .iter()
        .map(|e| {
            e.folder()
                .and_then(|f| load_test(folder.test(f).dir()).ok())
        })
        .collect()
}

/// Writes `report.md` and `report.html` into a suite folder, from its `suite.json` and each
/// test's `test.json`; returns their paths.
pub fn write_suite_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let suite = load_suite(dir)?;
    let tests = suite_tests(dir, &suite);
    let view = SuiteView {
        suite: &suite,
        tests: &tests,
    };
    write_all(&view, &PAGES, &view.files(dir))
}
