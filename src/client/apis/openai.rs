//! OpenAI Chat Completions and Completions: request bodies out, streamed chunks in.
//!
//! Chunk parsing borrows from the event's bytes ([`OptStr`] only allocates when a string
//! has escapes) and keeps only what the record needs. `usage` and `timings` are kept as the
//! server sent them; several dialects are read: `delta.content`, `text` (completions),
//! `delta.reasoning_content` (DeepSeek, SGLang, llama.cpp) and `delta.reasoning` (vLLM since
//! late 2025, OpenRouter), a usage-only last chunk with empty `choices`, role-only first
//! chunks, `[DONE]`, `{"error": ...}` events, and tool calls streamed in
//! `delta.tool_calls` (several calls may share a delta; their `index` tells them apart).

use super::event::{
    error_message, invalid_json, ApiEvent, OptStr, StreamParser, ToolCallDelta, ToolCallDeltas,
    UsageUpdate,
};
use super::openai_fast::{chunk_parts, ChunkParts};
use super::Prompt;
use crate::client::Endpoint;
use crate::record::ServerTiming;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The API's own part of a streaming Chat Completions or Completions request: the model
/// and the prompt (`messages`, or `prompt` as the contents joined). The options (the
/// length as `max_tokens`, `stream_options`, `ignore_eos` with vLLM's `min_tokens`, the
/// agent's tools on Chat) are written by `dialect`.
pub fn request_body(endpoint: Endpoint, model: &str, prompt: &Prompt<'_>) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.to_owned()));
    if endpoint == Endpoint::Completions {
        body.insert("prompt".into(), Value::String(prompt.joined_text()));
    } else {
        body.insert("messages".into(), super::tools::chat_messages(prompt));
    }
    body
}

#[derive(Deserialize)]
struct WireChunk<'a> {
    #[serde(borrow, default)]
    id: OptStr<'a>,
    /// Only the first choice is kept (n = 1 is what the client asks for), read without
    /// allocating a vector per chunk.
    #[serde(borrow, default)]
    choices: Option<FirstOf<WireChoice<'a>>>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timings: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// The first element of a JSON array (the rest is skipped), or `None` for `[]`.
struct FirstOf<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for FirstOf<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = FirstOf<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<T>()?;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(FirstOf(first))
            }
        }
        d.deserialize_seq(Visit(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct WireChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<WireDelta<'a>>,
    #[serde(borrow, default)]
    text: OptStr<'a>,
    #[serde(borrow, default)]
    finish_reason: OptStr<'a>,
}

#[derive(Deserialize)]
struct WireDelta<'a> {
    #[serde(borrow, default)]
    content: OptStr<'a>,
    #[serde(borrow, default)]
    reasoning_content: OptStr<'a>,
    #[serde(borrow, default)]
    reasoning: OptStr<'a>,
    #[serde(borrow, default)]
    refusal: OptStr<'a>,
}

/// One entry of a delta's `tool_calls`: the first for a call carries its `id` and
/// `function.name`, every one may carry a fragment of `function.arguments`.
#[derive(Deserialize)]
struct WireToolCall<'a> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(borrow, default)]
    id: OptStr<'a>,
    #[serde(borrow, default)]
    function: Option<WireFunction<'a>>,
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(borrow, default)]
    name: OptStr<'a>,
    #[serde(borrow, default)]
    arguments: OptStr<'a>,
}

/// A delta's `tool_calls` array read straight into [`ToolCallDeltas`] (no vector for the
/// common delta of one call). An entry without `index` (some servers omit it when there is
/// one call) takes its place in the array.
struct ChatToolCalls<'a>(ToolCallDeltas<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for ChatToolCalls<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = ChatToolCalls<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of tool calls")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = ToolCallDeltas::default();
                let mut position = 0u32;
                while let Some(call) = seq.next_element::<WireToolCall<'de>>()? {
                    let (name, arguments) = match call.function {
                        Some(f) => (f.name.0, f.arguments.0),
                        None => (None, None),
                    };
                    out.push(ToolCallDelta {
                        index: call.index.unwrap_or(position),
                        id: call.id.0,
                        name,
                        arguments,
                        whole: false,
                    });
                    position += 1;
                }
                Ok(ChatToolCalls(out))
            }
        }
        d.deserialize_seq(Visit(std::marker::PhantomData))
    }
}

