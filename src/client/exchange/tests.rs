//! Recorded server transcripts replayed through the exchange, and the stream endings it
//! tells apart (a cut, a refusal, an error event, leading whitespace).

use super::*;
use crate::client::http::BodyDecoder;
use crate::client::sse::SseParser;
use crate::record::settle::settle;
use crate::record::RequestRecord;
use crate::tokenizer::TiktokenTokenizer;

/// Replays a recorded transcript as if it arrived in one read per event.
fn replay(name: &str) -> RequestRecord {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap();
    let mut ex = Exchange::default();
    let mut sse = SseParser::new();
    let mut at = 0;
    sse.feed(&bytes, |e| {
        at += 1_000_000;
        ex.on_event(e.event, e.data, at).unwrap();
        true
    });
    ex.finish_stream(at);
    settle(ex.into_draft(), &TiktokenTokenizer::cl100k())
}

/// Replays a recorded HTTP response (head + de-chunked body, as `curl -i` saves it).
fn replay_http(name: &str) -> (crate::client::http::ResponseHead, RequestRecord) {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap();
    let (head, len) = crate::client::http::parse_head(&bytes).unwrap().unwrap();
    let mut ex = Exchange::default();
    let mut sse = SseParser::new();
    let mut at = 0;
    sse.feed(&bytes[len..], |e| {
        at += 1_000_000;
        ex.on_event(e.event, e.data, at).unwrap();
        true
    });
    ex.finish_stream(at);
    (head, settle(ex.into_draft(), &TiktokenTokenizer::cl100k()))
}

/// The second real engine, mistral.rs 0.8.1 (`scripts/record-transcripts-mistralrs.sh`):
/// its usage rides on the last content chunk (with `finish_reason` and the last text), not
/// on a chunk of its own with empty choices, and carries its own speed figures
/// (`avg_compl_tok_per_sec`, `total_prompt_time_sec`). Every token still counts once, by
/// the usage, and the last chunk's text is not lost.
#[test]
fn mistralrs_transcripts() {
    let (head, ex) = replay_http("mistralrs-0.8.1/chat_stream_usage.http");
    assert_eq!(head.status, 200);
    assert!(ex.outcome.is_ok(), "{:?}", ex.outcome);
    assert_eq!(ex.output_tokens, 24);
    assert_eq!(
        ex.output_tokens_source,
        crate::record::TokenSource::ServerUsage
    );
    assert_eq!(ex.chunks.iter().map(|c| c.tokens).sum::<u32>(), 24);
    assert_eq!(ex.usage_prompt_tokens(), Some(37));
    // Its completions stream sends no usage, even asked (`stream_options.include_usage`):
    // the count is the tokenizer's, said as such, over the 24 one-token chunks it streamed.
    let (_, ex) = replay_http("mistralrs-0.8.1/completions_stream_usage.http");
    assert!(ex.outcome.is_ok(), "{:?}", ex.outcome);
    assert!(ex.usage.is_none());
    assert_eq!(
        ex.output_tokens_source,
        crate::record::TokenSource::Tokenizer
    );
    assert_eq!(ex.chunks.len(), 24);
    // Its chat stream sends usage unasked, on the last chunk.
    let (_, ex) = replay_http("mistralrs-0.8.1/chat_stream_no_usage.http");
    assert!(ex.outcome.is_ok(), "{:?}", ex.outcome);
    assert_eq!(ex.output_tokens, 8);
    assert_eq!(
        ex.output_tokens_source,
        crate::record::TokenSource::ServerUsage
    );
}

