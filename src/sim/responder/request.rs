//! What a generation request asks for: the request bodies of every simulated API read into
//! one shape (prompt text, length limit, streaming, cache switch, a tool to call).

use crate::sim::wire::SimApi;
use serde::Deserialize;

/// A request to any of the simulated APIs: the union of the fields they use.
#[derive(Deserialize, Default)]
pub(super) struct SimRequest {
    #[serde(default)]
    pub(super) model: Option<String>,
    /// Chat Completions and Anthropic Messages.
    #[serde(default)]
    messages: Option<Vec<Message>>,
    /// Anthropic Messages: the system prompt (a string or text blocks).
    #[serde(default)]
    system: Option<serde_json::Value>,
    /// Completions and llama.cpp `/completion`.
    #[serde(default)]
    prompt: Option<serde_json::Value>,
    /// Responses: a string or a list of messages.
    #[serde(default)]
    input: Option<serde_json::Value>,
    /// SGLang `/generate`.
    #[serde(default)]
    text: Option<serde_json::Value>,
    /// TGI `/generate_stream`.
    #[serde(default)]
    inputs: Option<String>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    max_output_tokens: Option<u32>,
    /// llama.cpp `/completion`.
    #[serde(default)]
    n_predict: Option<i64>,
    #[serde(default)]
    pub(super) min_tokens: Option<u32>,
    #[serde(default)]
    ignore_eos: bool,
    /// llama.cpp's per-request switch: `false` means no prompt reuse, as the real server.
    #[serde(default)]
    pub(super) cache_prompt: Option<bool>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    pub(super) stream_options: Option<StreamOptions>,
    /// TGI's parameters.
    #[serde(default)]
    parameters: Option<NativeParams>,
    /// SGLang's parameters.
    #[serde(default)]
    sampling_params: Option<NativeParams>,
    /// Chat, Responses and Messages: the tools offered (only their names are read).
    #[serde(default)]
    tools: Option<Vec<serde_json::Value>>,
    /// Whether and which tool must be called.
    #[serde(default)]
    tool_choice: Option<serde_json::Value>,
}

/// TGI `parameters` / SGLang `sampling_params`: the fields the simulator reads.
#[derive(Deserialize, Default)]
struct NativeParams {
    #[serde(default)]
    max_new_tokens: Option<u32>,
    #[serde(default)]
    ignore_eos: bool,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: serde_json::Value,
}

#[derive(Deserialize, Default)]
pub(super) struct StreamOptions {
    #[serde(default)]
    pub(super) include_usage: bool,
    #[serde(default)]
    pub(super) continuous_usage_stats: bool,
}

