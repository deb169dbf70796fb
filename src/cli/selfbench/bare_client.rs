//! A bare reference client for `selfbench`: the cheapest streaming client the same runtime
//! and a well-kept HTTP library allow, so servebench's own CPU per chunk can be read as a
//! ratio against it, measured in the same run on the same machine.
//!
//! Each stream holds one kept-alive HTTP/1.1 connection (hyper) and sends its requests one
//! after another; each response body is read frame by frame and its SSE events are counted
//! (`data:` prefixes), nothing more: no timestamps, no JSON, no records. Whatever servebench
//! spends above this is the price of measuring.

use crate::runner::cpu::ThreadCpu;
use anyhow::{Context, Result};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What the bare client did.
#[derive(Debug, Clone, Copy)]
pub struct BareResult {
    /// SSE events received (every `data:` line, `[DONE]` included).
    pub events: u64,
    /// CPU seconds of the client's runtime threads.
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
}

/// What one bare run sends.
pub struct BareLoad<'a> {
    /// `host:port` of the server.
    pub addr: &'a str,
    /// Request path, e.g. `/v1/chat/completions`.
    pub path: &'a str,
    /// JSON request body.
    pub body: Vec<u8>,
    pub streams: u32,
    pub requests_per_stream: u32,
    /// Runtime worker threads.
    pub threads: usize,
}

/// Runs `load` on a runtime of its own and measures its CPU.
pub fn run(load: &BareLoad<'_>) -> Result<BareResult> {
    let cpu = ThreadCpu::default();
    let register = cpu.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(load.threads.max(1))
        .thread_name("bare-client")
        .on_thread_start(move || register.register_current())
        .enable_all()
        .build()?;
    let events = Arc::new(AtomicU64::new(0));
    let body = Bytes::from(load.body.clone());
    runtime.block_on(async {
        // Connections first, so set-up is outside the measured span, as servebench's are.
        let mut senders = Vec::with_capacity(load.streams as usize);
        for _ in 0..load.streams {
            let tcp = tokio::net::TcpStream::connect(load.addr)
                .await
                .with_context(|| format!("bare client: connecting to {}", load.addr))?;
            tcp.set_nodelay(true)?;
            let (sender, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await?;
            tokio::spawn(conn);
            senders.push(sender);
        }
        let cpu_before = cpu.cpu_seconds();
        let started = std::time::Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for mut sender in senders {
            let (events, body) = (events.clone(), body.clone());
            let (addr, path) = (load.addr.to_owned(), load.path.to_owned());
            let n = load.requests_per_stream;
            tasks.spawn(async move {
                for _ in 0..n {
                    let req = hyper::Request::post(path.as_str())
                        .header("host", addr.as_str())
                        .header("content-type", "application/json")
                        .header("accept", "text/event-stream")
                        .body(Full::new(body.clone()))?;
                    let mut resp = sender.send_request(req).await?.into_body();
                    while let Some(frame) = resp.frame().await {
                        if let Some(data) = frame?.data_ref() {
                            let n = memchr::memmem::find_iter(data, b"data:").count();
                            events.fetch_add(n as u64, Ordering::Relaxed);
                        }
                    }
                    sender.ready().await?;
                }
                anyhow::Ok(())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done??;
        }
        let wall_seconds = started.elapsed().as_secs_f64();
        Ok(BareResult {
            events: events.load(Ordering::Relaxed),
            cpu_seconds: cpu.cpu_seconds() - cpu_before,
            wall_seconds,
        })
    })
}
