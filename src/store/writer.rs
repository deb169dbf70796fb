//! Streams finished requests to `requests.jsonl` while the run goes on.
//!
//! A dedicated thread takes finished exchanges off the hot path, settles their token counts
//! (which may need the tokenizer), appends one JSON line each and flushes at least once a
//! second, so a crash loses at most the last second. It also keeps the records for the
//! summary and the live counters the progress line reads.

use super::super::client::token_counts::settle;
use crate::client::Exchange;
use crate::clock::RunClock;
use crate::engine::cpu::ThreadCpu;
use crate::record::wire::WireRecord;
use crate::record::{Phase, RequestRecord};
use crate::tokenizer::SharedTokenizer;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Live counts, per phase, read by the progress line and warm-up logic.
#[derive(Debug, Default)]
pub struct LiveCounts {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    pub output_tokens: AtomicU64,
}

/// Counters for each phase.
#[derive(Debug, Default)]
pub struct Counters {
    pub warmup: LiveCounts,
    pub measure: LiveCounts,
}

impl Counters {
    pub fn of(&self, phase: Phase) -> &LiveCounts {
        match phase {
            Phase::Measure => &self.measure,
            _ => &self.warmup,
        }
    }
}

/// Handle to the writer thread.
pub struct RecordWriter {
    tx: Sender<Exchange>,
    thread: JoinHandle<std::io::Result<Vec<RequestRecord>>>,
    pub counters: Arc<Counters>,
}

impl RecordWriter {
    /// Starts writing to `path` (created or truncated).
    pub fn start(
        path: &Path,
        clock: RunClock,
        tokenizer: SharedTokenizer,
        cpu: ThreadCpu,
    ) -> std::io::Result<Self> {
        let file = File::create(path)?;
        let (tx, rx) = channel::<Exchange>();
        let counters = Arc::new(Counters::default());
        let live = counters.clone();
        let thread = std::thread::Builder::new()
            .name("record-writer".into())
            .spawn(move || {
                cpu.register_current();
                let mut out = BufWriter::with_capacity(256 * 1024, file);
                let mut records = Vec::new();
                let mut last_flush = Instant::now();
                loop {
                    match rx.recv_timeout(Duration::from_millis(250)) {
                        Ok(mut ex) => {
                            settle(&mut ex, tokenizer.as_ref());
                            let rec = ex.record;
                            let c = live.of(rec.phase);
                            if rec.outcome.is_ok() {
                                c.completed.fetch_add(1, Ordering::Relaxed);
                            } else {
                                c.failed.fetch_add(1, Ordering::Relaxed);
                            }
                            let delivered: u64 = rec.chunks.iter().map(|c| c.tokens as u64).sum();
                            c.output_tokens.fetch_add(delivered, Ordering::Relaxed);
                            serde_json::to_writer(
                                &mut out,
                                &WireRecord::from_record(&rec, &clock),
                            )?;
                            out.write_all(b"\n")?;
                            records.push(rec);
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                    if last_flush.elapsed() >= Duration::from_millis(500) {
                        out.flush()?;
                        last_flush = Instant::now();
                    }
                }
                out.flush()?;
                Ok(records)
            })?;
        Ok(Self {
            tx,
            thread,
            counters,
        })
    }

    /// A sender for finished exchanges (cheap to clone, never blocks).
    pub fn sender(&self) -> Sender<Exchange> {
        self.tx.clone()
    }

    /// Waits for everything sent to be written; returns the records in completion order.
    /// Every sender must have been dropped first.
    pub fn finish(self) -> std::io::Result<Vec<RequestRecord>> {
        drop(self.tx);
        self.thread
            .join()
            .map_err(|_| std::io::Error::other("record writer thread panicked"))?
    }
}
