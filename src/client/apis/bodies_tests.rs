//! Every request body, byte for byte: for each endpoint and a few combinations of the
//! request options (temperature set or not, EOS ignored or not, the prefix cache off, usage
//! in every chunk, `--extra-body` and per-request overrides, an agent's tools), the exact
//! bytes `request_body` writes, held to `tests/fixtures/request-bodies.txt`. gRPC bodies
//! are protobuf: their bytes as hex, with a readable line of their tensors above.
//!
//! The file was written by the code before the request options were written through one
//! table (`dialect`), so the table is held to the bodies every API sent before it. After a
//! deliberate change to a body: `SERVEBENCH_UPDATE_BODIES=1 cargo test --lib bodies`, and
//! review the diff.

use super::*;
use crate::client::apis::kserve::GrpcBackend;
use crate::workload::agent::{AgentMessage, AgentParts, ToolCall, ToolDef};
use std::fmt::Write;

const FIXTURE: &str = "tests/fixtures/request-bodies.txt";

fn agent(calls_tools: bool) -> AgentParts {
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "search".into(),
        arguments: r#"{"q":"a"}"#.into(),
    };
    AgentParts {
        tools: Arc::new(vec![ToolDef {
            name: "search".into(),
            description: "Search the docs.".into(),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        }]),
        inserts: vec![
            (2, AgentMessage::Calls(vec![call("call_1")])),
            (
                2,
                AgentMessage::Result {
                    call_id: "call_1".into(),
                    name: "search".into(),
                    content: "A".into(),
                },
            ),
        ],
        calls_tools,
    }
}

/// One combination of options: its name, the options, whether the prompt is a lone user
/// message, the per-request overrides and the agent overlay.
struct Case {
    name: &'static str,
    opts: RequestOptions,
    lone_user: bool,
    overrides: Vec<(String, Value)>,
    agent: Option<AgentParts>,
}

fn cases() -> Vec<Case> {
    let case = |name, opts| Case {
        name,
        opts,
        lone_user: false,
        overrides: Vec::new(),
        agent: None,
    };
    let pairs = |v: Value| -> Vec<(String, Value)> {
        let Value::Object(map) = v else {
            unreachable!()
        };
        map.into_iter().collect()
    };
    let plain = RequestOptions {
        ignore_eos: false,
        temperature: None,
        ..RequestOptions::default()
    };
    let sampled = RequestOptions {
        temperature: Some(0.7),
        prefix_cache: false,
        usage_per_chunk: true,
        ..RequestOptions::default()
    };
    let extra = RequestOptions {
        extra_body: pairs(json!({"top_p": 0.9, "stream": false,
            "parameters": {"seed": 1}, "sampling_params": {"top_k": 5}})),
        ..RequestOptions::default()
    };
    vec![
        case("defaults", RequestOptions::default()),
        Case {
            lone_user: true,
            ..case("plain", plain.clone())
        },
        case("sampled", sampled.clone()),
        Case {
            overrides: pairs(json!({"top_p": 0.5, "temperature": 1.0,
                "parameters": {"top_k": 2}, "sampling_params": {"top_k": 3}})),
            ..case("extra", extra)
        },
        Case {
            agent: Some(agent(true)),
            ..case("agent-calls", RequestOptions::default())
        },
        Case {
            agent: Some(agent(false)),
            ..case("agent-answers", sampled)
        },
        Case {
            agent: Some(agent(false)),
            lone_user: true,
            ..case("agent-plain", plain)
        },
    ]
}

/// The targets whose bodies are pinned: every endpoint, gRPC with each backend, WebSocket
/// with the default template and one that nests the options.
fn targets() -> Vec<(String, Target)> {
    let mut out = Vec::new();
    for e in Endpoint::ALL {
        let t = tests::target(e, None, &[]);
        match e {
            Endpoint::Grpc => {
                for backend in [GrpcBackend::TensorrtLlm, GrpcBackend::Vllm] {
                    let mut t = t.clone();
                    t.grpc_backend = Some(backend);
                    out.push((format!("grpc-{backend:?}").to_lowercase(), t));
                }
            }
            Endpoint::Websocket => {
                out.push(("websocket".into(), t.clone()));
                let mut t = t;
                t.websocket = Some(WebSocketOptions {
                    template: r#"{"input":{"text":{{prompt}}},"params":{"n":{{max_tokens}},"t":{{temperature}},"eos":{{ignore_eos}}}}"#.into(),
                    ..WebSocketOptions::default()
                });
                out.push(("websocket-template".into(), t));
            }
            _ => out.push((format!("{e:?}").to_lowercase(), t)),
        }
    }
    out
}

/// A gRPC request's tensors, one readable line: `name DATATYPE contents; …`.
fn grpc_line(bytes: &[u8]) -> String {
    use prost::Message;
    let r = kserve::ModelInferRequest::decode(bytes).expect("the body decodes");
    let mut line = format!("model={:?} id={:?}", r.model_name, r.id);
    for i in &r.inputs {
        let c = i.contents.clone().unwrap_or_default();
        let bytes: Vec<_> = c
            .bytes_contents
            .iter()
            .map(|b| String::from_utf8_lossy(b))
            .collect();
        let _ = write!(
            line,
            "; {} {} {:?} bytes={bytes:?} bool={:?} int={:?} fp32={:?}",
            i.name, i.datatype, i.shape, c.bool_contents, c.int_contents, c.fp32_contents
        );
    }
    line
}

/// Every pinned body, as the fixture's text.
fn bodies() -> String {
    let mut out = String::new();
    for (name, target) in targets() {
        for case in cases() {
            let messages: Vec<(String, String)> = if case.lone_user {
                vec![("user".into(), "Hi".into())]
            } else {
                vec![
                    ("system".into(), "Be brief.".into()),
                    ("user".into(), "Hi".into()),
                ]
            };
            let prompt = Prompt {
                messages: &messages,
                max_tokens: 8,
                overrides: &case.overrides,
                agent: case.agent.as_ref(),
            };
            let body = request_body(&target, &prompt, &case.opts);
            let _ = writeln!(out, "{name} {}", case.name);
            if target.endpoint == Endpoint::Grpc {
                let hex: String = body.iter().map(|b| format!("{b:02x}")).collect();
                let _ = writeln!(out, "{}\n{hex}", grpc_line(&body));
            } else {
                let _ = writeln!(out, "{}", String::from_utf8(body).expect("JSON is UTF-8"));
            }
        }
    }
    out
}

#[test]
fn every_body_is_the_pinned_one_byte_for_byte() {
    let path = format!("{}/{FIXTURE}", env!("CARGO_MANIFEST_DIR"));
    let now = bodies();
    if std::env::var_os("SERVEBENCH_UPDATE_BODIES").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    if pinned != now {
        let first = pinned
            .lines()
            .zip(now.lines())
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("pinned: {a}\nnow:    {b}"))
            .unwrap_or_else(|| "one is a prefix of the other".into());
        panic!("request bodies differ from {FIXTURE}:\n{first}\n(after a deliberate change: SERVEBENCH_UPDATE_BODIES=1 cargo test --lib bodies, and review the diff)");
    }
}
