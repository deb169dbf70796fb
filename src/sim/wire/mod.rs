//! The stream formats the simulator speaks: one writer per response, in its API's dialect.
//!
//! The simulated engine decides *when* tokens leave (`responder`); this file decides what
//! the bytes look like for each API, written as real servers write them (checked against
//! recorded llama.cpp streams for the Responses, Messages and `/completion` routes, and
//! against the APIs' documentation and sources for the others). Events are built by hand
//! into one `String` per write: no JSON tree per token.
//!
//! `tokens` writes the events that carry tokens, `ending` the ones that end a stream (its
//! normal end, a refusal, an error), `tool_call` an answer that calls a tool.

mod ending;
#[cfg(test)]
mod tests;
mod tokens;
mod tool_call;

pub use tool_call::SimToolCall;

use std::fmt::Write as _;

/// The APIs the simulator serves (the client's `--endpoint`s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimApi {
    Chat,
    Completions,
    Responses,
    Messages,
    Llamacpp,
    Tgi,
    Sglang,
    /// JSON messages over a WebSocket (`GET /v1/ws`), one per line of a write.
    Websocket,
    /// KServe v2 / Triton `ModelStreamInfer`: one line per response, turned into protobuf
    /// messages by `sim::grpc`.
    Grpc,
}

impl SimApi {
    /// The API served at `path`, for `POST` requests.
    pub fn for_path(path: &str) -> Option<SimApi> {
        Some(match path {
            "/v1/chat/completions" => SimApi::Chat,
            "/v1/completions" => SimApi::Completions,
            "/v1/responses" => SimApi::Responses,
            "/v1/messages" => SimApi::Messages,
            "/completion" => SimApi::Llamacpp,
            "/generate_stream" => SimApi::Tgi,
            "/generate" => SimApi::Sglang,
            _ => return None,
        })
    }

    /// Whether reasoning tokens stream apart from the answer (the native routes have no
    /// such channel: everything is text).
    pub fn streams_reasoning(self) -> bool {
        matches!(
            self,
            SimApi::Chat | SimApi::Responses | SimApi::Messages | SimApi::Websocket
        )
    }

    /// The prefix of response ids.
    pub fn id_prefix(self) -> &'static str {
        match self {
            SimApi::Chat => "chatcmpl",
            SimApi::Completions => "cmpl",
            SimApi::Responses => "resp",
            SimApi::Messages => "msg",
            SimApi::Llamacpp => "llamacpp",
            SimApi::Tgi => "tgi",
            SimApi::Sglang => "sglang",
            SimApi::Websocket => "ws",
            SimApi::Grpc => "grpc",
        }
    }
}

/// Server-side times of one response, for the APIs that report them (llama.cpp `timings`).
#[derive(Debug, Clone, Default)]
pub struct ServerTimes {
    /// From receipt to the first token, ms.
    pub prompt_ms: f64,
    /// From the first to the last token, ms.
    pub predicted_ms: f64,
    /// Per-token emit times since receipt, ms, when the configuration reports them.
    pub token_times_ms: Option<Vec<f64>>,
}

/// Which content block a Messages stream has open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Thinking,
    Text,
    /// A `tool_use` block (a tool-call answer).
    Tool,
}

/// Writes one response's events.
#[derive(Debug)]
pub struct StreamWriter {
    pub api: SimApi,
    pub id: String,
    /// The model name as a JSON string literal (quotes and escapes included).
    pub model_json: String,
    pub created: u64,
    /// Chat and completions: a usage-only last chunk (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Chat and completions: usage in every chunk (`continuous_usage_stats`).
    pub continuous: bool,
    pub prompt_tokens: u32,
    /// Tokens at the start of each answer that are reasoning (APIs that stream it apart).
    pub reasoning_tokens: u32,
    /// Prompt tokens served from the prefix cache (known once scheduled).
    pub cached: u32,
    /// Responses: the sequence number of the next event.
    seq: u64,
    /// Messages: the open block and the index of the next one.
    block: Option<Block>,
    next_index: u32,
    /// Responses: whether the message item was announced.
    message_open: bool,
    /// SGLang: the text so far (it streams cumulative text).
    text: String,
    /// The tool call the answer makes, when the request asked for one (Chat, Responses and
    /// Messages only): its tokens after any reasoning are the call's arguments.
    pub tool_call: Option<SimToolCall>,
}

