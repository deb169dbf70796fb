//! Prompt text of an exact token length.
//!
//! Text is made of atoms (single-token vocabulary words, or code and prose pieces built from
//! them). For a target of N tokens the builder draws a little more than enough atoms, binary
//! searches the longest atom prefix that counts at most N (exo's method: a handful of counts,
//! even at 128K tokens), then pads with single-token words until the count is exactly N,
//! verifying each step with the same counter the report will use (which may include a chat
//! template's overhead). When no padding reaches N, it fails and says the minimum.

use crate::tokenizer::Tokenizer;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

use super::scenario::Content;

#[derive(Debug, Error, PartialEq)]
pub enum TextError {
    #[error("cannot make a prompt of {target} tokens: with this tokenizer and template the minimum is {minimum}")]
    TooSmall { target: usize, minimum: usize },
    #[error(
        "could not reach exactly {target} tokens (stuck at {got}); try another --seed or tokenizer"
    )]
    NotExact { target: usize, got: usize },
}

/// The benign word list synthetic prompts are drawn from: 4,540 everyday English words
/// (objects, nature, food, places, simple verbs and adjectives), chosen by hand and filtered
/// against a deny list so that no slur, sexual, violent, drug, medical, religious or political
/// term reaches a server (the draft asks for benign content in 5.10, and content filters on
/// real gateways would react to such words). See docs/workloads.md.
const BENIGN_WORDS: &str = include_str!("words.txt");

/// Words to build text from: benign words that are one token each (with a leading space) in
/// the counting tokenizer, so exact-length prompts stay cheap to build.
pub struct TextSource {
    words: Vec<String>,
}

impl TextSource {
    /// The benign words that `tokenizer` encodes as a single token after a space. A tokenizer
    /// that cannot be asked cheaply (a server's) uses the reference tokenizer's selection;
    /// exact lengths are still verified with the real one.
    pub fn new(tokenizer: &dyn Tokenizer) -> Self {
        if !tokenizer.enumerable() {
            return Self::new(&crate::tokenizer::TiktokenTokenizer::cl100k());
        }
        let mut words: Vec<String> = BENIGN_WORDS
            .lines()
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(|w| format!(" {w}"))
            .filter(|w| tokenizer.count(w) == 1)
            .collect();
        if words.len() < 100 {
            // A tokenizer that splits most words: accept two-token words rather than
            // falling back to raw vocabulary.
            words = BENIGN_WORDS
                .lines()
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(|w| format!(" {w}"))
                .filter(|w| tokenizer.count(w) <= 2)
                .collect();
        }
        Self { words }
    }

    /// The words in use.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    fn word(&self, rng: &mut ChaCha8Rng) -> &str {
        &self.words[rng.random_range(0..self.words.len())]
    }

    /// One atom of `content`.
    fn atom(&self, content: Content, i: usize, rng: &mut ChaCha8Rng) -> String {
        match content {
            Content::Code => match i % 9 {
                0 => format!("\ndef{}(", self.word(rng)),
                1 => self.word(rng).trim_start().to_owned(),
                2 => "):\n    ".to_owned(),
                3 => format!("result ={}", self.word(rng)),
                4 => format!("({})", self.word(rng).trim_start()),
                5 => "\n    if result:\n        return".to_owned(),
                6 => self.word(rng).to_owned(),
                7 => "\n    return None".to_owned(),
                _ => "\n".to_owned(),
            },
            Content::Document => {
                if i % 14 == 13 {
                    ".".to_owned()
                } else {
                    self.word(rng).to_owned()
                }
            }
            _ => self.word(rng).to_owned(),
        }
    }

    /// Text that `count` measures at exactly `target`, starting with `prefix` (which is kept
    /// as is, e.g. a shared context). `count` maps the text to the token count that matters.
    pub fn exact(
        &self,
        prefix: &str,
        target: usize,
        content: Content,
        rng: &mut ChaCha8Rng,
        count: &dyn Fn(&str) -> usize,
    ) -> Result<String, TextError> {
        let base = count(prefix);
        if base > target {
            return Err(TextError::TooSmall {
                target,
                minimum: base,
            });
        }
        if base == target {
            return Ok(prefix.to_owned());
        }
        let need = target - base;
        // Draw atoms until the text is surely long enough (grow geometrically).
        let mut atoms: Vec<String> = Vec::new();
        let mut estimate = need + need / 4 + 8;
        loop {
            while atoms.len() < estimate {
                let a = self.atom(content, atoms.len(), rng);
                atoms.push(a);
            }
            let got = count(&join(prefix, &atoms));
            if got >= target {
                break;
            }
            if estimate > 64 * need + 4096 {
                // The counter does not grow with the text: nothing can reach the target.
                return Err(TextError::NotExact { target, got });
            }
            estimate *= 2;
        }
        // Longest atom prefix with count <= target.
        let (mut lo, mut hi) = (0usize, atoms.len());
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if count(&join(prefix, &atoms[..mid])) <= target {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        atoms.truncate(lo);
        // Pad with single-token words; drop an atom if a merge overshoots.
        let mut text = join(prefix, &atoms);
        for _ in 0..256 {
            let n = count(&text);
            if n == target {
                return Ok(text);
            }
            if n < target {
                text.push_str(self.word(rng));
            } else if atoms.pop().is_some() {
                text = join(prefix, &atoms);
            } else {
                break;
            }
        }
        let got = count(&text);
        if got == target {
            Ok(text)
        } else {
            Err(TextError::NotExact { target, got })
        }
    }
}

fn join(prefix: &str, atoms: &[String]) -> String {
    let mut s = String::with_capacity(prefix.len() + atoms.len() * 8);
    s.push_str(prefix);
    for a in atoms {
        s.push_str(a);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::TiktokenTokenizer;
    use rand::SeedableRng;

    #[test]
    fn exact_lengths_for_every_content_kind() {
        let tok = TiktokenTokenizer::cl100k();
        let src = TextSource::new(&tok);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let count = |s: &str| tok.count(s);
        for content in [Content::Random, Content::Code, Content::Document] {
            for target in [1usize, 7, 128, 1000, 5000] {
                let text = src.exact("", target, content, &mut rng, &count).unwrap();
                assert_eq!(tok.count(&text), target, "{content:?} {target}");
            }
        }
        // A shared prefix is kept and the total is still exact.
        let prefix = src.exact("", 300, Content::Code, &mut rng, &count).unwrap();
        let text = src
            .exact(&prefix, 512, Content::Code, &mut rng, &count)
            .unwrap();
        assert!(text.starts_with(&prefix));
        assert_eq!(tok.count(&text), 512);
    }

    #[test]
    fn too_small_a_target_says_the_minimum() {
        let tok = TiktokenTokenizer::cl100k();
        let src = TextSource::new(&tok);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // A template that always adds 12 tokens.
        let count = |s: &str| tok.count(s) + 12;
        assert_eq!(
            src.exact("", 5, Content::Random, &mut rng, &count),
            Err(TextError::TooSmall {
                target: 5,
                minimum: 12
            })
        );
        let t = src
            .exact("", 40, Content::Random, &mut rng, &count)
            .unwrap();
        assert_eq!(tok.count(&t), 28);
    }
}
