//! What one streamed event means, whichever API sent it.
//!
//! The client speaks several streaming dialects (Chat Completions, Completions, the
//! Responses API, Anthropic Messages, and the engines' native routes). Each dialect has its
//! own parser, and every parser answers with the same [`ApiEvent`], so the code that times
//! chunks and settles token counts (`client::exchange`, `record::settle`) is written once.
//!
//! Text is borrowed from the event's bytes: a delta without JSON escapes costs no
//! allocation. Usage is either the Chat Completions object as sent (borrowed) or, for the
//! other dialects, counts normalised to that shape ([`Usage`]), written into the record's
//! reused buffer without a JSON tree.

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

pub use super::tool_delta::{ToolCallDelta, ToolCallDeltas};

/// The API-independent result of parsing one SSE event (or one gRPC / WebSocket message).
/// Fields an event does not carry are `None` (or `false`), so most events fill one or two.
#[derive(Debug, Default)]
pub struct ApiEvent<'a> {
    /// The server's id for the response or message (not the id of an output item).
    pub id: Option<Cow<'a, str>>,
    /// Answer text carried by this event (may be empty or whitespace).
    pub content: Option<Cow<'a, str>>,
    /// Reasoning ("thinking") text carried by this event.
    pub reasoning: Option<Cow<'a, str>>,
    /// The model refused (a non-empty refusal delta).
    pub refusal: bool,
    /// Tool calls started or continued by this event (their ids, names and argument
    /// fragments); empty for text events, at no cost (see [`ToolCallDeltas`]).
    pub tool_calls: ToolCallDeltas<'a>,
    /// Why generation stopped, normalised to `stop`, `length`, `content_filter` or
    /// `tool_calls` where the API's word has such a meaning, else the API's own word.
    pub finish_reason: Option<Cow<'a, str>>,
    /// Token usage reported by this event; a later event's usage replaces an earlier one's.
    pub usage: Option<UsageUpdate<'a>>,
    /// Completion tokens generated so far, when the event carries a running count (vLLM's
    /// `continuous_usage_stats`, llama.cpp's `tokens_predicted`, TGI's token index, SGLang's
    /// `completion_tokens`).
    pub cumulative_completion: Option<u32>,
    /// The message of an error event: the stream failed.
    pub error: Option<String>,
    /// This event ends the stream normally (`[DONE]`, `response.completed`, `message_stop`,
    /// llama.cpp's `stop: true`, TGI's `details`, SGLang's finish reason).
    pub done: bool,
    /// llama.cpp's `timings` object, as sent.
    pub timings: Option<&'a RawValue>,
}

#[cfg(test)]
impl ApiEvent<'_> {
    /// The event's usage as Chat Completions JSON text (tests).
    pub fn usage_json(&self) -> Option<String> {
        let mut s = String::new();
        self.usage.as_ref()?.write_json(&mut s).then_some(s)
    }
}

/// Usage as an event reports it.
#[derive(Debug, Clone, Copy)]
pub enum UsageUpdate<'a> {
    /// A Chat Completions `usage` object, kept as sent.
    Raw(&'a RawValue),
    /// Counts from another dialect, normalised to the Chat Completions meaning.
    Counts(Usage),
}

impl UsageUpdate<'_> {
    /// Writes the usage as a Chat Completions JSON object into `out` (cleared first; no
    /// allocation once `out` has grown). `false` when there is nothing to write.
    pub fn write_json(&self, out: &mut String) -> bool {
        out.clear();
        match self {
            UsageUpdate::Raw(raw) => out.push_str(raw.get()),
            UsageUpdate::Counts(u) => u.write_json(out),
        }
        !out.is_empty()
    }

    /// `completion_tokens` of this usage, when it has one.
    pub fn completion_tokens(&self) -> Option<u32> {
        match self {
            UsageUpdate::Raw(raw) => {
                #[derive(Deserialize)]
                struct Count {
                    completion_tokens: Option<u32>,
                }
                serde_json::from_str::<Count>(raw.get())
                    .ok()
                    .and_then(|c| c.completion_tokens)
            }
            UsageUpdate::Counts(u) => u.completion_tokens.map(clamp_u32),
        }
    }
}

