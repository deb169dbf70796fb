//! One HTTP exchange on a pooled connection: connect (once more on a fresh connection when a
//! kept-alive one turns out closed), write, read the head, then the body as events; every
//! failure becomes the record's outcome.

use super::body::{drain_body, read_body, read_whole, BodyEnd, BodyLimits, Progress};
use super::{Exchange, ExchangeLimits, PreparedRequest};
use crate::client::http::{BodyDecoder, Conn, HttpError, ResponseHead};
use crate::client::pool::{Acquired, Pool};
use crate::client::sse::SseParser;
use crate::client::Endpoint;
use crate::clock::{Nanos, RunClock};
use crate::record::draft::BODY_START_BYTES;
use crate::record::{FailureKind, Outcome};

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
            return crate::client::websocket::execute(ex, pool, clock, req, url_for_errors, limits)
                .await
        }
        Endpoint::Grpc => {
            return match pool.grpc_channel() {
                Ok(ch) => crate::client::grpc::execute(ex, &ch, clock, req, limits).await,
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
        let Some(acquired) = acquire(ex, pool, clock, retried, url_for_errors).await else {
            return;
        };
        let mut conn = acquired.conn;
        ex.draft.record.reused_connection = acquired.reused;
        let sent = clock.now();
        ex.draft.record.sent_at = Some(sent);
        ex.draft.record.connect_ns = sent - ex.draft.record.queued_at;
        let head = match send_and_read_head(ex, &mut conn, clock, req, limits).await {
            Some(Ok(head)) => head,
            // A kept-alive connection the server had already closed: retry once on a fresh
            // connection (nothing of this request reached the server).
            Some(Err(e)) if acquired.from_idle && !retried && is_stale(&e) => {
                if acquired
                    .idle
                    .is_some_and(|i| i < crate::client::pool::CLOSED_AFTER_ANSWER)
                {
                    pool.note_closed_by_server();
                }
                retried = true;
                continue;
            }
            Some(Err(e)) => return fail_without_response(ex, clock, e),
            None => return,
        };
        ex.draft.record.http_status = Some(head.status);
        ex.draft.content_type = head.content_type.clone();
        let decoder = BodyDecoder::new(head.body);
        if head.status != 200 {
            return fail_http_status(ex, pool, conn, decoder, &head, clock, limits).await;
        }
        if !req.endpoint.is_generative() {
            let (keep_alive, endpoint) = (head.keep_alive, req.endpoint);
            return super::whole::read_answer(
                ex, pool, conn, decoder, keep_alive, endpoint, clock, limits,
            )
            .await;
        }
        return read_stream(ex, pool, conn, decoder, &head, sent, clock, limits).await;
    }
}

/// Reads a 200 answer's event stream, handing each event to the exchange, and settles the
/// record by how it ended.
#[allow(clippy::too_many_arguments)]
async fn read_stream(
    ex: &mut Exchange,
    pool: &Pool,
    mut conn: Conn,
    mut decoder: BodyDecoder,
    head: &ResponseHead,
    sent: Nanos,
    clock: &RunClock,
    limits: &ExchangeLimits,
) {
    let mut sse = SseParser::with_max_line(limits.max_line_bytes);
    let keep_start = !declares_event_stream(head);
    let end = read_body(
        &mut conn,
        &mut decoder,
        stream_consumer(ex, &mut sse, keep_start, limits.max_line_bytes),
        clock,
        &BodyLimits::stream(limits, clock, sent),
    )
    .await;
    settle_stream_end(
        ex,
        pool,
        conn,
        &mut decoder,
        &sse,
        head.keep_alive,
        end,
        clock,
    )
    .await;
}

/// A connection for the exchange: a pooled (or new) one first, a fresh one on the retry after
/// a stale keep-alive. `None` when none could be had (the record then says why).
async fn acquire(
    ex: &mut Exchange,
    pool: &Pool,
    clock: &RunClock,
    retried: bool,
    url_for_errors: &str,
) -> Option<Acquired> {
    let acquired = if retried {
        pool.open().await.map(|conn| Acquired {
            conn,
            from_idle: false,
            reused: false,
            idle: None,
        })
    } else {
        pool.acquire().await
    };
    match acquired {
        Ok(c) => Some(c),
        Err(e) => {
            ex.draft.record.finished_at = clock.now();
            ex.draft.record.connect_ns = ex.draft.record.finished_at - ex.draft.record.queued_at;
            ex.draft.record.outcome =
                Outcome::failed(FailureKind::Connect, connect_advice(&e, url_for_errors));
            None
        }
    }
}

