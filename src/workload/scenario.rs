//! A workload as data: length distributions, content, shared prefixes, request classes.
//!
//! The five reference workloads of the draft's Appendix A (and the fairness mix of 5.6) are
//! named constructors of this one type; custom workloads are TOML files of the same fields.

use super::lengths::LengthDist;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// What prompt text is made of.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    /// Random words from the benign word list, one token each ("random token sequences").
    #[default]
    Random,
    /// Source-code-like lines (functions, calls, returns) built from benign words.
    Code,
    /// Prose sentences followed by a question about them (`question_tokens` long).
    Document,
    /// Prompts and output lengths come from `--dataset` (ShareGPT, JSONL, or a trace).
    Dataset,
}

/// A prefix of `tokens` tokens shared by a `share` of requests (e.g. a system prompt).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SharedPrefix {
    pub tokens: u32,
    pub share: f64,
}

/// `count` shared contexts (lengths from `tokens`); a `share` of requests start with one of
/// them, picked by Zipf popularity with exponent `zipf_s` (context 1 most popular).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrefixGroups {
    pub count: u32,
    pub tokens: LengthDist,
    pub share: f64,
    #[serde(default = "one")]
    pub zipf_s: f64,
}

fn one() -> f64 {
    1.0
}

/// Multi-turn sessions: each session has `turns` requests; every turn carries the whole
/// history (earlier user messages and synthetic answers of their output lengths) and is sent
/// `think_time_ms` after the previous turn's answer ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sessions {
    pub turns: LengthDist,
    pub think_time_ms: LengthDist,
}

/// A request class (for fairness): drawn with probability ∝ `weight`; its lengths replace
/// the workload's where given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Class {
    pub name: String,
    pub weight: f64,
    #[serde(default)]
    pub input: Option<LengthDist>,
    #[serde(default)]
    pub output: Option<LengthDist>,
    /// Request-body fields for this class's requests (e.g. `priority`, `temperature`),
    /// applied over the scenario's `body` and the command line's `--extra-body`.
    #[serde(default)]
    pub body: serde_json::Map<String, serde_json::Value>,
}

/// A complete workload specification (draft 4.3.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Prompt length, including any shared prefix and system prompt (by the workload's tokenizer).
    pub input: LengthDist,
    /// Output length (`max_tokens`).
    pub output: LengthDist,
    #[serde(default)]
    pub content: Content,
    /// Document content: length of the question after the document.
    #[serde(default = "question_tokens")]
    pub question_tokens: u32,
    #[serde(default)]
    pub system_prompt: Option<SharedPrefix>,
    #[serde(default)]
    pub prefix_groups: Option<PrefixGroups>,
    #[serde(default)]
    pub classes: Vec<Class>,
    #[serde(default)]
    pub sessions: Option<Sessions>,
    /// Agent sessions with tool calls (`[agent]`; docs/workloads.md, "Agent sessions").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<super::agent::synthetic::AgentConfig>,
    /// Request-body fields for every request of the workload.
    #[serde(default)]
    pub body: serde_json::Map<String, serde_json::Value>,
    /// Non-generative APIs (embeddings, rerank): items per request (`--items-per-request`),
    /// each an independent text of `input` tokens. `None` for the generative APIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<LengthDist>,
    /// Rerank: one more `input`-sized text, the query, goes before the items.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub items_query: bool,
    /// Images in every request (`--images-per-request`, `--image-dir`; docs/workloads.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<super::media::ImageSpec>,
    /// Audio clips in every request (`--audio-per-request`, `--audio-dir`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<super::media::AudioSpec>,
    /// Draws other requests from the same shared content: the shared contexts and system
    /// prompt stay those of the seed, while which requests start with them, their own text
    /// and their lengths come from the seed mixed with this salt (0: the seed's own
    /// requests). The prefix-cache test's warm level sets it, so that it sends new requests
    /// that share the cold level's prefixes instead of replaying its prompts. Not written
    /// to `run.json` (nor read from a scenario file): that level's workload description
    /// says so.
    #[serde(skip)]
    pub request_salt: u64,
    /// The workload profile this scenario stands for (`--profile`, or a scenario file's
    /// `[profile]` table): the dimensions its lengths and sharing do not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::profile::Profile>,
}

fn question_tokens() -> u32 {
    100
}

#[derive(Debug, Error)]
pub enum ScenarioError {
    #[error("unknown workload `{0}`: use synthetic-uniform, synthetic-skewed, conversation, code-completion, long-context, fairness-mix, multi-turn-chat, agentic, or a .toml scenario file")]
    Unknown(String),
    #[error("invalid scenario {path}: {detail}")]
    Invalid { path: String, detail: String },
}

