//! A minimal HTTP/1.1 client connection, written for the measuring hot path.
//!
//! Why not hyper: hyper's client reads the socket in a connection task and hands body frames
//! to the request through a channel, so each chunk pays a task hop before the benchmark can
//! timestamp it, and the arrival time drifts with scheduler load. Here the request's own task
//! reads the socket, takes the timestamp the moment `read` returns, and decodes chunked
//! transfer encoding in place, with no per-chunk allocation. Only what OpenAI-compatible
//! servers send is supported: responses with `Content-Length`, `Transfer-Encoding: chunked`,
//! or a body delimited by connection close; no 1xx, no pipelining, no redirects.
//!
//! `framing` reads what comes back: the response head, and the body whatever its framing.

mod framing;
#[cfg(test)]
mod tests;

use super::network::{client_config, Proxy, TlsOptions};
use super::rx_stream::RxStream;
use crate::client::{BaseUrl, Target};
pub use framing::{parse_head, BodyDecoder, BodyFraming, ResponseHead};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Errors on one connection.
#[derive(Debug, Error)]
pub enum HttpError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("connection closed before a response")]
    ClosedBeforeResponse,
    #[error("invalid HTTP response: {0}")]
    Invalid(String),
}

/// A TCP or TLS stream.
pub enum Stream {
    Plain(RxStream),
    Tls(Box<TlsStream<RxStream>>),
}

impl Stream {
    /// When the bytes of the latest read reached the socket, by the kernel's stamp.
    fn last_arrival(&self, read_returned: std::time::Instant) -> Option<std::time::Instant> {
        match self {
            Stream::Plain(s) => s.last_arrival(read_returned),
            Stream::Tls(s) => s.get_ref().0.last_arrival(read_returned),
        }
    }

    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf).await,
            Stream::Tls(s) => s.read(buf).await,
        }
    }

    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.write_all(buf).await,
            Stream::Tls(s) => {
                s.write_all(buf).await?;
                s.flush().await
            }
        }
    }
}

/// Opens connections to one server, directly or through a proxy.
#[derive(Clone)]
pub struct Connector {
    url: BaseUrl,
    tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    proxy: Option<Proxy>,
    /// Ask the kernel to timestamp received bytes (`SO_TIMESTAMPNS`).
    kernel_timestamps: bool,
    /// Reads that carried a kernel timestamp, and reads in all (for the run's clock report).
    pub stamps: Arc<ReadStamps>,
}

/// How many reads carried the kernel's receive timestamp, and how long the bytes of those
/// reads had waited in the socket before the client read them.
#[derive(Debug, Default)]
pub struct ReadStamps {
    pub kernel: AtomicU64,
    pub total: AtomicU64,
    /// Read return − kernel receive stamp, ns, per stamped read: the client's own reaction
    /// time, the estimate behind the error bound of chunks that shared a read (with
    /// `--arrival-clock read` no read is stamped and this stays empty).
    pub socket_wait: crate::stats::log_histogram::LogHistogram,
}

impl Connector {
    /// The server this connector reaches.
    pub fn url(&self) -> &BaseUrl {
        &self.url
    }

    /// A connector for a URL outside the measured path (metrics, GPUs): system roots, no
    /// proxy, read-return timestamps.
    pub fn new(url: &BaseUrl) -> Result<Self, HttpError> {
        Self::with_options(url, &TlsOptions::default(), None, false)
    }

    /// A connector for the target with its TLS options and proxy.
    pub fn for_target(target: &Target, kernel_timestamps: bool) -> Result<Self, HttpError> {
        Self::with_options(
            &target.url,
            &target.tls,
            target.proxy.clone(),
            kernel_timestamps,
        )
    }

    /// A connector; `kernel_timestamps` false uses the time each read returned.
    pub fn with_options(
        url: &BaseUrl,
        tls: &TlsOptions,
        proxy: Option<Proxy>,
        kernel_timestamps: bool,
    ) -> Result<Self, HttpError> {
        let tls = if url.tls {
            let config = client_config(tls).map_err(|e| HttpError::Invalid(e.to_string()))?;
            let name = rustls::pki_types::ServerName::try_from(url.socket_host().to_owned())
                .map_err(|e| HttpError::Invalid(format!("bad TLS server name: {e}")))?;
            Some((TlsConnector::from(Arc::new(config)), name))
        } else {
            None
        };
        Ok(Self {
            url: url.clone(),
            tls,
            proxy,
            kernel_timestamps,
            stamps: Arc::default(),
        })
    }

    /// Opens a new connection (TCP_NODELAY set; proxy tunnel and TLS handshake done).
    pub async fn connect(&self) -> Result<Conn, HttpError> {
        let (host, port) = match &self.proxy {
            Some(p) => (p.url.socket_host(), p.url.port),
            None => (self.url.socket_host(), self.url.port),
        };
        let tcp = TcpStream::connect((host, port)).await?;
        tcp.set_nodelay(true)?;
        let (mut rx, _) = RxStream::new(tcp, self.kernel_timestamps);
        if let Some(p) = self.proxy.as_ref().filter(|p| p.tunnel) {
            tunnel(&mut rx, &self.url, p).await?;
        }
        let stream = match &self.tls {
            None => Stream::Plain(rx),
            Some((connector, name)) => {
                Stream::Tls(Box::new(connector.connect(name.clone(), rx).await?))
            }
        };
        Ok(Conn::new(stream, self.stamps.clone()))
    }
}

