//! Anthropic Messages (`POST {base}/messages`): request bodies and headers out, streamed
//! events in.
//!
//! Claude's API, also served by llama.cpp and vLLM. It differs from Chat Completions in ways
//! that matter for measuring: the system prompt is a top-level field, `max_tokens` is
//! required, authentication is `x-api-key` plus an `anthropic-version` header, thinking text
//! streams as `thinking_delta`, and usage is split across the stream: input counts arrive in
//! `message_start`, the output count in `message_delta` (cumulative). Anthropic's
//! `input_tokens` excludes tokens read from or written to the prompt cache, so the
//! normalised `prompt_tokens` adds them back, as Chat Completions' `prompt_tokens` counts the
//! whole prompt. Joining the two halves needs state, hence [`AnthropicStream`]. A tool call
//! is a `tool_use` content block (its id and name in `content_block_start`), its input
//! streamed as `input_json_delta` fragments; the block's `index` tells calls apart.

use super::event::{
    clamp_u32, error_message, event_kind, invalid_json, ApiEvent, OptStr, StreamParser,
    ToolCallDelta, ToolCallDeltas, Usage, UsageUpdate,
};
use super::Prompt;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The API version the parser is written against (the only one Anthropic documents for the
/// Messages API), sent as `anthropic-version` unless `--header` names another.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Builds the JSON body of a streaming Messages request. System (and `developer`) messages
/// go to the top-level `system` field, joined by blank lines, because the API accepts only
/// `user` and `assistant` turns in `messages`. An agent session's request also carries its
/// history's calls and results as `tool_use` and `tool_result` blocks (`tools`). The
/// options (`max_tokens`, which the API requires, the tools, `ignore_eos`, which Anthropic
/// rejects but llama.cpp reads) are written by `dialect`.
pub fn request_body(model: &str, prompt: &Prompt<'_>) -> Map<String, Value> {
    let is_system = |role: &str| role == "system" || role == "developer";
    let system: Vec<&str> = prompt
        .messages
        .iter()
        .filter(|(role, _)| is_system(role))
        .map(|(_, c)| c.as_str())
        .collect();
    let turns = super::tools::anthropic_turns(prompt, is_system);
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.to_owned()));
    if !system.is_empty() {
        body.insert("system".into(), Value::String(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(turns));
    body
}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: OptStr<'a>,
    /// `message_start`'s message; kept raw and read only for that event, so that no other
    /// event's `message` field (of whatever shape) can fail the parse.
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content_block: Option<WireDelta<'a>>,
    /// `content_block_delta`'s delta, or `message_delta`'s (`stop_reason`).
    #[serde(borrow, default)]
    delta: Option<WireDelta<'a>>,
    /// `message_delta`'s usage.
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(borrow, default)]
    id: OptStr<'a>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// A content block, or a delta of one, or `message_delta`'s delta: the fields are disjoint.
#[derive(Deserialize)]
struct WireDelta<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: OptStr<'a>,
    #[serde(borrow, default)]
    text: OptStr<'a>,
    #[serde(borrow, default)]
    thinking: OptStr<'a>,
    #[serde(borrow, default)]
    stop_reason: OptStr<'a>,
}

#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

/// Parser state for one Messages stream: the counts seen so far, so that the final usage
/// can join `message_start`'s input counts with `message_delta`'s output count.
#[derive(Debug, Default, Clone)]
pub struct AnthropicStream {
    input_tokens: Option<u64>,
    cache_read: Option<u64>,
    cache_creation: Option<u64>,
    output_tokens: Option<u64>,
}

impl AnthropicStream {
    /// A parser for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds a usage object in. Every field is a running total, so a later value replaces
    /// an earlier one (newer API versions repeat the input counts in `message_delta`).
    fn absorb(&mut self, u: &WireUsage) {
        self.input_tokens = u.input_tokens.or(self.input_tokens);
        self.output_tokens = u.output_tokens.or(self.output_tokens);
        self.cache_read = u.cache_read_input_tokens.or(self.cache_read);
        self.cache_creation = u.cache_creation_input_tokens.or(self.cache_creation);
    }

