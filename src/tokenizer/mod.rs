//! Tokenizers behind one interface.
//!
//! Counting tokens is where benchmark tools quietly disagree (draft 4.4): this module makes
//! the choice explicit. The reference tokenizer is `cl100k_base` (the draft's Option B); every
//! report records which tokenizer counted what.

mod hf;
mod pieces;
mod tiktoken;

pub use self::hf::HfTokenizer;
pub use self::tiktoken::TiktokenTokenizer;

use std::sync::Arc;
use thiserror::Error;

/// A token id.
pub type TokenId = u32;

/// Something that turns text into tokens and back.
pub trait Tokenizer: Send + Sync {
    /// Name as reported (e.g. `cl100k_base`).
    fn name(&self) -> &str;
    /// Where it came from (`tiktoken`, a file path, a server URL).
    fn source(&self) -> &str;
    /// Vocabulary size.
    fn vocab_size(&self) -> usize;
    /// Token ids of `text`, no special tokens added.
    fn encode(&self, text: &str) -> Vec<TokenId>;
    /// Text of `ids` (lossy where ids split a UTF-8 character).
    fn decode(&self, ids: &[TokenId]) -> String;
    /// Bytes each token decodes to, in order; they concatenate to the encoded text.
    fn token_byte_lengths(&self, text: &str) -> Vec<usize>;
    /// Number of tokens in `text`.
    fn count(&self, text: &str) -> usize {
        self.encode(text).len()
    }
    /// Tokens of a chat prompt. Reference tokenizers count the message texts only (the
    /// draft's Option B, declared in reports); a server tokenizer applies the chat template.
    fn count_messages(&self, messages: &[(String, String)]) -> usize {
        messages.iter().map(|(_, c)| self.count(c)).sum()
    }
    /// Whether its vocabulary can be scanned id by id (false for a remote tokenizer).
    fn enumerable(&self) -> bool {
        true
    }
}

/// Shared handle to a tokenizer.
pub type SharedTokenizer = Arc<dyn Tokenizer>;

/// Failure to load a tokenizer.
#[derive(Debug, Error)]
pub enum TokenizerError {
    #[error("unknown tokenizer `{0}`: use cl100k_base, o200k_base, server, or a path to a tokenizer.json")]
    Unknown(String),
    #[error("could not load tokenizer {name}: {detail}")]
    Load { name: String, detail: String },
}

/// Loads a tokenizer by name: `cl100k_base`, `o200k_base`, or a `tokenizer.json` path.
pub fn load(name: &str) -> Result<SharedTokenizer, TokenizerError> {
    match name {
        "cl100k_base" | "cl100k" => Ok(Arc::new(TiktokenTokenizer::cl100k())),
        "o200k_base" | "o200k" => Ok(Arc::new(TiktokenTokenizer::o200k())),
        path if path.ends_with(".json") => Ok(Arc::new(HfTokenizer::from_file(path)?)),
        other => Err(TokenizerError::Unknown(other.to_owned())),
    }
}

/// The draft 4.4.2 counting option a tokenizer stands for: A (the system's own) or B (a
/// declared reference).
pub fn counting_option(t: &dyn Tokenizer) -> &'static str {
    if t.enumerable() {
        "B"
    } else {
        "A"
    }
}

/// The draft's reference tokenizer (`cl100k_base`).
pub fn reference() -> SharedTokenizer {
    Arc::new(TiktokenTokenizer::cl100k())
}
