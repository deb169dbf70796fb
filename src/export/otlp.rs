//! The run's requests as OpenTelemetry spans, in OTLP/HTTP's JSON encoding, so a tracing
//! backend shows them beside the server's own spans of the same traces.
//!
//! One client span per request (kind CLIENT): trace and span id as in its `traceparent`
//! header (`client::trace`), from when it was sent (or queued, when it never was) to when it
//! finished; attributes after OpenTelemetry's GenAI conventions (`gen_ai.operation.name`,
//! `gen_ai.request.model`, `gen_ai.usage.input_tokens` and `output_tokens`,
//! `gen_ai.response.id`, `error.type`) and servebench's own (`servebench.record.id`,
//! `servebench.phase`); one event per chunk at its arrival (`servebench.chunk`, with its
//! token count; the first content chunk is `servebench.first_token`). Pure: records in, JSON
//! out; `pipeline::otlp` sends it.

use crate::client::trace;
use crate::record::wire::{WireOutcome, WireRecord};
use serde_json::{json, Value as Json};

/// What every span of a run shares.
#[derive(Debug, Clone)]
pub struct SpanContext<'a> {
    /// The run's trace id prefix (`target.trace_id_prefix`).
    pub trace_id_prefix: &'a str,
    /// `gen_ai.operation.name`: `chat`, `text_completion`, …
    pub operation: &'a str,
    pub model: &'a str,
    /// `server.address` and `server.port` of the target.
    pub server_address: &'a str,
    pub server_port: u16,
}

/// One request's span.
pub fn span(w: &WireRecord, c: &SpanContext<'_>) -> Json {
    let start_us = w.sent_at_us.unwrap_or(w.queued_at_us);
    let mut attributes = vec![
        string("gen_ai.operation.name", c.operation),
        string("gen_ai.request.model", c.model),
        string("server.address", c.server_address),
        int("server.port", u64::from(c.server_port)),
        int("gen_ai.usage.input_tokens", u64::from(w.input_tokens)),
        int("gen_ai.usage.output_tokens", u64::from(w.output_tokens)),
        int("servebench.record.id", w.id),
        string("servebench.phase", &format!("{:?}", w.phase).to_lowercase()),
    ];
    if let Some(id) = &w.response_id {
        attributes.push(string("gen_ai.response.id", id));
    }
    let status = match &w.outcome {
        WireOutcome::Ok(_) => json!({"code": 1}),
        WireOutcome::Failed { kind, detail } => {
            attributes.push(string("error.type", kind.as_str()));
            json!({"code": 2, "message": detail})
        }
    };
    // `None`: no chunk carried content, so none is the first token.
    let first_content = w.leading_blank_chunks.map(|n| n as usize);
    let events: Vec<Json> = w
        .chunks
        .iter()
        .enumerate()
        .map(|(i, &(at_us, tokens))| {
            let name = if Some(i) == first_content {
                "servebench.first_token"
            } else {
                "servebench.chunk"
            };
            json!({
                "timeUnixNano": nanos(at_us),
                "name": name,
                "attributes": [int("servebench.tokens", u64::from(tokens))],
            })
        })
        .collect();
    json!({
        "traceId": trace::trace_id(c.trace_id_prefix, w.id),
        "spanId": trace::span_id(c.trace_id_prefix, w.id),
        "name": format!("{} {}", c.operation, c.model),
        "kind": 3,
        "startTimeUnixNano": nanos(start_us),
        "endTimeUnixNano": nanos(w.finished_at_us.max(start_us)),
        "attributes": attributes,
        "events": events,
        "status": status,
    })
}

/// An `ExportTraceServiceRequest` holding `spans`, from servebench `version`.
pub fn document(spans: Vec<Json>, version: &str) -> Json {
    json!({
        "resourceSpans": [{
            "resource": {"attributes": [string("service.name", "servebench")]},
            "scopeSpans": [{
                "scope": {"name": "servebench", "version": version},
                "spans": spans,
            }],
        }],
    })
}

