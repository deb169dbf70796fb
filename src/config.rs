//! The validated configuration of a run.
//!
//! The CLI (`cli/`) parses strings into these types once; nothing downstream sees a string
//! that means a mode. Everything here serialises into `run.json`, with secrets redacted.

use crate::metrics::slo::SloSpec;
use crate::workload::WorkloadSpec;
use serde::{Serialize, Serializer};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
use thiserror::Error;

/// Which API to drive (`--endpoint`; docs/apis.md).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// OpenAI Chat Completions, `POST {base}/chat/completions`
    Chat,
    /// OpenAI Completions, `POST {base}/completions`
    Completions,
    /// OpenAI Responses, `POST {base}/responses`
    Responses,
    /// Anthropic Messages, `POST {base}/messages`
    Messages,
    /// llama.cpp's native `POST {root}/completion`
    Llamacpp,
    /// Hugging Face TGI's native `POST {root}/generate_stream`
    Tgi,
    /// SGLang's native `POST {root}/generate`
    Sglang,
    /// A generic JSON-over-WebSocket stream at `{base}/ws` (see [`WebSocketOptions`])
    Websocket,
    /// KServe v2 / Triton `ModelStreamInfer` over gRPC (HTTP/2)
    Grpc,
}

impl Endpoint {
    /// Every endpoint, in `--endpoint` order.
    pub const ALL: [Endpoint; 9] = [
        Endpoint::Chat,
        Endpoint::Completions,
        Endpoint::Responses,
        Endpoint::Messages,
        Endpoint::Llamacpp,
        Endpoint::Tgi,
        Endpoint::Sglang,
        Endpoint::Websocket,
        Endpoint::Grpc,
    ];

    /// The route, below the base URL (OpenAI and Anthropic APIs) or below the server root
    /// (the engines' native routes; see [`Endpoint::is_native`]).
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/chat/completions",
            Endpoint::Completions => "/completions",
            Endpoint::Responses => "/responses",
            Endpoint::Messages => "/messages",
            Endpoint::Llamacpp => "/completion",
            Endpoint::Tgi => "/generate_stream",
            Endpoint::Sglang => "/generate",
            Endpoint::Websocket => "/ws",
            Endpoint::Grpc => "/inference.GRPCInferenceService/ModelStreamInfer",
        }
    }

    /// An engine's own route, served beside (not under) its `/v1` API.
    pub fn is_native(self) -> bool {
        matches!(self, Endpoint::Llamacpp | Endpoint::Tgi | Endpoint::Sglang)
    }

    /// The request path for this endpoint on `url`: the base path plus the route, or for a
    /// native route the base path without a trailing `/v1` plus the route
    /// (`http://h:8080/v1` → `/completion`, `https://gw/llama/v1` → `/llama/completion`).
    /// `ws_path` is `--ws-path`, which replaces the WebSocket route when given.
    pub fn request_path(self, url: &BaseUrl, ws_path: Option<&str>) -> String {
        if self.is_native() {
            format!("{}{}", url.native_base_path(), self.path())
        } else if let (Endpoint::Websocket, Some(path)) = (self, ws_path) {
            path.to_owned()
        } else {
            url.path(self.path())
        }
    }

    /// The API's name as reports print it.
    pub fn api_name(self) -> &'static str {
        match self {
            Endpoint::Chat => "OpenAI chat completions",
            Endpoint::Completions => "OpenAI completions",
            Endpoint::Responses => "OpenAI responses",
            Endpoint::Messages => "Anthropic messages",
            Endpoint::Llamacpp => "llama.cpp /completion",
            Endpoint::Tgi => "TGI /generate_stream",
            Endpoint::Sglang => "SGLang /generate",
            Endpoint::Websocket => "JSON messages",
            Endpoint::Grpc => "KServe v2 / Triton ModelStreamInfer",
        }
    }

    /// The transport and streaming protocol (draft 4.6.2 asks reports to state it).
    pub fn protocol(self) -> &'static str {
        match self {
            Endpoint::Websocket => "WebSocket",
            Endpoint::Grpc => "gRPC (HTTP/2)",
            _ => "HTTP/1.1, server-sent events",
        }
    }

    /// The engine a native route belongs to.
    pub fn native_engine(self) -> Option<&'static str> {
        match self {
            Endpoint::Llamacpp => Some("llama.cpp"),
            Endpoint::Tgi => Some("tgi"),
            Endpoint::Sglang => Some("sglang"),
            _ => None,
        }
    }
}

