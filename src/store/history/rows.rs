//! The rows and reports the history hands back: one indexed folder as listed
//! ([`RunRow`]), the [`Filter`] that picks rows, and what indexing wrote or could
//! not read.

use std::path::PathBuf;

use super::Kind;

/// Which rows [`History::list`](super::History::list) returns; every field left
/// `None` matches all. Text filters are case-insensitive substrings, except
/// `label` (exact).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Part of the target URL.
    pub target: Option<String>,
    /// Part of the model name.
    pub model: Option<String>,
    /// Part of the workload name.
    pub workload: Option<String>,
    /// Part of the engine name (`vllm`, `sglang`, ...).
    pub engine: Option<String>,
    /// A label the run carries.
    pub label: Option<String>,
    /// Only runs or only tests.
    pub kind: Option<Kind>,
    /// Only the levels of this test (its row id).
    pub parent_test: Option<i64>,
    /// ISO 8601 lower bound on the start time (`2026-11-20`,
    /// `2026-11-20T08:00:00Z`); the caller turns "7d" into such a date.
    pub since: Option<String>,
    /// At most this many rows (the newest).
    pub limit: Option<usize>,
}

/// One indexed folder as listed. Missing values in the files are `None`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunRow {
    /// Row id (changes if the database is rebuilt; paths do not).
    pub id: i64,
    /// Run or test.
    pub kind: Kind,
    /// Canonical absolute path of the folder.
    pub path: PathBuf,
    /// The folder's name, which `RunRef::Prefix` matches.
    pub name: String,
    /// For a level of a test procedure: the test's row id.
    pub parent_test: Option<i64>,
    /// The test's name (`/test` of test.json), for tests and their levels.
    pub test_name: Option<String>,
    /// `/schema_version` of run.json or test.json.
    pub schema_version: Option<i64>,
    /// `/started_at`, or derived from `/started_at_us`.
    pub started_at: Option<String>,
    /// `/started_at_us`, or derived from `/started_at` (to the millisecond).
    pub started_at_us: Option<i64>,
    /// `/finished_at_us`.
    pub finished_at_us: Option<i64>,
    /// `/interrupted` (Ctrl-C).
    pub interrupted: Option<bool>,
    /// `/command_line`.
    pub command_line: Option<Vec<String>>,
    /// `/config/target/url`.
    pub target: Option<String>,
    /// `/config/target/endpoint` (`chat`, `completions`).
    pub endpoint: Option<String>,
    /// `/config/target/model`.
    pub model: Option<String>,
    /// `/server/engine`.
    pub engine: Option<String>,
    /// `/server/version`.
    pub engine_version: Option<String>,
    /// `/config/workload/name`.
    pub workload: Option<String>,
    /// Hash of workload and seed; see the module documentation.
    pub workload_key: Option<String>,
    /// `/config/seed`.
    pub seed: Option<u64>,
    /// `/config/load` in words: `closed c=64`, `open 12.5 req/s poisson`.
    pub load: Option<String>,
    /// `/config/limits/requests`.
    pub limit_requests: Option<i64>,
    /// `/config/limits/duration`, seconds.
    pub limit_duration_s: Option<f64>,
    /// `/system/hardware` (text, or compact JSON when structured).
    pub hardware: Option<String>,
    /// `/system/gpus` (text, or compact JSON when structured).
    pub gpus: Option<String>,
    /// `/host/hostname` of the machine that ran the client.
    pub hostname: Option<String>,
    /// `/summary/requests/total`.
    pub requests_total: Option<i64>,
    /// `/summary/requests/completed`.
    pub completed: Option<i64>,
    /// `/summary/requests/failed`.
    pub failed: Option<i64>,
    /// `/summary/window/duration_s`.
    pub duration_s: Option<f64>,
    /// `/summary/ttft_ms/p50`.
    pub ttft_p50_ms: Option<f64>,
    /// `/summary/ttft_ms/p99`.
    pub ttft_p99_ms: Option<f64>,
    /// `/summary/tpot_ms/p50`.
    pub tpot_p50_ms: Option<f64>,
    /// `/summary/tpot_ms/p99`.
    pub tpot_p99_ms: Option<f64>,
    /// `/summary/itl_ms/p99`.
    pub itl_p99_ms: Option<f64>,
    /// `/summary/e2e_ms/p50`.
    pub e2e_p50_ms: Option<f64>,
    /// `/summary/e2e_ms/p99`.
    pub e2e_p99_ms: Option<f64>,
    /// `/summary/output_tokens_per_s`.
    pub output_tokens_per_s: Option<f64>,
    /// `/summary/requests_per_s`.
    pub requests_per_s: Option<f64>,
    /// `/summary/success_rate` (0 to 1).
    pub success_rate: Option<f64>,
    /// `/summary/slo/spec`: the SLOs the run was judged by, as written.
    pub slo: Option<String>,
    /// `/summary/slo/per_request/goodput_requests_per_s`: requests per second
    /// that met every per-request bound.
    pub goodput_requests_per_s: Option<f64>,
    /// `/verdict/exit_status`.
    pub exit_status: Option<i64>,
    /// For tests: `/compliance/verdict` of test.json.
    pub verdict: Option<String>,
    /// For tests: `/answer` of test.json, the one-line answer.
    #[serde(default)]
    pub answer: Option<String>,
    /// When the row was last written (ISO 8601, UTC).
    pub indexed_at: String,
    /// Labels, sorted.
    pub labels: Vec<String>,
    /// Notes, oldest first.
    pub notes: Vec<String>,
}

/// A folder that could not be indexed, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Unreadable {
    /// The folder (or file) concerned.
    pub path: PathBuf,
    /// The error message.
    pub reason: String,
}

/// What [`History::index`](super::History::index) wrote.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Indexed {
    /// Row id of the folder.
    pub id: i64,
    /// Run or test.
    pub kind: Kind,
    /// Canonical path, the row's key.
    pub path: PathBuf,
    /// For a test: row ids of the levels indexed, in test.json order.
    pub levels: Vec<i64>,
    /// For a test: levels that could not be read (the test is indexed anyway,
    /// since an interrupted test has missing or partial levels).
    pub skipped: Vec<Unreadable>,
}

/// What [`History::reindex`](super::History::reindex) did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ReindexReport {
    /// Run rows written (test levels included).
    pub runs: usize,
    /// Test rows written.
    pub tests: usize,
    /// Rows dropped because their folder is gone.
    pub removed: usize,
    /// Folders left as they were because they could not be read.
    pub unreadable: Vec<Unreadable>,
}
