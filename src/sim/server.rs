//! The simulator's HTTP/1.1 server.
//!
//! Hand-written for the same reason as the client's: each stream's task writes its chunks
//! straight to its socket and timestamps the write, so the ground truth is the moment the
//! bytes left the server, with no channel or buffering layer in between. It serves keep-alive
//! connections with `Content-Length` request bodies and chunked streaming responses.

use super::config::SimConfig;
use super::responder::{self, Responder};
use super::truth::TruthLog;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A running simulator. Shuts down when dropped.
pub struct SimServer {
    addr: SocketAddr,
    grpc_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    truth: TruthLog,
    /// HTTP connections accepted so far (the truth behind the client's reuse figures).
    accepted: Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SimServer {
    /// Starts the simulator on its own runtime thread, bound to `127.0.0.1:port` (0 = any
    /// free port). Running on its own thread keeps its CPU apart from the client's.
    pub fn spawn(config: SimConfig, port: u16) -> io::Result<Self> {
        Self::spawn_on(config, SocketAddr::from(([127, 0, 0, 1], port)), 1)
    }

    /// Starts on any address with `threads` runtime threads.
    pub fn spawn_on(config: SimConfig, addr: SocketAddr, threads: usize) -> io::Result<Self> {
        let std_listener = std::net::TcpListener::bind(addr)?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        // gRPC (HTTP/2) has its own port, on the same address.
        let grpc_listener = std::net::TcpListener::bind(SocketAddr::new(addr.ip(), 0))?;
        grpc_listener.set_nonblocking(true)?;
        let grpc_addr = grpc_listener.local_addr()?;
        let (shutdown, mut rx) = watch::channel(false);
        let truth = TruthLog::new(1_000_000);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("sim")
            .enable_all()
            .build()?;
        // Built inside the runtime: the engine loop is a task on it.
        let responder = runtime.block_on(async { Arc::new(Responder::new(config, truth.clone())) });
        let accepted = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let accepted_count = accepted.clone();
        let thread = std::thread::Builder::new()
            .name("sim-main".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(_) => return,
                    };
                    if let Ok(l) = TcpListener::from_std(grpc_listener) {
                        tokio::spawn(super::grpc::serve(l, responder.clone(), rx.clone()));
                    }
                    loop {
                        tokio::select! {
                            accepted = listener.accept() => {
                                if let Ok((stream, _)) = accepted {
                                    accepted_count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    let _ = stream.set_nodelay(true);
                                    let r = responder.clone();
                                    let mut stop = rx.clone();
                                    tokio::spawn(async move {
                                        tokio::select! {
                                            _ = serve_connection(stream, r) => {}
                                            _ = stop.changed() => {}
                                        }
                                    });
                                }
                            }
                            _ = rx.changed() => break,
                        }
                    }
                });
                runtime.shutdown_background();
            })?;
        Ok(Self {
            addr,
            grpc_addr,
            shutdown,
            truth,
            accepted,
            thread: Some(thread),
        })
    }

    /// HTTP connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.accepted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` of the gRPC (KServe v2 / Triton) service.
    pub fn grpc_url(&self) -> String {
        format!("http://{}", self.grpc_addr)
    }

    /// Ground truth of the responses so far.
    pub fn truth(&self) -> &TruthLog {
        &self.truth
    }

    /// Stops the server and waits for its thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A parsed request.
pub struct Request {
    /// When the read that completed the request returned (before any parsing).
    pub received: std::time::Instant,
    pub method: String,
    pub path: String,
    /// Header names (lower-cased) and values.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

impl Request {
    /// The value of header `name` (lower-case), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Where a handler writes its response: an HTTP response, or on an upgraded WebSocket the
/// same calls become frames, or on a gRPC stream messages (each line of a streamed payload
/// one WebSocket message or one gRPC response).
pub struct ResponseWriter<'a> {
    sink: Sink<'a>,
    scratch: Vec<u8>,
}

/// Where the bytes go.
enum Sink<'a> {
    Http(&'a mut TcpStream),
    WebSocket(&'a mut TcpStream),
    Grpc(super::grpc::GrpcSink),
}

impl ResponseWriter<'_> {
    /// A complete response with a body.
    pub async fn full(
        &mut self,
        status: u16,
        content_type: &str,
        body: &[u8],
        extra_headers: &str,
    ) -> io::Result<()> {
        let stream = match &mut self.sink {
            Sink::Http(s) => s,
            Sink::WebSocket(s) => {
                // An answer that is not a stream (an error): one message, then close.
                let msg = serde_json::json!({"type": "error", "error": {"code": status, "message": String::from_utf8_lossy(body)}});
                self.scratch =
                    crate::client::websocket::frame(0x1, msg.to_string().as_bytes(), None);
                self.scratch
                    .extend(crate::client::websocket::frame(0x8, &[], None));
                return s.write_all(&self.scratch).await;
            }
            Sink::Grpc(g) => {
                return g
                    .error(&format!("HTTP {status}: {}", String::from_utf8_lossy(body)))
                    .await
            }
        };
        self.scratch.clear();
        self.scratch.extend_from_slice(
            format!(
                "HTTP/1.1 {status} {}\r\nDate: {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra_headers}\r\n",
                reason(status),
                date_now(),
                body.len()
            )
            .as_bytes(),
        );
        self.scratch.extend_from_slice(body);
        stream.write_all(&self.scratch).await
    }

    /// Starts a chunked event stream.
    pub async fn start_stream(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Http(s) => s
                .write_all(format!("HTTP/1.1 200 OK\r\nDate: {}\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n", date_now()).as_bytes())
                .await,
            // The handshake (or the call) already answered.
            Sink::WebSocket(_) | Sink::Grpc(_) => Ok(()),
        }
    }

