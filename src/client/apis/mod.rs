//! The APIs servebench drives: how each one's request is written and its stream read.
//!
//! One file per API. Each writes its own part of a request body (the model, the [`Prompt`]
//! in its shape); the shared [`RequestOptions`] are written in each API's words from one
//! table ([`dialect`]). Each parses its stream into the same [`ApiEvent`]s through one
//! trait ([`StreamParser`]), so the exchange (`client::exchange`), the record and every
//! metric are shared. [`Parser`] holds one dialect's parser per request without boxing.
//!
//! | `--endpoint` | route | stream |
//! |---|---|---|
//! | `chat` | `{base}/chat/completions` | SSE chunks, `[DONE]` ([`openai`]) |
//! | `completions` | `{base}/completions` | SSE chunks, `[DONE]` ([`openai`]) |
//! | `responses` | `{base}/responses` | typed SSE events ([`responses`]) |
//! | `messages` | `{base}/messages` | typed SSE events ([`anthropic`]) |
//! | `llamacpp` | `{root}/completion` | SSE JSON per token ([`llamacpp`]) |
//! | `tgi` | `{root}/generate_stream` | SSE JSON per token ([`tgi`]) |
//! | `sglang` | `{root}/generate` | SSE, cumulative text ([`sglang`]) |
//! | `websocket` | `{base}/ws` | JSON messages over WebSocket ([`websocket`]) |
//! | `grpc` | `ModelStreamInfer` | gRPC messages ([`kserve`]; not JSON: read directly) |
//! | `embeddings` | `{base}/embeddings` | one JSON answer ([`embeddings`], [`answer`]) |
//! | `rerank` | `{base}/rerank` | one JSON answer ([`rerank`], [`answer`]) |

pub mod answer;
pub mod anthropic;
pub mod dialect;
pub mod embeddings;
pub mod event;
mod json_scan;
pub mod kserve;
pub mod llamacpp;
pub mod media;
pub mod openai;
mod openai_fast;
pub mod rerank;
pub mod responses;
pub mod sglang;
pub mod tgi;
pub mod tool_delta;
pub mod tools;
pub mod websocket;

pub use event::{
    ApiEvent, OptStr, StreamParser, ToolCallDelta, ToolCallDeltas, Usage, UsageUpdate,
};

use crate::client::{Endpoint, RequestOptions, Target, WebSocketOptions};
use serde_json::{json, Value};
use std::sync::Arc;

/// What a request asks for: the prompt and its limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt<'a> {
    /// Chat messages (`role`, `content`); APIs that take raw text get the contents joined.
    pub messages: &'a [(String, String)],
    pub max_tokens: u32,
    /// Per-request body fields from the workload (a class's overrides), applied last.
    pub overrides: &'a [(String, Value)],
    /// Agent sessions: the tools offered and the tool parts of the history (see
    /// `workload::agent`); `None` for every other request.
    pub agent: Option<&'a crate::workload::agent::AgentParts>,
}

impl Prompt<'_> {
    /// The messages as a JSON array of `{role, content}`.
    pub fn messages_json(&self) -> Value {
        Value::Array(
            self.messages
                .iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect(),
        )
    }

    /// The prompt as raw text, for APIs without chat messages: the contents joined by blank
    /// lines (no chat template is applied).
    pub fn joined_text(&self) -> String {
        let parts: Vec<&str> = self.messages.iter().map(|(_, c)| c.as_str()).collect();
        parts.join("\n\n")
    }
}

/// Builds the body of a streaming request for `target`: the API's own part from its file
/// (the model, the prompt in its shape), then the shared options in the API's words from
/// its [`dialect`] row, `--extra-body` fields and the workload's per-request overrides last
/// (the overrides win; for TGI and SGLang an object under their parameter key,
/// `parameters` or `sampling_params`, is merged into it rather than replacing it).
pub fn request_body(target: &Target, prompt: &Prompt<'_>, opts: &RequestOptions) -> Vec<u8> {
    let (endpoint, model) = (target.endpoint, target.model.as_str());
    let backend = target.grpc_backend.unwrap_or_default();
    let mut body = match endpoint {
        Endpoint::Chat | Endpoint::Completions => openai::request_body(endpoint, model, prompt),
        Endpoint::Responses => responses::request_body(model, prompt),
        Endpoint::Embeddings => embeddings::request_body(model, prompt),
        Endpoint::Rerank => rerank::request_body(model, prompt),
        Endpoint::Messages => anthropic::request_body(model, prompt),
        Endpoint::Llamacpp => llamacpp::request_body(prompt),
        Endpoint::Tgi => tgi::request_body(prompt),
        Endpoint::Sglang => sglang::request_body(prompt),
        Endpoint::Grpc => {
            // Protobuf, not JSON: the options become tensors (from the same dialect row);
            // --extra-body and body overrides do not apply.
            use prost::Message;
            return kserve::request(backend, model, "", prompt, opts).encode_to_vec();
        }
        Endpoint::Websocket => {
            let ws = target.websocket.clone().unwrap_or_default();
            // The template was checked when the run was configured (`check_template`); its
            // placeholders say the options.
            websocket::request_message(&ws, model, prompt, opts).unwrap_or_default()
        }
    };
    dialect::dialect(endpoint, backend).write(&mut body, prompt, opts);
    serde_json::to_vec(&Value::Object(body)).expect("a JSON map always serialises")
}

