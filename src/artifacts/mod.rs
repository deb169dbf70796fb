//! The documents a run leaves behind, as types: `run.json` ([`RunReport`], with a committed
//! JSON Schema) and the facts it carries about the host, the tool and the clock. They live
//! apart from `report` (which renders them) so that the stages which read or write them
//! (store, compare, export, procedure, scaleout) do not reach into rendering, and the import
//! graph runs one way: artifacts sit above the stages whose results they hold (config,
//! metrics, record, telemetry) and below everything that reads them. The test and suite
//! documents are `procedure::report::TestReport` and `store::folder::SuiteFolder`'s.
//! `fingerprint` hashes what a run sent, for "were these runs offered the same requests?".

pub mod fingerprint;

use crate::config::RunConfig;
use crate::metrics::fluidity::ProfiledCurve;
use crate::metrics::RunSummary;
use crate::record::run::{GeneratorReport, ProfileReport, ServerInfo, WarmupReport};
use serde::Serialize;

/// Schema version of `run.json` and `requests.jsonl` (2: typed document, derived
/// per-request figures, reasoning tokens, nullable `sent_at_us`).
pub const SCHEMA_VERSION: u32 = 2;

/// Which tokenizer counted what (draft 4.4).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct TokenizerInfo {
    pub name: String,
    pub source: String,
    pub vocab_size: usize,
    /// `A` (each system's native tokenizer) or `B` (a declared reference tokenizer).
    pub counting_option: String,
    /// How special and template tokens are counted.
    pub special_tokens: String,
}

/// The machine the generator ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub os: String,
    pub arch: String,
    pub cpus: usize,
    pub cpu_model: String,
}

/// What the system under test is, as the user described it (draft C.1 and 4.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct SystemInfo {
    /// Accelerators, e.g. "H100 80GB x 8" (`--hardware`).
    pub hardware: Option<String>,
    /// GPUs serving the model (`--gpus`), for per-GPU normalisation.
    pub gpus: Option<u32>,
    /// Where the measurement boundary lies: engine, gateway or compound (`--sut-boundary`).
    pub sut_boundary: String,
    /// Free-form notes (`--note`), e.g. guardrail configuration.
    pub notes: Vec<String>,
}

/// Why the run ends with the exit status it does.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Verdict {
    /// The process exit status (0 success, 1 SLO or failure threshold not met, 2 unusable
    /// configuration or target, 130 interrupted).
    pub exit_status: u8,
    /// One line per reason, in the order they were checked.
    pub reasons: Vec<String>,
}

/// Everything a report shows about one run; serialised as `run.json`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct RunReport {
    pub schema_version: u32,
    pub tool: ToolInfo,
    /// ISO 8601 UTC with milliseconds.
    pub started_at: String,
    pub finished_at: String,
    pub started_at_us: u64,
    pub finished_at_us: u64,
    pub interrupted: bool,
    /// Rebuilt from `requests.jsonl` after the process died mid-run (`servebench report`).
    #[serde(default)]
    pub recovered: bool,
    /// The exact command line, credentials redacted.
    pub command_line: Vec<String>,
    pub host: HostInfo,
    pub system: SystemInfo,
    /// What the server said about itself.
    pub server: ServerInfo,
    pub config: RunConfig,
    pub tokenizer: TokenizerInfo,
    pub warmup: WarmupReport,
    /// The isolated prefill profile, when one ran.
    pub prefill_profile: Option<ProfileReport>,
    /// The prefill curve fluidity used, with where it was profiled.
    pub prefill_curve: Option<ProfiledCurve>,
    pub timing: TimingNotes,
    pub summary: RunSummary,
    /// The server's metrics, GPUs and energy over the measurement window.
    pub telemetry: crate::telemetry::TelemetrySummary,
    /// Per second of the run, client and telemetry series on one clock (also
    /// `timeseries.csv`).
    pub timeseries: Vec<crate::telemetry::timeline::TimelineRow>,
    pub generator: GeneratorReport,
    pub verdict: Verdict,
}

/// What `run.json` holds while a run is going: enough to recover the run from its
/// `requests.jsonl` if the process dies (`servebench report` does it).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RunStart {
    pub schema_version: u32,
    /// Always `running`: a `run.json` that still says so belongs to a run that never ended.
    pub status: String,
    pub tool: ToolInfo,
    pub started_at: String,
    pub started_at_us: u64,
    pub command_line: Vec<String>,
    pub host: HostInfo,
    pub system: SystemInfo,
    pub server: ServerInfo,
    pub tokenizer: TokenizerInfo,
    /// Isolated TTFT (P50, P99) per class from `--baseline`, for recovery.
    #[serde(default)]
    pub baseline: std::collections::BTreeMap<String, (f64, f64)>,
    pub config: RunConfig,
}

/// The tool that made the report.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

impl Default for ToolInfo {
    fn default() -> Self {
        Self {
            name: "servebench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// How times were taken, stated in every report.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct TimingNotes {
    pub clock: String,
    pub resolution_us: u32,
    /// `kernel_rx` or `read_return` (see `generator.arrival_clock`).
    pub arrival: String,
    pub ttft: String,
    pub percentiles: String,
}

impl TimingNotes {
    pub fn new(kernel: bool) -> Self {
        Self {
            clock: "monotonic, anchored once to the wall clock; times are Unix-epoch microseconds"
                .into(),
            resolution_us: 1,
            arrival: if kernel {
                "the kernel's receive timestamp of the bytes completing each SSE event (SO_TIMESTAMPNS), before any parsing".into()
            } else {
                "when the read of the bytes completing each SSE event returned, before any parsing".into()
            },
            ttft: "first answer event with non-blank text minus T_submit, the request's last byte written (the draft's Appendix B.1.1; the upload before it is upload_ms, E2E starts there too); role-only, empty, whitespace-only, usage-only and reasoning events never count (reasoning has its own time to first reasoning token)".into(),
            percentiles: "linear interpolation between closest ranks (type 7)".into(),
        }
    }
}
