//! One request/response exchange, timed on the run's clock.
//!
//! The whole exchange runs in the request's own task: connection from the pool, one write,
//! then a read loop that timestamps each read before anything is parsed, so every SSE event
//! completed by a read gets the arrival time of the bytes that completed it (draft B.1.1).
//! Whatever happens, the record keeps what was received; failures become `Outcome`s.
//!
//! `send` runs the exchange over HTTP (the WebSocket and gRPC paths have their own modules),
//! `body` reads the response body under its limits.

mod body;
mod send;
#[cfg(test)]
mod tests;
mod whole;

use super::apis::openai::parse_timings;
use super::apis::{parser_for, Parser, StreamParser, ToolCallDelta};
use crate::client::{Endpoint, Target};
use crate::clock::Nanos;
use crate::record::{Chunk, Draft, FailureKind, Outcome, Phase, RequestRecord};
pub use send::{connect_advice, execute};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A request ready to send: its bytes were built off the hot path.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    pub id: u64,
    /// The API the bytes speak (decides how the stream is parsed).
    pub endpoint: Endpoint,
    pub class: Option<String>,
    pub input_tokens: u32,
    pub max_tokens: u32,
    /// Items sent to a non-generative API (embeddings, rerank documents); 0 otherwise.
    pub items: u32,
    /// Bytes of the request's body.
    pub body_bytes: u64,
    /// Images and audio in the body.
    pub media: crate::record::MediaCounts,
    /// Trace replay: arrival in ms from the trace start.
    pub arrival_ms: Option<f64>,
    /// Multi-turn: session id and 0-based turn.
    pub session: Option<(u64, u32)>,
    /// Multi-turn: wait after the previous turn's answer, ms.
    pub think_ms: f64,
    /// Sessions: the steps (turns) the session plans.
    pub session_steps: u32,
    /// Agent sessions: the request's branch in its step's fan-out (0-based).
    pub branch: u32,
    /// Agent sessions: the tool time waited after the previous step, ms (before `think_ms`).
    pub tool_ms: f64,
    /// The complete HTTP request (head and body); for a WebSocket, the opening handshake.
    pub http_bytes: Vec<u8>,
    /// A WebSocket's request message, as a masked frame (empty for HTTP APIs).
    pub ws_frame: Vec<u8>,
    /// A fresh parser for the response (carries the API's configuration).
    pub parser: Parser,
}

/// A WebSocket target's request message as a client frame; empty for HTTP APIs.
pub fn ws_frame(target: &Target, body: &[u8]) -> Vec<u8> {
    match target.endpoint {
        Endpoint::Websocket => super::websocket::client_text_frame(body),
        _ => Vec::new(),
    }
}