impl StreamWriter {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        api: SimApi,
        id: String,
        model_json: String,
        created: u64,
        include_usage: bool,
        continuous: bool,
        prompt_tokens: u32,
        reasoning_tokens: u32,
    ) -> Self {
        Self {
            api,
            id,
            model_json,
            created,
            include_usage,
            continuous,
            prompt_tokens,
            reasoning_tokens: if api.streams_reasoning() {
                reasoning_tokens
            } else {
                0
            },
            cached: 0,
            seq: 0,
            block: None,
            next_index: 0,
            message_open: false,
            text: String::new(),
            tool_call: None,
        }
    }

    /// Reasoning tokens of an answer of `completion` tokens.
    fn reasoning_of(&self, completion: u32) -> u32 {
        self.reasoning_tokens.min(completion)
    }

    /// A Responses-API event with its sequence number.
    fn typed(&mut self, out: &mut String, kind: &str, fields: std::fmt::Arguments<'_>) {
        let _ = write!(
            out,
            "event: {kind}\ndata: {{\"type\":\"{kind}\",{fields},\"sequence_number\":{}}}\n\n",
            self.seq
        );
        self.seq += 1;
    }

    /// A Chat Completions / Completions chunk.
    fn chat_chunk(&self, out: &mut String, body: &str, finish: Option<&str>, usage: Option<&str>) {
        let object = if self.api == SimApi::Chat {
            "chat.completion.chunk"
        } else {
            "text_completion"
        };
        let _ = write!(
            out,
            "data: {{\"id\":\"{}\",\"object\":\"{object}\",\"created\":{},\"model\":{},\"choices\":[{{\"index\":0,{body},\"finish_reason\":",
            self.id, self.created, self.model_json
        );
        match finish {
            Some(f) => {
                let _ = write!(out, "\"{f}\"");
            }
            None => out.push_str("null"),
        }
        out.push_str("}]");
        if let Some(u) = usage {
            let _ = write!(out, ",\"usage\":{u}");
        }
        out.push_str("}\n\n");
    }

    /// Chat Completions usage.
    fn chat_usage(&self, completion: u32) -> String {
        format!(
            "{{\"prompt_tokens\":{},\"completion_tokens\":{completion},\"total_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":{}}},\"completion_tokens_details\":{{\"reasoning_tokens\":{}}}}}",
            self.prompt_tokens,
            self.prompt_tokens + completion,
            self.cached,
            self.reasoning_of(completion)
        )
    }

    /// Responses usage.
    fn responses_usage(&self, completion: u32) -> String {
        format!(
            "{{\"input_tokens\":{},\"input_tokens_details\":{{\"cached_tokens\":{}}},\"output_tokens\":{completion},\"output_tokens_details\":{{\"reasoning_tokens\":{}}},\"total_tokens\":{}}}",
            self.prompt_tokens,
            self.cached,
            self.reasoning_of(completion),
            self.prompt_tokens + completion
        )
    }

    /// The response object of the Responses API's lifecycle events.
    fn response_object(&self, status: &str, tail: &str) -> String {
        self.response_object_with(status, "[]", tail)
    }

    /// The response object with its `output` list (JSON text).
    fn response_object_with(&self, status: &str, output: &str, tail: &str) -> String {
        format!(
            "{{\"id\":\"{}\",\"object\":\"response\",\"created_at\":{},\"status\":\"{status}\",\"model\":{},\"output\":{output}{tail}}}",
            self.id, self.created, self.model_json
        )
    }

    /// Events before the first token (written with it).
    pub fn start(&mut self, out: &mut String) {
        match self.api {
            SimApi::Chat => self.chat_chunk(
                out,
                "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}",
                None,
                None,
            ),
            SimApi::Responses => {
                let r = self.response_object("in_progress", "");
                self.typed(out, "response.created", format_args!("\"response\":{r}"));
                self.typed(
                    out,
                    "response.in_progress",
                    format_args!("\"response\":{r}"),
                );
            }
            SimApi::Messages => {
                // Anthropic's `input_tokens` excludes the tokens read from the cache.
                let _ = write!(
                    out,
                    "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"{}\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":{},\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{{\"input_tokens\":{},\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":{},\"output_tokens\":1}}}}}}\n\nevent: ping\ndata: {{\"type\":\"ping\"}}\n\n",
                    self.id,
                    self.model_json,
                    self.prompt_tokens - self.cached.min(self.prompt_tokens),
                    self.cached
                );
            }
            SimApi::Completions
            | SimApi::Llamacpp
            | SimApi::Tgi
            | SimApi::Sglang
            | SimApi::Websocket
            | SimApi::Grpc => {}
        }
    }
}
