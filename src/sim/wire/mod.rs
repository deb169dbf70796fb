//! The stream formats the simulator speaks: one writer per response, in its API's dialect.
//!
//! The simulated engine decides *when* tokens leave (`responder`); this file decides what
//! the bytes look like for each API, written as real servers write them (checked against
//! recorded llama.cpp streams for the Responses, Messages and `/completion` routes, and
//! against the APIs' documentation and sources for the others). Events are built by hand
//! into one `String` per write: no JSON tree per token.

use std::fmt::Write as _;

/// The APIs the simulator serves (the client's `--endpoint`s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimApi {
    Chat,
    Completions,
    Responses,
    Messages,
    Llamacpp,
    Tgi,
    Sglang,
    /// JSON messages over a WebSocket (`GET /v1/ws`), one per line of a write.
    Websocket,
    /// KServe v2 / Triton `ModelStreamInfer`: one line per response, turned into protobuf
    /// messages by `sim::grpc`.
    Grpc,
}

impl SimApi {
    /// The API served at `path`, for `POST` requests.
    pub fn for_path(path: &str) -> Option<SimApi> {
        Some(match path {
            "/v1/chat/completions" => SimApi::Chat,
            "/v1/completions" => SimApi::Completions,
            "/v1/responses" => SimApi::Responses,
            "/v1/messages" => SimApi::Messages,
            "/completion" => SimApi::Llamacpp,
            "/generate_stream" => SimApi::Tgi,
            "/generate" => SimApi::Sglang,
            _ => return None,
        })
    }

    /// Whether reasoning tokens stream apart from the answer (the native routes have no
    /// such channel: everything is text).
    pub fn streams_reasoning(self) -> bool {
        matches!(
            self,
            SimApi::Chat | SimApi::Responses | SimApi::Messages | SimApi::Websocket
        )
    }

    /// The prefix of response ids.
    pub fn id_prefix(self) -> &'static str {
        match self {
            SimApi::Chat => "chatcmpl",
            SimApi::Completions => "cmpl",
            SimApi::Responses => "resp",
            SimApi::Messages => "msg",
            SimApi::Llamacpp => "llamacpp",
            SimApi::Tgi => "tgi",
            SimApi::Sglang => "sglang",
            SimApi::Websocket => "ws",
            SimApi::Grpc => "grpc",
        }
    }
}

/// Server-side times of one response, for the APIs that report them (llama.cpp `timings`).
#[derive(Debug, Clone, Default)]
pub struct ServerTimes {
    /// From receipt to the first token, ms.
    pub prompt_ms: f64,
    /// From the first to the last token, ms.
    pub predicted_ms: f64,
    /// Per-token emit times since receipt, ms, when the configuration reports them.
    pub token_times_ms: Option<Vec<f64>>,
}

/// Which content block a Messages stream has open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Thinking,
    Text,
}

/// Writes one response's events.
#[derive(Debug)]
pub struct StreamWriter {
    pub api: SimApi,
    pub id: String,
    /// The model name as a JSON string literal (quotes and escapes included).
    pub model_json: String,
    pub created: u64,
    /// Chat and completions: a usage-only last chunk (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Chat and completions: usage in every chunk (`continuous_usage_stats`).
    pub continuous: bool,
    pub prompt_tokens: u32,
    /// Tokens at the start of each answer that are reasoning (APIs that stream it apart).
    pub reasoning_tokens: u32,
    /// Prompt tokens served from the prefix cache (known once scheduled).
    pub cached: u32,
    /// Responses: the sequence number of the next event.
    seq: u64,
    /// Messages: the open block and the index of the next one.
    block: Option<Block>,
    next_index: u32,
    /// Responses: whether the message item was announced.
    message_open: bool,
    /// SGLang: the text so far (it streams cumulative text).
    text: String,
}

