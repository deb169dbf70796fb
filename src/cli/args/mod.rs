//! Flag definitions. The doc comments are the `--help` text: keep them complete.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

mod procedure;
mod runs;
mod scaleout;

pub use procedure::*;
pub use runs::*;
pub use scaleout::*;

#[derive(Debug, Parser)]
#[command(name = "servebench", version, about = "Benchmark LLM serving systems the way their users feel them", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// How long a run takes (the help of `run`).
const RUN_LENGTHS: &str =
    "How long: servebench prints the planned length of each phase before it starts (warm-up, \
prefill profile, measurement at the rate the test request measured) and an ETA from the \
first second. Typical: the built-in simulator's default run (64 streams, 1,000 requests) \
takes under a minute. llama.cpp on two CPU cores (Gemma 3 270M, 4 slots) completes about \
0.7 requests/s of 128 tokens, so --requests 1000 takes about 25 minutes: start with \
--duration 2m (about 5 minutes in all: there the draft's warm-up stops at its 2-minute \
cap, as its line says before it starts; --warmup-max 30s shortens it).";

/// How `run`'s options read inside a test (the help of `test` and `suite`).
const TEST_RUN_OPTIONS: &str =
    "Run options inside a test: the target, workload, request body, SLO, telemetry and output \
options apply to every level. --duration is each level's length (as --level-duration), not \
the whole test's: --budget bounds the whole test. --requests is the count of the \
single-level tests (ttft: default 10,000, the draft's count behind P99.9; prefix-cache: \
per configuration). --rate/--concurrency set the load of ttft and prefix-cache; the \
searches and sweeps choose their own loads. --max-concurrency is not used.

How long: a test prints its plan before it starts (its levels, how many, how long each, \
and the total with the warm-up and ~5 s between levels), a suite the sum, and each level's \
line the time left. Full tests measure the draft's minimum durations (60 s a level; 120 s \
for memory-pressure, 300 s for fairness's mix): throughput is about 10-15 minutes, a suite \
hours. With --quick (levels of 3-8 s, a short warm-up) a test takes 1-3 minutes on the \
built-in simulator and a suite 15-20; against llama.cpp on two CPU cores, a --quick \
test takes several minutes. --budget 30m bounds any of them.

How long a test takes: the tests that take a capacity (throughput, curve, itl, ttft, \
fairness, capacity) first measure the server's own speed: one request alone, then requests \
one at a time (10 of them with --quick, 30 without), then a closed-loop probe (20 \
completions, 60 without --quick; --capacity skips it, and the capacity test needs none). Every level then lasts at least \
--level-duration (60 s; 6 s with --quick) and long enough for 50 completions at the rate \
the server can have (200 without --quick; 10 and 50 for a sweep's point below 90 % of capacity, as many as a search level above), at most 300 s \
with --quick. On a server of 0.3 req/s --quick takes up to about 35 min (throughput, \
itl), 60 (curve: a throughput search, then its levels), 15 (ttft, capacity); checked on the simulator's engine model by `servebench \
selfbench --procedures`.";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark a streaming endpoint: OpenAI chat, completions or responses, Anthropic
    /// messages, or an engine's native route (the built-in simulator when no --url).
    #[command(after_help = RUN_LENGTHS)]
    Run(Box<RunCommand>),
    /// Serve the built-in simulated LLM server (OpenAI-compatible, SSE) until Ctrl-C.
    Sim(SimArgs),
    /// Inspect a workload without sending anything: `show` prints its specification and the
    /// statistics of a drawn sample, `export` writes the exact request sequence as JSONL.
    #[command(subcommand)]
    Workload(WorkloadCommand),
    /// Fit the server's prefill time against prompt length from isolated requests (Etalon's
    /// D_p curve for the fluidity-index) and save it for `run --prefill-curve`.
    ProfilePrefill(Box<ProfilePrefillArgs>),
    /// Measure servebench itself against the simulator's ground truth (accuracy, CPU per
    /// chunk, open-loop fidelity). A benchmark: numbers depend on the machine.
    Selfbench(SelfbenchArgs),
    /// A run's report from its folder; a run that was killed is rebuilt from its
    /// requests.jsonl first.
    Report(ReportArgs),
    /// Run one of the draft's benchmarking tests (section 5) as a procedure: load levels,
    /// each a run folder, read for the test's answer; writes test.json and the draft's
    /// tables (docs/procedures.md).
    #[command(after_help = TEST_RUN_OPTIONS)]
    Test(Box<TestArgs>),
    /// Run every test that applies to one target, one folder each, and a suite.json
    /// with every answer (the draft's full report, Appendix C.2).
    #[command(after_help = TEST_RUN_OPTIONS)]
    Suite(Box<SuiteArgs>),
    /// List indexed runs, newest first, with their key figures (docs/history.md).
    History(HistoryArgs),
    /// Attach a label to a run (or remove it with --remove); labels group runs for
    /// `compare label:NAME` and `regress --baseline label:NAME`.
    Label(LabelArgs),
    /// Attach a free-text note to a run.
    Note(NoteArgs),
    /// Rebuild the history database from the run and test folders under DIR (the folders
    /// are the truth; labels and notes are kept).
    Reindex(ReindexArgs),
    /// Compare systems from their runs: side by side key metrics, with ≥ 3 runs per system
    /// 95 % intervals, Welch's test and effect sizes, and the draft's fair-comparison
    /// checklist (docs/compare.md).
    Compare(CompareArgs),
    /// CI gate: exit 1 when a key metric of the candidate runs is worse than the baseline's
    /// beyond the tolerance with confidence, 0 otherwise, 2 on usage errors or too few runs
    /// (fewer than 3 a side), 3 when too few runs still show a key metric worse by more than
    /// 20 % (a likely regression, no statistical claim).
    Regress(RegressArgs),
    /// Write a run in another format: CSV of requests or of run summaries, vLLM's
    /// `bench serve` result JSON, AIPerf's profile exports.
    Export(ExportArgs),
    /// Freeze a load for several generators: the run options, seed, workload, schedule,
    /// limits and a common start, cut into --shards shares (docs/scale-out.md). --url is
    /// required: every shard sends to the server the plan names.
    #[command(
        after_help = "--url is required here (a plan never starts the built-in simulator). Every run option above is frozen into the plan; each shard runs it with `servebench run --plan PLAN.json --shard i/N --out DIR`."
    )]
    Plan(Box<PlanArgs>),
    /// Merge the run folders of a plan's shards into one run folder: every ordinal exactly
    /// once, clock offsets corrected, summarised like a single run.
    Merge(MergeArgs),
    /// Write the Kubernetes manifests that run a plan's shards as an Indexed Job and merge
    /// them (no cluster needed; pipe to `kubectl apply -f -`).
    K8s(Box<K8sArgs>),
}