/// A parser for one response's stream: one per request, holding whatever state its dialect
/// needs (Anthropic's split usage, SGLang's cumulative text).
pub trait StreamParser {
    /// Parses one event: its SSE `event:` field (if any) and its joined `data:` lines.
    /// `Err` carries a short description of a protocol failure (bad JSON, bad framing).
    fn parse<'a>(&mut self, event: Option<&str>, data: &'a [u8]) -> Result<ApiEvent<'a>, String>;
}

/// Token counts of one response, read from any dialect, in the Chat Completions meaning.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// The whole prompt, cached part included.
    pub prompt_tokens: Option<u64>,
    /// Everything generated, reasoning included.
    pub completion_tokens: Option<u64>,
    /// The reasoning share of `completion_tokens`.
    pub reasoning_tokens: Option<u64>,
    /// The prompt tokens served from the prefix cache.
    pub cached_tokens: Option<u64>,
}

impl Usage {
    /// Writes the known counts as a Chat Completions usage object (nothing when none is
    /// known, so an empty usage never erases an earlier one). Written by hand: the values
    /// are integers, and this avoids a JSON tree.
    pub fn write_json(&self, out: &mut String) {
        use std::fmt::Write;
        let add = |out: &mut String, args: fmt::Arguments<'_>| {
            out.push(if out.is_empty() { '{' } else { ',' });
            let _ = out.write_fmt(args);
        };
        if let Some(n) = self.prompt_tokens {
            add(out, format_args!(r#""prompt_tokens":{n}"#));
        }
        if let Some(n) = self.completion_tokens {
            add(out, format_args!(r#""completion_tokens":{n}"#));
        }
        if let Some(n) = self.reasoning_tokens {
            add(
                out,
                format_args!(r#""completion_tokens_details":{{"reasoning_tokens":{n}}}"#),
            );
        }
        if let Some(n) = self.cached_tokens {
            add(
                out,
                format_args!(r#""prompt_tokens_details":{{"cached_tokens":{n}}}"#),
            );
        }
        if !out.is_empty() {
            out.push('}');
        }
    }

    /// The object as a string (tests and off-path callers).
    pub fn to_json(&self) -> Option<String> {
        let mut s = String::new();
        self.write_json(&mut s);
        (!s.is_empty()).then_some(s)
    }

    /// Whether no count is known.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

/// The dialect's name for an event: the `event:` line when there is one, else the JSON
/// `type` field. SSE's default name `message` counts as absent, since no dialect here uses
/// it as a real event name and a proxy may write it out.
pub fn event_kind<'e>(line: Option<&'e str>, data_type: Option<&'e str>) -> &'e str {
    match line {
        Some(l) if !l.is_empty() && l != "message" => l,
        _ => data_type.unwrap_or(""),
    }
}

/// A readable message for an `error` value: a plain string, or an object with `message`
/// (prefixed by its `type`, or else its `code`, when present), or else the raw JSON.
pub fn error_message(raw: &RawValue) -> String {
    #[derive(Deserialize)]
    struct Obj<'a> {
        #[serde(borrow, default)]
        message: OptStr<'a>,
        #[serde(borrow, default, rename = "type")]
        kind: OptStr<'a>,
        #[serde(borrow, default)]
        code: Option<&'a RawValue>,
    }
    if let Ok(s) = serde_json::from_str::<String>(raw.get()) {
        return s;
    }
    match serde_json::from_str::<Obj<'_>>(raw.get()) {
        Ok(Obj {
            message: OptStr(Some(m)),
            kind,
            code,
        }) => match (kind.get(), code) {
            (Some(k), _) => format!("{k}: {m}"),
            (None, Some(c)) if c.get() != "null" => {
                format!("{}: {m}", c.get().trim_matches('"'))
            }
            _ => m.into_owned(),
        },
        _ => raw.get().to_owned(),
    }
}

/// The message of an optional `error` field, prefixed by a separate `error_type` when the
/// dialect sends one (TGI: `{"error": "...", "error_type": "generation"}`).
pub fn error_with_type(error: Option<&RawValue>, error_type: Option<&str>) -> Option<String> {
    let message = error_message(error?);
    Some(match error_type {
        Some(t) => format!("{t}: {message}"),
        None => message,
    })
}

/// The description of a payload that is not valid JSON (its start is shown).
pub fn invalid_json(data: &[u8], e: &serde_json::Error) -> String {
    let shown = String::from_utf8_lossy(&data[..data.len().min(200)]);
    format!("invalid JSON in stream event ({e}): {shown}")
}

/// An optional JSON string, borrowed from the input when it has no escapes.
///
/// serde borrows a `Cow<str>` field only when the field's type is exactly `Cow<str>`; an
/// `Option<Cow<str>>` goes through `Option`'s impl and always allocates (see the test
/// `option_cow_never_borrows`). This type borrows, and reads `null` or a missing field as
/// `None`. It is also lenient: a value of another type counts as `None` instead of failing
/// the event, since some dialects reuse a field name with different types across event
/// kinds (the Responses API's `delta`), and an unknown event must not fail the stream.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OptStr<'a>(pub Option<Cow<'a, str>>);

impl OptStr<'_> {
    /// The text, if the field was a string.
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for OptStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = OptStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(OptStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(OptStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(OptStr(Some(Cow::Owned(v))))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(OptStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(OptStr(None))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// Clamps a token count into the `u32` the record keeps.
pub fn clamp_u32(n: u64) -> u32 {
    n.min(u32::MAX as u64) as u32
}

/// Test support shared by the dialects' tests: replays a recorded HTTP response (as
/// `curl -i --raw` saves it, or a bare SSE transcript) through the client's own HTTP head
/// parser, body decoder and SSE parser.
#[cfg(test)]
pub mod replay {
    use super::{ApiEvent, StreamParser};
    use crate::client::http::{parse_head, BodyDecoder};
    use crate::client::sse::SseParser;
    use std::borrow::Cow;

    /// Everything a stream said, gathered event by event.
    #[derive(Debug, Default)]
    pub struct Transcript {
        pub status: u16,
        pub events: usize,
        pub id: Option<String>,
        pub content: String,
        pub content_events: usize,
        /// Content events whose text was borrowed from the input (no allocation).
        pub borrowed: usize,
        pub reasoning: String,
        pub refusal: bool,
        pub finish: Vec<String>,
        pub usage: Option<String>,
        pub cumulative: Vec<u32>,
        pub errors: Vec<String>,
        pub done: usize,
        pub timings: usize,
        /// Tool calls by their index: (id, name, joined arguments).
        pub tool_calls: std::collections::BTreeMap<u32, (String, String, String)>,
        /// Events that carried a non-empty arguments fragment.
        pub argument_events: usize,
    }

    impl Transcript {
        fn add(&mut self, ev: ApiEvent<'_>) {
            self.events += 1;
            if self.id.is_none() {
                self.id = ev.id.map(Cow::into_owned);
            }
            if let Some(c) = ev.content {
                self.content_events += 1;
                self.borrowed += matches!(c, Cow::Borrowed(_)) as usize;
                self.content.push_str(&c);
            }
            if let Some(r) = ev.reasoning {
                self.reasoning.push_str(&r);
            }
            self.refusal |= ev.refusal;
            if let Some(f) = ev.finish_reason {
                self.finish.push(f.into_owned());
            }
            if let Some(u) = ev.usage {
                let mut s = String::new();
                if u.write_json(&mut s) {
                    self.usage = Some(s);
                }
            }
            if let Some(n) = ev.cumulative_completion {
                self.cumulative.push(n);
            }
            if let Some(e) = ev.error {
                self.errors.push(e);
            }
            self.done += ev.done as usize;
            self.timings += ev.timings.is_some() as usize;
            for call in ev.tool_calls.iter() {
                let (id, name, args) = self.tool_calls.entry(call.index).or_default();
                id.push_str(call.id.as_deref().unwrap_or(""));
                name.push_str(call.name.as_deref().unwrap_or(""));
                let fragment = call.arguments.as_deref().unwrap_or("");
                if call.whole && !args.is_empty() {
                    continue; // the fragments already gave the whole
                }
                self.argument_events += usize::from(!fragment.is_empty());
                args.push_str(fragment);
            }
        }
    }

    /// Replays a recording through `parser`; a parse failure fails the test. A response
    /// that is not an event stream (a JSON error answer) is given to the parser as one event.
    pub fn run(raw: &[u8], parser: &mut dyn StreamParser) -> Transcript {
        let (status, body, stream) = if raw.starts_with(b"HTTP/") {
            let (head, len) = parse_head(raw).unwrap().expect("a complete head");
            let mut decoder = BodyDecoder::new(head.body);
            let mut body = Vec::new();
            decoder
                .decode(&raw[len..], |b| body.extend_from_slice(b))
                .expect("a well-framed body");
            let text = String::from_utf8_lossy(&raw[..len]).to_ascii_lowercase();
            (
                head.status,
                body,
                text.contains("content-type: text/event-stream"),
            )
        } else {
            (0, raw.to_vec(), true)
        };
        let mut t = Transcript {
            status,
            ..Default::default()
        };
        if !stream {
            let ev = parser.parse(None, &body).expect("the error body parses");
            t.add(ev);
            return t;
        }
        let mut sse = SseParser::new();
        let mut failure = None;
        sse.feed(&body, |e| match parser.parse(e.event, e.data) {
            Ok(ev) => {
                t.add(ev);
                true
            }
            Err(err) => {
                failure = Some(err);
                false
            }
        });
        if let Some(err) = failure {
            panic!("an event failed to parse: {err}");
        }
        assert!(!sse.has_pending(), "the transcript ends inside an event");
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_writes_only_known_fields_in_chat_shape() {
        let full = Usage {
            prompt_tokens: Some(30),
            completion_tokens: Some(16),
            reasoning_tokens: Some(4),
            cached_tokens: Some(0),
        };
        assert_eq!(
            full.to_json().unwrap(),
            r#"{"prompt_tokens":30,"completion_tokens":16,"completion_tokens_details":{"reasoning_tokens":4},"prompt_tokens_details":{"cached_tokens":0}}"#
        );
        let some = Usage {
            completion_tokens: Some(7),
            ..Default::default()
        };
        assert_eq!(some.to_json().unwrap(), r#"{"completion_tokens":7}"#);
        assert_eq!(Usage::default().to_json(), None);
        let mut buf = String::from("stale");
        assert!(!UsageUpdate::Counts(Usage::default()).write_json(&mut buf));
        assert!(UsageUpdate::Counts(some).write_json(&mut buf));
        assert_eq!(buf, r#"{"completion_tokens":7}"#);
        assert_eq!(UsageUpdate::Counts(some).completion_tokens(), Some(7));
    }

    #[test]
    fn error_messages_from_each_shape() {
        let raw = |s: &str| RawValue::from_string(s.to_owned()).unwrap();
        assert_eq!(error_message(&raw(r#""boom""#)), "boom");
        assert_eq!(
            error_message(&raw(
                r#"{"type":"overloaded_error","message":"Overloaded"}"#
            )),
            "overloaded_error: Overloaded"
        );
        assert_eq!(
            error_message(&raw(r#"{"code":"server_error","message":"x"}"#)),
            "server_error: x"
        );
        assert_eq!(error_message(&raw(r#"{"message":"plain"}"#)), "plain");
        assert_eq!(error_message(&raw(r#"{"detail":1}"#)), r#"{"detail":1}"#);
    }

    #[test]
    fn event_kind_prefers_the_event_line() {
        assert_eq!(event_kind(Some("ping"), Some("x")), "ping");
        assert_eq!(event_kind(None, Some("ping")), "ping");
        assert_eq!(event_kind(Some("message"), Some("ping")), "ping");
        assert_eq!(event_kind(Some(""), None), "");
    }

    #[test]
    fn option_cow_never_borrows() {
        #[derive(Deserialize)]
        struct W<'a> {
            #[serde(borrow)]
            a: Option<Cow<'a, str>>,
            #[serde(borrow)]
            b: Cow<'a, str>,
        }
        let w: W<'_> = serde_json::from_slice(br#"{"a":"x","b":"y"}"#).unwrap();
        assert!(matches!(w.a, Some(Cow::Owned(_))), "why OptStr exists");
        assert!(matches!(w.b, Cow::Borrowed(_)));
    }

    #[test]
    fn opt_str_borrows_strings_and_skips_other_values() {
        #[derive(Deserialize)]
        struct W<'a> {
            #[serde(borrow)]
            a: OptStr<'a>,
            #[serde(borrow)]
            b: OptStr<'a>,
            #[serde(borrow)]
            c: OptStr<'a>,
            #[serde(borrow, default)]
            d: OptStr<'a>,
        }
        let w: W<'_> =
            serde_json::from_slice(br#"{"a":"x","b":{"k":[1,2,{"z":null}]},"c":"caf\u00e9"}"#)
                .unwrap();
        assert!(matches!(w.a.0, Some(Cow::Borrowed("x"))));
        assert!(w.b.0.is_none());
        assert!(matches!(w.c.0.as_deref(), Some("café")));
        assert!(matches!(w.c.0, Some(Cow::Owned(_))));
        assert!(w.d.0.is_none());
    }
}
