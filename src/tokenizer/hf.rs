//! A Hugging Face `tokenizer.json` (e.g. Llama 3's), loaded from a local file.

use super::{TokenId, Tokenizer, TokenizerError};

/// A tokenizer from a `tokenizer.json`.
pub struct HfTokenizer {
    inner: tokenizers::Tokenizer,
    name: String,
    source: String,
}

impl HfTokenizer {
    pub fn from_file(path: &str) -> Result<Self, TokenizerError> {
        let inner = tokenizers::Tokenizer::from_file(path).map_err(|e| TokenizerError::Load {
            name: path.into(),
            detail: e.to_string(),
        })?;
        let name = std::path::Path::new(path)
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| format!("{}/tokenizer.json", n.to_string_lossy()))
            .unwrap_or_else(|| path.to_owned());
        Ok(Self {
            inner,
            name,
            source: path.to_owned(),
        })
    }
}

impl Tokenizer for HfTokenizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn source(&self) -> &str {
        &self.source
    }

    fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    fn encode(&self, text: &str) -> Vec<TokenId> {
        self.inner
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .unwrap_or_default()
    }

    fn decode(&self, ids: &[TokenId]) -> String {
        self.inner.decode(ids, false).unwrap_or_default()
    }

    fn token_byte_lengths(&self, text: &str) -> Vec<usize> {
        let Ok(enc) = self.inner.encode(text, false) else {
            return Vec::new();
        };
        let mut prev = 0usize;
        enc.get_offsets()
            .iter()
            .map(|&(_, end)| {
                let end = end.max(prev).min(text.len());
                let len = end - prev;
                prev = end;
                len
            })
            .collect()
    }
}
