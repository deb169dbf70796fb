//! Keep-alive connection pool for one server.
//!
//! Connections are opened on demand and returned after a fully read response, so the pool
//! grows to the peak number of requests in flight: sized to the load by construction. The
//! time a request waits here (including TCP and TLS set-up) is recorded apart from TTFT.

use super::http::{Conn, Connector, HttpError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Idle connections to one server.
pub struct Pool {
    connector: Connector,
    idle: Mutex<Vec<Conn>>,
    opened: AtomicU64,
    /// `--endpoint grpc`: the one HTTP/2 channel every request shares (made on first use).
    grpc: std::sync::OnceLock<Result<tonic::transport::Channel, String>>,
}

impl Pool {
    pub fn new(connector: Connector) -> Self {
        Self {
            connector,
            idle: Mutex::new(Vec::new()),
            opened: AtomicU64::new(0),
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

    /// An idle connection, or a new one. The flag says whether it was reused.
    pub async fn acquire(&self) -> Result<(Conn, bool), HttpError> {
        loop {
            let Some(c) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() else {
                break;
            };
            // Servers close idle keep-alive connections (llama.cpp after each stream): skip
            // those rather than paying a failed write and read before retrying.
            if !c.closed_by_peer() {
                return Ok((c, true));
            }
        }
        Ok((self.open().await?, false))
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
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(conn);
    }

    /// Opens `n` connections ahead of time so the first requests do not pay set-up.
    pub async fn prewarm(&self, n: usize) -> Result<(), HttpError> {
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

    /// Connections opened so far.
    pub fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }
}
