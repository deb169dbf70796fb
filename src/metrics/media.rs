//! Images and audio over a run: how much was sent, and how long sending took beside TTFT.
//! TTFT counts from T_submit, the last byte written (the draft, Appendix B.1.1), so a
//! request of megabytes does not count its own upload as the server's latency; the upload
//! (first byte written → last byte written) is kept beside it, and so is the wait from the
//! first byte written, the two together (what a user sending the request waits).
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
    /// Time to send the request, first byte written → last byte written, ms: before TTFT
    /// starts (of the successful requests, as TTFT).
    pub upload_ms: Option<Distribution>,
    /// TTFT of those requests, from T_submit (the last byte written) as everywhere, ms.
    pub ttft_ms: Option<Distribution>,
    /// The first byte written → the first token, ms: the upload and TTFT together.
    pub ttft_with_upload_ms: Option<Distribution>,
    /// Mean upload over the mean of `ttft_with_upload_ms`, of the requests that had both:
    /// the share of the wait for the first token spent sending.
    pub upload_share_of_wait: Option<f64>,
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
    ttft_with_upload_ms: Sketch,
    /// Sums of upload and of upload plus TTFT over the requests that had both.
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
            ttft_with_upload_ms: s(),
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
        let first = r.first_token_at().filter(|_| r.outcome.is_ok());
        if let Some((first, submitted)) = first.zip(r.submitted_at()) {
            self.ttft_ms.add(ms(first, submitted));
            if let (Some(u), Some(sent)) = (upload, r.sent_at) {
                let wait = ms(first, sent);
                self.ttft_with_upload_ms.add(wait);
                self.sums.0 += u;
                self.sums.1 += wait;
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
            ttft_with_upload_ms: self.ttft_with_upload_ms.distribution(),
            upload_share_of_wait: (self.sums.1 > 0.0).then(|| self.sums.0 / self.sums.1),
            input_tokens_from_usage: self.from_usage,
            input_tokens_text_only: self.text_only,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upload_is_kept_beside_ttft_not_inside_it() {
        // First byte written at 100 ms, the last at 180 ms (an 80 ms upload), the first
        // token at 300 ms: TTFT 120 ms from the last byte, 200 ms from the first.
        let mut r = RequestRecord::completed_for_tests(0, 100, &[300, 320], 10);
        r.body_sent_at = Some(180 * 1_000_000);
        r.body_bytes = 1 << 20;
        r.media.images = 1;
        let m = MediaTally::of([&r]).finish().unwrap();
        let p50 = |d: Option<Distribution>| d.unwrap().p50;
        assert_eq!(p50(m.upload_ms), 80.0);
        assert_eq!(p50(m.ttft_ms), 120.0);
        assert_eq!(p50(m.ttft_with_upload_ms), 200.0);
        assert_eq!(m.upload_share_of_wait, Some(0.4));
    }
}
