//! The server's own tokenizer through its HTTP API (the draft's Option A). It lives with the
//! client, which speaks HTTP; `tokenizer` stays below the client and knows only the trait.
//!
//! llama.cpp: `POST /tokenize {"content", "add_special", "with_pieces"}` and
//! `POST /apply-template {"messages"}`; vLLM: `POST /tokenize {"model", "prompt"}` or
//! `{"model", "messages"}` (template applied). Calls are blocking (this runs on the feeder
//! and writer threads, never on the client runtime).

use super::simple::call;
use super::{BaseUrl, Target};
use crate::tokenizer::{SharedTokenizer, TokenId, Tokenizer, TokenizerError};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Loads a tokenizer that may be the target server's own (`server`); any other name as
/// [`crate::tokenizer::load`] reads it.
pub fn load_for(name: &str, target: &Target) -> Result<SharedTokenizer, TokenizerError> {
    match name {
        "server" => Ok(Arc::new(ServerTokenizer::connect(target)?)),
        other => crate::tokenizer::load(other),
    }
}

/// Which chat-template route the server has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TemplateRoute {
    /// llama.cpp `/apply-template`, then `/tokenize` of the result.
    ApplyTemplate,
    /// vLLM `/tokenize` with `messages`.
    TokenizeMessages,
    /// None found: message texts are counted without template.
    None,
}

/// A remote tokenizer.
pub struct ServerTokenizer {
    url: BaseUrl,
    target: Target,
    /// Its own runtime for the blocking calls; `None` only while being dropped.
    rt: Option<tokio::runtime::Runtime>,
    name: String,
    template: TemplateRoute,
    /// Template count by the server (`true`) or plain text (`false`), for the chat endpoint.
    chat: bool,
}

/// The last holder of a server tokenizer may be a task of the run's own runtime (the run
/// ends there): dropping a runtime inside another panics, so its own is shut down in the
/// background instead.
impl Drop for ServerTokenizer {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl ServerTokenizer {
    /// Connects to the target's `/tokenize`, checking that it answers.
    pub fn connect(target: &Target) -> Result<Self, TokenizerError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TokenizerError::Load {
                name: "server".into(),
                detail: e.to_string(),
            })?;
        let root = BaseUrl::parse(&target.url.root()).map_err(|e| TokenizerError::Load {
            name: "server".into(),
            detail: e.to_string(),
        })?;
        let mut t = Self {
            url: root,
            target: target.clone(),
            rt: Some(rt),
            name: format!("server ({})", target.model),
            template: TemplateRoute::None,
            // Chat-shaped APIs apply the server's chat template; completions and the native
            // routes send raw text.
            chat: matches!(
                target.endpoint,
                crate::client::Endpoint::Chat
                    | crate::client::Endpoint::Responses
                    | crate::client::Endpoint::Messages
            ),
        };
        if t.tokenize("hello world", false).is_none() {
            return Err(TokenizerError::Load {
                name: "server".into(),
                detail: format!("{}/tokenize did not answer with tokens: does this server have a tokenize endpoint (llama.cpp, vLLM)?", target.url.root()),
            });
        }
        let probe = vec![("user".to_owned(), "hello".to_owned())];
        t.template = if t.apply_template(&probe).is_some() {
            TemplateRoute::ApplyTemplate
        } else if t.tokenize_messages(&probe).is_some_and(|n| n > 0) {
            TemplateRoute::TokenizeMessages
        } else {
            TemplateRoute::None
        };
        Ok(t)
    }

    fn post(&self, path: &str, body: &Value) -> Option<Value> {
        let bytes = serde_json::to_vec(body).ok()?;
        let r = self
            .rt
            .as_ref()?
            .block_on(call(
                &self.url,
                Some(&self.target),
                "POST",
                path,
                Some(&bytes),
                Duration::from_secs(30),
            ))
            .ok()?;
        if r.status != 200 {
            return None;
        }
        serde_json::from_slice(&r.body).ok()
    }

    fn ids(v: &Value) -> Option<Vec<TokenId>> {
        v.get("tokens")?
            .as_array()?
            .iter()
            .map(|t| {
                t.as_u64()
                    .or_else(|| t.get("id")?.as_u64())
                    .map(|n| n as TokenId)
            })
            .collect()
    }

    fn tokenize(&self, text: &str, add_special: bool) -> Option<Vec<TokenId>> {
        let body = json!({"content": text, "prompt": text, "add_special": add_special, "add_special_tokens": add_special, "model": self.target.model});
        Self::ids(&self.post("/tokenize", &body)?)
    }

    fn apply_template(&self, messages: &[(String, String)]) -> Option<String> {
        let msgs: Vec<Value> = messages
            .iter()
            .map(|(r, c)| json!({"role": r, "content": c}))
            .collect();
        let v = self.post("/apply-template", &json!({"messages": msgs}))?;
        v.get("prompt")?.as_str().map(str::to_owned)
    }

    fn tokenize_messages(&self, messages: &[(String, String)]) -> Option<usize> {
        let msgs: Vec<Value> = messages
            .iter()
            .map(|(r, c)| json!({"role": r, "content": c}))
            .collect();
        let v = self.post(
            "/tokenize",
            &json!({"model": self.target.model, "messages": msgs, "add_generation_prompt": true}),
        )?;
        v.get("count")
            .and_then(|c| c.as_u64())
            .map(|c| c as usize)
            .or_else(|| Self::ids(&v).map(|t| t.len()))
    }
}

