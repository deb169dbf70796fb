//! Bodies with tools and a two-step history (two parallel calls and their results, then one
//! more call and its result), written exactly, for each API that takes tools.

use super::*;
use crate::client::{Endpoint, RequestOptions};
use crate::workload::agent::{AgentMessage, ToolDef};
use std::sync::Arc;

fn call(id: &str, query: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "search".into(),
        arguments: format!(r#"{{"q":"{query}"}}"#),
    }
}

fn result(id: &str, content: &str) -> AgentMessage {
    AgentMessage::Result {
        call_id: id.into(),
        name: "search".into(),
        content: content.into(),
    }
}

/// A session's third request: the system prompt and the task, then the two steps' calls
/// and results after the last text message; it asks for another call.
fn agent(calls_tools: bool) -> AgentParts {
    AgentParts {
        tools: Arc::new(vec![ToolDef {
            name: "search".into(),
            description: "Search the docs.".into(),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        }]),
        inserts: vec![
            (
                2,
                AgentMessage::Calls(vec![call("call_1", "a"), call("call_2", "b")]),
            ),
            (2, result("call_1", "A")),
            (2, result("call_2", "B")),
            (2, AgentMessage::Calls(vec![call("call_3", "c")])),
            (2, result("call_3", "C")),
        ],
        calls_tools,
    }
}

fn body(endpoint: Endpoint, agent: &AgentParts) -> Value {
    let messages = vec![
        ("system".to_owned(), "Be brief.".to_owned()),
        ("user".to_owned(), "Find it.".to_owned()),
    ];
    let prompt = Prompt {
        messages: &messages,
        max_tokens: 8,
        overrides: &[],
        agent: Some(agent),
    };
    let opts = RequestOptions::default();
    let target = super::super::tests::target(endpoint, None, &[]);
    serde_json::from_slice(&super::super::request_body(&target, &prompt, &opts)).unwrap()
}

#[test]
fn chat_body_has_tools_calls_and_tool_messages() {
    let v = body(Endpoint::Chat, &agent(true));
    let args = |q: &str| format!(r#"{{"q":"{q}"}}"#);
    assert_eq!(
        v["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Find it."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": args("a")}},
                {"id": "call_2", "type": "function", "function": {"name": "search", "arguments": args("b")}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "A"},
            {"role": "tool", "tool_call_id": "call_2", "content": "B"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "search", "arguments": args("c")}}]},
            {"role": "tool", "tool_call_id": "call_3", "content": "C"},
        ])
    );
    assert_eq!(
        v["tools"],
        json!([{"type": "function", "function": {"name": "search", "description": "Search the docs.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}])
    );
    assert_eq!(v["tool_choice"], "required");
    let v = body(Endpoint::Chat, &agent(false));
    assert_eq!(v["tool_choice"], "auto", "the last step asks for text");
}

#[test]
fn responses_body_has_function_call_items() {
    let v = body(Endpoint::Responses, &agent(true));
    assert_eq!(
        v["input"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Find it."},
            {"type": "function_call", "call_id": "call_1", "name": "search", "arguments": "{\"q\":\"a\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "search", "arguments": "{\"q\":\"b\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "A"},
            {"type": "function_call_output", "call_id": "call_2", "output": "B"},
            {"type": "function_call", "call_id": "call_3", "name": "search", "arguments": "{\"q\":\"c\"}"},
            {"type": "function_call_output", "call_id": "call_3", "output": "C"},
        ])
    );
    assert_eq!(
        v["tools"],
        json!([{"type": "function", "name": "search", "description": "Search the docs.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}])
    );
    assert_eq!(v["tool_choice"], "required");
    assert_eq!(
        body(Endpoint::Responses, &agent(false))["tool_choice"],
        "auto"
    );
}

#[test]
fn messages_body_has_tool_use_turns_and_grouped_results() {
    let v = body(Endpoint::Messages, &agent(true));
    assert_eq!(v["system"], "Be brief.");
    assert_eq!(
        v["messages"],
        json!([
            {"role": "user", "content": "Find it."},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_1", "name": "search", "input": {"q": "a"}},
                {"type": "tool_use", "id": "call_2", "name": "search", "input": {"q": "b"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "B"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_3", "name": "search", "input": {"q": "c"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_3", "content": "C"}]},
        ])
    );
    assert_eq!(
        v["tools"],
        json!([{"name": "search", "description": "Search the docs.",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}])
    );
    assert_eq!(v["tool_choice"], json!({"type": "any"}));
    let v = body(Endpoint::Messages, &agent(false));
    assert_eq!(v["tool_choice"], json!({"type": "auto"}));
}

#[test]
fn extra_body_and_overrides_still_win_and_bad_arguments_send_an_empty_input() {
    let messages = vec![("user".to_owned(), "Find it.".to_owned())];
    let mut a = agent(true);
    a.inserts = vec![(1, AgentMessage::Calls(vec![call("call_9", "x")]))];
    if let (_, AgentMessage::Calls(c)) = &mut a.inserts[0] {
        c[0].arguments = "not json".into();
    }
    let prompt = Prompt {
        messages: &messages,
        max_tokens: 8,
        overrides: &[("tool_choice".into(), json!("none"))],
        agent: Some(&a),
    };
    let opts = RequestOptions {
        extra_body: vec![("parallel_tool_calls".into(), json!(false))],
        ..Default::default()
    };
    let target = super::super::tests::target(Endpoint::Messages, None, &[]);
    let v: Value =
        serde_json::from_slice(&super::super::request_body(&target, &prompt, &opts)).unwrap();
    assert_eq!(
        v["tool_choice"], "none",
        "the workload's override is applied last"
    );
    assert_eq!(v["parallel_tool_calls"], false);
    assert_eq!(v["messages"][1]["content"][0]["input"], json!({}));
}

#[test]
fn only_three_apis_take_tools() {
    let takes: Vec<Endpoint> = Endpoint::ALL
        .into_iter()
        .filter(|e| e.takes_tools())
        .collect();
    assert_eq!(
        takes,
        [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages]
    );
}

#[test]
fn images_still_go_to_the_users_own_turn() {
    use crate::workload::media::{MediaFormat, MediaKind, MediaPart};
    let img = MediaPart::from_bytes(
        MediaKind::Image,
        MediaFormat::Png,
        b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x02\0\0\0\x03".to_vec(),
        "synthetic",
    );
    let messages = vec![("user".to_owned(), "What is this?".to_owned())];
    let a = agent(true);
    let prompt = Prompt {
        messages: &messages,
        max_tokens: 8,
        overrides: &[],
        agent: Some(&a),
    };
    for endpoint in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
        let target = super::super::tests::target(endpoint, None, &[]);
        let bytes = super::super::media::request_body_with_media(
            &target,
            &prompt,
            &RequestOptions::default(),
            std::slice::from_ref(&img),
        );
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let key = if endpoint == Endpoint::Responses {
            "input"
        } else {
            "messages"
        };
        let first = &v[key][0];
        assert_eq!(first["role"], "user", "{endpoint:?}");
        assert_eq!(
            first["content"].as_array().unwrap().len(),
            2,
            "{endpoint:?}"
        );
        // One image in all, on the user's turn: none on a tool-result turn.
        let images = v[key]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|p| {
                ["image_url", "input_image", "image"].contains(&p["type"].as_str().unwrap_or(""))
            })
            .count();
        assert_eq!(images, 1, "{endpoint:?}: {v}");
    }
}
