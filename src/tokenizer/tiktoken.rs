//! OpenAI's BPE encodings through `tiktoken-rs` (embedded ranks, works offline).
//!
//! Counting `cl100k_base` tokens of ASCII text takes a faster road with the same answer:
//! the hand-written pre-tokenizer of [`super::pieces`] cuts the pieces, and each piece's
//! count comes from a per-thread cache filled by tiktoken itself. Synthetic prompts are
//! made of a few thousand words, so nearly every piece is a cache hit: the counts behind a
//! 16-token prompt cost the request feeder about 3,500 instructions instead of about
//! 51,000 (callgrind's instructions in the feeder thread, per request, over a 1,000-request
//! run against `servebench sim`).

use super::pieces::piece_end;
use super::{TokenId, Tokenizer};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tiktoken_rs::CoreBPE;

/// A tiktoken encoding.
pub struct TiktokenTokenizer {
    bpe: &'static CoreBPE,
    name: &'static str,
    vocab_size: usize,
    /// Whether ASCII text is counted through [`count_ascii`] (`cl100k_base` only: its
    /// pattern is the one [`super::pieces`] follows).
    ascii_pieces: bool,
}

/// Pieces whose count the cache keeps per thread, at most (a piece is a word or a run of
/// symbols; synthetic text has a few thousand distinct ones).
const CACHED_PIECES: usize = 1 << 16;

/// Longest piece the cache keeps, bytes: longer ones (a run of `=`, a long identifier in a
/// dataset's text) are counted each time, so the cache stays a few megabytes at most.
const CACHED_PIECE_BYTES: usize = 64;

/// One fast count in this many is checked against tiktoken's whole encoding.
const CHECK_EVERY: u64 = 1024;

/// Set when a checked count disagreed: every later count then goes through tiktoken.
static ASCII_PIECES_OFF: AtomicBool = AtomicBool::new(false);

/// Fast counts made so far (the sampling clock of the check).
static ASCII_COUNTS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Token counts of the `cl100k_base` pieces this thread has met.
    static CL100K_PIECES: RefCell<FxHashMap<Box<[u8]>, u32>> = RefCell::default();
}

/// The `cl100k_base` token count of ASCII `text`, piece by piece; None when `text` is not
/// ASCII or a new piece would not be cut the same way on its own (then only tiktoken's
/// whole encoding is sure). A piece met before costs a hash lookup; a new one is encoded
/// by tiktoken alone, which gives its tokens exactly because the pattern cuts it into
/// itself.
fn count_ascii(bpe: &CoreBPE, text: &str) -> Option<usize> {
    let b = text.as_bytes();
    if !b.is_ascii() {
        return None;
    }
    CL100K_PIECES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let (mut i, mut total) = (0, 0usize);
        while i < b.len() {
            let end = piece_end(b, i);
            let piece = &b[i..end];
            total += match cache.get(piece) {
                Some(&n) => n as usize,
                None => {
                    if piece_end(piece, 0) != piece.len() {
                        return None;
                    }
                    let n = bpe.encode_ordinary(&text[i..end]).len();
                    if cache.len() < CACHED_PIECES && piece.len() <= CACHED_PIECE_BYTES {
                        cache.insert(piece.into(), n as u32);
                    }
                    n
                }
            };
            i = end;
        }
        Some(total)
    })
}

impl TiktokenTokenizer {
    /// `cl100k_base` (GPT-4; the draft's reference tokenizer).
    pub fn cl100k() -> Self {
        Self {
            bpe: tiktoken_rs::cl100k_base_singleton(),
            name: "cl100k_base",
            vocab_size: 100_277,
            ascii_pieces: true,
        }
    }

    /// `o200k_base` (GPT-4o).
    pub fn o200k() -> Self {
        Self {
            bpe: tiktoken_rs::o200k_base_singleton(),
            name: "o200k_base",
            vocab_size: 200_019,
            ascii_pieces: false,
        }
    }
}

impl Tokenizer for TiktokenTokenizer {
    fn name(&self) -> &str {
        self.name
    }

    fn source(&self) -> &str {
        "tiktoken"
    }

    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    fn encode(&self, text: &str) -> Vec<TokenId> {
        self.bpe.encode_ordinary(text)
    }