/// Parses one Chat Completions or Completions SSE data payload (stateless). Most chunks
/// are read by the fast reader (`openai_fast.rs`); the rest, and every error, by serde.
pub fn parse_chunk(data: &[u8]) -> Result<ApiEvent<'_>, String> {
    if data == b"[DONE]" {
        return Ok(ApiEvent {
            done: true,
            ..Default::default()
        });
    }
    let (parts, error) = match chunk_parts(data) {
        Some(parts) => (parts, None),
        None => serde_parts(data)?,
    };
    let mut out = ApiEvent {
        id: parts.id,
        usage: parts.usage.map(UsageUpdate::Raw),
        timings: parts.timings,
        error,
        finish_reason: parts.finish_reason,
        ..Default::default()
    };
    if parts.has_delta {
        out.content = parts.content;
        out.reasoning = parts.reasoning_content.or(parts.reasoning);
        out.refusal = parts.refusal.is_some_and(|r| !r.is_empty());
    }
    if out.content.is_none() {
        out.content = parts.text;
    }
    // A delta that carries text is not looked at for tool calls: servers stream a call's
    // parts in deltas of their own (`content` null or empty), and the text deltas, the hot
    // path, then cost what they did before tool calls were read (3 instructions more a
    // chunk, callgrind; looking for the key in every delta cost 206 more, 3.7 %).
    let text = |t: &Option<std::borrow::Cow<'_, str>>| t.as_deref().is_some_and(|t| !t.is_empty());
    if !text(&out.content) && !text(&out.reasoning) && TOOL_CALLS_KEY.find(data).is_some() {
        out.tool_calls = tool_calls(data)?;
    }
    Ok(out)
}

/// The reference reader: serde's derive over the whole chunk, and the error event's
/// message. Takes what the fast reader leaves.
pub(super) fn serde_parts(data: &[u8]) -> Result<(ChunkParts<'_>, Option<String>), String> {
    let wire: WireChunk<'_> = serde_json::from_slice(data).map_err(|e| invalid_json(data, &e))?;
    let mut parts = ChunkParts {
        id: wire.id.0,
        usage: wire.usage,
        timings: wire.timings,
        ..Default::default()
    };
    if let Some(choice) = wire.choices.and_then(|c| c.0) {
        parts.finish_reason = choice.finish_reason.0;
        parts.text = choice.text.0;
        if let Some(delta) = choice.delta {
            parts.has_delta = true;
            parts.content = delta.content.0;
            parts.reasoning_content = delta.reasoning_content.0;
            parts.reasoning = delta.reasoning.0;
            parts.refusal = delta.refusal.0;
        }
    }
    Ok((parts, wire.error.map(error_message)))
}

/// serde's read of a chunk alone (id, content, finish reason, usage; without the rest of
/// [`parse_chunk`]'s assembly and its tool-call check): the reference the benchmark
/// `benches/parse_chunk.rs` compares the fast reader with (not for other uses).
#[doc(hidden)]
pub fn parse_chunk_with_serde(data: &[u8]) -> Result<ApiEvent<'_>, String> {
    let (parts, error) = serde_parts(data)?;
    Ok(ApiEvent {
        id: parts.id,
        content: parts.content,
        finish_reason: parts.finish_reason,
        usage: parts.usage.map(UsageUpdate::Raw),
        error,
        ..Default::default()
    })
}

/// Finds the `tool_calls` key in an event's bytes (a JSON string in the answer's text would
/// have its quotes escaped, so it is not found).
static TOOL_CALLS_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"tool_calls\""));

/// The first choice's `delta.tool_calls`, read in a second pass over a delta without text
/// that has the key. Why not a field of [`WireDelta`]: a further field there made every
/// text delta's parse 12 % slower as raw JSON and 20 % as a typed list (570 and 625 ns
/// against 510 ns a chunk: release build, one machine, alternated runs), and tool-call
/// events are few.
#[cold]
fn tool_calls(data: &[u8]) -> Result<ToolCallDeltas<'_>, String> {
    #[derive(Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow, default)]
        choices: Option<FirstOf<Choice<'a>>>,
    }
    #[derive(Deserialize)]
    struct Choice<'a> {
        #[serde(borrow, default)]
        delta: Option<Delta<'a>>,
    }
    #[derive(Deserialize)]
    struct Delta<'a> {
        #[serde(borrow, default)]
        tool_calls: Option<ChatToolCalls<'a>>,
    }
    let chunk: Chunk<'_> = serde_json::from_slice(data).map_err(|e| invalid_json(data, &e))?;
    let calls = chunk.choices.and_then(|c| c.0).and_then(|c| c.delta);
    Ok(calls
        .and_then(|d| d.tool_calls)
        .map(|c| c.0)
        .unwrap_or_default())
}

