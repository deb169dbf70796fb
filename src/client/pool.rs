//! Keep-alive connection pool for one server.
//!
//! Connections are opened on demand and returned after a fully read response, so the pool
//! grows to the peak number of requests in flight: sized to the load by construction. The
//! time a request waits here (including TCP and TLS set-up) is recorded apart from TTFT.
//!
//! Real clients (the OpenAI SDKs, vLLM's benchmark) reuse connections, so the benchmark
//! does too: a connection opened per request would make every request pay TCP (and TLS)
//! set-up, and above about 470 requests per second (28,232 default ports ÷ 60 s of
//! TIME_WAIT) its TIME_WAIT sockets exhaust the client's ephemeral ports within a minute. `--new-connection-per-request` is the explicit
//! opposite, for measuring a server's connection handling.

use super::http::{Conn, Connector, HttpError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Idle connections to one server.
pub struct Pool {
    connector: Connector,
    idle: Mutex<Vec<Conn>>,
    opened: AtomicU64,
    /// Kept-alive connections (each had carried a whole exchange) found closed by the
    /// server when next used: llama.cpp closes every connection after a streamed answer
    /// although its head says `Keep-Alive` (its HTTP layer ends the stream as cancelled).
    closed_by_server: AtomicU64,
    /// `--new-connection-per-request`: never hand out or keep an idle connection.
    fresh_each_request: bool,
    /// `--endpoint grpc`: the one HTTP/2 channel every request shares (made on first use).
    grpc: std::sync::OnceLock<Result<tonic::transport::Channel, String>>,
}

/// A connection handed to a request, and where it came from.
pub struct Acquired {
    pub conn: Conn,
    /// It came from the idle list (so the server may have closed it meanwhile: a failure
    /// before any response byte is retried once on a fresh connection).
    pub from_idle: bool,
    /// It already carried a complete exchange: the request reuses a kept-alive connection.
    /// A connection opened ahead of time (`prewarm`) and never used is not a reuse.
    pub reused: bool,
    /// How long it lay idle since its last answer's bytes (a reused connection only).
    pub idle: Option<std::time::Duration>,
}

/// A kept-alive connection found closed this soon after its last answer was closed by the
/// server *after that answer* (llama.cpp: within milliseconds); found closed later, it may
/// have met the server's idle timeout (5 s for vLLM's and llama.cpp's HTTP layers), which a
/// report must not call closing every connection.
pub const CLOSED_AFTER_ANSWER: std::time::Duration = std::time::Duration::from_secs(1);

impl Pool {
    pub fn new(connector: Connector) -> Self {
        Self::with_reuse(connector, true)
    }

    /// A pool that keeps connections alive (`reuse`) or opens one per request.
    pub fn with_reuse(connector: Connector, reuse: bool) -> Self {
        Self {
            connector,
            idle: Mutex::new(Vec::new()),
            opened: AtomicU64::new(0),
            closed_by_server: AtomicU64::new(0),
            fresh_each_request: !reuse,
            grpc: std::sync::OnceLock::new(),
        }
    }

    /// The gRPC channel to the server (call from within the runtime that runs requests).
    pub fn grpc_channel(&self) -> Result<tonic::transport::Channel, String> {
        self.grpc
            .get_or_init(|| {
                self.opened.fetch_add(1, Ordering::Relaxed);
                super::grpc::channel(self.connector.url())
            })
            .clone()
    }

    /// An idle connection, or a new one.
    pub async fn acquire(&self) -> Result<Acquired, HttpError> {
        if !self.fresh_each_request {
            loop {
                let Some(c) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() else {
                    break;
                };
                // Servers close idle keep-alive connections (llama.cpp after each stream):
                // skip those rather than paying a failed write and read before retrying.
                let idle = c.last_read().elapsed();
                if !c.closed_by_peer() {
                    let reused = c.uses > 0;
                    return Ok(Acquired {
                        conn: c,
                        from_idle: true,
                        reused,
                        idle: reused.then_some(idle),
                    });
                }
                if c.uses > 0 && idle < CLOSED_AFTER_ANSWER {
                    self.note_closed_by_server();
                }
            }
        }
        Ok(Acquired {
            conn: self.open().await?,
            from_idle: false,
            reused: false,
            idle: None,
        })
    }

    /// A new connection, bypassing idle ones (used to retry after a stale keep-alive).
    pub async fn open(&self) -> Result<Conn, HttpError> {
        let c = self.connector.connect().await?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(c)
    }

    /// Returns a connection whose last response was read completely.
    pub fn release(&self, mut conn: Conn) {
        conn.uses += 1;
        if self.fresh_each_request {
            return; // dropped: closed by us
        }
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(conn);
    }

    /// Opens `n` connections ahead of time so the first requests do not pay set-up (none
    /// when every request opens its own).
    pub async fn prewarm(&self, n: usize) -> Result<(), HttpError> {
        if self.fresh_each_request {
            return Ok(());
        }
        let mut opened = Vec::with_capacity(n);
        for _ in 0..n {
            opened.push(self.open().await?);
        }
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(opened);
        Ok(())
    }

    /// Counts a kept-alive connection the server closed right after its answer (found
    /// closed within [`CLOSED_AFTER_ANSWER`] of it).
    pub fn note_closed_by_server(&self) {
        self.closed_by_server.fetch_add(1, Ordering::Relaxed);
    }

    /// Kept-alive connections found closed by the server so far.
    pub fn closed_by_server(&self) -> u64 {
        self.closed_by_server.load(Ordering::Relaxed)
    }

    /// Connections opened so far.
    pub fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Connections idle in the pool now.
    pub fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