#[derive(Debug, Subcommand)]
pub enum WorkloadCommand {
    /// Print the resolved specification and P50/P95/P99 of the drawn lengths.
    Show(WorkloadArgs),
    /// Write the request sequence as JSONL to stdout (index, input_tokens, max_tokens,
    /// class, messages), for others to replay.
    Export(WorkloadArgs),
}

#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// Workload name or scenario .toml file (as `run --workload`).
    pub workload: Option<String>,
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    #[arg(long, value_enum)]
    pub dataset_format: Option<DatasetFormatArg>,
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

/// `--endpoint`: the API to drive (docs/apis.md).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EndpointArg {
    /// OpenAI Chat Completions: {base}/chat/completions.
    Chat,
    /// OpenAI Completions: {base}/completions.
    Completions,
    /// OpenAI Responses: {base}/responses.
    Responses,
    /// Anthropic Messages: {base}/messages (x-api-key from ANTHROPIC_API_KEY).
    Messages,
    /// llama.cpp's native {root}/completion (token counts and timings in the stream).
    Llamacpp,
    /// Hugging Face TGI's native {root}/generate_stream (one token per event).
    Tgi,
    /// SGLang's native {root}/generate (running token and cache counts).
    Sglang,
    /// JSON messages over a WebSocket at {base}/ws (see the WebSocket options).
    Websocket,
    /// KServe v2 / Triton ModelStreamInfer over gRPC (--url http://host:8001; --model is the
    /// Triton model, e.g. ensemble).
    Grpc,
}

