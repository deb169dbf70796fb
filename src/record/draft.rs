//! A record while its response is still arriving: what the client captured, before token
//! counts are settled.
//!
//! The client only timestamps and copies; everything that needs a tokenizer or JSON trees is
//! left for [`super::settle`], which runs off the hot path on the writer thread.

use super::RequestRecord;

/// A record plus the raw material needed to settle it.
#[derive(Debug, Default)]
pub struct Draft {
    pub record: RequestRecord,
    /// Answer text, concatenated (for tokenizer-based counts).
    pub content_text: String,
    /// Reasoning text, concatenated.
    pub reasoning_text: String,
    /// Cumulative `completion_tokens` streamed with each content chunk, when the server
    /// streams usage per chunk (vLLM `continuous_usage_stats`).
    pub cumulative_usage: Vec<Option<u32>>,
    /// The latest `usage` object as the server sent it (Chat Completions), or its counts
    /// normalised to that shape (other APIs); parsed once when settling.
    pub usage_raw: String,
    /// A reused buffer the next usage is written into before it replaces `usage_raw`.
    pub usage_scratch: String,
    /// The response's `Content-Type`, as the server sent it.
    pub content_type: Option<String>,
    /// The first bytes (at most [`BODY_START_BYTES`]) of a 200 answer that was not declared
    /// an event stream: what an HTML page or a JSON document said, for the check before a
    /// run (`runner::preflight`). Empty for event streams.
    pub body_start: Vec<u8>,
}

/// Most bytes kept in [`Draft::body_start`].
pub const BODY_START_BYTES: usize = 512;

impl Draft {
    /// Moves the latest streamed `usage` into the record (called once, when settling).
    pub fn take_usage(&mut self) {
        if !self.usage_raw.is_empty() {
            self.record.usage = serde_json::from_str(&self.usage_raw).ok();
            self.usage_raw.clear();
        }
    }
}
