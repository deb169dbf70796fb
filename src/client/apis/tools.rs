//! Tools in request bodies: the tools an agent session offers, and its history's tool calls
//! and results, in each API's own form (Chat Completions, Responses, Anthropic Messages).
//!
//! The history is the plan's (`workload::agent`): the same bytes go to every server. Only
//! these three APIs have fields for tools (their `dialect` rows name a [`ToolForm`];
//! `Endpoint::takes_tools`); the configuration refuses an agent workload on the others
//! before anything is sent.
//!
//! | API | tools | a call in the history | a result |
//! |---|---|---|---|
//! | chat | `{"type":"function","function":{name, description, parameters}}` | an assistant message with `tool_calls` | a `tool` message |
//! | responses | `{"type":"function", name, description, parameters}` | a `function_call` item | a `function_call_output` item |
//! | messages | `{name, description, input_schema}` | an assistant message of `tool_use` blocks | `tool_result` blocks in one user message |

use super::dialect::ToolForm;
use super::Prompt;
use crate::workload::agent::{conversation, AgentParts, Msg, ToolCall};
use serde_json::{json, Map, Value};

/// Adds `tools` and `tool_choice` in `form`: a tool call is required when the plan's
/// answer calls tools (`calls_tools`), else the model chooses (`auto`: the session's last
/// step, answered in text).
pub fn insert_tools(form: ToolForm, body: &mut Map<String, Value>, agent: &AgentParts) {
    let tools: Vec<Value> = agent
        .tools
        .iter()
        .map(|t| match form {
            ToolForm::Responses => json!({"type": "function", "name": t.name,
                "description": t.description, "parameters": t.parameters}),
            ToolForm::Messages => json!({"name": t.name, "description": t.description,
                "input_schema": t.parameters}),
            ToolForm::Chat => json!({"type": "function", "function": {"name": t.name,
                "description": t.description, "parameters": t.parameters}}),
        })
        .collect();
    let choice = match (form, agent.calls_tools) {
        (ToolForm::Messages, true) => json!({"type": "any"}),
        (ToolForm::Messages, false) => json!({"type": "auto"}),
        (_, true) => json!("required"),
        (_, false) => json!("auto"),
    };
    body.insert("tools".into(), Value::Array(tools));
    body.insert("tool_choice".into(), choice);
}

/// Chat Completions `messages`: the conversation with its tool parts woven in (without
/// an agent, the text messages alone, as [`Prompt::messages_json`] writes them).
pub fn chat_messages(prompt: &Prompt<'_>) -> Value {
    let messages = conversation(prompt.messages, prompt.agent).map(|m| match m {
        Msg::Text { role, content } => json!({"role": role, "content": content}),
        Msg::Calls(calls) => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            json!({"role": "assistant", "content": null, "tool_calls": calls})
        }
        Msg::Result {
            call_id, content, ..
        } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
    });
    Value::Array(messages.collect())
}

/// Responses `input` items: text messages as `{role, content}`, each call of the history
/// as a `function_call` item, each result as a `function_call_output` item.
pub fn responses_input(prompt: &Prompt<'_>) -> Value {
    let mut items = Vec::new();
    for m in conversation(prompt.messages, prompt.agent) {
        match m {
            Msg::Text { role, content } => items.push(json!({"role": role, "content": content})),
            Msg::Calls(calls) => items.extend(calls.iter().map(|c| {
                json!({"type": "function_call", "call_id": c.id, "name": c.name,
                    "arguments": c.arguments})
            })),
            Msg::Result {
                call_id, content, ..
            } => items.push(json!({"type": "function_call_output", "call_id": call_id,
                "output": content})),
        }
    }
    Value::Array(items)
}

/// Anthropic `messages` (the turns; system texts go to `system`, see `anthropic`): a call
/// of the history is an assistant message of `tool_use` blocks, and results that follow one
/// another are one user message of `tool_result` blocks, since Anthropic wants every result
/// of a tool-use turn in the user turn right after it.
pub fn anthropic_turns(prompt: &Prompt<'_>, is_system: impl Fn(&str) -> bool) -> Vec<Value> {
    let mut turns: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    for m in conversation(prompt.messages, prompt.agent) {
        if let Msg::Result {
            call_id, content, ..
        } = m
        {
            results.push(json!({"type": "tool_result", "tool_use_id": call_id,
                "content": content}));
            continue;
        }
        if !results.is_empty() {
            let blocks = std::mem::take(&mut results);
            turns.push(json!({"role": "user", "content": blocks}));
        }
        match m {
            Msg::Text { role, .. } if is_system(role) => {}
            Msg::Text { role, content } => turns.push(json!({"role": role, "content": content})),
            Msg::Calls(calls) => {
                let blocks: Vec<Value> = calls.iter().map(tool_use_block).collect();
                turns.push(json!({"role": "assistant", "content": blocks}));
            }
            Msg::Result { .. } => unreachable!("results were taken above"),
        }
    }
    if !results.is_empty() {
        turns.push(json!({"role": "user", "content": results}));
    }
    turns
}

/// A call as Anthropic's `tool_use` block, its arguments parsed into the `input` object the
/// API wants. Arguments that are not a JSON object (never so in a planned history) are
/// sent as `{}` rather than as a body the API would refuse.
fn tool_use_block(call: &ToolCall) -> Value {
    let input = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Map::new()),
    };
    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
}

/// Whether a message is a turn of tool results (Anthropic: a user message whose content
/// starts with a `tool_result` block): not a turn the user wrote, so images never go there.
pub fn is_tool_results(message: &Value) -> bool {
    message
        .get("content")
        .and_then(Value::as_array)
        .and_then(|parts| parts.first())
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        == Some("tool_result")
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
