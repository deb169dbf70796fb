//! Agent sessions end to end against the simulator: recorded sessions replayed step by step,
//! each step sent only after the previous one ended plus its tool and think time, fan-out
//! branches sent together, answers of the planned lengths as the simulator generated them,
//! the tool calls the simulator answered, and a session summary whose times and cache
//! figures are those of the records and the simulator's truth.

use crate::common::{config, run, servebench, temp_dir, truth_by_id};
use servebench::record::{Phase, RequestRecord};
use servebench::sim::{SimConfig, SimServer};
use std::collections::BTreeMap;

/// Three steps: a call (30 ms of tool time), a fan-out of two, a text answer after 20 ms of
/// thinking. Every session is the same, so every figure is known.
const SESSION: &str = r#"{"steps":[{"input_tokens":50,"output_tokens":5,"calls":[{"name":"lookup","result_tokens":40,"tool_ms":30}]},{"fan_out":[{"input_tokens":20,"output_tokens":4},{"input_tokens":30,"output_tokens":6}]},{"output_tokens":3,"think_ms":20}]}"#;

fn sessions_file(tag: &str, n: usize) -> std::path::PathBuf {
    let dir = temp_dir(tag);
    let path = dir.join("sessions.jsonl");
    std::fs::write(&path, format!("{SESSION}\n").repeat(n)).unwrap();
    path
}

#[test]
fn recorded_sessions_replay_step_by_step_against_the_simulators_truth() {
    // The engine model, whose prefix cache serves the history again.
    let sim = SimServer::spawn(SimConfig::preset("h100-llama3-8b").unwrap(), 0).unwrap();
    let path = sessions_file("agent-replay", 3);
    let args = [
        "--dataset",
        path.to_str().unwrap(),
        // One session at a time, so the request limit ends with the third session (with
        // more, a fourth session's first request takes a slot the third one's last needed).
        "--concurrency",
        "1",
        "--requests",
        "12",
        "--warmup",
        "none",
    ];
    let cfg = config(&sim.base_url(), &args, &temp_dir("agent-replay-run"));
    let (out, s) = run(&cfg);
    let truth = truth_by_id(&sim, out.records.len());
    let measured: Vec<&RequestRecord> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    assert_eq!(measured.len(), 12, "3 sessions of 4 requests");
    assert!(measured.iter().all(|r| r.outcome.is_ok()));
    // Answers of the planned lengths, as the simulator generated them.
    let planned = [5u32, 4, 6, 3];
    let mut by_session: BTreeMap<u64, Vec<&RequestRecord>> = BTreeMap::new();
    for r in &measured {
        let t = &truth[r.response_id.as_deref().unwrap()];
        assert_eq!(r.output_tokens, t.completion_tokens);
        // The first step asks for a call (tool_choice required) and the simulator made
        // one; the others ask for text.
        let step = r.session.unwrap().1;
        assert_eq!(
            (r.tool_calls, t.tool_calls),
            (u32::from(step == 0), u32::from(step == 0))
        );
        by_session.entry(r.session.unwrap().0).or_default().push(r);
    }
    for (id, mut reqs) in by_session {
        reqs.sort_by_key(|r| (r.session.unwrap().1, r.branch));
        let shape: Vec<(u32, u32, u32)> = reqs
            .iter()
            .map(|r| (r.session.unwrap().1, r.branch, r.output_tokens))
            .collect();
        assert_eq!(
            shape,
            [
                (0, 0, planned[0]),
                (1, 0, planned[1]),
                (1, 1, planned[2]),
                (2, 0, planned[3])
            ],
            "session {id}"
        );
        // Each step starts only once every request of the one before ended and its waits
        // passed: 30 ms of tool time before the fan-out, 20 ms of thinking after it.
        let ended = |step: u32| {
            reqs.iter()
                .filter(|r| r.session.unwrap().1 == step)
                .map(|r| r.finished_at)
                .max()
                .unwrap()
        };
        for r in &reqs[1..] {
            let step = r.session.unwrap().1;
            let wait_ns = ((r.planned_tool_ms + r.planned_think_ms) * 1e6) as u64;
            assert!(
                r.sent_at.unwrap() >= ended(step - 1) + wait_ns,
                "session {id} step {step} sent before the previous step and its wait ended"
            );
        }
        assert_eq!(
            (reqs[1].planned_tool_ms, reqs[3].planned_think_ms),
            (30.0, 20.0)
        );
    }
    let ss = s.sessions.expect("a session summary");
    assert_eq!((ss.sessions, ss.sessions_ok), (3, 3));
    assert_eq!((ss.requests_per_session, ss.steps_per_session), (4.0, 3.0));
    assert_eq!((ss.fan_out_steps, ss.max_branches), (3, 2));
    assert_eq!(ss.tool_calls_answered, 3);
    let dist = |d: &Option<servebench::stats::Distribution>| d.unwrap();
    assert_eq!(
        (dist(&ss.tool_ms).p50, dist(&ss.think_ms).p50),
        (30.0, 20.0)
    );
    // A session's waits do not overlap its requests: wall ≥ tool + think + model.
    let shares = [
        ss.model_share,
        ss.tool_share,
        ss.think_share,
        ss.other_share,
    ];
    assert!(shares.iter().all(|s| s.unwrap() >= -1e-9), "{shares:?}");
    assert!(dist(&ss.wall_ms).min >= 50.0);
    // Cache figures are the simulator's own counts over the measured requests.
    let (prompt, cached) = measured.iter().fold((0u64, 0u64), |acc, r| {
        let t = &truth[r.response_id.as_deref().unwrap()];
        (
            acc.0 + u64::from(t.prompt_tokens),
            acc.1 + u64::from(t.cached_tokens),
        )
    });
    assert_eq!(
        (ss.prompt_tokens_reporting, ss.cached_prompt_tokens),
        (prompt, cached)
    );
    assert!(cached > 0, "later steps reuse the history's prefix");
}

