//! Answers that call a tool, in each API's dialect (Chat Completions, Responses, Messages).
//!
//! When a request offers tools and asks for a call, the simulated model answers with one
//! call of one tool whose arguments are `{"query":"<the generated words>"}`: its tokens
//! are the answer's output tokens, as many and as timed as a text answer's, so a client's
//! timing of argument fragments can be checked against the truth. The first write carries
//! the call's id and name with `{"query":"` and its tokens, each later write its tokens,
//! the last one closes the JSON. The call always ends whole (a length limit still closes
//! the arguments), with the API's tool-call ending.

use super::{Block, SimApi, StreamWriter};
use std::fmt::Write as _;

/// The call a tool-call answer makes.
#[derive(Debug, Clone, PartialEq)]
pub struct SimToolCall {
    /// The call's id (`call_…`, Messages: `toolu_…`).
    pub id: String,
    /// The tool's name as a JSON string literal (quotes and escapes included).
    pub name_json: String,
    /// The arguments written so far (raw JSON text).
    pub arguments: String,
    /// Whether the call was started (its first write went out).
    pub open: bool,
}

impl SimToolCall {
    /// A call of `name` with id `id`.
    pub fn new(id: String, name: &str) -> Self {
        Self {
            id,
            name_json: serde_json::to_string(name).unwrap_or_else(|_| "\"tool\"".into()),
            arguments: String::new(),
            open: false,
        }
    }

    /// The arguments of an answer whose words are `text`, whole (non-streamed answers).
    pub fn whole_arguments(text: &str) -> String {
        serde_json::json!({ "query": text }).to_string()
    }

    /// The next fragment of the arguments: `piece` (opened with `{"query":"` on the first
    /// write, closed with `"}` on the last), kept raw and returned escaped for a JSON string.
    fn fragment(&mut self, piece: &str, last: bool) -> String {
        let mut raw = String::new();
        if !self.open {
            raw.push_str("{\"query\":\"");
        }
        raw.push_str(piece);
        if last {
            raw.push_str("\"}");
        }
        self.arguments.push_str(&raw);
        self.open = true;
        escaped(&raw)
    }
}

/// `text` escaped for the inside of a JSON string literal.
fn escaped(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or("")
        .to_owned()
}

impl StreamWriter {
    /// Tool calls this answer has made so far (0 or 1).
    pub fn tool_calls_made(&self) -> u32 {
        self.tool_call.as_ref().map_or(0, |c| u32::from(c.open))
    }

    /// Whether the answer's tokens after reasoning go into a tool call.
    pub(super) fn calls_tool(&self) -> bool {
        self.tool_call.is_some()
            && matches!(
                self.api,
                SimApi::Chat | SimApi::Responses | SimApi::Messages
            )
    }

    /// The event(s) carrying `piece` as the call's next arguments fragment; `last` on the
    /// answer's last write.
    pub(super) fn tool_tokens(&mut self, out: &mut String, piece: &str, sent: u32, last: bool) {
        let Some(mut call) = self.tool_call.take() else {
            return;
        };
        let first = !call.open;
        let fragment = call.fragment(piece, last);
        match self.api {
            SimApi::Chat => {
                let body = if first {
                    format!(
                        "\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"{}\",\"type\":\"function\",\"function\":{{\"name\":{},\"arguments\":\"{fragment}\"}}}}]}}",
                        call.id, call.name_json
                    )
                } else {
                    format!("\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{fragment}\"}}}}]}}")
                };
                let usage = self.continuous.then(|| self.chat_usage(sent));
                self.chat_chunk(out, &body, last.then_some("tool_calls"), usage.as_deref());
            }
            SimApi::Responses => self.responses_call(out, &call, first, &fragment),
            SimApi::Messages => self.messages_call(out, &call, first, &fragment),
            _ => {}
        }
        self.tool_call = Some(call);
    }

    /// Responses: the `function_call` item added before the first fragment, then one
    /// `response.function_call_arguments.delta` per write.
    fn responses_call(
        &mut self,
        out: &mut String,
        call: &SimToolCall,
        first: bool,
        fragment: &str,
    ) {
        let index = u32::from(self.reasoning_tokens > 0);
        if first {
            let item = self.function_call_item(call, "in_progress", "");
            self.typed(
                out,
                "response.output_item.added",
                format_args!("\"output_index\":{index},\"item\":{item}"),
            );
        }
        let id = self.id.clone();
        self.typed(
            out,
            "response.function_call_arguments.delta",
            format_args!(
                "\"item_id\":\"fc_{id}\",\"output_index\":{index},\"delta\":\"{fragment}\""
            ),
        );
    }

    /// Responses: a `function_call` output item with `arguments` (raw JSON text).
    fn function_call_item(&self, call: &SimToolCall, status: &str, arguments: &str) -> String {
        format!(
            "{{\"id\":\"fc_{}\",\"type\":\"function_call\",\"status\":\"{status}\",\"arguments\":\"{}\",\"call_id\":\"{}\",\"name\":{}}}",
            self.id,
            escaped(arguments),
            call.id,
            call.name_json
        )
    }

    /// Messages: the open block stopped and a `tool_use` block started before the first
    /// fragment, then one `input_json_delta` per write.
    fn messages_call(&mut self, out: &mut String, call: &SimToolCall, first: bool, fragment: &str) {
        if first {
            if self.block.is_some() {
                let _ = write!(
                    out,
                    "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{}}}\n\n",
                    self.next_index - 1
                );
            }
            let _ = write!(
                out,
                "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"{}\",\"name\":{},\"input\":{{}}}}}}\n\n",
                self.next_index, call.id, call.name_json
            );
            self.block = Some(Block::Tool);
            self.next_index += 1;
        }
        let _ = write!(
            out,
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{fragment}\"}}}}\n\n",
            self.next_index - 1
        );
    }

    /// Responses: the events that end a call's answer of `sent` tokens (the arguments done,
    /// the item done, the response completed with the item as its output). `false`, writing
    /// nothing, when no call was made.
    pub(super) fn responses_call_end(&mut self, out: &mut String, sent: u32) -> bool {
        let Some(call) = self.tool_call.clone().filter(|c| c.open) else {
            return false;
        };
        let index = u32::from(self.reasoning_tokens > 0);
        let (args, id) = (escaped(&call.arguments), self.id.clone());
        self.typed(
            out,
            "response.function_call_arguments.done",
            format_args!(
                "\"item_id\":\"fc_{id}\",\"output_index\":{index},\"arguments\":\"{args}\""
            ),
        );
        let item = self.function_call_item(&call, "completed", &call.arguments);
        self.typed(
            out,
            "response.output_item.done",
            format_args!("\"output_index\":{index},\"item\":{item}"),
        );
        let usage = self.responses_usage(sent);
        let r = self.response_object_with(
            "completed",
            &format!("[{item}]"),
            &format!(",\"usage\":{usage}"),
        );
        self.typed(out, "response.completed", format_args!("\"response\":{r}"));
        true
    }
}
