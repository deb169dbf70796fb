//! Prompt text of an exact token length.
//!
//! Text is made of atoms (single-token vocabulary words, or code and prose pieces built from
//! them). For a target of N tokens the builder draws a little more than enough atoms, finds
//! the longest atom prefix that counts at most N (exo's bisection, started from a guess
//! that one or two counts usually confirm, even at 128K tokens), then pads with
//! single-token words until the count is exactly N, verifying each step with the same
//! counter the report will use (which may include a chat template's overhead). When no
//! padding reaches N, it fails and says the minimum.

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
        while atoms.len() < estimate {
            let a = self.atom(content, atoms.len(), rng);
            atoms.push(a);
        }
        // Most prompts are pinned by two counts around the guess; the rest search.
        let (lo, lo_count) = match pinned(prefix, &atoms, target, need, count) {
            Some(found) => found,
            None => {
                let got = loop {
                    let got = count(&join(prefix, &atoms));
                    if got >= target {
                        break got;
                    }
                    if estimate > 64 * need + 4096 {
                        // The counter does not grow with the text: nothing can reach it.
                        return Err(TextError::NotExact { target, got });
                    }
                    estimate *= 2;
                    while atoms.len() < estimate {
                        let a = self.atom(content, atoms.len(), rng);
                        atoms.push(a);
                    }
                };
                longest_within(prefix, &atoms, target, base, got, count)
            }
        };
        atoms.truncate(lo);
        // Pad with single-token words; drop an atom if a merge overshoots.
        let mut text = join(prefix, &atoms);
        let mut known = Some(lo_count);
        for _ in 0..256 {
            let n = known.take().unwrap_or_else(|| count(&text));
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

/// The guessed answer of [`longest_within`] when counts confirm it: `k` atoms count at most
/// `target` and `k + 1` more, where `k` is the number of atoms whose estimated lengths (a
/// word is one token, other atoms a token per four bytes) sum to at most `need`. When the
/// count never falls as the text grows, this is exactly the longest such prefix, and the
/// whole batch counts more than `target`, so it is also what the full search would find,
/// with the same random draws: the same text, in one or two counts where the search takes
/// four or more. Each count is a full tokenisation: the request feeder's counts were a
/// quarter of the client's CPU at 256 streams (a 16-token prompt took 255,000 instructions
/// to build, 70,000 now: `valgrind --tool=callgrind servebench workload export
/// --input-tokens 16 --requests 2000`, inclusive cost of `Generator::next_request`).
fn pinned(
    prefix: &str,
    atoms: &[String],
    target: usize,
    need: usize,
    count: &dyn Fn(&str) -> usize,
) -> Option<(usize, usize)> {
    let mut sum = 0usize;
    let guess = atoms
        .iter()
        .take_while(|a| {
            let is_word = a.starts_with(' ') && !a[1..].contains(char::is_whitespace);
            sum += if is_word { 1 } else { (a.len() / 4).max(1) };
            sum <= need
        })
        .count();
    if guess + 1 > atoms.len() {
        return None;
    }
    let at_guess = count(&join(prefix, &atoms[..guess]));
    // A space and letters after a word is a piece of its own for every tokenizer that
    // splits at spaces before encoding (the GPT patterns of cl100k and o200k, Llama 3's,
    // SentencePiece's default), so it adds at least one token and an exact guess needs no
    // second count. A vocabulary with tokens across words could add none; the prompt is
    // still exact then, but may be shorter by a word than the old bisection's.
    let word = |i: usize| {
        atoms.get(i).is_some_and(|a: &String| {
            a.len() > 1 && a.starts_with(' ') && a[1..].chars().all(char::is_alphabetic)
        })
    };
    if at_guess == target && guess >= 1 && word(guess - 1) && word(guess) {
        return Some((guess, at_guess));
    }
    let past = at_guess <= target && count(&join(prefix, &atoms[..guess + 1])) > target;
    past.then_some((guess, at_guess))
}

/// The longest prefix of `atoms` whose text counts at most `target`, as (atoms, its count),
/// given the counts of no atom (`base`, at most `target`) and of all (`got`, at least
/// `target`). The first probe is the proportional guess (exact when every atom is one token,
/// as synthetic words are), then the bracket widens from it by doubling steps until the
/// answer is pinned between two probes, then bisects. Whenever the count grows with the text
/// this is the same answer as bisecting over all atoms, in a few counts instead of about
/// log2(atoms).
fn longest_within(
    prefix: &str,
    atoms: &[String],
    target: usize,
    base: usize,
    got: usize,
    count: &dyn Fn(&str) -> usize,
) -> (usize, usize) {
    let n = atoms.len();
    if got <= target {
        return (n, got);
    }
    // Known: count(lo) = lo_count <= target < count(hi).
    let (mut lo, mut lo_count, mut hi) = (0usize, base, n);
    let mut probe = ((target - base) as u128 * n as u128 / (got - base) as u128) as usize;
    let (mut step, mut below, mut above) = (1usize, false, false);
    while hi - lo > 1 {
        let k = match below && above {
            true => lo + (hi - lo) / 2,
            false => probe.clamp(lo + 1, hi - 1),
        };
        let c = count(&join(prefix, &atoms[..k]));
        if c <= target {
            (lo, lo_count, below) = (k, c, true);
            probe = k + step;
        } else {
            (hi, above) = (k, true);
            probe = k.saturating_sub(step);
        }
        step = step.saturating_mul(2);
    }
    (lo, lo_count)
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

    /// The guided search gives the longest prefix a plain bisection over all atoms gives, for
    /// every content kind and many lengths, and a one-token-per-atom text takes two counts.
    #[test]
    fn the_guided_search_agrees_with_bisection_in_fewer_counts() {
        let tok = TiktokenTokenizer::cl100k();
        let src = TextSource::new(&tok);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let calls = std::cell::Cell::new(0usize);
        let count = |s: &str| {
            calls.set(calls.get() + 1);
            tok.count(s) + 3
        };
        for content in [Content::Random, Content::Code, Content::Document] {
            for target in [4usize, 5, 9, 16, 33, 100, 257, 1000] {
                let atoms: Vec<String> = (0..target + target / 4 + 8)
                    .map(|i| src.atom(content, i, &mut rng))
                    .collect();
                let got = count(&join("", &atoms));
                let bisected = {
                    let (mut lo, mut hi) = (0usize, atoms.len());
                    while lo < hi {
                        let mid = (lo + hi).div_ceil(2);
                        if count(&join("", &atoms[..mid])) <= target {
                            lo = mid;
                        } else {
                            hi = mid - 1;
                        }
                    }
                    lo
                };
                let (k, k_count) = longest_within("", &atoms, target, 3, got, &count);
                assert_eq!(k, bisected, "{content:?} {target}");
                assert_eq!(
                    k_count,
                    count(&join("", &atoms[..k])),
                    "{content:?} {target}"
                );
                calls.set(0);
                let quick = pinned("", &atoms, target, target - 3, &count);
                if let Some(found) = quick {
                    assert_eq!(found, (k, k_count), "{content:?} {target}");
                }
                if content == Content::Random {
                    assert_eq!((quick.is_some(), calls.get()), (true, 1), "{target}");
                }
            }
        }
    }

    /// The builder before the guided search, kept to hold the new one to it.
    fn exact_by_bisection(
        src: &TextSource,
        prefix: &str,
        target: usize,
        content: Content,
        rng: &mut ChaCha8Rng,
        count: &dyn Fn(&str) -> usize,
    ) -> String {
        let base = count(prefix);
        if base >= target {
            return prefix.to_owned();
        }
        let need = target - base;
        let mut atoms: Vec<String> = Vec::new();
        let mut estimate = need + need / 4 + 8;
        loop {
            while atoms.len() < estimate {
                atoms.push(src.atom(content, atoms.len(), rng));
            }
            if count(&join(prefix, &atoms)) >= target {
                break;
            }
            estimate *= 2;
        }
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
        let mut text = join(prefix, &atoms);
        for _ in 0..256 {
            let n = count(&text);
            if n == target {
                break;
            }
            if n < target {
                text.push_str(src.word(rng));
            } else if atoms.pop().is_some() {
                text = join(prefix, &atoms);
            } else {
                break;
            }
        }
        text
    }

    /// The same text, and the same random draws after it, as the old bisection, for every
    /// content kind, with and without a shared prefix, over seeds and lengths.
    #[test]
    fn the_builder_makes_the_old_bisections_text() {
        use rand::Rng;
        let tok = TiktokenTokenizer::cl100k();
        let src = TextSource::new(&tok);
        let count = |s: &str| tok.count(s) + 5;
        let mut r = ChaCha8Rng::seed_from_u64(99);
        let prefix = src.exact("", 300, Content::Code, &mut r, &count).unwrap();
        for content in [Content::Random, Content::Code, Content::Document] {
            for target in [6usize, 7, 16, 33, 100, 511, 2000] {
                for seed in 0..4u64 {
                    for pre in ["", prefix.as_str()] {
                        let target = target + count(pre);
                        let (mut a, mut b) = (
                            ChaCha8Rng::seed_from_u64(seed),
                            ChaCha8Rng::seed_from_u64(seed),
                        );
                        let new = src.exact(pre, target, content, &mut a, &count).unwrap();
                        let old = exact_by_bisection(&src, pre, target, content, &mut b, &count);
                        assert_eq!(new, old, "{content:?} {target} seed {seed}");
                        assert_eq!(a.next_u64(), b.next_u64(), "{content:?} {target} {seed}");
                    }
                }
            }
        }
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
