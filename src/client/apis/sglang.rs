//! SGLang's native streaming route, `POST /generate` with `"stream": true`.
//!
//! What it adds over SGLang's OpenAI route: every event carries running `prompt_tokens`,
//! `completion_tokens` and `cached_tokens` (radix prefix-cache hits) in `meta_info`, so
//! tokens per chunk and cache reuse are known as the answer streams. Its `text` is the whole
//! output so far, not a delta, so the parser keeps how much it has handed out.
//!
//! No SGLang runs on these machines, so this is written from SGLang's source, not from a
//! recording: `srt/entrypoints/http_server.py` (`generate_request`: each event is
//! `data: ` + orjson of the output, an exception becomes `{"error": {"message"}}`, then
//! `data: [DONE]`), `srt/managers/tokenizer_manager.py` (`meta_info`: `id`,
//! `finish_reason`, `prompt_tokens`, `completion_tokens`, `cached_tokens`, and in recent
//! versions `reasoning_tokens`; `text` accumulates) and `srt/managers/schedule_batch.py`
//! (finish reasons `{"type": "length" | "stop" | "abort", ...}`). The keys vary between
//! versions, so every one is optional here.

use super::event::{
    clamp_u32, error_with_type, invalid_json, ApiEvent, OptStr, StreamParser, Usage, UsageUpdate,
};
use super::Prompt;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The API's own part of an SGLang `POST /generate` request: the prompt as raw `text`.
/// The options (`stream: true`, `sampling_params` with `max_new_tokens`, temperature and
/// `ignore_eos`) are written by `dialect`. SGLang has no per-request prefix-cache switch
/// (its radix cache is a server flag).
pub fn request_body(prompt: &Prompt<'_>) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("text".into(), Value::String(prompt.joined_text()));
    body
}

#[derive(Deserialize)]
struct SglangWire<'a> {
    #[serde(borrow, default)]
    text: OptStr<'a>,
    #[serde(borrow, default)]
    meta_info: Option<SglangMeta<'a>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct SglangMeta<'a> {
    #[serde(borrow, default)]
    id: OptStr<'a>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
    /// `null` while generating, then `{"type": "length" | "stop" | "abort", ...}`.
    #[serde(borrow, default)]
    finish_reason: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct SglangFinish<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: OptStr<'a>,
    #[serde(borrow, default)]
    message: OptStr<'a>,
}

/// Parser for SGLang's `/generate` stream. By default every event's `text` is the whole
/// output so far; the parser hands out only the part not yet seen. (A server started with
/// `--incremental-streaming-output` sends deltas instead: use [`SglangStream::incremental`].)
/// The stream ends with `data: [DONE]` after the event that has a `finish_reason`.
#[derive(Debug, Default, Clone)]
pub struct SglangStream {
    /// Bytes of the cumulative text already handed out.
    emitted: usize,
    incremental: bool,
}

impl SglangStream {
    /// A parser for a stream of cumulative text (SGLang's default).
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser for a server that streams text deltas.
    pub fn incremental() -> Self {
        Self {
            emitted: 0,
            incremental: true,
        }
    }

    /// Parses one event. SGLang names no events, so `event` is ignored.
    pub fn parse_event<'a>(
        &mut self,
        _event: Option<&str>,
        data: &'a [u8],
    ) -> Result<ApiEvent<'a>, String> {
        if data == b"[DONE]" {
            return Ok(ApiEvent::default()); // the finishing event already said `done`
        }
        let w: SglangWire<'a> = serde_json::from_slice(data).map_err(|e| invalid_json(data, &e))?;
        let mut out = ApiEvent {
            error: error_with_type(w.error, None),
            ..Default::default()
        };
        if let Some(text) = w.text.0 {
            out.content = if self.incremental {
                Some(text)
            } else {
                self.new_part(text)?
            };
        }
        let Some(meta) = w.meta_info else {
            return Ok(out);
        };
        out.id = meta.id.0;
        out.cumulative_completion = meta.completion_tokens.map(clamp_u32);
        let Some(finish) = meta.finish_reason else {
            return Ok(out);
        };
        let finish: SglangFinish<'a> = match serde_json::from_str(finish.get()) {
            Ok(f) => f,
            // Tolerate a bare string, as other engines write it.
            Err(_) => SglangFinish {
                kind: serde_json::from_str(finish.get()).map_err(|e| invalid_json(data, &e))?,
                message: OptStr::default(),
            },
        };
        if finish.kind.get() == Some("abort") {
            let why = finish.message.get().unwrap_or("request aborted");
            out.error = Some(format!("abort: {why}"));
        } else if out.error.is_none() {
            out.done = true;
        }
        out.finish_reason = finish.kind.0;
        let usage = Usage {
            prompt_tokens: meta.prompt_tokens,
            completion_tokens: meta.completion_tokens,
            reasoning_tokens: meta.reasoning_tokens,
            cached_tokens: meta.cached_tokens,
        };
        out.usage = (!usage.is_empty()).then_some(UsageUpdate::Counts(usage));
        Ok(out)
    }

    /// The part of cumulative `text` not yet handed out, borrowed when `text` is. Only the
    /// length is kept, not the text: comparing prefixes would cost O(n²) over a long answer.
    fn new_part<'a>(&mut self, text: Cow<'a, str>) -> Result<Option<Cow<'a, str>>, String> {
        let start = self.emitted;
        if text.get(start..).is_none() {
            return Err(format!(
                "SGLang cumulative text shrank or split a character ({} bytes after {start})",
                text.len()
            ));
        }
        self.emitted = text.len();
        if start == text.len() {
            return Ok(None);
        }
        Ok(Some(match text {
            Cow::Borrowed(s) => Cow::Borrowed(&s[start..]),
            Cow::Owned(s) => Cow::Owned(s[start..].to_owned()),
        }))
    }
}

