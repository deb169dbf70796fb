//! The profiles known from the workload-profiles draft's summary, as servebench reads them.
//!
//! What the summary gives (the token ranges, the latency class, the group) is kept; the
//! rest is servebench's choice, stated here and in docs/workloads.md, to be checked when
//! the draft's text can be read:
//! - a range `a–b` becomes a log-normal clipped to `[a, b]` whose median is the range's
//!   geometric middle √(ab) and whose ±2.5 σ span the range (σ = ln(b/a) / 5), so about
//!   1.2 % of draws sit on a bound in a wide range (more in a narrow one, where rounding
//!   adds to the bounds) ([`range`]);
//! - the SLO default follows the latency class: interactive, a TTFT bound a person feels
//!   and a TPOT faster than reading; near-real-time, a few seconds (end to end where the
//!   answer is short, to the first token where it is long); throughput-oriented, none;
//! - sharing, sessions, items per request and body fields as each preset says.

use super::super::agent::synthetic::AgentConfig;
use super::super::lengths::LengthDist;
use super::super::scenario::{Content, PrefixGroups, Scenario, Sessions, SharedPrefix};
use super::{Caching, ConcurrencyPattern, Group, LatencyClass, OutputStructure, Profile};

/// The presets' ids, in the draft's group order.
pub const PRESET_IDS: [&str; 18] = [
    "EMBED", "XRANK", "LOGPR", "CLAS", "SFQA", "FUNC", "CHAT", "COMP", "PERS", "SUMM", "LDQA",
    "RAGN", "CGEN", "REAS", "DGEN", "TRNS", "AGNT", "PLAN",
];

/// A token range `a–b` as a distribution: log-normal with median √(ab), σ = ln(b/a)/5,
/// clipped to `[a, b]`.
pub fn range(a: u32, b: u32) -> LengthDist {
    let (la, lb) = ((a as f64).ln(), (b as f64).ln());
    LengthDist::LogNormal {
        mu: (la + lb) / 2.0,
        sigma: (lb - la) / 5.0,
        min: a,
        max: b,
    }
}

/// A distribution's range for a description: `64–4096` for a [`range`].
pub fn span(d: &LengthDist) -> String {
    match d {
        LengthDist::LogNormal { min, max, .. } | LengthDist::Uniform { min, max } => {
            format!("{min}–{max}")
        }
        other => other.to_string().trim_end_matches(" tokens").to_owned(),
    }
}

/// Think time between a person's turns: median 2 s in [0.5 s, 10 s], ms.
fn think_time_ms() -> LengthDist {
    LengthDist::LogNormal {
        mu: 7.6,
        sigma: 0.5,
        min: 500,
        max: 10_000,
    }
}

/// A tool's time between an agent's steps: median 0.5 s in [20 ms, 10 s], ms.
fn tool_time_ms() -> LengthDist {
    LengthDist::LogNormal {
        mu: 500f64.ln(),
        sigma: 1.0,
        min: 20,
        max: 10_000,
    }
}

/// What a preset sets: its profile's dimensions and its scenario's lengths.
struct Spec {
    id: &'static str,
    title: &'static str,
    group: Group,
    latency: LatencyClass,
    output_structure: OutputStructure,
    concurrency: ConcurrencyPattern,
    caching: Caching,
    slo: Option<&'static str>,
    input: LengthDist,
    output: LengthDist,
}

impl Spec {
    /// The scenario: the lengths, the structure's body fields, and the profile.
    fn scenario(self) -> Scenario {
        let mut s = Scenario::fixed(1, 1);
        s.name = self.id.into();
        s.description = format!(
            "{} profile {}: {}; input {}, output {} tokens {}",
            self.group.title(),
            self.id,
            self.title,
            span(&self.input),
            span(&self.output),
            match self.concurrency {
                P::Sessions | P::Chained => "per turn (each turn adds its input to the history)",
                _ => "per request",
            }
        );
        s.input = self.input;
        s.output = self.output;
        s.body = self.output_structure.body();
        s.profile = Some(Profile {
            id: self.id.into(),
            group: self.group,
            latency: self.latency,
            output_structure: self.output_structure,
            concurrency: self.concurrency,
            caching: self.caching,
            slo: self.slo.map(str::to_owned),
            source: super::PRESET_SOURCE.into(),
        });
        s
    }
}