/// Unix µs as OTLP's nanoseconds (a decimal string: JSON numbers lose 64-bit precision).
fn nanos(us: u64) -> String {
    (u128::from(us) * 1000).to_string()
}

fn string(key: &str, value: &str) -> Json {
    json!({"key": key, "value": {"stringValue": value}})
}

fn int(key: &str, value: u64) -> Json {
    json!({"key": key, "value": {"intValue": value.to_string()}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::FailureKind;

    fn record(outcome: WireOutcome) -> WireRecord {
        let line = r#"{"id":7,"phase":"measure","response_id":"chatcmpl-1","scheduled_at_us":null,"queued_at_us":1000,"connect_ms":0.0,"reused_connection":true,"sent_at_us":1100,"first_byte_at_us":1200,"first_token_at_us":1300,"chunks":[[1250,0],[1300,1],[1400,2]],"leading_blank_chunks":1,"finished_at_us":1500,"outcome":"ok","input_tokens":16,"output_tokens":3,"output_tokens_source":"server_usage","chunk_tokens_source":"one_per_chunk","max_tokens":3,"finish_reason":"length","usage":null}"#;
        let mut w: WireRecord = serde_json::from_str(line).unwrap();
        w.outcome = outcome;
        w
    }

    fn context() -> SpanContext<'static> {
        SpanContext {
            trace_id_prefix: "00f067aa0ba902b7",
            operation: "chat",
            model: "m",
            server_address: "127.0.0.1",
            server_port: 8000,
        }
    }

    fn attribute<'a>(span: &'a Json, key: &str) -> &'a Json {
        span["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| &a["value"])
            .unwrap_or(&Json::Null)
    }

    #[test]
    fn a_span_has_the_requests_trace_times_and_chunks() {
        let s = span(
            &record(WireOutcome::Ok(crate::record::wire::OkTag::Ok)),
            &context(),
        );
        assert_eq!(s["traceId"], "00f067aa0ba902b70000000000000007");
        assert_eq!(s["spanId"], trace::span_id("00f067aa0ba902b7", 7));
        assert_eq!(s["startTimeUnixNano"], "1100000");
        assert_eq!(s["endTimeUnixNano"], "1500000");
        assert_eq!(s["kind"], 3);
        assert_eq!(s["status"]["code"], 1);
        assert_eq!(s["name"], "chat m");
        assert_eq!(attribute(&s, "gen_ai.usage.output_tokens")["intValue"], "3");
        assert_eq!(attribute(&s, "servebench.record.id")["intValue"], "7");
        assert_eq!(attribute(&s, "servebench.phase")["stringValue"], "measure");
        let events = s["events"].as_array().unwrap();
        assert_eq!(events.len(), 3);
        // The blank role chunk first, then the first token.
        assert_eq!(events[0]["name"], "servebench.chunk");
        assert_eq!(events[1]["name"], "servebench.first_token");
        assert_eq!(events[1]["timeUnixNano"], "1300000");
        assert_eq!(events[2]["attributes"][0]["value"]["intValue"], "2");
    }

    #[test]
    fn an_answer_without_content_has_no_first_token_event() {
        let mut w = record(WireOutcome::Ok(crate::record::wire::OkTag::Ok));
        w.leading_blank_chunks = None;
        let s = span(&w, &context());
        let events = s["events"].as_array().unwrap();
        assert!(events.iter().all(|e| e["name"] == "servebench.chunk"));
    }

    #[test]
    fn a_failed_request_is_an_error_span_with_its_kind() {
        let failed = WireOutcome::Failed {
            kind: FailureKind::Timeout,
            detail: "no token within the first-token timeout".into(),
        };
        let s = span(&record(failed), &context());
        assert_eq!(s["status"]["code"], 2);
        assert_eq!(attribute(&s, "error.type")["stringValue"], "timeout");
        let doc = document(vec![s], "1.0");
        assert_eq!(
            doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }
}