    /// The counts in the Chat Completions shape; the output count only once it is final
    /// enough to stand for the answer (`message_delta`), not `message_start`'s first count.
    fn usage(&self, with_output: bool) -> Option<UsageUpdate<'static>> {
        let cached = self.cache_read.unwrap_or(0) + self.cache_creation.unwrap_or(0);
        let u = Usage {
            prompt_tokens: self.input_tokens.map(|n| n + cached),
            completion_tokens: self.output_tokens.filter(|_| with_output),
            reasoning_tokens: None, // Anthropic does not report thinking tokens apart
            cached_tokens: self.cache_read,
        };
        (!u.is_empty()).then_some(UsageUpdate::Counts(u))
    }

    /// Parses one event of a Messages stream. `event` is the SSE `event:` field; when it
    /// is absent the payload's `type` decides. Unknown event types yield an empty event.
    pub fn parse_event<'a>(
        &mut self,
        event: Option<&str>,
        data: &'a [u8],
    ) -> Result<ApiEvent<'a>, String> {
        let wire: Wire<'a> = serde_json::from_slice(data).map_err(|e| invalid_json(data, &e))?;
        let mut out = ApiEvent::default();
        // `error` events, and the plain JSON error answers of servers that front this API.
        if let Some(err) = wire.error {
            out.error = Some(error_message(err));
            return Ok(out);
        }
        match event_kind(event, wire.kind.get()) {
            "message_start" => {
                let raw = wire.message.ok_or("message_start without a message")?;
                let msg: WireMessage<'a> =
                    serde_json::from_str(raw.get()).map_err(|e| invalid_json(data, &e))?;
                out.id = msg.id.0;
                if let Some(u) = &msg.usage {
                    self.absorb(u);
                    out.cumulative_completion = u.output_tokens.map(clamp_u32);
                }
                out.usage = self.usage(false);
            }
            "content_block_start" => {
                // Blocks start empty in practice; a non-empty start is text all the same.
                if let Some(block) = wire.content_block {
                    match block.kind.get() {
                        Some("text") => out.content = block.text.0.filter(|t| !t.is_empty()),
                        Some("thinking") => {
                            out.reasoning = block.thinking.0.filter(|t| !t.is_empty())
                        }
                        // The input streams in `input_json_delta`s; the start's `input` is
                        // the empty object.
                        Some("tool_use") => out.tool_calls = tool_part(data)?,
                        _ => {}
                    }
                }
            }
            "content_block_delta" => {
                if let Some(delta) = wire.delta {
                    match delta.kind.get() {
                        Some("text_delta") => out.content = delta.text.0,
                        Some("thinking_delta") => out.reasoning = delta.thinking.0,
                        // A tool's input, generated token by token like text.
                        Some("input_json_delta") => out.tool_calls = tool_part(data)?,
                        // signature_delta (verifies thinking) is not text the user reads.
                        _ => {}
                    }
                }
            }
            "message_delta" => {
                if let Some(reason) = wire.delta.and_then(|d| d.stop_reason.0) {
                    let reason = normalise_stop_reason(reason);
                    out.refusal = reason == "content_filter";
                    out.finish_reason = Some(reason);
                }
                if let Some(u) = &wire.usage {
                    self.absorb(u);
                    out.cumulative_completion = u.output_tokens.map(clamp_u32);
                }
                out.usage = self.usage(true);
            }
            "message_stop" => out.done = true,
            "error" => out.error = Some("error event without an error object".to_owned()),
            _ => {} // ping, content_block_stop, and types added later
        }
        Ok(out)
    }
}

impl StreamParser for AnthropicStream {
    fn parse<'a>(&mut self, event: Option<&str>, data: &'a [u8]) -> Result<ApiEvent<'a>, String> {
        AnthropicStream::parse_event(self, event, data)
    }
}

