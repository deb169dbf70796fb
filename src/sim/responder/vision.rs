//! The images and audio of a generation request, as the simulated model counts them: each
//! image's size read from its data URL's header (PNG, JPEG, GIF, WebP), cut into tiles of
//! the [`VisionModel`], each tile `tokens_per_tile` prompt tokens; each clip's length read
//! from its WAV header, `audio_tokens_per_s` tokens a second. The tokens join the prompt:
//! the engine prefills them at its cost per token, and `usage.prompt_tokens` counts them.
//!
//! Parts read: chat's `image_url` and `input_audio` (and vLLM's `audio_url`), the Responses
//! API's `input_image`, Anthropic's `image` blocks (base64 or URL sources). An image given
//! by URL is not fetched: it costs `unknown_image_tiles`.

use crate::sim::config::VisionModel;
use crate::workload::media::probe::probe;
use base64::Engine;
use serde_json::Value;

/// What a request's images and audio cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimMedia {
    pub images: u32,
    pub image_tiles: u32,
    pub audio: u32,
    /// Audio length in all, ms (what was known of it).
    pub audio_ms: u32,
    /// Prompt tokens of the images and clips together.
    pub tokens: u32,
    /// Stand-in token ids of those tokens, from each part's content: a part sent again hits
    /// the prefix cache like its text would.
    pub token_ids: Vec<u32>,
}

/// The media of `parts` (every content part of the request's messages) under `model`.
pub fn media_of(parts: &[&Value], model: &VisionModel) -> SimMedia {
    let mut out = SimMedia::default();
    for part in parts {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
        let (is_image, source) = match kind {
            "image_url" | "input_image" => (true, url_of(part.get("image_url"))),
            "image" => (true, anthropic_source(part.get("source"))),
            "input_audio" => (false, audio_data(part.get("input_audio"))),
            "audio_url" => (false, url_of(part.get("audio_url"))),
            _ => continue,
        };
        let Some(source) = source else { continue };
        let header = decoded_head(&source);
        let tokens = if is_image {
            let (w, h) = header.map_or((0, 0), |p| (p.width, p.height));
            let tiles = model.tiles(w, h);
            out.images += 1;
            out.image_tiles += tiles;
            tiles * model.tokens_per_tile
        } else {
            let ms = header.map_or(0, |p| p.duration_ms);
            out.audio += 1;
            out.audio_ms += ms;
            model.audio_tokens(ms)
        };
        let seed = crate::workload::fingerprint(source.as_bytes());
        out.token_ids.extend(
            (0..tokens).map(|i| (seed as u32) ^ (seed >> 32) as u32 ^ i.wrapping_mul(0x9E37_79B9)),
        );
        out.tokens += tokens;
    }
    out
}

/// A URL given as a string or as `{"url": ...}`.
fn url_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        other => other.get("url")?.as_str().map(str::to_owned),
    }
}

/// An Anthropic image source as a data URL (base64) or its URL.
fn anthropic_source(v: Option<&Value>) -> Option<String> {
    let v = v?;
    match v.get("type")?.as_str()? {
        "base64" => Some(format!(
            "data:{};base64,{}",
            v.get("media_type")?.as_str()?,
            v.get("data")?.as_str()?
        )),
        "url" => v.get("url")?.as_str().map(str::to_owned),
        _ => None,
    }
}

/// An `input_audio` part's base64 data as a data URL.
fn audio_data(v: Option<&Value>) -> Option<String> {
    let v = v?;
    let format = v.get("format").and_then(Value::as_str).unwrap_or("wav");
    Some(format!(
        "data:audio/{format};base64,{}",
        v.get("data")?.as_str()?
    ))
}

/// The header of a data URL's bytes (the first 64 KiB of base64 are enough for any image
/// header and a WAV's chunks); `None` for a plain URL or bytes of no known format. A WAV's
/// length needs its data chunk's size, which the header states.
fn decoded_head(source: &str) -> Option<crate::workload::media::probe::Probed> {
    let data = source.strip_prefix("data:")?;
    let (_, b64) = data.split_once(";base64,")?;
    let head = &b64[..b64.len().min(65_536) / 4 * 4];
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(head)
        .ok()?;
    let mut p = probe(&bytes)?;
    if p.format == crate::workload::media::MediaFormat::Wav && b64.len() > head.len() {
        // The probe saw only the start: its data chunk runs to the end of the whole clip.
        let whole = b64.trim_end_matches('=').len() * 3 / 4;
        p.duration_ms = wav_ms_of_whole(&bytes, whole).unwrap_or(p.duration_ms);
    }
    Some(p)
}

