//! The measuring client: one streaming request, from connection to last byte.
//!
//! `rx_stream` reads sockets with the kernel's receive timestamps, `http` speaks HTTP/1.1,
//! `sse` splits the event stream, `openai` reads the JSON inside, `exchange` runs one request
//! and fills its draft record, `pool` keeps connections alive, `simple` makes plain calls
//! outside the measured path. Token counts are settled later, off the hot path
//! (`record::settle`).

pub mod exchange;
pub mod http;
pub mod network;
pub mod openai;
pub mod pool;
pub mod rx_stream;
pub mod simple;
pub mod sse;

pub use exchange::{execute, Exchange, PreparedRequest};
pub use pool::Pool;
