//! Reading a response body on the request's own task: each piece timestamped by its read,
//! bounded in size and, until the first token, in time; and the rest of a body drained after
//! the stream's own end marker so the connection can be reused.

use super::ExchangeLimits;
use crate::client::http::{BodyDecoder, Conn};
use crate::clock::{Nanos, RunClock};
use crate::record::{FailureKind, Outcome};

/// What the read loop saw at the end of the body.
pub(super) enum BodyEnd {
    Complete,
    Eof,
    /// The stream's own end marker (`[DONE]`) came before the HTTP body ended: the rest is
    /// drained (bounded) so the connection can be reused.
    Marker,
}

/// What bounds a body read.
pub(super) struct BodyLimits {
    /// Decoded bytes beyond which the response is a protocol failure.
    pub(super) max_bytes: u64,
    /// Until the first token: the time by which one must have come.
    pub(super) first_token_deadline: Option<std::time::Instant>,
}

impl BodyLimits {
    pub(super) fn error_body(limits: &ExchangeLimits) -> BodyLimits {
        BodyLimits {
            max_bytes: limits.max_response_bytes,
            first_token_deadline: None,
        }
    }

    /// An answer's stream, sent at `sent`: a first token is due within `--first-token-timeout`.
    pub(super) fn stream(limits: &ExchangeLimits, clock: &RunClock, sent: Nanos) -> BodyLimits {
        BodyLimits {
            max_bytes: limits.max_response_bytes,
            first_token_deadline: limits.first_token.map(|d| clock.instant_at(sent) + d),
        }
    }
}

/// What the consumer of body bytes says after each piece.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Progress {
    /// The stream's own end marker came.
    pub(super) ended: bool,
    /// A token (answer or reasoning) has come.
    pub(super) token: bool,
}

/// Reads the body to its end, passing decoded bytes and their arrival time to `on_data`
/// (which returns `true` once the stream's own end marker came).
pub(super) async fn read_body(
    conn: &mut Conn,
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

/// Reads a whole body (bounded by `--max-response-bytes`), keeping its first `keep` bytes:
/// how it ended and what was kept.
pub(super) async fn read_whole(
    conn: &mut Conn,
    decoder: &mut BodyDecoder,
    clock: &RunClock,
    limits: &ExchangeLimits,
    keep: usize,
) -> (Result<BodyEnd, Outcome>, Vec<u8>) {
    let mut body = Vec::new();
    let end = read_body(
        conn,
        decoder,
        |bytes, _| {
            let room = keep.saturating_sub(body.len());
            body.extend_from_slice(&bytes[..bytes.len().min(room)]);
            Ok(Progress::default())
        },
        clock,
        &BodyLimits::error_body(limits),
    )
    .await;
    (end, body)
}

/// Most body bytes read after the stream's end marker before giving the connection up.
const DRAIN_MAX_BYTES: u64 = 64 * 1024;
/// Longest wait for the rest of the body after the end marker.
const DRAIN_MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Reads what is left of an HTTP body after the stream's own end marker (`[DONE]` and the
/// like), discarding it; true when the body ended cleanly within the bounds, so the
/// connection can serve another request.
pub(super) async fn drain_body(conn: &mut Conn, decoder: &mut BodyDecoder) -> bool {
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
