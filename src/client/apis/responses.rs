//! The OpenAI Responses API (`POST {base}/responses`): request bodies out, streamed events in.
//!
//! The Responses API is OpenAI's successor to Chat Completions and the only OpenAI route
//! that streams reasoning summaries; vLLM, SGLang and llama.cpp serve it too. Its stream is
//! a sequence of typed events (`response.created`, `response.output_text.delta`, ...) that
//! ends with `response.completed`, `response.incomplete` or `response.failed`; there is no
//! `[DONE]`. Usage arrives once, inside the final response object, in the Responses shape
//! (`input_tokens`, `output_tokens`, ...), and is normalised here to the Chat Completions one.
//!
//! A function call streams as an output item: `response.output_item.added` (a
//! `function_call` item with its `call_id` and `name`), then its arguments in
//! `response.function_call_arguments.delta` events, then `.done` with the whole arguments
//! (read only when no fragment came first). `output_index` tells parallel calls apart.
//!
//! Parsing is stateless: every event carries what it means.

use super::event::{
    error_message, event_kind, invalid_json, ApiEvent, OptStr, StreamParser, ToolCallDelta,
    ToolCallDeltas, Usage, UsageUpdate,
};
use super::Prompt;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// Builds the JSON body of a streaming `/responses` request. A lone user message becomes
/// `input` as a plain string (the simplest form, accepted by every implementation); anything
/// else becomes a list of `{role, content}` messages, system messages included (the API
/// accepts `system` and `developer` roles in `input`, so `instructions` is not needed).
/// An agent session's request also carries its history's calls and results as items
/// (`tools`). The options (the length as `max_output_tokens`, the tools, `ignore_eos`,
/// which OpenAI rejects but vLLM and llama.cpp read) are written by `dialect`; usage always
/// comes with `response.completed`, so nothing asks for it.
pub fn request_body(model: &str, prompt: &Prompt<'_>) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.to_owned()));
    let input = match (prompt.messages, prompt.agent) {
        ([(role, content)], None) if role == "user" => Value::String(content.clone()),
        _ => super::tools::responses_input(prompt),
    };
    body.insert("input".into(), input);
    body
}

/// One event's payload: the union of the fields the handled event types use. Fields whose
/// type differs between event types are read leniently, so an unknown event never fails.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: OptStr<'a>,
    /// Text of the `*.delta` events (other deltas, such as audio, are not asked for).
    #[serde(borrow, default)]
    delta: OptStr<'a>,
    /// The response object of `response.created` ... `response.completed`.
    #[serde(borrow, default)]
    response: Option<WireResponse<'a>>,
    /// The `error` event's fields (`{type:"error", code, message, param}`).
    #[serde(borrow, default)]
    message: OptStr<'a>,
    #[serde(borrow, default)]
    code: Option<&'a RawValue>,
    /// An error object: a nested form of the `error` event, or a plain error answer.
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    /// llama.cpp adds its `timings` to `response.completed`.
    #[serde(borrow, default)]
    timings: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireResponse<'a> {
    #[serde(borrow, default)]
    id: OptStr<'a>,
    #[serde(borrow, default)]
    status: OptStr<'a>,
    #[serde(borrow, default)]
    incomplete_details: Option<WireIncomplete<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    /// Only whether the output holds a tool call is kept (it decides `tool_calls`).
    #[serde(default)]
    output: Option<HasToolCall>,
}

#[derive(Deserialize)]
struct WireIncomplete<'a> {
    #[serde(borrow, default)]
    reason: OptStr<'a>,
}

#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    input_tokens_details: Option<InputDetails>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// Responses counts map one to one: `output_tokens` already includes reasoning tokens,
    /// as `completion_tokens` does.
    fn normalise(&self) -> Usage {
        Usage {
            prompt_tokens: self.input_tokens,
            completion_tokens: self.output_tokens,
            reasoning_tokens: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
            cached_tokens: self
                .input_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens),
        }
    }
}

/// Whether a response's `output` list holds a tool call the client would have to run.
/// Read without building the list: only each item's `type` is looked at.
struct HasToolCall(bool);

impl<'de> Deserialize<'de> for HasToolCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Item<'a> {
            #[serde(borrow, default, rename = "type")]
            kind: OptStr<'a>,
        }
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = HasToolCall;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of output items")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HasToolCall, A::Error> {
                let mut found = false;
                while let Some(item) = seq.next_element::<Item<'de>>()? {
                    found |= matches!(item.kind.get(), Some("function_call" | "custom_tool_call"));
                }
                Ok(HasToolCall(found))
            }
        }
        d.deserialize_seq(Visit)
    }
}

