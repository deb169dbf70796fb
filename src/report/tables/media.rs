//! The table of a run's images and audio: what was sent, how long sending took and how much
//! of TTFT that was (present when a measured request carried images or audio).

use super::table;
use crate::metrics::media::MediaSummary;
use crate::metrics::RunSummary;
use crate::report::page::Table;
use crate::report::terminal::opt_ms;

/// Megabytes, for people (10^6 bytes).
pub fn megabytes(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

/// What a run's requests carried, in words: `80 images (12.58 MB), 0 audio clips in 40
/// requests`.
pub fn sent_line(m: &MediaSummary) -> String {
    let mut parts = vec![format!(
        "{} images ({})",
        m.images,
        megabytes(m.image_bytes)
    )];
    if m.audio > 0 {
        parts.push(format!(
            "{} audio clips ({})",
            m.audio,
            megabytes(m.audio_bytes)
        ));
    }
    format!("{} in {} requests", parts.join(", "), m.requests)
}

/// Where the requests' input tokens came from.
pub fn tokens_line(m: &MediaSummary) -> String {
    match m.input_tokens_text_only {
        0 => "input tokens from the server's usage (images and audio included)".into(),
        n => format!(
            "{} requests without usage: their input tokens count the text only (images and audio not counted)",
            n
        ),
    }
}

/// Upload, TTFT and TTFT after the upload of the requests with images or audio.
pub fn media(s: &RunSummary) -> Option<Table> {
    let m = s.media.as_ref()?;
    let mut t = table(&["Requests with images or audio", "P50", "P95", "P99"])
        .titled("Images and audio: the upload before TTFT");
    let kb = |d: Option<crate::stats::Distribution>, f: fn(&crate::stats::Distribution) -> f64| {
        d.map(|d| format!("{:.1} KB", f(&d) / 1e3))
            .unwrap_or_else(|| "-".into())
    };
    t.push([
        "Request body".to_string(),
        kb(m.body_bytes, |d| d.p50),
        kb(m.body_bytes, |d| d.p95),
        kb(m.body_bytes, |d| d.p99),
    ]);
    for (name, d) in [
        ("Upload (first → last byte written)", m.upload_ms),
        ("TTFT (from the last byte written)", m.ttft_ms),
        (
            "Upload and TTFT (from the first byte)",
            m.ttft_with_upload_ms,
        ),
    ] {
        t.push([
            name.to_string(),
            opt_ms(d, |d| d.p50),
            opt_ms(d, |d| d.p95),
            opt_ms(d, |d| d.p99),
        ]);
    }
    let share = m
        .upload_share_of_wait
        .map(|v| {
            let pct = v * 100.0;
            format!("; the upload is {pct:.1} % of their mean wait for the first token")
        })
        .unwrap_or_default();
    Some(
        t.note(&format!("{}{share}", sent_line(m)))
            .note(&format!("Tokens: {}", tokens_line(m))),
    )
}
