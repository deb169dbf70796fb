//! The on-disk form of a record: one JSON object per line of `requests.jsonl`.
//!
//! Times are Unix-epoch microseconds (draft 4.7.4 allows epoch time; microseconds keep the
//! 1 µs resolution of 4.2.1). Kept apart from the domain record so the file format can be
//! versioned on its own (`run.json` carries `schema_version`). Its JSON Schema,
//! `docs/requests.schema.json`, is generated from [`WireRecord`] (`report::schema`), and a
//! test holds the committed file to these types.

use super::{
    Chunk, ChunkTokenSource, Derived, FailureKind, InputTokenSource, MediaCounts, Outcome, Phase,
    RequestRecord, ServerTiming, TokenSource,
};
use crate::clock::{Nanos, RunClock};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The outcome as written: `"ok"` or `{"kind": ..., "detail": ...}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum WireOutcome {
    /// The request succeeded: `"ok"`.
    Ok(OkTag),
    /// The request failed: its kind, and the error in words.
    Failed {
        /// What went wrong (docs/reliability.md lists the kinds).
        kind: FailureKind,
        /// The error as the client saw it.
        detail: String,
    },
}

/// The literal string `"ok"`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OkTag {
    /// `"ok"`.
    Ok,
}

/// One line of `requests.jsonl` (docs/requests.schema.json). Times named `*_at_us` are
/// Unix-epoch microseconds; `*_ms` are milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct WireRecord {
    /// Position in its phase's workload sequence (0-based).
    pub id: u64,
    /// Which part of the run the request belongs to (only `measure` is summarised).
    pub phase: Phase,
    /// The workload class the request was drawn from (`--workload` with classes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Multi-turn: session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// Multi-turn: 0-based turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Sessions: the steps (turns) the session plans (absent: not recorded).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub session_steps: u32,
    /// Agent sessions: the branch in the step's fan-out (absent: 0).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub branch: u32,
    /// Sessions: the tool time planned before this request, ms (absent: 0).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub planned_tool_ms: f64,
    /// Sessions: the think time planned before this request, ms (absent: 0).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub planned_think_ms: f64,
    /// The id the server gave its answer, when it gave one.
    pub response_id: Option<String>,
    /// Open loop: when the schedule planned the request, Unix µs (`null`: closed loop).
    pub scheduled_at_us: Option<u64>,
    /// When the request was attempted (began waiting for a connection), Unix µs.
    pub queued_at_us: u64,
    /// Pool wait plus TCP/TLS set-up, ms.
    pub connect_ms: f64,
    /// Whether a kept-alive connection carried the request.
    pub reused_connection: bool,
    /// When the first request byte was written, Unix µs; `null` when the request bytes
    /// were never written (no connection). The start of the upload, not of TTFT.
    pub sent_at_us: Option<u64>,
    /// Bytes of the request body; absent when the request was built elsewhere (gRPC).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub body_bytes: u64,
    /// Time to send the request, first byte written → last byte written, ms; TTFT and E2E
    /// start at its end (T_submit: `sent_at_us` + `upload_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_ms: Option<f64>,
    /// When the first response byte arrived, Unix µs.
    pub first_byte_at_us: Option<u64>,
    /// When the first answer event with non-blank text arrived, Unix µs.
    pub first_token_at_us: Option<u64>,
    /// Content events: `[arrival_us, tokens]` (Unix µs, output tokens).
    pub chunks: Vec<(u64, u32)>,
    /// Whitespace-only chunks before the first token (draft 5.1.3.1); 0 when absent. `null`
    /// when the whole answer was blank.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub leading_blank_chunks: Option<u32>,
    /// Reasoning events: `[arrival_us, tokens]` (Unix µs, reasoning tokens).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning_chunks: Vec<(u64, u32)>,
    /// When the request ended (answer complete, failed or cancelled), Unix µs.
    pub finished_at_us: u64,
    /// `"ok"`, or the failure's kind and detail.
    pub outcome: WireOutcome,
    /// The HTTP status of the answer, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// Prompt tokens (see `input_tokens_source`).
    pub input_tokens: u32,
    /// Where `input_tokens` came from, written when not the workload's tokenizer
    /// (`server_usage`, or `text_only` for media without usage).
    #[serde(default, skip_serializing_if = "is_workload")]
    pub input_tokens_source: InputTokenSource,
    /// A request with images or audio: its text's tokens (workload's tokenizer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_input_tokens: Option<u32>,
    /// Images and audio sent: `images`, `image_bytes`, `audio`, `audio_bytes`.
    #[serde(default, skip_serializing_if = "is_no_media")]
    pub media: MediaCounts,
    /// Every generated token, reasoning included.
    pub output_tokens: u32,
    /// Of `output_tokens`, reasoning tokens.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub reasoning_tokens: u32,
    /// Where `output_tokens` came from.
    pub output_tokens_source: TokenSource,
    /// How the per-chunk token counts were obtained.
    pub chunk_tokens_source: ChunkTokenSource,
    /// The output limit the request asked for, tokens.
    pub max_tokens: u32,
    /// Items of a non-generative request (embeddings inputs, rerank documents).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub items: u32,
    /// Why the server stopped generating, as it said (`stop`, `length`, ...).
    pub finish_reason: Option<String>,
    /// Tool calls the answer made; absent when none (and in files written before it).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub tool_calls: u32,
    /// The server's last `usage` object, as it sent it.
    pub usage: Option<serde_json::Value>,
    /// Timings the server reported about the request (llama.cpp `timings`, the simulator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timing: Option<ServerTiming>,
    /// Per-request figures (`ttft_ms`, `tpot_ms`, `e2e_ms`, `user_idle_ms`,
    /// `deadline_misses`, `fluidity`), computed once when the record settled.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub derived: Option<Derived>,
    /// Retries (`--retry`); absent when none.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub retries: u32,
}

