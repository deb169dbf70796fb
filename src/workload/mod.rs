//! What is sent: a reproducible sequence of requests from a named workload and a seed.
//!
//! Pure: the same spec, seed and tokenizer give the same requests, byte for byte, on every
//! machine. Lengths are in tokens of the workload's tokenizer (cl100k_base by default, the
//! draft's Option B) and every prompt is built to its exact target length.

pub mod lengths;
pub mod text;

use crate::tokenizer::Tokenizer;
use lengths::LengthDist;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use text::PromptBuilder;

/// A named or custom workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum WorkloadSpec {
    /// Fixed input and output lengths (`--input-tokens`, `--output-tokens`).
    Fixed {
        input_tokens: u32,
        output_tokens: u32,
    },
    /// Draft A.1: input Uniform(128, 512), output Uniform(64, 256), random tokens.
    SyntheticUniform,
    /// Draft A.2: input LogNormal(5.5, 1.0) in [32, 4096], output LogNormal(4.5, 1.2) in [16, 2048].
    SyntheticSkewed,
}

impl WorkloadSpec {
    /// Looks up a reference workload by its Appendix A name.
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "synthetic-uniform" => Some(Self::SyntheticUniform),
            "synthetic-skewed" => Some(Self::SyntheticSkewed),
            _ => None,
        }
    }

    /// Names `by_name` knows.
    pub const NAMES: [&'static str; 2] = ["synthetic-uniform", "synthetic-skewed"];

    /// Input and output length distributions.
    pub fn lengths(&self) -> (LengthDist, LengthDist) {
        match *self {
            WorkloadSpec::Fixed {
                input_tokens,
                output_tokens,
            } => (
                LengthDist::Fixed(input_tokens),
                LengthDist::Fixed(output_tokens),
            ),
            WorkloadSpec::SyntheticUniform => (
                LengthDist::Uniform { min: 128, max: 512 },
                LengthDist::Uniform { min: 64, max: 256 },
            ),
            WorkloadSpec::SyntheticSkewed => (
                LengthDist::LogNormal {
                    mu: 5.5,
                    sigma: 1.0,
                    min: 32,
                    max: 4096,
                },
                LengthDist::LogNormal {
                    mu: 4.5,
                    sigma: 1.2,
                    min: 16,
                    max: 2048,
                },
            ),
        }
    }

    /// A short human description.
    pub fn describe(&self) -> String {
        let (i, o) = self.lengths();
        match self {
            WorkloadSpec::Fixed { .. } => format!("fixed lengths: input {i}, output {o}"),
            WorkloadSpec::SyntheticUniform => {
                format!("synthetic-uniform (draft A.1): input {i}, output {o}")
            }
            WorkloadSpec::SyntheticSkewed => {
                format!("synthetic-skewed (draft A.2): input {i}, output {o}")
            }
        }
    }
}

/// One request of the sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestSpec {
    /// Position in the sequence.
    pub index: u64,
    /// Chat messages: (role, content).
    pub messages: Vec<(String, String)>,
    /// Prompt tokens by the workload's tokenizer (verified by re-encoding).
    pub input_tokens: u32,
    pub max_tokens: u32,
    pub class: Option<String>,
}

/// Generates the request sequence of a workload.
pub struct Generator {
    input: LengthDist,
    output: LengthDist,
    rng: ChaCha8Rng,
    prompts: PromptBuilder,
    next: u64,
}

impl Generator {
    pub fn new(spec: &WorkloadSpec, seed: u64, tokenizer: &dyn Tokenizer) -> Self {
        let (input, output) = spec.lengths();
        Self {
            input,
            output,
            rng: ChaCha8Rng::seed_from_u64(seed),
            prompts: PromptBuilder::new(tokenizer),
            next: 0,
        }
    }

    /// The next request.
    pub fn next_request(&mut self, tokenizer: &dyn Tokenizer) -> RequestSpec {
        let input_len = self.input.sample(&mut self.rng);
        let max_tokens = self.output.sample(&mut self.rng);
        let (content, input_tokens) = self.prompts.exact(tokenizer, input_len, &mut self.rng);
        let index = self.next;
        self.next += 1;
        RequestSpec {
            index,
            messages: vec![("user".to_owned(), content)],
            input_tokens,
            max_tokens,
            class: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::TiktokenTokenizer;

    #[test]
    fn same_seed_same_requests_with_exact_lengths() {
        let tok = TiktokenTokenizer::cl100k();
        let spec = WorkloadSpec::SyntheticUniform;
        let mut a = Generator::new(&spec, 42, &tok);
        let mut b = Generator::new(&spec, 42, &tok);
        for _ in 0..20 {
            let (x, y) = (a.next_request(&tok), b.next_request(&tok));
            assert_eq!(x, y);
            assert!((128..=512).contains(&x.input_tokens));
            assert!((64..=256).contains(&x.max_tokens));
            assert_eq!(tok.count(&x.messages[0].1) as u32, x.input_tokens);
        }
        let mut c = Generator::new(&spec, 43, &tok);
        assert_ne!(
            c.next_request(&tok),
            Generator::new(&spec, 42, &tok).next_request(&tok)
        );
    }
}
