//! From an agent session (recorded or drawn) to the requests it sends, with their text.
//!
//! Every source of agent sessions (the session format, the OpenTelemetry importer, the
//! synthetic agent workload) ends here, so there is one reading of a step:
//!
//! - a plain step adds its user message (if any) to the history and asks for its answer;
//!   with calls, the request asks for a tool call (`tool_choice` required), and the next
//!   step's history holds the assistant's calls and one result per call;
//!   without calls, the answer joins the history as assistant text of its length;
//! - a fan-out step sends one request per branch at once, each the history plus the
//!   branch's own user message; the next step's history holds one `subagent` call per branch
//!   and the branch's answer as that call's result;
//! - the wait before a step is the previous step's tool time (its longest call, since calls
//!   run in parallel) plus the step's own think time.
//!
//! Pure: text comes from the caller's `text` function (seeded), tokens from its tokenizer.

use super::trace::{AgentStep, AgentTrace};
use super::{flattened, tools_text, AgentMessage, AgentParts, ToolCall, ToolDef};
use crate::tokenizer::Tokenizer;
use crate::workload::text::TextError;
use crate::workload::RequestSpec;
use std::sync::Arc;

/// The tool a fan-out's branches stand for in the orchestrator's history.
pub const SUBAGENT_TOOL: &str = "subagent";

/// What the planner needs from the workload's generator.
pub struct PlanInputs<'a> {
    pub tokenizer: &'a dyn Tokenizer,
    /// Text of exactly this many tokens (seeded, by the workload's content kind).
    pub text: &'a mut dyn FnMut(usize) -> Result<String, TextError>,
    /// The definition of a tool by its name (the same for every session of a run, so tool
    /// definitions are a shared prefix as in a real agent).
    pub tool: &'a mut dyn FnMut(&str) -> Result<ToolDef, TextError>,
    /// The shared system prompt, when the session has one.
    pub system: Option<String>,
}

/// The requests of `trace`, numbered from `first_index`, as session `session`.
pub fn plan(
    trace: &AgentTrace,
    session: u64,
    first_index: u64,
    inputs: PlanInputs<'_>,
) -> Result<Vec<RequestSpec>, (u64, TextError)> {
    let PlanInputs {
        tokenizer,
        text,
        tool,
        system,
    } = inputs;
    let tools = Arc::new(tool_defs(trace, tool).map_err(|e| (first_index, e))?);
    let tools_tokens = if tools.is_empty() {
        0
    } else {
        tokenizer.count(&tools_text(&tools)) as u32
    };
    let mut state = History {
        messages: system
            .map(|s| vec![("system".to_owned(), s)])
            .unwrap_or_default(),
        inserts: Vec::new(),
    };
    let mut out: Vec<RequestSpec> = Vec::with_capacity(trace.requests());
    let mut tool_ms = 0.0;
    for (turn, step) in trace.steps.iter().enumerate() {
        let index = first_index + out.len() as u64;
        let err = |e| (index, e);
        let base = Request {
            session,
            turn: turn as u32,
            tool_ms,
            think_ms: step.think_ms,
            tools: &tools,
            tools_tokens,
            steps: trace.steps.len() as u32,
        };
        if step.fan_out.is_empty() {
            if step.input_tokens > 0 {
                let user = text(step.input_tokens as usize).map_err(err)?;
                state.messages.push(("user".into(), user));
            }
            let calls_tools = !step.calls.is_empty();
            out.push(base.spec(index, 0, &state, step.output_tokens, calls_tools, tokenizer));
            after_plain_step(step, turn, session, &mut state, text).map_err(err)?;
        } else {
            let mut answers = Vec::with_capacity(step.fan_out.len());
            for (b, branch) in step.fan_out.iter().enumerate() {
                let index = first_index + out.len() as u64;
                let mut own = state.clone();
                let user = text(branch.input_tokens as usize).map_err(|e| (index, e))?;
                own.messages.push(("user".into(), user));
                out.push(base.spec(
                    index,
                    b as u32,
                    &own,
                    branch.output_tokens,
                    false,
                    tokenizer,
                ));
                answers.push(text(branch.output_tokens as usize).map_err(|e| (index, e))?);
            }
            after_fan_out(turn, session, answers, &mut state);
        }
        tool_ms = step.tool_time_ms();
    }
    Ok(out)
}

