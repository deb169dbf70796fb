//! What the index reads of `run.json` and `test.json`, as typed views: [`RunView`] and
//! [`TestView`] name every field a column comes from, by the names the documents' types
//! (`artifacts::RunReport`, `procedure::report::TestReport`) serialise.
//!
//! Why views and not the documents' own types: the index reads every folder it finds,
//! including those of older servebench versions, partial documents (a run killed while
//! `run.json` still said `running`) and hand-edited ones, and fills what it can: a missing,
//! null or mistyped field leaves its column NULL and the rest of the row as it was. The
//! full types refuse such files whole. So every field here is [`Lenient`] (a value of the
//! wanted type, or nothing) and every nested object a [`Section`] (an object read as its
//! view, or nothing), and unknown fields are ignored.
//!
//! What keeps the views true to the types: a test (`history/tests/typed.rs`) writes a whole
//! `run.json` and a whole `test.json` from the real types, indexes them, and checks every
//! column the index fills holds the document's value. A field renamed in the types leaves
//! its column NULL there, and the test fails.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value as Json;

/// A field read as `T`, or `None` when the document lacks it, holds null, or holds a value
/// of another type.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Lenient<T>(pub(super) Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Json::deserialize(d)?;
        Ok(Lenient(T::deserialize(value).ok()))
    }
}

impl<T: Clone> Lenient<T> {
    /// The value, when there is one.
    pub(super) fn get(&self) -> Option<T> {
        self.0.clone()
    }
}

impl Lenient<f64> {
    /// The number, when it is finite.
    pub(super) fn real(&self) -> Option<f64> {
        self.0.filter(|f| f.is_finite())
    }
}

impl Lenient<Int> {
    /// The integer, when there is one.
    pub(super) fn int(&self) -> Option<i64> {
        self.0.map(|i| i.0)
    }
}

/// A nested object read as its view `T`, or `None` when the document lacks it or holds
/// anything but an object there (an array is never read as a struct's fields in order).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Section<T>(pub(super) Option<T>);

impl<T> Default for Section<T> {
    fn default() -> Self {
        Section(None)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Section<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Section::of(&Json::deserialize(d)?))
    }
}

impl<T: DeserializeOwned> Section<T> {
    /// `value` read as `T` when it is an object.
    pub(super) fn of(value: &Json) -> Self {
        Section(match value {
            Json::Object(_) => T::deserialize(value).ok(),
            _ => None,
        })
    }
}

impl<T> Section<T> {
    /// The view, when the object was there.
    pub(super) fn view(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

/// An integer, also read from a float with no fractional part (some writers emit `200.0`)
/// as long as it is exactly representable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Int(pub(super) i64);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Json::deserialize(d)?;
        value
            .as_i64()
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            })
            .map(Int)
            .ok_or_else(|| D::Error::custom("not an integer"))
    }
}

/// What the index reads of `run.json` (`artifacts::RunReport`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RunView {
    pub schema_version: Lenient<Int>,
    /// ISO 8601 UTC.
    pub started_at: Lenient<String>,
    /// Unix µs.
    pub started_at_us: Lenient<Int>,
    /// Unix µs.
    pub finished_at_us: Lenient<Int>,
    pub interrupted: Lenient<bool>,
    pub command_line: Lenient<Vec<Json>>,
    pub config: Section<ConfigView>,
    pub server: Section<ServerView>,
    pub system: Section<SystemView>,
    pub host: Section<HostView>,
    pub summary: Section<SummaryView>,
    pub verdict: Section<VerdictView>,
}

impl RunView {
    /// The view of a parsed `run.json` (nothing, when it is not an object).
    pub(super) fn read(doc: &Json) -> RunView {
        Section::of(doc).0.unwrap_or_default()
    }
}

/// `run.json`'s `config` (`config::RunConfig`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ConfigView {
    pub target: Section<TargetView>,
    /// Kept as JSON: `workload_key` hashes it as written.
    pub workload: Lenient<Json>,
    /// Kept as JSON: `workload_key` hashes it as written.
    pub dataset_info: Lenient<Json>,
    /// Kept as JSON: `workload_key` hashes it as written.
    pub seed: Lenient<Json>,
    /// Kept as JSON: an unknown shape is written to its column as JSON (see [`LoadView`]).
    pub load: Lenient<Json>,
    pub limits: Section<LimitsView>,
}