    /// Writes one HTTP chunk carrying `payload` (one write syscall). An empty payload writes
    /// nothing: a zero-length chunk is the body's terminator, and a second one would be read
    /// as the start of the next response on a kept-alive connection.
    pub async fn chunk(&mut self, payload: &[u8]) -> io::Result<()> {
        use std::io::Write;
        if payload.is_empty() {
            return Ok(());
        }
        self.scratch.clear();
        let lines = payload.split(|&b| b == b'\n').filter(|l| !l.is_empty());
        match &mut self.sink {
            Sink::Http(s) => {
                let _ = write!(self.scratch, "{:x}\r\n", payload.len());
                self.scratch.extend_from_slice(payload);
                self.scratch.extend_from_slice(b"\r\n");
                s.write_all(&self.scratch).await
            }
            Sink::WebSocket(s) => {
                for line in lines {
                    self.scratch
                        .extend(crate::client::websocket::frame(0x1, line, None));
                }
                s.write_all(&self.scratch).await
            }
            Sink::Grpc(g) => {
                for line in lines {
                    g.line(line).await?;
                }
                Ok(())
            }
        }
    }

    /// Ends the chunked stream.
    pub async fn end_stream(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Http(s) => s.write_all(b"0\r\n\r\n").await,
            Sink::WebSocket(s) => {
                let close = crate::client::websocket::frame(0x8, &[], None);
                s.write_all(&close).await
            }
            Sink::Grpc(_) => Ok(()), // the call ends when the writer is dropped
        }
    }

    /// Closes the connection abruptly (fault injection: a cut stream).
    pub async fn cut(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Http(s) | Sink::WebSocket(s) => s.shutdown().await,
            Sink::Grpc(g) => g.abort().await,
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

async fn serve_connection(mut stream: TcpStream, responder: Arc<Responder>) -> io::Result<()> {
    let mut buf = Vec::with_capacity(16 * 1024);
    loop {
        let Some(req) = read_request(&mut stream, &mut buf).await? else {
            return Ok(());
        };
        if req.method == "GET"
            && req
                .header("upgrade")
                .is_some_and(|u| u.eq_ignore_ascii_case("websocket"))
        {
            return super::websocket::serve(stream, buf, req, &responder).await;
        }
        let keep_alive = req.keep_alive;
        let mut w = ResponseWriter {
            sink: Sink::Http(&mut stream),
            scratch: Vec::with_capacity(1024),
        };
        let keep = responder::handle(&responder, req, &mut w).await?;
        if !keep_alive || !keep {
            return Ok(());
        }
    }
}

/// A writer on an upgraded WebSocket connection.
pub fn websocket_writer(stream: &mut TcpStream) -> ResponseWriter<'_> {
    ResponseWriter {
        sink: Sink::WebSocket(stream),
        scratch: Vec::with_capacity(1024),
    }
}

/// A writer whose streamed lines become gRPC responses.
pub fn grpc_writer(sink: super::grpc::GrpcSink) -> ResponseWriter<'static> {
    ResponseWriter {
        sink: Sink::Grpc(sink),
        scratch: Vec::new(),
    }
}

/// Reads one request; `None` when the client closed the connection between requests.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Option<Request>> {
    let mut tmp = [0u8; 16 * 1024];
    let mut last_read = std::time::Instant::now();
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let mut content_length = 0usize;
                let mut keep_alive = req.version == Some(1);
                for h in req.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        content_length = std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                    } else if h.name.eq_ignore_ascii_case("connection") {
                        let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
                        keep_alive =
                            !v.contains("close") && (keep_alive || v.contains("keep-alive"));
                    }
                }
                let headers: Vec<(String, String)> = req
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_ascii_lowercase(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                let method = req.method.unwrap_or("").to_owned();
                let path = req.path.unwrap_or("").to_owned();
                while buf.len() < head_len + content_length {
                    let n = stream.read(&mut tmp).await?;
                    last_read = std::time::Instant::now();
                    if n == 0 {
                        return Ok(None);
                    }
                    buf.extend_from_slice(&tmp[..n]);
                }
                let body = buf[head_len..head_len + content_length].to_vec();
                buf.drain(..head_len + content_length);
                return Ok(Some(Request {
                    received: last_read,
                    method,
                    path,
                    headers,
                    body,
                    keep_alive,
                }));
            }
            Ok(httparse::Status::Partial) => {}
            Err(_) => {
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
                return Ok(None);
            }
        }
        if buf.len() > 1 << 20 {
            return Ok(None);
        }
        let n = stream.read(&mut tmp).await?;
        last_read = std::time::Instant::now();
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

/// The `Date` header value now (HTTP servers send one; scale-out's clock check reads it).
fn date_now() -> String {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    crate::scaleout::clock::http_date(s)
}
