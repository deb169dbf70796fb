//! What the simulator really did, so tests and benchmarks can check the client against it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Ground truth of one response.
#[derive(Debug, Clone, PartialEq)]
pub struct TruthRecord {
    /// The `id` sent in every chunk.
    pub response_id: String,
    /// When the request had been fully read.
    pub received: Instant,
    /// When each content chunk's bytes were handed to the socket, with its token count.
    pub chunk_writes: Vec<(Instant, u32)>,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
}

/// Shared log of truth records (bounded: past `capacity` records are dropped and counted).
#[derive(Debug, Clone, Default)]
pub struct TruthLog {
    inner: Arc<Mutex<TruthInner>>,
}

#[derive(Debug, Default)]
struct TruthInner {
    records: Vec<TruthRecord>,
    capacity: usize,
    dropped: u64,
}

impl TruthLog {
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(TruthInner {
                records: Vec::new(),
                capacity,
                dropped: 0,
            })),
        }
    }

    pub fn push(&self, r: TruthRecord) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if g.records.len() < g.capacity {
            g.records.push(r);
        } else {
            g.dropped += 1;
        }
    }

    /// Takes the records logged so far.
    pub fn take(&self) -> Vec<TruthRecord> {
        std::mem::take(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()).records)
    }
}
