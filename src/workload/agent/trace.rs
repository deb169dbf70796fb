//! The agent session format: one recorded (or planned) agent session per JSONL line.
//!
//! A session is what an agent trace needs to be replayed: how long each step's new input and
//! answer were, which tools each answer called, how long each tool ran, and where the agent
//! fanned out into sub-requests. Text is not needed (servebench writes text of the recorded
//! lengths), so traces from production can be shared without their content. The synthetic
//! agent workload and the OpenTelemetry importer produce the same records, so every source
//! goes through one planner (`plan.rs`). docs/workloads.md documents the format.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One agent session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTrace {
    /// The session's id in its source (kept for the reader; servebench numbers sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tokens of the system prompt every step starts with (0: none).
    #[serde(default)]
    pub system_tokens: u32,
    /// Tool names offered in every step; tools the calls name are added. Empty and no call:
    /// no tools are offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The steps, in order: each one request or a fan-out of several.
    pub steps: Vec<AgentStep>,
}

/// One step of a session: a request (or a fan-out of requests sent at once), then the tool
/// time of the calls its answer made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentStep {
    /// Tokens of the new user message this step adds (0: the step continues after the
    /// previous step's tool results). The first step needs some.
    #[serde(default)]
    pub input_tokens: u32,
    /// Tokens of the step's answer (`max_tokens`). With calls, the calls' arguments are part
    /// of it.
    #[serde(default)]
    pub output_tokens: u32,
    /// The user's wait before sending this step, ms (after the previous step's tools).
    #[serde(default)]
    pub think_ms: f64,
    /// The tool calls the answer makes, run in parallel; their results open the next step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ToolCallTrace>,
    /// Sub-requests sent at once instead of one request, each sharing the session's history
    /// as its prefix; the next step waits for all of them and reads their answers as the
    /// results of one `subagent` call each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fan_out: Vec<BranchTrace>,
}

/// One tool call of a step's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallTrace {
    pub name: String,
    /// Tokens of the call's JSON arguments.
    #[serde(default = "default_arguments_tokens")]
    pub arguments_tokens: u32,
    /// Tokens of the tool's result sent back in the next step.
    #[serde(default)]
    pub result_tokens: u32,
    /// How long the tool ran, ms.
    #[serde(default)]
    pub tool_ms: f64,
}

fn default_arguments_tokens() -> u32 {
    16
}

/// One sub-request of a fan-out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BranchTrace {
    /// Tokens of the sub-request's own message after the shared history.
    pub input_tokens: u32,
    pub output_tokens: u32,
}

impl AgentStep {
    /// The tool time after this step: its calls run in parallel, so the longest one, ms.
    pub fn tool_time_ms(&self) -> f64 {
        self.calls.iter().map(|c| c.tool_ms).fold(0.0, f64::max)
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum TraceError {
    #[error("line {line}: not an agent session ({detail}); see docs/workloads.md, \"Agent session format\"")]
    Json { line: usize, detail: String },
    #[error("line {line}: {detail}")]
    Invalid { line: usize, detail: String },
    #[error("no agent session in the file: it needs one JSON object per line with `steps`")]
    Empty,
}

impl AgentTrace {
    /// Checks what the planner relies on; `line` names the record in errors.
    pub fn check(&self, line: usize) -> Result<(), TraceError> {
        let bad = |detail: String| Err(TraceError::Invalid { line, detail });
        let Some(first) = self.steps.first() else {
            return bad("a session needs at least one step".into());
        };
        if first.input_tokens == 0 && first.fan_out.is_empty() {
            return bad("the first step needs input_tokens > 0 (the user's task)".into());
        }
        for (i, s) in self.steps.iter().enumerate() {
            if !s.fan_out.is_empty() && (s.input_tokens > 0 || s.output_tokens > 0) {
                return bad(format!(
                    "step {i}: a fan-out step gives lengths per branch, not input_tokens/output_tokens"
                ));
            }
            if s.fan_out.is_empty() && s.output_tokens == 0 {
                return bad(format!("step {i}: output_tokens must be > 0"));
            }
            if s.fan_out
                .iter()
                .any(|b| b.output_tokens == 0 || b.input_tokens == 0)
            {
                return bad(format!(
                    "step {i}: every fan-out branch needs input_tokens and output_tokens > 0"
                ));
            }
            let times = s.calls.iter().map(|c| c.tool_ms).chain([s.think_ms]);
            if times.clone().any(|t| !t.is_finite() || t < 0.0) {
                return bad(format!("step {i}: tool_ms and think_ms must be ≥ 0"));
            }
            let after_text = i > 0 && {
                let prev = &self.steps[i - 1];
                prev.calls.is_empty() && prev.fan_out.is_empty()
            };
            if after_text && s.fan_out.is_empty() && s.input_tokens == 0 {
                return bad(format!(
                    "step {i} follows a text answer: it needs input_tokens > 0 (the user's next message)"
                ));
            }
            if s.calls.iter().any(|c| c.name.is_empty()) {
                return bad(format!("step {i}: a tool call needs a name"));
            }
        }
        Ok(())
    }

    /// Requests the session sends: one per plain step, one per branch of a fan-out.
    pub fn requests(&self) -> usize {
        self.steps.iter().map(|s| s.fan_out.len().max(1)).sum()
    }
}

/// Reads agent sessions from JSONL text (blank lines skipped), each checked.
pub fn parse_jsonl(text: &str) -> Result<Vec<AgentTrace>, TraceError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let line = i + 1;
        let t: AgentTrace = serde_json::from_str(raw).map_err(|e| TraceError::Json {
            line,
            detail: e.to_string(),
        })?;
        t.check(line)?;
        out.push(t);
    }
    if out.is_empty() {
        return Err(TraceError::Empty);
    }
    Ok(out)
}

/// Whether a JSONL file's first record looks like an agent session (for format detection).
pub fn looks_like(first_record: &serde_json::Value) -> bool {
    first_record.get("steps").is_some_and(|s| s.is_array())
}