/// Parses one event of a Responses stream. `event` is the SSE `event:` field; when it is
/// absent the payload's `type` decides. Unknown event types yield an empty event.
pub fn parse_event<'a>(event: Option<&str>, data: &'a [u8]) -> Result<ApiEvent<'a>, String> {
    // Not part of the API, but a proxy translating from Chat Completions may add it; the
    // stream's real end is `response.completed`.
    if data == b"[DONE]" {
        return Ok(ApiEvent::default());
    }
    let wire: Wire<'a> = serde_json::from_slice(data).map_err(|e| invalid_json(data, &e))?;
    let mut out = ApiEvent {
        timings: wire.timings,
        ..Default::default()
    };
    if let Some(err) = wire.error {
        out.error = Some(error_message(err));
    }
    let kind = event_kind(event, wire.kind.get());
    match kind {
        "response.output_text.delta" => out.content = wire.delta.0,
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            out.reasoning = wire.delta.0
        }
        "response.refusal.delta" => out.refusal = wire.delta.get().is_some_and(|d| !d.is_empty()),
        "response.output_item.added"
        | "response.function_call_arguments.delta"
        | "response.function_call_arguments.done" => out.tool_calls = tool_part(kind, data)?,
        "error" if out.error.is_none() => {
            let message = wire.message.get().unwrap_or("error event");
            out.error = Some(match wire.code {
                Some(c) if c.get() != "null" => {
                    format!("{}: {message}", c.get().trim_matches('"'))
                }
                _ => message.to_owned(),
            });
        }
        _ => {}
    }
    if let Some(resp) = wire.response {
        out.id = resp.id.0;
        out.usage = resp
            .usage
            .as_ref()
            .map(|u| u.normalise())
            .filter(|u| !u.is_empty())
            .map(UsageUpdate::Counts);
        let tool_call = resp.output.is_some_and(|o| o.0);
        match kind {
            "response.completed" => {
                out.done = true;
                out.finish_reason =
                    Some(Cow::Borrowed(if tool_call { "tool_calls" } else { "stop" }));
            }
            "response.incomplete" => {
                // An incomplete response is still a normal end: the limit was reached.
                out.done = true;
                let reason = resp.incomplete_details.and_then(|d| d.reason.0);
                out.finish_reason = Some(match reason {
                    Some(r) if r == "max_output_tokens" => Cow::Borrowed("length"),
                    Some(r) if r == "content_filter" => Cow::Borrowed("content_filter"),
                    Some(r) => r,
                    None => Cow::Borrowed("incomplete"),
                });
            }
            "response.failed" => {
                let status = resp.status.get().unwrap_or("failed");
                out.error = Some(match resp.error {
                    Some(e) => error_message(e),
                    None => format!("response {status}"),
                });
            }
            _ => {}
        }
    }
    Ok(out)
}

/// What a tool-call event of `kind` says: the call a `function_call` item starts
/// (`response.output_item.added`: its `call_id`, `name` and any arguments already written;
/// nothing for other items), an arguments fragment (`.delta`), or the whole arguments
/// (`.done`), of the call at its `output_index`.
///
/// Read in a second pass over those events only: the fields it needs, added to [`Wire`],
/// made every text delta's parse about 7 % slower (382 ns against 355 ns, release build,
/// alternated runs on one machine), and tool-call events are few.
#[cold]
fn tool_part<'a>(kind: &str, data: &'a [u8]) -> Result<ToolCallDeltas<'a>, String> {
    #[derive(Deserialize)]
    struct Tool<'a> {
        #[serde(default)]
        output_index: Option<u32>,
        #[serde(borrow, default)]
        item: Option<Item<'a>>,
        #[serde(borrow, default)]
        delta: OptStr<'a>,
        #[serde(borrow, default)]
        arguments: OptStr<'a>,
    }
    #[derive(Deserialize)]
    struct Item<'a> {
        #[serde(borrow, default, rename = "type")]
        kind: OptStr<'a>,
        #[serde(borrow, default)]
        call_id: OptStr<'a>,
        #[serde(borrow, default)]
        name: OptStr<'a>,
        #[serde(borrow, default)]
        arguments: OptStr<'a>,
    }
    let wire: Tool<'a> = serde_json::from_slice(data).map_err(|e| invalid_json(data, &e))?;
    let index = wire.output_index.unwrap_or(0);
    let part = match (kind, wire.item) {
        ("response.output_item.added", Some(item)) if item.kind.get() == Some("function_call") => {
            ToolCallDelta {
                index,
                id: item.call_id.0,
                name: item.name.0,
                arguments: item.arguments.0,
                whole: false,
            }
        }
        ("response.output_item.added", _) => return Ok(ToolCallDeltas::default()),
        _ => {
            let whole = kind.ends_with(".done");
            ToolCallDelta {
                index,
                arguments: if whole {
                    wire.arguments.0
                } else {
                    wire.delta.0
                },
                whole,
                ..Default::default()
            }
        }
    };
    Ok(ToolCallDeltas::one(part))
}

