//! WebSocket streaming (`--endpoint websocket`): the opening handshake, frames, and the
//! measured exchange over them.
//!
//! Written on the client's own connection (`http::Conn`) rather than a WebSocket library, so
//! a message gets the same arrival time as an SSE event: the kernel's receive timestamp of
//! the read that completed it, taken before any decoding. Only what a streaming answer
//! needs is spoken (RFC 6455): the client's masked text frame out; text, binary and
//! continuation frames in, pings answered, close honoured; no extensions (no compression).
//! The connection is not reused: each request opens its own socket, as WebSocket clients do.

use super::exchange::{connect_advice, Exchange, ExchangeLimits, PreparedRequest};
use super::http::{Conn, HttpError};
use super::pool::Pool;
use crate::client::Target;
use crate::clock::{Nanos, RunClock};
use crate::record::{FailureKind, Outcome, RequestRecord};
use std::time::Instant;

/// The GUID of RFC 6455 section 1.3, hashed with the client's key into the server's accept.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The `Sec-WebSocket-Accept` a server must answer to `key`.
pub fn accept_key(key: &str) -> String {
    use base64::Engine;
    let mut h = sha1_smol::Sha1::new();
    h.update(key.as_bytes());
    h.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(h.digest().bytes())
}

/// The opening handshake (`GET` with `Upgrade: websocket`) to `target`, with its key.
pub fn upgrade_request(target: &Target, key: &str) -> Vec<u8> {
    use std::fmt::Write;
    let path = target.endpoint.request_path(
        &target.url,
        target.websocket.as_ref().and_then(|w| w.path.as_deref()),
    );
    let mut head = String::with_capacity(256);
    let _ = write!(
        head,
        "GET {path} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nUser-Agent: servebench/{}\r\n",
        target.url.host_header(),
        env!("CARGO_PKG_VERSION"),
    );
    super::apis::write_auth_headers(target, &mut head);
    for (k, v) in &target.headers {
        let _ = write!(head, "{k}: {v}\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// A fresh handshake key (16 random bytes, base64).
pub fn new_key() -> String {
    use base64::Engine;
    use rand::RngExt;
    let bytes: [u8; 16] = rand::rng().random();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Frame opcodes.
const CONTINUATION: u8 = 0x0;
const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;

/// One frame, `fin` set; masked with `mask` when the sender is a client (RFC 6455 5.3).
pub fn frame(opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(0x80 | opcode);
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= u16::MAX as usize => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(m) => {
            out.extend_from_slice(&m);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ m[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}

/// A client's masked text frame carrying `payload`.
pub fn client_text_frame(payload: &[u8]) -> Vec<u8> {
    use rand::RngExt;
    frame(TEXT, payload, Some(rand::rng().random()))
}

/// What a decoded frame was.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete data message (text or binary), borrowed when it came in one frame.
    Message(&'a [u8]),
    Ping(&'a [u8]),
    Close,
    /// A frame that needs no action (pong, a fragment of a longer message).
    Other,
}

/// Why frames could not be decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("WebSocket frame with reserved bits set (an extension was not negotiated)")]
    Reserved,
    #[error("WebSocket message larger than {0} bytes (--max-line-bytes)")]
    TooLarge(usize),
    #[error("WebSocket continuation frame without a message to continue")]
    StrayContinuation,
}

/// Decodes server frames from a byte buffer; a message split over several frames is
/// gathered in a reused buffer.
#[derive(Debug)]
pub struct FrameDecoder {
    partial: Vec<u8>,
    in_message: bool,
    max: usize,
}

impl FrameDecoder {
    /// A decoder refusing messages longer than `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            partial: Vec::new(),
            in_message: false,
            max,
        }
    }

    /// Decodes the first frame of `buf`: `Ok(None)` when more bytes are needed, else the
    /// frame and the bytes it used.
    pub fn next<'a>(&'a mut self, buf: &'a [u8]) -> Result<Option<(Frame<'a>, usize)>, FrameError> {
        if buf.len() < 2 {
            return Ok(None);
        }
        let (b0, b1) = (buf[0], buf[1]);
        if b0 & 0x70 != 0 {
            return Err(FrameError::Reserved);
        }
        let (fin, opcode, masked) = (b0 & 0x80 != 0, b0 & 0x0F, b1 & 0x80 != 0);
        let (len, mut at) = match b1 & 0x7F {
            126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as u64, 4),
            127 if buf.len() >= 10 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&buf[2..10]);
                (u64::from_be_bytes(b), 10)
            }
            126 | 127 => return Ok(None),
            n => (n as u64, 2),
        };
        if len > self.max as u64 || self.partial.len() as u64 + len > self.max as u64 {
            return Err(FrameError::TooLarge(self.max));
        }
        let mask = if masked {
            if buf.len() < at + 4 {
                return Ok(None);
            }
            let m = [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
            at += 4;
            Some(m)
        } else {
            None
        };
        let end = at + len as usize;
        if buf.len() < end {
            return Ok(None);
        }
        let payload = &buf[at..end];
        // Servers do not mask; a masked frame is unmasked into the reused buffer.
        let frame = match opcode {
            TEXT | BINARY | CONTINUATION => {
                if opcode == CONTINUATION && !self.in_message {
                    return Err(FrameError::StrayContinuation);
                }
                if opcode != CONTINUATION {
                    self.partial.clear();
                }
                if fin && opcode != CONTINUATION && mask.is_none() {
                    self.in_message = false;
                    Frame::Message(payload)
                } else {
                    match mask {
                        Some(m) => self
                            .partial
                            .extend(payload.iter().enumerate().map(|(i, b)| b ^ m[i % 4])),
                        None => self.partial.extend_from_slice(payload),
                    }
                    self.in_message = !fin;
                    if fin {
                        Frame::Message(&self.partial)
                    } else {
                        Frame::Other
                    }
                }
            }
            PING => Frame::Ping(payload),
            CLOSE => Frame::Close,
            PONG => Frame::Other,
            _ => Frame::Other,
        };
        Ok(Some((frame, end)))
    }
}

/// Runs one WebSocket exchange: connect, handshake, send the message, read messages until
/// the end marker, a close or the end of the connection. Failures become the record's
/// outcome, as for HTTP ([`super::exchange::execute`]).
pub async fn execute(
    ex: &mut Exchange,
    pool: &Pool,
    clock: &RunClock,
    req: &PreparedRequest,
    url_for_errors: &str,
    limits: &ExchangeLimits,
) {
    if ex.draft.record.queued_at == 0 {
        ex.draft.record.queued_at = clock.now();
    }
    let Some(mut conn) = open_upgraded(ex, pool, clock, req, url_for_errors).await else {
        return;
    };
    let sent = clock.now();
    ex.draft.record.sent_at = Some(sent);
    ex.draft.record.connect_ns = sent - ex.draft.record.queued_at;
    if let Err(e) = conn.write_more(&req.ws_frame).await {
        return fail(
            ex,
            clock,
            FailureKind::StreamCut,
            format!("sending the message failed: {e}"),
        );
    }
    let mut decoder = FrameDecoder::new(limits.max_line_bytes);
    let first_token_deadline = limits.first_token.map(|d| clock.instant_at(sent) + d);
    let first_byte_deadline = limits.first_byte.map(|d| clock.instant_at(sent) + d);
    let mut at = clock.offset_of(conn.last_read());
    let mut total: u64 = 0;
    loop {
        // Every complete frame in the buffer, stamped with the read that completed it.
        if take_frames(ex, &mut conn, &mut decoder, at, &mut total, clock, limits).await {
            return;
        }
        let deadline = read_deadline(&ex.draft.record, first_byte_deadline, first_token_deadline);
        let read = match deadline {
            Some((d, why)) => match tokio::time::timeout_at(d.into(), conn.fill()).await {
                Ok(r) => r,
                Err(_) => return fail(ex, clock, FailureKind::Timeout, why.into()),
            },
            None => conn.fill().await,
        };
        match read {
            Ok(0) => return end_without_marker(ex, clock, "the connection closed"),
            Ok(_) => at = clock.offset_of(conn.last_read()),
            Err(e) => {
                return fail(
                    ex,
                    clock,
                    FailureKind::StreamCut,
                    format!("read failed mid-stream: {e}"),
                )
            }
        }
    }
}

/// Ends the exchange as failed now.
fn fail(ex: &mut Exchange, clock: &RunClock, kind: FailureKind, detail: String) {
    ex.draft.record.finished_at = clock.now();
    ex.draft.record.outcome = Outcome::failed(kind, detail);
}

/// Opens a connection and upgrades it to a WebSocket. The handshake is connection set-up:
/// it counts in connect_ns, never in TTFT. `None` when that failed (the record then says
/// why).
async fn open_upgraded(
    ex: &mut Exchange,
    pool: &Pool,
    clock: &RunClock,
    req: &PreparedRequest,
    url_for_errors: &str,
) -> Option<Conn> {
    let mut conn = match pool.open().await {
        Ok(c) => c,
        Err(e) => {
            let now = clock.now();
            ex.draft.record.connect_ns = now - ex.draft.record.queued_at;
            fail(
                ex,
                clock,
                FailureKind::Connect,
                connect_advice(&e, url_for_errors),
            );
            return None;
        }
    };
    let key = new_key();
    let mut upgrade = req.http_bytes.clone();
    // The prepared request carries the handshake with a placeholder key; each connection
    // gets its own (RFC 6455 4.1: a fresh random key per handshake).
    if let Some(i) = find(&upgrade, KEY_PLACEHOLDER.as_bytes()) {
        upgrade.splice(i..i + KEY_PLACEHOLDER.len(), key.bytes());
    }
    let head = match conn.write_request(&upgrade).await {
        Ok(()) => conn.read_head().await,
        Err(e) => Err(HttpError::Io(e)),
    };
    let head = match head {
        Ok((h, _)) => h,
        Err(e) => {
            let now = clock.now();
            ex.draft.record.connect_ns = now - ex.draft.record.queued_at;
            fail(
                ex,
                clock,
                FailureKind::Connect,
                format!("WebSocket handshake with {url_for_errors} failed: {e}"),
            );
            return None;
        }
    };
    ex.draft.record.http_status = Some(head.status);
    if head.status != 101 {
        let body = String::from_utf8_lossy(conn.buffered()).trim().to_owned();
        fail(
            ex,
            clock,
            FailureKind::HttpStatus,
            format!(
                "HTTP {} instead of a WebSocket upgrade (101){}",
                head.status,
                if body.is_empty() {
                    String::new()
                } else {
                    format!(": {}", &body[..body.len().min(4096)])
                }
            ),
        );
        return None;
    }
    Some(conn)
}

/// Handles every complete frame in the connection's buffer, each stamped `at` (the read that
/// completed it): messages go to the exchange, pings are answered. `true` once the exchange
/// ended (the record then says how).
async fn take_frames(
    ex: &mut Exchange,
    conn: &mut Conn,
    decoder: &mut FrameDecoder,
    at: Nanos,
    total: &mut u64,
    clock: &RunClock,
    limits: &ExchangeLimits,
) -> bool {
    loop {
        let step = match decoder.next(conn.buffered()) {
            Ok(s) => s,
            Err(e) => {
                fail(ex, clock, FailureKind::Protocol, e.to_string());
                return true;
            }
        };
        let Some((fr, used)) = step else {
            return false;
        };
        let mut pong = None;
        let verdict = match fr {
            Frame::Message(m) => {
                if ex.draft.record.first_byte_at.is_none() {
                    ex.draft.record.first_byte_at = Some(at);
                }
                Some(ex.on_event(None, m, at))
            }
            Frame::Ping(p) => {
                pong = Some(frame_pong(p));
                None
            }
            Frame::Close => {
                conn.consume(used);
                end_without_marker(ex, clock, "the server closed the WebSocket");
                return true;
            }
            Frame::Other => None,
        };
        conn.consume(used);
        *total += used as u64;
        match verdict {
            Some(Ok(true)) => {
                ex.finish_stream(clock.now());
                // Best effort: say goodbye; the connection is not reused.
                let _ = conn
                    .write_more(&frame(CLOSE, &[], Some([1, 2, 3, 4])))
                    .await;
                return true;
            }
            Some(Err(o)) => {
                ex.draft.record.finished_at = clock.now();
                ex.draft.record.outcome = o;
                return true;
            }
            _ => {}
        }
        if let Some(p) = pong {
            let _ = conn.write_more(&p).await;
        }
        if *total > limits.max_response_bytes {
            fail(
                ex,
                clock,
                FailureKind::Protocol,
                format!(
                    "the response exceeded {} MiB (--max-response-bytes)",
                    limits.max_response_bytes >> 20
                ),
            );
            return true;
        }
    }
}

/// What the next read must wait within, and what passing it means: until the first message
/// the first-byte timeout, then until the first token the first-token timeout, then nothing.
fn read_deadline(
    r: &RequestRecord,
    first_byte_deadline: Option<Instant>,
    first_token_deadline: Option<Instant>,
) -> Option<(Instant, &'static str)> {
    let got_token = !r.chunks.is_empty() || !r.reasoning_chunks.is_empty();
    match (first_byte_deadline, first_token_deadline) {
        _ if got_token => None,
        (Some(b), _) if r.first_byte_at.is_none() => Some((
            b,
            "no message within the first-byte timeout (--first-byte-timeout)",
        )),
        (_, Some(t)) => Some((
            t,
            "no token within the first-token timeout (--first-token-timeout)",
        )),
        _ => None,
    }
}

/// The handshake placeholder the prepared request carries instead of a key.
pub const KEY_PLACEHOLDER: &str = "SERVEBENCH-WS-KEY-PLACEHOLDER====";

fn frame_pong(payload: &[u8]) -> Vec<u8> {
    use rand::RngExt;
    frame(PONG, payload, Some(rand::rng().random()))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The stream ended (close or EOF) before the end marker: complete if a finish reason was
/// seen, else cut.
fn end_without_marker(ex: &mut Exchange, clock: &RunClock, why: &str) {
    if ex.draft.record.finish_reason.is_some() {
        ex.finish_stream(clock.now());
    } else {
        ex.draft.record.finished_at = clock.now();
        ex.draft.record.outcome = Outcome::failed(
            FailureKind::StreamCut,
            format!(
                "{why} before the end message after {} content chunks",
                ex.draft.record.chunks.len()
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_key_matches_the_rfc_example() {
        // RFC 6455 section 1.3.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn frames_round_trip_in_every_length_form() {
        for len in [0usize, 5, 125, 126, 300, 70_000] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            // As a server sends it (unmasked): borrowed whole.
            let bytes = frame(TEXT, &payload, None);
            let mut d = FrameDecoder::new(1 << 20);
            let (f, used) = d.next(&bytes).unwrap().unwrap();
            assert_eq!((f, used), (Frame::Message(&payload), bytes.len()));
            // Masked (as a client sends it), and fed a byte short: more is needed.
            let bytes = frame(TEXT, &payload, Some([9, 8, 7, 6]));
            assert_eq!(d.next(&bytes[..bytes.len() - 1]).unwrap(), None);
            let (f, _) = d.next(&bytes).unwrap().unwrap();
            assert_eq!(f, Frame::Message(&payload));
        }
    }

    #[test]
    fn fragments_pings_close_and_errors() {
        let mut d = FrameDecoder::new(64);
        let mut first = frame(TEXT, b"hel", None);
        first[0] &= 0x7F; // not fin
        let (f, _) = d.next(&first).unwrap().unwrap();
        assert_eq!(f, Frame::Other);
        let cont = frame(CONTINUATION, b"lo", None);
        let (f, _) = d.next(&cont).unwrap().unwrap();
        assert_eq!(f, Frame::Message(b"hello"));
        let ping = frame(PING, b"p", None);
        let (f, _) = d.next(&ping).unwrap().unwrap();
        assert_eq!(f, Frame::Ping(b"p"));
        let close = frame(CLOSE, &[], None);
        let (f, _) = d.next(&close).unwrap().unwrap();
        assert_eq!(f, Frame::Close);
        assert_eq!(
            d.next(&frame(CONTINUATION, b"x", None)),
            Err(FrameError::StrayContinuation)
        );
        assert_eq!(
            d.next(&frame(TEXT, &[0; 65], None)),
            Err(FrameError::TooLarge(64))
        );
        assert_eq!(d.next(&[0xF1, 0]), Err(FrameError::Reserved));
        assert_eq!(d.next(&[0x81]), Ok(None));
    }
}
