//! Images and audio over a run: how much was sent, how long sending took, and how much of
//! TTFT that was. TTFT counts from the first byte written (`sent_at`), so a request of
//! megabytes waits for its own upload before the server can start: the summary keeps the
//! upload (first byte written → last byte written) and TTFT after it side by side.
//!
//! Counted one record at a time ([`MediaTally`]), so the exact and the streamed summaries
//! share it; its distributions are exact up to [`EXACT_VALUES`] requests with media.

use crate::record::{InputTokenSource, Phase, RequestRecord};
use crate::stats::distribution::Distribution;
use crate::stats::sketch::Sketch;
use serde::{Deserialize, Serialize};

/// Values each distribution keeps exactly.
const EXACT_VALUES: usize = 65_536;

/// The images and audio of a run's measured requests (present when any carried some).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MediaSummary {
    /// Measured requests that carried images or audio.
    pub requests: u64,
    pub images: u64,
    /// Encoded bytes of the images (before base64).
    pub image_bytes: u64,
    pub audio: u64,
    /// Encoded bytes of the audio clips (before base64).
    pub audio_bytes: u64,
    /// Request body bytes of those requests (JSON, base64 media included).
    pub body_bytes: Option<Distribution>,
    /// Time to send the request, first byte written → last byte written, ms: part of TTFT
    /// (of the successful requests, as TTFT).
    pub upload_ms: Option<Distribution>,
    /// TTFT of those requests, from `sent_at` as everywhere, ms.
    pub ttft_ms: Option<Distribution>,
    /// TTFT counted from the last byte written instead, ms: the server's part of it.
    pub ttft_after_upload_ms: Option<Distribution>,
    /// Mean upload over mean TTFT, of the requests that had both: the share of TTFT spent
    /// sending.
    pub upload_share_of_ttft: Option<f64>,
    /// Requests whose `input_tokens` are the server's `usage.prompt_tokens`; the others
    /// (`input_tokens_text_only`) had no usage and count their text alone.
    pub input_tokens_from_usage: u64,
    pub input_tokens_text_only: u64,
}

/// [`MediaSummary`] one record at a time.
#[derive(Debug, Clone)]
pub struct MediaTally {
    requests: u64,
    images: u64,
    image_bytes: u64,
    audio: u64,
    audio_bytes: u64,
    body_bytes: Sketch,
    upload_ms: Sketch,
    ttft_ms: Sketch,
    ttft_after_ms: Sketch,
    /// Sums of upload and TTFT over the requests that had both.
    sums: (f64, f64),
    from_usage: u64,
    text_only: u64,
}

impl Default for MediaTally {
    fn default() -> Self {
        let s = || Sketch::new(EXACT_VALUES);
        Self {
            requests: 0,
            images: 0,
            image_bytes: 0,
            audio: 0,
            audio_bytes: 0,
            body_bytes: s(),
            upload_ms: s(),
            ttft_ms: s(),
            ttft_after_ms: s(),
            sums: (0.0, 0.0),
            from_usage: 0,
            text_only: 0,
        }
    }
}

impl MediaTally {
    /// The tally of the measured records among `records`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a RequestRecord>) -> Self {
        let mut t = Self::default();
        for r in records {
            t.add(r);
        }
        t
    }

    /// Counts one record (a measured one with images or audio; others are skipped).
    pub fn add(&mut self, r: &RequestRecord) {
        if r.phase != Phase::Measure || !r.media.any() {
            return;
        }
        self.requests += 1;
        self.images += u64::from(r.media.images);
        self.image_bytes += r.media.image_bytes;
        self.audio += u64::from(r.media.audio);
        self.audio_bytes += r.media.audio_bytes;
        if r.body_bytes > 0 {
            self.body_bytes.add(r.body_bytes as f64);
        }
        match r.input_tokens_source {
            InputTokenSource::ServerUsage => self.from_usage += 1,
            InputTokenSource::TextOnly => self.text_only += 1,
            InputTokenSource::Workload => {}
        }
        // The upload is summarised over the requests TTFT is (the successful ones), so the
        // report's upload, TTFT and TTFT-after-upload columns describe the same requests.
        let upload = r.upload_ms().filter(|_| r.outcome.is_ok());
        if let Some(u) = upload {
            self.upload_ms.add(u);
        }
        let ms = |a: u64, b: u64| (a as f64 - b as f64) / 1e6;
        let ttft = r.first_token_at().zip(r.sent_at).map(|(t, s)| ms(t, s));
        if let Some(t) = ttft.filter(|_| r.outcome.is_ok()) {
            self.ttft_ms.add(t);
            if let (Some(u), Some(done)) = (upload, r.body_sent_at) {
                let first = r.first_token_at().unwrap_or(done);
                self.ttft_after_ms.add(ms(first, done));
                self.sums.0 += u;
                self.sums.1 += t;
            }
        }
    }

    /// The summary, or `None` when no measured request carried images or audio.
    pub fn finish(&self) -> Option<MediaSummary> {
        (self.requests > 0).then(|| MediaSummary {
            requests: self.requests,
            images: self.images,
            image_bytes: self.image_bytes,
            audio: self.audio,
            audio_bytes: self.audio_bytes,
            body_bytes: self.body_bytes.distribution(),
            upload_ms: self.upload_ms.distribution(),
            ttft_ms: self.ttft_ms.distribution(),
            ttft_after_upload_ms: self.ttft_after_ms.distribution(),
            upload_share_of_ttft: (self.sums.1 > 0.0).then(|| self.sums.0 / self.sums.1),
            input_tokens_from_usage: self.from_usage,
            input_tokens_text_only: self.text_only,
        })
    }
}
