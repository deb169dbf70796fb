//! What a generation request asks for: the request bodies of every simulated API read into
//! one shape (prompt text, length limit, streaming, cache switch).

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
                Some(serde_json::Value::Array(items)) => items
                    .iter()
                    .map(|m| m.get("content").map(text_of).unwrap_or_default())
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
                    .or_else(|| p.as_str())
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}
