//! What the simulator really did, so tests and benchmarks can check the client against it.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The images and audio of a request as the simulated model counted them
/// (`SimConfig::vision`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MediaTruth {
    pub images: u32,
    /// Tiles of all its images.
    pub image_tiles: u32,
    pub audio: u32,
    /// Length of all its clips, ms.
    pub audio_ms: u32,
    /// Prompt tokens of the images and clips (within `prompt_tokens`).
    pub tokens: u32,
}

/// Ground truth of one response.
#[derive(Debug, Clone, PartialEq)]
pub struct TruthRecord {
    /// The `id` sent in every chunk.
    pub response_id: String,
    /// When the read that completed the request returned.
    pub received: Instant,
    /// When the engine first scheduled it (queue wait = scheduled − received).
    pub scheduled: Option<Instant>,
    /// When the engine generated tokens: (time, tokens).
    pub token_times: Vec<(Instant, u32)>,
    /// When each content chunk's bytes were handed to the socket, with its token count.
    pub chunk_writes: Vec<(Instant, u32)>,
    /// Prompt tokens, images' and audio's included.
    pub prompt_tokens: u32,
    /// Bytes of the request body received.
    pub body_bytes: u64,
    /// Images and audio in the request and what they cost.
    pub media: MediaTruth,
    /// Items of a non-generative request (embeddings inputs, rerank documents); 0 otherwise.
    pub items: u32,
    pub completion_tokens: u32,
    pub cached_tokens: u32,
    pub preemptions: u32,
    /// HTTP status sent (200 unless an error was injected or the prompt rejected).
    pub status: u16,
    /// The stream was cut on purpose.
    pub cut: bool,
    /// The stream ended with an injected error event.
    pub error_event: bool,
    /// The stand-in content filter refused the request part-way (`faults.refusal_rate`).
    pub refused: bool,
    /// Tool calls the answer made (0 or 1: one when the request asked for a call).
    pub tool_calls: u32,
    /// The request's W3C `traceparent` header, as a traced server would read it.
    pub traceparent: Option<String>,
}

impl Default for TruthRecord {
    fn default() -> Self {
        Self {
            response_id: String::new(),
            received: Instant::now(),
            scheduled: None,
            token_times: Vec::new(),
            chunk_writes: Vec::new(),
            prompt_tokens: 0,
            body_bytes: 0,
            media: MediaTruth::default(),
            items: 0,
            completion_tokens: 0,
            cached_tokens: 0,
            preemptions: 0,
            status: 200,
            cut: false,
            error_event: false,
            refused: false,
            tool_calls: 0,
            traceparent: None,
        }
    }
}

impl TruthRecord {
    /// Queue wait in ms, when it was scheduled.
    pub fn queue_wait_ms(&self) -> Option<f64> {
        Some(
            self.scheduled?
                .saturating_duration_since(self.received)
                .as_secs_f64()
                * 1e3,
        )
    }

    /// A JSON line (times in ms since receipt).
    pub fn to_json(&self) -> serde_json::Value {
        let ms = |t: Instant| t.saturating_duration_since(self.received).as_secs_f64() * 1e3;
        serde_json::json!({
            "response_id": self.response_id,
            "queue_wait_ms": self.queue_wait_ms(),
            "token_times_ms": self.token_times.iter().map(|&(t, n)| (ms(t), n)).collect::<Vec<_>>(),
            "chunk_writes_ms": self.chunk_writes.iter().map(|&(t, n)| (ms(t), n)).collect::<Vec<_>>(),
            "prompt_tokens": self.prompt_tokens,
            "body_bytes": self.body_bytes,
            "images": self.media.images,
            "image_tiles": self.media.image_tiles,
            "audio": self.media.audio,
            "audio_ms": self.media.audio_ms,
            "media_tokens": self.media.tokens,
            "items": self.items,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "preemptions": self.preemptions,
            "status": self.status,
            "cut": self.cut,
            "error_event": self.error_event,
            "refused": self.refused,
            "tool_calls": self.tool_calls,
            "traceparent": self.traceparent,
        })
    }
}

/// Shared log of truth records (bounded: past `capacity` records are dropped and counted),
/// optionally also written as JSON lines.
#[derive(Debug, Clone, Default)]
pub struct TruthLog {
    inner: Arc<Mutex<TruthInner>>,
    /// Signalled on every push, for `wait_for`.
    pushed: Arc<std::sync::Condvar>,
}

#[derive(Debug, Default)]
struct TruthInner {
    records: Vec<TruthRecord>,
    capacity: usize,
    dropped: u64,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl TruthLog {
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(TruthInner {
                capacity,
                ..Default::default()
            })),
            pushed: Arc::default(),
        }
    }

    /// Keeps at most `capacity` records in memory (0: none; records still go to the file of
    /// [`TruthLog::log_to`]). A server nobody reads the truth of in process (`servebench
    /// sim`, the built-in target of `run` and `test`) keeps none, so a long run does not grow
    /// by every token's time.
    pub fn keep_at_most(&self, capacity: usize) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.capacity = capacity;
        g.records.truncate(capacity);
    }

    /// Also writes every record as a JSON line to `path`.
    pub fn log_to(&self, path: &std::path::Path) -> std::io::Result<()> {
        let f = std::fs::File::create(path)?;
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).file =
            Some(std::io::BufWriter::new(f));
        Ok(())
    }

    pub fn push(&self, r: TruthRecord) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = g.file.as_mut() {
            let _ = writeln!(f, "{}", r.to_json());
            let _ = f.flush();
        }
        if g.records.len() < g.capacity {
            g.records.push(r);
        } else {
            g.dropped += 1;
        }
        drop(g);
        self.pushed.notify_all();
    }

    /// Takes the records once at least `n` are logged (a response's record is logged just
    /// after its last byte is written, so a client can finish reading first), or when
    /// `timeout` passes.
    pub fn wait_for(&self, n: usize, timeout: std::time::Duration) -> Vec<TruthRecord> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (mut g, _) = self
            .pushed
            .wait_timeout_while(guard, timeout, |g| g.records.len() < n)
            .unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut g.records)
    }

    /// Records logged and not yet taken.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .records
            .len()
    }

    /// Whether no record is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the records logged so far.
    pub fn take(&self) -> Vec<TruthRecord> {
        std::mem::take(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()).records)
    }
}

#[cfg(test)]
mod tests {
    use super::{TruthLog, TruthRecord};

    #[test]
    fn a_log_keeping_nothing_still_writes_its_file() {
        let log = TruthLog::new(1_000_000);
        log.push(TruthRecord::default());
        log.keep_at_most(0);
        assert!(log.is_empty(), "what was kept is let go");
        let path = std::env::temp_dir().join(format!("truth-{}.jsonl", std::process::id()));
        log.log_to(&path).unwrap();
        log.push(TruthRecord::default());
        log.push(TruthRecord::default());
        assert!(log.is_empty());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2);
        let _ = std::fs::remove_file(&path);
    }
}
