//! Workload profiles: a workload named for the class of production traffic it stands for.
//!
//! The companion draft "Benchmarking Workload Profiles for LLM Serving"
//! (draft-mondal-llm-serving-workload-profiles-00) defines a profile by five things: its
//! input and output token distributions, the structure of its output, how sensitive it is
//! to latency, its concurrency pattern and its caching behaviour; it groups profiles in
//! six, and says the methodology's tests should run against them. A [`Profile`] is those
//! five things beside a [`super::Scenario`] (which holds the lengths and the prompt
//! sharing); `presets.rs` holds servebench's reading of the profiles known from the
//! draft's summary. Only the draft's opening could be read: every parameter past the
//! token ranges and the latency class is servebench's own choice (docs/workloads.md).

mod presets;
#[cfg(test)]
mod tests;

pub use presets::{preset, span, PRESET_IDS};
use serde::{Deserialize, Serialize};

/// Where the parameters of the presets come from, written into `run.json` with them.
pub const PRESET_SOURCE: &str = "servebench's reading of draft-mondal-llm-serving-workload-profiles-00 (token ranges and latency class from a summary of the draft; distributions, SLOs, sharing and sessions chosen by servebench)";

/// The draft's six groups of profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// No text out: embeddings, rerank scores, log-probabilities.
    NonGenerative,
    /// A label, a short answer, one tool call.
    MinimalOutput,
    /// A person reads the answer as it streams.
    InteractiveStreaming,
    /// Long inputs, short-to-medium outputs.
    PrefillHeavy,
    /// Short inputs, long outputs.
    DecodeHeavy,
    /// Steps that wait on each other, the context growing.
    MultiStepChained,
}

impl Group {
    /// The draft's name of the group.
    pub fn title(self) -> &'static str {
        match self {
            Self::NonGenerative => "Non-Generative",
            Self::MinimalOutput => "Minimal Output",
            Self::InteractiveStreaming => "Interactive Streaming",
            Self::PrefillHeavy => "Prefill-Heavy Generative",
            Self::DecodeHeavy => "Decode-Heavy Generative",
            Self::MultiStepChained => "Multi-Step Chained",
        }
    }

    /// A short name for narrow tables.
    pub fn short(self) -> &'static str {
        match self {
            Self::NonGenerative => "non-gen.",
            Self::MinimalOutput => "minimal",
            Self::InteractiveStreaming => "interactive",
            Self::PrefillHeavy => "prefill",
            Self::DecodeHeavy => "decode",
            Self::MultiStepChained => "chained",
        }
    }
}

/// How sensitive the traffic is to latency: the class its SLO default comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LatencyClass {
    /// A person waits on the first token and reads the stream.
    Interactive,
    /// An answer is wanted within a few seconds end to end.
    NearRealTime,
    /// Batch work: throughput matters, latency does not.
    Throughput,
}

impl LatencyClass {
    /// The class in words.
    pub fn title(self) -> &'static str {
        match self {
            Self::Interactive => "interactive",
            Self::NearRealTime => "near-real-time",
            Self::Throughput => "throughput-oriented",
        }
    }

    /// The summary's two-letter code: IN, NR, TO.
    pub fn code(self) -> &'static str {
        match self {
            Self::Interactive => "IN",
            Self::NearRealTime => "NR",
            Self::Throughput => "TO",
        }
    }
}

/// What the answer is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputStructure {
    /// An embedding vector (`--endpoint embeddings`).
    Vector,
    /// One relevance score per document (`--endpoint rerank`).
    Score,
    /// Log-probabilities of one token, no text to read (`logprobs` in the body).
    Logprobs,
    /// A few tokens of free text: a short answer or a label.
    ShortText,
    /// A JSON object. Recorded, not asked for: constrained decoding ends the answer at the
    /// object's end, which `ignore_eos` (fixed output lengths) contradicts; send
    /// `--extra-body '{"response_format": {"type": "json_object"}}' --ignore-eos false` to
    /// measure it.
    Json,
    /// One tool call's JSON arguments (recorded as for `Json` until tools are sent).
    ToolCall,
    /// Free text of any length.
    Text,
    /// Thinking then an answer (reasoning deltas count as output tokens).
    Reasoning,
}

/// Which API a profile's requests go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileApi {
    /// A generative API (chat by default, or the one `--endpoint` names).
    Generate,
    /// Embeddings (`--endpoint embeddings`).
    Embed,
    /// Rerank (`--endpoint rerank`).
    Rerank,
}

