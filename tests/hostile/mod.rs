//! A hostile OpenAI-compatible server for integration tests.
//!
//! Why it exists: a benchmark client is only trustworthy if it records the truth when the
//! server misbehaves: resets at every stage, stalls, half events, missing `[DONE]`, bad JSON,
//! UTF-8 split across reads, endless or dripping streams, odd framings. Real engines do all
//! of these under load, but never on demand; this server does each one exactly and
//! repeatably, over plain TCP or TLS (`tls`), directly or through a proxy (`proxy`).
//!
//! It uses blocking `std` sockets and one thread per connection. Every write and every pause
//! checks a stop flag (reads and writes time out every `IO_SLICE` to look at it), so `stop()`
//! (or drop) ends every connection promptly and joins every thread it started.

// Not every test binary uses every behaviour or accessor.
#![allow(dead_code)]

pub mod proxy;
mod respond;
mod runtime;
pub mod tls;

use respond::{misbehave, Out};
use runtime::{Listening, Runtime};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The text of one content event (`"delta":{"content":" tok"}`).
pub const TOKEN: &str = " tok";
/// Content events after the twist of an `after_events` behaviour, and in the fixed streams
/// (`StallBeforeFirstByte`, `StallAfterHead`, `NoDone`, `SlowDrip`, `ContentLengthBody`, …).
pub const FIXED_TOKENS: u32 = 4;
/// `usage.prompt_tokens` in every usage chunk (the server does not tokenize prompts).
pub const PROMPT_TOKENS: u32 = 8;
/// The exact text a correct client reassembles from `SplitUtf8`.
pub const SPLIT_TEXT: &str = "café 日本 🎉";
/// The pause between the separate TCP writes of `SplitUtf8`.
pub const SPLIT_PAUSE: Duration = Duration::from_millis(50);
/// The interval between the events of `Endless`.
pub const ENDLESS_GAP: Duration = Duration::from_millis(1);
/// The body of `GET /v1/models`.
pub const MODELS_BODY: &str = r#"{"object":"list","data":[{"id":"hostile","object":"model"}]}"#;

/// How often blocked reads, writes and pauses look at the stop flag.
const IO_SLICE: Duration = Duration::from_millis(50);
const MAX_HEAD: usize = 64 * 1024;