impl EndpointArg {
    /// The configuration's endpoint.
    pub fn endpoint(self) -> crate::config::Endpoint {
        use crate::config::Endpoint;
        match self {
            EndpointArg::Chat => Endpoint::Chat,
            EndpointArg::Completions => Endpoint::Completions,
            EndpointArg::Responses => Endpoint::Responses,
            EndpointArg::Messages => Endpoint::Messages,
            EndpointArg::Llamacpp => Endpoint::Llamacpp,
            EndpointArg::Tgi => Endpoint::Tgi,
            EndpointArg::Sglang => Endpoint::Sglang,
            EndpointArg::Websocket => Endpoint::Websocket,
            EndpointArg::Grpc => Endpoint::Grpc,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ArrivalArg {
    Poisson,
    Constant,
    Gamma,
    /// The timestamps of a trace given with --dataset (replayed at --speed).
    Trace,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum DatasetFormatArg {
    Sharegpt,
    Jsonl,
    Trace,
}

impl DatasetFormatArg {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sharegpt => "sharegpt",
            Self::Jsonl => "jsonl",
            Self::Trace => "trace",
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum DeadlinesArg {
    /// A reader at --reading-rate tokens/s: token k is due k/R after sending (the paper's
    /// equation 4), or with --d0-ms, D0 + (k − 1)/R.
    Reading,
    /// --deadline-ttft-ms for the first token, then --deadline-tbt-ms after each one.
    #[value(name = "ttft+tbt", alias = "ttft-tbt")]
    TtftTbt,
    /// Every token by --deadline-e2e-ms.
    E2e,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum IdleCostArg {
    Linear,
    Quadratic,
    Log1p,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SutBoundaryArg {
    /// The inference engine itself (vLLM, llama.cpp...).
    Engine,
    /// A gateway or load balancer in front of engines.
    Gateway,
    /// An application with retrieval, tools or guardrails around the model.
    Compound,
}

/// The server under test (flags shared by `run`, `profile-prefill` and the tests).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Target")]
pub struct TargetArgs {
    /// Base URL of the server, e.g. http://127.0.0.1:8000/v1 (any base path is kept;
    /// `user:pass@` is sent as Basic auth). Without it, `run`, `test` and `suite` start the
    /// built-in simulator and say so; `plan` requires it.
    #[arg(long)]
    pub url: Option<String>,
    /// Model name to request. Default: the first model the server lists at /models (the
    /// native routes: the model the engine reports at /props, /info or /get_model_info).
    #[arg(long)]
    pub model: Option<String>,
    /// Send --model even when the server does not list it (for servers that ignore the field).
    #[arg(long)]
    pub no_model_check: bool,
    /// API to drive (docs/apis.md): chat, completions, responses (OpenAI), messages
    /// (Anthropic), or an engine's native route: llamacpp (/completion), tgi
    /// (/generate_stream), sglang (/generate); websocket (JSON messages over a WebSocket);
    /// grpc (KServe v2 / Triton ModelStreamInfer). Native routes live at the server root: a
    /// trailing /v1 of --url is dropped for them.
    #[arg(long, value_enum, default_value = "chat")]
    pub endpoint: EndpointArg,
    /// Environment variable holding the API key, sent as a Bearer token (as x-api-key for
    /// --endpoint messages) and never written out. Default: ANTHROPIC_API_KEY for
    /// messages, OPENAI_API_KEY otherwise.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// File holding the API key (alternative to --api-key-env).
    #[arg(long)]
    pub api_key_file: Option<PathBuf>,
    /// Extra request header 'Name: value' (repeatable). Credential-like values are redacted in outputs.
    #[arg(long = "header", value_name = "'K: V'")]
    pub headers: Vec<String>,
    /// Accelerators serving the model, for the report, e.g. 'H100 80GB x 8'.
    #[arg(long)]
    pub hardware: Option<String>,
    /// Number of GPUs serving the model (per-GPU figures in reports).
    #[arg(long)]
    pub gpus: Option<u32>,
    /// Where the measurement boundary lies (draft 4.1).
    #[arg(long, value_enum, default_value = "engine")]
    pub sut_boundary: SutBoundaryArg,
    /// A note for the report, e.g. the guardrail configuration (repeatable).
    #[arg(long = "note")]
    pub notes: Vec<String>,
    /// How long to wait for a server that answers 503 (still loading) before the run.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub ready_timeout: Duration,
    /// PEM file of extra CA certificates to trust (a private CA), besides the system's.
    #[arg(long)]
    pub ca_cert: Option<PathBuf>,
    /// PEM client certificate chain for mutual TLS (with --client-key).
    #[arg(long, requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// PEM private key for mutual TLS (with --client-cert).
    #[arg(long, requires = "client_cert")]
    pub client_key: Option<PathBuf>,
    /// Accept any TLS certificate (self-signed, wrong name): for testing only.
    #[arg(long)]
    pub insecure: bool,
}

/// What to send.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Workload")]
pub struct WorkloadFlags {
    /// Workload: synthetic-uniform (default), synthetic-skewed, conversation, code-completion,
    /// long-context (draft Appendix A), fairness-mix (draft 5.6), multi-turn-chat, or a
    /// scenario .toml file (docs/workloads.md).
    #[arg(long, conflicts_with_all = ["input_tokens", "output_tokens"])]
    pub workload: Option<String>,
    /// Local dataset: ShareGPT JSON, JSONL of prompts/messages, or a trace (Mooncake format).
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// Dataset format when detection is not enough.
    #[arg(long, value_enum)]
    pub dataset_format: Option<DatasetFormatArg>,
    /// Fixed prompt length in tokens (with --output-tokens: a fixed-length workload).
    #[arg(long)]
    pub input_tokens: Option<u32>,
    /// Fixed output length in tokens (max_tokens, with EOS ignored by default).
    #[arg(long)]
    pub output_tokens: Option<u32>,
    /// Tokenizer that counts input and (without server usage) output tokens: cl100k_base
    /// (the draft's reference, Option B), o200k_base, a tokenizer.json path, or `server`
    /// (the server's /tokenize with its chat template: Option A).
    #[arg(long, default_value = "cl100k_base")]
    pub tokenizer: String,
    /// Seed of every random draw (workload and arrivals).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// How load is offered.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Load")]
pub struct LoadArgs {
    /// Closed loop: keep N requests in flight (default when no --rate is given: 32, or 64
    /// against the built-in simulator).
    #[arg(long, conflicts_with = "rate")]
    pub concurrency: Option<u32>,
    /// Open loop: arrivals per second (any positive real, e.g. 0.5), from a seeded schedule
    /// independent of responses.
    // A negative number is read as the value (then refused as not positive), not as a flag.
    #[arg(long, allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Open loop: at most N requests in flight; later arrivals wait for a slot (as vLLM's
    /// `bench serve --max-concurrency`: a gateway's limit). The wait counts in latency from
    /// the schedule, never as the generator's lateness.
    #[arg(long, requires = "rate")]
    pub max_concurrency: Option<u32>,
    /// Open-loop arrival process.
    #[arg(long, value_enum, default_value = "poisson")]
    pub arrival: ArrivalArg,
    /// Gamma arrivals: coefficient of variation of the gaps (1 = Poisson-like, > 1 burstier).
    /// vLLM's --burstiness b corresponds to 1/sqrt(b).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub burstiness: f64,
    /// Trace replay: speed factor on the recorded arrival times (2 = twice as fast).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub speed: f64,
}

/// When the run ends and what counts as failing.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// Measured requests (default 1000 when no --duration is given: the draft's minimum for P99).
    #[arg(long)]
    pub requests: Option<u64>,
    /// Measurement duration, e.g. 60s, 5m, 1h30m, 500ms (the first limit reached ends the run;
    /// requests still in flight then get --grace, then are cancelled).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Warm-up before measuring: auto (draft 4.5: >= 100 requests and >= 10,000 output tokens,
    /// then probes until latency is stable), a number of requests, or none (cold start). Its
    /// cost at the server's measured speed is printed before it starts; a closed loop then
    /// carries its load into the measurement (the first measured requests start spread).
    #[arg(long, default_value = "auto")]
    pub warmup: String,
    /// The longest the warm-up may run; a warm-up stopped here short of its targets is
    /// reported as such and the run marked non-compliant (said before it starts when the
    /// server's speed shows it will be).
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    pub warmup_max: Duration,
    /// Per-request time limit.
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// After Ctrl-C or the end of --duration: how long in-flight requests may still finish
    /// before they are cancelled (and recorded as `cancelled`).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub grace: Duration,
    /// No response byte within this long after sending: the request fails as a timeout.
    #[arg(long, value_parser = parse_duration)]
    pub first_byte_timeout: Option<Duration>,
    /// No token (answer or reasoning) within this long after sending: a timeout.
    #[arg(long, value_parser = parse_duration)]
    pub first_token_timeout: Option<Duration>,
    /// Largest response body, MiB; beyond it the request fails as a protocol failure (bounds
    /// memory against an endless stream).
    #[arg(long, default_value_t = 256)]
    pub max_response_mib: u64,
    /// Largest SSE line or event, MiB; beyond it the request fails as a protocol failure.
    #[arg(long, default_value_t = 16)]
    pub max_line_mib: u64,
    /// Retry a request answered 429 or 503 up to N times, after its Retry-After (capped by
    /// --retry-max-wait). Off by default: retried requests are marked and their latency
    /// counts from the first attempt.
    #[arg(long, default_value_t = 0)]
    pub retry: u32,
    /// Also retry requests that could not connect (with --retry).
    #[arg(long)]
    pub retry_connect: bool,
    /// Longest wait before a retry.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub retry_max_wait: Duration,
    /// Exit with status 1 when more than this share of measured requests failed (0–1).
    /// Requests cancelled at the end of a duration-limited run do not count.
    #[arg(long, default_value_t = 0.05)]
    pub max_failures: f64,
}

/// What every request body carries.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Request body")]
pub struct BodyArgs {
    /// Ask the server to ignore EOS so outputs reach max_tokens (ignore_eos, and min_tokens
    /// on chat and completions). Hosted OpenAI and Anthropic APIs reject the field: pass
    /// false there. TGI has no such option (docs/apis.md).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub ignore_eos: bool,
    /// Send cache_prompt: false (llama.cpp, on every route) so no prompt prefix is reused.
    #[arg(long)]
    pub no_prefix_cache: bool,
    /// Ask for usage in every chunk (vLLM continuous_usage_stats; chat and completions):
    /// exact tokens per chunk. The native routes always stream running counts.
    #[arg(long)]
    pub usage_per_chunk: bool,
    /// Sampling temperature sent with every request.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Extra JSON fields merged into every request body, e.g. '{"top_k": 1}'.
    #[arg(long)]
    pub extra_body: Option<String>,
}

/// Service-level objectives.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "SLOs")]
pub struct SloArgs {
    /// SLOs, comma-separated. Per request: 'ttft_ms<=500' (also tpot_ms, e2e_ms, itl_p99_ms,
    /// max_pause_ms): passes when --slo-target of requests meet every such bound (goodput).
    /// Run level: 'p99(ttft_ms)<=500' (p50, p90, p95, p99, p99.9, mean, max of ttft_ms,
    /// tpot_ms, e2e_ms, itl_ms, jitter_ms, max_pause_ms, user_idle_ms): the run's own figure.
    /// Floors: 'output_tokens_per_s>=1000', 'requests_per_s>=5', 'success_rate>=0.99'.
    /// Any failing verdict makes the exit status 1 (docs/metrics.md).
    #[arg(long)]
    pub slo: Option<String>,
    /// Share of requests that must meet every per-request bound.
    #[arg(long, default_value_t = 0.99)]
    pub slo_target: f64,
}

/// User-experience metric parameters.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "User experience")]
pub struct UxArgs {
    /// Per-token deadlines for user idle latency and smooth goodput (docs/metrics.md).
    #[arg(long, value_enum, default_value = "reading")]
    pub deadlines: DeadlinesArg,
    /// Reading deadlines: the reader's speed R, tokens/s.
    #[arg(long, default_value_t = 20.0)]
    pub reading_rate: f64,
    /// Reading deadlines: D0, the wait for the first token a user accepts, ms; then token
    /// k is due at D0 + (k − 1)/R. Without it, the paper's d_k = k/R.
    #[arg(long)]
    pub d0_ms: Option<f64>,
    /// ttft+tbt deadlines: TTFT bound, ms.
    #[arg(long, default_value_t = 1000.0)]
    pub deadline_ttft_ms: f64,
    /// ttft+tbt deadlines: TBT bound, ms.
    #[arg(long, default_value_t = 100.0)]
    pub deadline_tbt_ms: f64,
    /// e2e deadlines: end-to-end bound, ms.
    #[arg(long, default_value_t = 30000.0)]
    pub deadline_e2e_ms: f64,
    /// Smooth goodput: weight α of idle cost (tokens per unit of f).
    #[arg(long, default_value_t = 5.0)]
    pub alpha: f64,
    /// Smooth goodput: idle cost f(l), l in seconds.
    #[arg(long, value_enum, default_value = "linear")]
    pub idle_cost: IdleCostArg,
    /// Smooth goodput: how long past a token's deadline a user waits before giving up on
    /// the request; a failed request is charged this wait, wherever in the run it failed.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub patience: Duration,
    /// Fluidity-index: decode deadline D_d for the reported distribution, ms.
    #[arg(long, default_value_t = 50.0)]
    pub fluidity_tbt_ms: f64,
    /// Fluidity-index: scheduling slack added to the isolated prefill time, ms.
    #[arg(long, default_value_t = 50.0)]
    pub fluidity_slack_ms: f64,
    /// Fluidity-index: a request is fluid at or above this index (f).
    #[arg(long, default_value_t = 0.9)]
    pub fluidity_threshold: f64,
    /// Fluid token rate: share of requests that must be fluid (q).
    #[arg(long, default_value_t = 0.99)]
    pub fluidity_quantile: f64,
    /// Prefill curve profiled earlier (`servebench profile-prefill`, or a run's
    /// prefill-curve.json) instead of profiling before this run.
    #[arg(long, conflicts_with = "no_fluidity")]
    pub prefill_curve: Option<PathBuf>,
    /// Skip the isolated prefill profile and the fluidity metrics.
    #[arg(long)]
    pub no_fluidity: bool,
    /// Prefill profile: requests kept per prompt length (one more is sent first, discarded).
    #[arg(long, default_value_t = 3)]
    pub profile_repeats: u32,
    /// Prefill profile: the longest it may take.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub profile_budget: Duration,
    /// Run folder of an isolated baseline (per class) for latency inflation (draft 5.6).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
}

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
    pub arrival_clock: crate::config::ArrivalClock,
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

/// `--endpoint websocket` (the generic JSON-over-WebSocket mode) and `--endpoint grpc`
/// (docs/apis.md).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "WebSocket and gRPC")]
pub struct WebSocketArgs {
    /// --endpoint grpc: which Triton backend's inputs to send: tensorrt-llm (text_input,
    /// max_tokens, stream, temperature) or vllm (text_input, stream, sampling_parameters).
    #[arg(long, value_enum, default_value = "tensorrt-llm")]
    pub grpc_backend: crate::client::apis::kserve::GrpcBackend,
    /// The WebSocket's path on the server (default: {base}/ws).
    #[arg(long)]
    pub ws_path: Option<String>,
    /// The message sent per request, JSON with placeholders replaced by JSON values:
    /// {{model}}, {{messages}}, {{prompt}}, {{max_tokens}}, {{temperature}}, {{ignore_eos}}.
    /// `@FILE` reads it from a file. Default: {"type":"generate","model":{{model}},
    /// "messages":{{messages}},"max_tokens":{{max_tokens}},"temperature":{{temperature}},
    /// "ignore_eos":{{ignore_eos}}}.
    #[arg(long)]
    pub ws_template: Option<String>,
    /// JSON pointer to the answer text in each received message.
    #[arg(long, default_value = "/delta")]
    pub ws_text_path: String,
    /// JSON pointer to reasoning text ('' for none).
    #[arg(long, default_value = "/reasoning")]
    pub ws_reasoning_path: String,
    /// The end marker: a JSON pointer, with =VALUE when it must equal a string
    /// (/type=done); without =VALUE any value but null and false ends the stream.
    #[arg(long, default_value = "/type=done")]
    pub ws_end: String,
    /// JSON pointer to usage: a Chat Completions usage object or a number of output
    /// tokens ('' for none: the tokenizer counts).
    #[arg(long, default_value = "/usage")]
    pub ws_usage_path: String,
    /// JSON pointer to an error (a message with it fails the request; '' for none).
    #[arg(long, default_value = "/error")]
    pub ws_error_path: String,
    /// JSON pointer to the finish reason in the end message ('' for none).
    #[arg(long, default_value = "/finish_reason")]
    pub ws_finish_path: String,
    /// JSON pointer to the response id ('' for none).
    #[arg(long, default_value = "/id")]
    pub ws_id_path: String,
}

/// The built-in simulator, when no --url is given.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Built-in simulator")]
pub struct SimFlags {
    /// Engine preset (h100-llama3-8b, a100-llama3-70b-tp4, cpu-tiny, fast).
    #[arg(long, default_value = "h100-llama3-8b")]
    pub sim_preset: String,
    /// TOML file of engine parameters (see docs/sim.md).
    #[arg(long)]
    pub sim_config: Option<PathBuf>,
    /// Fixed time to first token, ms (fixed timing instead of the engine model).
    #[arg(long)]
    pub sim_ttft_ms: Option<f64>,
    /// Fixed time between tokens, ms (fixed timing instead of the engine model).
    #[arg(long)]
    pub sim_itl_ms: Option<f64>,
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub workload: WorkloadFlags,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub body: BodyArgs,
    #[command(flatten)]
    pub slo: SloArgs,
    #[command(flatten)]
    pub ux: UxArgs,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub sim: SimFlags,
    #[command(flatten)]
    pub websocket: WebSocketArgs,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Address to bind. Anything but loopback needs --allow-remote.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Allow binding a non-loopback address.
    #[arg(long)]
    pub allow_remote: bool,
    /// Engine preset: h100-llama3-8b, a100-llama3-70b-tp4, cpu-tiny, fast (docs/sim.md).
    #[arg(long, default_value = "h100-llama3-8b")]
    pub preset: String,
    /// TOML file of engine parameters; `preset = "..."` inside picks the base.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Fixed timing instead of the engine model: time to first token, ms.
    #[arg(long)]
    pub ttft_ms: Option<f64>,
    /// Fixed timing instead of the engine model: time between tokens, ms.
    #[arg(long)]
    pub itl_ms: Option<f64>,
    /// Fixed timing: uniform jitter on each gap, ± ms.
    #[arg(long, default_value_t = 0.0)]
    pub itl_jitter_ms: f64,
    /// Fixed timing: tokens per streamed chunk.
    #[arg(long, default_value_t = 1)]
    pub tokens_per_chunk: u32,
    /// Divide every delay by this factor (10 = ten times faster).
    #[arg(long)]
    pub time_scale: Option<f64>,
    /// Write the ground truth of every request as JSON lines to this file.
    #[arg(long)]
    pub truth_log: Option<PathBuf>,
    /// Server threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Seed of the simulator's draws.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// The simulator configuration named by a preset, a TOML file and fixed-timing flags.
pub fn sim_config(
    preset: &str,
    file: Option<&std::path::Path>,
    ttft_ms: Option<f64>,
    itl_ms: Option<f64>,
) -> anyhow::Result<crate::sim::SimConfig> {
    use anyhow::Context;
    let mut cfg = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            crate::sim::SimConfig::from_toml(&text, &path.display().to_string())?
        }
        None => crate::sim::SimConfig::preset(preset)?,
    };
    if ttft_ms.is_some() || itl_ms.is_some() {
        let mut fixed = cfg.fixed.clone().unwrap_or_default();
        fixed.ttft_ms = ttft_ms.unwrap_or(fixed.ttft_ms);
        fixed.itl_ms = itl_ms.unwrap_or(fixed.itl_ms);
        cfg.fixed = Some(fixed);
    }
    Ok(cfg)
}

/// Parses a share: `5%` or `0.05` (a bare number above 1 is refused as ambiguous).
pub fn parse_share(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (number, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let v: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a share: write 5% or 0.05"))?;
    let v = if percent { v / 100.0 } else { v };
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("`{s}` must be 0 or more"));
    }
    if !percent && v > 1.0 {
        return Err(format!(
            "`{s}` is ambiguous: write {s}% for a percentage, or a share such as 0.05"
        ));
    }
    Ok(v)
}

/// Parses a duration such as `60s`, `5m`, `1h30m`, `250ms` (humantime's syntax) or a bare
/// number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        return if secs >= 0.0 && secs.is_finite() {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(format!("`{s}` is not a duration"))
        };
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration ({e}); examples: 60s, 5m, 1h30m, 500ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2.5"), Ok(Duration::from_millis(2500)));
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("10").is_ok());
    }

    #[test]
    fn shares() {
        assert_eq!(parse_share("5%"), Ok(0.05));
        assert_eq!(parse_share(" 2.5 % "), Ok(0.025));
        assert_eq!(parse_share("0.1"), Ok(0.1));
        assert_eq!(parse_share("0"), Ok(0.0));
        assert!(parse_share("5").unwrap_err().contains("ambiguous"));
        assert!(parse_share("-1%").is_err());
        assert!(parse_share("five").is_err());
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