/// A `tool_use` block's start (its id and name) or an `input_json_delta` (a fragment of its
/// input), of the block at the event's `index`.
///
/// Read in a second pass over those events only: the fields it needs, added to [`Wire`]
/// and [`WireDelta`], made every text delta's parse slower, and tool-call events are few.
#[cold]
fn tool_part(data: &[u8]) -> Result<ToolCallDeltas<'_>, String> {
    #[derive(Deserialize)]
    struct Tool<'a> {
        #[serde(default)]
        index: Option<u32>,
        #[serde(borrow, default)]
        content_block: Option<Part<'a>>,
        #[serde(borrow, default)]
        delta: Option<Part<'a>>,
    }
    #[derive(Deserialize)]
    struct Part<'a> {
        #[serde(borrow, default)]
        id: OptStr<'a>,
        #[serde(borrow, default)]
        name: OptStr<'a>,
        #[serde(borrow, default)]
        partial_json: OptStr<'a>,
    }
    let wire: Tool<'_> = serde_json::from_slice(data).map_err(|e| invalid_json(data, &e))?;
    let Some(part) = wire.content_block.or(wire.delta) else {
        return Ok(ToolCallDeltas::default());
    };
    Ok(ToolCallDeltas::one(ToolCallDelta {
        index: wire.index.unwrap_or(0),
        id: part.id.0,
        name: part.name.0,
        arguments: part.partial_json.0,
        whole: false,
    }))
}

