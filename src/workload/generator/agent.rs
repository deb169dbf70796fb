//! Agent sessions in the generator: the next session, drawn (`[agent]`) or read from an
//! agent session dataset, planned into its requests by `workload::agent::plan`.

use super::Generator;
use crate::tokenizer::Tokenizer;
use crate::workload::agent::plan::{plan, PlanInputs};
use crate::workload::agent::trace::AgentTrace;
use crate::workload::agent::ToolDef;
use crate::workload::datasets::Dataset;
use crate::workload::{fingerprint, Content, RequestSpec, WorkloadError};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Tokens of a tool's description when the workload does not say (a recorded trace).
const DEFAULT_TOOL_TOKENS: u32 = 64;

impl Generator {
    /// The next agent session, or `None` when the workload has none.
    pub(super) fn agent_session(
        &mut self,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Option<Vec<RequestSpec>>, WorkloadError> {
        let trace = match (&self.scenario.agent, self.dataset.as_deref()) {
            (_, Some(Dataset::Agent(traces))) => {
                if traces.is_empty() {
                    return Err(WorkloadError::EmptyDataset);
                }
                traces[(self.sessions as usize) % traces.len()].clone()
            }
            (Some(cfg), _) => cfg.draw(&mut self.rng, &self.scenario.input, &self.scenario.output),
            (None, _) => return Ok(None),
        };
        let session = self.sessions;
        self.sessions += 1;
        let first = self.next;
        let text_err = |(index, source)| WorkloadError::Text { index, source };
        let system =
            self.agent_system(&trace, tokenizer)
                .map_err(|source| WorkloadError::Text {
                    index: first,
                    source,
                })?;
        let content = match self.scenario.content {
            Content::Dataset => Content::Random,
            c => c,
        };
        let tool_tokens = self
            .scenario
            .agent
            .as_ref()
            .map_or(DEFAULT_TOOL_TOKENS, |a| a.tool_tokens);
        let shared_key = self.shared_key();
        let (source, rng, cache) = (&self.source, &mut self.text_rng, &mut self.tools);
        let count = |s: &str| tokenizer.count(s);
        let requests = plan(
            &trace,
            session,
            first,
            PlanInputs {
                tokenizer,
                text: &mut |n| source.exact("", n, content, rng, &count),
                tool: &mut |name| {
                    if let Some(t) = cache.get(name) {
                        return Ok(t.clone());
                    }
                    // Each tool's description comes from a stream of its own (seed and
                    // name), so every session offers the same definitions: a shared prefix.
                    let mut r = ChaCha8Rng::seed_from_u64(shared_key);
                    r.set_stream(fingerprint(name.as_bytes()));
                    let description =
                        source.exact("", tool_tokens as usize, Content::Random, &mut r, &count)?;
                    let def = ToolDef {
                        name: name.to_owned(),
                        description,
                        parameters: serde_json::json!({
                            "type": "object",
                            "properties": {"query": {"type": "string"}},
                            "required": ["query"],
                        }),
                    };
                    cache.insert(name.to_owned(), def.clone());
                    Ok(def)
                },
                system,
            },
        )
        .map_err(text_err)?;
        self.next += requests.len() as u64;
        Ok(Some(requests))
    }

    /// The session's system prompt: the trace's own length (shared by every session of that
    /// length), else the workload's shared system prompt.
    fn agent_system(
        &mut self,
        trace: &AgentTrace,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Option<String>, crate::workload::text::TextError> {
        if trace.system_tokens == 0 {
            return self.system_prompt(tokenizer);
        }
        let mut r = ChaCha8Rng::seed_from_u64(self.shared_key());
        // A tag clear of the other shared streams (1, 100 + group, 1e6 + trace block).
        r.set_stream((1 << 48) + u64::from(trace.system_tokens));
        self.source
            .exact(
                "",
                trace.system_tokens as usize,
                Content::Random,
                &mut r,
                &|s| tokenizer.count(s),
            )
            .map(Some)
    }
}
