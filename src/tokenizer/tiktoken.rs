//! OpenAI's BPE encodings through `tiktoken-rs` (embedded ranks, works offline).

use super::{TokenId, Tokenizer};
use tiktoken_rs::CoreBPE;

/// A tiktoken encoding.
pub struct TiktokenTokenizer {
    bpe: &'static CoreBPE,
    name: &'static str,
    vocab_size: usize,
}

impl TiktokenTokenizer {
    /// `cl100k_base` (GPT-4; the draft's reference tokenizer).
    pub fn cl100k() -> Self {
        Self {
            bpe: tiktoken_rs::cl100k_base_singleton(),
            name: "cl100k_base",
            vocab_size: 100_277,
        }
    }

    /// `o200k_base` (GPT-4o).
    pub fn o200k() -> Self {
        Self {
            bpe: tiktoken_rs::o200k_base_singleton(),
            name: "o200k_base",
            vocab_size: 200_019,
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
}
