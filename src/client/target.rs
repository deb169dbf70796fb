//! The server under test: which API it speaks, its headers (credential values redacted
//! from every output) and the options of the generic WebSocket mode.

use super::base_url::{BaseUrl, Secret};
use serde::{Serialize, Serializer};

/// Which API to drive (`--endpoint`; docs/apis.md).
// The doc comments describe run.json's schema; each `help` is the value's line in `--help`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    schemars::JsonSchema,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// OpenAI Chat Completions, `POST {base}/chat/completions`
    #[value(help = "OpenAI Chat Completions: {base}/chat/completions")]
    Chat,
    /// OpenAI Completions, `POST {base}/completions`
    #[value(help = "OpenAI Completions: {base}/completions")]
    Completions,
    /// OpenAI Responses, `POST {base}/responses`
    #[value(help = "OpenAI Responses: {base}/responses")]
    Responses,
    /// Anthropic Messages, `POST {base}/messages`
    #[value(help = "Anthropic Messages: {base}/messages (x-api-key from ANTHROPIC_API_KEY)")]
    Messages,
    /// llama.cpp's native `POST {root}/completion`
    #[value(
        help = "llama.cpp's native {root}/completion (token counts and timings in the stream)"
    )]
    Llamacpp,
    /// Hugging Face TGI's native `POST {root}/generate_stream`
    #[value(help = "Hugging Face TGI's native {root}/generate_stream (one token per event)")]
    Tgi,
    /// SGLang's native `POST {root}/generate`
    #[value(help = "SGLang's native {root}/generate (running token and cache counts)")]
    Sglang,
    /// A generic JSON-over-WebSocket stream at `{base}/ws` (see [`WebSocketOptions`])
    #[value(help = "JSON messages over a WebSocket at {base}/ws (see the WebSocket options)")]
    Websocket,
    /// KServe v2 / Triton `ModelStreamInfer` over gRPC (HTTP/2)
    #[value(
        help = "KServe v2 / Triton ModelStreamInfer over gRPC (--url http://host:8001; --model is the Triton model, e.g. ensemble)"
    )]
    Grpc,
    /// OpenAI embeddings, `POST {base}/embeddings` (non-generative: one JSON answer)
    #[value(
        help = "OpenAI embeddings: {base}/embeddings (vLLM, TEI, llama.cpp --embeddings; non-generative, --items-per-request inputs each)"
    )]
    Embeddings,
    /// Rerank in the Cohere/Jina shape, `POST {base}/rerank` (non-generative: one JSON answer)
    #[value(
        help = "Rerank, Cohere/Jina shape: {base}/rerank (vLLM, TEI's /v1/rerank; non-generative, a query and --items-per-request documents)"
    )]
    Rerank,
}

impl Endpoint {
    /// Every endpoint, in `--endpoint` order.
    pub const ALL: [Endpoint; 11] = [
        Endpoint::Chat,
        Endpoint::Completions,
        Endpoint::Responses,
        Endpoint::Messages,
        Endpoint::Llamacpp,
        Endpoint::Tgi,
        Endpoint::Sglang,
        Endpoint::Websocket,
        Endpoint::Grpc,
        Endpoint::Embeddings,
        Endpoint::Rerank,
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
            Endpoint::Embeddings => "/embeddings",
            Endpoint::Rerank => "/rerank",
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
            Endpoint::Embeddings => "OpenAI embeddings",
            Endpoint::Rerank => "Cohere/Jina rerank",
        }
    }

    /// The transport and streaming protocol (draft 4.6.2 asks reports to state it).
    pub fn protocol(self) -> &'static str {
        match self {
            Endpoint::Websocket => "WebSocket",
            Endpoint::Grpc => "gRPC (HTTP/2)",
            Endpoint::Embeddings | Endpoint::Rerank => "HTTP/1.1, one JSON answer",
            _ => "HTTP/1.1, server-sent events",
        }
    }

    /// Whether the API generates tokens. Embeddings and rerank answer once, whole: their
    /// records have a request latency and items, but no first token, ITL or output tokens.
    pub fn is_generative(self) -> bool {
        !matches!(self, Endpoint::Embeddings | Endpoint::Rerank)
    }

    /// Whether the API can offer tools and carry tool calls and their results in the
    /// history (Chat Completions, Responses, Anthropic Messages), so agent sessions can be
    /// sent through it. The others (raw-text routes, WebSocket templates, gRPC, embeddings,
    /// rerank) have no field for tools: an agent workload there is refused before a run.
    /// Read from the API's row of the request-options table (`client::apis::dialect`).
    pub fn takes_tools(self) -> bool {
        crate::client::apis::dialect::dialect(self, Default::default())
            .tools
            .is_some()
    }

    /// The items a request of `texts` workload texts carries: every text is an input to
    /// embed; for rerank the first is the query, the rest the documents. 0 for the
    /// generative APIs.
    pub fn items_of(self, texts: usize) -> u32 {
        match self {
            Endpoint::Embeddings => texts as u32,
            Endpoint::Rerank => texts.saturating_sub(1) as u32,
            _ => 0,
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
    /// The first half of every request's W3C trace id (16 hex digits; the second half is the
    /// record's id): `None` when `--no-trace-context` sends no `traceparent` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id_prefix: Option<String>,
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

fn headers_from_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<(String, String)>, D::Error> {
    let m = <std::collections::BTreeMap<String, String> as serde::Deserialize>::deserialize(d)?;
    Ok(m.into_iter().collect())
}
