//! The agent planner's promises, on hand-built sessions: where each tool part lands, what
//! each request waits, which requests ask for a call, and the session format's checks.

use super::plan::{plan, PlanInputs, SUBAGENT_TOOL};
use super::synthetic::AgentConfig;
use super::trace::{parse_jsonl, AgentStep, AgentTrace, BranchTrace, ToolCallTrace, TraceError};
use super::*;
use crate::tokenizer::Tokenizer;
use crate::workload::lengths::LengthDist;
use crate::workload::text::TextError;
use crate::workload::RequestSpec;
use rand::SeedableRng;

/// One token per whitespace-separated word: lengths checkable by hand.
struct Words;

impl Tokenizer for Words {
    fn name(&self) -> &str {
        "words"
    }
    fn source(&self) -> &str {
        "test"
    }
    fn vocab_size(&self) -> usize {
        1
    }
    fn encode(&self, text: &str) -> Vec<u32> {
        text.split_whitespace().map(|_| 0).collect()
    }
    fn decode(&self, ids: &[u32]) -> String {
        vec!["w"; ids.len()].join(" ")
    }
    fn token_byte_lengths(&self, text: &str) -> Vec<usize> {
        text.split_whitespace().map(str::len).collect()
    }
}

fn words(n: usize) -> Result<String, TextError> {
    Ok(vec!["w"; n].join(" "))
}

fn tool(name: &str) -> Result<ToolDef, TextError> {
    Ok(ToolDef {
        name: name.into(),
        description: "d d".into(),
        parameters: serde_json::json!({}),
    })
}

fn planned(trace: &AgentTrace, system: Option<&str>) -> Vec<RequestSpec> {
    plan(
        trace,
        7,
        100,
        PlanInputs {
            tokenizer: &Words,
            text: &mut words,
            tool: &mut tool,
            system: system.map(str::to_owned),
        },
    )
    .unwrap()
}

fn call(name: &str, result_tokens: u32, tool_ms: f64) -> ToolCallTrace {
    ToolCallTrace {
        name: name.into(),
        arguments_tokens: 2,
        result_tokens,
        tool_ms,
    }
}

#[test]
fn a_call_then_its_result_then_the_answer() {
    let trace = AgentTrace {
        id: None,
        system_tokens: 0,
        tools: vec!["lookup".into()],
        steps: vec![
            AgentStep {
                input_tokens: 5,
                output_tokens: 3,
                calls: vec![call("search", 4, 100.0), call("lookup", 6, 250.0)],
                ..Default::default()
            },
            AgentStep {
                output_tokens: 9,
                think_ms: 50.0,
                ..Default::default()
            },
        ],
    };
    let r = planned(&trace, Some("s s s"));
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].index, r[1].index), (100, 101));
    assert_eq!((r[0].turn, r[1].turn), (0, 1));
    assert_eq!(r[0].session, Some(7));
    // The tools offered: the trace's list first, then the calls' other tools.
    let a0 = r[0].agent.as_ref().unwrap();
    let names: Vec<&str> = a0.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["lookup", "search"]);
    assert!(a0.calls_tools && a0.inserts.is_empty());
    // Step 0: system (3) + user (5) + tool definitions as JSON text.
    let tools_tokens = Words.count(&tools_text(&a0.tools)) as u32;
    assert_eq!(r[0].input_tokens, 3 + 5 + tools_tokens);
    assert_eq!(
        (r[0].max_tokens, r[0].tool_ms, r[0].think_ms),
        (3, 0.0, 0.0)
    );
    // Step 1 waits for the longer call (they ran in parallel), then its think time.
    let a1 = r[1].agent.as_ref().unwrap();
    assert!(!a1.calls_tools);
    assert_eq!((r[1].tool_ms, r[1].think_ms), (250.0, 50.0));
    assert_eq!(r[1].messages, r[0].messages, "no new user message");
    let order: Vec<String> = conversation(&r[1].messages, Some(a1))
        .map(|m| match m {
            Msg::Text { role, .. } => role.to_owned(),
            Msg::Calls(c) => format!("calls:{}", c.len()),
            Msg::Result { call_id, .. } => format!("result:{call_id}"),
        })
        .collect();
    assert_eq!(
        order,
        [
            "system",
            "user",
            "calls:2",
            "result:call_7_0_0",
            "result:call_7_0_1"
        ]
    );
    // Arguments: {"query": "w w"} (2 words, + the JSON's name) and results 4 + 6 words.
    assert_eq!(r[1].input_tokens, 3 + 5 + (2 + 2) + 4 + 6 + tools_tokens);
}

