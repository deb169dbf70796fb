//! A forward HTTP proxy for tests of `HTTP_PROXY` / `HTTPS_PROXY` support.
//!
//! Why: a client that claims proxy support must really send its traffic through the proxy
//! (absolute-form requests for `http://`, `CONNECT` tunnels for `https://`), with credentials
//! when the proxy asks; this proxy counts what went through so a test can assert it. It only
//! connects to loopback addresses (the tests' own servers) and passes resets on: an upstream
//! RST reaches the client as an RST, a clean close as a clean close.

use super::{read_request, retryable, Listening, Runtime, IO_SLICE};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy counted.
#[derive(Default)]
struct Stats {
    connects: AtomicUsize,
    requests: AtomicUsize,
    rejected: AtomicUsize,
    log: Mutex<Vec<String>>,
    /// The expected `Proxy-Authorization` value, when credentials are required.
    auth: Option<String>,
}

/// A running proxy on `127.0.0.1` (random port), with its own threads.
///
/// One upstream connection per client connection: absolute-form requests are rewritten to
/// origin-form (dropping `Proxy-Authorization` and `Proxy-Connection`) and sent upstream,
/// and whatever upstream answers is relayed back as is. A request for another `host:port`
/// on the same client connection closes it.
pub struct Proxy {
    listening: Listening,
    stats: Arc<Stats>,
}

impl Proxy {
    /// A proxy that asks for no credentials.
    pub fn start() -> Proxy {
        Self::start_inner(None)
    }

    /// A proxy that answers 407 (with `Proxy-Authenticate: Basic`) to any request without
    /// `Proxy-Authorization: Basic base64(user:password)`.
    pub fn start_with_auth(user: &str, password: &str) -> Proxy {
        Self::start_inner(Some(format!(
            "Basic {}",
            base64(format!("{user}:{password}").as_bytes())
        )))
    }

    fn start_inner(auth: Option<String>) -> Proxy {
        let stats = Arc::new(Stats {
            auth,
            ..Stats::default()
        });
        let rt = Arc::new(Runtime::new());
        let (s, rt2) = (stats.clone(), rt.clone());
        let listening = Listening::start("proxy", rt, move |tcp| {
            let (s, rt3) = (s.clone(), rt2.clone());
            let id = rt2.track(&tcp);
            rt2.spawn("proxy-client", move || {
                client(&tcp, &s, &rt3);
                rt3.untrack(id);
            });
        });
        Proxy { listening, stats }
    }