/// A value that must never be printed or written.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"<redacted>\"")
    }
}

impl schemars::JsonSchema for Secret {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Secret".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A credential: always written as \"<redacted>\".",
            "const": "<redacted>"
        })
    }
}

/// A secret read back from a run folder is the placeholder it was written as: run folders
/// never hold credentials, so a reloaded configuration cannot send any.
impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let _ = String::deserialize(d)?;
        Ok(Secret("<redacted>".into()))
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

/// A parsed base URL such as `http://127.0.0.1:8000/v1` (the base path is kept).
///
/// Parsed with the `url` crate (WHATWG rules: IPv6 literals, percent-encoding, default
/// ports). Credentials in the URL (`https://user:pass@host/v1`) become HTTP Basic auth; they
/// never appear when the URL is printed or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    pub tls: bool,
    /// Host as written in a URL (`[::1]` for IPv6 literals).
    pub host: String,
    pub port: u16,
    /// Path prefix without a trailing slash (`/v1`, `/openai/v1`, or empty).
    pub base_path: String,
    /// `user:password` from the URL, sent as Basic auth.
    pub basic_auth: Option<Secret>,
}

#[derive(Debug, Error, PartialEq)]
pub enum UrlError {
    #[error("`{0}` is not an http:// or https:// URL (example: http://127.0.0.1:8000/v1)")]
    Scheme(String),
    #[error("`{0}` has no host (example: http://127.0.0.1:8000/v1)")]
    Host(String),
    #[error("`{url}` is not a valid URL: {detail} (example: http://127.0.0.1:8000/v1)")]
    Invalid { url: String, detail: String },
}

impl BaseUrl {
    pub fn parse(s: &str) -> Result<Self, UrlError> {
        let u = url::Url::parse(s.trim()).map_err(|e| match e {
            url::ParseError::RelativeUrlWithoutBase => UrlError::Scheme(s.into()),
            url::ParseError::EmptyHost => UrlError::Host(s.into()),
            other => UrlError::Invalid {
                url: s.into(),
                detail: other.to_string(),
            },
        })?;
        let tls = match u.scheme() {
            // ws:// and wss:// name the same servers (a WebSocket starts as HTTP/1.1).
            "http" | "ws" => false,
            "https" | "wss" => true,
            _ => return Err(UrlError::Scheme(s.into())),
        };
        let host = match u.host() {
            Some(url::Host::Ipv6(a)) => format!("[{a}]"),
            Some(h) => h.to_string(),
            None => return Err(UrlError::Host(s.into())),
        };
        let port = u
            .port_or_known_default()
            .ok_or_else(|| UrlError::Host(s.into()))?;
        let basic_auth = (!u.username().is_empty()).then(|| {
            let decode = |v: &str| {
                url::form_urlencoded::parse(format!("x={v}").as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default()
            };
            Secret::new(format!(
                "{}:{}",
                decode(u.username()),
                decode(u.password().unwrap_or(""))
            ))
        });
        Ok(BaseUrl {
            tls,
            host,
            port,
            base_path: u.path().trim_end_matches('/').to_owned(),
            basic_auth,
        })
    }

    /// `host:port` for connecting (brackets removed from IPv6 literals).
    pub fn socket_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }

    /// The `Host` header value.
    pub fn host_header(&self) -> String {
        let default_port = if self.tls { 443 } else { 80 };
        if self.port == default_port {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The request path for an API path such as `/chat/completions`.
    pub fn path(&self, api_path: &str) -> String {
        format!("{}{}", self.base_path, api_path)
    }

    /// The base path without a trailing `/v1`: where an engine's native routes live.
    pub fn native_base_path(&self) -> &str {
        self.base_path
            .strip_suffix("/v1")
            .unwrap_or(&self.base_path)
    }

    /// The server root (base path removed), for `/health`, `/metrics`, `/tokenize`.
    pub fn root(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.host_header()
        )
    }

    /// The `Authorization` header value for credentials given in the URL.
    pub fn basic_auth_header(&self) -> Option<String> {
        use base64::Engine;
        let creds = self.basic_auth.as_ref()?;
        Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(creds.expose())
        ))
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.root(), self.base_path)
    }
}

impl schemars::JsonSchema for BaseUrl {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BaseUrl".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Base URL of the server, credentials removed.",
            "type": "string",
            "pattern": "^https?://"
        })
    }
}

impl<'de> serde::Deserialize<'de> for BaseUrl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        BaseUrl::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl Serialize for BaseUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// The server under test.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Target {
    pub url: BaseUrl,
    pub model: String,
    pub endpoint: Endpoint,
    /// Extra headers; values of credential-like headers are redacted in outputs.
    #[serde(
        serialize_with = "redacted_headers",
        deserialize_with = "headers_from_map"
    )]
    #[schemars(with = "std::collections::BTreeMap<String, String>")]
    pub headers: Vec<(String, String)>,
    /// Sent as `Authorization: Bearer` (as `x-api-key` for Anthropic Messages); never
    /// written anywhere.
    pub api_key: Option<Secret>,
    /// Whether this is the built-in simulator started by servebench itself.
    pub builtin_simulator: bool,
    /// TLS: extra CA, client certificate, or no verification.
    #[serde(default)]
    pub tls: crate::client::network::TlsOptions,
    /// The proxy the target is reached through (from the environment).
    #[serde(default)]
    pub proxy: Option<crate::client::network::Proxy>,
    /// `--endpoint websocket`: the message template and where to find things in answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WebSocketOptions>,
    /// `--endpoint grpc`: which Triton backend's inputs to send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_backend: Option<crate::client::apis::kserve::GrpcBackend>,
}

/// The generic JSON-over-WebSocket mode (`--endpoint websocket`, docs/apis.md): one message
/// sent per request, built from a template, then JSON messages read until the end marker.
/// Paths are JSON pointers (RFC 6901, `/a/b`).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct WebSocketOptions {
    /// The route, when not `{base}/ws` (`--ws-path`).
    pub path: Option<String>,
    /// The request message, with `{{model}}`, `{{messages}}`, `{{prompt}}`,
    /// `{{max_tokens}}`, `{{temperature}}` and `{{ignore_eos}}` replaced by JSON values.
    pub template: String,
    /// Answer text of a message.
    pub text_path: String,
    /// Reasoning text of a message.
    pub reasoning_path: Option<String>,
    /// The end marker: a pointer, with `=VALUE` when it must equal a string (`/type=done`);
    /// without it, any value but `null` and `false` ends the stream.
    pub end: String,
    /// Usage: a Chat Completions usage object, or a number of completion tokens.
    pub usage_path: Option<String>,
    /// An error: a string or an object with `message`.
    pub error_path: Option<String>,
    /// Why generation stopped (read from the end message).
    pub finish_path: Option<String>,
    /// The response id.
    pub id_path: Option<String>,
}

impl Default for WebSocketOptions {
    fn default() -> Self {
        Self {
            path: None,
            template: r#"{"type":"generate","model":{{model}},"messages":{{messages}},"max_tokens":{{max_tokens}},"temperature":{{temperature}},"ignore_eos":{{ignore_eos}}}"#.into(),
            text_path: "/delta".into(),
            reasoning_path: Some("/reasoning".into()),
            end: "/type=done".into(),
            usage_path: Some("/usage".into()),
            error_path: Some("/error".into()),
            finish_path: Some("/finish_reason".into()),
            id_path: Some("/id".into()),
        }
    }
}

