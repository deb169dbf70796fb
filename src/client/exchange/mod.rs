//! One request/response exchange, timed on the run's clock.
//!
//! The whole exchange runs in the request's own task: connection from the pool, one write,
//! then a read loop that timestamps each read before anything is parsed, so every SSE event
//! completed by a read gets the arrival time of the bytes that completed it (draft B.1.1).
//! Whatever happens, the record keeps what was received; failures become `Outcome`s.

use super::apis::openai::parse_timings;
use super::apis::{parser_for, Parser, StreamParser};
use super::http::{BodyDecoder, HttpError};
use super::pool::Pool;
use super::sse::SseParser;
use crate::clock::{Nanos, RunClock};
use crate::config::{Endpoint, Target};
use crate::record::draft::BODY_START_BYTES;
use crate::record::{Chunk, Draft, FailureKind, Outcome, Phase, RequestRecord};

/// A request ready to send: its bytes were built off the hot path.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    pub id: u64,
    /// The API the bytes speak (decides how the stream is parsed).
    pub endpoint: Endpoint,
    pub class: Option<String>,
    pub input_tokens: u32,
    pub max_tokens: u32,
    /// Trace replay: arrival in ms from the trace start.
    pub arrival_ms: Option<f64>,
    /// Multi-turn: session id and 0-based turn.
    pub session: Option<(u64, u32)>,
    /// Multi-turn: wait after the previous turn's answer, ms.
    pub think_ms: f64,
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
pub fn http_request(target: &Target, body: &[u8]) -> Vec<u8> {
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
    let _ = write!(
        head,
        "POST {request_target} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nUser-Agent: servebench/{}\r\nContent-Length: {}\r\n",
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
                    scheduled_at,
                    input_tokens: req.input_tokens,
                    max_tokens: req.max_tokens,
                    ..Default::default()
                },
                ..Default::default()
            },
            parser: req.parser.clone(),
            ..Default::default()
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
        }
        if let Some(text) = ev.content.as_deref().filter(|t| !t.is_empty()) {
            self.draft.content_text.push_str(text);
            // Draft 5.1.3.1: whitespace-only output is not the first token, but it is output:
            // it stays a chunk (its tokens count), and the first token is the first non-blank one.
            if self.draft.record.first_content.is_none() && !text.trim().is_empty() {
                self.draft.record.first_content = Some(self.draft.record.chunks.len());
            }
            self.draft.record.chunks.push(Chunk {
                at,
                tokens: 0,
                bytes: text.len() as u32,
            });
            self.draft.cumulative_usage.push(cumulative);
        }
        if ev.done {
            self.saw_done = true;
        }
        Ok(ev.done)
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

