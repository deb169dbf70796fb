//! The synthetic agent workload: sessions drawn from distributions, in the session format.
//!
//! A drawn session has `steps` model calls. The first carries the user's task (the
//! workload's `input` length); every step but the last answers with `calls_per_step` tool
//! calls (each a tool drawn from the offered ones, with its arguments, result and run time
//! drawn), so the next step continues from their results; the last step answers in text.
//! With `fan_out`, a middle step is, with probability `share`, a fan-out of `branches`
//! sub-requests instead. Answers are the workload's `output` length.

use super::trace::{AgentStep, AgentTrace, BranchTrace, ToolCallTrace};
use crate::workload::lengths::LengthDist;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// `[agent]` of a scenario file (`--agent-steps` and friends on the command line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Model calls per session (≥ 1; the last answers in text).
    pub steps: LengthDist,
    /// Tool calls of each step before the last (run in parallel).
    #[serde(default = "one_call")]
    pub calls_per_step: LengthDist,
    /// Tokens of a call's JSON arguments.
    #[serde(default = "arguments_tokens")]
    pub arguments_tokens: LengthDist,
    /// Tokens of a tool's result.
    pub result_tokens: LengthDist,
    /// How long a tool runs, ms.
    pub tool_time_ms: LengthDist,
    /// Tools offered in every request.
    #[serde(default = "tools")]
    pub tools: u32,
    /// Tokens of each tool's description (with its schema, what the template writes).
    #[serde(default = "tool_tokens")]
    pub tool_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_out: Option<FanOut>,
    /// Whether the last step answers in text (an agent's final answer); `false`: every
    /// step calls tools (a one-step session is then a single function call).
    #[serde(default = "yes")]
    pub end_with_text: bool,
}

/// Fan-out steps: how often a middle step fans out, and into how many sub-requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FanOut {
    /// Probability that a step other than the first and the last is a fan-out.
    pub share: f64,
    pub branches: LengthDist,
}

fn yes() -> bool {
    true
}
fn one_call() -> LengthDist {
    LengthDist::Fixed { value: 1 }
}
fn arguments_tokens() -> LengthDist {
    LengthDist::Fixed { value: 24 }
}
fn tools() -> u32 {
    8
}
fn tool_tokens() -> u32 {
    64
}

/// The name of offered tool `k`.
pub fn tool_name(k: u32) -> String {
    format!("tool_{k}")
}

impl AgentConfig {
    /// Checks the configuration (`Err`: what is wrong, for the scenario's error).
    pub fn check(&self) -> Result<(), String> {
        for (name, d) in [
            ("steps", &self.steps),
            ("calls_per_step", &self.calls_per_step),
            ("arguments_tokens", &self.arguments_tokens),
            ("result_tokens", &self.result_tokens),
            ("tool_time_ms", &self.tool_time_ms),
        ] {
            d.validate().map_err(|e| format!("agent.{name}: {e}"))?;
        }
        if self.tools == 0 {
            return Err("agent.tools must be ≥ 1".into());
        }
        if let Some(f) = &self.fan_out {
            if !(0.0..=1.0).contains(&f.share) {
                return Err("agent.fan_out.share must be in [0, 1]".into());
            }
            f.branches
                .validate()
                .map_err(|e| format!("agent.fan_out.branches: {e}"))?;
        }
        Ok(())
    }

    /// One session, drawn: `input` and `output` draw the task's and each answer's length.
    pub fn draw(
        &self,
        rng: &mut ChaCha8Rng,
        input: &LengthDist,
        output: &LengthDist,
    ) -> AgentTrace {
        let steps = self.steps.sample(rng).max(1) as usize;
        let mut out = Vec::with_capacity(steps);
        for i in 0..steps {
            let last = i + 1 == steps;
            let fan_out = match &self.fan_out {
                Some(f) if i > 0 && !last && rng.random::<f64>() < f.share => {
                    f.branches.sample(rng).max(1)
                }
                _ => 0,
            };
            if fan_out > 0 {
                out.push(AgentStep {
                    fan_out: (0..fan_out)
                        .map(|_| BranchTrace {
                            input_tokens: input.sample(rng).max(1),
                            output_tokens: output.sample(rng).max(1),
                        })
                        .collect(),
                    ..Default::default()
                });
                continue;
            }
            let calls = if last && self.end_with_text {
                0
            } else {
                self.calls_per_step.sample(rng).max(1)
            };
            out.push(AgentStep {
                input_tokens: if i == 0 { input.sample(rng).max(1) } else { 0 },
                output_tokens: output.sample(rng).max(1),
                think_ms: 0.0,
                calls: (0..calls).map(|_| self.call(rng)).collect(),
                fan_out: Vec::new(),
            });
        }
        AgentTrace {
            id: None,
            system_tokens: 0,
            // Every session offers the same tools (a shared prefix), the sub-agent tool too
            // when some sessions fan out.
            tools: (0..self.tools)
                .map(tool_name)
                .chain(
                    self.fan_out
                        .as_ref()
                        .map(|_| super::plan::SUBAGENT_TOOL.to_owned()),
                )
                .collect(),
            steps: out,
        }
    }

    /// Whether a session can have more than one request (a chain of steps or a fan-out).
    pub fn multi_step(&self) -> bool {
        self.steps.min_value() > 1 || self.steps.mean() > 1.0 || self.fan_out.is_some()
    }

    fn call(&self, rng: &mut ChaCha8Rng) -> ToolCallTrace {
        ToolCallTrace {
            name: tool_name(rng.random_range(0..self.tools)),
            arguments_tokens: self.arguments_tokens.sample(rng).max(1),
            result_tokens: self.result_tokens.sample(rng).max(1),
            tool_ms: f64::from(self.tool_time_ms.sample(rng)),
        }
    }
}