impl Scenario {
    /// Names of the built-in workloads.
    pub const NAMES: [&'static str; 8] = [
        "synthetic-uniform",
        "synthetic-skewed",
        "conversation",
        "code-completion",
        "long-context",
        "fairness-mix",
        "multi-turn-chat",
        "agentic",
    ];

    fn plain(name: &str, description: &str, input: LengthDist, output: LengthDist) -> Self {
        Scenario {
            name: name.into(),
            description: description.into(),
            input,
            output,
            content: Content::Random,
            question_tokens: 100,
            system_prompt: None,
            prefix_groups: None,
            classes: Vec::new(),
            sessions: None,
            agent: None,
            body: Default::default(),
            items: None,
            items_query: false,
            images: None,
            audio: None,
            request_salt: 0,
            profile: None,
        }
    }

    /// Whether the workload reuses prompt prefixes on purpose, so that a server's prefix
    /// cache is expected to serve part of its prompts: a system prompt (of synthetic prompts), prefix groups,
    /// multi-turn or agent sessions, a trace's shared blocks, or a cache test's warm level
    /// (new requests sharing the cold level's prefixes).
    pub fn expects_cached_prompts(&self) -> bool {
        // A dataset's prompts are the same in every run: its system prompt does not make a
        // replay of them expected.
        (self.system_prompt.is_some() && self.content != Content::Dataset)
            || self.prefix_groups.is_some()
            || self.sessions.is_some()
            || self.agent.is_some()
            || self.request_salt != 0
    }

    /// Fixed input and output lengths.
    pub fn fixed(input_tokens: u32, output_tokens: u32) -> Self {
        Self::plain(
            "fixed",
            "fixed input and output lengths, random benign words",
            LengthDist::fixed(input_tokens),
            LengthDist::fixed(output_tokens),
        )
    }

    /// A built-in workload by name.
    pub fn named(name: &str) -> Result<Self, ScenarioError> {
        Ok(match name {
            "synthetic-uniform" => Self::plain(
                name,
                "draft A.1: random tokens, input Uniform(128, 512), output Uniform(64, 256), no prefix sharing",
                LengthDist::Uniform { min: 128, max: 512 },
                LengthDist::Uniform { min: 64, max: 256 },
            ),
            "synthetic-skewed" => Self::plain(
                name,
                "draft A.2: random tokens, input LogNormal(5.5, 1.0) in [32, 4096], output LogNormal(4.5, 1.2) in [16, 2048]",
                LengthDist::LogNormal { mu: 5.5, sigma: 1.0, min: 32, max: 4096 },
                LengthDist::LogNormal { mu: 4.5, sigma: 1.2, min: 16, max: 2048 },
            ),
            "conversation" => Scenario {
                content: Content::Dataset,
                system_prompt: Some(SharedPrefix { tokens: 200, share: 0.5 }),
                ..Self::plain(
                    name,
                    "draft A.3: ShareGPT first human turn as the prompt, its first answer's length as max_tokens; 50 % share a 200-token system prompt",
                    LengthDist::fixed(1),
                    LengthDist::fixed(1),
                )
            },
            "code-completion" => Scenario {
                content: Content::Code,
                prefix_groups: Some(PrefixGroups {
                    count: 10,
                    tokens: LengthDist::Uniform { min: 512, max: 1024 },
                    share: 0.8,
                    zipf_s: 1.5,
                }),
                ..Self::plain(
                    name,
                    "draft A.4: code; 10 repository contexts of 512-1024 tokens, 80 % of requests start with one (Zipf s=1.5); completion site LogNormal(5.0, 0.6) in [32, 1024] tokens after the context; output LogNormal(4.0, 1.5) in [1, 4096]",
                    LengthDist::LogNormal { mu: 5.0, sigma: 0.6, min: 32, max: 1024 },
                    LengthDist::LogNormal { mu: 4.0, sigma: 1.5, min: 1, max: 4096 },
                )
            },
            "long-context" => Scenario {
                content: Content::Document,
                ..Self::plain(
                    name,
                    "draft A.5: a document filling the target length minus a ~100-token question; targets 8K/16K/32K/64K/128K uniformly; output fixed 256",
                    LengthDist::Empirical {
                        values: vec![8192, 16384, 32768, 65536, 131072],
                        weights: vec![1.0; 5],
                    },
                    LengthDist::fixed(256),
                )
            },
            "fairness-mix" => Self::fairness_mix(name),
            "multi-turn-chat" => Self::multi_turn_chat(name),
            "agentic" => Self::agentic(name),
            other => return Err(ScenarioError::Unknown(other.into())),
        })
    }