/// What the read loop saw at the end of the body.
enum BodyEnd {
    Complete,
    Eof,
    /// The stream's own end marker (`[DONE]`) came before the HTTP body ended: the rest is
    /// drained (bounded) so the connection can be reused.
    Marker,
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

/// Runs one exchange against `pool`, filling `ex`. Never panics on bad input: every failure
/// ends up in `ex.record.outcome`. Safe to drop mid-way (timeout, cancel): the caller then
/// marks the outcome with `fail_if_unfinished`, and everything received so far is kept.
pub async fn execute(
    ex: &mut Exchange,
    pool: &Pool,
    clock: &RunClock,
    req: &PreparedRequest,
    url_for_errors: &str,
    limits: &ExchangeLimits,
) {
    match req.endpoint {
        Endpoint::Websocket => {
            return super::websocket::execute(ex, pool, clock, req, url_for_errors, limits).await
        }
        Endpoint::Grpc => {
            return match pool.grpc_channel() {
                Ok(ch) => super::grpc::execute(ex, &ch, clock, req, limits).await,
                Err(e) => ex.fail_if_unfinished(FailureKind::Connect, &e, clock.now()),
            }
        }
        _ => {}
    }
    // The caller normally stamps the attempt before racing this future against cancellation
    // (so a request cancelled before its first poll still has a real attempt time).
    if ex.draft.record.queued_at == 0 {
        ex.draft.record.queued_at = clock.now();
    }
    let mut retried = false;
    loop {
        let acquired = if retried {
            pool.open().await.map(|conn| super::pool::Acquired {
                conn,
                from_idle: false,
                reused: false,
            })
        } else {
            pool.acquire().await
        };
        let super::pool::Acquired {
            mut conn,
            from_idle,
            reused,
        } = match acquired {
            Ok(c) => c,
            Err(e) => {
                ex.draft.record.finished_at = clock.now();
                ex.draft.record.connect_ns =
                    ex.draft.record.finished_at - ex.draft.record.queued_at;
                ex.draft.record.outcome =
                    Outcome::failed(FailureKind::Connect, connect_advice(&e, url_for_errors));
                return;
            }
        };
        ex.draft.record.reused_connection = reused;
        let sent = clock.now();
        ex.draft.record.sent_at = Some(sent);
        ex.draft.record.connect_ns = sent - ex.draft.record.queued_at;
        let head = match conn.write_request(&req.http_bytes).await {
            Ok(()) => match limits.first_byte {
                Some(limit) => match tokio::time::timeout(limit, conn.read_head()).await {
                    Ok(h) => h,
                    Err(_) => {
                        ex.draft.record.finished_at = clock.now();
                        ex.draft.record.outcome = Outcome::failed(
                            FailureKind::Timeout,
                            format!(
                                "no response byte within {:.1} s of sending (--first-byte-timeout)",
                                limit.as_secs_f64()
                            ),
                        );
                        return;
                    }
                },
                None => conn.read_head().await,
            },
            Err(e) => Err(HttpError::Io(e)),
        };
        let head = match head {
            Ok((head, first_byte)) => {
                ex.draft.record.first_byte_at = Some(clock.offset_of(first_byte));
                head
            }
            Err(e) => {
                // A kept-alive connection the server had already closed: retry once on a
                // fresh connection (nothing of this request reached the server).
                let stale = matches!(&e, HttpError::ClosedBeforeResponse)
                    || matches!(&e, HttpError::Io(io) if matches!(io.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe));
                if from_idle && !retried && stale {
                    retried = true;
                    continue;
                }
                ex.draft.record.finished_at = clock.now();
                ex.draft.record.outcome = match e {
                    HttpError::Invalid(d) => Outcome::failed(FailureKind::Protocol, d),
                    other => {
                        Outcome::failed(FailureKind::StreamCut, format!("no response: {other}"))
                    }
                };
                return;
            }
        };
        ex.draft.record.http_status = Some(head.status);
        ex.draft.content_type = head.content_type.clone();
        let mut decoder = BodyDecoder::new(head.body);

        if head.status != 200 {
            // Keep the error body (bounded) as the failure detail: servers explain themselves there.
            let mut body = Vec::new();
            let end = read_body(
                &mut conn,
                &mut decoder,
                |bytes, _| {
                    if body.len() < 4096 {
                        body.extend_from_slice(&bytes[..bytes.len().min(4096 - body.len())]);
                    }
                    Ok(Progress::default())
                },
                clock,
                &BodyLimits::error_body(limits),
            )
            .await;
            ex.draft.record.finished_at = clock.now();
            let text = String::from_utf8_lossy(&body);
            let mut detail = if text.trim().is_empty() {
                format!("HTTP {} with an empty body", head.status)
            } else {
                format!("HTTP {}: {}", head.status, text.trim())
            };
            if let Some(ra) = &head.retry_after {
                detail.push_str(&format!(" (Retry-After: {ra})"));
            }
            ex.draft.record.outcome = Outcome::failed(FailureKind::HttpStatus, detail);
            if matches!(end, Ok(BodyEnd::Complete)) && head.keep_alive {
                pool.release(conn);
            }
            return;
        }

        let mut sse = SseParser::with_max_line(limits.max_line_bytes);
        let mut failure: Option<Outcome> = None;
        let mut ended = false;
        let first_token_deadline = limits.first_token.map(|d| clock.instant_at(sent) + d);
        // A body not declared an event stream (an HTML page, a JSON document): its start is
        // kept to say what answered.
        let keep_start = !head.content_type.as_deref().is_some_and(|t| {
            t.as_bytes()
                .windows(12)
                .any(|w| w.eq_ignore_ascii_case(b"event-stream"))
        });
        let end = read_body(
            &mut conn,
            &mut decoder,
            |bytes, at| {
                let kept = ex.draft.body_start.len();
                if keep_start && kept < BODY_START_BYTES {
                    let take = bytes.len().min(BODY_START_BYTES - kept);
                    ex.draft.body_start.extend_from_slice(&bytes[..take]);
                }
                sse.feed(bytes, |event| {
                    match ex.on_event(event.event, event.data, at) {
                        Ok(done) => {
                            ended |= done;
                            !done
                        }
                        Err(o) => {
                            failure = Some(o);
                            false
                        }
                    }
                });
                if let Some(o) = failure.take() {
                    return Err(o);
                }
                if sse.overflowed() {
                    return Err(Outcome::failed(
                        FailureKind::Protocol,
                        format!(
                            "an SSE line or event exceeded {} MiB (--max-line-bytes)",
                            limits.max_line_bytes >> 20
                        ),
                    ));
                }
                let r = &ex.draft.record;
                Ok(Progress {
                    ended,
                    token: !r.chunks.is_empty() || !r.reasoning_chunks.is_empty(),
                })
            },
            clock,
            &BodyLimits {
                max_bytes: limits.max_response_bytes,
                first_token_deadline,
            },
        )
        .await;
        let now = clock.now();
        match end {
            Ok(BodyEnd::Marker) => {
                ex.finish_stream(now);
                // The answer is complete; read the rest of the HTTP body (the chunked
                // terminator, normally already here) so the connection can be reused, as
                // real clients do. Bounded, so a server that keeps talking costs a new
                // connection, never a stuck request.
                if head.keep_alive && drain_body(&mut conn, &mut decoder).await {
                    pool.release(conn);
                }
            }
            Ok(BodyEnd::Complete) => {
                ex.finish_stream(now);
                if head.keep_alive {
                    pool.release(conn);
                }
            }
            Ok(BodyEnd::Eof) => {
                if decoder.ends_at_close() && !sse.has_pending() {
                    ex.finish_stream(now);
                } else {
                    ex.draft.record.finished_at = now;
                    ex.draft.record.outcome = Outcome::failed(
                        FailureKind::StreamCut,
                        format!(
                            "connection closed mid-stream after {} content chunks",
                            ex.draft.record.chunks.len()
                        ),
                    );
                }
            }
            Err(outcome) => {
                ex.draft.record.finished_at = now;
                ex.draft.record.outcome = outcome;
            }
        }
        return;
    }
}

/// What bounds a body read.
struct BodyLimits {
    /// Decoded bytes beyond which the response is a protocol failure.
    max_bytes: u64,
    /// Until the first token: the time by which one must have come.
    first_token_deadline: Option<std::time::Instant>,
}

impl BodyLimits {
    fn error_body(limits: &ExchangeLimits) -> BodyLimits {
        BodyLimits {
            max_bytes: limits.max_response_bytes,
            first_token_deadline: None,
        }
    }
}

/// What the consumer of body bytes says after each piece.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    /// The stream's own end marker came.
    ended: bool,
    /// A token (answer or reasoning) has come.
    token: bool,
}

