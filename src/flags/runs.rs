//! The flags of the commands that read finished runs: `history`, `label`, `note`,
//! `reindex`, `compare`, `regress`, `export` and `report`.

use super::*;

/// Where the history database is.
#[derive(Debug, Args, Clone)]
pub struct StoreArgs {
    /// The history database (default: $XDG_DATA_HOME/servebench/history.db, else
    /// ~/.local/share/servebench/history.db).
    #[arg(long, env = "SERVEBENCH_STORE", value_name = "PATH")]
    pub store: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only runs whose target URL contains this (case-insensitive).
    #[arg(long)]
    pub target: Option<String>,
    /// Only runs whose model contains this.
    #[arg(long)]
    pub model: Option<String>,
    /// Only runs whose workload name contains this.
    #[arg(long)]
    pub workload: Option<String>,
    /// Only runs carrying this label.
    #[arg(long)]
    pub label: Option<String>,
    /// Only runs started since a date or time (2026-11-20, 2026-11-20T08:00:00Z) or a
    /// span back from now (7d, 12h, 30m).
    #[arg(long)]
    pub since: Option<String>,
    /// At most this many runs (the newest).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Every matching row as JSON (all columns, labels and notes).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct LabelArgs {
    /// The run: its folder, its id as `#12` (from `servebench history`), or the start of
    /// its folder name.
    pub run: String,
    /// The label: one word such as `baseline` or `vllm-0.6.3`.
    pub name: String,
    /// Remove the label instead.
    #[arg(long)]
    pub remove: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct NoteArgs {
    /// The run: its folder, `#ID`, or the start of its folder name.
    pub run: String,
    /// The note.
    pub text: String,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ReindexArgs {
    /// Folder to scan (recursively) for run and test folders.
    pub dir: PathBuf,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The systems, the baseline first. Each is a run folder, a folder of run folders (one
    /// system's repeats), a test folder (the level holding its answer, or every level of a
    /// sweep), `label:NAME` or a bare label name (every run with that label), `#ID`, or the
    /// start of a run folder's name.
    pub systems: Vec<String>,
    /// A system made of every run with this label (repeatable; after the positional ones).
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
    /// GPUs serving each system, in order (one value for all): output per GPU-second
    /// (draft 6.2). Default: what each run recorded with `run --gpus`.
    #[arg(long, value_delimiter = ',')]
    pub gpus: Vec<f64>,
    /// Cost of each system in dollars per hour, in order (one value for all): output
    /// tokens per dollar (draft 6.2).
    #[arg(long, value_delimiter = ',')]
    pub cost_per_hour: Vec<f64>,
    /// Differences within this share of the baseline count as none: `5%` or `0.05`.
    #[arg(long, default_value = "5%", value_parser = parse_share)]
    pub tolerance: f64,
    /// The comparison as JSON instead of tables (fields in docs/compare.md).
    #[arg(long)]
    pub json: bool,
    /// Also write the comparison page as Markdown to FILE (tables; charts referenced).
    #[arg(long, value_name = "FILE")]
    pub md: Option<PathBuf>,
    /// Also write the comparison page as one self-contained HTML file (tables, a chart per
    /// key metric with every run, offline).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct RegressArgs {
    /// The baseline runs: a run folder, folder of runs, test folder, `label:NAME`, `#ID`,
    /// or a bare label name.
    #[arg(long)]
    pub baseline: String,
    /// The candidate runs (together one system), each as for --baseline.
    #[arg(required = true)]
    pub candidates: Vec<String>,
    /// A change within this share of the baseline never fails the gate: `5%` or `0.05`.
    #[arg(long, default_value = "5%", value_parser = parse_share)]
    pub tolerance: f64,
    /// The gate's result as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ExportFormatArg {
    /// One row per request (units in the column names).
    Csv,
    /// One row per run (give several folders for a table of runs).
    CsvSummary,
    /// vLLM `bench serve --save-result` JSON.
    Vllm,
    /// AIPerf `profile_export_aiperf.json`.
    Aiperf,
    /// AIPerf `profile_export.jsonl`.
    AiperfJsonl,
    /// requests.parquet, chunks.parquet and timeseries.parquet, into the folder -o names
    /// (required; created when missing; docs/parquet.md).
    Parquet,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run folder (several for csv-summary).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The format.
    #[arg(long, value_enum)]
    pub format: ExportFormatArg,
    /// Write here instead of to stdout. With --format parquet: the folder the three files go
    /// into (required; the run folder itself will do).
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run folder.
    pub dir: PathBuf,
    /// What to produce: `terminal` prints the report; `md` and `html` write report.md or
    /// report.html into the run folder (or to --output); `all` does the three.
    #[arg(long, value_enum, default_value = "terminal")]
    pub format: crate::report::output::Format,
    /// With --format md or html: write there instead of the run folder (`-`: stdout).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Every table in the terminal, not only the minimum report.
    #[arg(long)]
    pub detail: bool,
}
