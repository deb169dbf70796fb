//! The generic JSON-over-WebSocket mode (`--endpoint websocket`): the request message built
//! from a template, and answers read by JSON pointers.
//!
//! The draft names WebSocket among the streaming protocols a benchmark must handle, and
//! there is no one standard message format over it, so the format is configured
//! ([`WebSocketOptions`]): the template of the one message sent per request, and where in
//! each received message the text delta, reasoning, usage, error, finish reason, id and end
//! marker are. Lookups walk the message's JSON without building a tree: each pointer is
//! followed through borrowed keys and the value is returned as borrowed raw JSON.

use super::event::{
    error_message, invalid_json, ApiEvent, OptStr, StreamParser, Usage, UsageUpdate,
};
use super::Prompt;
use crate::client::{RequestOptions, WebSocketOptions};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// Errors in a WebSocket template, found before a run starts.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TemplateError {
    #[error("--ws-template is not a JSON object once its placeholders are filled ({0}); example: '{{\"prompt\": {{{{prompt}}}}, \"max_tokens\": {{{{max_tokens}}}}}}'")]
    NotAnObject(String),
}

/// The request message for `prompt`: the template with its placeholders replaced by JSON
/// values, then `--extra-body` and the workload's overrides merged in (the overrides win).
pub fn request_message(
    ws: &WebSocketOptions,
    model: &str,
    prompt: &Prompt<'_>,
    opts: &RequestOptions,
) -> Result<Map<String, Value>, TemplateError> {
    let json = |v: Value| v.to_string();
    let filled = ws
        .template
        .replace("{{model}}", &json(Value::String(model.to_owned())))
        .replace("{{messages}}", &json(prompt.messages_json()))
        .replace("{{prompt}}", &json(Value::String(prompt.joined_text())))
        .replace("{{max_tokens}}", &prompt.max_tokens.to_string())
        .replace(
            "{{temperature}}",
            &opts
                .temperature
                .map_or("null".to_owned(), |t| Value::from(t).to_string()),
        )
        .replace("{{ignore_eos}}", &opts.ignore_eos.to_string());
    match serde_json::from_str::<Value>(&filled) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(TemplateError::NotAnObject("not an object".into())),
        Err(e) => Err(TemplateError::NotAnObject(e.to_string())),
    }
}

/// A JSON pointer split into its reference tokens (`~1` → `/`, `~0` → `~`).
#[derive(Debug, Clone, PartialEq)]
pub struct Pointer(Vec<String>);

impl Pointer {
    /// Parses `/a/b`; the empty string is the whole message.
    pub fn parse(s: &str) -> Result<Pointer, String> {
        if s.is_empty() {
            return Ok(Pointer(Vec::new()));
        }
        let Some(rest) = s.strip_prefix('/') else {
            return Err(format!("`{s}` is not a JSON pointer: it must start with / (e.g. /delta or /choices/0/text)"));
        };
        Ok(Pointer(
            rest.split('/')
                .map(|t| t.replace("~1", "/").replace("~0", "~"))
                .collect(),
        ))
    }

    /// The value at this pointer in `data`, borrowed; `Ok(None)` when it is absent.
    pub fn find<'a>(&self, data: &'a [u8]) -> Result<Option<&'a RawValue>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_slice(data);
        let found = Seek { path: &self.0 }.deserialize(&mut de)?;
        Ok(found)
    }
}

/// Follows a path through a JSON value, skipping everything else.
struct Seek<'p> {
    path: &'p [String],
}

impl<'de, 'p> DeserializeSeed<'de> for Seek<'p> {
    type Value = Option<&'de RawValue>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        match self.path.split_first() {
            None => <&'de RawValue>::deserialize(d).map(Some),
            Some((key, rest)) => d.deserialize_any(SeekVisitor { key, rest }),
        }
    }
}

struct SeekVisitor<'p> {
    key: &'p str,
    rest: &'p [String],
}