#[test]
fn every_api_with_tools_carries_the_calls_and_results_the_simulator_reads() {
    for endpoint in ["chat", "responses", "messages"] {
        let sim = SimServer::spawn(SimConfig::fixed(5.0, 0.5), 0).unwrap();
        let path = sessions_file(&format!("agent-api-{endpoint}"), 2);
        let args = [
            "--dataset",
            path.to_str().unwrap(),
            "--endpoint",
            endpoint,
            "--concurrency",
            "1",
            "--requests",
            "8",
            "--warmup",
            "none",
        ];
        let cfg = config(
            &sim.base_url(),
            &args,
            &temp_dir(&format!("agent-api-{endpoint}-run")),
        );
        let (out, s) = run(&cfg);
        let truth = truth_by_id(&sim, out.records.len());
        let measured: Vec<&RequestRecord> = out
            .records
            .iter()
            .filter(|r| r.phase == Phase::Measure)
            .collect();
        assert_eq!(measured.len(), 8, "{endpoint}");
        for r in &measured {
            assert!(r.outcome.is_ok(), "{endpoint}: {:?}", r.outcome);
            let t = &truth[r.response_id.as_deref().unwrap()];
            let step = r.session.unwrap().1;
            assert_eq!(r.tool_calls, u32::from(step == 0), "{endpoint} step {step}");
            assert_eq!(t.tool_calls, r.tool_calls, "{endpoint}");
            assert_eq!(r.output_tokens, t.completion_tokens, "{endpoint}");
            // A later step's prompt holds the earlier calls' results: it is longer.
            if step > 0 {
                assert!(t.prompt_tokens > 50 + 40, "{endpoint}: {}", t.prompt_tokens);
            }
        }
        assert_eq!(s.sessions.unwrap().sessions_ok, 2, "{endpoint}");
    }
}

#[test]
fn the_agentic_workload_runs_and_reports_its_sessions() {
    let sim = SimServer::spawn(SimConfig::fixed(5.0, 0.5), 0).unwrap();
    let dir = temp_dir("agentic-cli");
    let out = servebench(&[
        "run",
        "--url",
        &sim.base_url(),
        "--workload",
        "agentic",
        "--requests",
        "30",
        "--concurrency",
        "3",
        "--warmup",
        "none",
        "--out",
        dir.to_str().unwrap(),
        "--force",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("Sessions"), "{text}");
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    let ss = &run["summary"]["sessions"];
    assert!(ss["sessions"].as_u64().unwrap() >= 3, "{ss}");
    assert!(ss["tool_share"].as_f64().unwrap() > 0.0, "{ss}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("Sessions: where the time went"));
}

#[test]
fn an_api_without_tools_is_refused_with_the_ones_that_have_them() {
    let out = servebench(&[
        "run",
        "--workload",
        "agentic",
        "--endpoint",
        "tgi",
        "--requests",
        "2",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("need --endpoint chat, responses or messages"),
        "{err}"
    );
}

#[test]
fn opentelemetry_traces_import_and_replay() {
    let dir = temp_dir("agent-otel");
    let span = |trace: &str, start: u64, end: u64, attrs: serde_json::Value| {
        serde_json::json!({"traceId": trace, "spanId": "1", "name": "x",
            "startTimeUnixNano": (start * 1_000_000).to_string(),
            "endTimeUnixNano": (end * 1_000_000).to_string(), "attributes": attrs})
    };
    let chat = |t: &str, a: u64, b: u64, i: u64, o: u64| {
        span(
            t,
            a,
            b,
            serde_json::json!([
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": i.to_string()}},
            {"key": "gen_ai.usage.output_tokens", "value": {"intValue": o.to_string()}}]),
        )
    };
    let tool = |t: &str, a: u64, b: u64| {
        span(
            t,
            a,
            b,
            serde_json::json!([
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "grep"}}]),
        )
    };
    let spans = vec![
        chat("a", 0, 100, 300, 10),
        tool("a", 110, 150),
        chat("a", 160, 200, 500, 8),
    ];
    let doc = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
    let traces = dir.join("traces.json");
    std::fs::write(&traces, doc.to_string()).unwrap();
    let sessions = dir.join("sessions.jsonl");
    let out = servebench(&[
        "workload",
        "import-otel",
        traces.to_str().unwrap(),
        "--out",
        sessions.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = std::fs::read_to_string(&sessions).unwrap();
    let s: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(s["steps"][0]["calls"][0]["name"], "grep");
    // The tool ended 50 ms after the answer; the next step came 10 ms after the tool.
    assert_eq!(s["steps"][0]["calls"][0]["tool_ms"], 50.0);
    assert_eq!(s["steps"][1]["think_ms"], 10.0);
    assert_eq!(s["steps"][0]["calls"][0]["result_tokens"], 500 - 310);
    // What `workload show` draws from it: the recorded lengths.
    let show = servebench(&[
        "workload",
        "export",
        "--dataset",
        sessions.to_str().unwrap(),
        "--requests",
        "2",
    ]);
    assert!(
        show.status.success(),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&show.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        (
            lines[0]["max_tokens"].as_u64(),
            lines[1]["max_tokens"].as_u64()
        ),
        (Some(10), Some(8))
    );
    assert_eq!(lines[1]["tool_ms"], 50.0);
    assert_eq!(lines[1]["think_ms"], 10.0);
}