    /// `http://127.0.0.1:PORT` (for `HTTP_PROXY` / `HTTPS_PROXY`).
    pub fn url(&self) -> String {
        format!("http://{}", self.listening.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.listening.addr
    }

    /// `CONNECT` tunnels opened.
    pub fn connects_seen(&self) -> usize {
        self.stats.connects.load(Ordering::SeqCst)
    }

    /// Absolute-form requests forwarded.
    pub fn requests_seen(&self) -> usize {
        self.stats.requests.load(Ordering::SeqCst)
    }

    /// Requests refused with 407 (missing or wrong credentials).
    pub fn rejected_seen(&self) -> usize {
        self.stats.rejected.load(Ordering::SeqCst)
    }

    /// `METHOD TARGET` of every request accepted (`CONNECT 127.0.0.1:4433`,
    /// `POST http://127.0.0.1:8080/v1/chat/completions`), in order.
    pub fn seen(&self) -> Vec<String> {
        self.stats.log.lock().unwrap().clone()
    }

    /// Closes the listener and every connection and joins every thread (as does drop).
    pub fn stop(self) {}
}

/// Serves one client connection.
fn client(tcp: &TcpStream, stats: &Stats, rt: &Arc<Runtime>) {
    let mut pending = Vec::new();
    let mut upstream: Option<(String, TcpStream, u64)> = None;
    let mut reader = tcp;
    while let Some(req) = read_request(&mut reader, &mut pending, rt, || {}) {
        if let Some(expected) = &stats.auth {
            if header(&req.head, "proxy-authorization").as_deref() != Some(expected.as_str()) {
                stats.rejected.fetch_add(1, Ordering::SeqCst);
                let no = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"hostile\"\r\nContent-Length: 0\r\n\r\n";
                if write_all(tcp, no.as_bytes(), rt).is_err() {
                    break;
                }
                continue;
            }
        }
        if req.method == "CONNECT" {
            let Some(up) = open(tcp, &req.target, rt) else {
                break;
            };
            stats.connects.fetch_add(1, Ordering::SeqCst);
            stats
                .log
                .lock()
                .unwrap()
                .push(format!("CONNECT {}", req.target));
            let established = b"HTTP/1.1 200 Connection Established\r\n\r\n";
            if write_all(tcp, established, rt).is_ok() && write_all(&up, &pending, rt).is_ok() {
                let up_id = rt.track(&up);
                spawn_relay(rt, clone(&up), clone(tcp));
                relay(&mut reader, &up, rt);
                rt.untrack(up_id);
            }
            return;
        }
        let Some((authority, path)) = req.target.strip_prefix("http://").map(split_target) else {
            let bad = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
            if write_all(tcp, bad.as_bytes(), rt).is_err() {
                break;
            }
            continue;
        };
        if upstream.as_ref().is_some_and(|(a, _, _)| *a != authority) {
            break;
        }
        if upstream.is_none() {
            let Some(up) = open(tcp, &authority, rt) else {
                break;
            };
            let id = rt.track(&up);
            spawn_relay(rt, clone(&up), clone(tcp));
            upstream = Some((authority.clone(), up, id));
        }
        stats.requests.fetch_add(1, Ordering::SeqCst);
        let line = format!("{} {}", req.method, req.target);
        stats.log.lock().unwrap().push(line);
        let (_, up, _) = upstream.as_ref().expect("an upstream");
        let mut bytes = rewrite_head(&req.head, &req.method, &path).into_bytes();
        bytes.extend_from_slice(&req.body);
        if write_all(up, &bytes, rt).is_err() {
            break;
        }
    }
    if let Some((_, up, id)) = upstream {
        let _ = up.shutdown(Shutdown::Write);
        rt.untrack(id);
    }
}

fn clone(tcp: &TcpStream) -> TcpStream {
    tcp.try_clone().expect("clone a socket")
}

/// Copies `from` to `to` on a thread of its own.
fn spawn_relay(rt: &Arc<Runtime>, from: TcpStream, to: TcpStream) {
    let owned = rt.clone();
    rt.spawn("proxy-relay", move || {
        let mut from = from;
        relay(&mut from, &to, &owned);
    });
}

/// Copies bytes from `from` to `to` until one side ends: end of stream becomes a half-close
/// of `to`; a reset or error becomes a reset of the other side (`SO_LINGER` 0, and a read
/// shutdown that wakes the thread reading it, whose close then sends the RST).
fn relay(from: &mut dyn ReadTcp, to: &TcpStream, rt: &Runtime) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                if write_all(to, &buf[..n], rt).is_err() {
                    reset(from.tcp());
                    return;
                }
            }
            Err(e) if retryable(&e) && !rt.stopping() => {}
            Err(_) => {
                reset(to);
                return;
            }
        }
    }
}

/// A readable socket (a `TcpStream` or a reference to one).
trait ReadTcp: Read {
    fn tcp(&self) -> &TcpStream;
}

impl ReadTcp for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl ReadTcp for &TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

fn reset(tcp: &TcpStream) {
    let _ = socket2::SockRef::from(tcp).set_linger(Some(Duration::ZERO));
    let _ = tcp.shutdown(Shutdown::Read);
}

/// Connects to a loopback `authority`; answers 403 or 502 to the client and returns `None`
/// when it cannot.
fn open(client: &TcpStream, authority: &str, rt: &Runtime) -> Option<TcpStream> {
    let addrs: Vec<SocketAddr> = authority
        .to_socket_addrs()
        .map(|a| a.collect())
        .unwrap_or_default();
    let answer = if addrs.is_empty() || addrs.iter().any(|a| !a.ip().is_loopback()) {
        "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"
    } else if let Ok(up) = TcpStream::connect(&addrs[..]) {
        let _ = up.set_nodelay(true);
        let _ = up.set_read_timeout(Some(IO_SLICE));
        let _ = up.set_write_timeout(Some(IO_SLICE));
        return Some(up);
    } else {
        "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"
    };
    let _ = write_all(client, answer.as_bytes(), rt);
    None
}

fn write_all(mut to: &TcpStream, mut bytes: &[u8], rt: &Runtime) -> io::Result<()> {
    while !bytes.is_empty() {
        match to.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if retryable(&e) && !rt.stopping() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `host:port/path?q` → (`host:port` with port 80 by default, `/path?q`).
fn split_target(rest: &str) -> (String, String) {
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    (authority, path.to_owned())
}

/// The head with an origin-form request line and without the proxy's own headers.
fn rewrite_head(head: &str, method: &str, path: &str) -> String {
    let mut lines = head.split("\r\n");
    let version = lines
        .next()
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or("HTTP/1.1");
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or("").trim();
        if !name.eq_ignore_ascii_case("proxy-authorization")
            && !name.eq_ignore_ascii_case("proxy-connection")
        {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("\r\n");
    out
}

/// The value of the first header `name` (lower case) in a head.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_owned())
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