/// The Chat Completions / Completions dialect as a [`StreamParser`] (it needs no state).
#[derive(Debug, Default, Clone, Copy)]
pub struct OpenAiStream;

impl StreamParser for OpenAiStream {
    fn parse<'a>(&mut self, _event: Option<&str>, data: &'a [u8]) -> Result<ApiEvent<'a>, String> {
        parse_chunk(data)
    }
}

/// Reads llama.cpp's `timings` object (sent by its OpenAI routes, `/v1/responses` and
/// `/completion` alike).
pub fn parse_timings(raw: &RawValue) -> Option<ServerTiming> {
    #[derive(Deserialize)]
    struct T {
        prompt_n: Option<f64>,
        prompt_ms: Option<f64>,
        predicted_n: Option<f64>,
        predicted_ms: Option<f64>,
        predicted_per_second: Option<f64>,
        cache_n: Option<f64>,
        token_times_ms: Option<Vec<f64>>,
    }
    let t: T = serde_json::from_str(raw.get()).ok()?;
    Some(ServerTiming {
        prompt_n: t.prompt_n.map(|v| v as u64),
        prompt_ms: t.prompt_ms,
        predicted_n: t.predicted_n.map(|v| v as u64),
        predicted_ms: t.predicted_ms,
        predicted_per_second: t.predicted_per_second,
        cache_n: t.cache_n.map(|v| v as u64),
        token_times_ms: t.token_times_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::RequestOptions;
    use serde_json::json;
    use std::borrow::Cow;

    fn usage_text(e: &ApiEvent<'_>) -> String {
        let mut s = String::new();
        e.usage.unwrap().write_json(&mut s);
        s
    }

    #[test]
    fn role_only_first_chunk_has_no_content() {
        let c = parse_chunk(br#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"id":"chatcmpl-1"}"#).unwrap();
        assert_eq!(c.content, None);
        assert_eq!(c.id.as_deref(), Some("chatcmpl-1"));
    }

    #[test]
    fn text_is_borrowed_from_the_event() {
        let c = parse_chunk(br#"{"id":"x","choices":[{"delta":{"content":" the"}}]}"#).unwrap();
        assert!(matches!(c.content, Some(Cow::Borrowed(" the"))));
        assert!(matches!(c.id, Some(Cow::Borrowed("x"))));
    }

    #[test]
    fn usage_only_chunk_with_empty_choices() {
        let c = parse_chunk(br#"{"choices":[],"id":"x","usage":{"completion_tokens":64,"prompt_tokens":29},"timings":{"prompt_n":29,"prompt_ms":51.5,"predicted_n":64,"predicted_ms":874.2,"predicted_per_second":73.2,"cache_n":0}}"#).unwrap();
        assert!(c.content.is_none());
        assert_eq!(
            usage_text(&c),
            r#"{"completion_tokens":64,"prompt_tokens":29}"#
        );
        assert_eq!(c.usage.unwrap().completion_tokens(), Some(64));
        let t = parse_timings(c.timings.unwrap()).unwrap();
        assert_eq!(t.prompt_ms, Some(51.5));
        assert_eq!(t.predicted_n, Some(64));
        assert_eq!(t.cache_n, Some(0));
    }

    #[test]
    fn only_the_first_choice_is_read() {
        let c =
            parse_chunk(br#"{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#)
                .unwrap();
        assert_eq!(c.content.as_deref(), Some("a"));
        let c = parse_chunk(br#"{"choices":null,"usage":{"completion_tokens":1}}"#).unwrap();
        assert!(c.content.is_none() && c.usage.is_some());
    }

    #[test]
    fn null_usage_is_absent_and_done_ends() {
        let c = parse_chunk(br#"{"choices":[{"delta":{"content":"hi"}}],"usage":null}"#).unwrap();
        assert!(c.usage.is_none());
        assert_eq!(c.content.as_deref(), Some("hi"));
        assert!(parse_chunk(b"[DONE]").unwrap().done);
    }

    #[test]
    fn completions_text_and_reasoning_dialects() {
        let c = parse_chunk(br#"{"choices":[{"text":" the","finish_reason":null}]}"#).unwrap();
        assert_eq!(c.content.as_deref(), Some(" the"));
        let c = parse_chunk(br#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#).unwrap();
        assert_eq!(c.reasoning.as_deref(), Some("hmm"));
        let c = parse_chunk(br#"{"choices":[{"delta":{"reasoning":"so","content":""}}]}"#).unwrap();
        assert_eq!(c.reasoning.as_deref(), Some("so"));
        assert_eq!(c.content.as_deref(), Some(""));
        let c = parse_chunk(br#"{"choices":[{"delta":{"content":"caf\u00e9 \"x\""}}]}"#).unwrap();
        assert_eq!(c.content.as_deref(), Some("café \"x\""));
        let c = parse_chunk(br#"{"choices":[{"delta":{"refusal":"no"}}]}"#).unwrap();
        assert!(c.refusal);
    }

    #[test]
    fn parallel_tool_calls_stream_their_arguments() {
        let t = super::super::event::replay::run(
            include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/synthetic/chat_tool_calls_synthetic.sse"
            )),
            &mut OpenAiStream,
        );
        assert_eq!(t.tool_calls.len(), 2);
        let (id, name, args) = &t.tool_calls[&0];
        assert_eq!((id.as_str(), name.as_str()), ("call_P4r1s", "get_weather"));
        assert_eq!(args, r#"{"location": "Paris"}"#);
        let (id, name, args) = &t.tool_calls[&1];
        assert_eq!((id.as_str(), name.as_str()), ("call_T0ky0", "get_weather"));
        assert_eq!(args, r#"{"location": "Tokyo"}"#);
        assert_eq!(
            t.argument_events, 6,
            "one delta carries two calls' fragments"
        );
        assert_eq!((t.content.as_str(), t.content_events), ("", 0));
        assert_eq!(t.finish, ["tool_calls"]);
        assert_eq!(t.done, 1);
        assert!(t.usage.unwrap().contains(r#""completion_tokens":12"#));
    }

    #[test]
    fn tool_call_entries_without_index_or_function_are_read_leniently() {
        let c = parse_chunk(br#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f"}},{"function":{"arguments":"{}"}}]}}]}"#).unwrap();
        let parts: Vec<_> = c.tool_calls.iter().collect();
        assert_eq!(
            (parts[0].index, parts[1].index),
            (0, 1),
            "their place in the array"
        );
        assert_eq!(parts[0].name.as_deref(), Some("f"));
        assert_eq!(parts[1].arguments.as_deref(), Some("{}"));
        let c =
            parse_chunk(br#"{"choices":[{"delta":{"tool_calls":null,"content":"x"}}]}"#).unwrap();
        assert!(c.tool_calls.is_empty());
        assert!(
            parse_chunk(br#"{"choices":[{"delta":{"tool_calls":[{"index":"zero"}]}}]}"#)
                .unwrap_err()
                .contains("invalid JSON")
        );
    }

    #[test]
    fn error_event_and_bad_json() {
        let c = parse_chunk(br#"{"error":{"message":"boom","code":500}}"#).unwrap();
        assert_eq!(c.error.as_deref(), Some("500: boom"));
        assert!(parse_chunk(b"{not json")
            .unwrap_err()
            .contains("invalid JSON"));
    }

    #[test]
    fn body_carries_usage_request_and_eos_options() {
        let msgs = vec![("user".to_owned(), "hi".to_owned())];
        let opts = RequestOptions {
            ignore_eos: true,
            prefix_cache: false,
            usage_per_chunk: false,
            temperature: Some(0.0),
            extra_body: vec![("top_k".into(), json!(1))],
        };
        let prompt = Prompt {
            messages: &msgs,
            max_tokens: 8,
            overrides: &[("top_k".into(), json!(3)), ("priority".into(), json!(2))],
            agent: None,
        };
        let mut target = super::super::tests::target(Endpoint::Chat, None, &[]);
        let body = super::super::request_body(&target, &prompt, &opts);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["priority"], 2, "per-request overrides are applied");
        assert_eq!(v["top_k"], 3, "and win over --extra-body");
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(v["min_tokens"], 8);
        assert_eq!(v["cache_prompt"], false);
        assert_eq!(v["messages"][0]["content"], "hi");
        target.endpoint = Endpoint::Completions;
        let body = super::super::request_body(&target, &prompt, &opts);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["prompt"], "hi");
    }
}