/// One request's stream parser, for whichever API it speaks (an enum rather than a box:
/// one per request, no allocation, no virtual call per event).
#[derive(Debug, Clone)]
pub enum Parser {
    OpenAi(openai::OpenAiStream),
    Responses(responses::ResponsesStream),
    Anthropic(anthropic::AnthropicStream),
    LlamaCpp(llamacpp::LlamaCppStream),
    Tgi(tgi::TgiStream),
    Sglang(sglang::SglangStream),
    WebSocket(websocket::WsJsonStream),
}

impl Default for Parser {
    fn default() -> Self {
        Parser::OpenAi(openai::OpenAiStream)
    }
}

/// A fresh parser for one response from `target` (its WebSocket paths included).
pub fn parser_for_target(target: &Target) -> Parser {
    match (target.endpoint, &target.websocket) {
        (Endpoint::Websocket, Some(ws)) => match websocket::WsPaths::new(ws) {
            Ok(paths) => Parser::WebSocket(websocket::WsJsonStream::new(Arc::new(paths))),
            // Checked when the run was configured; the defaults stand in.
            Err(_) => parser_for(Endpoint::Websocket),
        },
        (e, _) => parser_for(e),
    }
}

/// A fresh parser for one response from `endpoint` (WebSocket: the default paths).
pub fn parser_for(endpoint: Endpoint) -> Parser {
    match endpoint {
        Endpoint::Chat | Endpoint::Completions => Parser::OpenAi(openai::OpenAiStream),
        Endpoint::Responses => Parser::Responses(responses::ResponsesStream),
        Endpoint::Messages => Parser::Anthropic(anthropic::AnthropicStream::new()),
        Endpoint::Llamacpp => Parser::LlamaCpp(llamacpp::LlamaCppStream::new()),
        Endpoint::Tgi => Parser::Tgi(tgi::TgiStream::new()),
        Endpoint::Sglang => Parser::Sglang(sglang::SglangStream::new()),
        // gRPC messages are protobuf, read by `client::grpc` without a text parser; the
        // non-generative answers are read whole (`answer`), not as events.
        Endpoint::Grpc | Endpoint::Embeddings | Endpoint::Rerank => Parser::default(),
        Endpoint::Websocket => Parser::WebSocket(websocket::WsJsonStream::new(Arc::new(
            websocket::WsPaths::new(&WebSocketOptions::default())
                .expect("the default paths are valid"),
        ))),
    }
}

impl StreamParser for Parser {
    fn parse<'a>(&mut self, event: Option<&str>, data: &'a [u8]) -> Result<ApiEvent<'a>, String> {
        match self {
            Parser::OpenAi(p) => p.parse(event, data),
            Parser::Responses(p) => p.parse(event, data),
            Parser::Anthropic(p) => p.parse(event, data),
            Parser::LlamaCpp(p) => p.parse(event, data),
            Parser::Tgi(p) => p.parse(event, data),
            Parser::Sglang(p) => p.parse(event, data),
            Parser::WebSocket(p) => p.parse(event, data),
        }
    }
}

/// The credential headers of a request to `target`, as `Name: value\r\n` lines: the API key
/// as `x-api-key` (Anthropic Messages) or `Authorization: Bearer` (every other API), else
/// the URL's `user:pass@` as Basic auth; and Anthropic's `anthropic-version` unless
/// `--header` sets one.
pub fn write_auth_headers(target: &Target, head: &mut String) {
    use std::fmt::Write;
    let messages = target.endpoint == Endpoint::Messages;
    if let Some(key) = &target.api_key {
        if messages {
            let _ = write!(head, "x-api-key: {}\r\n", key.expose());
        } else {
            let _ = write!(head, "Authorization: Bearer {}\r\n", key.expose());
        }
    } else if let Some(auth) = target.url.basic_auth_header() {
        let _ = write!(head, "Authorization: {auth}\r\n");
    }
    if messages
        && !target
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("anthropic-version"))
    {
        let _ = write!(
            head,
            "anthropic-version: {}\r\n",
            anthropic::ANTHROPIC_VERSION
        );
    }
}

