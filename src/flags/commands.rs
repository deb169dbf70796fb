//! The flags of `workload show|export`, `profile-prefill` (the run options, plus its own)
//! and `selfbench`.

use super::*;

#[derive(Debug, Subcommand)]
pub enum WorkloadCommand {
    /// Print the resolved specification and P50/P95/P99 of the drawn lengths.
    Show(Box<WorkloadArgs>),
    /// Write the request sequence as JSONL to stdout (index, input_tokens, max_tokens,
    /// class, messages), for others to replay.
    Export(Box<WorkloadArgs>),
    /// List the workload profiles (`--profile ID`): group, latency class, token ranges,
    /// output structure, concurrency pattern, caching and SLO default.
    Profiles,
    /// Convert OpenTelemetry GenAI spans (OTLP JSON, one object or one per line) into agent
    /// sessions in servebench's session format, to replay with `run --dataset OUT`.
    ImportOtel {
        /// OTLP JSON traces (the OTLP/HTTP JSON exporter's bodies, or the collector's file
        /// exporter output).
        traces: std::path::PathBuf,
        /// Where to write the sessions (JSONL, one session a line).
        #[arg(long)]
        out: std::path::PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// Workload name or scenario .toml file (as `run --workload`).
    pub workload: Option<String>,
    /// Workload profile (as `run --profile`), e.g. CHAT.
    #[arg(long, value_name = "ID", conflicts_with_all = ["workload", "input_tokens", "output_tokens", "dataset"])]
    pub profile: Option<String>,
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    #[arg(long, value_enum)]
    pub dataset_format: Option<crate::workload::datasets::DatasetFormat>,
    /// cl100k_base, o200k_base, a tokenizer.json path, or server (with --url).
    #[arg(long, default_value = "cl100k_base")]
    pub tokenizer: String,
    /// Server for --tokenizer server.
    #[arg(long)]
    pub url: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long, conflicts_with = "workload")]
    pub input_tokens: Option<u32>,
    #[arg(long, conflicts_with = "workload")]
    pub output_tokens: Option<u32>,
    /// Requests to draw.
    #[arg(long, default_value_t = 1000)]
    pub requests: u64,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[command(flatten)]
    pub media: MediaFlags,
}

#[derive(Debug, Args)]
pub struct ProfilePrefillArgs {
    /// Target and request options, as for `run` (the load options are ignored: requests
    /// are sent one at a time).
    #[command(flatten)]
    pub run: RunArgs,
    /// Prompt lengths to probe, tokens: `128,256,512` or `128 256 512`. Lengths beyond the
    /// server's context (as it reports it) are capped to fit.
    #[arg(long, value_delimiter = ',', num_args = 1.., default_value = "128,256,512,1024,2048,4096")]
    pub lengths: Vec<u32>,
    /// Requests kept per length (one more is sent first at each length and discarded: it
    /// pays cold caches).
    #[arg(long, default_value_t = 10)]
    pub repeats: u32,
    /// Where to save the curve (JSON).
    #[arg(long, default_value = "prefill-curve.json")]
    pub save: PathBuf,
}

#[derive(Debug, Args)]
pub struct SelfbenchArgs {
    /// Concurrent streams for the accuracy runs (TTFT 100 ms, ITL 20 ms).
    #[arg(long, value_delimiter = ',', default_values_t = vec![64, 1024])]
    pub accuracy_streams: Vec<u32>,
    /// Concurrent streams of 1 token/ms for the throughput run.
    #[arg(long, value_delimiter = ',', default_values_t = vec![256])]
    pub throughput_streams: Vec<u32>,
    /// Output tokens per request in the accuracy and throughput runs.
    #[arg(long, default_value_t = 100)]
    pub output_tokens: u32,
    /// Open-loop Poisson rate, req/s (0 skips).
    #[arg(long, default_value_t = 1000.0)]
    pub open_loop_rate: f64,
    /// Length of the open-loop run, s.
    #[arg(long, default_value_t = 10.0)]
    pub open_loop_seconds: f64,
    /// Client worker threads (the simulator uses one thread of its own).
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// Pairs of runs (servebench and the bare reference client, the same load, one right
    /// after the other, which goes first alternating) behind the CPU ratio of the
    /// fixed-timing throughput run; their median ratio is the answer.
    #[arg(long, default_value_t = 3)]
    pub bare_pairs: u32,
    /// Requests per stream in each run of a CPU pair. At 8 (2,048 requests at 256 streams,
    /// about 2 s of CPU) the kernel's 10 ms accounting ticks move a ratio by under 1 %; what
    /// still moves a pair (0.8-1.45 on the shared 2-core machine) is the machine itself,
    /// which the median of several pairs absorbs.
    #[arg(long, default_value_t = 8)]
    pub bare_requests_per_stream: u32,
    /// Also time summarising this many synthetic requests (0 skips), e.g. 1000000.
    #[arg(long, default_value_t = 0)]
    pub summary_requests: u64,
    /// Tokens per request of the summary benchmark.
    #[arg(long, default_value_t = 32)]
    pub summary_tokens: u32,
    /// APIs compared in the per-API run (each `--endpoint`; an empty list skips it).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "chat,completions,responses,messages,llamacpp,tgi,sglang,websocket,grpc"
    )]
    pub protocols: Vec<String>,
    /// Concurrent streams of the per-API run (0 skips it).
    #[arg(long, default_value_t = 256)]
    pub protocol_streams: u32,
    /// Only the procedures' conformance: `test throughput --quick` on engine models of known
    /// capacity (fixed lengths, Synthetic-Skewed lengths, requests longer than 0.2 × the
    /// level, a server of 0.33 req/s), run in virtual time with five seeds, the median answer
    /// against the analytic capacity (within 10 %); then every `--quick` test that sizes
    /// its levels from a capacity on the slow server, against the time `servebench test
    /// --help` states; then the other procedures' answers against the engine's own truths,
    /// with --quick and with full durations (curve saturation point and knee, capacity's
    /// concurrency, the long-context exponent of linear and quadratic prefill, the
    /// prefix-cache hit rate, a latency-only guardrail's maximum throughput). Takes minutes
    /// of CPU at most, whatever the machine's load; exit 1 when a check misses.
    #[arg(long)]
    pub procedures: bool,
}
