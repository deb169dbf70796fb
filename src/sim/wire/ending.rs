//! The events that end a stream in each API's dialect: its normal end with usage and
//! timings, a content filter's refusal, an error reported inside the stream.

use super::{ServerTimes, SimApi, StreamWriter};
use std::fmt::Write as _;

impl StreamWriter {
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
            SimApi::Chat | SimApi::Completions => self.chat_end(out, sent, times),
            SimApi::Responses => {
                let usage = self.responses_usage(sent);
                if self.responses_call_end(out, sent) {
                    // A tool call ends whole, whatever the limit.
                } else if hit_limit {
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
                let reason = match (self.tool_calls_made() > 0, hit_limit) {
                    (true, _) => "tool_use",
                    (false, true) => "max_tokens",
                    (false, false) => "end_turn",
                };
                let _ = write!(
                    out,
                    "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{reason}\",\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{sent}}}}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
                );
            }
            SimApi::Llamacpp => self.llamacpp_end(out, sent, hit_limit, times),
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

    /// Chat and Completions: the usage chunk (when asked for, with llama.cpp's per-token
    /// times when it has them), then `[DONE]`.
    fn chat_end(&self, out: &mut String, sent: u32, times: Option<&ServerTimes>) {
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

    /// llama.cpp: the final event, with its `timings` object.
    fn llamacpp_end(
        &self,
        out: &mut String,
        sent: u32,
        hit_limit: bool,
        times: Option<&ServerTimes>,
    ) {
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