/// Whether a header carries credentials (its value is redacted from every output).
pub fn is_credential_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "authorization"
        || n.contains("key")
        || n.contains("token")
        || n.contains("secret")
        || n.contains("cookie")
}

fn redacted_headers<S: Serializer>(headers: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(headers.len()))?;
    for (k, v) in headers {
        if is_credential_header(k) {
            m.serialize_entry(k, "<redacted>")?;
        } else {
            m.serialize_entry(k, v)?;
        }
    }
    m.end()
}

/// Options that shape every request body.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema, serde::Deserialize)]
pub struct RequestOptions {
    /// Ask the server to ignore EOS so outputs reach `max_tokens`.
    pub ignore_eos: bool,
    /// `false` sends `cache_prompt: false` (llama.cpp) so no prompt reuse happens.
    pub prefix_cache: bool,
    /// Ask for cumulative usage in every chunk (vLLM `continuous_usage_stats`).
    pub usage_per_chunk: bool,
    pub temperature: Option<f64>,
    /// Extra top-level JSON fields merged into every body.
    pub extra_body: Vec<(String, serde_json::Value)>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self {
            ignore_eos: true,
            prefix_cache: true,
            usage_per_chunk: false,
            temperature: Some(0.0),
            extra_body: Vec::new(),
        }
    }
}

/// How inter-arrival times are drawn in open loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Arrival {
    /// Exponential gaps (draft 4.2.3, required).
    Poisson,
    /// Equal gaps.
    Constant,
    /// Gamma gaps with coefficient of variation `cv` (1 = Poisson, > 1 burstier).
    Gamma { cv: f64 },
}

/// How load is offered.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum LoadPattern {
    /// A fixed number of requests in flight; a new one as soon as one completes.
    Closed { concurrency: u32 },
    /// Arrivals from a seeded schedule, independent of responses.
    Open { rate_per_s: f64, arrival: Arrival },
    /// Arrivals at the timestamps of a trace (`--dataset` in trace format), divided by `speed`.
    Trace { speed: f64 },
}

/// When the measured run ends: the first limit reached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Limits {
    pub requests: Option<u64>,
    #[serde(serialize_with = "opt_secs", deserialize_with = "opt_from_secs")]
    #[schemars(with = "Option<f64>")]
    pub duration: Option<Duration>,
}

fn opt_secs<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

fn secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

fn from_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let v = <f64 as serde::Deserialize>::deserialize(d)?;
    Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
}

fn opt_from_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let v = <Option<f64> as serde::Deserialize>::deserialize(d)?;
    v.map(|v| Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom))
        .transpose()
}

fn headers_from_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, String)>, D::Error> {
    let m = <std::collections::BTreeMap<String, String> as serde::Deserialize>::deserialize(d)?;
    Ok(m.into_iter().collect())
}

/// Warm-up before measuring (draft 4.5).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Warmup {
    /// Cold start: nothing before measuring; reports flag it.
    None,
    /// Exactly this many requests at the run's load, then drain.
    Requests(u64),
    /// The draft's procedure: ≥ 100 requests and ≥ 10,000 output tokens, drain, then probe
    /// until two consecutive probes differ by less than 10 %.
    Auto,
}

/// When a request that was refused is tried again (`--retry`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RetryPolicy {
    /// Most retries per request (0: never retry).
    pub max_retries: u32,
    /// HTTP statuses that are retried.
    pub statuses: Vec<u16>,
    /// Also retry when no connection could be made.
    pub connect_errors: bool,
    /// Longest wait before a retry, honouring `Retry-After` up to it, s.
    pub max_wait_s: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 0,
            statuses: vec![429, 503],
            connect_errors: false,
            max_wait_s: 30.0,
        }
    }
}

/// Which clock timestamps chunk arrivals.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    clap::ValueEnum,
    Default,
    schemars::JsonSchema,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ArrivalClock {
    /// The kernel's receive timestamp of the bytes (`SO_TIMESTAMPNS`; Linux), falling back
    /// to the read's return where the platform gives none.
    #[default]
    Kernel,
    /// The moment `read` returned (moves with the client's own load).
    Read,
}