impl SimRequest {
    /// The prompt text the API carries (messages' contents joined by newlines).
    pub(super) fn prompt_text(&self, api: SimApi) -> String {
        let join = |msgs: &[Message]| {
            msgs.iter()
                .map(|m| text_of(&m.content))
                .collect::<Vec<_>>()
                .join("\n")
        };
        match api {
            SimApi::Chat | SimApi::Websocket => match (&self.messages, &self.prompt) {
                (Some(m), _) => join(m),
                (None, Some(p)) => text_of(p),
                (None, None) => String::new(),
            },
            SimApi::Messages => {
                let mut parts = Vec::new();
                if let Some(s) = &self.system {
                    parts.push(text_of(s));
                }
                if let Some(m) = &self.messages {
                    parts.push(join(m));
                }
                parts.join("\n")
            }
            SimApi::Responses => match &self.input {
                // Messages' content, and tools' results (`function_call_output` items).
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .map(|m| {
                        m.get("content")
                            .or_else(|| m.get("output"))
                            .map(text_of)
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                Some(v) => text_of(v),
                None => String::new(),
            },
            SimApi::Completions | SimApi::Llamacpp | SimApi::Grpc => {
                self.prompt.as_ref().map(text_of).unwrap_or_default()
            }
            SimApi::Sglang => self.text.as_ref().map(text_of).unwrap_or_default(),
            SimApi::Tgi => self.inputs.clone().unwrap_or_default(),
        }
    }

    /// Every content part of the API's messages (the elements of `content` arrays): where
    /// images and audio travel (`vision`).
    pub(super) fn content_parts(&self, api: SimApi) -> Vec<&serde_json::Value> {
        let arrays: Vec<&serde_json::Value> = match api {
            SimApi::Chat | SimApi::Websocket | SimApi::Messages => {
                self.messages.iter().flatten().map(|m| &m.content).collect()
            }
            SimApi::Responses => match &self.input {
                Some(serde_json::Value::Array(items)) => {
                    items.iter().filter_map(|m| m.get("content")).collect()
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        arrays
            .into_iter()
            .filter_map(|c| c.as_array())
            .flatten()
            .collect()
    }

    /// The length limit the API's field sets.
    pub(super) fn max_tokens(&self, api: SimApi) -> Option<u32> {
        match api {
            SimApi::Chat | SimApi::Completions | SimApi::Websocket | SimApi::Grpc => {
                self.max_completion_tokens.or(self.max_tokens)
            }
            SimApi::Messages => self.max_tokens,
            SimApi::Responses => self.max_output_tokens,
            // llama.cpp: -1 means no limit.
            SimApi::Llamacpp => self.n_predict.and_then(|n| u32::try_from(n).ok()),
            SimApi::Tgi => self.parameters.as_ref().and_then(|p| p.max_new_tokens),
            SimApi::Sglang => self.sampling_params.as_ref().and_then(|p| p.max_new_tokens),
        }
    }

    /// Whether EOS is ignored (TGI has no such option).
    pub(super) fn ignores_eos(&self, api: SimApi) -> bool {
        match api {
            SimApi::Sglang => self.sampling_params.as_ref().is_some_and(|p| p.ignore_eos),
            SimApi::Tgi => false,
            _ => self.ignore_eos,
        }
    }

    /// The tool the answer calls, when the request offers tools and asks for a call: the
    /// one `tool_choice` names (Chat `{"type":"function","function":{"name"}}`, Responses
    /// `{"type":"function","name"}`, Messages `{"type":"tool","name"}`), else the first
    /// offered when a call is required (`"required"`, Messages `{"type":"any"}`). `None`
    /// (a text answer) for `auto`, `none`, no tools, or an API without tools.
    pub(super) fn tool_to_call(&self, api: SimApi) -> Option<String> {
        if !matches!(api, SimApi::Chat | SimApi::Responses | SimApi::Messages) {
            return None;
        }
        let name_of = |v: &serde_json::Value| {
            v.get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| v.get("name"))
                .and_then(|n| n.as_str())
                .map(str::to_owned)
        };
        let first = || self.tools.as_ref()?.iter().find_map(name_of);
        let choice = self.tool_choice.as_ref()?;
        let kind = choice
            .as_str()
            .or_else(|| choice.get("type").and_then(|t| t.as_str()));
        match kind? {
            "required" | "any" => first(),
            "function" | "tool" => name_of(choice).or_else(first),
            _ => None,
        }
        .filter(|_| self.tools.as_ref().is_some_and(|t| !t.is_empty()))
    }

    /// Whether the answer streams (TGI's route always does).
    pub(super) fn streams(&self, api: SimApi) -> bool {
        matches!(api, SimApi::Tgi | SimApi::Websocket | SimApi::Grpc) || self.stream
    }
}

pub(super) fn text_of(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| {
                p.get("text")
                    .and_then(|t| t.as_str())
                    // Anthropic's `tool_result` blocks carry their text as `content`.
                    .or_else(|| p.get("content").and_then(|t| t.as_str()))
                    .or_else(|| p.as_str())
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(body: serde_json::Value, api: SimApi) -> Option<String> {
        serde_json::from_value::<SimRequest>(body)
            .unwrap()
            .tool_to_call(api)
    }

    #[test]
    fn a_call_is_made_only_when_one_is_asked_for() {
        use serde_json::json;
        let chat_tools = json!([{"type": "function", "function": {"name": "search"}},
                                {"type": "function", "function": {"name": "fetch"}}]);
        let flat_tools = json!([{"type": "function", "name": "search"}, {"name": "fetch"}]);
        let chat = |choice| json!({"tools": chat_tools, "tool_choice": choice});
        let flat = |choice| json!({"tools": flat_tools, "tool_choice": choice});
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(tool(chat(json!("required")), SimApi::Chat), some("search"));
        let named = json!({"type": "function", "function": {"name": "fetch"}});
        assert_eq!(tool(chat(named), SimApi::Chat), some("fetch"));
        assert_eq!(tool(chat(json!("auto")), SimApi::Chat), None);
        assert_eq!(tool(chat(json!("none")), SimApi::Chat), None);
        assert_eq!(tool(json!({"tool_choice": "required"}), SimApi::Chat), None);
        assert_eq!(tool(json!({"tools": chat_tools}), SimApi::Chat), None);
        assert_eq!(tool(chat(json!("required")), SimApi::Completions), None);
        assert_eq!(
            tool(flat(json!("required")), SimApi::Responses),
            some("search")
        );
        let named = json!({"type": "function", "name": "fetch"});
        assert_eq!(tool(flat(named), SimApi::Responses), some("fetch"));
        assert_eq!(
            tool(flat(json!({"type": "any"})), SimApi::Messages),
            some("search")
        );
        let named = json!({"type": "tool", "name": "fetch"});
        assert_eq!(tool(flat(named), SimApi::Messages), some("fetch"));
        assert_eq!(tool(flat(json!({"type": "auto"})), SimApi::Messages), None);
    }
}