#[test]
fn a_fan_out_sends_its_branches_together_and_joins_them_as_results() {
    let trace = AgentTrace {
        id: None,
        system_tokens: 0,
        tools: Vec::new(),
        steps: vec![
            AgentStep {
                input_tokens: 4,
                output_tokens: 2,
                calls: vec![call("plan", 1, 30.0)],
                ..Default::default()
            },
            AgentStep {
                fan_out: vec![
                    BranchTrace {
                        input_tokens: 3,
                        output_tokens: 5,
                    },
                    BranchTrace {
                        input_tokens: 6,
                        output_tokens: 7,
                    },
                ],
                ..Default::default()
            },
            AgentStep {
                input_tokens: 0,
                output_tokens: 8,
                ..Default::default()
            },
        ],
    };
    let r = planned(&trace, None);
    assert_eq!(r.len(), 4);
    let shape: Vec<(u32, u32, f64)> = r.iter().map(|q| (q.turn, q.branch, q.tool_ms)).collect();
    assert_eq!(
        shape,
        [(0, 0, 0.0), (1, 0, 30.0), (1, 1, 30.0), (2, 0, 0.0)]
    );
    // Each branch: the shared history plus its own message.
    assert_eq!(r[1].messages.len(), 2);
    assert_eq!(r[1].messages[..1], r[2].messages[..1]);
    assert_eq!((r[1].max_tokens, r[2].max_tokens), (5, 7));
    // The join: one subagent call per branch, the branch's answer as its result.
    let last = r[3].agent.as_ref().unwrap();
    let results: Vec<(String, usize)> = conversation(&r[3].messages, Some(last))
        .filter_map(|m| match m {
            Msg::Result { name, content, .. } => Some((name.to_owned(), Words.count(content))),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("plan".into(), 1),
            (SUBAGENT_TOOL.into(), 5),
            (SUBAGENT_TOOL.into(), 7)
        ]
    );
    assert!(last.tools.iter().any(|t| t.name == SUBAGENT_TOOL));
}

#[test]
fn the_session_format_reads_and_says_what_is_wrong() {
    let ok = "{\"steps\":[{\"input_tokens\":10,\"output_tokens\":4,\"calls\":[{\"name\":\"x\",\"result_tokens\":5,\"tool_ms\":12.5}]},{\"output_tokens\":3}]}\n\n{\"id\":\"b\",\"steps\":[{\"input_tokens\":1,\"output_tokens\":1}]}\n";
    let t = parse_jsonl(ok).unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].steps[0].calls[0].arguments_tokens, 16, "the default");
    assert_eq!(t[0].steps[0].tool_time_ms(), 12.5);
    assert_eq!(t[0].requests(), 2);
    let err = |s: &str| parse_jsonl(s).unwrap_err();
    assert!(matches!(
        err("{\"steps\":[]}"),
        TraceError::Invalid { line: 1, .. }
    ));
    assert!(matches!(
        err("\n{\"steps\":[{\"output_tokens\":3}]}"),
        TraceError::Invalid { line: 2, .. }
    ));
    assert!(matches!(
        err("{\"step\":[]}"),
        TraceError::Json { line: 1, .. }
    ));
    assert!(err("{\"steps\":[{\"input_tokens\":1,\"output_tokens\":1,\"calls\":[{\"name\":\"x\",\"tool_ms\":-1}]}]}")
        .to_string()
        .contains("≥ 0"));
    assert_eq!(err("\n\n"), TraceError::Empty);
    let after_text = "{\"steps\":[{\"input_tokens\":1,\"output_tokens\":1},{\"output_tokens\":2}]}";
    assert!(err(after_text)
        .to_string()
        .contains("step 1 follows a text answer"));
}

