//! Images and audio in requests: what a workload attaches to its prompts, and how.
//!
//! A scenario's `images` and `audio` ([`ImageSpec`], [`AudioSpec`]) say how many parts a
//! request carries and what they are: synthetic images of drawn width × height (PNG or
//! JPEG), synthetic WAV noise of a drawn duration, or files cycled from a folder. A
//! dataset's records may name their own (`images`, `audio`: paths or URLs). Each request's
//! parts are [`MediaPart`]s in its [`RequestSpec`](super::RequestSpec); the API's body
//! builder writes them as content parts (`image_url`, `input_audio`, Anthropic `image`) of
//! the user message.
//!
//! Pure like the rest of the workload: synthetic bytes come from a ChaCha8 stream of the
//! seed and the request's index alone (`encode`), so the same seed sends the same bytes on
//! every machine, and adding images leaves the text of every prompt as it was. Files are
//! named here and read by the feeder, off the hot path; URLs are sent as they are.

pub mod encode;
pub mod probe;

use super::lengths::LengthDist;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// What a part is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    #[default]
    Image,
    Audio,
}

/// An encoding a part is sent in.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum MediaFormat {
    /// PNG (lossless; synthetic noise takes about 3 bytes a pixel).
    #[default]
    Png,
    /// JPEG (baseline, 4:2:0).
    Jpeg,
    #[value(skip)]
    Webp,
    #[value(skip)]
    Gif,
    #[value(skip)]
    Wav,
    #[value(skip)]
    Mp3,
    /// Not known (a URL the server fetches).
    #[value(skip)]
    Unknown,
}

impl MediaFormat {
    /// The MIME type of a data URL or an Anthropic `media_type`.
    pub fn mime(self) -> &'static str {
        match self {
            MediaFormat::Png => "image/png",
            MediaFormat::Jpeg => "image/jpeg",
            MediaFormat::Webp => "image/webp",
            MediaFormat::Gif => "image/gif",
            MediaFormat::Wav => "audio/wav",
            MediaFormat::Mp3 => "audio/mpeg",
            MediaFormat::Unknown => "application/octet-stream",
        }
    }

    /// The `format` of an OpenAI `input_audio` part.
    pub fn audio_name(self) -> &'static str {
        match self {
            MediaFormat::Mp3 => "mp3",
            _ => "wav",
        }
    }

    /// The format a file name's extension says, with the kind of part it makes.
    pub fn from_extension(path: &std::path::Path) -> Option<(MediaKind, MediaFormat)> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "png" => (MediaKind::Image, MediaFormat::Png),
            "jpg" | "jpeg" => (MediaKind::Image, MediaFormat::Jpeg),
            "webp" => (MediaKind::Image, MediaFormat::Webp),
            "gif" => (MediaKind::Image, MediaFormat::Gif),
            "wav" => (MediaKind::Audio, MediaFormat::Wav),
            "mp3" => (MediaKind::Audio, MediaFormat::Mp3),
            _ => return None,
        })
    }
}

/// Where a part's bytes are.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum MediaData {
    /// Encoded bytes in memory: synthetic, or a file the feeder has read.
    Bytes(Arc<[u8]>),
    /// A file the feeder reads before the request's body is built.
    File(PathBuf),
    /// A URL sent as it is (`http(s)://` or `data:`); the server fetches it.
    Url(String),
    /// Nothing (a default value).
    #[default]
    None,
}

/// One image or audio clip of a request.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct MediaPart {
    pub kind: MediaKind,
    pub format: MediaFormat,
    /// Pixels; 0 when not known yet (a file not read yet, a URL).
    #[serde(skip_serializing_if = "is_zero")]
    pub width: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub height: u32,
    /// Audio: length, ms.
    #[serde(skip_serializing_if = "is_zero")]
    pub duration_ms: u32,
    /// Encoded bytes (before base64); 0 for a URL or a file not read yet.
    pub bytes: u64,
    /// `synthetic`, the file's path or the URL.
    pub source: String,
    /// FNV-1a of the encoded bytes (hex), when they are known: equal seeds, equal bytes.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
    /// The user message it belongs to: its position among the user messages (0: the first).
    pub user_turn: u32,
    #[serde(skip)]
    pub data: MediaData,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl MediaPart {
    /// A part made of `bytes` already encoded as `format`, its size read from its header.
    pub fn from_bytes(kind: MediaKind, format: MediaFormat, bytes: Vec<u8>, source: &str) -> Self {
        let info = probe::probe(&bytes);
        MediaPart {
            kind,
            format: info.map(|i| i.format).unwrap_or(format),
            width: info.map_or(0, |i| i.width),
            height: info.map_or(0, |i| i.height),
            duration_ms: info.map_or(0, |i| i.duration_ms),
            bytes: bytes.len() as u64,
            source: source.to_owned(),
            fingerprint: format!("{:016x}", super::fingerprint(&bytes)),
            user_turn: 0,
            data: MediaData::Bytes(bytes.into()),
        }
    }

    /// A part named by a dataset or a folder: a URL (`http://`, `https://`, `data:`) is sent
    /// as it is, anything else is a file the feeder reads.
    pub fn named(kind: MediaKind, location: &str) -> Self {
        let is_url = ["http://", "https://", "data:"]
            .iter()
            .any(|p| location.starts_with(p));
        let path = std::path::Path::new(location);
        MediaPart {
            kind,
            format: match (is_url, MediaFormat::from_extension(path)) {
                (false, Some((_, f))) => f,
                _ => MediaFormat::Unknown,
            },
            source: location.to_owned(),
            data: if is_url {
                MediaData::Url(location.to_owned())
            } else {
                MediaData::File(path.to_path_buf())
            },
            ..Default::default()
        }
    }

    pub fn is_image(&self) -> bool {
        self.kind == MediaKind::Image
    }

    pub fn is_audio(&self) -> bool {
        self.kind == MediaKind::Audio
    }
}