/// The preset `id` (case-insensitive), or `None`.
pub fn preset(id: &str) -> Option<Scenario> {
    let id = id.to_ascii_uppercase();
    let s = match id.as_str() {
        "EMBED" | "XRANK" | "LOGPR" => non_generative(&id),
        "CLAS" | "SFQA" | "FUNC" => minimal_output(&id),
        "CHAT" | "COMP" | "PERS" => interactive(&id),
        "SUMM" | "LDQA" | "RAGN" => prefill_heavy(&id),
        "CGEN" | "REAS" | "DGEN" | "TRNS" => decode_heavy(&id),
        "AGNT" | "PLAN" => chained(&id),
        _ => return None,
    };
    Some(s)
}

use Caching as C;
use ConcurrencyPattern as P;
use Group as G;
use LatencyClass as L;
use OutputStructure as O;

fn spec(id: &'static str, title: &'static str, group: Group, latency: LatencyClass) -> Spec {
    Spec {
        id,
        title,
        group,
        latency,
        output_structure: O::Text,
        concurrency: P::Independent,
        caching: C::None,
        slo: None,
        input: LengthDist::fixed(1),
        output: LengthDist::fixed(1),
    }
}

/// EMBED, XRANK, LOGPR. Items per request are servebench's: a batch job embeds 1–16 texts
/// a call; a reranker scores a query against 8–32 retrieved documents.
fn non_generative(id: &str) -> Scenario {
    let (spec, items) = match id {
        "EMBED" => (
            Spec {
                output_structure: O::Vector,
                concurrency: P::Batch,
                input: range(16, 8192),
                ..spec("EMBED", "text embedding", G::NonGenerative, L::Throughput)
            },
            Some(LengthDist::Uniform { min: 1, max: 16 }),
        ),
        "XRANK" => (
            Spec {
                output_structure: O::Score,
                slo: Some("e2e_ms<=3000"),
                input: range(128, 1024),
                ..spec(
                    "XRANK",
                    "cross-encoder rerank",
                    G::NonGenerative,
                    L::NearRealTime,
                )
            },
            Some(LengthDist::Uniform { min: 8, max: 32 }),
        ),
        _ => (
            Spec {
                output_structure: O::Logprobs,
                concurrency: P::Batch,
                input: range(64, 4096),
                ..spec(
                    "LOGPR",
                    "log-probability scoring",
                    G::NonGenerative,
                    L::Throughput,
                )
            },
            None,
        ),
    };
    let mut s = spec.scenario();
    s.items = items;
    s
}

/// CLAS, SFQA, FUNC. FUNC offers 8 tools of 64 tokens each (a shared 512-token prefix) and
/// asks for one call.
fn minimal_output(id: &str) -> Scenario {
    match id {
        "CLAS" => Spec {
            output_structure: O::Json,
            slo: Some("e2e_ms<=3000"),
            input: range(32, 2048),
            output: range(1, 10),
            ..spec(
                "CLAS",
                "classification / extraction",
                G::MinimalOutput,
                L::NearRealTime,
            )
        }
        .scenario(),
        "SFQA" => Spec {
            output_structure: O::ShortText,
            slo: Some("ttft_ms<=500,e2e_ms<=3000"),
            input: range(16, 512),
            output: range(5, 100),
            ..spec(
                "SFQA",
                "short factual answers",
                G::MinimalOutput,
                L::Interactive,
            )
        }
        .scenario(),
        _ => {
            let mut s = Spec {
                output_structure: O::ToolCall,
                caching: C::SharedSystemPrompt,
                slo: Some("e2e_ms<=3000"),
                input: range(64, 3584),
                output: range(20, 200),
                ..spec(
                    "FUNC",
                    "one tool call (JSON)",
                    G::MinimalOutput,
                    L::NearRealTime,
                )
            }
            .scenario();
            s.agent = Some(AgentConfig {
                end_with_text: false,
                ..agent(LengthDist::fixed(1), 64, s.output.clone())
            });
            s
        }
    }
}