#[test]
fn drawn_sessions_end_in_text_and_repeat_by_seed() {
    let cfg = AgentConfig {
        steps: LengthDist::Fixed { value: 4 },
        calls_per_step: LengthDist::Fixed { value: 2 },
        arguments_tokens: LengthDist::Fixed { value: 8 },
        result_tokens: LengthDist::Fixed { value: 100 },
        tool_time_ms: LengthDist::Fixed { value: 40 },
        tools: 3,
        tool_tokens: 10,
        fan_out: None,
        end_with_text: true,
    };
    let draw = |seed| {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let input = LengthDist::Fixed { value: 50 };
        cfg.draw(&mut rng, &input, &LengthDist::Fixed { value: 20 })
    };
    let t = draw(1);
    assert_eq!(t, draw(1));
    t.check(1).unwrap();
    assert_eq!(t.steps.len(), 4);
    assert_eq!(t.steps[0].input_tokens, 50);
    assert!(t.steps[1..].iter().all(|s| s.input_tokens == 0));
    let calls: Vec<usize> = t.steps.iter().map(|s| s.calls.len()).collect();
    assert_eq!(calls, [2, 2, 2, 0]);
    assert!(t.steps[0].calls.iter().all(|c| c.name.starts_with("tool_")));
    let fan = AgentConfig {
        fan_out: Some(synthetic::FanOut {
            share: 1.0,
            branches: LengthDist::Fixed { value: 3 },
        }),
        ..cfg.clone()
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let f = fan.draw(
        &mut rng,
        &LengthDist::Fixed { value: 5 },
        &LengthDist::Fixed { value: 6 },
    );
    let branches: Vec<usize> = f.steps.iter().map(|s| s.fan_out.len()).collect();
    assert_eq!(
        branches,
        [0, 3, 3, 0],
        "middle steps fan out, the first and last do not"
    );
    assert_eq!(f.requests(), 8);
}

#[test]
fn the_generator_draws_and_replays_agent_sessions() {
    use crate::tokenizer::TiktokenTokenizer;
    use crate::workload::datasets::Dataset;
    use crate::workload::{Generator, Scenario};
    let tok = TiktokenTokenizer::cl100k();
    let scenario = Scenario::named("agentic").unwrap();
    scenario.validate().unwrap();
    let sessions = |seed| {
        let mut g = Generator::new(&scenario, seed, &tok, None).unwrap();
        (0..3)
            .map(|_| g.next_session(&tok).unwrap())
            .collect::<Vec<_>>()
    };
    let a = sessions(5);
    assert_eq!(a, sessions(5), "the same seed sends the same bytes");
    let mut index = 0;
    for (k, s) in a.iter().enumerate() {
        for r in s {
            assert_eq!((r.index, r.session), (index, Some(k as u64)));
            index += 1;
        }
        // Every request offers the same tools: a prefix shared across sessions.
        let tools = |r: &RequestSpec| r.agent.as_ref().unwrap().tools.clone();
        assert_eq!(tools(&s[0]), tools(&a[0][0]));
        let last = s.last().unwrap().agent.as_ref().unwrap();
        assert!(!last.calls_tools, "the last step answers in text");
        // The context grows step by step.
        let inputs: Vec<u32> = s.iter().map(|r| r.input_tokens).collect();
        assert!(inputs.windows(2).all(|w| w[0] <= w[1]) || s.iter().any(|r| r.branch > 0));
    }
    // A recorded session replays as written, in file order, cycling.
    let text = "{\"system_tokens\":30,\"steps\":[{\"input_tokens\":40,\"output_tokens\":5,\"calls\":[{\"name\":\"grep\",\"result_tokens\":60,\"tool_ms\":80}]},{\"output_tokens\":7}]}\n";
    let traces = trace::parse_jsonl(text).unwrap();
    let ds = std::sync::Arc::new(Dataset::Agent(traces));
    let plain = Scenario::named("synthetic-uniform").unwrap();
    let mut g = Generator::new(&plain, 1, &tok, Some(ds)).unwrap();
    let s = g.next_session(&tok).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(
        (s[0].max_tokens, s[1].max_tokens, s[1].tool_ms),
        (5, 7, 80.0)
    );
    assert_eq!(
        tok.count(&s[0].messages[0].1),
        30,
        "the trace's system prompt"
    );
    assert_eq!(tok.count(&s[0].messages[1].1), 40);
    let tools = &s[1].agent.as_ref().unwrap().tools;
    assert_eq!(tools[0].name, "grep");
    assert_eq!(
        tok.count(&tools[0].description),
        64,
        "the default description length"
    );
    assert_eq!(g.next_session(&tok).unwrap()[0].session, Some(1));
}

/// An OTLP span: `op` with its attributes, from `start` to `end` ms.
fn span(
    trace: &str,
    start: u64,
    end: u64,
    attrs: &[(&str, serde_json::Value)],
) -> serde_json::Value {
    let attributes: Vec<serde_json::Value> = attrs
        .iter()
        .map(|(k, v)| serde_json::json!({"key": k, "value": v}))
        .collect();
    serde_json::json!({
        "traceId": trace, "spanId": "01", "name": "x",
        "startTimeUnixNano": (start * 1_000_000).to_string(),
        "endTimeUnixNano": end * 1_000_000,
        "attributes": attributes,
    })
}

fn chat(
    trace: &str,
    start: u64,
    end: u64,
    input: u64,
    output: u64,
    finish: &str,
) -> serde_json::Value {
    span(
        trace,
        start,
        end,
        &[
            (
                "gen_ai.operation.name",
                serde_json::json!({"stringValue": "chat"}),
            ),
            (
                "gen_ai.usage.input_tokens",
                serde_json::json!({"intValue": input.to_string()}),
            ),
            (
                "gen_ai.usage.output_tokens",
                serde_json::json!({"intValue": output}),
            ),
            (
                "gen_ai.response.finish_reasons",
                serde_json::json!({"arrayValue": {"values": [{"stringValue": finish}]}}),
            ),
        ],
    )
}

/// Two traces: a call, its tool, a text step, a fan-out of two, a last step; and a
/// one-step trace; plus a model span without usage.
fn sample_otlp() -> serde_json::Value {
    let tool = span(
        "t1",
        110,
        310,
        &[
            (
                "gen_ai.operation.name",
                serde_json::json!({"stringValue": "execute_tool"}),
            ),
            (
                "gen_ai.tool.name",
                serde_json::json!({"stringValue": "search"}),
            ),
        ],
    );
    let no_usage = span(
        "t1",
        5,
        6,
        &[(
            "gen_ai.operation.name",
            serde_json::json!({"stringValue": "chat"}),
        )],
    );
    let spans = vec![
        chat("t1", 0, 100, 100, 20, "tool_calls"),
        tool,
        chat("t1", 320, 400, 400, 30, "stop"),
        chat("t1", 450, 600, 500, 40, "stop"),
        chat("t1", 460, 650, 520, 50, "stop"),
        chat("t1", 700, 720, 700, 10, "stop"),
        no_usage,
        chat("t2", 1000, 1100, 64, 8, "stop"),
    ];
    let doc = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
    doc
}

#[test]
fn opentelemetry_spans_become_sessions_by_hand() {
    use super::otel::{import, OtelError};
    let doc = sample_otlp();
    let (sessions, info) = import(&doc.to_string()).unwrap();
    assert_eq!(
        (
            info.spans,
            info.model_calls,
            info.tool_runs,
            info.model_calls_without_usage
        ),
        (8, 6, 1, 1)
    );
    assert_eq!(sessions.len(), 2);
    let s = &sessions[0];
    s.check(1).unwrap();
    assert_eq!(s.steps.len(), 4);
    // Step 0: the whole first prompt; its call's result is the next prompt's growth.
    let c = &s.steps[0].calls[0];
    assert_eq!(
        (s.steps[0].input_tokens, s.steps[0].output_tokens),
        (100, 20)
    );
    assert_eq!(
        (
            c.name.as_str(),
            c.arguments_tokens,
            c.result_tokens,
            c.tool_ms
        ),
        ("search", 20, 400 - 120, 210.0),
        "the tool ran 110-310 ms: its time counts from the answer's end (100 ms)"
    );
    // Step 1 continues after the result: no user message; 10 ms after the tool's end.
    assert_eq!((s.steps[1].input_tokens, s.steps[1].output_tokens), (0, 30));
    assert_eq!(s.steps[1].think_ms, 10.0);
    assert!(s.steps[1].calls.is_empty());
    // Step 2: the two overlapping calls are a fan-out, 50 ms after step 1 ended.
    let b: Vec<(u32, u32)> = s.steps[2]
        .fan_out
        .iter()
        .map(|b| (b.input_tokens, b.output_tokens))
        .collect();
    assert_eq!(b, [(500 - 430, 40), (520 - 430, 50)]);
    assert_eq!(s.steps[2].think_ms, 50.0);
    // Step 3: a user message of the prompt's growth past the history before the fan-out
    // (430) and the branches' answers (40 + 50), which is all the fan-out adds to it.
    assert_eq!(
        (s.steps[3].input_tokens, s.steps[3].think_ms),
        (700 - 520, 50.0)
    );
    assert_eq!(sessions[1].steps.len(), 1);
    // One object per line reads the same; wrong input says what was expected.
    let lines = format!("{}\n{}\n", doc, serde_json::json!({"resourceSpans": []}));
    assert_eq!(import(&lines).unwrap().0, sessions);
    assert!(matches!(
        import("{\"x\":1}"),
        Err(OtelError::Json { line: 1, .. })
    ));
    assert_eq!(
        import("{\"resourceSpans\":[]}").unwrap_err(),
        OtelError::NoModelCalls
    );
}
