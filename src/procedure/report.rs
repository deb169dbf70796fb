//! `test.json`: the contract scripts and CI read after `servebench test` (documented in
//! docs/procedures.md, its JSON Schema `docs/test.schema.json` generated from these types by
//! `report::schema`). Each level's `summary` is exactly its `run.json` summary; `result`
//! holds the test's derived points under the keys the documentation lists.

use super::compliance::Compliance;
use super::level::LevelOutcome;
use super::result::TestResult;
use super::TestName;
use crate::artifacts::{SystemInfo, ToolInfo};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the `test.json` layout.
pub const TEST_SCHEMA_VERSION: u32 = 1;

/// How the test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    /// Still running (the file is rewritten after every level).
    Running,
    /// Every planned level ran.
    Complete,
    /// Stopped early (`stopped` says why); the result holds what was learned.
    Incomplete,
}

/// The system under test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetInfo {
    /// The base URL requests went to, credentials redacted.
    pub url: String,
    /// The model served.
    pub model: String,
    /// The engine the server said it runs, when it said.
    pub engine: Option<String>,
    /// The engine's version, when the server said.
    pub engine_version: Option<String>,
    /// Labelled targets (`--target NAME=URL`), credentials redacted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub targets: BTreeMap<String, String>,
}

/// Everything `test.json` holds, its result typed by its test ([`TestResult`]).
pub type TestReport = TestReportOf<TestResult>;

/// `test.json` with its result as `R`: [`TestReport`] in the program; as read from disk,
/// `serde_json::Value` until [`TestReportOf::typed`] reads the result as its test's type.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "TestReport")]
pub struct TestReportOf<R> {
    pub schema_version: u32,
    pub test: TestName,
    /// The draft's section, e.g. `5.2`.
    pub section: String,
    pub title: String,
    pub status: TestStatus,
    /// Why the test stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The one-line answer printed first.
    pub answer: String,
    pub started_at: String,
    pub finished_at: String,
    /// Start and end as Unix microseconds (what the history sorts and filters by).
    #[serde(default)]
    pub started_at_us: u64,
    #[serde(default)]
    pub finished_at_us: u64,
    pub duration_s: f64,
    /// The exit status `servebench test` gave: 0 answered, 1 no answer, 130 interrupted.
    #[serde(default)]
    pub exit_status: u8,
    /// Ctrl-C stopped the test.
    #[serde(default)]
    pub interrupted: bool,
    pub tool: ToolInfo,
    /// The exact command line, credentials redacted.
    pub command_line: Vec<String>,
    pub target: TargetInfo,
    pub system: SystemInfo,
    /// The test's parameters: the common ones and its own.
    pub parameters: serde_json::Value,
    pub levels: Vec<LevelOutcome>,
    /// The derived points (keys per test in docs/procedures.md).
    pub result: R,
    pub compliance: Compliance,
}

impl TestReportOf<serde_json::Value> {
    /// The report with its result read as its test's type.
    pub fn typed(self) -> Result<TestReport, serde_json::Error> {
        let result = TestResult::read(self.test, self.result)?;
        Ok(TestReport {
            schema_version: self.schema_version,
            test: self.test,
            section: self.section,
            title: self.title,
            status: self.status,
            stopped: self.stopped,
            answer: self.answer,
            started_at: self.started_at,
            finished_at: self.finished_at,
            started_at_us: self.started_at_us,
            finished_at_us: self.finished_at_us,
            duration_s: self.duration_s,
            exit_status: self.exit_status,
            interrupted: self.interrupted,
            tool: self.tool,
            command_line: self.command_line,
            target: self.target,
            system: self.system,
            parameters: self.parameters,
            levels: self.levels,
            result,
            compliance: self.compliance,
        })
    }
}

/// Reads a `test.json`'s text, its result typed.
pub fn read_test_json(text: &str) -> Result<TestReport, serde_json::Error> {
    serde_json::from_str::<TestReportOf<serde_json::Value>>(text)?.typed()
}

/// What a procedure hands back.
#[derive(Debug, Clone)]
pub struct Finding {
    pub levels: Vec<LevelOutcome>,
    pub result: TestResult,
    pub answer: String,
    pub compliance: Compliance,
    /// Test-specific parameters, merged into `parameters`.
    pub parameters: serde_json::Value,
    /// Why it stopped early, if it did.
    pub stopped: Option<String>,
    /// The procedure's own verdict: false when it found nothing it could report (no level
    /// passed, or nothing ran).
    pub answered: bool,
}

