//! Every API end to end against the simulator (`--endpoint chat|completions|responses|
//! messages|llamacpp|tgi|sglang|websocket`): each stream format is written by the simulator
//! and read by the client, and what the client recorded agrees with what the simulator
//! really did.

use crate::common::{config, run, servebench, temp_dir, truth_by_id};
use servebench::record::{FailureKind, Phase, RequestRecord, TokenSource};
use servebench::sim::{Faults, SimConfig, SimServer, TruthRecord};
use std::collections::HashMap;

const ENDPOINTS: [&str; 9] = [
    "chat",
    "completions",
    "responses",
    "messages",
    "llamacpp",
    "tgi",
    "sglang",
    "websocket",
    "grpc",
];

/// A closed-loop run of `requests` against `sim` through `endpoint`; the records of the
/// measured requests and the simulator's truth by response id.
fn drive(
    tag: &str,
    sim: &SimServer,
    endpoint: &str,
    requests: u32,
    output_tokens: u32,
) -> (
    Vec<RequestRecord>,
    servebench::metrics::RunSummary,
    HashMap<String, TruthRecord>,
    servebench::runner::RunOutput,
) {
    let (n, out_tokens) = (requests.to_string(), output_tokens.to_string());
    // gRPC has its own port; its vLLM-backend inputs carry ignore_eos (exact lengths).
    let url = match endpoint {
        "grpc" => sim.grpc_url(),
        _ => sim.base_url(),
    };
    let cfg = config(
        &url,
        &[
            "--grpc-backend",
            "vllm",
            "--endpoint",
            endpoint,
            "--concurrency",
            "4",
            "--requests",
            &n,
            "--warmup",
            "none",
            "--input-tokens",
            "32",
            "--output-tokens",
            &out_tokens,
        ],
        &temp_dir(&format!("api-{tag}-{endpoint}")),
    );
    let (out, summary) = run(&cfg);
    let truth: HashMap<String, TruthRecord> = truth_by_id(sim, out.records.len());
    let records = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .cloned()
        .collect();
    (records, summary, truth, out)
}

#[test]
fn every_api_records_what_the_simulator_did() {
    for endpoint in ENDPOINTS {
        let sim = SimServer::spawn(SimConfig::fixed(20.0, 2.0), 0).unwrap();
        let (records, s, truth, out) = drive("records", &sim, endpoint, 12, 16);
        assert_eq!(
            s.requests.completed,
            12,
            "{endpoint}: {:?}",
            records.first().map(|r| &r.outcome)
        );
        assert_eq!(s.total_output_tokens, 12 * 16, "{endpoint}");
        for r in &records {
            let id = r
                .response_id
                .as_ref()
                .unwrap_or_else(|| panic!("{endpoint}: no response id"));
            let t = &truth[id];
            assert_eq!(r.output_tokens, t.completion_tokens, "{endpoint}");
            if endpoint == "grpc" {
                // Triton's text streams carry no token counts: the tokenizer counts (the
                // simulator's words are one cl100k token each, so exactly).
                assert_eq!(r.output_tokens_source, TokenSource::Tokenizer);
                assert_eq!(r.finish_reason.as_deref(), Some("stop"));
                assert_eq!(r.chunks.len(), t.chunk_writes.len());
                continue;
            }
            assert_eq!(
                r.output_tokens_source,
                TokenSource::ServerUsage,
                "{endpoint}: usage read"
            );
            assert_eq!(
                r.usage_prompt_tokens(),
                Some(t.prompt_tokens as u64),
                "{endpoint}"
            );
            assert_eq!(
                r.chunks.len(),
                t.chunk_writes.len(),
                "{endpoint}: one chunk per write"
            );
            assert_eq!(
                r.chunks.iter().map(|c| c.tokens).sum::<u32>(),
                16,
                "{endpoint}"
            );
            assert_eq!(r.finish_reason.as_deref(), Some("length"), "{endpoint}");
            for (c, (written, tokens)) in r.chunks.iter().zip(&t.chunk_writes) {
                assert_eq!(c.tokens, *tokens, "{endpoint}");
                assert!(
                    c.at >= out.clock.offset_of(*written),
                    "{endpoint}: arrival before write"
                );
            }
            let sent = r.sent_at.unwrap();
            assert!(sent <= out.clock.offset_of(t.received), "{endpoint}");
            assert!(
                r.first_token_at().unwrap() - r.submitted_at().unwrap() >= 20_000_000,
                "{endpoint}: TTFT"
            );
            if endpoint != "tgi" {
                // TGI reports no prefix-cache figure; the others report the truth (0 here).
                assert_eq!(
                    r.usage_cached_tokens(),
                    Some(t.cached_tokens as u64),
                    "{endpoint}"
                );
            }
            if endpoint == "llamacpp" {
                // llama.cpp's timings: the server's prompt time fits inside the client's TTFT.
                let timing = r.server_timing.as_ref().expect("timings recorded");
                let ttft_ms = (r.first_token_at().unwrap() - sent) as f64 / 1e6;
                assert!(timing.prompt_ms.unwrap() <= ttft_ms, "{endpoint}");
                assert_eq!(timing.predicted_n, Some(16));
            }
        }
    }
}