/// Images in every request of a workload (`images` in a scenario file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageSpec {
    /// Images per request (`--images-per-request`); 0 draws none for that request.
    pub count: LengthDist,
    /// Synthetic images: width in pixels (`--image-width`).
    #[serde(default = "default_side")]
    pub width: LengthDist,
    /// Synthetic images: height in pixels (`--image-height`).
    #[serde(default = "default_side")]
    pub height: LengthDist,
    /// Synthetic images: `png` or `jpeg` (`--image-format`).
    #[serde(default)]
    pub format: MediaFormat,
    /// JPEG quality, 1-100.
    #[serde(default = "default_quality")]
    pub jpeg_quality: u8,
    /// Images from this folder (`--image-dir`) instead of synthetic ones: its PNG, JPEG,
    /// WebP and GIF files in a seeded order, cycled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// The folder's files, listed when the run was configured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PathBuf>,
}

fn default_side() -> LengthDist {
    LengthDist::fixed(512)
}

fn default_quality() -> u8 {
    90
}

impl Default for ImageSpec {
    fn default() -> Self {
        ImageSpec {
            count: LengthDist::fixed(1),
            width: default_side(),
            height: default_side(),
            format: MediaFormat::Png,
            jpeg_quality: default_quality(),
            dir: None,
            files: Vec::new(),
        }
    }
}

/// Audio clips in every request of a workload (`audio` in a scenario file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AudioSpec {
    /// Clips per request (`--audio-per-request`).
    pub count: LengthDist,
    /// Synthetic clips: length in ms (`--audio-seconds`, × 1000).
    #[serde(default = "default_duration")]
    pub duration_ms: LengthDist,
    /// Synthetic clips: samples per second (16-bit mono WAV).
    #[serde(default = "default_rate")]
    pub sample_rate: u32,
    /// Clips from this folder (`--audio-dir`): its WAV and MP3 files, cycled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PathBuf>,
}

fn default_duration() -> LengthDist {
    LengthDist::fixed(5_000)
}

fn default_rate() -> u32 {
    16_000
}

impl Default for AudioSpec {
    fn default() -> Self {
        AudioSpec {
            count: LengthDist::fixed(1),
            duration_ms: default_duration(),
            sample_rate: default_rate(),
            dir: None,
            files: Vec::new(),
        }
    }
}

impl ImageSpec {
    /// Checks the parameters; a message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        check_dist(&self.count, "images.count", 0, 64)?;
        check_dist(&self.width, "images.width", 1, 16_384)?;
        check_dist(&self.height, "images.height", 1, 16_384)?;
        if !matches!(self.format, MediaFormat::Png | MediaFormat::Jpeg) {
            return Err("images.format: synthetic images are png or jpeg".into());
        }
        if !(1..=100).contains(&self.jpeg_quality) {
            return Err("images.jpeg_quality must be between 1 and 100".into());
        }
        if self.format == MediaFormat::Jpeg && (self.width.max_value() > 65_535) {
            return Err("images.width: JPEG images are at most 65535 pixels wide".into());
        }
        Ok(())
    }

    /// Encoded bytes of one synthetic image, on average (noise does not compress: about 3
    /// bytes a pixel in PNG, 1.9 in JPEG at quality 90).
    pub fn mean_bytes(&self) -> f64 {
        let per_pixel = match self.format {
            MediaFormat::Jpeg => 1.9,
            _ => 3.0,
        };
        self.count.mean_or_zero() * self.width.mean() * self.height.mean() * per_pixel
    }
}

impl AudioSpec {
    /// Checks the parameters; a message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        check_dist(&self.count, "audio.count", 0, 64)?;
        check_dist(&self.duration_ms, "audio.duration_ms", 1, 3_600_000)?;
        if !(1_000..=192_000).contains(&self.sample_rate) {
            return Err("audio.sample_rate must be between 1000 and 192000".into());
        }
        Ok(())
    }

    /// Encoded bytes of one request's synthetic clips, on average.
    pub fn mean_bytes(&self) -> f64 {
        self.count.mean_or_zero() * self.duration_ms.mean() / 1e3
            * f64::from(self.sample_rate)
            * 2.0
    }
}