impl WireRecord {
    /// T_submit, where TTFT and E2E start: the last request byte written (`sent_at_us` +
    /// `upload_ms`; `sent_at_us` where no upload was recorded), Unix µs.
    pub fn submitted_at_us(&self) -> Option<u64> {
        let upload_us = self
            .upload_ms
            .map_or(0, |ms| (ms * 1e3).round().max(0.0) as u64);
        Some(self.sent_at_us? + upload_us)
    }

    /// The wire form of a record on `clock`.
    pub fn from_record(r: &RequestRecord, clock: &RunClock) -> Self {
        let us = |t: Nanos| clock.unix_us(t);
        let chunks = |cs: &[Chunk]| cs.iter().map(|c| (us(c.at), c.tokens)).collect();
        WireRecord {
            id: r.id,
            phase: r.phase,
            class: r.class.clone(),
            session: r.session.map(|s| s.0),
            turn: r.session.map(|s| s.1),
            session_steps: r.session_steps,
            branch: r.branch,
            planned_tool_ms: r.planned_tool_ms,
            planned_think_ms: r.planned_think_ms,
            response_id: r.response_id.clone(),
            scheduled_at_us: r.scheduled_at.map(us),
            queued_at_us: us(r.queued_at),
            connect_ms: r.connect_ns as f64 / 1e6,
            reused_connection: r.reused_connection,
            sent_at_us: r.sent_at.map(us),
            body_bytes: r.body_bytes,
            upload_ms: r.upload_ms().map(|ms| (ms * 1e3).round() / 1e3),
            first_byte_at_us: r.first_byte_at.map(us),
            first_token_at_us: r.first_token_at().map(us),
            chunks: chunks(&r.chunks),
            leading_blank_chunks: match r.first_content {
                Some(i) => Some(i as u32),
                None if r.chunks.is_empty() => Some(0),
                None => None,
            },
            reasoning_chunks: chunks(&r.reasoning_chunks),
            finished_at_us: us(r.finished_at),
            outcome: match &r.outcome {
                Outcome::Ok => WireOutcome::Ok(OkTag::Ok),
                Outcome::Failed { kind, detail } => WireOutcome::Failed {
                    kind: *kind,
                    detail: detail.clone(),
                },
            },
            http_status: r.http_status,
            input_tokens: r.input_tokens,
            input_tokens_source: r.input_tokens_source,
            text_input_tokens: r.text_input_tokens,
            media: r.media,
            output_tokens: r.output_tokens,
            reasoning_tokens: r.reasoning_tokens,
            output_tokens_source: r.output_tokens_source,
            chunk_tokens_source: r.chunk_tokens_source,
            max_tokens: r.max_tokens,
            items: r.items,
            finish_reason: r.finish_reason.clone(),
            tool_calls: r.tool_calls,
            usage: r.usage.clone(),
            server_timing: r.server_timing.clone(),
            derived: r.derived.clone(),
            retries: r.retries,
        }
    }