impl OutputStructure {
    /// The API that answers with this structure.
    pub fn api(self) -> ProfileApi {
        match self {
            Self::Vector => ProfileApi::Embed,
            Self::Score => ProfileApi::Rerank,
            _ => ProfileApi::Generate,
        }
    }

    /// Request-body fields that ask for this structure, in the chat API's shape: the
    /// log-probability of the token generated (`logprobs`). The others ask for nothing.
    pub fn body(self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        if self == Self::Logprobs {
            m.insert("logprobs".into(), true.into());
            m.insert("top_logprobs".into(), 1.into());
        }
        m
    }
}

/// How requests arrive relative to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConcurrencyPattern {
    /// Independent requests from many users: open-loop (Poisson) arrivals.
    Independent,
    /// A job keeping the server's queue full: closed loop.
    Batch,
    /// Conversations: turns wait on the previous answer plus a person's think time.
    Sessions,
    /// Agent steps: each waits on the previous answer plus a tool's time, back to back.
    Chained,
}

/// What of one request's prompt the next requests repeat (what a prefix cache can reuse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Caching {
    /// Nothing is shared between requests.
    None,
    /// Every request starts with the same system prompt.
    SharedSystemPrompt,
    /// Each turn of a session repeats the session's history.
    GrowingHistory,
    /// Requests start with one of a few long shared contexts (documents, repositories).
    SharedContexts,
}

/// A workload profile: the five dimensions the lengths of its scenario do not hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Short name, e.g. `CHAT`.
    pub id: String,
    /// The draft's group.
    pub group: Group,
    /// How sensitive to latency: the class its SLO default comes from.
    pub latency: LatencyClass,
    /// What the answer is made of (the API, and the body fields that ask for it).
    pub output_structure: OutputStructure,
    /// How requests arrive relative to each other (sessions and chained steps are the
    /// scenario's sessions).
    pub concurrency: ConcurrencyPattern,
    /// What the next requests repeat of a prompt (checked against the scenario).
    pub caching: Caching,
    /// The SLO the profile's runs and tests are judged by when `--slo` is not given, in
    /// `--slo`'s grammar (per-request bounds met by `--slo-target` of requests). `None`:
    /// throughput-oriented, judged on saturation alone.
    #[serde(default)]
    pub slo: Option<String>,
    /// Where the parameters come from.
    #[serde(default)]
    pub source: String,
}

impl Profile {
    /// Checks the profile against the scenario it describes: the caching it states is the
    /// sharing the scenario builds, and non-generative answers come with items.
    pub fn check(&self, s: &super::Scenario) -> Result<(), String> {
        let says = |ok: bool, what: &str| match ok {
            true => Ok(()),
            false => Err(format!("profile {}: {what}", self.id)),
        };
        let multi_step = s.sessions.is_some() || s.agent.as_ref().is_some_and(|a| a.multi_step());
        match self.caching {
            Caching::None => says(
                s.system_prompt.is_none()
                    && s.prefix_groups.is_none()
                    && s.sessions.is_none()
                    && s.agent.is_none(),
                "caching = \"none\" but the scenario shares a prompt or has sessions",
            )?,
            Caching::SharedSystemPrompt => says(
                s.system_prompt.is_some() || s.agent.is_some(),
                "caching = \"shared_system_prompt\" needs a system_prompt (or an agent's tool definitions)",
            )?,
            Caching::GrowingHistory => says(
                multi_step,
                "caching = \"growing_history\" needs sessions or agent steps",
            )?,
            Caching::SharedContexts => says(
                s.prefix_groups.is_some(),
                "caching = \"shared_contexts\" needs prefix_groups",
            )?,
        }
        let sessions = matches!(
            self.concurrency,
            ConcurrencyPattern::Sessions | ConcurrencyPattern::Chained
        );
        says(
            sessions == multi_step,
            "concurrency \"sessions\" and \"chained\" go with sessions or agent steps, and only they",
        )?;
        says(
            (self.output_structure.api() == ProfileApi::Generate) == s.items.is_none(),
            "vector and score outputs (embeddings, rerank) send items, and only they",
        )
    }

    /// One line for reports: `CHAT (Interactive Streaming, interactive)`.
    pub fn label(&self) -> String {
        format!(
            "{} ({}, {})",
            self.id,
            self.group.title(),
            self.latency.title()
        )
    }
}