/// The text messages and tool parts of the history so far.
#[derive(Clone)]
struct History {
    messages: Vec<(String, String)>,
    inserts: Vec<(usize, AgentMessage)>,
}

/// What every request of one step shares.
struct Request<'t> {
    session: u64,
    turn: u32,
    tool_ms: f64,
    think_ms: f64,
    tools: &'t Arc<Vec<ToolDef>>,
    tools_tokens: u32,
    /// Steps the session plans.
    steps: u32,
}

impl Request<'_> {
    fn spec(
        &self,
        index: u64,
        branch: u32,
        history: &History,
        max_tokens: u32,
        calls_tools: bool,
        tokenizer: &dyn Tokenizer,
    ) -> RequestSpec {
        let agent = AgentParts {
            tools: self.tools.clone(),
            inserts: history.inserts.clone(),
            calls_tools,
        };
        let counted = tokenizer.count_messages(&flattened(&history.messages, Some(&agent)));
        RequestSpec {
            index,
            messages: history.messages.clone(),
            input_tokens: counted as u32 + self.tools_tokens,
            max_tokens,
            class: None,
            arrival_ms: None,
            session: Some(self.session),
            turn: self.turn,
            think_ms: self.think_ms,
            media: Vec::new(),
            session_steps: self.steps,
            branch,
            tool_ms: self.tool_ms,
            agent: Some(Box::new(agent)),
        }
    }
}

/// The history after a plain step: its calls and their results, or its text answer.
fn after_plain_step(
    step: &AgentStep,
    turn: usize,
    session: u64,
    state: &mut History,
    text: &mut dyn FnMut(usize) -> Result<String, TextError>,
) -> Result<(), TextError> {
    let at = state.messages.len();
    if step.calls.is_empty() {
        let answer = text(step.output_tokens as usize)?;
        state.messages.push(("assistant".into(), answer));
        return Ok(());
    }
    let mut calls = Vec::with_capacity(step.calls.len());
    let mut results = Vec::with_capacity(step.calls.len());
    for (k, c) in step.calls.iter().enumerate() {
        let id = call_id(session, turn, k);
        let query = text(c.arguments_tokens as usize)?;
        calls.push(ToolCall {
            id: id.clone(),
            name: c.name.clone(),
            arguments: serde_json::json!({ "query": query }).to_string(),
        });
        results.push(AgentMessage::Result {
            call_id: id,
            name: c.name.clone(),
            content: text(c.result_tokens as usize)?,
        });
    }
    state.inserts.push((at, AgentMessage::Calls(calls)));
    state.inserts.extend(results.into_iter().map(|r| (at, r)));
    Ok(())
}

/// The history after a fan-out: one `subagent` call per branch, its answer as the result.
fn after_fan_out(turn: usize, session: u64, answers: Vec<String>, state: &mut History) {
    let at = state.messages.len();
    let calls = (0..answers.len())
        .map(|k| ToolCall {
            id: call_id(session, turn, k),
            name: SUBAGENT_TOOL.into(),
            arguments: serde_json::json!({ "task": k }).to_string(),
        })
        .collect::<Vec<_>>();
    let results = calls
        .iter()
        .zip(answers)
        .map(|(c, content)| AgentMessage::Result {
            call_id: c.id.clone(),
            name: SUBAGENT_TOOL.into(),
            content,
        })
        .collect::<Vec<_>>();
    state.inserts.push((at, AgentMessage::Calls(calls)));
    state.inserts.extend(results.into_iter().map(|r| (at, r)));
}

/// A call's id: unique within the run, the same on every run of the seed.
fn call_id(session: u64, turn: usize, k: usize) -> String {
    format!("call_{session}_{turn}_{k}")
}

/// The tools offered: the trace's list, then every other tool its calls name, then
/// `subagent` when it fans out, each once, in that order.
fn tool_defs(
    trace: &AgentTrace,
    tool: &mut dyn FnMut(&str) -> Result<ToolDef, TextError>,
) -> Result<Vec<ToolDef>, TextError> {
    let mut names: Vec<&str> = trace.tools.iter().map(String::as_str).collect();
    for s in &trace.steps {
        names.extend(s.calls.iter().map(|c| c.name.as_str()));
        if !s.fan_out.is_empty() {
            names.push(SUBAGENT_TOOL);
        }
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(*n));
    names.into_iter().map(tool).collect()
}
