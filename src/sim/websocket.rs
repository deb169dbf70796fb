//! The simulator's WebSocket route (`GET /v1/ws` with `Upgrade: websocket`), for the
//! client's `--endpoint websocket` with its default message layout.
//!
//! After the handshake the client sends one text message (the request, as the default
//! template writes it: `model`, `messages`, `max_tokens`, `ignore_eos`); the answer is then
//! produced by the same engine, faults and truth as the HTTP routes, written as one text
//! message per event: `{"type":"delta","delta":...}` (or `"reasoning"`), and
//! `{"type":"done","finish_reason":...,"usage":{...}}` followed by a close frame.

use super::responder::{self, Responder};
use super::server::{websocket_writer, Request};
use super::wire::SimApi;
use crate::client::websocket::{accept_key, Frame, FrameDecoder};
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Serves one WebSocket session on `stream`: handshake, one request message, one answer.
/// `buf` holds bytes already read after the handshake request.
pub async fn serve(
    mut stream: TcpStream,
    mut buf: Vec<u8>,
    req: Request,
    responder: &Arc<Responder>,
) -> io::Result<()> {
    if req.path.split('?').next() != Some("/v1/ws") {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return Ok(());
    }
    let Some(key) = req.header("sec-websocket-key") else {
        let _ = stream
            .write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await;
        return Ok(());
    };
    let answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key)
    );
    stream.write_all(answer.as_bytes()).await?;
    // The request message (masked, as every client frame).
    let mut decoder = FrameDecoder::new(16 << 20);
    let mut tmp = [0u8; 16 * 1024];
    let (message, received) = loop {
        match decoder.next(&buf) {
            Ok(Some((Frame::Message(m), _))) => break (m.to_vec(), std::time::Instant::now()),
            Ok(Some((Frame::Close, _))) | Err(_) => return Ok(()),
            Ok(Some((_, used))) => {
                buf.drain(..used);
                continue;
            }
            Ok(None) => {}
        }
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let request = Request {
        received,
        method: "POST".into(),
        path: "/v1/ws".into(),
        headers: req.headers,
        body: message,
        keep_alive: false,
    };
    let mut w = websocket_writer(&mut stream);
    responder::completion(responder, &request, &mut w, SimApi::Websocket).await?;
    Ok(())
}