impl Tokenizer for ServerTokenizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn source(&self) -> &str {
        "server /tokenize"
    }

    fn vocab_size(&self) -> usize {
        0
    }

    fn encode(&self, text: &str) -> Vec<TokenId> {
        self.tokenize(text, false).unwrap_or_default()
    }

    fn decode(&self, ids: &[TokenId]) -> String {
        self.post("/detokenize", &json!({"tokens": ids}))
            .and_then(|v| {
                v.get("content")
                    .or_else(|| v.get("prompt"))
                    .and_then(|c| c.as_str())
                    .map(str::to_owned)
            })
            .unwrap_or_default()
    }

    fn token_byte_lengths(&self, text: &str) -> Vec<usize> {
        // llama.cpp returns each token's text with `with_pieces`.
        let body = json!({"content": text, "add_special": false, "with_pieces": true});
        if let Some(v) = self.post("/tokenize", &body) {
            if let Some(pieces) = v.get("tokens").and_then(|t| t.as_array()) {
                let lens: Option<Vec<usize>> = pieces
                    .iter()
                    .map(|p| match p.get("piece")? {
                        Value::String(s) => Some(s.len()),
                        Value::Array(bytes) => Some(bytes.len()),
                        _ => None,
                    })
                    .collect();
                if let Some(l) = lens.filter(|l| l.iter().sum::<usize>() == text.len()) {
                    return l;
                }
            }
        }
        // Otherwise an even split of the text over the server's count.
        let n = self.count(text).max(1);
        let (q, r) = (text.len() / n, text.len() % n);
        (0..n).map(|i| q + usize::from(i < r)).collect()
    }

    fn count(&self, text: &str) -> usize {
        self.tokenize(text, false).map(|t| t.len()).unwrap_or(0)
    }

    fn count_messages(&self, messages: &[(String, String)]) -> usize {
        if !self.chat {
            // Completions: the prompt as sent, with the BOS the server adds.
            let text: Vec<&str> = messages.iter().map(|(_, c)| c.as_str()).collect();
            return self
                .tokenize(&text.join("\n\n"), true)
                .map(|t| t.len())
                .unwrap_or(0);
        }
        match self.template {
            TemplateRoute::ApplyTemplate => self
                .apply_template(messages)
                .and_then(|p| {
                    let body = json!({"content": p, "add_special": true, "parse_special": true});
                    Self::ids(&self.post("/tokenize", &body)?)
                })
                .map(|t| t.len())
                .unwrap_or(0),
            TemplateRoute::TokenizeMessages => self.tokenize_messages(messages).unwrap_or(0),
            TemplateRoute::None => messages.iter().map(|(_, c)| self.count(c)).sum(),
        }
    }

    fn enumerable(&self) -> bool {
        false
    }
}
