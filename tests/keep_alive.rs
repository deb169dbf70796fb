//! A server that closes every connection after its streamed answer, as llama.cpp's does:
//! its head says `Keep-Alive: timeout=5, max=100`, then its HTTP layer (cpp-httplib) takes
//! the stream's end as a cancellation and shuts the socket after the chunked terminator.
//! The client gives each connection back correctly; the report and the pre-flight check
//! must say that the server, not the client, kept connections from being reused.

use crate::common::{config, generator, run, temp_dir};
use servebench::runner::preflight::{check, Route};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};

/// The end of a llama.cpp chat stream with usage, in its own framing: each event a chunk,
/// then `0\r\n` and `\r\n` written apart.
fn llama_cpp_like_stream() -> Vec<Vec<u8>> {
    let events = [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
        "[DONE]",
    ];
    let mut writes = vec![b"HTTP/1.1 200 OK\r\nServer: llama.cpp\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n".to_vec()];
    for e in events {
        let data = format!("data: {e}\n\n");
        writes.push(format!("{:x}\r\n{data}\r\n", data.len()).into_bytes());
    }
    writes.push(b"0\r\n".to_vec());
    writes.push(b"\r\n".to_vec());
    writes
}

/// Reads one request (head and `Content-Length` body); `false` when the client closed.
fn read_request(reader: &mut BufReader<TcpStream>) -> bool {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).is_ok()
}

/// A server on port 0 answering every request with the stream above; with `close`, it
/// shuts each connection after one answer, else it serves the next request on it.
fn serve(close: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                while read_request(&mut reader) {
                    for w in llama_cpp_like_stream() {
                        if writer.write_all(&w).and_then(|_| writer.flush()).is_err() {
                            return;
                        }
                    }
                    if close {
                        let _ = writer.shutdown(Shutdown::Write);
                        return;
                    }
                }
            });
        }
    });
    url
}

/// What the pre-flight check says of the target of `cfg`: whether it closed the connection
/// after the test request's answer.
fn preflight_says_it_closes(cfg: &servebench::config::RunConfig) -> bool {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let route = Route::of(&cfg.target, "OPENAI_API_KEY", None);
    let limits = &cfg.exchange_limits;
    rt.block_on(check(
        &cfg.target,
        &cfg.request,
        limits,
        cfg.request_timeout,
        &route,
    ))
    .expect("the stream is usable")
    .expect("its speed is measured")
    .closes_connections
}

fn args() -> Vec<&'static str> {
    vec![
        "--concurrency",
        "2",
        "--requests",
        "12",
        "--warmup",
        "none",
        "--model",
        "m",
    ]
}

/// Against the closing server: no request reuses a connection, each closed connection is
/// counted, the pre-flight check says the server closes them and the report's client
/// line puts it on the server. Against the same bytes on a kept connection: reuse.
#[test]
fn a_server_that_closes_each_connection_is_named_not_the_client() {
    let closing = serve(true);
    let cfg = config(&closing, &args(), &temp_dir("keep-alive-closing"));
    assert!(preflight_says_it_closes(&cfg));
    let (out, summary) = run(&cfg);
    assert_eq!(summary.requests.completed, 12);
    let g = generator(&out);
    assert_eq!(g.connections.reused_requests, 0);
    assert!(g.connections.closed_by_server >= 6, "{:?}", g.connections);
    let line = servebench::report::terminal::client_line(&g);
    assert!(line.contains("the server closed each connection"), "{line}");

    let keeping = serve(false);
    let cfg = config(&keeping, &args(), &temp_dir("keep-alive-kept"));
    assert!(!preflight_says_it_closes(&cfg));
    let (out, _) = run(&cfg);
    let g = generator(&out);
    assert!(g.connections.reused_requests >= 8, "{:?}", g.connections);
    assert_eq!(g.connections.closed_by_server, 0);
    let line = servebench::report::terminal::client_line(&g);
    assert!(!line.contains("closed each connection"), "{line}");
}
