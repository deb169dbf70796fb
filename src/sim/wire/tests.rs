//! Every stream format read back with the client's own parser for the same API: content,
//! reasoning, usage, errors and refusals agree.

use super::tokens::split_words;
use super::*;
use crate::client::apis::parser_for;
use crate::client::apis::StreamParser;
use crate::client::sse::SseParser;
use crate::client::Endpoint;

fn writer(api: SimApi, reasoning: u32) -> StreamWriter {
    let mut w = StreamWriter::new(
        api,
        "x1".into(),
        "\"m\"".into(),
        7,
        true,
        false,
        12,
        reasoning,
    );
    w.cached = 4;
    w
}

/// Writes a 3-token answer (one token per write) and reads it back with the client's
/// parser for the same API: content, reasoning, usage and the end agree.
fn round_trip(api: SimApi, endpoint: Endpoint, reasoning: u32) -> (String, String, String, bool) {
    let mut w = writer(api, reasoning);
    let mut out = String::new();
    w.start(&mut out);
    for (i, word) in [" a", " b", " c"].iter().enumerate() {
        w.tokens(&mut out, word, 1, i as u32, 3);
    }
    let times = ServerTimes {
        prompt_ms: 5.0,
        predicted_ms: 2.0,
        token_times_ms: None,
    };
    w.end(&mut out, 3, true, Some(&times));
    let mut parser = parser_for(endpoint);
    let (mut content, mut thought, mut usage, mut done) =
        (String::new(), String::new(), String::new(), false);
    let mut sse = SseParser::new();
    sse.feed(out.as_bytes(), |e| {
        let ev = parser.parse(e.event, e.data).unwrap();
        content.push_str(ev.content.as_deref().unwrap_or(""));
        thought.push_str(ev.reasoning.as_deref().unwrap_or(""));
        if let Some(u) = ev.usage {
            let mut s = String::new();
            if u.write_json(&mut s) {
                usage = s;
            }
        }
        done |= ev.done;
        true
    });
    (content, thought, usage, done)
}

#[test]
fn every_format_reads_back_with_the_clients_parser() {
    for (api, endpoint) in [
        (SimApi::Chat, Endpoint::Chat),
        (SimApi::Completions, Endpoint::Completions),
        (SimApi::Responses, Endpoint::Responses),
        (SimApi::Messages, Endpoint::Messages),
        (SimApi::Llamacpp, Endpoint::Llamacpp),
        (SimApi::Tgi, Endpoint::Tgi),
        (SimApi::Sglang, Endpoint::Sglang),
    ] {
        let (content, thought, usage, done) = round_trip(api, endpoint, 0);
        assert_eq!(
            (content.as_str(), thought.as_str(), done),
            (" a b c", "", true),
            "{api:?}"
        );
        let u: serde_json::Value = serde_json::from_str(&usage).unwrap();
        assert_eq!(u["completion_tokens"], 3, "{api:?}: {usage}");
        if api != SimApi::Tgi {
            // The whole prompt, and the 4 tokens served from the prefix cache (Anthropic
            // reports them apart from `input_tokens`; the client adds them back).
            assert_eq!(u["prompt_tokens"], 12, "{api:?}: {usage}");
            assert_eq!(
                u["prompt_tokens_details"]["cached_tokens"], 4,
                "{api:?}: {usage}"
            );
        }
    }
}

#[test]
fn reasoning_streams_apart_where_the_api_has_a_channel() {
    for (api, endpoint) in [
        (SimApi::Chat, Endpoint::Chat),
        (SimApi::Responses, Endpoint::Responses),
        (SimApi::Messages, Endpoint::Messages),
    ] {
        let (content, thought, _, done) = round_trip(api, endpoint, 2);
        assert_eq!(
            (content.as_str(), thought.as_str(), done),
            (" c", " a b", true),
            "{api:?}"
        );
    }
    let (content, thought, _, _) = round_trip(SimApi::Llamacpp, Endpoint::Llamacpp, 2);
    assert_eq!((content.as_str(), thought.as_str()), (" a b c", ""));
}

#[test]
fn error_events_fail_the_clients_parser_of_each_api() {
    for (api, endpoint) in [
        (SimApi::Chat, Endpoint::Chat),
        (SimApi::Responses, Endpoint::Responses),
        (SimApi::Messages, Endpoint::Messages),
        (SimApi::Llamacpp, Endpoint::Llamacpp),
        (SimApi::Tgi, Endpoint::Tgi),
        (SimApi::Sglang, Endpoint::Sglang),
    ] {
        let mut w = writer(api, 0);
        let mut out = String::new();
        w.error_event(&mut out, "boom");
        let mut parser = parser_for(endpoint);
        let mut errors = Vec::new();
        SseParser::new().feed(out.as_bytes(), |e| {
            if let Some(err) = parser.parse(e.event, e.data).unwrap().error {
                errors.push(err);
            }
            true
        });
        assert_eq!(errors.len(), 1, "{api:?}");
        assert!(errors[0].contains("boom"), "{api:?}: {errors:?}");
    }
}

