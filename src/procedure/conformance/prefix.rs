//! The virtual bench's prefix cache: what a request's prompt is made of, and how much of it
//! a cache holding earlier prompts serves.
//!
//! A prompt is a chain of segments, as the workload generator builds it: the system prompt
//! (when the request carries it), one of the shared contexts (when it carries one, picked by
//! Zipf popularity; its length drawn from the seed and the context alone), then the
//! request's own text. Each segment has a key that names it and everything before it (the
//! simulator's engine chains block hashes; here one key per segment): the shared segments
//! from the seed alone, the own text from the seed, the workload's request salt and the
//! request's place in its level. Two levels that send the same requests (same seed, same
//! salt) therefore share whole prompts, and a level of new requests of the same workload
//! (another salt: the prefix-cache test's warm level) shares the prefixes only.
//!
//! A request that uses the cache is served the longest run of its leading segments the cache
//! holds, in whole blocks and at most its prompt less one token (the simulator's rule: the
//! last prompt token is computed to sample the first output token); its prefill starts
//! there, and its segments join the cache. Nothing is evicted: the cases' caches hold every
//! prefix.

use crate::workload::lengths::LengthDist;
use crate::workload::scenario::SharedPrefix;
use crate::workload::WorkloadSpec;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

/// Keys of the prompt segments a cache holds.
#[derive(Debug, Default)]
pub(super) struct PrefixCache {
    keys: HashSet<u64>,
}

impl PrefixCache {
    /// Empties the cache (`POST /reset_prefix_cache`).
    pub(super) fn clear(&mut self) {
        self.keys.clear();
    }

    /// Prompt tokens served from the cache to a prompt of `prompt` tokens made of `chain`
    /// (each segment's key and where it ends, tokens): the leading segments the cache holds,
    /// in whole blocks of `block` tokens, at most `prompt` − 1. The prompt's segments are in
    /// the cache afterwards.
    pub(super) fn serve(&mut self, chain: &[(u64, u32)], prompt: u32, block: u32) -> u32 {
        let hit = chain
            .iter()
            .take_while(|(k, _)| self.keys.contains(k))
            .last()
            .map_or(0, |&(_, end)| end);
        self.keys.extend(chain.iter().map(|&(k, _)| k));
        let block = block.max(1);
        (hit / block * block).min(prompt.saturating_sub(1))
    }
}

/// What a prompt is made of, for the cache.
#[derive(Debug, Clone)]
pub(super) struct Content {
    /// Each segment's key and where it ends, tokens.
    pub(super) chain: Vec<(u64, u32)>,
    /// The request asks for the cache (a level may switch it off per request).
    pub(super) use_cache: bool,
}

/// A request's prompt, as drawn.
#[derive(Debug, Clone)]
pub(super) struct Prompt {
    /// Prompt tokens: the shared prefixes and the request's own.
    pub(super) tokens: u32,
    /// Of those, tokens of shared prefixes (system prompt, context).
    pub(super) shared: u32,
    pub(super) content: Content,
}

/// The shared prefixes of a level's workload.
#[derive(Debug)]
pub(super) struct SharedPrefixes {
    seed: u64,
    salt: u64,
    use_cache: bool,
    system: Option<SharedPrefix>,
    /// A share of requests starts with one of the contexts: (share, their lengths).
    groups: Option<(f64, LengthDist)>,
    /// Cumulative Zipf popularity of the contexts.
    zipf_cdf: Vec<f64>,
    /// Length of each context drawn so far, tokens.
    group_tokens: Vec<u32>,
}

impl SharedPrefixes {
    /// The shared prefixes of `w` at `seed` (`use_cache`: the level's requests ask for the
    /// cache); `None` when the workload shares none.
    pub(super) fn of(w: &WorkloadSpec, seed: u64, use_cache: bool) -> Option<Self> {
        if w.system_prompt.is_none() && w.prefix_groups.is_none() {
            return None;
        }
        let zipf_cdf: Vec<f64> = match &w.prefix_groups {
            Some(g) => {
                let weights: Vec<f64> = (1..=g.count.max(1))
                    .map(|k| 1.0 / (k as f64).powf(g.zipf_s))
                    .collect();
                let total: f64 = weights.iter().sum();
                weights
                    .iter()
                    .scan(0.0, |acc, x| {
                        *acc += x / total;
                        Some(*acc)
                    })
                    .collect()
            }
            None => Vec::new(),
        };
        Some(Self {
            seed,
            salt: w.request_salt,
            use_cache,
            system: w.system_prompt.clone(),
            groups: w
                .prefix_groups
                .as_ref()
                .map(|g| (g.share, g.tokens.clone())),
            zipf_cdf,
            group_tokens: Vec::new(),
        })
    }