/// What the server does with a `POST` (after reading its head and `Content-Length` body).
///
/// Streams are chat-completion chunks with `id` `chatcmpl-hostile-N` (N: the POST's index
/// from 0): a role chunk (`"delta":{"role":"assistant"}`, not a token), content chunks of
/// [`TOKEN`], a finish chunk (`finish_reason` `"stop"`), a usage chunk (`choices: []`,
/// `prompt_tokens` [`PROMPT_TOKENS`], `completion_tokens` = content chunks sent), then
/// `data: [DONE]`. Each event is its own HTTP chunk and its own write (`TCP_NODELAY`).
/// "`after_events`" counts content events only; those streams carry `after_events +`
/// [`FIXED_TOKENS`] content events when complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// A correct stream of `tokens` content events, each after a pause of `gap` (the first
    /// one too). Client: success, `tokens` chunks, usage `completion_tokens == tokens`,
    /// `finish_reason` `stop`; the connection stays open for the next request.
    Normal { tokens: u32, gap: Duration },
    /// TCP reset (`SO_LINGER` 0, close) right after reading the request. Client: a failure
    /// with no status and no chunks. On a *reused* connection a client may retry once on a
    /// fresh one (the server counts that retry as another POST).
    ResetBeforeHeaders,
    /// Writes `HTTP/1.1 200 OK\r\nContent-Type: text/event-str`, then resets. Client: a
    /// failure with no status (the head never completed) and no chunks.
    ResetMidHeaders,
    /// Status 200, role chunk, `after_events` content events, then a reset. Client: status
    /// 200, a cut stream keeping exactly `after_events` chunks (on Linux the bytes that
    /// arrived before the RST stay readable, even by a client that reads late).
    ResetMidStream { after_events: u32 },
    /// As `ResetMidStream`, but first the HTTP chunk of the next content event with only
    /// the first half of its bytes (half a `data:` line). Client: `after_events` chunks, cut.
    ResetMidEvent { after_events: u32 },
    /// Role chunk, `after_events` content events, then a clean close (FIN; TLS sends
    /// `close_notify` first) without the terminating chunk. Client: `after_events` chunks,
    /// cut (a chunked body that never ended is not complete).
    CloseMidStream { after_events: u32 },
    /// A complete response with `Content-Length` (none, and no body, for 1xx, 204 and 304);
    /// the connection stays open. Client: an HTTP-status failure with this code whose
    /// detail keeps (the start of) the body. With 200 it is a non-streamed answer, as from
    /// a server that ignored `"stream": true`: no events, so a cut stream, never a success.
    Status {
        code: u16,
        content_type: Option<String>,
        body: Vec<u8>,
    },
    /// `code` (429 or 503) with `Retry-After: seconds` and a JSON error body. Client: an
    /// HTTP-status failure that reports the `Retry-After` value.
    RetryAfter { code: u16, seconds: u32 },
    /// Nothing for this long after the request, then a normal [`FIXED_TOKENS`] stream.
    /// Client: the wait shows in its time to first byte (or its timeout fires first).
    StallBeforeFirstByte(Duration),
    /// Status line and headers, then nothing for this long, then a normal [`FIXED_TOKENS`]
    /// stream. Client: first byte early, first token after the stall.
    StallAfterHead(Duration),
    /// `after_events` content events, silence for `stall`, then the rest of a normal stream.
    /// Client: success with `after_events + FIXED_TOKENS` chunks and one gap ≥ `stall`.
    StallMidStream { after_events: u32, stall: Duration },
    /// Role chunk, [`FIXED_TOKENS`] content events, then the terminating chunk: no finish
    /// reason, no usage, no `[DONE]`. Client: a cut stream keeping [`FIXED_TOKENS`] chunks.
    NoDone,
    /// A complete [`FIXED_TOKENS`] stream up to `data: [DONE]`, then 2 more content events
    /// (`" late"`) and the terminating chunk. Client: success with [`FIXED_TOKENS`] chunks;
    /// nothing after `[DONE]` is output.
    DoneThenMore,
    /// `after_events` content events, then `data: {"choices":[{"delta":{"content":" tok"}`
    /// (truncated JSON), then the rest of a normal stream. Client: a protocol failure that
    /// keeps the `after_events` chunks before it.
    MalformedJson { after_events: u32 },
    /// One content event, then one whose JSON string holds raw bytes `0xFF 0xFE` (not UTF-8),
    /// then one more and a normal ending. Client: no panic; JSON must be UTF-8, so a protocol
    /// failure keeping 1 chunk (a lenient client would instead show U+FFFD).
    InvalidUtf8,
    /// Content events `"café"`, `" 日本"`, `" 🎉"` whose UTF-8 characters are cut across HTTP
    /// chunks and, inside one chunk, across TCP writes, each write flushed and followed by
    /// [`SPLIT_PAUSE`]. Client: success, text exactly [`SPLIT_TEXT`], 3 chunks.
    SplitUtf8,
    /// Role chunk, then one `data:` line of `bytes` bytes (a content string of `x`) in 64 KiB
    /// HTTP chunks, never ended; then silence until the client leaves or `stop()`. Client:
    /// a bounded buffer and a failure (line too long, or its timeout), no chunk from it.
    HugeLine { bytes: u64 },
    /// Role chunk, then content events every [`ENDLESS_GAP`] forever, until the client
    /// leaves (or `stop()`). Client: stops by its own limit (timeout, duration, max tokens) and keeps what
    /// arrived.
    Endless,
    /// The whole response of a normal [`FIXED_TOKENS`] stream (head included) written one
    /// byte per write, at most this many a second (a pause follows every byte). Client:
    /// success with [`FIXED_TOKENS`] chunks, the head parsed across many reads.
    SlowDrip { bytes_per_sec: u32 },
    /// A normal [`FIXED_TOKENS`] stream as one `Content-Length` body (each event still its
    /// own write), connection kept open. Client: success with [`FIXED_TOKENS`] chunks.
    ContentLengthBody,
    /// `HTTP/1.0 200 OK`, no length, no chunking: a normal [`FIXED_TOKENS`] stream ended by
    /// closing the connection (FIN; TLS `close_notify` first). Client: success, 4 chunks.
    UntilClose,
}

