//! One HTTP exchange on a pooled connection: connect (once more on a fresh connection when a
//! kept-alive one turns out closed), write, read the head, then the body as events; every
//! failure becomes the record's outcome.

use super::body::{drain_body, read_body, BodyEnd, BodyLimits, Progress};
use super::{Exchange, ExchangeLimits, PreparedRequest};
use crate::client::http::{BodyDecoder, HttpError};
use crate::client::pool::Pool;
use crate::client::sse::SseParser;
use crate::clock::RunClock;
use crate::config::Endpoint;
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
        let acquired = if retried {
            pool.open().await.map(|conn| crate::client::pool::Acquired {
                conn,
                from_idle: false,
                reused: false,
            })
        } else {
            pool.acquire().await
        };
        let crate::client::pool::Acquired {
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