#[test]
fn refusals_read_back_as_refusals_where_the_api_has_one() {
    for (api, endpoint) in [
        (SimApi::Chat, Endpoint::Chat),
        (SimApi::Completions, Endpoint::Completions),
        (SimApi::Responses, Endpoint::Responses),
        (SimApi::Messages, Endpoint::Messages),
    ] {
        let mut w = writer(api, 0);
        let mut out = String::new();
        w.start(&mut out);
        w.tokens(&mut out, " a", 1, 0, 3);
        assert!(w.refusal(&mut out, 1), "{api:?}");
        let mut parser = parser_for(endpoint);
        let (mut refused, mut done, mut errors) = (false, false, 0);
        SseParser::new().feed(out.as_bytes(), |e| {
            let ev = parser.parse(e.event, e.data).unwrap();
            refused |= ev.refusal || ev.finish_reason.as_deref() == Some("content_filter");
            done |= ev.done;
            errors += usize::from(ev.error.is_some());
            true
        });
        assert!(refused && done && errors == 0, "{api:?}: {out}");
    }
    for api in [SimApi::Llamacpp, SimApi::Tgi, SimApi::Sglang] {
        let mut out = String::new();
        assert!(!writer(api, 0).refusal(&mut out, 1), "{api:?}");
        assert!(out.is_empty());
    }
}

#[test]
fn tgi_splits_a_multi_token_write_into_one_event_per_token() {
    let words: Vec<&str> = split_words(" a b", 2).collect();
    assert_eq!(words, [" a", " b"]);
    let words: Vec<&str> = split_words("ab", 3).collect();
    assert_eq!(words, ["ab", "", ""]);
}

/// Writes a 3-token tool-call answer (after `reasoning` reasoning tokens, 3 + `reasoning`
/// in all, one per write) and reads it back through the client's exchange for the same API.
fn tool_call_round_trip(
    api: SimApi,
    endpoint: Endpoint,
    reasoning: u32,
) -> (String, crate::record::RequestRecord) {
    use crate::client::exchange::Exchange;
    let mut w = writer(api, reasoning);
    w.tool_call = Some(SimToolCall::new("call_7".into(), "search"));
    let n = 3 + reasoning;
    let mut out = String::new();
    w.start(&mut out);
    let words = [" a", " b", " c", " d", " e"];
    for i in 0..n {
        w.tokens(&mut out, words[i as usize], 1, i, n);
    }
    w.end(&mut out, n, true, None);
    assert_eq!(w.tool_calls_made(), 1, "{api:?}");
    let mut ex = Exchange::for_endpoint(endpoint);
    let mut at = 0;
    SseParser::new().feed(out.as_bytes(), |e| {
        at += 1;
        !ex.on_event(e.event, e.data, at).unwrap()
    });
    ex.finish_stream(at + 1);
    let draft = ex.into_draft();
    let args = draft.content_text.clone();
    let r = crate::record::settle::settle(draft, &crate::tokenizer::TiktokenTokenizer::cl100k());
    (args, r)
}

#[test]
fn tool_call_answers_read_back_as_one_timed_call() {
    for (api, endpoint) in [
        (SimApi::Chat, Endpoint::Chat),
        (SimApi::Responses, Endpoint::Responses),
        (SimApi::Messages, Endpoint::Messages),
    ] {
        for reasoning in [0, 2] {
            let (args, r) = tool_call_round_trip(api, endpoint, reasoning);
            let what = format!("{api:?} with {reasoning} reasoning tokens");
            assert!(r.outcome.is_ok(), "{what}: {:?}", r.outcome);
            assert_eq!(r.tool_calls, 1, "{what}");
            let parsed: serde_json::Value = serde_json::from_str(&args).unwrap();
            let words = if reasoning == 0 { " a b c" } else { " c d e" };
            assert_eq!(parsed, serde_json::json!({ "query": words }), "{what}");
            assert_eq!(r.chunks.len(), 3, "{what}: one chunk per argument write");
            assert_eq!(r.reasoning_chunks.len(), reasoning as usize, "{what}");
            assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"), "{what}");
            assert_eq!(r.output_tokens, 3 + reasoning, "{what}: the usage is exact");
            assert_eq!(r.chunks.iter().map(|c| c.tokens).sum::<u32>(), 3, "{what}");
            assert!(r.first_token_at().is_some(), "{what}");
        }
    }
}

#[test]
fn native_apis_never_call_a_tool() {
    let mut w = writer(SimApi::Llamacpp, 0);
    w.tool_call = Some(SimToolCall::new("call_1".into(), "search"));
    let mut out = String::new();
    w.tokens(&mut out, " a", 1, 0, 1);
    assert_eq!(w.tool_calls_made(), 0);
    assert!(out.contains("\"content\":\" a\""), "{out}");
}