impl StreamWriter {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        api: SimApi,
        id: String,
        model_json: String,
        created: u64,
        include_usage: bool,
        continuous: bool,
        prompt_tokens: u32,
        reasoning_tokens: u32,
    ) -> Self {
        Self {
            api,
            id,
            model_json,
            created,
            include_usage,
            continuous,
            prompt_tokens,
            reasoning_tokens: if api.streams_reasoning() {
                reasoning_tokens
            } else {
                0
            },
            cached: 0,
            seq: 0,
            block: None,
            next_index: 0,
            message_open: false,
            text: String::new(),
        }
    }

    /// Reasoning tokens of an answer of `completion` tokens.
    fn reasoning_of(&self, completion: u32) -> u32 {
        self.reasoning_tokens.min(completion)
    }

    /// A Responses-API event with its sequence number.
    fn typed(&mut self, out: &mut String, kind: &str, fields: std::fmt::Arguments<'_>) {
        let _ = write!(
            out,
            "event: {kind}\ndata: {{\"type\":\"{kind}\",{fields},\"sequence_number\":{}}}\n\n",
            self.seq
        );
        self.seq += 1;
    }

    /// A Chat Completions / Completions chunk.
    fn chat_chunk(&self, out: &mut String, body: &str, finish: Option<&str>, usage: Option<&str>) {
        let object = if self.api == SimApi::Chat {
            "chat.completion.chunk"
        } else {
            "text_completion"
        };
        let _ = write!(
            out,
            "data: {{\"id\":\"{}\",\"object\":\"{object}\",\"created\":{},\"model\":{},\"choices\":[{{\"index\":0,{body},\"finish_reason\":",
            self.id, self.created, self.model_json
        );
        match finish {
            Some(f) => {
                let _ = write!(out, "\"{f}\"");
            }
            None => out.push_str("null"),
        }
        out.push_str("}]");
        if let Some(u) = usage {
            let _ = write!(out, ",\"usage\":{u}");
        }
        out.push_str("}\n\n");
    }

    /// Chat Completions usage.
    fn chat_usage(&self, completion: u32) -> String {
        format!(
            "{{\"prompt_tokens\":{},\"completion_tokens\":{completion},\"total_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":{}}},\"completion_tokens_details\":{{\"reasoning_tokens\":{}}}}}",
            self.prompt_tokens,
            self.prompt_tokens + completion,
            self.cached,
            self.reasoning_of(completion)
        )
    }

    /// Responses usage.
    fn responses_usage(&self, completion: u32) -> String {
        format!(
            "{{\"input_tokens\":{},\"input_tokens_details\":{{\"cached_tokens\":{}}},\"output_tokens\":{completion},\"output_tokens_details\":{{\"reasoning_tokens\":{}}},\"total_tokens\":{}}}",
            self.prompt_tokens,
            self.cached,
            self.reasoning_of(completion),
            self.prompt_tokens + completion
        )
    }

    /// The response object of the Responses API's lifecycle events.
    fn response_object(&self, status: &str, tail: &str) -> String {
        format!(
            "{{\"id\":\"{}\",\"object\":\"response\",\"created_at\":{},\"status\":\"{status}\",\"model\":{},\"output\":[]{tail}}}",
            self.id, self.created, self.model_json
        )
    }

    /// Events before the first token (written with it).
    pub fn start(&mut self, out: &mut String) {
        match self.api {
            SimApi::Chat => self.chat_chunk(
                out,
                "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}",
                None,
                None,
            ),
            SimApi::Responses => {
                let r = self.response_object("in_progress", "");
                self.typed(out, "response.created", format_args!("\"response\":{r}"));
                self.typed(
                    out,
                    "response.in_progress",
                    format_args!("\"response\":{r}"),
                );
            }
            SimApi::Messages => {
                // Anthropic's `input_tokens` excludes the tokens read from the cache.
                let _ = write!(
                    out,
                    "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"{}\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":{},\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{{\"input_tokens\":{},\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":{},\"output_tokens\":1}}}}}}\n\nevent: ping\ndata: {{\"type\":\"ping\"}}\n\n",
                    self.id,
                    self.model_json,
                    self.prompt_tokens - self.cached.min(self.prompt_tokens),
                    self.cached
                );
            }
            SimApi::Completions
            | SimApi::Llamacpp
            | SimApi::Tgi
            | SimApi::Sglang
            | SimApi::Websocket
            | SimApi::Grpc => {}
        }
    }

    /// The event(s) carrying `piece`, `k` tokens, the answer having `before` tokens before
    /// them, `n` in all (`before + k == n`: the last tokens, which some APIs mark).
    pub fn tokens(&mut self, out: &mut String, piece: &str, k: u32, before: u32, n: u32) {
        let sent = before + k;
        let last = sent >= n;
        let reasoning = before < self.reasoning_tokens;
        match self.api {
            SimApi::Chat | SimApi::Completions => {
                let body = if self.api == SimApi::Completions {
                    format!("\"text\":\"{piece}\"")
                } else if reasoning {
                    format!("\"delta\":{{\"reasoning_content\":\"{piece}\"}}")
                } else {
                    format!("\"delta\":{{\"content\":\"{piece}\"}}")
                };
                let usage = self.continuous.then(|| self.chat_usage(sent));
                self.chat_chunk(out, &body, last.then_some("length"), usage.as_deref());
            }
            SimApi::Responses => {
                if reasoning {
                    if before == 0 {
                        let item = format!(
                            "{{\"id\":\"rs_{}\",\"type\":\"reasoning\",\"summary\":[]}}",
                            self.id
                        );
                        self.typed(
                            out,
                            "response.output_item.added",
                            format_args!("\"output_index\":0,\"item\":{item}"),
                        );
                    }
                    let id = format!("rs_{}", self.id);
                    self.typed(
                        out,
                        "response.reasoning_text.delta",
                        format_args!("\"item_id\":\"{id}\",\"output_index\":0,\"content_index\":0,\"delta\":\"{piece}\""),
                    );
                } else {
                    let index = u32::from(self.reasoning_tokens > 0);
                    let id = format!("msg_{}", self.id);
                    if !self.message_open {
                        self.message_open = true;
                        self.typed(
                            out,
                            "response.output_item.added",
                            format_args!("\"output_index\":{index},\"item\":{{\"id\":\"{id}\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}"),
                        );
                        self.typed(
                            out,
                            "response.content_part.added",
                            format_args!("\"item_id\":\"{id}\",\"output_index\":{index},\"content_index\":0,\"part\":{{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[]}}"),
                        );
                    }
                    self.typed(
                        out,
                        "response.output_text.delta",
                        format_args!("\"item_id\":\"{id}\",\"output_index\":{index},\"content_index\":0,\"delta\":\"{piece}\",\"logprobs\":[]"),
                    );
                }
            }
            SimApi::Messages => {
                let want = if reasoning {
                    Block::Thinking
                } else {
                    Block::Text
                };
                if self.block != Some(want) {
                    if self.block.is_some() {
                        let _ = write!(
                            out,
                            "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{}}}\n\n",
                            self.next_index - 1
                        );
                    }
                    let start = match want {
                        Block::Thinking => "{\"type\":\"thinking\",\"thinking\":\"\"}",
                        Block::Text => "{\"type\":\"text\",\"text\":\"\"}",
                    };
                    let _ = write!(
                        out,
                        "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{},\"content_block\":{start}}}\n\n",
                        self.next_index
                    );
                    self.block = Some(want);
                    self.next_index += 1;
                }
                let delta = match want {
                    Block::Thinking => {
                        format!("{{\"type\":\"thinking_delta\",\"thinking\":\"{piece}\"}}")
                    }
                    Block::Text => format!("{{\"type\":\"text_delta\",\"text\":\"{piece}\"}}"),
                };
                let _ = write!(
                    out,
                    "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{},\"delta\":{delta}}}\n\n",
                    self.next_index - 1
                );
            }
            SimApi::Llamacpp => {
                let _ = write!(
                    out,
                    "data: {{\"index\":0,\"content\":\"{piece}\",\"tokens\":[{}],\"stop\":false,\"id_slot\":-1,\"tokens_predicted\":{sent},\"tokens_evaluated\":{},\"id\":\"{}\"}}\n\n",
                    token_ids(before, k),
                    self.prompt_tokens,
                    self.id
                );
            }
            SimApi::Tgi => {
                // One event per token, as TGI streams; the last carries the details.
                for (i, word) in split_words(piece, k).enumerate() {
                    let index = before + i as u32 + 1;
                    let _ = write!(
                        out,
                        "data: {{\"index\":{index},\"token\":{{\"id\":{},\"text\":\"{word}\",\"logprob\":-0.25,\"special\":false}},\"top_tokens\":null,\"id\":\"{}\",",
                        1000 + index,
                        self.id
                    );
                    if index >= n {
                        let _ = write!(
                            out,
                            "\"generated_text\":\"{}{piece}\",\"details\":{{\"finish_reason\":\"length\",\"generated_tokens\":{n},\"seed\":null,\"input_length\":{}}}}}\n\n",
                            self.text, self.prompt_tokens
                        );
                    } else {
                        out.push_str("\"generated_text\":null,\"details\":null}\n\n");
                    }
                }
                self.text.push_str(piece);
            }
            SimApi::Grpc => {
                let _ = writeln!(out, "{{\"id\":\"{}\",\"text\":\"{piece}\"}}", self.id);
            }
            SimApi::Websocket => {
                let field = if reasoning { "reasoning" } else { "delta" };
                let _ = writeln!(
                    out,
                    "{{\"type\":\"delta\",\"id\":\"{}\",\"{field}\":\"{piece}\"}}",
                    self.id
                );
            }
            SimApi::Sglang => {
                self.text.push_str(piece);
                let finish = if last {
                    format!("{{\"type\":\"length\",\"length\":{n}}}")
                } else {
                    "null".into()
                };
                let _ = write!(
                    out,
                    "data: {{\"text\":\"{}\",\"meta_info\":{{\"id\":\"{}\",\"finish_reason\":{finish},\"prompt_tokens\":{},\"completion_tokens\":{sent},\"cached_tokens\":{}}}}}\n\n",
                    self.text, self.id, self.prompt_tokens, self.cached
                );
            }
        }
    }

    /// The events that end a response of `sent` tokens; `hit_limit` when the length limit
    /// ended it. `timings` is llama.cpp's object (written by the APIs that carry one).
    pub fn end(
        &mut self,
        out: &mut String,
        sent: u32,
        hit_limit: bool,
        times: Option<&ServerTimes>,
    ) {
        match self.api {
            SimApi::Chat | SimApi::Completions => {
                if self.include_usage {
                    let timings = times
                        .and_then(|t| t.token_times_ms.as_ref())
                        .map(|tt| {
                            format!(
                                ",\"timings\":{{\"predicted_n\":{sent},\"token_times_ms\":{}}}",
                                serde_json::to_string(tt).unwrap_or_default()
                            )
                        })
                        .unwrap_or_default();
                    let object = if self.api == SimApi::Chat {
                        "chat.completion.chunk"
                    } else {
                        "text_completion"
                    };
                    let _ = write!(
                        out,
                        "data: {{\"id\":\"{}\",\"object\":\"{object}\",\"created\":{},\"model\":{},\"choices\":[],\"usage\":{}{timings}}}\n\n",
                        self.id,
                        self.created,
                        self.model_json,
                        self.chat_usage(sent)
                    );
                }
                out.push_str("data: [DONE]\n\n");
            }
            SimApi::Responses => {
                let usage = self.responses_usage(sent);
                if hit_limit {
                    let r = self.response_object(
                        "incomplete",
                        &format!(",\"incomplete_details\":{{\"reason\":\"max_output_tokens\"}},\"usage\":{usage}"),
                    );
                    self.typed(out, "response.incomplete", format_args!("\"response\":{r}"));
                } else {
                    let r = self.response_object("completed", &format!(",\"usage\":{usage}"));
                    self.typed(out, "response.completed", format_args!("\"response\":{r}"));
                }
            }
            SimApi::Messages => {
                if self.block.is_some() {
                    let _ = write!(
                        out,
                        "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{}}}\n\n",
                        self.next_index - 1
                    );
                }
                let reason = if hit_limit { "max_tokens" } else { "end_turn" };
                let _ = write!(
                    out,
                    "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{reason}\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{sent}}}}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
                );
            }
            SimApi::Llamacpp => {
                let t = times.cloned().unwrap_or_default();
                let per_s = if t.predicted_ms > 0.0 {
                    sent.saturating_sub(1) as f64 / (t.predicted_ms / 1e3)
                } else {
                    0.0
                };
                let token_times = t
                    .token_times_ms
                    .as_ref()
                    .map(|tt| {
                        format!(
                            ",\"token_times_ms\":{}",
                            serde_json::to_string(tt).unwrap_or_default()
                        )
                    })
                    .unwrap_or_default();
                let stop_type = if hit_limit { "limit" } else { "eos" };
                let _ = write!(
                    out,
                    "data: {{\"index\":0,\"content\":\"\",\"tokens\":[],\"id_slot\":0,\"stop\":true,\"model\":{},\"tokens_predicted\":{sent},\"tokens_evaluated\":{},\"stop_type\":\"{stop_type}\",\"stopping_word\":\"\",\"tokens_cached\":{},\"id\":\"{}\",\"timings\":{{\"cache_n\":{},\"prompt_n\":{},\"prompt_ms\":{:.3},\"predicted_n\":{sent},\"predicted_ms\":{:.3},\"predicted_per_second\":{per_s:.3}{token_times}}}}}\n\n",
                    self.model_json,
                    self.prompt_tokens,
                    self.prompt_tokens + sent,
                    self.id,
                    self.cached,
                    self.prompt_tokens - self.cached.min(self.prompt_tokens),
                    t.prompt_ms,
                    t.predicted_ms,
                );
            }
            SimApi::Tgi => {} // the last token's event carried the details
            SimApi::Sglang => out.push_str("data: [DONE]\n\n"),
            SimApi::Grpc => {
                let _ = writeln!(out, "{{\"id\":\"{}\",\"final\":true}}", self.id);
            }
            SimApi::Websocket => {
                let finish = if hit_limit { "length" } else { "stop" };
                let _ = writeln!(
                    out,
                    "{{\"type\":\"done\",\"id\":\"{}\",\"finish_reason\":\"{finish}\",\"usage\":{}}}",
                    self.id,
                    self.chat_usage(sent)
                );
            }
        }
    }

    /// A content filter's refusal after `sent` tokens, in the API's own form, ending the
    /// stream (fault injection). `false`, writing nothing, for the APIs without one.
    pub fn refusal(&mut self, out: &mut String, sent: u32) -> bool {
        const REFUSAL: &str = "I can't help with that.";
        match self.api {
            SimApi::Chat => {
                let body = format!("\"delta\":{{\"refusal\":\"{REFUSAL}\"}}");
                self.chat_chunk(out, &body, Some("content_filter"), None);
                self.end(out, sent, false, None);
            }
            SimApi::Completions => {
                self.chat_chunk(out, "\"text\":\"\"", Some("content_filter"), None);
                self.end(out, sent, false, None);
            }
            SimApi::Responses => {
                let id = format!("msg_{}", self.id);
                self.typed(
                    out,
                    "response.refusal.delta",
                    format_args!("\"item_id\":\"{id}\",\"output_index\":0,\"content_index\":0,\"delta\":\"{REFUSAL}\""),
                );
                self.end(out, sent, false, None);
            }
            SimApi::Messages => {
                if self.block.is_some() {
                    let _ = write!(
                        out,
                        "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{}}}\n\n",
                        self.next_index - 1
                    );
                }
                let _ = write!(
                    out,
                    "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"refusal\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{sent}}}}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
                );
            }
            SimApi::Llamacpp | SimApi::Tgi | SimApi::Sglang | SimApi::Grpc | SimApi::Websocket => {
                return false
            }
        }
        true
    }

    /// An error reported inside the stream, in the API's own form (fault injection).
    pub fn error_event(&mut self, out: &mut String, message: &str) {
        match self.api {
            SimApi::Chat | SimApi::Completions | SimApi::Llamacpp => {
                let _ = write!(
                    out,
                    "data: {{\"error\":{{\"message\":\"{message}\",\"type\":\"server_error\",\"code\":500}}}}\n\n"
                );
            }
            SimApi::Responses => self.typed(
                out,
                "error",
                format_args!("\"code\":\"server_error\",\"message\":\"{message}\",\"param\":null"),
            ),
            SimApi::Messages => {
                let _ = write!(
                    out,
                    "event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"{message}\"}}}}\n\n"
                );
            }
            SimApi::Tgi => {
                let _ = write!(
                    out,
                    "data: {{\"error\":\"{message}\",\"error_type\":\"generation\"}}\n\n"
                );
            }
            SimApi::Sglang => {
                let _ = write!(
                    out,
                    "data: {{\"error\":{{\"message\":\"{message}\"}}}}\n\ndata: [DONE]\n\n"
                );
            }
            SimApi::Websocket => {
                let _ = writeln!(
                    out,
                    "{{\"type\":\"error\",\"error\":{{\"message\":\"{message}\"}}}}"
                );
            }
            SimApi::Grpc => {
                let _ = writeln!(out, "{{\"error\":\"{message}\"}}");
            }
        }
    }
}

