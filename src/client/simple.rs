//! Plain request/response calls outside the measured path: readiness checks, model
//! discovery, `/tokenize`, `/metrics` scrapes.

use super::http::{BodyDecoder, Connector, HttpError};
use crate::client::{BaseUrl, Target};
use std::time::Duration;

/// A complete response.
#[derive(Debug, Clone)]
pub struct SimpleResponse {
    pub status: u16,
    pub body: Vec<u8>,
    /// The `Server` header.
    pub server: Option<String>,
    /// The `Date` header.
    pub date: Option<String>,
}

/// Sends one request with an optional JSON body to `path` (absolute, e.g. `/v1/models`).
pub async fn call(
    url: &BaseUrl,
    target: Option<&Target>,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    timeout: Duration,
) -> Result<SimpleResponse, HttpError> {
    tokio::time::timeout(timeout, async {
        // Calls about the target cross the same network set-up as its requests.
        let connector = match target.filter(|t| t.url == *url) {
            Some(t) => Connector::for_target(t, false)?,
            None => Connector::new(url)?,
        };
        let mut conn = connector.connect().await?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: servebench/{}\r\nConnection: close\r\n",
            url.host_header(),
            env!("CARGO_PKG_VERSION")
        );
        match target {
            // The target's own credentials, in its API's form (Bearer or x-api-key).
            Some(t) => super::apis::write_auth_headers(t, &mut head),
            None => {
                if let Some(auth) = url.basic_auth_header() {
                    head.push_str(&format!("Authorization: {auth}\r\n"));
                }
            }
        }
        if let Some(t) = target {
            for (k, v) in &t.headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        let body = body.unwrap_or(b"");
        if method != "GET" || !body.is_empty() {
            head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        conn.write_request(&bytes).await?;
        let (head, _) = conn.read_head().await?;
        let mut decoder = BodyDecoder::new(head.body);
        let mut out = Vec::new();
        loop {
            let consumed = decoder.decode(conn.buffered(), |b| out.extend_from_slice(b))?;
            conn.consume(consumed);
            if decoder.is_done() || out.len() > 64 << 20 {
                break;
            }
            if conn.fill().await? == 0 {
                break;
            }
        }
        Ok(SimpleResponse {
            status: head.status,
            body: out,
            server: head.server,
            date: head.date,
        })
    })
    .await
    .map_err(|_| HttpError::Io(std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out")))?
}