/// `config.target` (`client::Target`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TargetView {
    pub url: Lenient<String>,
    pub endpoint: Lenient<String>,
    pub model: Lenient<String>,
}

/// `config.workload` (`workload::WorkloadSpec`), read from the JSON kept for its key.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WorkloadView {
    pub name: Lenient<String>,
}

/// `config.load` (`schedule::LoadPattern`, tagged by `model`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct LoadView {
    /// `closed`, `open` or `trace`.
    pub model: Lenient<String>,
    pub concurrency: Lenient<f64>,
    pub rate_per_s: Lenient<f64>,
    pub arrival: Section<ArrivalView>,
    pub speed: Lenient<f64>,
}

/// `config.load.arrival` (`schedule::Arrival`, tagged by `kind`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ArrivalView {
    pub kind: Lenient<String>,
    pub cv: Lenient<f64>,
}

/// `config.limits` (`config::Limits`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct LimitsView {
    pub requests: Lenient<Int>,
    /// Seconds.
    pub duration: Lenient<f64>,
}

/// `server` (`record::run::ServerInfo`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ServerView {
    pub engine: Lenient<String>,
    pub version: Lenient<String>,
}

/// `system` (`artifacts::SystemInfo`); kept as JSON, since older files hold other shapes
/// (a list of GPUs), written to their columns as JSON.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct SystemView {
    pub hardware: Lenient<Json>,
    pub gpus: Lenient<Json>,
}

/// `host` (`artifacts::HostInfo`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct HostView {
    pub hostname: Lenient<String>,
}

/// `summary` (`metrics::RunSummary`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct SummaryView {
    pub requests: Section<RequestsView>,
    pub window: Section<WindowView>,
    pub ttft_ms: Section<DistributionView>,
    pub tpot_ms: Section<DistributionView>,
    pub itl_ms: Section<DistributionView>,
    pub e2e_ms: Section<DistributionView>,
    pub output_tokens_per_s: Lenient<f64>,
    pub requests_per_s: Lenient<f64>,
    pub success_rate: Lenient<f64>,
    pub slo: Section<SloView>,
}

/// `summary.requests`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RequestsView {
    pub total: Lenient<Int>,
    pub completed: Lenient<Int>,
    pub failed: Lenient<Int>,
}

/// `summary.window`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WindowView {
    pub duration_s: Lenient<f64>,
}

/// A distribution of the summary (`stats::Distribution`), ms.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct DistributionView {
    pub p50: Lenient<f64>,
    pub p99: Lenient<f64>,
}

/// `summary.slo`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct SloView {
    pub spec: Lenient<String>,
    pub per_request: Section<PerRequestSloView>,
}

/// `summary.slo.per_request`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct PerRequestSloView {
    pub goodput_requests_per_s: Lenient<f64>,
}

/// `verdict` (`artifacts::Verdict`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct VerdictView {
    pub exit_status: Lenient<Int>,
}

/// What the index reads of `test.json` (`procedure::report::TestReport`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TestView {
    /// The test's name.
    pub test: Lenient<String>,
    pub schema_version: Lenient<Int>,
    /// ISO 8601 UTC.
    pub started_at: Lenient<String>,
    /// Unix µs.
    pub started_at_us: Lenient<Int>,
    /// Unix µs.
    pub finished_at_us: Lenient<Int>,
    pub interrupted: Lenient<bool>,
    pub command_line: Lenient<Vec<Json>>,
    pub exit_status: Lenient<Int>,
    /// The one-line answer.
    pub answer: Lenient<String>,
    pub compliance: Section<ComplianceView>,
    /// `None`: no list (the levels are then the subfolders holding a `run.json`).
    pub levels: Lenient<Vec<Section<LevelView>>>,
}

impl TestView {
    /// The view of a parsed `test.json` (nothing, when it is not an object).
    pub(super) fn read(doc: &Json) -> TestView {
        Section::of(doc).0.unwrap_or_default()
    }
}

/// `test.json`'s `compliance`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ComplianceView {
    pub verdict: Lenient<String>,
}

/// An entry of `test.json`'s `levels` (`procedure::LevelOutcome`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct LevelView {
    /// The level's run folder, relative to the test folder.
    pub run: Lenient<String>,
}
