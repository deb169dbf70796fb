//! Agent sessions: requests that offer tools, answers that call them, and the tool results
//! sent back in the next step.
//!
//! An agent session is a chain of steps. Each step is one request, or several sent at once
//! (a fan-out: sub-agents that share the session's history as their prefix), and the next
//! step waits for all of them (the join) plus a tool's time. The conversation each request
//! carries is planned ahead, like every other workload here: the assistant's tool calls and
//! the tools' results in the history are the plan's, not the server's answers, so the same
//! seed sends the same bytes on every server (the way recorded agent traces are replayed by
//! the peers). What the server actually answered (how many tool calls) is recorded.
//!
//! The text messages stay the `(role, content)` pairs every API reads; the tool-call parts
//! are an overlay ([`AgentParts`]) that the APIs with tools (Chat Completions, Responses,
//! Messages) weave in through [`conversation`].

use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub mod otel;
pub mod plan;
pub mod synthetic;
pub mod trace;

/// One tool offered to the model (`tools` in the request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// The arguments' JSON schema.
    pub parameters: serde_json::Value,
}

/// One call of a tool, as the assistant's message in the history carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, which its result names (`call_…`).
    pub id: String,
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// A tool-call part of the history, woven between the text messages.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum AgentMessage {
    /// An assistant message that calls these tools (several: called in parallel).
    Calls(Vec<ToolCall>),
    /// A tool's result, answering the call with id `call_id`.
    Result {
        call_id: String,
        name: String,
        content: String,
    },
}

/// The tool parts of one request of an agent session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentParts {
    /// The tools offered (the same list in every request of a session).
    pub tools: Arc<Vec<ToolDef>>,
    /// Tool-call parts, each placed before the text message at its index (an index equal to
    /// the number of text messages: after the last one), in order.
    pub inserts: Vec<(usize, AgentMessage)>,
    /// Whether the plan's answer to this request calls tools: the request then asks for a
    /// tool call (`tool_choice: "required"`), the last step of a session for text (`auto`).
    pub calls_tools: bool,
}

/// One message of a request's conversation, text or tool part, in the order sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Msg<'a> {
    Text {
        role: &'a str,
        content: &'a str,
    },
    Calls(&'a [ToolCall]),
    Result {
        call_id: &'a str,
        name: &'a str,
        content: &'a str,
    },
}

/// The conversation of a request in the order it is sent: the text messages with the
/// agent's tool parts woven in at their places.
pub fn conversation<'a>(
    messages: &'a [(String, String)],
    agent: Option<&'a AgentParts>,
) -> impl Iterator<Item = Msg<'a>> + 'a {
    let inserts: &'a [(usize, AgentMessage)] = agent.map_or(&[], |a| a.inserts.as_slice());
    let mut next_insert = 0usize;
    let mut next_text = 0usize;
    std::iter::from_fn(move || {
        // A part placed at or before the next text message goes first; past the last text
        // message, the remaining parts follow in order.
        let text_left = next_text < messages.len();
        if let Some((_, m)) = inserts
            .get(next_insert)
            .filter(|(at, _)| *at <= next_text || !text_left)
        {
            next_insert += 1;
            return Some(m.as_msg());
        }
        let (role, content) = messages.get(next_text)?;
        next_text += 1;
        Some(Msg::Text { role, content })
    })
}

impl AgentMessage {
    /// The part as one message of the conversation.
    fn as_msg(&self) -> Msg<'_> {
        match self {
            AgentMessage::Calls(c) => Msg::Calls(c),
            AgentMessage::Result {
                call_id,
                name,
                content,
            } => Msg::Result {
                call_id,
                name,
                content,
            },
        }
    }
}

/// The conversation flattened to `(role, text)` pairs for counting tokens with a chat
/// template: a call is the assistant writing `name(arguments)`, a result is a `tool`
/// message. The tools' own definitions are counted apart ([`tools_text`]).
pub fn flattened(
    messages: &[(String, String)],
    agent: Option<&AgentParts>,
) -> Vec<(String, String)> {
    conversation(messages, agent)
        .map(|m| match m {
            Msg::Text { role, content } => (role.to_owned(), content.to_owned()),
            Msg::Calls(calls) => (
                "assistant".to_owned(),
                calls
                    .iter()
                    .map(|c| format!("{}({})", c.name, c.arguments))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Msg::Result { content, .. } => ("tool".to_owned(), content.to_owned()),
        })
        .collect()
}

/// The tools' definitions as the JSON text a chat template writes into the prompt (one per
/// line), for counting their tokens.
pub fn tools_text(tools: &[ToolDef]) -> String {
    tools
        .iter()
        .map(|t| {
            serde_json::json!({"name": t.name, "description": t.description, "parameters": t.parameters})
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
