//! The images and audio of each request: drawn after its text, from a stream of their own
//! (the seed and the request's index), so a workload with images sends the same prompts as
//! without them, and each request's parts do not depend on the ones before it.

use super::Generator;
use crate::workload::datasets::MediaRef;
use crate::workload::lengths::LengthDist;
use crate::workload::media::{encode, AudioSpec, ImageSpec, MediaKind, MediaPart};
use crate::workload::RequestSpec;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Mixed into the seed of the media streams (one stream per request index).
const MEDIA_SALT: u64 = 0x1A6E_5EED_0F1A_6E55;
/// Streams of the seed that order an image folder's and an audio folder's files.
const IMAGE_ORDER_STREAM: u64 = 7_000_001;
const AUDIO_ORDER_STREAM: u64 = 7_000_002;

/// Where the generator is in the folders' files (seeded orders, cycled).
#[derive(Debug, Default)]
pub(super) struct FolderCursor {
    images: Vec<usize>,
    audio: Vec<usize>,
    next_image: usize,
    next_audio: usize,
}

impl Generator {
    /// Attaches the workload's images and audio to a session (one request, or a session's
    /// turns). A session's parts belong to its first user message, which every later turn
    /// carries again in its history, as a chat client resends it.
    pub(super) fn attach_media(&mut self, session: &mut [RequestSpec]) {
        let (images, audio) = (self.scenario.images.clone(), self.scenario.audio.clone());
        let Some(first) = session.first() else {
            return;
        };
        if images.is_none() && audio.is_none() {
            return;
        }
        let key = self.seed ^ MEDIA_SALT ^ self.scenario.request_salt;
        let mut rng = ChaCha8Rng::seed_from_u64(key);
        rng.set_stream(first.index);
        // The pixels and samples follow the prompt salt, as the words do: a server's
        // multimodal cache (vLLM keys it on the image's hash) must not answer a new run
        // from an earlier one's images. Counts and sizes stay the seed's.
        let mut content = ChaCha8Rng::seed_from_u64(super::splitmix64(key ^ self.prompt_salt));
        content.set_stream(first.index);
        let rngs = (&mut rng, &mut content);
        let mut parts = Vec::new();
        if let Some(spec) = &images {
            parts.extend(self.images_of(spec, rngs.0, rngs.1));
        }
        if let Some(spec) = &audio {
            parts.extend(self.audio_of(spec, rngs.0, rngs.1));
        }
        let sessions = session.len() > 1 || first.session.is_some();
        for spec in session.iter_mut() {
            let turn = if sessions {
                0
            } else {
                last_user_turn(&spec.messages)
            };
            spec.media.extend(parts.iter().map(|p| MediaPart {
                user_turn: turn,
                ..p.clone()
            }));
        }
    }

    /// One request's images: their count, then each one, synthetic or the folder's next.
    fn images_of(
        &mut self,
        spec: &ImageSpec,
        rng: &mut ChaCha8Rng,
        content: &mut ChaCha8Rng,
    ) -> Vec<MediaPart> {
        let n = count(&spec.count, rng);
        if spec.files.is_empty() {
            return (0..n).map(|_| encode::image(spec, rng, content)).collect();
        }
        if self.folders.images.is_empty() {
            self.folders.images = seeded_order(self.stream(IMAGE_ORDER_STREAM), spec.files.len());
        }
        (0..n)
            .map(|_| {
                let c = &mut self.folders;
                let file = &spec.files[c.images[c.next_image % c.images.len()]];
                c.next_image += 1;
                MediaPart::named(MediaKind::Image, &file.to_string_lossy())
            })
            .collect()
    }

    /// One request's audio clips, as [`Generator::images_of`].
    fn audio_of(
        &mut self,
        spec: &AudioSpec,
        rng: &mut ChaCha8Rng,
        content: &mut ChaCha8Rng,
    ) -> Vec<MediaPart> {
        let n = count(&spec.count, rng);
        if spec.files.is_empty() {
            return (0..n).map(|_| encode::audio(spec, rng, content)).collect();
        }
        if self.folders.audio.is_empty() {
            self.folders.audio = seeded_order(self.stream(AUDIO_ORDER_STREAM), spec.files.len());
        }
        (0..n)
            .map(|_| {
                let c = &mut self.folders;
                let file = &spec.files[c.audio[c.next_audio % c.audio.len()]];
                c.next_audio += 1;
                MediaPart::named(MediaKind::Audio, &file.to_string_lossy())
            })
            .collect()
    }
}

/// A count of parts from `dist`, 0 included (`LengthDist::sample` draws lengths, at least 1):
/// fixed, uniform and empirical counts as given; normal and log-normal ones from 1.
fn count(dist: &LengthDist, rng: &mut ChaCha8Rng) -> u32 {
    match dist {
        LengthDist::Fixed { value } => *value,
        LengthDist::Uniform { min, max } => rng.random_range(*min..=(*max).max(*min)),
        LengthDist::Empirical { values, weights } => {
            let mut x = rng.random::<f64>() * weights.iter().sum::<f64>();
            for (v, w) in values.iter().zip(weights) {
                if x < *w {
                    return *v;
                }
                x -= w;
            }
            values.last().copied().unwrap_or(0)
        }
        other => other.sample(rng),
    }
}

/// `0..n` in the order `rng` shuffles it to.
fn seeded_order(mut rng: ChaCha8Rng, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng);
    order
}

/// The position of the last user message among the user messages (0 when there is none).
fn last_user_turn(messages: &[(String, String)]) -> u32 {
    let users = messages.iter().filter(|(role, _)| role == "user").count();
    users.saturating_sub(1) as u32
}

/// A dataset record's own images and audio (paths or URLs), on its last user message.
pub(super) fn named_parts(refs: &[MediaRef], messages: &[(String, String)]) -> Vec<MediaPart> {
    let turn = last_user_turn(messages);
    refs.iter()
        .map(|r| MediaPart {
            user_turn: turn,
            ..MediaPart::named(r.kind, &r.location)
        })
        .collect()
}