/// Reads the body to its end, passing decoded bytes and their arrival time to `on_data`
/// (which returns `true` once the stream's own end marker came).
async fn read_body(
    conn: &mut super::http::Conn,
    decoder: &mut BodyDecoder,
    mut on_data: impl FnMut(&[u8], Nanos) -> Result<Progress, Outcome>,
    clock: &RunClock,
    limits: &BodyLimits,
) -> Result<BodyEnd, Outcome> {
    // Bytes that came with the head arrived with the last read of the head.
    let mut at = clock.offset_of(conn.last_read());
    let mut total: u64 = 0;
    let mut got_token = false;
    loop {
        if !conn.buffered().is_empty() {
            let mut result: Result<Progress, Outcome> = Ok(Progress::default());
            let consumed = decoder
                .decode(conn.buffered(), |bytes| {
                    total += bytes.len() as u64;
                    if matches!(result, Ok(p) if !p.ended) {
                        result = on_data(bytes, at);
                    }
                })
                .map_err(|e| Outcome::failed(FailureKind::Protocol, e.to_string()))?;
            conn.consume(consumed);
            let progress = result?;
            got_token |= progress.token;
            if progress.ended {
                return Ok(BodyEnd::Marker);
            }
            if total > limits.max_bytes {
                return Err(Outcome::failed(
                    FailureKind::Protocol,
                    format!(
                        "the response exceeded {} MiB (--max-response-bytes)",
                        limits.max_bytes >> 20
                    ),
                ));
            }
        }
        if decoder.is_done() {
            return Ok(BodyEnd::Complete);
        }
        let read = match limits.first_token_deadline.filter(|_| !got_token) {
            Some(deadline) => match tokio::time::timeout_at(deadline.into(), conn.fill()).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(Outcome::failed(
                        FailureKind::Timeout,
                        "no token within the first-token timeout (--first-token-timeout)",
                    ))
                }
            },
            None => conn.fill().await,
        };
        let n = read.map_err(|e| {
            Outcome::failed(
                FailureKind::StreamCut,
                format!("read failed mid-stream: {e}"),
            )
        })?;
        at = clock.offset_of(conn.last_read());
        if n == 0 {
            return Ok(BodyEnd::Eof);
        }
    }
}

