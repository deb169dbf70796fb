//! Synthetic images and audio, drawn from a seeded stream and encoded in memory: PNG and
//! JPEG images of random pixels, and WAV noise.
//!
//! Random pixels, as vLLM's `random-mm` dataset sends: every image is new to the server
//! (no multimodal cache hit) and its size is the worst case for upload (noise does not
//! compress: PNG is stored as it is, about 3 bytes a pixel; JPEG at quality 90 about 1.9).
//! Photographs compress several times better; `--image-dir` sends real ones. Both encoders
//! are pure Rust without SIMD paths, so a seed gives the same bytes on every machine.

use super::{AudioSpec, ImageSpec, MediaFormat, MediaKind, MediaPart};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// One synthetic image of `spec`: its width and height drawn from `rng` (the workload's
/// structure), then its pixels from `content` (a run's own, as its prompts' words are).
pub fn image(spec: &ImageSpec, rng: &mut ChaCha8Rng, content: &mut ChaCha8Rng) -> MediaPart {
    let width = spec.width.sample(rng).max(1);
    let height = spec.height.sample(rng).max(1);
    let bytes = match spec.format {
        MediaFormat::Jpeg => jpeg(content, width, height, spec.jpeg_quality),
        _ => png(content, width, height),
    };
    MediaPart::from_bytes(MediaKind::Image, spec.format, bytes, "synthetic")
}

/// One synthetic clip of `spec`: its length drawn from `rng`, then its samples from
/// `content`, as [`image`].
pub fn audio(spec: &AudioSpec, rng: &mut ChaCha8Rng, content: &mut ChaCha8Rng) -> MediaPart {
    let duration_ms = spec.duration_ms.sample(rng).max(1);
    let bytes = wav(content, duration_ms, spec.sample_rate);
    MediaPart::from_bytes(MediaKind::Audio, MediaFormat::Wav, bytes, "synthetic")
}

/// Random RGB pixels, row by row.
fn pixels(rng: &mut ChaCha8Rng, width: u32, height: u32) -> Vec<u8> {
    let mut px = vec![0u8; width as usize * height as usize * 3];
    rng.fill_bytes(&mut px);
    px
}

/// A PNG (8-bit RGB, stored without compression: noise would not shrink).
pub fn png(rng: &mut ChaCha8Rng, width: u32, height: u32) -> Vec<u8> {
    let px = pixels(rng, width, height);
    let mut out = Vec::with_capacity(px.len() + px.len() / 64 + 1024);
    let mut enc = png::Encoder::new(&mut out, width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::NoCompression);
    let mut writer = enc.write_header().expect("writing to memory");
    writer
        .write_image_data(&px)
        .expect("pixels match the header");
    writer.finish().expect("writing to memory");
    out
}

/// A baseline JPEG (YCbCr 4:2:0) at `quality`. Sides above 65,535 are clamped (JPEG's limit).
pub fn jpeg(rng: &mut ChaCha8Rng, width: u32, height: u32, quality: u8) -> Vec<u8> {
    let (w, h) = (width.min(65_535) as u16, height.min(65_535) as u16);
    let px = pixels(rng, u32::from(w), u32::from(h));
    let mut out = Vec::with_capacity(px.len() / 2 + 1024);
    let enc = jpeg_encoder::Encoder::new(&mut out, quality.clamp(1, 100));
    enc.encode(&px, w, h, jpeg_encoder::ColorType::Rgb)
        .expect("pixels match the size");
    out
}

/// A WAV file: 16-bit mono PCM noise at a tenth of full scale, `duration_ms` long.
pub fn wav(rng: &mut ChaCha8Rng, duration_ms: u32, sample_rate: u32) -> Vec<u8> {
    let samples = (u64::from(duration_ms) * u64::from(sample_rate) / 1000) as u32;
    let data_len = samples * 2;
    let mut out = Vec::with_capacity(44 + data_len as usize);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&sample_rate.to_le_bytes());
    out.extend_from_slice(&(sample_rate * 2).to_le_bytes()); // bytes per second
    out.extend_from_slice(&2u16.to_le_bytes()); // block align
    out.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for _ in 0..samples {
        let s = (rng.next_u32() as i16) / 10;
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
}