/// Made-up token ids for `k` tokens after `before` (llama.cpp lists them per event).
fn token_ids(before: u32, k: u32) -> String {
    let mut s = String::new();
    for i in 0..k {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{}", 1000 + before + i + 1);
    }
    s
}

/// The `k` one-token words of `piece` (the simulator's words each start with a space and
/// are one token).
fn split_words(piece: &str, k: u32) -> impl Iterator<Item = &str> {
    let mut starts: Vec<usize> = piece.match_indices(' ').map(|(i, _)| i).collect();
    if starts.len() != k as usize {
        // Not one word per token: hand out the piece whole, then empty texts.
        starts = vec![0];
    }
    let ends: Vec<usize> = starts
        .iter()
        .skip(1)
        .copied()
        .chain([piece.len()])
        .collect();
    let words: Vec<&str> = starts
        .iter()
        .zip(ends)
        .map(|(&a, b)| &piece[a..b])
        .collect();
    let pad = (k as usize).saturating_sub(words.len());
    words.into_iter().chain(std::iter::repeat_n("", pad))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::apis::parser_for;
    use crate::client::apis::StreamParser;
    use crate::client::sse::SseParser;
    use crate::config::Endpoint;

    fn writer(api: SimApi, reasoning: u32) -> StreamWriter {
        let mut w = StreamWriter::new(
            api,
            "x1".into(),
            "\"m\"".into(),
            7,
            true,
            false,
            12,
            reasoning,
        );
        w.cached = 4;
        w
    }

    /// Writes a 3-token answer (one token per write) and reads it back with the client's
    /// parser for the same API: content, reasoning, usage and the end agree.
    fn round_trip(
        api: SimApi,
        endpoint: Endpoint,
        reasoning: u32,
    ) -> (String, String, String, bool) {
        let mut w = writer(api, reasoning);
        let mut out = String::new();
        w.start(&mut out);
        for (i, word) in [" a", " b", " c"].iter().enumerate() {
            w.tokens(&mut out, word, 1, i as u32, 3);
        }
        let times = ServerTimes {
            prompt_ms: 5.0,
            predicted_ms: 2.0,
            token_times_ms: None,
        };
        w.end(&mut out, 3, true, Some(&times));
        let mut parser = parser_for(endpoint);
        let (mut content, mut thought, mut usage, mut done) =
            (String::new(), String::new(), String::new(), false);
        let mut sse = SseParser::new();
        sse.feed(out.as_bytes(), |e| {
            let ev = parser.parse(e.event, e.data).unwrap();
            content.push_str(ev.content.as_deref().unwrap_or(""));
            thought.push_str(ev.reasoning.as_deref().unwrap_or(""));
            if let Some(u) = ev.usage {
                let mut s = String::new();
                if u.write_json(&mut s) {
                    usage = s;
                }
            }
            done |= ev.done;
            true
        });
        (content, thought, usage, done)
    }

    #[test]
    fn every_format_reads_back_with_the_clients_parser() {
        for (api, endpoint) in [
            (SimApi::Chat, Endpoint::Chat),
            (SimApi::Completions, Endpoint::Completions),
            (SimApi::Responses, Endpoint::Responses),
            (SimApi::Messages, Endpoint::Messages),
            (SimApi::Llamacpp, Endpoint::Llamacpp),
            (SimApi::Tgi, Endpoint::Tgi),
            (SimApi::Sglang, Endpoint::Sglang),
        ] {
            let (content, thought, usage, done) = round_trip(api, endpoint, 0);
            assert_eq!(
                (content.as_str(), thought.as_str(), done),
                (" a b c", "", true),
                "{api:?}"
            );
            let u: serde_json::Value = serde_json::from_str(&usage).unwrap();
            assert_eq!(u["completion_tokens"], 3, "{api:?}: {usage}");
            if api != SimApi::Tgi {
                // The whole prompt, and the 4 tokens served from the prefix cache (Anthropic
                // reports them apart from `input_tokens`; the client adds them back).
                assert_eq!(u["prompt_tokens"], 12, "{api:?}: {usage}");
                assert_eq!(
                    u["prompt_tokens_details"]["cached_tokens"], 4,
                    "{api:?}: {usage}"
                );
            }
        }
    }

    #[test]
    fn reasoning_streams_apart_where_the_api_has_a_channel() {
        for (api, endpoint) in [
            (SimApi::Chat, Endpoint::Chat),
            (SimApi::Responses, Endpoint::Responses),
            (SimApi::Messages, Endpoint::Messages),
        ] {
            let (content, thought, _, done) = round_trip(api, endpoint, 2);
            assert_eq!(
                (content.as_str(), thought.as_str(), done),
                (" c", " a b", true),
                "{api:?}"
            );
        }
        let (content, thought, _, _) = round_trip(SimApi::Llamacpp, Endpoint::Llamacpp, 2);
        assert_eq!((content.as_str(), thought.as_str()), (" a b c", ""));
    }

    #[test]
    fn error_events_fail_the_clients_parser_of_each_api() {
        for (api, endpoint) in [
            (SimApi::Chat, Endpoint::Chat),
            (SimApi::Responses, Endpoint::Responses),
            (SimApi::Messages, Endpoint::Messages),
            (SimApi::Llamacpp, Endpoint::Llamacpp),
            (SimApi::Tgi, Endpoint::Tgi),
            (SimApi::Sglang, Endpoint::Sglang),
        ] {
            let mut w = writer(api, 0);
            let mut out = String::new();
            w.error_event(&mut out, "boom");
            let mut parser = parser_for(endpoint);
            let mut errors = Vec::new();
            SseParser::new().feed(out.as_bytes(), |e| {
                if let Some(err) = parser.parse(e.event, e.data).unwrap().error {
                    errors.push(err);
                }
                true
            });
            assert_eq!(errors.len(), 1, "{api:?}");
            assert!(errors[0].contains("boom"), "{api:?}: {errors:?}");
        }
    }

    #[test]
    fn refusals_read_back_as_refusals_where_the_api_has_one() {
        for (api, endpoint) in [
            (SimApi::Chat, Endpoint::Chat),
            (SimApi::Completions, Endpoint::Completions),
            (SimApi::Responses, Endpoint::Responses),
            (SimApi::Messages, Endpoint::Messages),
        ] {
            let mut w = writer(api, 0);
            let mut out = String::new();
            w.start(&mut out);
            w.tokens(&mut out, " a", 1, 0, 3);
            assert!(w.refusal(&mut out, 1), "{api:?}");
            let mut parser = parser_for(endpoint);
            let (mut refused, mut done, mut errors) = (false, false, 0);
            SseParser::new().feed(out.as_bytes(), |e| {
                let ev = parser.parse(e.event, e.data).unwrap();
                refused |= ev.refusal || ev.finish_reason.as_deref() == Some("content_filter");
                done |= ev.done;
                errors += usize::from(ev.error.is_some());
                true
            });
            assert!(refused && done && errors == 0, "{api:?}: {out}");
        }
        for api in [SimApi::Llamacpp, SimApi::Tgi, SimApi::Sglang] {
            let mut out = String::new();
            assert!(!writer(api, 0).refusal(&mut out, 1), "{api:?}");
            assert!(out.is_empty());
        }
    }

    #[test]
    fn tgi_splits_a_multi_token_write_into_one_event_per_token() {
        let words: Vec<&str> = split_words(" a b", 2).collect();
        assert_eq!(words, [" a", " b"]);
        let words: Vec<&str> = split_words("ab", 3).collect();
        assert_eq!(words, ["ab", "", ""]);
    }
}