impl Behaviour {
    /// `Status` with a JSON body (`Content-Type: application/json`).
    pub fn json(code: u16, body: &str) -> Behaviour {
        Self::status(code, Some("application/json"), body.as_bytes())
    }

    /// `Status` with an HTML body (`Content-Type: text/html`), as proxies and gateways send.
    pub fn html(code: u16, body: &str) -> Behaviour {
        Self::status(code, Some("text/html; charset=utf-8"), body.as_bytes())
    }

    /// `Status` with an empty body and no `Content-Type`.
    pub fn empty(code: u16) -> Behaviour {
        Self::status(code, None, b"")
    }

    fn status(code: u16, content_type: Option<&str>, body: &[u8]) -> Behaviour {
        Behaviour::Status {
            code,
            content_type: content_type.map(str::to_owned),
            body: body.to_vec(),
        }
    }
}

/// A request the server read (head complete and its `Content-Length` body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target as sent (origin-form `/v1/...`, or absolute-form via a proxy).
    pub target: String,
    /// The whole head, lossily decoded.
    pub head: String,
    /// The `Content-Length` bytes after the head.
    pub body: Vec<u8>,
}

/// A running hostile server on `127.0.0.1` (random port), with its own threads.
///
/// `GET /v1/models` always answers 200 with [`MODELS_BODY`]; other `GET`s 404; every `POST`
/// (any path) gets the behaviour. Connections are kept alive after complete responses.
pub struct Hostile {
    server: Server,
}

impl Hostile {
    /// Starts a server whose every `POST` gets `behaviour`.
    pub fn start(behaviour: Behaviour) -> Hostile {
        Self::start_script(vec![behaviour])
    }

    /// Starts a server whose `POST` number i (from 0, over all connections, in the order
    /// their heads were read) gets `script[i % script.len()]`.
    pub fn start_script(script: Vec<Behaviour>) -> Hostile {
        Hostile {
            server: Server::start(script, Arc::new(|tcp, _| Ok(Box::new(tcp)))),
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr())
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Requests of any method whose head was fully read.
    pub fn requests_seen(&self) -> usize {
        self.server.shared.requests.load(Ordering::SeqCst)
    }

    /// `POST`s whose head was fully read (the script index).
    pub fn posts_seen(&self) -> usize {
        self.server.shared.posts.load(Ordering::SeqCst)
    }

    /// Every request read so far, in order.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.server.shared.log.lock().unwrap().clone()
    }

    /// Connections still open on the server side (each has its own thread).
    pub fn connections_open(&self) -> usize {
        self.server.connections_open()
    }

    /// Closes the listener and every open connection and joins every thread; connects are
    /// refused after it returns. Dropping the server does the same.
    pub fn stop(self) {}
}

/// An accepted connection, plain or TLS.
trait Wire: Read + Write + Send {
    fn tcp(&self) -> &TcpStream;
    /// Ends the session cleanly before the socket closes (TLS: `close_notify`).
    fn close_notify(&mut self) {}
}

impl Wire for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

/// Turns an accepted socket into a `Wire` (the TLS handshake happens here).
type Upgrade = dyn Fn(TcpStream, &Runtime) -> io::Result<Box<dyn Wire>> + Send + Sync;

/// What the server knows across connections.
struct Shared {
    script: Vec<Behaviour>,
    requests: AtomicUsize,
    posts: AtomicUsize,
    log: Mutex<Vec<SeenRequest>>,
}

/// The hostile HTTP server, over whatever `Upgrade` makes of each connection.
struct Server {
    listening: Listening,
    shared: Arc<Shared>,
}

impl Server {
    fn start(script: Vec<Behaviour>, upgrade: Arc<Upgrade>) -> Server {
        assert!(!script.is_empty(), "a hostile script needs a behaviour");
        let shared = Arc::new(Shared {
            script,
            requests: AtomicUsize::new(0),
            posts: AtomicUsize::new(0),
            log: Mutex::default(),
        });
        let rt = Arc::new(Runtime::new());
        let (s, rt2) = (shared.clone(), rt.clone());
        let listening = Listening::start("hostile", rt, move |tcp| {
            let (s, up, rt3) = (s.clone(), upgrade.clone(), rt2.clone());
            let id = rt2.track(&tcp);
            rt2.spawn("hostile-conn", move || connection(tcp, id, &s, &rt3, &*up));
        });
        Server { listening, shared }
    }

