//! The request options every request shares ([`RequestOptions`]), said in each API's own
//! words: one table ([`Dialect`], a row per API) and one writer ([`Dialect::write`]).
//!
//! Each API's file writes only what is its own (the model, the prompt in its shape); the
//! options (the length, temperature, EOS, the prefix-cache switch, streaming and usage,
//! the agent's tools, then `--extra-body` and the workload's per-request overrides) are
//! written here from the API's row. A new option is a field of the rows and a few lines of
//! the writer; a new API is a row. docs/apis.md ("Request options by API") shows the table.
//!
//! serde_json keeps object keys sorted here (no `preserve_order`), so the order in which
//! fields are written never changes the bytes; only which fields, and which is written
//! last when two write the same key (the overrides, last of all, win).

use super::kserve::GrpcBackend;
use super::Prompt;
use crate::client::{Endpoint, RequestOptions};
use serde_json::{json, Map, Value};

/// How one API says the shared request options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dialect {
    /// Where the sampling options (length, temperature, EOS) go: the body's top level
    /// (`None`), or an object under this key (SGLang's `sampling_params`, TGI's
    /// `parameters`), into which an `--extra-body` object under the same key is merged.
    pub params: Option<&'static str>,
    /// The name of the output-length field (`None`: not written).
    pub max_tokens: Option<&'static str>,
    pub temperature: Temperature,
    pub ignore_eos: IgnoreEos,
    pub prefix_cache: PrefixCache,
    pub stream: Stream,
    /// The form of the agent's tools, for the APIs that take tools (`None`: no field for
    /// tools; an agent workload is refused there before a run).
    pub tools: Option<ToolForm>,
}

/// How `--temperature` is said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temperature {
    /// Not written.
    Unsaid,
    /// `temperature` as given (nothing when unset).
    Field,
    /// TGI, which rejects 0: a positive temperature as `do_sample: true` and `temperature`,
    /// 0 as `do_sample: false` (greedy).
    DoSample,
}

/// How `--ignore-eos` (on) is said; nothing is written when it is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgnoreEos {
    /// The API has no way to ignore EOS.
    Unsaid,
    /// `ignore_eos: true`.
    Flag,
    /// `ignore_eos: true` and vLLM's `min_tokens` equal to the length, which makes the
    /// length exact even where EOS handling differs.
    FlagAndMinTokens,
}

/// How the prefix-cache switch (`--no-prefix-cache`) is said: llama.cpp's `cache_prompt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixCache {
    /// No per-request switch (a server flag).
    Unsaid,
    /// `cache_prompt: false` when off, nothing when on (an engine extension: llama.cpp
    /// reads it, hosted APIs would reject it).
    OffOnly,
    /// `cache_prompt: true` or `false`, always (llama.cpp's native route).
    Always,
}

/// How streaming is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The route streams; no field.
    Route,
    /// `stream: true`.
    Flag,
    /// `stream: true` and `stream_options.include_usage`, plus vLLM's
    /// `continuous_usage_stats` with `--usage-per-chunk`.
    FlagWithUsage,
}

/// The shape of the agent's tools (`tools::insert_tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolForm {
    /// Chat Completions: `{"type":"function","function":{…}}`, `tool_choice` `"required"`.
    Chat,
    /// Responses: `{"type":"function", name, …}`, `tool_choice` `"required"`.
    Responses,
    /// Anthropic Messages: `{name, description, input_schema}`, `tool_choice` `{"type":"any"}`.
    Messages,
}

/// One sampling option's value, before it is written as JSON (or as a gRPC tensor).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptionValue {
    Int(u32),
    Float(f64),
    Bool(bool),
}

impl OptionValue {
    /// The value as JSON.
    pub fn json(self) -> Value {
        match self {
            OptionValue::Int(v) => json!(v),
            OptionValue::Float(v) => json!(v),
            OptionValue::Bool(v) => Value::Bool(v),
        }
    }
}

/// An API that writes none of the options itself: WebSocket (its template's placeholders
/// say them), embeddings and rerank (non-generative). `--extra-body` still applies.
const NONE: Dialect = Dialect {
    params: None,
    max_tokens: None,
    temperature: Temperature::Unsaid,
    ignore_eos: IgnoreEos::Unsaid,
    prefix_cache: PrefixCache::Unsaid,
    stream: Stream::Route,
    tools: None,
};

/// OpenAI Completions (Chat Completions is the same with tools).
const COMPLETIONS: Dialect = Dialect {
    params: None,
    max_tokens: Some("max_tokens"),
    temperature: Temperature::Field,
    ignore_eos: IgnoreEos::FlagAndMinTokens,
    prefix_cache: PrefixCache::OffOnly,
    stream: Stream::FlagWithUsage,
    tools: None,
};

