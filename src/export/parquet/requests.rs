//! `requests.parquet`: one row per line of `requests.jsonl` (every phase, named), with the
//! record's fields under their JSONL names and the per-request figures beside them.

use super::table::{nullable, required, Column, Kind, Row};
use super::{phase_name, serde_name};
use crate::record::wire::{WireOutcome, WireRecord};
use crate::record::FailureKind;

/// Rows per row group: about 30 MB of buffers at the widest rows.
pub const ROWS_PER_GROUP: usize = 65_536;

const MS: &str = "ms";
const AT: &str = "µs since the epoch";
const TOKENS: &str = "tokens";

/// The columns of `requests.parquet`, in order.
pub const COLUMNS: &[Column] = &[
    required("record_index", Kind::Int, "", "The record's line in requests.jsonl, from 0: the run's one key (ids restart in each phase)"),
    required("id", Kind::Int, "", "The request's id within its phase (requests.jsonl's `id`)"),
    required("phase", Kind::Text, "", "`measure`, `warmup`, `probe` or `profile`"),
    nullable("class", Kind::Text, "", "The request's class in a mixed workload"),
    nullable("session", Kind::Int, "", "Multi-turn: the session's id"),
    nullable("turn", Kind::Int, "", "Multi-turn: the turn, from 0"),
    nullable("response_id", Kind::Text, "", "The id the server gave its answer"),
    required("outcome", Kind::Text, "", "`ok` or `failed`"),
    nullable("failure_kind", Kind::Text, "", "A failed request's kind: `connect`, `timeout`, `http_status`, `protocol`, `stream_cut`, `cancelled`, `refused`"),
    nullable("failure_detail", Kind::Text, "", "A failed request's message"),
    nullable("http_status", Kind::Int, "", "The answer's HTTP status (null: no answer head)"),
    nullable("scheduled_at_us", Kind::Time, AT, "Open loop: the planned send time"),
    required("queued_at_us", Kind::Time, AT, "When the request began waiting for a connection"),
    nullable("sent_at_us", Kind::Time, AT, "When its bytes were written (null: never sent)"),
    nullable("first_byte_at_us", Kind::Time, AT, "The first byte of the answer"),
    nullable("first_token_at_us", Kind::Time, AT, "The first non-blank content chunk"),
    nullable("last_token_at_us", Kind::Time, AT, "The last content chunk"),
    required("finished_at_us", Kind::Time, AT, "The end of the exchange"),
    required("connect_ms", Kind::Float, MS, "Pool wait plus TCP/TLS set-up"),
    nullable("ttfb_ms", Kind::Float, MS, "First response byte − the last request byte written"),
    nullable("ttft_ms", Kind::Float, MS, "Time to first token: first token − the last request byte written"),
    nullable("tpot_ms", Kind::Float, MS, "Time per output token: (E2E − TTFT) / (answer tokens − 1)"),
    nullable("e2e_ms", Kind::Float, MS, "End to end: last token − the last request byte written"),
    nullable("user_idle_ms", Kind::Float, MS, "How long the reader waited past a token deadline (a failed request: up to its end)"),
    nullable("deadline_misses", Kind::Int, TOKENS, "Tokens that arrived after their deadline"),
    nullable("fluidity", Kind::Float, "0–1", "Etalon fluidity-index (null without a prefill profile)"),
    required("input_tokens", Kind::Int, TOKENS, "Prompt tokens as servebench built them"),
    nullable("server_input_tokens", Kind::Int, TOKENS, "Prompt tokens as the server's usage counted them"),
    required("output_tokens", Kind::Int, TOKENS, "Every generated token, reasoning included"),
    required("reasoning_tokens", Kind::Int, TOKENS, "Of output_tokens, reasoning tokens"),
    required("max_tokens", Kind::Int, TOKENS, "The answer's length asked for"),
    required("items", Kind::Int, "", "Embeddings inputs or rerank documents (0 for generation)"),
    required("chunks", Kind::Int, "", "Content chunks received (rows of chunks.parquet)"),
    required("reasoning_chunks", Kind::Int, "", "Reasoning chunks received"),
    nullable("leading_blank_chunks", Kind::Int, "", "Whitespace-only chunks before the first token (null: the whole answer was blank)"),
    required("output_tokens_source", Kind::Text, "", "Where output_tokens came from: `server_usage`, `tokenizer`, `none`"),
    required("chunk_tokens_source", Kind::Text, "", "How chunk tokens were counted: `streamed_usage`, `one_per_chunk`, `tokenizer`"),
    nullable("finish_reason", Kind::Text, "", "The server's finish reason"),
    required("retries", Kind::Int, "", "Retries under --retry"),
    required("reused_connection", Kind::Flag, "", "Sent on a kept-alive connection"),
    nullable("server_prompt_tokens", Kind::Int, TOKENS, "Server timings (llama.cpp): prompt tokens processed, cached ones not counted"),
    nullable("server_prompt_ms", Kind::Float, MS, "Server timings: time spent on the prompt"),
    nullable("server_predicted_tokens", Kind::Int, TOKENS, "Server timings: tokens generated"),
    nullable("server_predicted_ms", Kind::Float, MS, "Server timings: time spent generating"),
    nullable("server_cached_tokens", Kind::Int, TOKENS, "Server timings: prompt tokens served from its cache"),
    nullable("usage_json", Kind::Text, "", "The server's last `usage` object, as JSON text"),
];