/// Opens a CONNECT tunnel to `target` through the proxy on `stream`.
async fn tunnel(stream: &mut RxStream, target: &BaseUrl, proxy: &Proxy) -> Result<(), HttpError> {
    let authority = format!("{}:{}", target.host, target.port);
    let mut req = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(auth) = &proxy.auth {
        req.push_str(&format!("Proxy-Authorization: {}\r\n", auth.expose()));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).await?;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(HttpError::Invalid(format!(
                "the proxy {} closed the connection instead of opening a tunnel",
                proxy.url
            )));
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&buf) {
            Ok(httparse::Status::Complete(_)) => {
                let code = resp.code.unwrap_or(0);
                return if (200..300).contains(&code) {
                    Ok(())
                } else {
                    Err(HttpError::Io(io::Error::other(format!(
                        "the proxy {} refused to tunnel to {authority}: HTTP {code} {}",
                        proxy.url,
                        resp.reason.unwrap_or("")
                    ))))
                };
            }
            Ok(httparse::Status::Partial) if buf.len() < 16 * 1024 => {}
            _ => {
                return Err(HttpError::Invalid(format!(
                    "the proxy {} answered CONNECT with something that is not HTTP",
                    proxy.url
                )))
            }
        }
    }
}

const READ_SIZE: usize = 16 * 1024;
const MAX_HEAD: usize = 64 * 1024;

/// One open connection with its read buffer.
pub struct Conn {
    stream: Stream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// When the bytes of the last read arrived: the kernel's receive stamp where there is
    /// one, else the moment `read` returned (taken before any parsing).
    last_read: std::time::Instant,
    /// Requests completed on this connection.
    pub uses: u64,
    stamps: Arc<ReadStamps>,
}

impl Conn {
    fn new(stream: Stream, stamps: Arc<ReadStamps>) -> Self {
        Self {
            stream,
            buf: vec![0; READ_SIZE],
            start: 0,
            end: 0,
            last_read: std::time::Instant::now(),
            uses: 0,
            stamps,
        }
    }

    /// Whether the server has already closed this idle connection (plain TCP: a non-blocking
    /// read sees end of stream; TLS connections are assumed open and retried if stale).
    pub fn closed_by_peer(&self) -> bool {
        match &self.stream {
            Stream::Plain(s) => {
                let mut probe = [0u8; 1];
                !matches!(s.tcp().try_read(&mut probe), Err(ref e) if e.kind() == io::ErrorKind::WouldBlock)
            }
            Stream::Tls(_) => false,
        }
    }

    /// Writes a whole request (head and body in one buffer, one syscall when it fits).
    pub async fn write_request(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.start = 0;
        self.end = 0;
        self.stream.write_all(bytes).await
    }

    /// Writes more bytes on a connection already in use (a WebSocket's frames after its
    /// handshake), keeping what was read so far.
    pub async fn write_more(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Reads more bytes into the buffer; returns how many (0 at end of stream).
    pub async fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let len = self.buf.len();
                self.buf.resize(len * 2, 0);
            }
        }
        let n = self.stream.read(&mut self.buf[self.end..]).await?;
        let returned = std::time::Instant::now();
        self.stamps.total.fetch_add(1, Ordering::Relaxed);
        self.last_read = match self.stream.last_arrival(returned) {
            Some(arrived) if arrived <= returned => {
                self.stamps.kernel.fetch_add(1, Ordering::Relaxed);
                self.stamps
                    .socket_wait
                    .record((returned - arrived).as_nanos() as u64);
                arrived
            }
            _ => returned,
        };
        self.end += n;
        Ok(n)
    }

    /// When the last read returned.
    pub fn last_read(&self) -> std::time::Instant {
        self.last_read
    }

    /// Unconsumed bytes.
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks `n` buffered bytes as consumed.
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
    }

    /// Reads and parses the response head; returns it with the time of its first byte.
    pub async fn read_head(&mut self) -> Result<(ResponseHead, std::time::Instant), HttpError> {
        let mut first_byte = None;
        loop {
            if self.end > self.start {
                if let Some((head, len)) = parse_head(self.buffered())? {
                    self.consume(len);
                    return Ok((head, first_byte.unwrap_or(self.last_read)));
                }
                if self.end - self.start > MAX_HEAD {
                    return Err(HttpError::Invalid(
                        "response head larger than 64 KiB".into(),
                    ));
                }
            }
            let n = self.fill().await?;
            if n == 0 {
                return Err(HttpError::ClosedBeforeResponse);
            }
            first_byte.get_or_insert(self.last_read);
        }
    }
}
