//! The output and telemetry groups of `run`'s flags: what is sampled beside the run, where
//! results go and how the run reports itself.

use super::*;

/// Server metrics, GPUs and energy beside the run.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Telemetry")]
pub struct TelemetryArgs {
    /// The server's Prometheus endpoint, scraped once a second (default: {server root}/metrics
    /// when it answers; vLLM, SGLang, TGI, llama.cpp with --metrics, TensorRT-LLM).
    #[arg(long)]
    pub metrics_url: Option<String>,
    /// Do not scrape the server's metrics.
    #[arg(long, conflicts_with = "metrics_url")]
    pub no_server_metrics: bool,
    /// A DCGM exporter's Prometheus endpoint for GPU figures (default: NVML on this machine,
    /// when its driver is installed).
    #[arg(long)]
    pub gpu_metrics_url: Option<String>,
    /// Do not measure GPUs.
    #[arg(long, conflicts_with = "gpu_metrics_url")]
    pub no_gpu_metrics: bool,
    /// Seconds of GPU power sampled before the run to know the idle draw.
    #[arg(long, default_value_t = 3.0)]
    pub idle_power_s: f64,
    /// After the run, export one OpenTelemetry span per request (its chunks' arrivals as
    /// events) to this OTLP/HTTP collector, e.g. http://127.0.0.1:4318 (POST
    /// {url}/v1/traces, JSON). Default: none.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

/// Where results go and how the run reports itself.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Run folder (default runs/<date>-<time>-<id>, never an existing one). An existing,
    /// non-empty folder is refused unless --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the contents of an existing --out folder.
    #[arg(long)]
    pub force: bool,
    /// Print every table after the short report (they are always in run.json).
    #[arg(long)]
    pub detail: bool,
    /// After the run, also write it as Parquet files into the run folder, for pandas,
    /// Polars or DuckDB: requests.parquet (a row per request), chunks.parquet (a row per
    /// streamed chunk) and timeseries.parquet (a row per second); docs/parquet.md lists
    /// the columns. Default: off (`servebench export DIR --format parquet` writes them
    /// later).
    #[arg(long)]
    pub parquet: bool,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// In a terminal, show a one-line progress bar instead of the live view (in flight,
    /// rates, tokens/s, TTFT and ITL over the last 10 s, failures by kind, the server's
    /// queue). Outside a terminal progress is always plain lines.
    #[arg(long)]
    pub no_live_view: bool,
    /// Worker threads of the client (default: all cores).
    #[arg(long)]
    pub client_threads: Option<usize>,
    /// Which clock timestamps chunk arrivals: kernel (the kernel's receive timestamp, where
    /// the OS gives one) or read (when the read returned).
    #[arg(long, value_enum, default_value = "kernel")]
    pub arrival_clock: crate::client::ArrivalClock,
    /// Open a new TCP (and TLS) connection for every request instead of reusing kept-alive
    /// ones, as real clients do (measures a server's connection handling; at hundreds of
    /// requests per second the client's ephemeral ports may run out).
    #[arg(long)]
    pub new_connection_per_request: bool,
    /// Requests kept in memory for an exact summary. Past this many, the run keeps none:
    /// each is summarised as it is written (counts exact, percentiles within 0.4 %, charts
    /// from a seeded sample of 2,000), so memory stays flat however long the run. Test
    /// levels always keep every request.
    #[arg(long, default_value_t = crate::store::kept::DEFAULT_EXACT_SUMMARY_LIMIT, value_name = "REQUESTS")]
    pub exact_summary_limit: usize,
    /// Label the run in the history (repeatable), e.g. `--label baseline`.
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
    /// The history database the finished run is indexed in (default:
    /// $XDG_DATA_HOME/servebench/history.db, else ~/.local/share/servebench/history.db).
    #[arg(long, env = "SERVEBENCH_STORE", value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Do not index the run in the history database.
    #[arg(long, conflicts_with = "labels")]
    pub no_store: bool,
}
