//! The images-and-audio group of `run`'s flags (and `workload show|export`'s): what each
//! request carries besides its text (docs/workloads.md, "Images and audio").

use super::*;

/// Images and audio in each request.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Images and audio")]
pub struct MediaFlags {
    /// Images in each request, `N` or `MIN..MAX` (uniform; 0 allowed): synthetic images of
    /// random pixels drawn from --seed, or --image-dir's files. Sent as base64 data URLs in
    /// the user message (chat: `image_url` parts; responses: `input_image`; messages:
    /// Anthropic `image` blocks); other endpoints refuse images. Default: none (1 with
    /// --image-dir). Input tokens then come from the server's usage (docs/workloads.md).
    #[arg(long, value_name = "N|MIN..MAX")]
    pub images_per_request: Option<String>,
    /// Synthetic images' width × height in pixels, e.g. 1024x768. Default: 512x512.
    #[arg(long, value_name = "WxH")]
    pub image_size: Option<String>,
    /// Synthetic images' width, `N` or `MIN..MAX` (uniform), over --image-size's. Default: 512.
    #[arg(long, value_name = "N|MIN..MAX")]
    pub image_width: Option<String>,
    /// Synthetic images' height, `N` or `MIN..MAX` (uniform), over --image-size's. Default: 512.
    #[arg(long, value_name = "N|MIN..MAX")]
    pub image_height: Option<String>,
    /// Synthetic images' encoding: png (stored, about 3 bytes a pixel of noise) or jpeg
    /// (quality 90, about 1.9). Default: png.
    #[arg(long, value_enum)]
    pub image_format: Option<crate::workload::media::MediaFormat>,
    /// Images from this folder instead of synthetic ones: its .png, .jpg, .jpeg, .webp and
    /// .gif files, in an order drawn from --seed, cycled; read by the feeder, off the hot path.
    #[arg(long, value_name = "DIR")]
    pub image_dir: Option<PathBuf>,
    /// Audio clips in each request, `N` or `MIN..MAX` (0 allowed): synthetic 16-bit mono WAV
    /// noise, or --audio-dir's files, sent as OpenAI `input_audio` parts (--endpoint chat
    /// only). Default: none (1 with --audio-dir).
    #[arg(long, value_name = "N|MIN..MAX")]
    pub audio_per_request: Option<String>,
    /// Synthetic clips' length in seconds, `N` or `MIN..MAX` (uniform). Default: 5.
    #[arg(long, value_name = "N|MIN..MAX")]
    pub audio_seconds: Option<String>,
    /// Synthetic clips' sample rate, Hz. Default: 16000.
    #[arg(long, value_name = "HZ")]
    pub audio_sample_rate: Option<u32>,
    /// Clips from this folder instead of synthetic ones: its .wav and .mp3 files, cycled.
    #[arg(long, value_name = "DIR")]
    pub audio_dir: Option<PathBuf>,
}