/// Reasoning streams apart in the APIs that have a channel for it, and counts as output.
#[test]
fn reasoning_is_apart_where_the_api_streams_it() {
    for endpoint in ["chat", "responses", "messages", "websocket"] {
        let sim = SimServer::spawn(
            SimConfig {
                reasoning_tokens: 6,
                ..SimConfig::fixed(5.0, 1.0)
            },
            0,
        )
        .unwrap();
        let (records, s, _, _) = drive("reasoning", &sim, endpoint, 8, 16);
        assert_eq!(s.requests.completed, 8, "{endpoint}");
        assert_eq!(s.total_reasoning_tokens, 8 * 6, "{endpoint}");
        for r in &records {
            assert_eq!((r.output_tokens, r.reasoning_tokens), (16, 6), "{endpoint}");
            assert_eq!(
                (r.chunks.len(), r.reasoning_chunks.len()),
                (10, 6),
                "{endpoint}"
            );
            // Reasoning came first (in the same read at worst, on a busy machine).
            assert!(r.first_reasoning_at().unwrap() <= r.first_token_at().unwrap());
        }
    }
}

/// An error event part-way is a failed record of kind `protocol`, in every API's form, and
/// what arrived before it is kept.
#[test]
fn error_events_mid_stream_fail_the_request_in_every_api() {
    for endpoint in ENDPOINTS {
        let sim = SimServer::spawn(
            SimConfig {
                faults: Faults {
                    error_event_rate: 1.0,
                    ..Default::default()
                },
                ..SimConfig::fixed(2.0, 1.0)
            },
            0,
        )
        .unwrap();
        let (records, s, truth, _) = drive("errors", &sim, endpoint, 8, 12);
        assert_eq!(s.requests.failed, 8, "{endpoint}");
        for r in &records {
            assert_eq!(
                r.outcome.failure_kind(),
                Some(FailureKind::Protocol),
                "{endpoint}"
            );
            let servebench::record::Outcome::Failed { detail, .. } = &r.outcome else {
                unreachable!()
            };
            assert!(
                detail.contains("injected error event"),
                "{endpoint}: {detail}"
            );
            // Ids arrive with the first event for most APIs; where they did, the tokens
            // delivered before the error are all recorded.
            if let Some(t) = r.response_id.as_ref().and_then(|id| truth.get(id)) {
                assert!(t.error_event);
                let got: u32 = r.chunks.iter().map(|c| c.bytes).sum();
                assert_eq!(
                    r.chunks.len(),
                    t.chunk_writes.len(),
                    "{endpoint}: {got} bytes"
                );
            }
        }
    }
}

