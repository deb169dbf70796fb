//! Streams finished requests to `requests.jsonl` while the run goes on.
//!
//! A dedicated thread takes finished drafts off the hot path, settles them once (token
//! counts, then the per-request figures whose parameters are known before measuring), and
//! appends one JSON line each. Lines are handed to the file only whole, at least once a
//! second: a crash or `kill -9` at any moment leaves a file of complete lines, losing at
//! most the last second. The thread also keeps the records for the summary (or, past
//! `--exact-summary-limit`, streams them into it: [`super::kept`]) and the live counters
//! the progress line reads.

use super::kept::{Keeper, Kept};
use crate::clock::RunClock;
use crate::metrics::derive::{derive, DeriveParams};
use crate::metrics::SummaryParams;
use crate::record::settle::settle;
use crate::record::wire::WireRecord;
use crate::record::{Draft, Phase, RequestRecord};
use crate::tokenizer::SharedTokenizer;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Live counts of one phase, read by the progress line and warm-up logic.
#[derive(Debug, Default)]
pub struct LiveCounts {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    pub output_tokens: AtomicU64,
    /// Output chunks (answer and reasoning) of the settled requests: with `output_tokens`,
    /// the tokens per chunk the live token rate counts each arriving chunk as.
    pub output_chunks: AtomicU64,
}

/// Counters for each phase.
#[derive(Debug, Default)]
pub struct Counters {
    pub warmup: LiveCounts,
    pub profile: LiveCounts,
    pub measure: LiveCounts,
    /// Recent TTFT and ITL values and failures by kind, for the live view.
    pub live: std::sync::Mutex<crate::metrics::live::LiveWindow>,
}

impl Counters {
    /// Output tokens and chunks of every settled request, all phases together.
    pub fn settled_tokens_and_chunks(&self) -> (u64, u64) {
        [&self.warmup, &self.profile, &self.measure]
            .iter()
            .fold((0, 0), |(t, c), p| {
                (
                    t + p.output_tokens.load(Ordering::Relaxed),
                    c + p.output_chunks.load(Ordering::Relaxed),
                )
            })
    }

    pub fn of(&self, phase: Phase) -> &LiveCounts {
        match phase {
            Phase::Measure => &self.measure,
            Phase::Profile => &self.profile,
            Phase::Warmup | Phase::Probe => &self.warmup,
        }
    }
}

/// Flush whole lines once this many bytes are waiting.
const FLUSH_BYTES: usize = 256 * 1024;
/// …or at least this often.
const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// Handle to the writer thread.
pub struct RecordWriter {
    tx: Sender<Draft>,
    thread: JoinHandle<std::io::Result<Kept>>,
    pub counters: Arc<Counters>,
    /// Parameters of the per-request figures; set once, before the measured phase.
    pub derive_params: Arc<OnceLock<DeriveParams>>,
}

impl RecordWriter {
    /// Starts writing to `path` (created; the caller has checked it may be); keeps every
    /// record in memory up to `keep` of them (all when `None`), then streams them.
    pub fn start(
        path: &Path,
        keep: crate::store::kept::KeepLimits,
        clock: RunClock,
        tokenizer: SharedTokenizer,
        register_thread: impl FnOnce() + Send + 'static,
        failed: Arc<std::sync::atomic::AtomicBool>,
    ) -> std::io::Result<Self> {
        let file = File::create(path)?;
        let (tx, rx) = channel::<Draft>();
        let counters = Arc::new(Counters::default());
        let live = counters.clone();
        let derive_params: Arc<OnceLock<DeriveParams>> = Arc::new(OnceLock::new());
        let params = derive_params.clone();
        let thread = std::thread::Builder::new()
            .name("record-writer".into())
            .spawn(move || {
                register_thread();
                // A write that fails (a full disk) must stop the run: nothing more could be
                // recorded. The flag is the run's "stop sending"; the error is returned.
                let result = write_loop(rx, file, &live, &params, &tokenizer, clock, keep);
                if result.is_err() {
                    failed.store(true, Ordering::Release);
                }
                result
            })?;
        Ok(Self {
            tx,
            thread,
            counters,
            derive_params,
        })
    }
}