/// CHAT, COMP, PERS: sessions with a person's think time, or code contexts reused.
fn interactive(id: &str) -> Scenario {
    let chat = |s: &mut Scenario, system: u32, turns: u32| {
        s.system_prompt = Some(SharedPrefix {
            tokens: system,
            share: 1.0,
        });
        s.sessions = Some(Sessions {
            turns: LengthDist::Uniform { min: 2, max: turns },
            think_time_ms: think_time_ms(),
        });
    };
    match id {
        "CHAT" => {
            let mut s = Spec {
                concurrency: P::Sessions,
                caching: C::GrowingHistory,
                slo: Some("ttft_ms<=500,tpot_ms<=100"),
                input: range(32, 1024),
                output: range(50, 1000),
                ..spec(
                    "CHAT",
                    "chat, history growing per turn",
                    G::InteractiveStreaming,
                    L::Interactive,
                )
            }
            .scenario();
            chat(&mut s, 200, 10);
            s
        }
        "COMP" => {
            let mut s = Spec {
                caching: C::SharedContexts,
                slo: Some("ttft_ms<=200,tpot_ms<=50"),
                input: range(64, 4096),
                output: range(5, 200),
                ..spec(
                    "COMP",
                    "code completion",
                    G::InteractiveStreaming,
                    L::Interactive,
                )
            }
            .scenario();
            s.content = Content::Code;
            s.prefix_groups = Some(PrefixGroups {
                count: 10,
                tokens: range(256, 4096),
                share: 0.8,
                zipf_s: 1.5,
            });
            s
        }
        _ => {
            let mut s = Spec {
                concurrency: P::Sessions,
                caching: C::SharedSystemPrompt,
                slo: Some("ttft_ms<=500,tpot_ms<=100"),
                input: range(32, 512),
                output: range(100, 2000),
                ..spec(
                    "PERS",
                    "persona chat, long shared system prompt",
                    G::InteractiveStreaming,
                    L::Interactive,
                )
            }
            .scenario();
            chat(&mut s, 4096, 8);
            s
        }
    }
}

/// SUMM, LDQA, RAGN. LDQA's documents are 16 shared contexts the questions come back to.
fn prefill_heavy(id: &str) -> Scenario {
    match id {
        "SUMM" => {
            let mut s = Spec {
                slo: Some("ttft_ms<=3000,tpot_ms<=100"),
                input: range(1024, 32768),
                output: range(64, 1024),
                ..spec("SUMM", "summarisation", G::PrefillHeavy, L::NearRealTime)
            }
            .scenario();
            s.content = Content::Document;
            s
        }
        "LDQA" => {
            let mut s = Spec {
                caching: C::SharedContexts,
                slo: Some("ttft_ms<=10000,tpot_ms<=100"),
                input: range(16, 256),
                output: range(16, 512),
                ..spec(
                    "LDQA",
                    "long-document QA (KV-cache benefit)",
                    G::PrefillHeavy,
                    L::NearRealTime,
                )
            }
            .scenario();
            s.prefix_groups = Some(PrefixGroups {
                count: 16,
                // Up to 128K with the question and the answer: 130,048 + 256 + 512 ≤ 131,072.
                tokens: range(4096, 130_048),
                share: 1.0,
                zipf_s: 1.0,
            });
            s
        }
        _ => {
            let mut s = Spec {
                caching: C::SharedSystemPrompt,
                slo: Some("ttft_ms<=1000,tpot_ms<=100"),
                input: range(256, 7936),
                output: range(64, 1024),
                ..spec(
                    "RAGN",
                    "retrieval-augmented generation",
                    G::PrefillHeavy,
                    L::Interactive,
                )
            }
            .scenario();
            s.content = Content::Document;
            s.system_prompt = Some(SharedPrefix {
                tokens: 256,
                share: 1.0,
            });
            s
        }
    }
}