/// Fills one row of [`COLUMNS`] from a record, line `index` of requests.jsonl.
pub fn fill(r: &mut Row<'_>, index: u64, w: &WireRecord) {
    let ms = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_sub(b) as f64 / 1000.0),
        _ => None,
    };
    let (outcome, kind, detail) = match &w.outcome {
        WireOutcome::Ok(_) => ("ok", None, None),
        WireOutcome::Failed { kind, detail } => ("failed", Some(*kind), Some(detail.as_str())),
    };
    r.count(index)
        .count(w.id)
        .text(Some(phase_name(w.phase)))
        .text(w.class.as_deref())
        .count(w.session)
        .count(w.turn.map(u64::from))
        .text(w.response_id.as_deref())
        .text(Some(outcome))
        .text(kind.map(FailureKind::as_str))
        .text(detail)
        .count(w.http_status.map(u64::from))
        .time(w.scheduled_at_us)
        .time(Some(w.queued_at_us))
        .time(w.sent_at_us)
        .time(w.first_byte_at_us)
        .time(w.first_token_at_us)
        .time(w.chunks.last().map(|c| c.0))
        .time(Some(w.finished_at_us))
        .float(w.connect_ms)
        .float(ms(w.first_byte_at_us, w.submitted_at_us()));
    fill_figures(r, w);
    fill_counts(r, w);
    fill_server(r, w);
}

/// The per-request figures, computed once when the record settled.
fn fill_figures(r: &mut Row<'_>, w: &WireRecord) {
    let d = w.derived.as_ref();
    r.float(d.and_then(|d| d.ttft_ms))
        .float(d.and_then(|d| d.tpot_ms))
        .float(d.and_then(|d| d.e2e_ms))
        .float(d.map(|d| d.user_idle_ms))
        .count(d.map(|d| u64::from(d.deadline_misses)))
        .float(d.and_then(|d| d.fluidity));
}

/// Token and chunk counts, and where they came from.
fn fill_counts(r: &mut Row<'_>, w: &WireRecord) {
    let server_input = w
        .usage
        .as_ref()
        .and_then(|u| u.get("prompt_tokens").or_else(|| u.get("input_tokens")))
        .and_then(serde_json::Value::as_u64);
    r.count(u64::from(w.input_tokens))
        .count(server_input)
        .count(u64::from(w.output_tokens))
        .count(u64::from(w.reasoning_tokens))
        .count(u64::from(w.max_tokens))
        .count(u64::from(w.items))
        .count(w.chunks.len() as u64)
        .count(w.reasoning_chunks.len() as u64)
        .count(w.leading_blank_chunks.map(u64::from))
        .text(Some(&serde_name(&w.output_tokens_source)))
        .text(Some(&serde_name(&w.chunk_tokens_source)))
        .text(w.finish_reason.as_deref())
        .count(u64::from(w.retries))
        .flag(w.reused_connection);
}

/// What the server reported about the request, and its usage as given.
fn fill_server(r: &mut Row<'_>, w: &WireRecord) {
    let t = w.server_timing.as_ref();
    let usage = w.usage.as_ref().map(|u| u.to_string());
    r.count(t.and_then(|t| t.prompt_n))
        .float(t.and_then(|t| t.prompt_ms))
        .count(t.and_then(|t| t.predicted_n))
        .float(t.and_then(|t| t.predicted_ms))
        .count(t.and_then(|t| t.cache_n))
        .text(usage.as_deref());
}