#[test]
fn fresh_llama_cpp_transcripts() {
    let (head, ex) = replay_http("llama.cpp-11434/chat_stream_usage.http");
    assert_eq!(head.status, 200);
    assert!(ex.outcome.is_ok());
    assert_eq!(ex.output_tokens, 24);
    assert_eq!(
        ex.output_tokens_source,
        crate::record::TokenSource::ServerUsage
    );
    assert!(ex.server_timing.as_ref().unwrap().prompt_ms.is_some());
    let (_, ex) = replay_http("llama.cpp-11434/completions_stream_usage.http");
    assert_eq!(ex.output_tokens, 24);
    assert_eq!(ex.chunks.iter().map(|c| c.tokens).sum::<u32>(), 24);
    // Without include_usage llama.cpp sends no usage: N comes from the tokenizer.
    let (_, ex) = replay_http("llama.cpp-11434/chat_stream_no_usage.http");
    assert!(ex.usage.is_none());
    assert_eq!(
        ex.output_tokens_source,
        crate::record::TokenSource::Tokenizer
    );
    let bytes = std::fs::read(format!(
        "{}/tests/fixtures/llama.cpp-11434/error_context_exceeded.http",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let (head, len) = crate::client::http::parse_head(&bytes).unwrap().unwrap();
    assert_eq!((head.status, head.keep_alive), (400, false));
    assert!(String::from_utf8_lossy(&bytes[len..]).contains("exceeds the available context size"));
}

#[test]
fn llama_cpp_chat_transcript() {
    let ex = replay("llama.cpp/sse_chat.txt");
    let r = &ex;
    assert!(r.outcome.is_ok());
    assert_eq!(
        r.response_id.as_deref(),
        Some("chatcmpl-jkjVw1WhB1K7a6RzEIS0xAqCJ9cqpaRv")
    );
    // The role-only first chunk is not a token: the first content chunk is the 2nd event.
    assert_eq!(r.first_token_at(), Some(2_000_000));
    assert_eq!(r.usage_completion_tokens(), Some(64));
    assert_eq!(r.output_tokens, 64);
    assert_eq!(r.chunks.iter().map(|c| c.tokens).sum::<u32>(), 64);
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    let t = r.server_timing.as_ref().unwrap();
    assert_eq!(
        (t.prompt_n, t.predicted_n, t.cache_n),
        (Some(29), Some(64), Some(0))
    );
}

#[test]
fn llama_cpp_completions_and_multibyte_transcripts() {
    for name in [
        "llama.cpp/sse_comp_true.txt",
        "llama.cpp/sse_comp_false.txt",
        "llama.cpp/sse_emoji.txt",
        "llama.cpp/sse_ja.txt",
    ] {
        let ex = replay(name);
        let r = &ex;
        assert!(r.outcome.is_ok(), "{name}");
        let usage = r.usage_completion_tokens().unwrap() as u32;
        assert_eq!(r.output_tokens, usage, "{name}");
        // Tokens held back mid-character arrive merged: chunks may be fewer than tokens,
        // but the per-chunk counts always add up to the server's total.
        assert!(r.chunks.len() as u32 <= usage, "{name}");
        assert_eq!(
            r.chunks.iter().map(|c| c.tokens).sum::<u32>(),
            usage,
            "{name}"
        );
        assert!(r.server_timing.is_some(), "{name}");
    }
}

/// Replays a recorded response (as `curl -i --raw` saves it) of `endpoint` through the
/// exchange and settles it.
fn replay_api(name: &str, endpoint: Endpoint) -> RequestRecord {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap();
    let (head, len) = crate::client::http::parse_head(&bytes).unwrap().unwrap();
    let mut body = Vec::new();
    BodyDecoder::new(head.body)
        .decode(&bytes[len..], |b| body.extend_from_slice(b))
        .unwrap();
    let mut ex = Exchange::for_endpoint(endpoint);
    let mut sse = SseParser::new();
    let mut at = 0;
    sse.feed(&body, |e| {
        at += 1_000_000;
        !ex.on_event(e.event, e.data, at).unwrap()
    });
    ex.finish_stream(at);
    settle(ex.into_draft(), &TiktokenTokenizer::cl100k())
}

/// The other APIs llama.cpp serves settle into the same record as its chat route.
#[test]
fn responses_messages_and_completion_transcripts_settle() {
    use crate::record::{ChunkTokenSource, TokenSource};
    let r = replay_api("llama.cpp-11434/responses_stream.http", Endpoint::Responses);
    assert!(r.outcome.is_ok());
    assert_eq!(
        (r.output_tokens, r.output_tokens_source),
        (16, TokenSource::ServerUsage)
    );
    assert_eq!(r.usage_prompt_tokens(), Some(30));
    assert_eq!(r.chunks.len(), 16);
    assert!(
        r.server_timing.is_some(),
        "llama.cpp's timings ride on response.completed"
    );
    let r = replay_api("llama.cpp-11434/messages_stream.http", Endpoint::Messages);
    assert!(r.outcome.is_ok());
    assert_eq!(r.output_tokens, 16);
    assert_eq!(
        (r.usage_prompt_tokens(), r.usage_cached_tokens()),
        (Some(48), Some(1))
    );
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    assert!(r.response_id.as_deref().unwrap().starts_with("chatcmpl-"));
    let r = replay_api("llama.cpp-11434/completion_stream.http", Endpoint::Llamacpp);
    assert!(r.outcome.is_ok());
    assert_eq!(r.output_tokens, 16);
    assert_eq!(r.chunk_tokens_source, ChunkTokenSource::StreamedUsage);
    assert_eq!(r.chunks.iter().map(|c| c.tokens).sum::<u32>(), 16);
    let t = r.server_timing.unwrap();
    assert_eq!((t.prompt_n, t.predicted_n), (Some(7), Some(16)));
}

#[test]
fn missing_done_and_finish_reason_is_a_cut() {
    let mut ex = Exchange::default();
    ex.on_event(None, br#"{"choices":[{"delta":{"content":"a"}}]}"#, 5)
        .unwrap();
    ex.finish_stream(6);
    assert_eq!(
        ex.record().outcome.failure_kind(),
        Some(FailureKind::StreamCut)
    );
}

#[test]
fn refusal_and_error_events() {
    let mut ex = Exchange::default();
    ex.on_event(
        None,
        br#"{"choices":[{"delta":{"content":"no"},"finish_reason":"content_filter"}]}"#,
        5,
    )
    .unwrap();
    ex.finish_stream(6);
    assert_eq!(
        ex.record().outcome.failure_kind(),
        Some(FailureKind::Refused)
    );
    let mut ex = Exchange::default();
    let err = ex
        .on_event(None, br#"{"error":{"message":"overloaded"}}"#, 5)
        .unwrap_err();
    assert_eq!(err.failure_kind(), Some(FailureKind::Protocol));
}

#[test]
fn leading_whitespace_is_not_the_first_token() {
    let mut ex = Exchange::default();
    ex.on_event(None, br#"{"choices":[{"delta":{"content":"\n"}}]}"#, 5)
        .unwrap();
    ex.on_event(None, br#"{"choices":[{"delta":{"content":"Hi"}}]}"#, 9)
        .unwrap();
    assert_eq!(ex.record().first_token_at(), Some(9));
    assert_eq!(
        (ex.record().chunks.len(), ex.record().first_content),
        (2, Some(1))
    );
}

/// Replays a bare SSE transcript of `endpoint`, one event per millisecond, and settles it.
fn replay_sse(name: &str, endpoint: Endpoint) -> RequestRecord {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap();
    let mut ex = Exchange::for_endpoint(endpoint);
    let mut sse = SseParser::new();
    let mut at = 0;
    sse.feed(&bytes, |e| {
        at += 1_000_000;
        !ex.on_event(e.event, e.data, at).unwrap()
    });
    ex.finish_stream(at);
    settle(ex.into_draft(), &TiktokenTokenizer::cl100k())
}

#[test]
fn a_tool_call_only_answer_is_a_timed_success() {
    let mut ex = Exchange::for_endpoint(Endpoint::Chat);
    let events: [&[u8]; 6] = [
        br#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#,
        br#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"search","arguments":""}}]}}]}"#,
        br#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"query\":\" the"}}]}}]}"#,
        br#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":" model\"}"}}]}}]}"#,
        br#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        b"[DONE]",
    ];
    for (i, data) in events.iter().enumerate() {
        ex.on_event(None, data, 10 + i as u64).unwrap();
    }
    ex.finish_stream(20);
    let r = settle(ex.into_draft(), &TiktokenTokenizer::cl100k());
    assert!(r.outcome.is_ok(), "{:?}", r.outcome);
    assert_eq!(r.tool_calls, 1);
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.first_token_at(), Some(12), "the first arguments fragment");
    assert_eq!(r.chunks.len(), 2);
    // No usage: the arguments' text is counted by the tokenizer, as answer text would be.
    assert_eq!(
        r.output_tokens_source,
        crate::record::TokenSource::Tokenizer
    );
    assert!(r.output_tokens >= 4, "{}", r.output_tokens);
    assert_eq!(
        r.chunks.iter().map(|c| c.tokens).sum::<u32>(),
        r.output_tokens
    );
}

#[test]
fn tool_call_transcripts_settle_in_every_dialect() {
    // Chat: 2 calls, 6 fragments in 5 events (one delta ends one call and starts the next).
    let r = replay_sse("synthetic/chat_tool_calls_synthetic.sse", Endpoint::Chat);
    assert!(r.outcome.is_ok());
    assert_eq!((r.tool_calls, r.chunks.len()), (2, 5));
    assert_eq!(
        r.first_token_at(),
        Some(3_000_000),
        "the first non-empty fragment"
    );
    assert_eq!(r.output_tokens, 12, "the server's usage");
    assert_eq!(r.chunks.iter().map(|c| c.tokens).sum::<u32>(), 12);
    // Responses: the second call's arguments come only whole, in its `.done` event.
    let r = replay_sse(
        "synthetic/responses_function_call_synthetic.sse",
        Endpoint::Responses,
    );
    assert!(r.outcome.is_ok());
    assert_eq!((r.tool_calls, r.chunks.len()), (2, 4));
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.output_tokens, 16);
    // Messages: text first (the first token), then two tool_use blocks.
    let r = replay_sse(
        "synthetic/anthropic_tool_use_synthetic.sse",
        Endpoint::Messages,
    );
    assert!(r.outcome.is_ok());
    assert_eq!((r.tool_calls, r.chunks.len()), (2, 6));
    assert_eq!(r.first_token_at(), Some(4_000_000));
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.output_tokens, 27);
    // A text answer makes no tool call.
    let r = replay_api("llama.cpp-11434/messages_stream.http", Endpoint::Messages);
    assert_eq!(r.tool_calls, 0);
}
