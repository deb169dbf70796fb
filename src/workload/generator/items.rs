//! Requests of the non-generative APIs (embeddings, rerank): a drawn number of independent
//! texts, each of a drawn length, instead of one prompt. The texts travel as the request's
//! messages; the API's body builder makes them `input` (embeddings) or a query and
//! `documents` (rerank).

use super::Generator;
use crate::tokenizer::Tokenizer;
use crate::workload::lengths::LengthDist;
use crate::workload::{Content, RequestSpec, WorkloadError};

impl Generator {
    /// Request `index` of an items workload: the item count from `items`, then each text's
    /// length from `input_dist` and its words, all from the request stream (seeded). A
    /// rerank workload (`items_query`) draws its query first, as one more text. Its input
    /// tokens are the texts' own counts, summed (no chat template: nothing is a message).
    pub(super) fn items_request(
        &mut self,
        index: u64,
        items: &LengthDist,
        input_dist: &LengthDist,
        class_name: Option<String>,
        tokenizer: &dyn Tokenizer,
    ) -> Result<RequestSpec, WorkloadError> {
        let text_err = |source| WorkloadError::Text { index, source };
        let n = items.sample(&mut self.rng) + u32::from(self.scenario.items_query);
        let mut messages = Vec::with_capacity(n as usize);
        let mut input_tokens = 0u32;
        for _ in 0..n {
            let len = input_dist.sample(&mut self.rng) as usize;
            let text = self
                .source
                .exact("", len, Content::Random, &mut self.text_rng, &|s| {
                    tokenizer.count(s)
                })
                .map_err(text_err)?;
            input_tokens += tokenizer.count(&text) as u32;
            messages.push(("user".to_owned(), text));
        }
        Ok(RequestSpec {
            index,
            messages,
            input_tokens,
            max_tokens: 0,
            class: class_name,
            arrival_ms: None,
            session: None,
            turn: 0,
            think_ms: 0.0,
            media: Vec::new(),
            session_steps: 0,
            branch: 0,
            tool_ms: 0.0,
            agent: None,
        })
    }
}
