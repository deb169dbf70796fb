//! The images-and-audio group of flags: the workload's `images` and `audio` from
//! `--images-per-request`, `--image-dir`, `--audio-per-request`, ... (over a scenario file's
//! own), the folders listed, and the endpoint checked to carry them.

use crate::client::Endpoint;
use crate::flags::MediaFlags;
use crate::workload::datasets::Dataset;
use crate::workload::lengths::LengthDist;
use crate::workload::media::{parse_range, AudioSpec, ImageSpec, MediaFormat, MediaKind};
use crate::workload::WorkloadSpec;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Sets the workload's images and audio from `m`, lists their folders, and refuses what
/// `endpoint` cannot carry (`None`: no endpoint to check, as for `workload show`).
pub(crate) fn media(
    w: &mut WorkloadSpec,
    m: &MediaFlags,
    dataset: Option<&Dataset>,
    endpoint: Option<Endpoint>,
) -> Result<()> {
    if let Some(spec) = images(m)? {
        w.images = Some(spec);
    }
    if let Some(spec) = audio(m)? {
        w.audio = Some(spec);
    }
    if let Some(i) = w.images.as_mut() {
        if let (Some(dir), true) = (&i.dir, i.files.is_empty()) {
            i.files = list_dir(dir, MediaKind::Image)?;
        }
        i.validate().map_err(anyhow::Error::msg)?;
    }
    if let Some(a) = w.audio.as_mut() {
        if let (Some(dir), true) = (&a.dir, a.files.is_empty()) {
            a.files = list_dir(dir, MediaKind::Audio)?;
        }
        a.validate().map_err(anyhow::Error::msg)?;
    }
    let named = |kind| match dataset {
        Some(Dataset::Prompts(p)) => p.iter().any(|r| r.media.iter().any(|m| m.kind == kind)),
        _ => false,
    };
    let has_images = w.images.is_some() || named(MediaKind::Image);
    let has_audio = w.audio.is_some() || named(MediaKind::Audio);
    match endpoint {
        Some(e) => carried_by(e, has_images, has_audio),
        None => Ok(()),
    }
}

/// The image spec the flags ask for: `None` when they name no images (a scenario's stand).
fn images(m: &MediaFlags) -> Result<Option<ImageSpec>> {
    let shaping = m.image_size.is_some()
        || m.image_width.is_some()
        || m.image_height.is_some()
        || m.image_format.is_some();
    if m.images_per_request.is_none() && m.image_dir.is_none() {
        if shaping {
            bail!("--image-size, --image-width, --image-height and --image-format shape the images of --images-per-request (or --image-dir): give it too");
        }
        return Ok(None);
    }
    let count = range(
        m.images_per_request.as_deref().unwrap_or("1"),
        0,
        "--images-per-request",
    )?;
    let (mut width, mut height) = (LengthDist::fixed(512), LengthDist::fixed(512));
    if let Some(size) = &m.image_size {
        let (w, h) = size
            .split_once(['x', 'X', '×'])
            .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)))
            .filter(|&(w, h): &(u32, u32)| w > 0 && h > 0)
            .with_context(|| format!("--image-size `{size}`: write WIDTHxHEIGHT, e.g. 1024x768"))?;
        (width, height) = (LengthDist::fixed(w), LengthDist::fixed(h));
    }
    if let Some(t) = &m.image_width {
        width = range(t, 1, "--image-width")?;
    }
    if let Some(t) = &m.image_height {
        height = range(t, 1, "--image-height")?;
    }
    if m.image_dir.is_some() && shaping {
        bail!("--image-dir sends the folder's own images: --image-size, --image-width, --image-height and --image-format do not apply");
    }
    Ok(Some(ImageSpec {
        count,
        width,
        height,
        format: m.image_format.unwrap_or(MediaFormat::Png),
        dir: m.image_dir.clone(),
        ..ImageSpec::default()
    }))
}

/// The audio spec the flags ask for: `None` when they name no audio.
fn audio(m: &MediaFlags) -> Result<Option<AudioSpec>> {
    let shaping = m.audio_seconds.is_some() || m.audio_sample_rate.is_some();
    if m.audio_per_request.is_none() && m.audio_dir.is_none() {
        if shaping {
            bail!("--audio-seconds and --audio-sample-rate shape the clips of --audio-per-request: give it too");
        }
        return Ok(None);
    }
    let seconds = range(
        m.audio_seconds.as_deref().unwrap_or("5"),
        1,
        "--audio-seconds",
    )?;
    let duration_ms = match seconds {
        LengthDist::Uniform { min, max } => LengthDist::Uniform {
            min: min * 1000,
            max: max * 1000,
        },
        LengthDist::Fixed { value } => LengthDist::fixed(value * 1000),
        other => other,
    };
    Ok(Some(AudioSpec {
        count: range(
            m.audio_per_request.as_deref().unwrap_or("1"),
            0,
            "--audio-per-request",
        )?,
        duration_ms,
        sample_rate: m.audio_sample_rate.unwrap_or(16_000),
        dir: m.audio_dir.clone(),
        files: Vec::new(),
    }))
}

fn range(text: &str, lo: u32, flag: &str) -> Result<LengthDist> {
    parse_range(text, lo).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
}

/// Refuses images or audio on an endpoint whose requests cannot carry them.
fn carried_by(e: Endpoint, images: bool, audio: bool) -> Result<()> {
    use clap::ValueEnum;
    let name = e
        .to_possible_value()
        .map_or_else(|| format!("{e:?}"), |v| v.get_name().to_owned());
    if images && !matches!(e, Endpoint::Chat | Endpoint::Responses | Endpoint::Messages) {
        bail!("--endpoint {name} cannot carry images: use --endpoint chat (OpenAI image_url parts), responses (input_image) or messages (Anthropic image blocks)");
    }
    if audio && e != Endpoint::Chat {
        bail!("--endpoint {name} cannot carry audio: audio is sent as OpenAI input_audio parts, on --endpoint chat only");
    }
    Ok(())
}

/// The image (or audio) files of `dir`, sorted by name; an error when there are none.
fn list_dir(dir: &Path, kind: MediaKind) -> Result<Vec<PathBuf>> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("reading the folder {}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .filter(|p| {
            crate::workload::media::MediaFormat::from_extension(p).is_some_and(|(k, _)| k == kind)
        })
        .collect();
    files.sort();
    if files.is_empty() {
        let what = match kind {
            MediaKind::Image => ".png, .jpg, .jpeg, .webp or .gif",
            MediaKind::Audio => ".wav or .mp3",
        };
        bail!("{} has no {what} files", dir.display());
    }
    Ok(files)
}
