//! The measuring client: one streaming request, from connection to last byte.
//!
//! `http` speaks HTTP/1.1, `sse` splits the event stream, `openai` reads the JSON inside,
//! `exchange` runs one request and fills its record, `token_counts` settles how many tokens
//! each chunk carried once the response is complete.

pub mod exchange;
pub mod http;
pub mod openai;
pub mod pool;
pub mod simple;
pub mod sse;
pub mod token_counts;

pub use exchange::{execute, Exchange, PreparedRequest};
pub use pool::Pool;
