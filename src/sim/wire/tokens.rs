//! The events that carry tokens, in each API's dialect (one or more per write), with the
//! helpers that cut a write into its tokens.

use super::{Block, SimApi, StreamWriter};
use std::fmt::Write as _;

impl StreamWriter {
    /// The event(s) carrying `piece`, `k` tokens, the answer having `before` tokens before
    /// them, `n` in all (`before + k == n`: the last tokens, which some APIs mark).
    pub fn tokens(&mut self, out: &mut String, piece: &str, k: u32, before: u32, n: u32) {
        let sent = before + k;
        let last = sent >= n;
        let reasoning = before < self.reasoning_tokens;
        if !reasoning && self.calls_tool() {
            return self.tool_tokens(out, piece, sent, last);
        }
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
            SimApi::Responses => self.responses_tokens(out, piece, before, reasoning),
            SimApi::Messages => self.messages_tokens(out, piece, reasoning),
            SimApi::Llamacpp => {
                let _ = write!(
                    out,
                    "data: {{\"index\":0,\"content\":\"{piece}\",\"tokens\":[{}],\"stop\":false,\"id_slot\":-1,\"tokens_predicted\":{sent},\"tokens_evaluated\":{},\"id\":\"{}\"}}\n\n",
                    token_ids(before, k),
                    self.prompt_tokens,
                    self.id
                );
            }
            SimApi::Tgi => self.tgi_tokens(out, piece, k, before, n),
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

    /// Responses API: the reasoning item's deltas (the item added before the first), then
    /// the message's (the item and its content part added before the first).
    fn responses_tokens(&mut self, out: &mut String, piece: &str, before: u32, reasoning: bool) {
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

    /// Messages API: a content block per kind (thinking, then text), each started before its
    /// first delta and the previous one stopped.
    fn messages_tokens(&mut self, out: &mut String, piece: &str, reasoning: bool) {
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
                _ => "{\"type\":\"text\",\"text\":\"\"}",
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
            _ => format!("{{\"type\":\"text_delta\",\"text\":\"{piece}\"}}"),
        };
        let _ = write!(
            out,
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{},\"delta\":{delta}}}\n\n",
            self.next_index - 1
        );
    }

    /// TGI: one event per token, as TGI streams; the last carries the details.
    fn tgi_tokens(&mut self, out: &mut String, piece: &str, k: u32, before: u32, n: u32) {
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
pub(super) fn split_words(piece: &str, k: u32) -> impl Iterator<Item = &str> {
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