    /// `fairness-mix`: draft 5.6's two classes, short and long requests.
    fn fairness_mix(name: &str) -> Self {
        Scenario {
            classes: vec![
                Class {
                    name: "short".into(),
                    weight: 0.8,
                    input: Some(LengthDist::Uniform { min: 64, max: 256 }),
                    output: Some(LengthDist::Uniform { min: 32, max: 128 }),
                    body: Default::default(),
                },
                Class {
                    name: "long".into(),
                    weight: 0.2,
                    input: Some(LengthDist::Uniform { min: 1024, max: 4096 }),
                    output: Some(LengthDist::Uniform { min: 256, max: 1024 }),
                    body: Default::default(),
                },
            ],
            ..Self::plain(
                name,
                "draft 5.6: 80 % short (input 64-256, output 32-128) and 20 % long (input 1024-4096, output 256-1024) requests",
                LengthDist::Uniform { min: 64, max: 256 },
                LengthDist::Uniform { min: 32, max: 128 },
            )
        }
    }

    /// `multi-turn-chat`: chat sessions sharing a system prompt, with think time between turns.
    fn multi_turn_chat(name: &str) -> Self {
        Scenario {
            system_prompt: Some(SharedPrefix { tokens: 200, share: 1.0 }),
            sessions: Some(Sessions {
                turns: LengthDist::Uniform { min: 2, max: 6 },
                think_time_ms: LengthDist::LogNormal { mu: 7.6, sigma: 0.5, min: 500, max: 10_000 },
            }),
            ..Self::plain(
                name,
                "chat sessions of 2-6 turns sharing a 200-token system prompt; each turn adds a LogNormal(4.5, 0.8) in [8, 512]-token message to the history and waits a LogNormal think time (median 2 s) after the previous answer",
                LengthDist::LogNormal { mu: 4.5, sigma: 0.8, min: 8, max: 512 },
                LengthDist::LogNormal { mu: 5.0, sigma: 0.7, min: 16, max: 1024 },
            )
        }
    }

    /// `agentic`: agent sessions of 2-8 steps; each step but the last calls 1-2 of 8 tools,
    /// whose results open the next step; a fifth of the middle steps fan out to 2-4
    /// sub-agents instead.
    fn agentic(name: &str) -> Self {
        use super::agent::synthetic::{AgentConfig, FanOut};
        Scenario {
            agent: Some(AgentConfig {
                steps: LengthDist::Uniform { min: 2, max: 8 },
                calls_per_step: LengthDist::Uniform { min: 1, max: 2 },
                arguments_tokens: LengthDist::Uniform { min: 8, max: 64 },
                result_tokens: LengthDist::LogNormal { mu: 5.8, sigma: 0.8, min: 32, max: 4096 },
                tool_time_ms: LengthDist::LogNormal { mu: 6.2, sigma: 1.0, min: 20, max: 10_000 },
                tools: 8,
                tool_tokens: 64,
                fan_out: Some(FanOut { share: 0.2, branches: LengthDist::Uniform { min: 2, max: 4 } }),
                end_with_text: true,
            }),
            ..Self::plain(
                name,
                "agent sessions of 2-8 steps offering 8 tools (512 tokens of definitions); each step but the last calls 1-2 tools (results LogNormal(5.8, 0.8) in [32, 4096] tokens, tool time median 0.5 s), a fifth of the middle steps fan out to 2-4 sub-agents; task LogNormal(5.5, 0.8) in [32, 2048] tokens, answers LogNormal(4.5, 0.8) in [8, 1024]",
                LengthDist::LogNormal { mu: 5.5, sigma: 0.8, min: 32, max: 2048 },
                LengthDist::LogNormal { mu: 4.5, sigma: 0.8, min: 8, max: 1024 },
            )
        }
    }