    fn count(&self, text: &str) -> usize {
        if !self.ascii_pieces || ASCII_PIECES_OFF.load(Ordering::Relaxed) {
            return self.encode(text).len();
        }
        let Some(fast) = count_ascii(self.bpe, text) else {
            return self.encode(text).len();
        };
        // A canary: the tests hold the pre-tokenizer to the pattern, and one count in 1,024
        // is also encoded whole; a disagreement turns the fast road off for the rest of the
        // process (counts made before it are not corrected) and says so.
        if ASCII_COUNTS
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(CHECK_EVERY)
        {
            let whole = self.encode(text).len();
            if whole != fast {
                ASCII_PIECES_OFF.store(true, Ordering::Relaxed);
                eprintln!(
                    "warning: the fast cl100k_base token counter gave {fast} tokens where tiktoken gives {whole} for a {}-byte text; every count now goes through tiktoken (please report this text)",
                    text.len()
                );
                return whole;
            }
        }
        fast
    }

    fn decode(&self, ids: &[TokenId]) -> String {
        match self.bpe.decode_bytes(ids) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(_) => String::new(),
        }
    }

    fn token_byte_lengths(&self, text: &str) -> Vec<usize> {
        self.encode(text)
            .iter()
            .map(|id| {
                self.bpe
                    .decode_bytes(std::slice::from_ref(id))
                    .map(|b| b.len())
                    .unwrap_or(0)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cl100k_counts_and_byte_lengths_cover_the_text() {
        let t = TiktokenTokenizer::cl100k();
        let text = "Hello, world! こんにちは 🎉";
        let ids = t.encode(text);
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.decode(&ids), text);
        let lens = t.token_byte_lengths(text);
        assert_eq!(lens.len(), ids.len());
        assert_eq!(lens.iter().sum::<usize>(), text.len());
    }

    /// The piece-by-piece count is tiktoken's count: on the synthetic texts of every
    /// content kind, on code and prose with line breaks, contractions and numbers, and on
    /// text it must leave to tiktoken (non-ASCII).
    #[test]
    fn the_fast_count_is_tiktokens_count() {
        use crate::workload::text::TextSource;
        use crate::workload::Content;
        use rand::SeedableRng;
        let t = TiktokenTokenizer::cl100k();
        let whole = |s: &str| t.encode(s).len();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let src = TextSource::new(&t);
        let mut texts: Vec<String> = Vec::new();
        for content in [Content::Random, Content::Code, Content::Document] {
            for target in [1, 2, 16, 100, 700] {
                texts.push(src.exact("", target, content, &mut rng, &whole).unwrap());
            }
        }
        texts.extend(
            [
                "It's 2026; we'll see 1234567 tokens...\r\n\r\n   indented\tand  spaced  ",
                "def f(x):\n    return x**2  # DON'T\n\n\n",
                "    ",
                "a\x0Bb\x0Cc\x1Fd",
                "Hello, world! こんにちは 🎉",
                "",
            ]
            .map(String::from),
        );
        for text in &texts {
            assert_eq!(t.count(text), whole(text), "{text:?}");
            // Twice: the second count reads every piece from the cache.
            assert_eq!(t.count(text), whole(text), "{text:?}");
        }
        assert_eq!(count_ascii(t.bpe, "こんにちは"), None);
        // Any ASCII at all, against tiktoken itself (not only against a copy of its
        // pattern, as tokenizer::pieces's tests are).
        use rand::RngExt;
        let words = [
            " hello", "'re", "'LL", "  ", "\r\n", "2026", " ...", "\t", "===",
        ];
        for _ in 0..2000 {
            let mut s = String::new();
            for _ in 0..rng.random_range(1..30) {
                if rng.random_bool(0.4) {
                    s.push_str(words[rng.random_range(0..words.len())]);
                } else {
                    s.push(rng.random_range(0u8..128) as char);
                }
            }
            assert_eq!(count_ascii(t.bpe, &s), Some(whole(&s)), "{s:?}");
        }
        assert!(!ASCII_PIECES_OFF.load(Ordering::Relaxed));
    }
}