/// A WAV clip's length from its `fmt ` chunk's byte rate and its whole size, ms.
fn wav_ms_of_whole(head: &[u8], whole: usize) -> Option<u32> {
    let at = head.windows(4).position(|w| w == b"fmt ")?;
    let rate = u32::from_le_bytes(head.get(at + 16..at + 20)?.try_into().ok()?);
    let data = head.windows(4).position(|w| w == b"data")? + 8;
    (rate > 0).then(|| (whole.saturating_sub(data) as u64 * 1000 / u64::from(rate)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::media::encode;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use serde_json::json;

    fn data_url(mime: &str, bytes: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        format!("data:{mime};base64,{b64}")
    }

    #[test]
    fn tiles_by_hand() {
        let m = VisionModel::default(); // 512-px tiles, 256 tokens each, at most 12
        assert_eq!(m.tiles(512, 512), 1);
        assert_eq!(m.tiles(513, 512), 2);
        assert_eq!(m.tiles(1024, 768), 4); // 2 × 2
        assert_eq!(m.tiles(1920, 1080), 12); // 4 × 3
        assert_eq!(m.tiles(4000, 3000), 12); // 8 × 6 = 48, capped
        assert_eq!(m.tiles(0, 100), 1); // unknown size
        let uncapped = VisionModel {
            max_tiles: 0,
            ..m.clone()
        };
        assert_eq!(uncapped.tiles(4000, 3000), 48);
        assert_eq!(m.audio_tokens(2_000), 50); // 25 a second
        assert_eq!(m.audio_tokens(1_001), 26); // rounded up
        assert_eq!(m.audio_tokens(0), 125); // unknown: 5 s
    }

    #[test]
    fn every_api_form_is_read_and_charged() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let png = data_url("image/png", &encode::png(&mut rng, 1024, 768)); // 4 tiles
        let jpeg = encode::jpeg(&mut rng, 600, 100, 90); // 2 × 1 tiles
        let jpeg_b64 = base64::engine::general_purpose::STANDARD.encode(&jpeg);
        let wav = encode::wav(&mut rng, 2_000, 16_000); // 50 tokens
        let wav_b64 = base64::engine::general_purpose::STANDARD.encode(&wav);
        let parts = [
            json!({"type": "text", "text": "hello"}),
            json!({"type": "image_url", "image_url": {"url": png}}),
            json!({"type": "input_image", "image_url": data_url("image/jpeg", &jpeg)}),
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": jpeg_b64}}),
            json!({"type": "image", "source": {"type": "url", "url": "https://example.invalid/x.png"}}),
            json!({"type": "input_audio", "input_audio": {"data": wav_b64, "format": "wav"}}),
        ];
        let refs: Vec<&Value> = parts.iter().collect();
        let m = media_of(&refs, &VisionModel::default());
        // 4 + 2 + 2 + 1 (a URL: not fetched) tiles.
        assert_eq!((m.images, m.image_tiles), (4, 9));
        assert_eq!((m.audio, m.audio_ms), (1, 2_000));
        assert_eq!(m.tokens, 9 * 256 + 50);
        assert_eq!(m.token_ids.len() as u32, m.tokens);
        // The same image sent again makes the same stand-in tokens (a prefix-cache hit).
        let again = media_of(&refs[1..2], &VisionModel::default());
        assert_eq!(again.token_ids[..], m.token_ids[..1024]);
    }

    #[test]
    fn a_long_clip_is_timed_from_its_whole_length() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let wav = encode::wav(&mut rng, 30_000, 16_000); // 960 KB: past the decoded head
        let part = json!({"type": "input_audio", "input_audio": {"data": base64::engine::general_purpose::STANDARD.encode(&wav), "format": "wav"}});
        let m = media_of(&[&part], &VisionModel::default());
        assert_eq!(m.audio_ms, 30_000);
        assert_eq!(m.tokens, 750);
    }
}