/// The Responses dialect as a [`StreamParser`] (it needs no state).
#[derive(Debug, Default, Clone, Copy)]
pub struct ResponsesStream;

impl StreamParser for ResponsesStream {
    fn parse<'a>(&mut self, event: Option<&str>, data: &'a [u8]) -> Result<ApiEvent<'a>, String> {
        parse_event(event, data)
    }
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
            fixture!("llama.cpp-11434/responses_stream.http"),
            &mut ResponsesStream,
        );
        assert_eq!(t.status, 200);
        assert_eq!(
            t.content,
            "Write one sentence about the sea.<|im_end|>\n<|im"
        );
        assert_eq!(t.content_events, 16, "one delta per generated token");
        assert_eq!(t.borrowed, 15, "only the escaped \\n delta allocates");
        assert_eq!(
            t.id.as_deref(),
            Some("resp_ovxCtdbbLCyyx399ZihIDlsEEqmQI5Qe")
        );
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":30,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":0}}"#
            )
        );
        // llama.cpp says `completed` even when max_output_tokens cut the answer (16 of 16).
        assert_eq!(t.finish, ["stop"]);
        assert_eq!((t.done, t.timings, t.errors.len()), (1, 1, 0));
        assert_eq!(t.reasoning, "");
    }

    #[test]
    fn llama_cpp_stream_from_messages_decodes_escapes() {
        let t = run(
            fixture!("llama.cpp-11434/responses_stream_messages.http"),
            &mut ResponsesStream,
        );
        assert_eq!(t.content, "Say café \"twice\".<|im");
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":47,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":18}}"#
            )
        );
        assert_eq!((t.done, t.finish.len()), (1, 1));
    }

    #[test]
    fn llama_cpp_error_answers_surface() {
        let t = run(
            fixture!("llama.cpp-11434/responses_error.http"),
            &mut ResponsesStream,
        );
        assert_eq!(t.status, 400);
        assert_eq!(
            t.errors,
            ["exceed_context_size_error: request (5024 tokens) exceeds the available context size (4096 tokens), try increasing it"]
        );
        assert_eq!(t.done, 0);
        let t = run(
            fixture!("llama.cpp-11434/responses_bad_body.http"),
            &mut ResponsesStream,
        );
        assert_eq!(t.errors, ["invalid_request_error: 'input' is required"]);
    }

    #[test]
    fn openai_reasoning_summary_stream() {
        let t = run(
            fixture!("synthetic/responses_reasoning_synthetic.sse"),
            &mut ResponsesStream,
        );
        assert_eq!(
            t.reasoning,
            "**Adding small numbers**\n\nThe user asks for 2 + 2, which is 4."
        );
        assert_eq!(t.content, "2 + 2 = 4.");
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":14,"completion_tokens":86,"completion_tokens_details":{"reasoning_tokens":64},"prompt_tokens_details":{"cached_tokens":0}}"#
            )
        );
        assert_eq!(t.id.as_deref(), Some("resp_68a1f0c2d3e4b5a6"));
        assert_eq!((t.finish.as_slice(), t.done), (&["stop".to_owned()][..], 1));
        assert!(t.errors.is_empty() && !t.refusal);
    }

    #[test]
    fn incomplete_stream_without_event_lines_ends_with_length() {
        let t = run(
            fixture!("synthetic/responses_incomplete_synthetic.sse"),
            &mut ResponsesStream,
        );
        assert_eq!(t.reasoning, "We need a long list.");
        assert_eq!(t.content, "1, 2, 3,");
        assert_eq!(t.finish, ["length"]);
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":20,"completion_tokens":12,"completion_tokens_details":{"reasoning_tokens":6},"prompt_tokens_details":{"cached_tokens":16}}"#
            )
        );
        assert_eq!(t.done, 1);
    }

    #[test]
    fn refusal_and_failure_streams() {
        let t = run(
            fixture!("synthetic/responses_refusal_synthetic.sse"),
            &mut ResponsesStream,
        );
        assert!(t.refusal, "the refusal deltas are seen");
        assert_eq!((t.content.as_str(), t.done), ("", 1));
        let t = run(
            fixture!("synthetic/responses_failed_synthetic.sse"),
            &mut ResponsesStream,
        );
        assert_eq!(t.content, "Partial");
        assert_eq!(
            t.errors,
            ["server_error: The model failed to generate a response."]
        );
        assert_eq!((t.done, t.finish.len()), (0, 0));
        assert_eq!(
            t.usage.as_deref(),
            Some(r#"{"prompt_tokens":9,"completion_tokens":1}"#)
        );
    }

    #[test]
    fn error_events_in_both_shapes() {
        let e = parse_event(
            Some("error"),
            br#"{"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":3}"#,
        )
        .unwrap();
        assert_eq!(e.error.as_deref(), Some("rate_limit_exceeded: Slow down"));
        let e = parse_event(None, br#"{"type":"error","code":null,"message":"m"}"#).unwrap();
        assert_eq!(e.error.as_deref(), Some("m"));
        let e = parse_event(
            None,
            br#"{"type":"error","error":{"type":"server_error","message":"boom"}}"#,
        )
        .unwrap();
        assert_eq!(e.error.as_deref(), Some("server_error: boom"));
        assert!(parse_event(None, b"{oops")
            .unwrap_err()
            .contains("invalid JSON"));
    }

    #[test]
    fn type_decides_without_event_line_and_unknown_types_are_ignored() {
        let e = parse_event(
            None,
            br#"{"type":"response.output_text.delta","delta":"hi"}"#,
        )
        .unwrap();
        assert!(matches!(e.content, Some(Cow::Borrowed("hi"))));
        // The event line wins when present.
        let e = parse_event(
            Some("response.refusal.delta"),
            br#"{"type":"response.refusal.delta","delta":"no"}"#,
        )
        .unwrap();
        assert!(e.refusal && e.content.is_none());
        for data in [
            &br#"{"type":"response.function_call_arguments.delta","delta":"{\"a\""}"#[..],
            br#"{"type":"response.output_text.annotation.added","annotation":{"type":"url_citation"}}"#,
            br#"{"type":"response.future_thing","delta":{"nested":[1]}}"#,
            b"[DONE]",
        ] {
            let e = parse_event(None, data).unwrap();
            assert!(e.content.is_none() && e.reasoning.is_none() && e.error.is_none());
            assert!(!e.done && e.finish_reason.is_none());
        }
    }

    #[test]
    fn tool_call_output_finishes_with_tool_calls() {
        let e = parse_event(
            None,
            br#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[{"type":"reasoning","summary":[]},{"type":"function_call","name":"f","arguments":"{}"}],"usage":{"input_tokens":5,"output_tokens":3}}}"#,
        )
        .unwrap();
        assert_eq!(e.finish_reason.as_deref(), Some("tool_calls"));
        assert!(e.done);
    }

    #[test]
    fn function_calls_stream_as_items_and_argument_deltas() {
        let t = run(
            fixture!("synthetic/responses_function_call_synthetic.sse"),
            &mut ResponsesStream,
        );
        assert_eq!(t.tool_calls.len(), 2);
        let (id, name, args) = &t.tool_calls[&0];
        assert_eq!((id.as_str(), name.as_str()), ("call_P4r1s", "get_weather"));
        assert_eq!(
            args, r#"{"location":"Paris"}"#,
            "the .done event is not added twice"
        );
        let (id, _, args) = &t.tool_calls[&1];
        assert_eq!(id, "call_T0ky0");
        assert_eq!(args, r#"{"location":"Tokyo"}"#, "arguments sent only whole");
        assert_eq!(t.argument_events, 4);
        assert_eq!(t.content, "");
        assert_eq!(
            (t.finish.as_slice(), t.done),
            (&["tool_calls".to_owned()][..], 1)
        );
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":64,"completion_tokens":16,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens_details":{"cached_tokens":0}}"#
            )
        );
        // A message item starts no call.
        let e = parse_event(
            None,
            br#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}}"#,
        )
        .unwrap();
        assert!(e.tool_calls.is_empty());
    }

    #[test]
    fn body_fields() {
        use super::super::test_body;
        use crate::client::Endpoint;
        let one = [("user", "hi")];
        let v = test_body(
            Endpoint::Responses,
            &one,
            16,
            Some(0.5),
            false,
            &[("store", json!(false)), ("max_output_tokens", json!(9))],
        );
        assert_eq!(
            v,
            json!({"model":"m","input":"hi","max_output_tokens":9,"stream":true,"temperature":0.5,"store":false})
        );
        let two = [("system", "be brief"), ("user", "hi")];
        let v = test_body(Endpoint::Responses, &two, 16, None, true, &[]);
        assert_eq!(
            v,
            json!({"model":"m","input":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_output_tokens":16,"stream":true,"ignore_eos":true})
        );
    }
}
