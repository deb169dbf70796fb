//! The OpenAI-compatible wire protocol: request bodies out, streamed chunks in.
//!
//! Chunk parsing borrows from the event's bytes (`Cow<str>` only allocates when a string has
//! escapes) and keeps only what the record needs. `usage` and `timings` are kept as the
//! server sent them; several dialects are read: `delta.content`, `text` (completions),
//! `delta.reasoning_content` (DeepSeek, SGLang, llama.cpp) and `delta.reasoning` (vLLM since
//! late 2025, OpenRouter), a usage-only last chunk with empty `choices`, role-only first
//! chunks, and `{"error": ...}` events.

use crate::config::{Endpoint, RequestOptions};
use crate::record::ServerTiming;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// What a request asks for: the prompt and its limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt<'a> {
    /// Chat messages (`role`, `content`), or for completions a single user text.
    pub messages: &'a [(String, String)],
    pub max_tokens: u32,
    /// Per-request body fields from the workload (a class's overrides), applied last.
    pub overrides: &'a [(String, Value)],
}

/// Builds the JSON body of a streaming request.
pub fn request_body(
    endpoint: Endpoint,
    model: &str,
    prompt: &Prompt<'_>,
    opts: &RequestOptions,
) -> Vec<u8> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.to_owned()));
    match endpoint {
        Endpoint::Chat => {
            let messages: Vec<Value> = prompt
                .messages
                .iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect();
            body.insert("messages".into(), Value::Array(messages));
        }
        Endpoint::Completions => {
            let text: String = prompt
                .messages
                .iter()
                .map(|(_, c)| c.as_str())
                .collect::<Vec<_>>()
                .join("\n\n");
            body.insert("prompt".into(), Value::String(text));
        }
    }
    body.insert("max_tokens".into(), json!(prompt.max_tokens));
    body.insert("stream".into(), Value::Bool(true));
    let mut stream_options = json!({"include_usage": true});
    if opts.usage_per_chunk {
        stream_options["continuous_usage_stats"] = Value::Bool(true);
    }
    body.insert("stream_options".into(), stream_options);
    if let Some(t) = opts.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if opts.ignore_eos {
        // vLLM, SGLang, llama.cpp and the simulator honour `ignore_eos`; vLLM also takes
        // `min_tokens`, which makes the length exact even where EOS handling differs.
        body.insert("ignore_eos".into(), Value::Bool(true));
        body.insert("min_tokens".into(), json!(prompt.max_tokens));
    }
    if !opts.prefix_cache {
        body.insert("cache_prompt".into(), Value::Bool(false)); // llama.cpp
    }
    for (k, v) in opts.extra_body.iter().chain(prompt.overrides) {
        body.insert(k.clone(), v.clone());
    }
    serde_json::to_vec(&Value::Object(body)).expect("a JSON map always serialises")
}

#[derive(Deserialize)]
struct WireChunk<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
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
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    refusal: Option<Cow<'a, str>>,
}

/// What one SSE data event said.
#[derive(Debug, Default)]
pub struct ParsedChunk<'a> {
    pub id: Option<Cow<'a, str>>,
    /// Answer text carried (may be empty or whitespace).
    pub content: Option<Cow<'a, str>>,
    /// Reasoning text carried.
    pub reasoning: Option<Cow<'a, str>>,
    pub refusal: Option<Cow<'a, str>>,
    pub finish_reason: Option<Cow<'a, str>>,
    /// Raw `usage` object.
    pub usage: Option<&'a RawValue>,
    /// Raw llama.cpp `timings` object.
    pub timings: Option<&'a RawValue>,
    /// Raw `error` object of an error event.
    pub error: Option<&'a RawValue>,
}

/// Parses one SSE data payload. `Err` carries a short description for a protocol failure.
pub fn parse_chunk(data: &[u8]) -> Result<ParsedChunk<'_>, String> {
    let wire: WireChunk<'_> = serde_json::from_slice(data).map_err(|e| {
        let shown = String::from_utf8_lossy(&data[..data.len().min(200)]).into_owned();
        format!("invalid JSON in stream event ({e}): {shown}")
    })?;
    let mut out = ParsedChunk {
        id: wire.id,
        usage: wire.usage,
        timings: wire.timings,
        error: wire.error,
        ..Default::default()
    };
    if let Some(choice) = wire.choices.and_then(|c| c.0) {
        out.finish_reason = choice.finish_reason;
        if let Some(delta) = choice.delta {
            out.content = delta.content;
            out.reasoning = delta.reasoning_content.or(delta.reasoning);
            out.refusal = delta.refusal;
        }
        if out.content.is_none() {
            out.content = choice.text;
        }
    }
    Ok(out)
}

/// Reads llama.cpp's `timings` object.
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

    #[test]
    fn role_only_first_chunk_has_no_content() {
        let c = parse_chunk(br#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"id":"chatcmpl-1"}"#).unwrap();
        assert_eq!(c.content, None);
        assert_eq!(c.id.as_deref(), Some("chatcmpl-1"));
    }

    #[test]
    fn usage_only_chunk_with_empty_choices() {
        let c = parse_chunk(br#"{"choices":[],"id":"x","usage":{"completion_tokens":64,"prompt_tokens":29},"timings":{"prompt_n":29,"prompt_ms":51.5,"predicted_n":64,"predicted_ms":874.2,"predicted_per_second":73.2,"cache_n":0}}"#).unwrap();
        assert!(c.content.is_none());
        assert_eq!(
            c.usage.unwrap().get(),
            r#"{"completion_tokens":64,"prompt_tokens":29}"#
        );
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
    fn null_usage_is_absent() {
        let c = parse_chunk(br#"{"choices":[{"delta":{"content":"hi"}}],"usage":null}"#).unwrap();
        assert!(c.usage.is_none());
        assert_eq!(c.content.as_deref(), Some("hi"));
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
    }

    #[test]
    fn error_event_and_bad_json() {
        let c = parse_chunk(br#"{"error":{"message":"boom","code":500}}"#).unwrap();
        assert!(c.error.is_some());
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
        let body = request_body(
            Endpoint::Chat,
            "m",
            &Prompt {
                messages: &msgs,
                max_tokens: 8,
                overrides: &[("top_k".into(), json!(3)), ("priority".into(), json!(2))],
            },
            &opts,
        );
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["priority"], 2, "per-request overrides are applied");
        assert_eq!(v["top_k"], 3, "and win over --extra-body");
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(v["min_tokens"], 8);
        assert_eq!(v["cache_prompt"], false);
        assert_eq!(v["messages"][0]["content"], "hi");
        let body = request_body(
            Endpoint::Completions,
            "m",
            &Prompt {
                messages: &msgs,
                max_tokens: 8,
                overrides: &[],
            },
            &opts,
        );
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["prompt"], "hi");
    }
}