    fn addr(&self) -> SocketAddr {
        self.listening.addr
    }

    fn connections_open(&self) -> usize {
        self.listening.rt.sockets.lock().unwrap().len()
    }
}

/// How a connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Ready for the next request on this connection.
    KeepAlive,
    /// Clean close (FIN).
    Close,
    /// TCP reset: `SO_LINGER` 0, then close.
    Reset,
    /// Silence until the client leaves or the server stops, then close.
    Hold,
}

fn connection(tcp: TcpStream, id: u64, shared: &Shared, rt: &Runtime, upgrade: &Upgrade) {
    let Ok(mut wire) = upgrade(tcp, rt) else {
        rt.untrack(id);
        return;
    };
    let mut out = Out { w: &mut *wire, rt };
    let mut ending = serve(&mut out, shared);
    if ending == Ending::Hold {
        let _ = out.pause(Duration::MAX);
        ending = Ending::Close;
    }
    // The tracked clone must go first: the socket only closes (FIN or RST) with its last fd.
    rt.untrack(id);
    if ending == Ending::Reset {
        let _ = socket2::SockRef::from(wire.tcp()).set_linger(Some(Duration::ZERO));
    } else {
        wire.close_notify();
    }
    drop(wire);
}

/// Answers requests on one connection until it ends.
fn serve(out: &mut Out, shared: &Shared) -> Ending {
    let mut pending = Vec::new();
    loop {
        let counter = || {
            shared.requests.fetch_add(1, Ordering::SeqCst);
        };
        let Some(req) = read_request(out.w, &mut pending, out.rt, counter) else {
            return Ending::Close;
        };
        let result = if req.method == "POST" {
            let n = shared.posts.fetch_add(1, Ordering::SeqCst);
            let behaviour = &shared.script[n % shared.script.len()];
            shared.log.lock().unwrap().push(req);
            misbehave(out, behaviour, &format!("chatcmpl-hostile-{n}"))
        } else {
            let found = req.method == "GET" && path_of(&req.target) == "/v1/models";
            shared.log.lock().unwrap().push(req);
            if found {
                out.response(200, Some("application/json"), &[], MODELS_BODY.as_bytes())
            } else {
                let body = br#"{"error":{"message":"hostile: not found"}}"#;
                out.response(404, Some("application/json"), &[], body)
            }
        };
        match result {
            Ok(Ending::KeepAlive) => continue,
            Ok(ending) => return ending,
            Err(_) => return Ending::Close,
        }
    }
}

/// The path of an origin-form or absolute-form target.
fn path_of(target: &str) -> &str {
    let rest = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("https://"));
    match rest {
        Some(r) => r.find('/').map_or("/", |i| &r[i..]),
        None => target,
    }
}

/// Reads one request (head and `Content-Length` body) into `pending`'s front, calling
/// `on_head` once its head is complete; `None` when the connection ends first.
fn read_request(
    r: &mut dyn Read,
    pending: &mut Vec<u8>,
    rt: &Runtime,
    mut on_head: impl FnMut(),
) -> Option<SeenRequest> {
    let mut buf = [0u8; 16 * 1024];
    // Once the head is complete: its length and the body's.
    let mut lengths = None;
    loop {
        if lengths.is_none() {
            if let Some(i) = find(pending, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&pending[..i + 4]);
                lengths = Some((i + 4, content_length(&head)));
                on_head();
            } else if pending.len() > MAX_HEAD {
                return None;
            }
        }
        if let Some((h, body_len)) = lengths {
            if pending.len() >= h + body_len {
                let head = String::from_utf8_lossy(&pending[..h]).into_owned();
                let body = pending[h..h + body_len].to_vec();
                pending.drain(..h + body_len);
                let mut words = head.split_whitespace();
                let method = words.next().unwrap_or("").to_owned();
                let target = words.next().unwrap_or("").to_owned();
                return Some(SeenRequest {
                    method,
                    target,
                    head,
                    body,
                });
            }
        }
        match r.read(&mut buf) {
            Ok(0) => return None,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
            Err(e) if retryable(&e) && !rt.stopping() => {}
            Err(_) => return None,
        }
    }
}

fn content_length(head: &str) -> usize {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn retryable(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

fn stopped() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "hostile server stopping")
}