impl StreamParser for SglangStream {
    fn parse<'a>(&mut self, e: Option<&str>, d: &'a [u8]) -> Result<ApiEvent<'a>, String> {
        SglangStream::parse_event(self, e, d)
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
    fn sglang_cumulative_text_becomes_deltas() {
        let t = run(
            fixture!("synthetic/sglang_generate_synthetic.sse"),
            &mut SglangStream::new(),
        );
        assert_eq!(t.content, " Paris. It is the capital\nand");
        // The two events whose JSON text holds an escaped \n are decoded; the rest borrow.
        assert_eq!((t.content_events, t.borrowed), (7, 5));
        assert_eq!(t.cumulative, [1, 2, 3, 5, 6, 7, 8]);
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":6,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":5}}"#
            )
        );
        assert_eq!(t.finish, ["length"]);
        assert_eq!(t.id.as_deref(), Some("a8f3c2e1b0d94f7e"));
        assert_eq!(
            (t.done, t.errors.len()),
            (1, 0),
            "[DONE] is not a second end"
        );
        let t = run(
            fixture!("llama.cpp-11434/generate_unsupported.http"),
            &mut SglangStream::new(),
        );
        assert_eq!(t.errors, ["not_found_error: File Not Found"]);
    }

    #[test]
    fn sglang_deltas_abort_errors_and_bad_text() {
        let mut p = SglangStream::incremental();
        for part in ["a", "a"] {
            let data = format!(r#"{{"text":"{part}","meta_info":{{"completion_tokens":1}}}}"#);
            let e = p.parse_event(None, data.as_bytes()).unwrap();
            assert_eq!(
                e.content.as_deref(),
                Some("a"),
                "deltas are handed out whole"
            );
        }
        let mut p = SglangStream::new();
        p.parse_event(None, br#"{"text":"hello"}"#).unwrap();
        let e = p
            .parse_event(
                None,
                br#"{"text":"hello","meta_info":{"finish_reason":{"type":"abort","message":"Client disconnected"},"completion_tokens":1}}"#,
            )
            .unwrap();
        assert_eq!(e.content, None, "nothing new");
        assert_eq!(e.error.as_deref(), Some("abort: Client disconnected"));
        assert!(!e.done);
        assert!(p
            .parse_event(None, br#"{"text":"he"}"#)
            .unwrap_err()
            .contains("shrank"));
        let mut p = SglangStream::new();
        p.parse_event(None, "{\"text\":\"\u{e9}\"}".as_bytes())
            .unwrap();
        assert!(
            p.parse_event(None, br#"{"text":"x"}"#).is_err(),
            "not a char boundary"
        );
        let e = SglangStream::new()
            .parse_event(None, br#"{"error":{"message":"The input is too long"}}"#)
            .unwrap();
        assert_eq!(e.error.as_deref(), Some("The input is too long"));
        let e = SglangStream::new()
            .parse_event(
                None,
                br#"{"text":"x","meta_info":{"finish_reason":"stop"}}"#,
            )
            .unwrap();
        assert_eq!((e.finish_reason.as_deref(), e.done), (Some("stop"), true));
        let e = SglangStream::new()
            .parse_event(
                None,
                br#"{"text":"x","meta_info":{"finish_reason":{"type":"stop","matched":2},"prompt_tokens":3,"completion_tokens":9,"reasoning_tokens":7}}"#,
            )
            .unwrap();
        assert_eq!(
            e.usage_json().as_deref(),
            Some(
                r#"{"prompt_tokens":3,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":7}}"#
            )
        );
    }

    #[test]
    fn body_fields() {
        use super::super::test_body;
        use crate::client::Endpoint;
        let msgs = [("system", "Be brief."), ("user", "Hi")];
        let v = test_body(Endpoint::Sglang, &msgs, 16, Some(0.0), true, &[]);
        assert_eq!(
            v,
            json!({"text":"Be brief.\n\nHi","sampling_params":{"max_new_tokens":16,"temperature":0.0,"ignore_eos":true},"stream":true})
        );
        let v = test_body(
            Endpoint::Sglang,
            &msgs,
            16,
            None,
            false,
            &[
                ("sampling_params", json!({"top_k": 5})),
                ("rid", json!("r1")),
            ],
        );
        assert_eq!(
            v,
            json!({"text":"Be brief.\n\nHi","sampling_params":{"max_new_tokens":16,"top_k":5},"stream":true,"rid":"r1"})
        );
    }
}