/// Most body bytes read after the stream's end marker before giving the connection up.
const DRAIN_MAX_BYTES: u64 = 64 * 1024;
/// Longest wait for the rest of the body after the end marker.
const DRAIN_MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Reads what is left of an HTTP body after the stream's own end marker (`[DONE]` and the
/// like), discarding it; true when the body ended cleanly within the bounds, so the
/// connection can serve another request.
async fn drain_body(conn: &mut super::http::Conn, decoder: &mut BodyDecoder) -> bool {
    let mut drained: u64 = 0;
    let deadline = tokio::time::Instant::now() + DRAIN_MAX_WAIT;
    loop {
        if !conn.buffered().is_empty() {
            let Ok(used) = decoder.decode(conn.buffered(), |b| drained += b.len() as u64) else {
                return false;
            };
            conn.consume(used);
        }
        if decoder.is_done() {
            return conn.buffered().is_empty();
        }
        if drained > DRAIN_MAX_BYTES || decoder.ends_at_close() {
            return false;
        }
        match tokio::time::timeout_at(deadline, conn.fill()).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return false,
        }
    }
}

/// A connection failure in words a user can act on.
pub fn connect_advice(e: &HttpError, url: &str) -> String {
    let text = e.to_string();
    match e {
        HttpError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!("connection refused at {url}: is the server running?")
        }
        _ if text.contains("lookup address") || text.contains("Name or service not known") => {
            format!("could not resolve the host of {url} (DNS): {text}")
        }
        _ if text.contains("certificate") || text.contains("UnknownIssuer") => format!(
            "TLS: {url} presented a certificate that was not accepted ({text}); trust its CA with --ca-cert, or use --insecure for testing"
        ),
        _ if text.contains("proxy") => text,
        other => format!("could not connect to {url}: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert!(
            String::from_utf8_lossy(&bytes[len..]).contains("exceeds the available context size")
        );
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
}