    /// The prompt of request `index` of the level, whose own text is `own` tokens; `rng`
    /// draws whether it carries the system prompt and a context, and which.
    pub(super) fn draw(&mut self, rng: &mut ChaCha8Rng, index: u64, own: u32) -> Prompt {
        let mut chain = Vec::new();
        let mut key = mix(&[self.seed, 0]);
        let mut end = 0u32;
        if let Some(sp) = &self.system {
            if rng.random::<f64>() < sp.share {
                key = mix(&[key, 1]);
                end += sp.tokens;
                chain.push((key, end));
            }
        }
        if let Some((share, tokens)) = &self.groups {
            if rng.random::<f64>() < *share {
                let x = rng.random::<f64>();
                let k = self
                    .zipf_cdf
                    .iter()
                    .position(|&c| x < c)
                    .unwrap_or(self.zipf_cdf.len().saturating_sub(1));
                while self.group_tokens.len() <= k {
                    let mut r = ChaCha8Rng::seed_from_u64(self.seed);
                    r.set_stream(100 + self.group_tokens.len() as u64);
                    self.group_tokens.push(tokens.sample(&mut r));
                }
                key = mix(&[key, 2, k as u64]);
                end += self.group_tokens[k];
                chain.push((key, end));
            }
        }
        let shared = end;
        key = mix(&[key, 3, self.seed ^ self.salt, index]);
        end += own;
        chain.push((key, end));
        Prompt {
            tokens: end,
            shared,
            content: Content {
                chain,
                use_cache: self.use_cache,
            },
        }
    }
}

/// A key for a sequence of numbers (deterministic within a build).
fn mix(parts: &[u64]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_context(salt: u64) -> WorkloadSpec {
        WorkloadSpec {
            prefix_groups: Some(crate::workload::scenario::PrefixGroups {
                count: 1,
                tokens: LengthDist::fixed(512),
                share: 1.0,
                zipf_s: 1.0,
            }),
            request_salt: salt,
            ..WorkloadSpec::fixed(128, 16)
        }
    }

    /// A cache holding a level's prompts serves a replay of that level whole prompts (639
    /// of 640 tokens: the last is computed), and new requests of the same workload (another
    /// salt) the shared 512-token context only: 512 ÷ 640 = 80 %. A 500-token context is
    /// served in whole 16-token blocks, 496 tokens. Cache off: nothing, and nothing cached.
    #[test]
    fn replays_hit_whole_prompts_new_requests_the_prefix() {
        let mut cache = PrefixCache::default();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut cold = SharedPrefixes::of(&one_context(0), 7, true).unwrap();
        let first: Vec<Prompt> = (0..4).map(|i| cold.draw(&mut rng, i, 128)).collect();
        assert!(first.iter().all(|p| p.tokens == 640 && p.shared == 512));
        assert_eq!(cache.serve(&first[0].content.chain, 640, 16), 0);
        assert_eq!(cache.serve(&first[1].content.chain, 640, 16), 512);
        let mut replay = SharedPrefixes::of(&one_context(0), 7, true).unwrap();
        let again = replay.draw(&mut rng, 0, 128);
        assert_eq!(cache.serve(&again.content.chain, 640, 16), 639);
        let mut warm = SharedPrefixes::of(&one_context(99), 7, true).unwrap();
        let new = warm.draw(&mut rng, 0, 128);
        assert_eq!(cache.serve(&new.content.chain, 640, 16), 512);
        assert_eq!(cache.serve(&[(1, 500), (2, 600)], 600, 16), 0);
        assert_eq!(cache.serve(&[(1, 500), (3, 600)], 600, 16), 496);
        cache.clear();
        assert_eq!(cache.serve(&new.content.chain, 640, 16), 0);
        assert!(
            !SharedPrefixes::of(&one_context(0), 7, false)
                .unwrap()
                .draw(&mut rng, 0, 128)
                .content
                .use_cache
        );
        assert!(SharedPrefixes::of(&WorkloadSpec::fixed(128, 16), 7, true).is_none());
    }
}