/// A content filter's refusal part-way, in each API's own form (chat's `refusal` delta and
/// `content_filter`, Responses' `response.refusal.delta`, Messages' `stop_reason: refusal`):
/// a failed record of kind `refused`, counted as such in the summary (what the guardrail
/// test discloses), with the tokens before it kept.
#[test]
fn refusals_fail_the_request_as_refused_in_every_api_that_has_them() {
    for endpoint in ["chat", "completions", "responses", "messages"] {
        let sim = SimServer::spawn(
            SimConfig {
                faults: Faults {
                    refusal_rate: 1.0,
                    ..Default::default()
                },
                ..SimConfig::fixed(2.0, 1.0)
            },
            0,
        )
        .unwrap();
        let (records, s, truth, _) = drive("refusals", &sim, endpoint, 8, 12);
        assert_eq!(
            s.requests.failed_by_kind.get("refused"),
            Some(&8),
            "{endpoint}: {:?}",
            s.requests.failed_by_kind
        );
        for r in &records {
            assert_eq!(
                r.outcome.failure_kind(),
                Some(FailureKind::Refused),
                "{endpoint}"
            );
            if let Some(t) = r.response_id.as_ref().and_then(|id| truth.get(id)) {
                assert!(t.refused, "{endpoint}");
                assert_eq!(r.chunks.len(), t.chunk_writes.len(), "{endpoint}");
            }
        }
    }
}

/// `servebench run --endpoint X` against the built-in simulator works for every API, and
/// the report and run.json name the API and its protocol.
#[test]
fn the_cli_runs_every_endpoint_against_the_builtin_simulator() {
    for endpoint in ENDPOINTS {
        let dir = temp_dir(&format!("cli-{endpoint}"));
        let out_dir = dir.join("run");
        let o = servebench(&[
            "run",
            "--endpoint",
            endpoint,
            "--requests",
            "8",
            "--concurrency",
            "4",
            "--warmup",
            "none",
            "--no-fluidity",
            "--input-tokens",
            "16",
            "--output-tokens",
            "8",
            "--sim-ttft-ms",
            "5",
            "--sim-itl-ms",
            "1",
            "--quiet",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{endpoint}: {stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let protocol = match endpoint {
            "websocket" => "API over WebSocket",
            "grpc" => "API over gRPC (HTTP/2)",
            _ => "API over HTTP/1.1, server-sent events",
        };
        // The report wraps long lines: compare with whitespace collapsed.
        let flat = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(protocol), "{stdout}");
        let run: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(run["config"]["target"]["endpoint"], endpoint);
        assert_eq!(run["summary"]["requests"]["completed"], 8, "{endpoint}");
    }
}

/// Readiness and discovery work on every API's routes: `{base}/models`, `{root}/health`
/// for the native routes and the WebSocket, `ServerReady` for gRPC; the engines'
/// self-descriptions name the model.
#[test]
fn readiness_and_discovery_on_every_api() {
    use servebench::client::simple::call;
    use servebench::client::BaseUrl;
    use std::time::Duration;
    let cfg = SimConfig::fixed(1.0, 1.0);
    let model = cfg.model.clone();
    let sim = SimServer::spawn(cfg, 0).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for endpoint in ENDPOINTS {
        let url = match endpoint {
            "grpc" => sim.grpc_url(),
            _ => sim.base_url(),
        };
        let c = config(
            &url,
            &["--endpoint", endpoint],
            &temp_dir(&format!("ready-{endpoint}")),
        );
        let info = rt
            .block_on(servebench::runner::wait_until_ready(
                &c.target,
                Duration::from_secs(10),
            ))
            .unwrap_or_else(|e| panic!("{endpoint}: {e}"));
        if endpoint != "grpc" {
            assert_eq!(info.models, std::slice::from_ref(&model), "{endpoint}");
            assert_eq!(info.engine.as_deref(), Some("servebench-sim"), "{endpoint}");
        }
    }
    let base = BaseUrl::parse(&sim.base_url()).unwrap();
    for (route, field) in [
        ("/props", "model_path"),
        ("/info", "model_id"),
        ("/get_model_info", "model_path"),
    ] {
        let r = rt
            .block_on(call(
                &base,
                None,
                "GET",
                route,
                None,
                Duration::from_secs(5),
            ))
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v[field], model.as_str(), "{route}");
    }
}
