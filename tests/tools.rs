//! Tool calls end to end against the simulator: a request that offers a tool and requires a
//! call (`--extra-body` with `tools` and `tool_choice`) is answered with one call whose
//! arguments stream as the answer's tokens; the client records the call, times its argument
//! fragments as output and counts what the simulator really generated.

use crate::common::{config, run, temp_dir, truth_by_id};
use servebench::record::{Phase, TokenSource};
use servebench::sim::{SimConfig, SimServer};

/// `tools` and a `tool_choice` that requires a call, in `endpoint`'s form.
fn tools_body(endpoint: &str) -> String {
    match endpoint {
        "responses" => r#"{"tools":[{"type":"function","name":"search","description":"Search.","parameters":{"type":"object"}}],"tool_choice":"required"}"#,
        "messages" => r#"{"tools":[{"name":"search","description":"Search.","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}"#,
        _ => r#"{"tools":[{"type":"function","function":{"name":"search","description":"Search.","parameters":{"type":"object"}}}],"tool_choice":"required"}"#,
    }
    .to_owned()
}

#[test]
fn a_required_tool_call_is_recorded_timed_and_counted() {
    for endpoint in ["chat", "responses", "messages"] {
        let sim = SimServer::spawn(SimConfig::fixed(20.0, 2.0), 0).unwrap();
        let body = tools_body(endpoint);
        let cfg = config(
            &sim.base_url(),
            &[
                "--endpoint",
                endpoint,
                "--concurrency",
                "2",
                "--requests",
                "4",
                "--warmup",
                "none",
                "--input-tokens",
                "32",
                "--output-tokens",
                "12",
                "--extra-body",
                &body,
            ],
            &temp_dir(&format!("tools-{endpoint}")),
        );
        let (out, summary) = run(&cfg);
        let truth = truth_by_id(&sim, out.records.len());
        assert_eq!(summary.requests.completed, 4, "{endpoint}");
        let measured = out.records.iter().filter(|r| r.phase == Phase::Measure);
        for r in measured {
            let t = &truth[r.response_id.as_deref().expect("a response id")];
            assert!(r.outcome.is_ok(), "{endpoint}: {:?}", r.outcome);
            assert_eq!((r.tool_calls, t.tool_calls), (1, 1), "{endpoint}");
            assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"), "{endpoint}");
            assert_eq!(r.output_tokens, t.completion_tokens, "{endpoint}");
            assert_eq!(r.output_tokens, 12, "{endpoint}");
            assert_eq!(
                r.output_tokens_source,
                TokenSource::ServerUsage,
                "{endpoint}"
            );
            assert_eq!(
                r.chunks.len(),
                t.chunk_writes.len(),
                "{endpoint}: a chunk per write"
            );
            let ttft = r
                .first_token_at()
                .expect("the first fragment is the first token");
            assert!(
                ttft - r.submitted_at().unwrap() >= 20_000_000,
                "{endpoint}: TTFT"
            );
            assert!(r.derived.as_ref().unwrap().ttft_ms.is_some(), "{endpoint}");
        }
    }
}

#[test]
fn auto_tool_choice_gets_a_text_answer() {
    let sim = SimServer::spawn(SimConfig::fixed(5.0, 1.0), 0).unwrap();
    let body = tools_body("chat").replace("\"required\"", "\"auto\"");
    let cfg = config(
        &sim.base_url(),
        &[
            "--requests",
            "2",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "4",
            "--extra-body",
            &body,
        ],
        &temp_dir("tools-auto"),
    );
    let (out, _) = run(&cfg);
    let truth = truth_by_id(&sim, out.records.len());
    for r in out.records.iter().filter(|r| r.phase == Phase::Measure) {
        let t = &truth[r.response_id.as_deref().unwrap()];
        assert!(r.outcome.is_ok());
        assert_eq!((r.tool_calls, t.tool_calls), (0, 0));
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
    }
}