/// Settles and writes drafts until every sender is gone.
fn write_loop(
    rx: std::sync::mpsc::Receiver<Draft>,
    mut file: File,
    live: &Counters,
    params: &OnceLock<DeriveParams>,
    tokenizer: &SharedTokenizer,
    clock: RunClock,
    keep: crate::store::kept::KeepLimits,
) -> std::io::Result<Kept> {
    let mut pending: Vec<u8> = Vec::with_capacity(FLUSH_BYTES + 64 * 1024);
    let mut keeper = Keeper::new(keep);
    let mut last_flush = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_millis(250)) {
            Ok(draft) => {
                let mut rec = settle(draft, tokenizer.as_ref());
                if let Some(p) = params.get() {
                    rec.derived = Some(derive(&rec, p));
                    // Once: the SLO's clone cost more than the rest of a record's keeping.
                    if keeper.needs_params() {
                        keeper.judge_by(SummaryParams {
                            slo: p.slo.clone(),
                            ux: p.ux,
                            ..SummaryParams::default()
                        });
                    }
                }
                let c = live.of(rec.phase);
                if rec.outcome.is_ok() {
                    c.completed.fetch_add(1, Ordering::Relaxed);
                } else {
                    c.failed.fetch_add(1, Ordering::Relaxed);
                }
                c.output_tokens
                    .fetch_add(rec.output_tokens as u64, Ordering::Relaxed);
                c.output_chunks.fetch_add(
                    (rec.chunks.len() + rec.reasoning_chunks.len()) as u64,
                    Ordering::Relaxed,
                );
                feed_live(live, &rec, &clock);
                serde_json::to_writer(&mut pending, &WireRecord::from_record(&rec, &clock))?;
                pending.push(b'\n');
                keeper.add(rec);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if pending.len() >= FLUSH_BYTES
            || (!pending.is_empty() && last_flush.elapsed() >= FLUSH_EVERY)
        {
            file.write_all(&pending)?;
            pending.clear();
            last_flush = Instant::now();
        }
    }
    file.write_all(&pending)?;
    file.sync_data()?;
    Ok(keeper.finish())
}

/// Hands one settled record's TTFT, inter-token gaps or failure kind to the live view.
fn feed_live(live: &Counters, rec: &RequestRecord, clock: &RunClock) {
    use crate::metrics::request::{itl_samples, latencies, ItlOption};
    let at_s = clock.now() as f64 / 1e9;
    let ttft = latencies(rec).map(|l| l.0);
    let gaps = if rec.outcome.is_ok() {
        itl_samples(rec, ItlOption::A)
    } else {
        Vec::new()
    };
    let failure = rec.outcome.failure_kind().map(|k| k.as_str());
    if let Ok(mut w) = live.live.lock() {
        w.add(at_s, ttft, &gaps, failure);
    }
}

impl RecordWriter {
    /// A sender for finished drafts (cheap to clone, never blocks).
    pub fn sender(&self) -> Sender<Draft> {
        self.tx.clone()
    }

    /// Waits for everything sent to be written; returns what was kept (the records in
    /// completion order, or the streamed figures). Every sender must have been dropped first.
    pub fn finish(self) -> std::io::Result<Kept> {
        drop(self.tx);
        self.thread
            .join()
            .map_err(|_| std::io::Error::other("record writer thread panicked"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Chunk, RequestRecord};
    use std::sync::atomic::AtomicBool;

    /// A full disk is reported, not ignored, and it stops the run.
    #[test]
    fn a_full_disk_is_an_error_and_raises_the_stop_flag() {
        let full = Path::new("/dev/full");
        if !full.exists() {
            return; // Linux only: a device every write to fails with ENOSPC
        }
        let failed = Arc::new(AtomicBool::new(false));
        let w = RecordWriter::start(
            full,
            crate::store::kept::KeepLimits::default(),
            RunClock::start(),
            crate::tokenizer::reference(),
            || {},
            failed.clone(),
        )
        .unwrap();
        let tx = w.sender();
        // Enough lines to pass the flush threshold.
        for id in 0..4_000 {
            let d = Draft {
                record: RequestRecord {
                    id,
                    chunks: vec![
                        Chunk {
                            at: 1,
                            tokens: 1,
                            bytes: 3
                        };
                        20
                    ],
                    first_content: Some(0),
                    ..Default::default()
                },
                content_text: "abc".repeat(20),
                ..Default::default()
            };
            if tx.send(d).is_err() {
                break;
            }
        }
        drop(tx);
        let err = w.finish().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(28), "{err}");
        assert!(failed.load(Ordering::Acquire));
    }
}