/// Writes the request and reads the response head within `--first-byte-timeout` when set,
/// stamping when its first byte came. `None` when that timeout passed (the record then says
/// so).
async fn send_and_read_head(
    ex: &mut Exchange,
    conn: &mut Conn,
    clock: &RunClock,
    req: &PreparedRequest,
    limits: &ExchangeLimits,
) -> Option<Result<ResponseHead, HttpError>> {
    let written = conn.write_request(&req.http_bytes).await;
    if written.is_ok() {
        // The last byte handed to the kernel: with `sent_at`, the time the body took to send.
        ex.draft.record.body_sent_at = Some(clock.now());
    }
    let head = match written {
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
                    return None;
                }
            },
            None => conn.read_head().await,
        },
        Err(e) => Err(HttpError::Io(e)),
    };
    Some(head.map(|(head, first_byte)| {
        ex.draft.record.first_byte_at = Some(clock.offset_of(first_byte));
        head
    }))
}

/// The failure of a kept-alive connection the server had already closed.
fn is_stale(e: &HttpError) -> bool {
    matches!(e, HttpError::ClosedBeforeResponse)
        || matches!(e, HttpError::Io(io) if matches!(io.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe))
}

/// Finishes the record of an exchange that got no response head.
fn fail_without_response(ex: &mut Exchange, clock: &RunClock, e: HttpError) {
    ex.draft.record.finished_at = clock.now();
    ex.draft.record.outcome = match e {
        HttpError::Invalid(d) => Outcome::failed(FailureKind::Protocol, d),
        other => Outcome::failed(FailureKind::StreamCut, format!("no response: {other}")),
    };
}

/// A status other than 200: keeps the error body (bounded) as the failure detail, since
/// servers explain themselves there, and gives a cleanly ended connection back to the pool.
async fn fail_http_status(
    ex: &mut Exchange,
    pool: &Pool,
    mut conn: Conn,
    mut decoder: BodyDecoder,
    head: &ResponseHead,
    clock: &RunClock,
    limits: &ExchangeLimits,
) {
    let (end, body) = read_whole(&mut conn, &mut decoder, clock, limits, 4096).await;
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
}

/// The response says it is an event stream. The start of a body that does not (an HTML
/// page, a JSON document) is kept to say what answered.
fn declares_event_stream(head: &ResponseHead) -> bool {
    head.content_type.as_deref().is_some_and(|t| {
        t.as_bytes()
            .windows(12)
            .any(|w| w.eq_ignore_ascii_case(b"event-stream"))
    })
}

/// What consumes a 200 response's body, piece by piece (the per-chunk hot path, returned
/// unboxed): keeps the body's start when `keep_start`, feeds the SSE parser and hands each
/// event to the exchange, stopping at the stream's own end marker or its first failure.
#[inline]
fn stream_consumer<'a>(
    ex: &'a mut Exchange,
    sse: &'a mut SseParser,
    keep_start: bool,
    max_line_bytes: usize,
) -> impl FnMut(&[u8], Nanos) -> Result<Progress, Outcome> + 'a {
    let mut failure: Option<Outcome> = None;
    let mut ended = false;
    move |bytes, at| {
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
                    max_line_bytes >> 20
                ),
            ));
        }
        let r = &ex.draft.record;
        Ok(Progress {
            ended,
            token: !r.chunks.is_empty() || !r.reasoning_chunks.is_empty(),
        })
    }
}

/// Settles the record by how a 200 response's body ended (at the time of the call), and gives
/// the connection back to the pool when it can serve another request.
#[allow(clippy::too_many_arguments)]
async fn settle_stream_end(
    ex: &mut Exchange,
    pool: &Pool,
    mut conn: Conn,
    decoder: &mut BodyDecoder,
    sse: &SseParser,
    keep_alive: bool,
    end: Result<BodyEnd, Outcome>,
    clock: &RunClock,
) {
    let now = clock.now();
    match end {
        Ok(BodyEnd::Marker) => {
            ex.finish_stream(now);
            // The answer is complete; read the rest of the HTTP body (the chunked
            // terminator, normally already here) so the connection can be reused, as
            // real clients do. Bounded, so a server that keeps talking costs a new
            // connection, never a stuck request.
            if keep_alive && drain_body(&mut conn, decoder).await {
                pool.release(conn);
            }
        }
        Ok(BodyEnd::Complete) => {
            ex.finish_stream(now);
            if keep_alive {
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