/// Where the prefill curve of the fluidity-index comes from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum PrefillSetup {
    /// Profile prefill in isolation before the measured phase.
    Profile(ProfilePlan),
    /// A curve profiled earlier (`--prefill-curve FILE`).
    Curve(crate::metrics::fluidity::ProfiledCurve),
    /// No fluidity metrics (`--no-fluidity`).
    Off,
}

/// How to profile prefill in isolation (concurrency 1, one output token, no prefix reuse).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct ProfilePlan {
    /// Prompt lengths, tokens; `None`: spread over the workload's input lengths.
    pub lengths: Option<Vec<u32>>,
    /// Requests kept per length (one more is sent first and discarded: it pays cold caches).
    pub repeats: u32,
    /// Stop profiling after this long (fewer points, reported).
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    #[schemars(with = "f64")]
    pub budget: Duration,
    /// Longest prompt the server accepts, when it said (lengths are capped to it).
    pub max_prompt_tokens: Option<u32>,
}

impl Default for ProfilePlan {
    fn default() -> Self {
        Self {
            lengths: None,
            repeats: 3,
            budget: Duration::from_secs(60),
            max_prompt_tokens: None,
        }
    }
}

/// Everything a run needs.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct RunConfig {
    pub target: Target,
    pub request: RequestOptions,
    pub workload: WorkloadSpec,
    /// What `--dataset` held (the records themselves are in `dataset`).
    pub dataset_info: Option<crate::workload::datasets::DatasetInfo>,
    #[serde(skip)]
    pub dataset: Option<std::sync::Arc<crate::workload::datasets::Dataset>>,
    pub load: LoadPattern,
    pub limits: Limits,
    pub warmup: Warmup,
    /// Longest the warm-up may run before measuring starts anyway (then flagged).
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    #[schemars(with = "f64")]
    pub warmup_max: Duration,
    pub seed: u64,
    pub slo: Option<SloSpec>,
    /// Exit non-zero when more than this share of measured requests fail (requests still in
    /// flight when a duration-limited run stopped do not count).
    pub max_failure_share: f64,
    /// Open loop: at most this many requests in flight (vLLM's `--max-concurrency`).
    pub max_concurrency: Option<u32>,
    pub arrival_clock: ArrivalClock,
    /// Open a new connection for every request instead of reusing kept-alive ones
    /// (`--new-connection-per-request`; real clients reuse, so the default does).
    #[serde(default)]
    pub new_connection_per_request: bool,
    /// Requests kept in memory for an exact summary; past it the summary streams in
    /// bounded memory (`--exact-summary-limit`; `None`: keep every one, as test levels do).
    #[serde(default)]
    pub exact_summary_limit: Option<usize>,
    pub prefill: PrefillSetup,
    /// Deadlines of user idle latency and smooth goodput.
    pub ux: crate::metrics::ux::UxParams,
    /// Fluidity-index parameters (the curve comes from `prefill`).
    pub fluidity: crate::metrics::experience::FluidityParams,
    /// Server metrics, GPUs and energy collected beside the run.
    pub telemetry: crate::telemetry::TelemetryConfig,
    /// Seconds of GPU power sampled before the run to know the idle draw (when GPUs are
    /// measured).
    pub idle_power_s: f64,
    /// Per-request time limit.
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    #[schemars(with = "f64")]
    pub request_timeout: Duration,
    /// Per-request limits below the total timeout: first byte, first token, response and
    /// line sizes.
    #[serde(skip)]
    #[schemars(skip)]
    pub exchange_limits: crate::client::exchange::ExchangeLimits,
    /// Retries of rate-limited or unavailable answers; off by default so measurements are
    /// never silently retried.
    pub retry: RetryPolicy,
    /// After Ctrl-C or the duration limit: how long in-flight requests may finish.
    #[serde(serialize_with = "secs", deserialize_with = "from_secs")]
    #[schemars(with = "f64")]
    pub grace: Duration,
    /// Worker threads of the client runtime.
    pub client_threads: usize,
    /// Run folder.
    pub out_dir: PathBuf,
    /// The command line that started the run, credentials redacted.
    pub command_line: Vec<String>,
    /// Draw no progress line.
    pub quiet: bool,
    /// In a terminal, draw the live view rather than a one-line bar (`--no-live-view`).
    #[serde(default)]
    pub live_view: bool,
    /// Scale-out: the share of a plan this process sends (`run --plan --shard`); `None` in
    /// a plain run. Recorded in the shard's `shard.json`, not in `run.json`.
    #[serde(skip)]
    #[schemars(skip)]
    pub shard: Option<crate::scaleout::shard::ShardRun>,
    /// How fast the server answered the test request sent before any load
    /// (`runner::preflight`): what the warm-up's and the run's planned lengths are estimated
    /// from. `None` when no test request was sent (a configuration built in code).
    #[serde(skip)]
    #[schemars(skip)]
    pub preflight: Option<crate::runner::preflight::Speed>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_keeps_base_path() {
        let u = BaseUrl::parse("http://127.0.0.1:8000/v1/").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.base_path.as_str()),
            (false, "127.0.0.1", 8000, "/v1")
        );
        assert_eq!(u.path("/chat/completions"), "/v1/chat/completions");
        assert_eq!(Endpoint::Llamacpp.request_path(&u, None), "/completion");
        assert_eq!(Endpoint::Messages.request_path(&u, None), "/v1/messages");
        let u = BaseUrl::parse("https://api.example.com/openai/v1").unwrap();
        assert_eq!((u.port, u.base_path.as_str()), (443, "/openai/v1"));
        assert_eq!(
            Endpoint::Tgi.request_path(&u, None),
            "/openai/generate_stream"
        );
        assert_eq!(u.host_header(), "api.example.com");
        assert_eq!(u.to_string(), "https://api.example.com/openai/v1");
        let u = BaseUrl::parse("http://[::1]:9000").unwrap();
        assert_eq!(
            (u.socket_host(), u.port, u.base_path.as_str()),
            ("::1", 9000, "")
        );
        assert!(matches!(
            BaseUrl::parse("127.0.0.1:8000"),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            BaseUrl::parse("http://h:x/v1"),
            Err(UrlError::Invalid { .. })
        ));
        assert!(matches!(
            BaseUrl::parse("ftp://h/v1"),
            Err(UrlError::Scheme(_))
        ));
    }

    /// `user:pass@` used to be dropped silently; it is Basic auth, and never printed.
    #[test]
    fn credentials_in_the_url_become_basic_auth_and_stay_hidden() {
        let u = BaseUrl::parse("https://al%40ice:s3cr%3At@api.example.com/v1").unwrap();
        assert_eq!(u.basic_auth.as_ref().unwrap().expose(), "al@ice:s3cr:t");
        // base64("al@ice:s3cr:t")
        assert_eq!(
            u.basic_auth_header().as_deref(),
            Some("Basic YWxAaWNlOnMzY3I6dA==")
        );
        assert_eq!(u.to_string(), "https://api.example.com/v1");
        assert!(!format!("{u:?}").contains("s3cr"));
        assert!(BaseUrl::parse("http://h/v1").unwrap().basic_auth.is_none());
    }

    #[test]
    fn secrets_and_credential_headers_are_redacted() {
        let t = Target {
            url: BaseUrl::parse("http://u:sk-url@h/v1").unwrap(),
            model: "m".into(),
            endpoint: Endpoint::Chat,
            headers: vec![
                ("X-Api-Key".into(), "sk-123".into()),
                ("X-Team".into(), "a".into()),
            ],
            api_key: Some(Secret::new("sk-abc")),
            builtin_simulator: false,
            tls: Default::default(),
            proxy: None,
            websocket: None,
            grpc_backend: None,
        };
        let s = serde_json::to_string(&t).unwrap();
        assert!(!s.contains("sk-"), "{s}");
        assert!(s.contains("\"X-Team\":\"a\""));
        assert!(!format!("{t:?}").contains("sk-abc"));
    }
}
