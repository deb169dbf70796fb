//! What an encoded image or clip is, read from its first bytes: the format, an image's width
//! and height (PNG, JPEG, GIF, WebP headers), a WAV clip's length. The workload reads the
//! parts it sends with it (records and `workload export` carry the sizes), the simulator the
//! parts it receives (its prefill is charged per image tile).

use super::MediaFormat;

/// What the header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probed {
    pub format: MediaFormat,
    pub width: u32,
    pub height: u32,
    /// Audio length, ms (WAV only; 0 when not known).
    pub duration_ms: u32,
}

/// The format and size of `bytes`, or `None` when they are none of PNG, JPEG, GIF, WebP,
/// WAV or MP3.
pub fn probe(bytes: &[u8]) -> Option<Probed> {
    let image = |format, (width, height)| Probed {
        format,
        width,
        height,
        duration_ms: 0,
    };
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Some(image(
            MediaFormat::Png,
            (be32(bytes, 16)?, be32(bytes, 20)?),
        ));
    }
    if bytes.starts_with(&[0xFF, 0xD8]) {
        return Some(image(MediaFormat::Jpeg, jpeg_size(bytes).unwrap_or((0, 0))));
    }
    if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        let size = (u32::from(le16(bytes, 6)?), u32::from(le16(bytes, 8)?));
        return Some(image(MediaFormat::Gif, size));
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Some(image(MediaFormat::Webp, webp_size(bytes).unwrap_or((0, 0))));
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE" {
        return Some(Probed {
            format: MediaFormat::Wav,
            width: 0,
            height: 0,
            duration_ms: wav_duration_ms(bytes).unwrap_or(0),
        });
    }
    let mp3 = bytes.starts_with(b"ID3")
        || (bytes.len() > 1 && bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0);
    mp3.then_some(Probed {
        format: MediaFormat::Mp3,
        width: 0,
        height: 0,
        duration_ms: 0,
    })
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A JPEG's size from its start-of-frame segment (any SOF but DHT, JPG and DAC).
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    while i + 4 <= b.len() {
        if b[i] != 0xFF {
            return None;
        }
        let marker = b[i + 1];
        if marker == 0xFF {
            i += 1; // fill byte
            continue;
        }
        if matches!(marker, 0xD0..=0xD9 | 0x01) {
            i += 2; // no length
            continue;
        }
        let len = usize::from(be16(b, i + 2)?);
        if matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let h = be16(b, i + 5)?;
            let w = be16(b, i + 7)?;
            return Some((u32::from(w), u32::from(h)));
        }
        i += 2 + len;
    }
    None
}

/// A WebP's size from its first chunk (lossy `VP8 `, lossless `VP8L`, extended `VP8X`).
fn webp_size(b: &[u8]) -> Option<(u32, u32)> {
    let chunk = b.get(12..16)?;
    let u24 = |at: usize| -> Option<u32> {
        let s = b.get(at..at + 3)?;
        Some(u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16)
    };
    match chunk {
        b"VP8 " => Some((
            u32::from(le16(b, 26)? & 0x3FFF),
            u32::from(le16(b, 28)? & 0x3FFF),
        )),
        b"VP8L" => {
            let bits = le32(b, 21)?;
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => Some((u24(24)? + 1, u24(27)? + 1)),
        _ => None,
    }
}

/// A WAV clip's length: its `data` chunk's bytes over the `fmt ` chunk's bytes a second.
fn wav_duration_ms(b: &[u8]) -> Option<u32> {
    let mut i = 12;
    let mut byte_rate = None;
    while i + 8 <= b.len() {
        let id = &b[i..i + 4];
        let size = le32(b, i + 4)? as usize;
        if id == b"fmt " {
            byte_rate = le32(b, i + 16);
        } else if id == b"data" {
            // A streamed WAV may say 0 or 0xFFFFFFFF: take what is there.
            let len = if size == 0 || i + 8 + size > b.len() {
                b.len() - (i + 8)
            } else {
                size
            };
            let rate = u64::from(byte_rate.filter(|&r| r > 0)?);
            return Some((len as u64 * 1000 / rate) as u32);
        }
        i += 8 + size + (size & 1);
    }
    None
}