    /// Back to a domain record, with times as offsets from `anchor_unix_us`.
    pub fn into_record(self, anchor_unix_us: u64) -> RequestRecord {
        let ns = |us: u64| us.saturating_sub(anchor_unix_us) * 1_000;
        let chunks = |cs: Vec<(u64, u32)>| {
            cs.into_iter()
                .map(|(at, tokens)| Chunk {
                    at: ns(at),
                    tokens,
                    bytes: 0,
                })
                .collect()
        };
        RequestRecord {
            id: self.id,
            phase: self.phase,
            class: self.class,
            session: self.session.map(|s| (s, self.turn.unwrap_or(0))),
            session_steps: self.session_steps,
            branch: self.branch,
            planned_tool_ms: self.planned_tool_ms,
            planned_think_ms: self.planned_think_ms,
            response_id: self.response_id,
            scheduled_at: self.scheduled_at_us.map(ns),
            queued_at: ns(self.queued_at_us),
            connect_ns: (self.connect_ms * 1e6) as u64,
            reused_connection: self.reused_connection,
            body_sent_at: self
                .sent_at_us
                .map(ns)
                .zip(self.upload_ms)
                .map(|(s, up)| s + (up * 1e6).round() as u64),
            sent_at: self.sent_at_us.map(ns),
            body_bytes: self.body_bytes,
            media: self.media,
            first_byte_at: self.first_byte_at_us.map(ns),
            first_content: match self.leading_blank_chunks {
                Some(i) if (i as usize) < self.chunks.len() => Some(i as usize),
                _ => None,
            },
            chunks: chunks(self.chunks),
            reasoning_chunks: chunks(self.reasoning_chunks),
            finished_at: ns(self.finished_at_us),
            outcome: match self.outcome {
                WireOutcome::Ok(_) => Outcome::Ok,
                WireOutcome::Failed { kind, detail } => Outcome::Failed { kind, detail },
            },
            input_tokens: self.input_tokens,
            input_tokens_source: self.input_tokens_source,
            text_input_tokens: self.text_input_tokens,
            max_tokens: self.max_tokens,
            items: self.items,
            output_tokens: self.output_tokens,
            reasoning_tokens: self.reasoning_tokens,
            output_tokens_source: self.output_tokens_source,
            chunk_tokens_source: self.chunk_tokens_source,
            usage: self.usage,
            server_timing: self.server_timing,
            finish_reason: self.finish_reason,
            tool_calls: self.tool_calls,
            http_status: self.http_status,
            derived: self.derived,
            retries: self.retries,
        }
    }
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_workload(v: &InputTokenSource) -> bool {
    *v == InputTokenSource::Workload
}

fn is_no_media(v: &MediaCounts) -> bool {
    !v.any()
}

fn zero() -> Option<u32> {
    Some(0)
}

fn is_zero(v: &Option<u32>) -> bool {
    *v == Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn outcome_is_ok_string_or_object() {
        let clock = RunClock::with_anchor(Instant::now(), 1_000_000_000);
        let mut r = RequestRecord {
            chunks: vec![Chunk {
                at: 2_000,
                tokens: 1,
                bytes: 3,
            }],
            first_content: Some(0),
            ..Default::default()
        };
        let line = serde_json::to_string(&WireRecord::from_record(&r, &clock)).unwrap();
        assert!(line.contains(r#""outcome":"ok""#), "{line}");
        assert!(line.contains(r#""chunks":[[1000002,1]]"#), "{line}");
        assert!(line.contains(r#""first_token_at_us":1000002"#), "{line}");
        r.outcome = Outcome::failed(FailureKind::StreamCut, "eof after 3 chunks");
        let wire = WireRecord::from_record(&r, &clock);
        let line = serde_json::to_string(&wire).unwrap();
        assert!(
            line.contains(r#""outcome":{"kind":"stream_cut","detail":"eof after 3 chunks"}"#),
            "{line}"
        );
        let back: WireRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back, wire);
        let rec = back.into_record(1_000_000);
        assert_eq!(rec.outcome.failure_kind(), Some(FailureKind::StreamCut));
        assert_eq!(rec.chunks[0].at, 2_000);
    }

    #[test]
    fn tool_calls_are_written_when_made_and_read_as_none_from_older_lines() {
        let clock = RunClock::with_anchor(Instant::now(), 1_000_000_000);
        let mut r = RequestRecord::default();
        let line = serde_json::to_string(&WireRecord::from_record(&r, &clock)).unwrap();
        assert!(!line.contains("tool_calls"), "{line}");
        let old: WireRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(old.into_record(0).tool_calls, 0, "a line without the field");
        r.tool_calls = 2;
        let line = serde_json::to_string(&WireRecord::from_record(&r, &clock)).unwrap();
        assert!(line.contains(r#""tool_calls":2"#), "{line}");
        let back: WireRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back.into_record(0).tool_calls, 2);
    }
}
