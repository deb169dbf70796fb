//! The request generator: draws each request's lengths, class and content from the
//! workload's seeded streams, and builds prompts to their exact token counts.

use super::datasets::{Dataset, PromptRecord, TraceRecord};
use super::lengths::LengthDist;
use super::text::{TextError, TextSource};
use super::{Content, RequestSpec, Scenario, WorkloadError, TRACE_BLOCK_TOKENS};
use crate::tokenizer::Tokenizer;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::Arc;

mod agent;
mod items;
mod media;

/// Generates the request sequence of a workload.
pub struct Generator {
    scenario: Scenario,
    seed: u64,
    /// Lengths, classes, sessions' shapes: the workload's structure, from the seed (and the
    /// request salt) alone, so every prompt salt gives the same lengths.
    rng: ChaCha8Rng,
    /// The words of each request's own text, from the seed and the prompt salt.
    text_rng: ChaCha8Rng,
    /// Mixed into the shared content (system prompt, prefix groups, trace blocks, tool
    /// definitions) and the requests' own text; 0: the seed's own prompts.
    prompt_salt: u64,
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
    /// Where the image and audio folders' files are used up to.
    folders: media::FolderCursor,
    /// Agent sessions: each tool's definition, made once.
    tools: HashMap<String, crate::workload::agent::ToolDef>,
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
            Some(Dataset::Agent(t)) if t.is_empty() => return Err(WorkloadError::EmptyDataset),
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
            text_rng: text_rng(seed ^ scenario.request_salt, 0),
            prompt_salt: 0,
            source: TextSource::new(tokenizer),
            dataset,
            order,
            system_text: None,
            groups: Vec::new(),
            zipf_cdf,
            trace_blocks: HashMap::new(),
            next: 0,
            sessions: 0,
            folders: Default::default(),
            tools: HashMap::new(),
        })
    }

    /// The same workload with other words: every prompt's text (its own and the shared
    /// content) is drawn anew from `salt`, while lengths, classes, sessions and arrivals
    /// stay those of the seed. A run's prompts are then its own, so a server's prefix
    /// cache cannot answer them from an earlier run or level (`RunConfig::prompt_salt`);
    /// the same salt gives the same prompts again, byte for byte.
    pub fn with_prompt_salt(mut self, salt: u64) -> Self {
        self.prompt_salt = salt;
        self.text_rng = text_rng(self.seed ^ self.scenario.request_salt, salt);
        self
    }

    /// The key of the shared content's streams: the seed, mixed with the prompt salt.
    fn shared_key(&self) -> u64 {
        match self.prompt_salt {
            0 => self.seed,
            salt => self.seed ^ splitmix64(salt),
        }
    }

    /// A ChaCha8 stream for a named piece of shared content, independent of request order.
    fn stream(&self, tag: u64) -> ChaCha8Rng {
        let mut r = ChaCha8Rng::seed_from_u64(self.shared_key());
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
            // The context's length is the seed's (structure); its words are the salt's.
            let mut lengths = ChaCha8Rng::seed_from_u64(self.seed);
            lengths.set_stream(100 + i);
            let len = g.tokens.sample(&mut lengths) as usize;
            let mut r = self.stream(100 + i);
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
        if let Some(mut agent) = self.agent_session(tokenizer)? {
            self.attach_media(&mut agent);
            return Ok(agent);
        }
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
                .exact("", own, self.scenario.content, &mut self.text_rng, &|s| {
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
                media: Vec::new(),
                session_steps: turns,
                branch: 0,
                tool_ms: 0.0,
                agent: None,
            });
            // The answer joins the history as synthetic text of the requested length.
            let answer = self
                .source
                .exact(
                    "",
                    max_tokens as usize,
                    Content::Random,
                    &mut self.text_rng,
                    &|s| tokenizer.count(s),
                )
                .map_err(text_err)?;
            history.push(("assistant".into(), answer));
        }
        self.attach_media(&mut out);
        Ok(out)
    }

    /// The next request, with the workload's images and audio.
    pub fn next_request(
        &mut self,
        tokenizer: &dyn Tokenizer,
    ) -> Result<RequestSpec, WorkloadError> {
        let mut spec = self.next_text_request(tokenizer)?;
        self.attach_media(std::slice::from_mut(&mut spec));
        Ok(spec)
    }

    /// The next request's text (and a dataset record's own media).
    fn next_text_request(
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
        if let Some(items) = self.scenario.items.clone() {
            return self.items_request(index, &items, &input_dist, class_name, tokenizer);
        }
        let system = self.system_prompt(tokenizer).map_err(text_err)?;

        match self.dataset.clone().as_deref() {
            Some(Dataset::Prompts(records)) if self.scenario.content == Content::Dataset => {
                let r: &PromptRecord = &records[self.order[(index as usize) % self.order.len()]];
                Ok(self.prompt_request(r, index, &system, &output_dist, class_name, tokenizer))
            }
            Some(Dataset::Trace(records)) => {
                self.trace_request(records, index, &system, class_name, tokenizer)
            }
            _ => self.synthetic_request(
                index,
                &system,
                &input_dist,
                &output_dist,
                class_name,
                tokenizer,
            ),
        }
    }

    /// Request `index` from a dataset's prompt `r`: its messages (after the system prompt),
    /// its output length (else its answer's, else drawn from `output_dist`), its class.
    fn prompt_request(
        &mut self,
        r: &PromptRecord,
        index: u64,
        system: &Option<String>,
        output_dist: &LengthDist,
        class_name: Option<String>,
        tokenizer: &dyn Tokenizer,
    ) -> RequestSpec {
        let messages = with_system(system, r.messages.clone());
        let output = r
            .output_tokens
            .or_else(|| r.answer.as_deref().map(|a| tokenizer.count(a) as u32))
            .unwrap_or_else(|| output_dist.sample(&mut self.rng))
            .max(1);
        RequestSpec {
            index,
            input_tokens: tokenizer.count_messages(&messages) as u32,
            media: media::named_parts(&r.media, &messages),
            messages,
            max_tokens: output,
            class: r.class.clone().or(class_name),
            arrival_ms: None,
            session: None,
            turn: 0,
            think_ms: 0.0,
            session_steps: 0,
            branch: 0,
            tool_ms: 0.0,
            agent: None,
        }
    }

    /// Request `index` replayed from a trace: its lengths and arrival time, its prompt
    /// sharing the trace's hashed blocks.
    fn trace_request(
        &mut self,
        records: &[TraceRecord],
        index: u64,
        system: &Option<String>,
        class_name: Option<String>,
        tokenizer: &dyn Tokenizer,
    ) -> Result<RequestSpec, WorkloadError> {
        let text_err = |source| WorkloadError::Text { index, source };
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
                system,
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
            media: Vec::new(),
            session_steps: 0,
            branch: 0,
            tool_ms: 0.0,
            agent: None,
        })
    }

    /// Request `index` of the workload's own content: lengths drawn from `input_dist` and
    /// `output_dist`, after its prefix group's shared context, if any.
    fn synthetic_request(
        &mut self,
        index: u64,
        system: &Option<String>,
        input_dist: &LengthDist,
        output_dist: &LengthDist,
        class_name: Option<String>,
        tokenizer: &dyn Tokenizer,
    ) -> Result<RequestSpec, WorkloadError> {
        let text_err = |source| WorkloadError::Text { index, source };
        let own = input_dist.sample(&mut self.rng) as usize;
        let max_tokens = output_dist.sample(&mut self.rng);
        let context = self
            .group_context(tokenizer)
            .map_err(text_err)?
            .unwrap_or_default();
        let fixed = match context.is_empty() && system.is_none() {
            true => 0,
            false => tokenizer
                .count_messages(&with_system(system, vec![("user".into(), context.clone())])),
        };
        let target = fixed + own;
        let messages = if self.scenario.content == Content::Document {
            self.document(target, system, tokenizer).map_err(text_err)?
        } else {
            self.build(&context, target, self.scenario.content, system, tokenizer)
                .map_err(text_err)?
        };
        Ok(RequestSpec {
            index,
            // `build` and `document` return messages that count exactly `target`.
            input_tokens: target as u32,
            messages,
            max_tokens,
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
            .exact(prefix, target, content, &mut self.text_rng, &|u| {
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
            &mut self.text_rng,
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
            .exact("", target, Content::Document, &mut self.text_rng, &|d| {
                tokenizer.count_messages(&wrap(d))
            })?;
        Ok(wrap(&doc))
    }
}

/// Key of the text streams, so they never meet the structure's (`seed ^ request_salt`).
const TEXT_KEY: u64 = 0x7465_7874_5f77_6f72;

/// The stream of a request's own words: keyed by `key` (the seed and request salt), on the
/// prompt salt's stream.
fn text_rng(key: u64, prompt_salt: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(splitmix64(key ^ TEXT_KEY));
    r.set_stream(prompt_salt);
    r
}

/// SplitMix64's finaliser: spreads a salt's bits over the whole word, so nearby salts give
/// unrelated keys.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The system prompt (if any), then `user`'s messages.
fn with_system(system: &Option<String>, user: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut m = Vec::with_capacity(user.len() + 1);
    if let Some(s) = system {
        m.push(("system".to_owned(), s.clone()));
    }
    m.extend(user);
    m
}