impl<'de, 'p> Visitor<'de> for SeekVisitor<'p> {
    type Value = Option<&'de RawValue>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        // Keys are borrowed (OptStr): no allocation per key unless it has escapes.
        while let Some(k) = map.next_key::<OptStr<'de>>()? {
            if found.is_none() && k.get() == Some(self.key) {
                found = map.next_value_seed(Seek { path: self.rest })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let want: Option<usize> = self.key.parse().ok();
        let mut found = None;
        let mut i = 0usize;
        loop {
            if Some(i) == want {
                match seq.next_element_seed(Seek { path: self.rest })? {
                    Some(v) => found = v,
                    None => break,
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            i += 1;
        }
        Ok(found)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// The compiled paths of a WebSocket configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct WsPaths {
    text: Pointer,
    reasoning: Option<Pointer>,
    end: Pointer,
    /// The end marker's required value, when the configuration names one.
    end_value: Option<String>,
    usage: Option<Pointer>,
    error: Option<Pointer>,
    finish: Option<Pointer>,
    id: Option<Pointer>,
}

impl WsPaths {
    /// Compiles the pointers of `ws`; `Err` says which one is malformed.
    pub fn new(ws: &WebSocketOptions) -> Result<WsPaths, String> {
        let opt = |p: &Option<String>| p.as_deref().map(Pointer::parse).transpose();
        let (end, end_value) = match ws.end.split_once('=') {
            Some((p, v)) => (p, Some(v.to_owned())),
            None => (ws.end.as_str(), None),
        };
        Ok(WsPaths {
            text: Pointer::parse(&ws.text_path)?,
            reasoning: opt(&ws.reasoning_path)?,
            end: Pointer::parse(end)?,
            end_value,
            usage: opt(&ws.usage_path)?,
            error: opt(&ws.error_path)?,
            finish: opt(&ws.finish_path)?,
            id: opt(&ws.id_path)?,
        })
    }
}

/// The WebSocket dialect as a [`StreamParser`]: each message is one event.
#[derive(Debug, Clone)]
pub struct WsJsonStream {
    paths: Arc<WsPaths>,
}

impl WsJsonStream {
    pub fn new(paths: Arc<WsPaths>) -> Self {
        Self { paths }
    }
}

/// A string at `p` in `data`, borrowed when it has no escapes.
fn string_at<'a>(p: &Pointer, data: &'a [u8]) -> Result<OptStr<'a>, serde_json::Error> {
    match p.find(data)? {
        Some(raw) => OptStr::deserialize(raw),
        None => Ok(OptStr(None)),
    }
}

impl StreamParser for WsJsonStream {
    fn parse<'a>(&mut self, _event: Option<&str>, data: &'a [u8]) -> Result<ApiEvent<'a>, String> {
        let p = &self.paths;
        let bad = |e: serde_json::Error| invalid_json(data, &e);
        let mut out = ApiEvent::default();
        if let Some(e) = &p.error {
            if let Some(raw) = e.find(data).map_err(bad)?.filter(|r| r.get() != "null") {
                out.error = Some(error_message(raw));
                return Ok(out);
            }
        }
        out.content = string_at(&p.text, data).map_err(bad)?.0;
        if let Some(r) = &p.reasoning {
            out.reasoning = string_at(r, data).map_err(bad)?.0;
        }
        if let Some(id) = &p.id {
            out.id = string_at(id, data).map_err(bad)?.0;
        }
        if let Some(u) = &p.usage {
            if let Some(raw) = u.find(data).map_err(bad)? {
                out.usage = match raw.get().trim_start().as_bytes().first() {
                    Some(b'{') => Some(UsageUpdate::Raw(raw)),
                    _ => serde_json::from_str::<u64>(raw.get()).ok().map(|n| {
                        UsageUpdate::Counts(Usage {
                            completion_tokens: Some(n),
                            ..Default::default()
                        })
                    }),
                };
            }
        }
        out.done = match p.end.find(data).map_err(bad)? {
            None => false,
            Some(raw) => match &p.end_value {
                Some(want) => OptStr::deserialize(raw).map_err(bad)?.get() == Some(want.as_str()),
                None => !matches!(raw.get(), "null" | "false"),
            },
        };
        if out.done {
            out.finish_reason = match &p.finish {
                Some(f) => string_at(f, data).map_err(bad)?.0,
                None => None,
            }
            .or(Some(std::borrow::Cow::Borrowed("stop")));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::borrow::Cow;

    fn parser() -> WsJsonStream {
        WsJsonStream::new(Arc::new(
            WsPaths::new(&WebSocketOptions::default()).unwrap(),
        ))
    }

    #[test]
    fn pointers_find_borrowed_values() {
        let data = br#"{"a":{"b":[1,{"c":"x"}],"z":0},"d":null}"#;
        let p = Pointer::parse("/a/b/1/c").unwrap();
        assert_eq!(p.find(data).unwrap().unwrap().get(), r#""x""#);
        assert!(Pointer::parse("/a/q")
            .unwrap()
            .find(data)
            .unwrap()
            .is_none());
        assert!(Pointer::parse("/a/b/7")
            .unwrap()
            .find(data)
            .unwrap()
            .is_none());
        assert!(Pointer::parse("/a/z/k")
            .unwrap()
            .find(data)
            .unwrap()
            .is_none());
        assert_eq!(
            Pointer::parse("/d")
                .unwrap()
                .find(data)
                .unwrap()
                .unwrap()
                .get(),
            "null"
        );
        assert_eq!(
            Pointer::parse("/x~1y").unwrap(),
            Pointer(vec!["x/y".into()])
        );
        assert!(Pointer::parse("delta").is_err());
        assert!(Pointer::parse("/a").unwrap().find(b"{oops").is_err());
    }

    #[test]
    fn messages_become_events() {
        let mut p = parser();
        let e = p
            .parse(None, br#"{"type":"delta","id":"w1","delta":" the"}"#)
            .unwrap();
        assert!(matches!(e.content, Some(Cow::Borrowed(" the"))));
        assert_eq!(e.id.as_deref(), Some("w1"));
        assert!(!e.done);
        let e = p
            .parse(None, br#"{"type":"delta","reasoning":"hm"}"#)
            .unwrap();
        assert_eq!((e.reasoning.as_deref(), e.content), (Some("hm"), None));
        let e = p
            .parse(
                None,
                br#"{"type":"done","finish_reason":"length","usage":{"completion_tokens":3}}"#,
            )
            .unwrap();
        assert!(e.done);
        assert_eq!(e.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            e.usage_json().as_deref(),
            Some(r#"{"completion_tokens":3}"#)
        );
        let e = p
            .parse(None, br#"{"type":"error","error":{"message":"boom"}}"#)
            .unwrap();
        assert_eq!(e.error.as_deref(), Some("boom"));
        assert!(p.parse(None, b"not json").is_err());
    }

    #[test]
    fn other_layouts_by_configuration() {
        let ws = WebSocketOptions {
            text_path: "/choices/0/text".into(),
            end: "/done".into(),
            usage_path: Some("/tokens".into()),
            ..Default::default()
        };
        let mut p = WsJsonStream::new(Arc::new(WsPaths::new(&ws).unwrap()));
        let e = p
            .parse(None, br#"{"choices":[{"text":"a"}],"done":false}"#)
            .unwrap();
        assert_eq!((e.content.as_deref(), e.done), (Some("a"), false));
        let e = p.parse(None, br#"{"done":true,"tokens":7}"#).unwrap();
        assert!(e.done);
        assert_eq!(
            e.usage_json().as_deref(),
            Some(r#"{"completion_tokens":7}"#)
        );
        assert_eq!(e.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn template_fills_json_values() {
        let msgs = vec![("user".to_owned(), "say \"hi\"".to_owned())];
        let prompt = Prompt {
            messages: &msgs,
            max_tokens: 9,
            overrides: &[],
            agent: None,
        };
        let opts = RequestOptions::default();
        let m = request_message(&WebSocketOptions::default(), "m", &prompt, &opts).unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"type":"generate","model":"m","messages":[{"role":"user","content":"say \"hi\""}],
                   "max_tokens":9,"temperature":0.0,"ignore_eos":true})
        );
        let ws = WebSocketOptions {
            template: r#"{"prompt":{{prompt}},"n":{{max_tokens}}}"#.into(),
            ..Default::default()
        };
        let m = request_message(&ws, "m", &prompt, &opts).unwrap();
        assert_eq!(Value::Object(m), json!({"prompt":"say \"hi\"","n":9}));
        let ws = WebSocketOptions {
            template: "[{{prompt}}]".into(),
            ..Default::default()
        };
        assert!(request_message(&ws, "m", &prompt, &opts).is_err());
    }
}
