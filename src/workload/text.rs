//! Prompt text of an exact token length.
//!
//! Random words drawn from the tokenizer's own vocabulary: single tokens that decode to a
//! space and 2–10 lowercase letters. Such words stay one token each when concatenated, so a
//! prompt of n words is n tokens; the count is then verified by re-encoding and corrected
//! word by word if the tokenizer merged anything.

use crate::tokenizer::{TokenId, Tokenizer};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// Builds exact-length prompts from a vocabulary subset.
pub struct PromptBuilder {
    words: Vec<TokenId>,
}

impl PromptBuilder {
    pub fn new(tokenizer: &dyn Tokenizer) -> Self {
        let mut words = Vec::new();
        // Scan a fixed id range so the subset (and so every prompt) is the same everywhere.
        for id in 0..tokenizer.vocab_size().min(100_000) as TokenId {
            let s = tokenizer.decode(&[id]);
            let b = s.as_bytes();
            if b.len() >= 3
                && b.len() <= 11
                && b[0] == b' '
                && b[1..].iter().all(|c| c.is_ascii_lowercase())
            {
                words.push(id);
            }
        }
        Self { words }
    }

    /// Text of exactly `n` tokens (by `tokenizer`) and its verified count.
    pub fn exact(&self, tokenizer: &dyn Tokenizer, n: u32, rng: &mut ChaCha8Rng) -> (String, u32) {
        if self.words.is_empty() || n == 0 {
            return (String::new(), 0);
        }
        let mut ids: Vec<TokenId> = (0..n)
            .map(|_| self.words[rng.random_range(0..self.words.len())])
            .collect();
        let mut text = tokenizer.decode(&ids);
        // Verify; correct by adding or dropping words until the count is exact.
        for _ in 0..64 {
            let count = tokenizer.count(&text) as u32;
            if count == n {
                return (text, n);
            }
            if count > n {
                ids.pop();
            } else {
                ids.push(self.words[rng.random_range(0..self.words.len())]);
            }
            text = tokenizer.decode(&ids);
        }
        let count = tokenizer.count(&text) as u32;
        (text, count)
    }
}