/// Anthropic's `stop_reason` in the Chat Completions vocabulary; reasons without an
/// equivalent (`pause_turn`, ...) are kept as sent.
fn normalise_stop_reason(reason: Cow<'_, str>) -> Cow<'_, str> {
    let mapped = match reason.as_ref() {
        "end_turn" | "stop_sequence" => "stop",
        // The second one is the context window running out, a limit all the same.
        "max_tokens" | "model_context_window_exceeded" => "length",
        "refusal" => "content_filter",
        "tool_use" => "tool_calls",
        _ => return reason,
    };
    Cow::Borrowed(mapped)
}

#[cfg(test)]
mod tests {
    use super::super::event::replay::run;
    use super::*;
    use serde_json::json;

    macro_rules! fixture {
        ($name:literal) => {
            include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/",
                $name
            ))
        };
    }

    #[test]
    fn llama_cpp_stream_replays() {
        let t = run(
            fixture!("llama.cpp-11434/messages_stream.http"),
            &mut AnthropicStream::new(),
        );
        assert_eq!(t.status, 200);
        assert_eq!(
            t.content,
            "Write one sentence about the sea.<|im_end|>\n<|im"
        );
        assert_eq!((t.content_events, t.borrowed), (16, 15));
        assert_eq!(
            t.id.as_deref(),
            Some("chatcmpl-UDffzt0UAPQ6aMIavyhEAb6oBk24NRcD")
        );
        // input_tokens 47 excludes the 1 cached token: the prompt was 48 tokens.
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":48,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":1}}"#
            )
        );
        assert_eq!(t.cumulative, [0, 16]);
        assert_eq!(t.finish, ["length"]);
        assert_eq!((t.done, t.errors.len()), (1, 0));
    }

    #[test]
    fn llama_cpp_error_answers_surface() {
        let t = run(
            fixture!("llama.cpp-11434/messages_error.http"),
            &mut AnthropicStream::new(),
        );
        assert_eq!(t.status, 400);
        assert_eq!(
            t.errors,
            ["exceed_context_size_error: request (5024 tokens) exceeds the available context size (4096 tokens), try increasing it"]
        );
        let t = run(
            fixture!("llama.cpp-11434/messages_bad_body.http"),
            &mut AnthropicStream::new(),
        );
        assert_eq!(t.status, 500);
        assert_eq!(t.errors, ["server_error: 'messages' is required"]);
        assert_eq!(t.done, 0);
    }

    #[test]
    fn thinking_stream_routes_reasoning_and_counts_cache() {
        let t = run(
            fixture!("synthetic/anthropic_thinking_synthetic.sse"),
            &mut AnthropicStream::new(),
        );
        assert_eq!(
            t.reasoning,
            "Let me work it out.\n\n27 * 453 = 27 * 400 + 27 * 53 = 10800 + 1431 = 12231."
        );
        assert_eq!(t.content, "27 * 453 = **12,231**.");
        assert!(!t.content.contains("EqQB"), "signatures are not text");
        // 25 uncached + 1024 read from cache + 0 written to it.
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":1049,"completion_tokens":95,"prompt_tokens_details":{"cached_tokens":1024}}"#
            )
        );
        assert_eq!(t.cumulative, [1, 95]);
        assert_eq!(t.finish, ["stop"]);
        assert_eq!(t.id.as_deref(), Some("msg_01XFDUDYJgAACzvnptvVoYEL"));
        assert_eq!((t.done, t.errors.len()), (1, 0));
    }

    #[test]
    fn overloaded_error_mid_stream() {
        let t = run(
            fixture!("synthetic/anthropic_tool_error_synthetic.sse"),
            &mut AnthropicStream::new(),
        );
        assert_eq!(t.content, "Checking the weather.");
        assert_eq!(t.errors, ["overloaded_error: Overloaded"]);
        assert_eq!((t.done, t.finish.len()), (0, 0));
        assert_eq!(
            t.usage.as_deref(),
            Some(r#"{"prompt_tokens":472}"#),
            "no completion count before message_delta"
        );
    }

    #[test]
    fn tool_use_blocks_stream_their_input() {
        let t = run(
            fixture!("synthetic/anthropic_tool_use_synthetic.sse"),
            &mut AnthropicStream::new(),
        );
        assert_eq!(t.content, "Checking both cities.");
        assert_eq!(t.tool_calls.len(), 2);
        let (id, name, args) = &t.tool_calls[&1];
        assert_eq!(
            (id.as_str(), name.as_str()),
            ("toolu_01P4r1s", "get_weather")
        );
        assert_eq!(args, r#"{"location": "Paris"}"#);
        let (id, _, args) = &t.tool_calls[&2];
        assert_eq!(id, "toolu_02T0ky0");
        assert_eq!(args, r#"{"location": "Tokyo"}"#);
        assert_eq!(
            t.argument_events, 5,
            "the empty first fragment is no output"
        );
        assert_eq!(t.finish, ["tool_calls"]);
        assert_eq!(t.done, 1);
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":410,"completion_tokens":27,"prompt_tokens_details":{"cached_tokens":0}}"#
            )
        );
        // The overloaded stream's half-streamed tool call is read too, before its error.
        let t = run(
            fixture!("synthetic/anthropic_tool_error_synthetic.sse"),
            &mut AnthropicStream::new(),
        );
        assert_eq!(t.tool_calls[&1].2, r#"{"location": "San Fra"#);
    }

    #[test]
    fn stop_reasons_and_event_names() {
        let mut p = AnthropicStream::new();
        for (reason, want) in [
            ("end_turn", "stop"),
            ("stop_sequence", "stop"),
            ("max_tokens", "length"),
            ("refusal", "content_filter"),
            ("tool_use", "tool_calls"),
            ("pause_turn", "pause_turn"),
        ] {
            let data = format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":3}}}}"#
            );
            let e = p.parse_event(None, data.as_bytes()).unwrap();
            assert_eq!(e.finish_reason.as_deref(), Some(want));
            let mut u = String::new();
            e.usage.unwrap().write_json(&mut u);
            assert_eq!(u, r#"{"completion_tokens":3}"#);
        }
        // Without an event line, the JSON type decides; unknown types are ignored.
        let e = p
            .parse_event(
                None,
                br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}"#,
            )
            .unwrap();
        assert!(matches!(e.content, Some(Cow::Borrowed("a"))));
        let e = p.parse_event(Some("ping"), br#"{"type": "ping"}"#).unwrap();
        assert!(e.content.is_none() && e.error.is_none() && !e.done);
        let e = p
            .parse_event(None, br#"{"type":"brand_new","message":"a string"}"#)
            .unwrap();
        assert!(e.error.is_none() && !e.done);
        assert!(p.parse_event(None, b"nope").is_err());
    }

    #[test]
    fn body_fields() {
        use super::super::test_body;
        use crate::client::Endpoint;
        let msgs = [
            ("system", "Be terse."),
            ("developer", "No lists."),
            ("user", "hi"),
            ("assistant", "hello"),
            ("user", "again"),
        ];
        let v = test_body(
            Endpoint::Messages,
            &msgs,
            16,
            Some(0.0),
            false,
            &[("thinking", json!({"type":"enabled","budget_tokens":1024}))],
        );
        assert_eq!(
            v,
            json!({
                "model": "m", "max_tokens": 16, "system": "Be terse.\n\nNo lists.",
                "messages": [{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},
                             {"role":"user","content":"again"}],
                "stream": true, "temperature": 0.0,
                "thinking": {"type":"enabled","budget_tokens":1024}
            })
        );
        let v = test_body(Endpoint::Messages, &msgs[2..3], 8, None, true, &[]);
        assert_eq!(
            v,
            json!({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"stream":true,"ignore_eos":true})
        );
    }
}