/// `dist` is valid and its draws fall within `lo..=hi`.
fn check_dist(dist: &LengthDist, what: &str, lo: u32, hi: u32) -> Result<(), String> {
    match dist {
        LengthDist::Fixed { value } if *value < lo || *value > hi => {
            return Err(format!("{what}: {value} is outside {lo}..={hi}"))
        }
        LengthDist::Fixed { .. } => return Ok(()),
        other => other.validate().map_err(|e| format!("{what}: {e}"))?,
    }
    if dist.min_value() < lo || dist.max_value() > hi {
        return Err(format!("{what}: draws must fall within {lo}..={hi}"));
    }
    Ok(())
}

/// What a length distribution needs here beyond `lengths.rs`: its largest draw, and a mean
/// that may be 0 (a count of images).
trait Bounds {
    fn max_value(&self) -> u32;
    fn mean_or_zero(&self) -> f64;
}

impl Bounds for LengthDist {
    fn max_value(&self) -> u32 {
        match self {
            LengthDist::Fixed { value } => *value,
            LengthDist::Uniform { max, .. }
            | LengthDist::Normal { max, .. }
            | LengthDist::LogNormal { max, .. } => *max,
            LengthDist::Empirical { values, .. } => values.iter().copied().max().unwrap_or(0),
        }
    }

    fn mean_or_zero(&self) -> f64 {
        match self {
            LengthDist::Fixed { value } => f64::from(*value),
            LengthDist::Uniform { min, max } => (f64::from(*min) + f64::from(*max)) / 2.0,
            other => other.mean(),
        }
    }
}

/// Parses a count or size from the command line: `N` or `MIN..MAX` (uniform over the
/// integers, both ends included), each at least `lo`.
pub fn parse_range(text: &str, lo: u32) -> Result<LengthDist, String> {
    let int = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|&v| v >= lo)
            .ok_or_else(|| format!("`{text}` is not N or MIN..MAX with whole numbers >= {lo}"))
    };
    match text.split_once("..") {
        Some((a, b)) => {
            let (min, max) = (int(a)?, int(b.trim_start_matches('='))?);
            if min > max {
                return Err(format!("`{text}`: MIN is above MAX"));
            }
            Ok(LengthDist::Uniform { min, max })
        }
        None => Ok(LengthDist::fixed(int(text)?)),
    }
}

/// Bytes of media a workload's request carries, on average (synthetic parts only; files and
/// URLs are not known until sent): what sizes the feeder's look-ahead.
pub fn mean_request_bytes(images: Option<&ImageSpec>, audio: Option<&AudioSpec>) -> f64 {
    let synthetic_images = images
        .filter(|i| i.files.is_empty())
        .map_or(0.0, ImageSpec::mean_bytes);
    let synthetic_audio = audio
        .filter(|a| a.files.is_empty())
        .map_or(0.0, AudioSpec::mean_bytes);
    // Files: count them as a 1 MB image each, a guess that keeps the look-ahead bounded.
    let files = images
        .filter(|i| !i.files.is_empty())
        .map_or(0.0, |i| i.count.mean_or_zero())
        + audio
            .filter(|a| !a.files.is_empty())
            .map_or(0.0, |a| a.count.mean_or_zero());
    // Base64 adds a third.
    (synthetic_images + synthetic_audio + files * 1e6) * 4.0 / 3.0
}

/// A dataset record's `images` and `audio` as parts to send: URLs as they are, paths resolved
/// against the folder of `dataset` and checked to be files (when the dataset is loaded, so a
/// missing image stops the run before it starts).
pub fn dataset_refs(
    images: &[String],
    audio: &[String],
    dataset: &std::path::Path,
) -> Result<Vec<super::datasets::MediaRef>, String> {
    let base = dataset.parent().unwrap_or(std::path::Path::new(""));
    let mut out = Vec::with_capacity(images.len() + audio.len());
    let kinds = images
        .iter()
        .map(|l| (MediaKind::Image, l))
        .chain(audio.iter().map(|l| (MediaKind::Audio, l)));
    for (kind, location) in kinds {
        let part = MediaPart::named(kind, location);
        let location = match &part.data {
            MediaData::File(p) => {
                let full = if p.is_absolute() {
                    p.clone()
                } else {
                    base.join(p)
                };
                if !full.is_file() {
                    let what = if kind == MediaKind::Image {
                        "image"
                    } else {
                        "audio"
                    };
                    return Err(format!("{what} file {} not found", full.display()));
                }
                full.to_string_lossy().into_owned()
            }
            _ => location.clone(),
        };
        out.push(super::datasets::MediaRef { kind, location });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