/// CGEN, REAS, DGEN, TRNS. The summary gives CGEN no class: servebench reads it as
/// near-real-time. TRNS's output tracks its input in life; here the two are independent.
fn decode_heavy(id: &str) -> Scenario {
    let long = Some("ttft_ms<=3000,tpot_ms<=100");
    match id {
        "CGEN" => Spec {
            slo: long,
            input: range(32, 1024),
            output: range(256, 8192),
            ..spec(
                "CGEN",
                "content generation",
                G::DecodeHeavy,
                L::NearRealTime,
            )
        },
        "REAS" => Spec {
            output_structure: O::Reasoning,
            slo: long,
            input: range(64, 2048),
            output: range(512, 32768),
            ..spec(
                "REAS",
                "reasoning (thinking + answer)",
                G::DecodeHeavy,
                L::NearRealTime,
            )
        },
        "DGEN" => Spec {
            concurrency: P::Batch,
            input: range(128, 2048),
            output: range(512, 16384),
            ..spec(
                "DGEN",
                "synthetic data generation",
                G::DecodeHeavy,
                L::Throughput,
            )
        },
        _ => Spec {
            slo: long,
            input: range(32, 8192),
            output: range(32, 10240),
            ..spec("TRNS", "translation", G::DecodeHeavy, L::NearRealTime)
        },
    }
    .scenario()
}

/// AGNT, PLAN: steps chained on the previous answer. AGNT is an agent of 3-12 steps, each
/// but the last calling a tool whose result (the profile's input range) opens the next step,
/// offering 8 tools of 128 tokens (1,024 tokens of definitions); PLAN refines its plan once
/// in half its runs, at once (1 ms).
fn chained(id: &str) -> Scenario {
    let (spec, system, turns, wait) = match id {
        "AGNT" => (
            Spec {
                output_structure: O::ToolCall,
                slo: Some("ttft_ms<=1000,tpot_ms<=50"),
                input: range(64, 2048),
                output: range(20, 500),
                ..spec(
                    "AGNT",
                    "agent loop, context accumulating per step",
                    G::MultiStepChained,
                    L::NearRealTime,
                )
            },
            Some(1024),
            LengthDist::Uniform { min: 3, max: 12 },
            tool_time_ms(),
        ),
        _ => (
            Spec {
                output_structure: O::Json,
                slo: Some("ttft_ms<=3000,tpot_ms<=100"),
                input: range(128, 4096),
                output: range(256, 2048),
                ..spec(
                    "PLAN",
                    "structured planning, optional refinement",
                    G::MultiStepChained,
                    L::NearRealTime,
                )
            },
            None,
            LengthDist::Uniform { min: 1, max: 2 },
            LengthDist::fixed(1),
        ),
    };
    let mut s = Spec {
        concurrency: P::Chained,
        caching: C::GrowingHistory,
        ..spec
    }
    .scenario();
    if let Some(tool_tokens) = system {
        s.agent = Some(AgentConfig {
            tool_time_ms: wait,
            ..agent(turns, tool_tokens / 8, s.input.clone())
        });
        return s;
    }
    s.sessions = Some(Sessions {
        turns,
        think_time_ms: wait,
    });
    s
}

/// An agent of `steps` steps, one call a step, offering 8 tools of `tool_tokens` each, tool
/// results of `result_tokens`, tools running `tool_time_ms()`.
fn agent(steps: LengthDist, tool_tokens: u32, result_tokens: LengthDist) -> AgentConfig {
    AgentConfig {
        steps,
        calls_per_step: LengthDist::fixed(1),
        arguments_tokens: LengthDist::fixed(24),
        result_tokens,
        tool_time_ms: tool_time_ms(),
        tools: 8,
        tool_tokens,
        fan_out: None,
        end_with_text: true,
    }
}
