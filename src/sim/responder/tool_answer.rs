//! A tool-call answer as one JSON body (`stream: false`), in the shape of the API the
//! request used; the streamed form is written by `sim::wire` (its `tool_call`).

use super::answer::Stream;
use crate::sim::wire::{SimApi, SimToolCall, StreamWriter};
use serde_json::{json, Value};

/// The whole answer of `sent` tokens whose words are `text`, as `call`'s arguments
/// (`{"query": text}`), with the API's tool-call ending and exact usage.
pub(super) fn non_streamed_call(
    wr: &StreamWriter,
    call: &SimToolCall,
    s: &Stream,
    text: &str,
    sent: u32,
) -> Value {
    let (p, c) = (wr.prompt_tokens, wr.cached);
    let name: Value = serde_json::from_str(&call.name_json).unwrap_or_default();
    let arguments = SimToolCall::whole_arguments(text);
    match wr.api {
        SimApi::Responses => json!({
            "id": wr.id, "object": "response", "status": "completed", "model": s.model,
            "output": [{"id": format!("fc_{}", wr.id), "type": "function_call", "status": "completed",
                        "call_id": call.id, "name": name, "arguments": arguments}],
            "usage": {"input_tokens": p, "output_tokens": sent, "input_tokens_details": {"cached_tokens": c}},
        }),
        SimApi::Messages => json!({
            "id": wr.id, "type": "message", "role": "assistant", "model": s.model,
            "content": [{"type": "tool_use", "id": call.id, "name": name, "input": {"query": text}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": p - c.min(p), "cache_read_input_tokens": c, "output_tokens": sent},
        }),
        _ => json!({
            "id": wr.id, "object": "chat.completion", "created": wr.created, "model": s.model,
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": call.id, "type": "function",
                                "function": {"name": name, "arguments": arguments}}]}}],
            "usage": {"prompt_tokens": p, "completion_tokens": sent, "total_tokens": p + sent,
                      "prompt_tokens_details": {"cached_tokens": c}},
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_api_answers_one_call_with_exact_usage() {
        let s = Stream {
            model: "m".into(),
            streaming: false,
            limit_hit: true,
            text_seed: 0,
        };
        let call = SimToolCall::new("call_3".into(), "search");
        let args = json!({"query": " the model"}).to_string();
        for api in [SimApi::Chat, SimApi::Responses, SimApi::Messages] {
            let mut wr = StreamWriter::new(api, "r1".into(), "\"m\"".into(), 7, true, false, 9, 0);
            wr.cached = 2;
            let v = non_streamed_call(&wr, &call, &s, " the model", 2);
            let (name, arguments, usage) = match api {
                SimApi::Chat => {
                    let c = &v["choices"][0];
                    assert_eq!(c["finish_reason"], "tool_calls");
                    let f = &c["message"]["tool_calls"][0]["function"];
                    (
                        f["name"].clone(),
                        f["arguments"].clone(),
                        &v["usage"]["completion_tokens"],
                    )
                }
                SimApi::Responses => {
                    let item = &v["output"][0];
                    assert_eq!(item["type"], "function_call");
                    (
                        item["name"].clone(),
                        item["arguments"].clone(),
                        &v["usage"]["output_tokens"],
                    )
                }
                _ => {
                    assert_eq!(v["stop_reason"], "tool_use");
                    let block = &v["content"][0];
                    let input = block["input"].to_string();
                    (
                        block["name"].clone(),
                        json!(input),
                        &v["usage"]["output_tokens"],
                    )
                }
            };
            assert_eq!((name, arguments), (json!("search"), json!(args)), "{api:?}");
            assert_eq!(*usage, 2, "{api:?}");
        }
    }
}
