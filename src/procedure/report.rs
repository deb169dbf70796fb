//! `test.json`: the contract scripts and CI read after `servebench test` (documented in
//! docs/procedures.md). Each level's `summary` is exactly its `run.json` summary; `result`
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
#[derive(Debug, Clone, Serialize, Deserialize)]
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