#[cfg(test)]
mod tests {
    //! `test.json` as the history index reads it: a whole document written from these types
    //! fills every column of its test row with its own value, so a field renamed here (or in
    //! the index's view of it, `store::history`) fails this test.

    use super::*;
    use crate::artifacts::RunReport;
    use crate::procedure::compliance::Verdict;
    use crate::procedure::level::{LevelVerdict, Load, Role};
    use crate::store::history::{History, Kind, RunRef};
    use crate::store::{write_run_json, TestFolder};

    fn level(run: &RunReport) -> LevelOutcome {
        LevelOutcome {
            index: 0,
            label: "concurrency 4".into(),
            role: Role::Alone,
            load: Load::Concurrency { concurrency: 4 },
            target: None,
            run: "levels/01-c4".into(),
            summary: run.summary.clone(),
            outcomes: Default::default(),
            verdict: LevelVerdict::Pass,
            signals: Default::default(),
            slo: None,
            server: Default::default(),
            cache: Default::default(),
            reason: String::new(),
        }
    }

    fn report(run: &RunReport) -> TestReportOf<serde_json::Value> {
        TestReportOf {
            schema_version: TEST_SCHEMA_VERSION,
            test: TestName::Throughput,
            section: TestName::Throughput.section().into(),
            title: TestName::Throughput.title().into(),
            status: TestStatus::Complete,
            stopped: None,
            answer: "sustainable: 120 req/s".into(),
            started_at: "2026-11-26T10:00:00.000Z".into(),
            finished_at: "2026-11-26T10:00:09.000Z".into(),
            started_at_us: 1_795_000_000_000_000,
            finished_at_us: 1_795_000_009_000_000,
            duration_s: 9.0,
            exit_status: 1,
            interrupted: false,
            tool: ToolInfo::default(),
            command_line: vec!["servebench".into(), "test".into(), "throughput".into()],
            target: TargetInfo::default(),
            system: SystemInfo::default(),
            parameters: serde_json::json!({}),
            levels: vec![level(run)],
            result: serde_json::json!({}),
            compliance: Compliance {
                requirements: Vec::new(),
                verdict: Verdict::ConditionallyCompliant,
            },
        }
    }

    #[test]
    fn a_test_json_from_the_types_fills_every_column_of_its_test_row() {
        let root = std::env::temp_dir().join(format!("sb-test-json-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let folder = TestFolder::new(root.join("t"));
        let run: RunReport =
            serde_json::from_str(include_str!("../../tests/fixtures/run-sim/run.json")).unwrap();
        let r = report(&run);
        let level = folder.level(&r.levels[0].run);
        std::fs::create_dir_all(level.dir()).unwrap();
        write_run_json(level.dir(), &serde_json::to_value(&run).unwrap()).unwrap();
        // As `servebench test` writes it.
        std::fs::write(folder.test_json(), serde_json::to_vec_pretty(&r).unwrap()).unwrap();
        let mut db = History::open(&root.join("db/history.db")).unwrap();
        let indexed = db.index(folder.dir()).unwrap();
        assert_eq!((indexed.kind, indexed.levels.len()), (Kind::Test, 1));
        let row = db.get(&RunRef::Id(indexed.id)).unwrap();
        assert_eq!(row.test_name.as_deref(), Some("throughput"));
        assert_eq!(row.schema_version, Some(TEST_SCHEMA_VERSION.into()));
        assert_eq!(row.started_at.as_deref(), Some(r.started_at.as_str()));
        assert_eq!(row.started_at_us, Some(r.started_at_us as i64));
        assert_eq!(row.finished_at_us, Some(r.finished_at_us as i64));
        assert_eq!(row.interrupted, Some(false));
        assert_eq!(row.command_line.as_ref(), Some(&r.command_line));
        assert_eq!(row.exit_status, Some(1));
        assert_eq!(row.verdict.as_deref(), Some("conditionally compliant"));
        // What its one level holds is the test's too.
        assert_eq!(row.model.as_deref(), Some(run.config.target.model.as_str()));
        let level_row = db.get(&RunRef::Id(indexed.levels[0])).unwrap();
        assert_eq!(level_row.parent_test, Some(indexed.id));
        assert_eq!(level_row.test_name.as_deref(), Some("throughput"));
        drop(db);
        let _ = std::fs::remove_dir_all(&root);
    }
}