/// The environment variable the API key is read from when `--api-key-env` is not given.
pub fn default_key_env(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Messages => "ANTHROPIC_API_KEY",
        _ => "OPENAI_API_KEY",
    }
}

/// Test support: the body for `endpoint` from `(role, content)` pairs, as JSON.
#[cfg(test)]
pub fn test_body(
    endpoint: Endpoint,
    messages: &[(&str, &str)],
    max_tokens: u32,
    temperature: Option<f64>,
    ignore_eos: bool,
    extra: &[(&str, Value)],
) -> Value {
    let messages: Vec<(String, String)> = messages
        .iter()
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect();
    let opts = RequestOptions {
        ignore_eos,
        prefix_cache: true,
        usage_per_chunk: false,
        temperature,
        extra_body: extra
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    };
    let prompt = Prompt {
        messages: &messages,
        max_tokens,
        overrides: &[],
        agent: None,
    };
    let mut target = tests::target(endpoint, None, &[]);
    target.model = "m".into();
    serde_json::from_slice(&request_body(&target, &prompt, &opts)).unwrap()
}

#[cfg(test)]
#[path = "bodies_tests.rs"]
mod bodies_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{BaseUrl, Secret};

    pub fn target(endpoint: Endpoint, key: Option<&str>, headers: &[(&str, &str)]) -> Target {
        Target {
            url: BaseUrl::parse("http://h:1/v1").unwrap(),
            model: "m".into(),
            endpoint,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            api_key: key.map(Secret::new),
            builtin_simulator: false,
            tls: Default::default(),
            proxy: None,
            websocket: None,
            grpc_backend: None,
            trace_id_prefix: None,
        }
    }

    #[test]
    fn anthropic_authenticates_with_x_api_key_and_a_version() {
        let mut h = String::new();
        write_auth_headers(&target(Endpoint::Messages, Some("k"), &[]), &mut h);
        assert_eq!(h, "x-api-key: k\r\nanthropic-version: 2023-06-01\r\n");
        let mut h = String::new();
        let t = target(
            Endpoint::Messages,
            None,
            &[("Anthropic-Version", "2024-01-01")],
        );
        write_auth_headers(&t, &mut h);
        assert_eq!(h, "", "a --header version wins; no key, no credential");
        for e in [Endpoint::Chat, Endpoint::Responses, Endpoint::Tgi] {
            let mut h = String::new();
            write_auth_headers(&target(e, Some("k"), &[]), &mut h);
            assert_eq!(h, "Authorization: Bearer k\r\n");
        }
        assert_eq!(default_key_env(Endpoint::Messages), "ANTHROPIC_API_KEY");
        assert_eq!(default_key_env(Endpoint::Sglang), "OPENAI_API_KEY");
    }

    #[test]
    fn every_endpoint_has_a_parser_of_its_dialect() {
        // One content event per dialect, through the common parser type.
        let cases: [(Endpoint, Option<&str>, &[u8]); 8] = [ // every text dialect (not gRPC)
            (Endpoint::Chat, None, br#"{"choices":[{"delta":{"content":"a"}}]}"#),
            (Endpoint::Completions, None, br#"{"choices":[{"text":"a"}]}"#),
            (
                Endpoint::Responses,
                Some("response.output_text.delta"),
                br#"{"type":"response.output_text.delta","delta":"a"}"#,
            ),
            (
                Endpoint::Messages,
                Some("content_block_delta"),
                br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}"#,
            ),
            (Endpoint::Llamacpp, None, br#"{"content":"a","stop":false,"tokens_predicted":1}"#),
            (Endpoint::Tgi, None, br#"{"index":1,"token":{"id":1,"text":"a","special":false}}"#),
            (Endpoint::Sglang, None, br#"{"text":"a","meta_info":{"completion_tokens":1}}"#),
            (Endpoint::Websocket, None, br#"{"type":"delta","delta":"a"}"#),
        ];
        for (e, name, data) in cases {
            let ev = parser_for(e).parse(name, data).unwrap();
            assert_eq!(ev.content.as_deref(), Some("a"), "{e:?}");
        }
    }
}