/// Builds the bytes of a `POST` to the target's endpoint (for a WebSocket target, its
/// opening handshake; the message goes in [`ws_frame`]).
pub fn http_request(target: &Target, body: &[u8], id: u64) -> Vec<u8> {
    use std::fmt::Write;
    match target.endpoint {
        Endpoint::Websocket => {
            return super::websocket::upgrade_request(target, super::websocket::KEY_PLACEHOLDER)
        }
        // The encoded protobuf message: the gRPC client frames it.
        Endpoint::Grpc => return body.to_vec(),
        _ => {}
    }
    let mut head = String::with_capacity(256);
    // Through a plain HTTP proxy the request line names the whole URL (absolute form).
    let path = target.endpoint.request_path(&target.url, None);
    let request_target = match &target.proxy {
        Some(p) if !p.tunnel => format!("{}{path}", target.url.root()),
        _ => path,
    };
    // The non-generative APIs answer one JSON document, not a stream.
    let accept = if target.endpoint.is_generative() {
        "text/event-stream"
    } else {
        "application/json"
    };
    let _ = write!(
        head,
        "POST {request_target} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: {accept}\r\nUser-Agent: servebench/{}\r\nContent-Length: {}\r\n",
        target.url.host_header(),
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    if let Some(auth) = target
        .proxy
        .as_ref()
        .filter(|p| !p.tunnel)
        .and_then(|p| p.auth.as_ref())
    {
        let _ = write!(head, "Proxy-Authorization: {}\r\n", auth.expose());
    }
    super::apis::write_auth_headers(target, &mut head);
    if let Some(prefix) = &target.trace_id_prefix {
        let _ = write!(
            head,
            "traceparent: {}\r\n",
            super::trace::traceparent(prefix, id)
        );
    }
    for (k, v) in &target.headers {
        let _ = write!(head, "{k}: {v}\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// A request being measured: its draft record, its API's stream parser and the stream's
/// end markers.
#[derive(Debug, Default)]
pub struct Exchange {
    pub draft: Draft,
    parser: Parser,
    saw_done: bool,
    refused: bool,
    /// The answer's tool calls by their index, each with whether a fragment of its
    /// arguments came (so a `.done` event's whole arguments are not counted twice). Empty,
    /// and never allocated, for text answers.
    tool_calls: Vec<(u32, bool)>,
    /// Counts every output chunk as it arrives, for the live view's token rate.
    chunks_received: Option<Arc<AtomicU64>>,
}

impl Exchange {
    pub fn new(req: &PreparedRequest, phase: Phase, scheduled_at: Option<Nanos>) -> Self {
        Self {
            draft: Draft {
                record: RequestRecord {
                    id: req.id,
                    phase,
                    class: req.class.clone(),
                    session: req.session,
                    session_steps: req.session_steps,
                    branch: req.branch,
                    planned_tool_ms: req.tool_ms,
                    planned_think_ms: req.think_ms,
                    scheduled_at,
                    input_tokens: req.input_tokens,
                    max_tokens: req.max_tokens,
                    items: req.items,
                    body_bytes: req.body_bytes,
                    media: req.media,
                    ..Default::default()
                },
                ..Default::default()
            },
            parser: req.parser.clone(),
            ..Default::default()
        }
    }

    /// Counts each output chunk (answer or reasoning) in `counter` as it arrives.
    pub fn count_chunks_in(&mut self, counter: Arc<AtomicU64>) {
        self.chunks_received = Some(counter);
    }

    /// One more output chunk arrived.
    fn count_chunk(&self) {
        if let Some(c) = &self.chunks_received {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An exchange for tests and replays: no request, a parser for `endpoint`.
    pub fn for_endpoint(endpoint: Endpoint) -> Self {
        Self {
            parser: parser_for(endpoint),
            ..Default::default()
        }
    }

    /// The record being filled.
    pub fn record(&self) -> &RequestRecord {
        &self.draft.record
    }

    /// The draft, once the exchange is over.
    pub fn into_draft(self) -> Draft {
        self.draft
    }

    /// Marks the exchange as ended by `outcome` unless it already has an ending.
    pub fn fail_if_unfinished(&mut self, kind: FailureKind, detail: &str, at: Nanos) {
        let r = &mut self.draft.record;
        if r.finished_at == 0 {
            r.finished_at = at;
            r.outcome = Outcome::failed(kind, detail);
        }
    }

    /// Handles one event (its SSE `event:` name and data) that arrived at `at`; `Ok(true)`
    /// when it ends the stream (`[DONE]`, `message_stop`, ...: anything after it is not
    /// part of the answer). `Err` ends the exchange.
    pub fn on_event(
        &mut self,
        event: Option<&str>,
        data: &[u8],
        at: Nanos,
    ) -> Result<bool, Outcome> {
        let ev = self
            .parser
            .parse(event, data)
            .map_err(|e| Outcome::failed(FailureKind::Protocol, e))?;
        self.apply(ev, at)
    }

    /// Takes in one parsed event that arrived at `at` (the gRPC path parses its messages
    /// itself); as [`Exchange::on_event`].
    pub fn apply(&mut self, ev: super::apis::ApiEvent<'_>, at: Nanos) -> Result<bool, Outcome> {
        if self.draft.record.response_id.is_none() {
            if let Some(id) = &ev.id {
                self.draft.record.response_id = Some(id.to_string());
            }
        }
        if let Some(err) = ev.error {
            return Err(Outcome::failed(
                FailureKind::Protocol,
                format!("server sent an error event: {err}"),
            ));
        }
        let mut cumulative = ev.cumulative_completion;
        if let Some(usage) = ev.usage {
            // Servers streaming usage in every chunk would otherwise cost a JSON tree per
            // chunk: keep the latest usage text in a reused buffer (no allocation once
            // grown), read only the count now, and build the `usage` value once, off the hot
            // path. An empty usage never erases an earlier one.
            cumulative = cumulative.or_else(|| usage.completion_tokens());
            let mut buf = std::mem::take(&mut self.draft.usage_scratch);
            if usage.write_json(&mut buf) {
                std::mem::swap(&mut self.draft.usage_raw, &mut buf);
            }
            self.draft.usage_scratch = buf;
        }
        if let Some(t) = ev.timings.and_then(parse_timings) {
            self.draft.record.server_timing = Some(t);
        }
        if let Some(reason) = &ev.finish_reason {
            if reason == "content_filter" {
                self.refused = true;
            }
            self.draft.record.finish_reason = Some(reason.to_string());
        }
        self.refused |= ev.refusal;
        if let Some(text) = ev.reasoning.as_deref().filter(|t| !t.is_empty()) {
            self.draft.reasoning_text.push_str(text);
            self.draft.record.reasoning_chunks.push(Chunk {
                at,
                tokens: 0,
                bytes: text.len() as u32,
            });
            self.count_chunk();
        }
        self.on_output(&ev, at, cumulative);
        if ev.done {
            self.saw_done = true;
        }
        Ok(ev.done)
    }

    /// The answer's output an event carries, as one chunk: its text and its tool calls'
    /// argument fragments (several calls may share a Chat Completions delta) arrived
    /// together.
    fn on_output(&mut self, ev: &super::apis::ApiEvent<'_>, at: Nanos, cumulative: Option<u32>) {
        let mut bytes = 0;
        let mut blank = true;
        if let Some(text) = ev.content.as_deref().filter(|t| !t.is_empty()) {
            self.draft.content_text.push_str(text);
            (bytes, blank) = (text.len(), text.trim().is_empty());
        }
        for call in ev.tool_calls.iter() {
            if let Some(text) = self.tool_call_output(call) {
                self.draft.content_text.push_str(text);
                bytes += text.len();
                blank &= text.trim().is_empty();
            }
        }
        if bytes > 0 {
            self.push_chunk(bytes, blank, at, cumulative);
        }
    }

    /// A chunk of `bytes` of output (answer text or tool-call arguments) that arrived at
    /// `at`, its text already kept for counting tokens.
    fn push_chunk(&mut self, bytes: usize, blank: bool, at: Nanos, cumulative: Option<u32>) {
        // Draft 5.1.3.1: whitespace-only output is not the first token, but it is output:
        // it stays a chunk (its tokens count), and the first token is the first non-blank one.
        if self.draft.record.first_content.is_none() && !blank {
            self.draft.record.first_content = Some(self.draft.record.chunks.len());
        }
        self.draft.record.chunks.push(Chunk {
            at,
            tokens: 0,
            bytes: bytes as u32,
        });
        self.draft.cumulative_usage.push(cumulative);
        self.count_chunk();
    }

    /// A tool call's part: a call not seen before is counted, and the arguments fragment it
    /// brings is returned, to be timed as answer text is (the model generates arguments
    /// token by token, so a call's first fragment can be the first token).
    fn tool_call_output<'e>(&mut self, call: &'e ToolCallDelta<'_>) -> Option<&'e str> {
        let slot = match self.tool_calls.iter().position(|(i, _)| *i == call.index) {
            Some(slot) => slot,
            None => {
                self.tool_calls.push((call.index, false));
                self.draft.record.tool_calls += 1;
                self.tool_calls.len() - 1
            }
        };
        let text = call.arguments.as_deref().filter(|t| !t.is_empty())?;
        if call.whole && self.tool_calls[slot].1 {
            return None; // the fragments already brought these arguments
        }
        self.tool_calls[slot].1 = true;
        Some(text)
    }

    /// The outcome of a stream that ended normally at `at`.
    pub fn finish_stream(&mut self, at: Nanos) {
        self.draft.record.finished_at = at;
        self.draft.record.outcome = if self.refused {
            Outcome::failed(
                FailureKind::Refused,
                "the server refused the content (content_filter or refusal)",
            )
        } else if self.saw_done || self.draft.record.finish_reason.is_some() {
            Outcome::Ok
        } else {
            Outcome::failed(
                FailureKind::StreamCut,
                format!(
                    "stream ended without its end event ([DONE], response.completed, message_stop, stop) or a finish reason after {} content chunks",
                    self.draft.record.chunks.len()
                ),
            )
        };
    }
}

/// Limits of one exchange: each ends it with a failure of the right kind, and together they
/// bound the memory a hostile or broken server can make the client use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExchangeLimits {
    /// From sending to the first response byte (`--first-byte-timeout`).
    pub first_byte: Option<std::time::Duration>,
    /// From sending to the first answer or reasoning token (`--first-token-timeout`).
    pub first_token: Option<std::time::Duration>,
    /// Decoded body bytes of one response (`--max-response-bytes`).
    pub max_response_bytes: u64,
    /// Bytes of one SSE line or event (`--max-line-bytes`).
    pub max_line_bytes: usize,
}

impl Default for ExchangeLimits {
    fn default() -> Self {
        Self {
            first_byte: None,
            first_token: None,
            max_response_bytes: 256 << 20,
            max_line_bytes: 16 << 20,
        }
    }
}
