//! Hugging Face TGI's native streaming route, `POST /generate_stream`.
//!
//! What it adds over TGI's OpenAI route: exactly one token per event, each with its id,
//! log-probability and a `special` flag, plus a 1-based `index`, so tokens per chunk are
//! exact without a tokenizer; with `parameters.details` the last event also carries the
//! finish reason and `generated_tokens`.
//!
//! No TGI runs on these machines, so this is written from TGI's source, not from a
//! recording: the router's `StreamResponse {index, token {id, text, logprob, special},
//! top_tokens, generated_text, details}`, `StreamDetails {finish_reason, generated_tokens,
//! seed}` and `ErrorResponse {error, error_type}`, sent as unnamed events with no `[DONE]`.
//! `StreamDetails.input_length` (the prompt's token count) exists in later versions only,
//! and `index` is missing from early ones: both are optional here.

use super::event::{
    clamp_u32, error_with_type, invalid_json, ApiEvent, OptStr, StreamParser, Usage, UsageUpdate,
};
use super::Prompt;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The API's own part of a TGI `POST /generate_stream` request: the prompt as raw
/// `inputs`, and `parameters.details: true`, which makes the last event carry the finish
/// reason and token counts. The options (`parameters.max_new_tokens`, and the temperature
/// as `do_sample`, since TGI rejects a temperature of 0) are written by `dialect`. TGI has
/// no way to ignore EOS and no per-request prefix-cache switch.
pub fn request_body(prompt: &Prompt<'_>) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("details".into(), Value::Bool(true));
    let mut body = Map::new();
    body.insert("inputs".into(), Value::String(prompt.joined_text()));
    body.insert("parameters".into(), Value::Object(params));
    body
}

#[derive(Deserialize)]
struct TgiWire<'a> {
    /// 1-based position of this event's token in the output.
    index: Option<u64>,
    #[serde(borrow, default)]
    token: Option<TgiToken<'a>>,
    /// Not sent by TGI; the simulator adds it so tests can join its ground truth.
    #[serde(borrow, default)]
    id: OptStr<'a>,
    #[serde(borrow, default)]
    details: Option<TgiDetails<'a>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error_type: OptStr<'a>,
}

#[derive(Deserialize)]
struct TgiToken<'a> {
    #[serde(borrow, default)]
    text: OptStr<'a>,
    #[serde(default)]
    special: bool,
}

#[derive(Deserialize)]
struct TgiDetails<'a> {
    #[serde(borrow, default)]
    finish_reason: OptStr<'a>,
    generated_tokens: Option<u64>,
    input_length: Option<u64>,
}

/// Parser for TGI's `/generate_stream`: one token per event; the last event also carries
/// `generated_text` (the whole answer, not used: the deltas already hold it) and `details`.
#[derive(Debug, Default, Clone)]
pub struct TgiStream {
    tokens: u64,
}

impl TgiStream {
    /// A parser for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses one event. TGI names no events, so `event` is ignored.
    pub fn parse_event<'a>(
        &mut self,
        _event: Option<&str>,
        data: &'a [u8],
    ) -> Result<ApiEvent<'a>, String> {
        let w: TgiWire<'a> = serde_json::from_slice(data).map_err(|e| invalid_json(data, &e))?;
        let mut out = ApiEvent {
            error: error_with_type(w.error, w.error_type.get()),
            id: w.id.0,
            ..Default::default()
        };
        if let Some(token) = w.token {
            self.tokens += 1;
            out.cumulative_completion = Some(clamp_u32(w.index.unwrap_or(self.tokens)));
            // Special tokens (the end-of-sequence one) are generated, so they count, but
            // they are not text: `generated_text` leaves them out too.
            if !token.special {
                out.content = token.text.0;
            }
        }
        if let Some(d) = w.details {
            out.done = true;
            out.finish_reason = d.finish_reason.0.map(|r| match r.as_ref() {
                "length" => Cow::Borrowed("length"),
                "eos_token" | "stop_sequence" => Cow::Borrowed("stop"),
                _ => r,
            });
            out.usage = Some(UsageUpdate::Counts(Usage {
                prompt_tokens: d.input_length,
                completion_tokens: d.generated_tokens.or(Some(self.tokens)),
                ..Default::default()
            }));
        }
        Ok(out)
    }
}

impl StreamParser for TgiStream {
    fn parse<'a>(&mut self, e: Option<&str>, d: &'a [u8]) -> Result<ApiEvent<'a>, String> {
        TgiStream::parse_event(self, e, d)
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
    fn tgi_stream_counts_one_token_per_event() {
        let t = run(
            fixture!("synthetic/tgi_stream_synthetic.sse"),
            &mut TgiStream::new(),
        );
        assert_eq!(
            t.content, "Deep learning is \"great\".",
            "the EOS token is not text"
        );
        assert_eq!((t.content_events, t.borrowed), (5, 4));
        assert_eq!(t.cumulative, [1, 2, 3, 4, 5, 6]);
        assert_eq!(
            t.usage.as_deref(),
            Some(r#"{"prompt_tokens":7,"completion_tokens":6}"#)
        );
        assert_eq!(t.finish, ["stop"]);
        assert_eq!(t.done, 1);
        let t = run(
            fixture!("synthetic/tgi_error_synthetic.sse"),
            &mut TgiStream::new(),
        );
        assert_eq!(t.content, "The");
        assert_eq!(
            t.errors,
            ["generation: Request failed during generation: Server error: CUDA out of memory"]
        );
        assert_eq!(t.done, 0);
    }

    #[test]
    fn tgi_length_without_index_or_input_length() {
        let mut p = TgiStream::new();
        for _ in 0..2 {
            let e = p
                .parse_event(None, br#"{"token":{"id":1,"text":"x","special":false}}"#)
                .unwrap();
            assert!(!e.done);
        }
        let e = p
            .parse_event(
                None,
                br#"{"token":{"id":1,"text":"y","special":false},"generated_text":"xxy","details":{"finish_reason":"length","generated_tokens":3,"seed":7}}"#,
            )
            .unwrap();
        assert_eq!(e.cumulative_completion, Some(3));
        assert_eq!(e.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            e.usage_json().as_deref(),
            Some(r#"{"completion_tokens":3}"#)
        );
        let t = run(
            fixture!("llama.cpp-11434/generate_stream_unsupported.http"),
            &mut TgiStream::new(),
        );
        assert_eq!(
            (t.status, t.errors.as_slice()),
            (404, &["not_found_error: File Not Found".to_owned()][..])
        );
    }

    #[test]
    fn body_fields() {
        use super::super::test_body;
        use crate::client::Endpoint;
        let msgs = [("system", "Be brief."), ("user", "Hi")];
        let v = test_body(Endpoint::Tgi, &msgs, 16, Some(0.0), true, &[]);
        assert_eq!(
            v,
            json!({"inputs":"Be brief.\n\nHi","parameters":{"max_new_tokens":16,"details":true,"do_sample":false}})
        );
        let v = test_body(
            Endpoint::Tgi,
            &msgs,
            16,
            Some(0.7),
            true,
            &[("parameters", json!({"top_k": 5}))],
        );
        assert_eq!(
            v["parameters"],
            json!({"max_new_tokens":16,"details":true,"do_sample":true,"temperature":0.7,"top_k":5}),
            "extra parameters are merged, not replacing"
        );
    }
}
