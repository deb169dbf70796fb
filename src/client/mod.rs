//! The measuring client: one streaming request, from connection to last byte.
//!
//! `rx_stream` reads sockets with the kernel's receive timestamps, `http` speaks HTTP/1.1,
//! `sse` splits the event stream, `apis` writes each API's requests and reads the JSON
//! inside its events (one parser per request), `exchange` runs one request
//! and fills its draft record, `pool` keeps connections alive, `simple` makes plain calls
//! outside the measured path; `target`, `base_url` and `options` are the client's own
//! configuration (which server and API, and what every request shares). Token counts are settled later, off the hot path
//! (`record::settle`).

pub mod apis;
pub mod base_url;
pub mod exchange;
pub mod grpc;
pub mod http;
pub mod network;
pub mod options;
pub mod pool;
pub mod rx_stream;
pub mod server_tokenizer;
pub mod simple;
pub mod sse;
pub mod target;
pub mod trace;
pub mod websocket;

pub use base_url::{BaseUrl, Secret, UrlError};
pub use exchange::{execute, Exchange, PreparedRequest};
pub use options::{ArrivalClock, RequestOptions, RetryPolicy};
pub use pool::Pool;
pub use target::{is_credential_header, Endpoint, Target, WebSocketOptions};

#[cfg(test)]
mod target_tests;