    /// A scenario from TOML text.
    pub fn from_toml(text: &str, path: &str) -> Result<Self, ScenarioError> {
        let s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Invalid {
            path: path.into(),
            detail: e.to_string(),
        })?;
        s.validate().map_err(|detail| ScenarioError::Invalid {
            path: path.into(),
            detail,
        })?;
        Ok(s)
    }

    /// Body fields for a request of `class`: the scenario's, then the class's over them.
    pub fn body_for(&self, class: Option<&str>) -> Vec<(String, serde_json::Value)> {
        let mut out: Vec<(String, serde_json::Value)> = self
            .body
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(c) = class.and_then(|name| self.classes.iter().find(|c| c.name == name)) {
            for (k, v) in &c.body {
                out.retain(|(key, _)| key != k);
                out.push((k.clone(), v.clone()));
            }
        }
        out
    }

    /// Checks every parameter.
    pub fn validate(&self) -> Result<(), String> {
        self.input.validate().map_err(|e| format!("input: {e}"))?;
        self.output.validate().map_err(|e| format!("output: {e}"))?;
        let share = |s: f64, what: &str| {
            if (0.0..=1.0).contains(&s) {
                Ok(())
            } else {
                Err(format!("{what}.share must be between 0 and 1"))
            }
        };
        if let Some(p) = &self.system_prompt {
            share(p.share, "system_prompt")?;
        }
        if let Some(g) = &self.prefix_groups {
            share(g.share, "prefix_groups")?;
            g.tokens
                .validate()
                .map_err(|e| format!("prefix_groups.tokens: {e}"))?;
            if g.count == 0 {
                return Err("prefix_groups.count must be at least 1".into());
            }
        }
        for c in &self.classes {
            if c.weight.is_nan() || c.weight < 0.0 {
                return Err(format!("class {}: weight must be non-negative", c.name));
            }
            for d in c.input.iter().chain(c.output.iter()) {
                d.validate().map_err(|e| format!("class {}: {e}", c.name))?;
            }
        }
        if let Some(s) = &self.sessions {
            s.turns
                .validate()
                .map_err(|e| format!("sessions.turns: {e}"))?;
            s.think_time_ms
                .validate()
                .map_err(|e| format!("sessions.think_time_ms: {e}"))?;
            if self.content == Content::Dataset {
                return Err("sessions need synthetic content (random, code or document)".into());
            }
        }
        if let Some(a) = &self.agent {
            a.check()?;
            if self.sessions.is_some() {
                return Err("a workload has either [sessions] (chat turns) or [agent] (steps with tool calls), not both".into());
            }
            if self.content == Content::Dataset {
                return Err("the synthetic agent workload needs synthetic content (random, code or document); to replay recorded sessions pass --dataset with the agent session format".into());
            }
        }
        if !self.classes.is_empty() && self.classes.iter().map(|c| c.weight).sum::<f64>() <= 0.0 {
            return Err("class weights must have a positive sum".into());
        }
        if let Some(i) = &self.images {
            i.validate()?;
        }
        if let Some(a) = &self.audio {
            a.validate()?;
        }
        if let Some(p) = &self.profile {
            p.check(self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_workload_is_valid() {
        for n in Scenario::NAMES {
            Scenario::named(n).unwrap().validate().unwrap();
        }
        assert!(Scenario::named("nope").is_err());
    }

    #[test]
    fn toml_scenario_with_classes_and_prefixes() {
        let s = Scenario::from_toml(
            r#"
name = "mine"
input = { dist = "normal", mean = 300.0, std = 50.0, min = 16, max = 1000 }
output = { dist = "fixed", value = 64 }
content = "code"
system_prompt = { tokens = 50, share = 1.0 }
prefix_groups = { count = 3, tokens = { dist = "uniform", min = 100, max = 200 }, share = 0.5, zipf_s = 1.2 }
body = { temperature = 0.7 }
[[classes]]
name = "a"
weight = 3.0
[[classes]]
name = "b"
weight = 1.0
output = { dist = "empirical", values = [10, 20], weights = [1.0, 1.0] }
body = { priority = 5 }
"#,
            "mine.toml",
        )
        .unwrap();
        assert_eq!(s.classes.len(), 2);
        assert_eq!(s.body["temperature"], 0.7);
        assert_eq!(s.classes[1].body["priority"], 5);
        let b = s.body_for(Some("b"));
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(
            s.body_for(Some("a")),
            vec![("temperature".to_owned(), serde_json::json!(0.7))]
        );
        assert_eq!(s.content, Content::Code);
        let bad = Scenario::from_toml("name = \"x\"\ninput = { dist = \"fixed\", value = 1 }\noutput = { dist = \"fixed\", value = 1 }\ntypo = 3\n", "x.toml");
        assert!(bad.is_err(), "unknown fields are errors");
        let bad = Scenario::from_toml("name = \"x\"\ninput = { dist = \"uniform\", min = 9, max = 1 }\noutput = { dist = \"fixed\", value = 1 }\n", "x.toml");
        assert!(bad.unwrap_err().to_string().contains("above max"));
    }
}