/// The table: every API's row.
pub fn dialect(endpoint: Endpoint, backend: GrpcBackend) -> Dialect {
    match endpoint {
        Endpoint::Completions => COMPLETIONS,
        Endpoint::Chat => Dialect {
            tools: Some(ToolForm::Chat),
            ..COMPLETIONS
        },
        // Usage always comes with `response.completed`, so nothing asks for it.
        Endpoint::Responses => Dialect {
            max_tokens: Some("max_output_tokens"),
            ignore_eos: IgnoreEos::Flag,
            stream: Stream::Flag,
            tools: Some(ToolForm::Responses),
            ..COMPLETIONS
        },
        Endpoint::Messages => Dialect {
            ignore_eos: IgnoreEos::Flag,
            stream: Stream::Flag,
            tools: Some(ToolForm::Messages),
            ..COMPLETIONS
        },
        Endpoint::Llamacpp => Dialect {
            max_tokens: Some("n_predict"),
            ignore_eos: IgnoreEos::Flag,
            prefix_cache: PrefixCache::Always,
            stream: Stream::Flag,
            ..COMPLETIONS
        },
        // TGI has no way to ignore EOS and no per-request prefix-cache switch.
        Endpoint::Tgi => Dialect {
            params: Some("parameters"),
            max_tokens: Some("max_new_tokens"),
            temperature: Temperature::DoSample,
            ignore_eos: IgnoreEos::Unsaid,
            prefix_cache: PrefixCache::Unsaid,
            stream: Stream::Route,
            tools: None,
        },
        // SGLang's radix cache is a server flag.
        Endpoint::Sglang => Dialect {
            params: Some("sampling_params"),
            max_tokens: Some("max_new_tokens"),
            ignore_eos: IgnoreEos::Flag,
            prefix_cache: PrefixCache::Unsaid,
            stream: Stream::Flag,
            ..COMPLETIONS
        },
        // Protobuf: the sampling options become tensors (TensorRT-LLM) or the JSON
        // `sampling_parameters` tensor (vLLM); `--extra-body` does not apply.
        Endpoint::Grpc => Dialect {
            ignore_eos: match backend {
                GrpcBackend::TensorrtLlm => IgnoreEos::Unsaid,
                GrpcBackend::Vllm => IgnoreEos::Flag,
            },
            prefix_cache: PrefixCache::Unsaid,
            stream: Stream::Route,
            ..COMPLETIONS
        },
        Endpoint::Websocket | Endpoint::Embeddings | Endpoint::Rerank => NONE,
    }
}

impl Dialect {
    /// The sampling options (length, temperature, EOS) as this API names them, in order.
    pub fn sampling(
        &self,
        max_tokens: u32,
        opts: &RequestOptions,
    ) -> Vec<(&'static str, OptionValue)> {
        let mut out = Vec::new();
        if let Some(name) = self.max_tokens {
            out.push((name, OptionValue::Int(max_tokens)));
        }
        match (self.temperature, opts.temperature) {
            (Temperature::Field, Some(t)) => out.push(("temperature", OptionValue::Float(t))),
            (Temperature::DoSample, Some(t)) if t > 0.0 => {
                out.push(("do_sample", OptionValue::Bool(true)));
                out.push(("temperature", OptionValue::Float(t)));
            }
            (Temperature::DoSample, Some(_)) => out.push(("do_sample", OptionValue::Bool(false))),
            _ => {}
        }
        if opts.ignore_eos && self.ignore_eos != IgnoreEos::Unsaid {
            out.push(("ignore_eos", OptionValue::Bool(true)));
            if self.ignore_eos == IgnoreEos::FlagAndMinTokens {
                out.push(("min_tokens", OptionValue::Int(max_tokens)));
            }
        }
        out
    }

    /// Writes every shared option into `body` (which holds what is the API's own): the
    /// agent's tools, streaming and usage, the prefix-cache switch, the sampling options
    /// (merged into the object under `params` where there is one), then `--extra-body`
    /// and the workload's per-request overrides, last (the overrides win).
    pub fn write(&self, body: &mut Map<String, Value>, prompt: &Prompt<'_>, opts: &RequestOptions) {
        if let (Some(form), Some(agent)) = (self.tools, prompt.agent) {
            super::tools::insert_tools(form, body, agent);
        }
        if self.stream != Stream::Route {
            body.insert("stream".into(), Value::Bool(true));
        }
        if self.stream == Stream::FlagWithUsage {
            let mut stream_options = json!({"include_usage": true});
            if opts.usage_per_chunk {
                stream_options["continuous_usage_stats"] = Value::Bool(true);
            }
            body.insert("stream_options".into(), stream_options);
        }
        match self.prefix_cache {
            PrefixCache::OffOnly if !opts.prefix_cache => {
                body.insert("cache_prompt".into(), Value::Bool(false));
            }
            PrefixCache::Always => {
                body.insert("cache_prompt".into(), Value::Bool(opts.prefix_cache));
            }
            PrefixCache::OffOnly | PrefixCache::Unsaid => {}
        }
        let sampling = self
            .sampling(prompt.max_tokens, opts)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.json()));
        match self.params {
            None => body.extend(sampling),
            Some(key) => {
                let params = body.entry(key).or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(params) = params {
                    params.extend(sampling);
                }
            }
        }
        self.write_extra(body, prompt, opts);
    }

    /// `--extra-body` fields, then the workload's per-request overrides: each replaces the
    /// body's field of its name, except an object under the `params` key, which is merged
    /// into the object there.
    fn write_extra(
        &self,
        body: &mut Map<String, Value>,
        prompt: &Prompt<'_>,
        opts: &RequestOptions,
    ) {
        for (k, v) in opts.extra_body.iter().chain(prompt.overrides) {
            match (body.get_mut(k), v) {
                (Some(Value::Object(inner)), Value::Object(add))
                    if Some(k.as_str()) == self.params =>
                {
                    inner.extend(add.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                _ => {
                    body.insert(k.clone(), v.clone());
                }
            }
        }
    }
}
