//! The names of the files servebench writes, in one place.
//!
//! A run folder, a test folder and a suite folder are read and written by many commands
//! (`run`, `report`, `test`, `suite`, `compare`, `export`, `merge`, `history`), and the file
//! names in them are the on-disk contract users' scripts rely on. Each name is spelt once
//! here, as a constant, and [`RunFolder`], [`TestFolder`] and [`SuiteFolder`] give each
//! file's path, so a file cannot be written under one name and looked for under another.

use std::path::{Path, PathBuf};

/// The run's document: its configuration and, once finished, its summary.
pub const RUN_JSON: &str = "run.json";
/// `run.json` being written (renamed into place, so a reader never sees half of it).
pub const RUN_JSON_TMP: &str = "run.json.tmp";
/// One line per request, streamed while the run goes on.
pub const REQUESTS_JSONL: &str = "requests.jsonl";
/// The client's and the server's figures, one second at a time.
pub const TIMESERIES_CSV: &str = "timeseries.csv";
/// `--parquet` (and `export --format parquet`): one row per request.
pub const REQUESTS_PARQUET: &str = "requests.parquet";
/// `--parquet`: one row per streamed chunk of every request.
pub const CHUNKS_PARQUET: &str = "chunks.parquet";
/// `--parquet`: one row per second of the run (`timeseries.csv`'s columns).
pub const TIMESERIES_PARQUET: &str = "timeseries.parquet";
/// The isolated prefill profile measured before the run (fluidity-index).
pub const PREFILL_CURVE_JSON: &str = "prefill-curve.json";
/// The folder's page, in Markdown.
pub const REPORT_MD: &str = "report.md";
/// The folder's page, self-contained HTML with its charts.
pub const REPORT_HTML: &str = "report.html";
/// A test procedure's document.
pub const TEST_JSON: &str = "test.json";
/// `test.json` being written.
pub const TEST_JSON_TMP: &str = "test.json.tmp";
/// A suite's document: its tests and where their folders are.
pub const SUITE_JSON: &str = "suite.json";
/// `suite --profiles`' document: each profile's suite and its tests.
pub const PROFILES_JSON: &str = "profiles.json";
/// A scale-out shard's record, written last: its presence means the shard is done.
pub const SHARD_JSON: &str = "shard.json";
/// `shard.json` being written.
pub const SHARD_JSON_TMP: &str = "shard.json.tmp";
/// How `merge` put the shards together.
pub const MERGE_JSON: &str = "merge.json";

/// A run folder (the `--out` of `servebench run`, a test's level, a shard, a merged run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFolder {
    dir: PathBuf,
}

impl RunFolder {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The folder itself.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn run_json(&self) -> PathBuf {
        self.dir.join(RUN_JSON)
    }

    pub fn run_json_tmp(&self) -> PathBuf {
        self.dir.join(RUN_JSON_TMP)
    }

    pub fn requests_jsonl(&self) -> PathBuf {
        self.dir.join(REQUESTS_JSONL)
    }

    pub fn timeseries_csv(&self) -> PathBuf {
        self.dir.join(TIMESERIES_CSV)
    }

    pub fn requests_parquet(&self) -> PathBuf {
        self.dir.join(REQUESTS_PARQUET)
    }

    pub fn chunks_parquet(&self) -> PathBuf {
        self.dir.join(CHUNKS_PARQUET)
    }

    pub fn timeseries_parquet(&self) -> PathBuf {
        self.dir.join(TIMESERIES_PARQUET)
    }

    pub fn prefill_curve_json(&self) -> PathBuf {
        self.dir.join(PREFILL_CURVE_JSON)
    }

    pub fn report_md(&self) -> PathBuf {
        self.dir.join(REPORT_MD)
    }

    pub fn report_html(&self) -> PathBuf {
        self.dir.join(REPORT_HTML)
    }

    pub fn shard_json(&self) -> PathBuf {
        self.dir.join(SHARD_JSON)
    }

    pub fn shard_json_tmp(&self) -> PathBuf {
        self.dir.join(SHARD_JSON_TMP)
    }

    pub fn merge_json(&self) -> PathBuf {
        self.dir.join(MERGE_JSON)
    }

    /// Whether the folder holds a run (its `run.json` is a file).
    pub fn holds_run(&self) -> bool {
        self.run_json().is_file()
    }
}

/// A test folder: `test.json`, the pages, and one run folder per level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestFolder {
    dir: PathBuf,
}

impl TestFolder {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The folder itself.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn test_json(&self) -> PathBuf {
        self.dir.join(TEST_JSON)
    }

    pub fn test_json_tmp(&self) -> PathBuf {
        self.dir.join(TEST_JSON_TMP)
    }

    pub fn report_md(&self) -> PathBuf {
        self.dir.join(REPORT_MD)
    }

    pub fn report_html(&self) -> PathBuf {
        self.dir.join(REPORT_HTML)
    }

    /// Whether the folder holds a test (its `test.json` is a file).
    pub fn holds_test(&self) -> bool {
        self.test_json().is_file()
    }

    /// A level's run folder, as `test.json`'s `levels[].run` names it (relative to the
    /// test folder).
    pub fn level(&self, run: impl AsRef<Path>) -> RunFolder {
        RunFolder::new(self.dir.join(run))
    }
}

/// A suite folder: `suite.json`, the pages, and one test folder per test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteFolder {
    dir: PathBuf,
}

impl SuiteFolder {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The folder itself.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn suite_json(&self) -> PathBuf {
        self.dir.join(SUITE_JSON)
    }

    pub fn report_md(&self) -> PathBuf {
        self.dir.join(REPORT_MD)
    }

    pub fn report_html(&self) -> PathBuf {
        self.dir.join(REPORT_HTML)
    }

    /// Whether the folder holds a suite (its `suite.json` is a file).
    pub fn holds_suite(&self) -> bool {
        self.suite_json().is_file()
    }

    /// A test's folder, as `suite.json`'s `tests[].folder` names it (relative to the suite
    /// folder).
    pub fn test(&self, folder: impl AsRef<Path>) -> TestFolder {
        TestFolder::new(self.dir.join(folder))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_named_inside_its_folder() {
        let run = RunFolder::new("out");
        assert_eq!(run.run_json(), Path::new("out/run.json"));
        assert_eq!(run.requests_jsonl(), Path::new("out/requests.jsonl"));
        assert_eq!(run.report_html(), Path::new("out/report.html"));
        let test = TestFolder::new("t");
        assert_eq!(test.test_json(), Path::new("t/test.json"));
        assert_eq!(
            test.level("levels/01").prefill_curve_json(),
            Path::new("t/levels/01/prefill-curve.json")
        );
        let suite = SuiteFolder::new("s");
        assert_eq!(suite.suite_json(), Path::new("s/suite.json"));
        assert_eq!(
            suite.test("ttft").report_md(),
            Path::new("s/ttft/report.md")
        );
    }
}
