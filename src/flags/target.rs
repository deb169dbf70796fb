//! The target group of `run`'s flags: the server, its API, credentials, TLS, the
//! system under test as the report names it, and the WebSocket and gRPC options.

use super::*;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SutBoundaryArg {
    /// The inference engine itself (vLLM, llama.cpp...).
    Engine,
    /// A gateway or load balancer in front of engines.
    Gateway,
    /// An application with retrieval, tools or guardrails around the model.
    Compound,
    /// An AI firewall (a safety or policy proxy inspecting prompts and answers) in front
    /// of the model: the third role of the benchmarking-profiles draft, beside the engine
    /// and the gateway.
    Firewall,
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
    pub endpoint: crate::client::Endpoint,
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
    /// Send no W3C `traceparent` header. By default every HTTP request carries one whose
    /// trace id is the run's `target.trace_id_prefix` then the record's id, so the server's
    /// own traces join the records (docs/apis.md, "Joining server traces").
    #[arg(long)]
    pub no_trace_context: bool,
    /// The run's trace id prefix (16 lowercase hex digits, not all zero) instead of a fresh
    /// one: scale-out plans give every shard the same, so one prefix joins all their records.
    #[arg(long, value_name = "HEX", conflicts_with = "no_trace_context")]
    pub trace_id_prefix: Option<String>,
    /// Accelerators serving the model, for the report, e.g. 'H100 80GB x 8'.
    #[arg(long)]
    pub hardware: Option<String>,
    /// Number of GPUs serving the model (per-GPU figures in reports).
    #[arg(long)]
    pub gpus: Option<u32>,
    /// Where the measurement boundary lies (the methodology's 4.1; `firewall` from the
    /// benchmarking-profiles draft), written into every report.
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
