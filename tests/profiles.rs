//! Workload profiles end to end against the simulator (`--profile`, issue 22 item 4):
//! the profile's lengths, sessions, body fields and endpoint reach the server as the
//! simulator saw them, its SLO default judges the run, and `run.json` and the report say
//! which profile ran.

use crate::common::{config, run, servebench, temp_dir, truth_by_id};
use servebench::record::Phase;
use servebench::sim::{SimConfig, SimServer};
use std::collections::HashMap;

fn sim() -> SimServer {
    let mut c = SimConfig::preset("cpu-tiny").unwrap();
    c.time_scale = 50.0;
    c.max_num_seqs = 16;
    SimServer::spawn(c, 0).unwrap()
}

#[test]
fn a_profile_sends_its_lengths_and_is_judged_by_its_slo() {
    let sim = sim();
    let cfg = config(
        &sim.base_url(),
        &[
            "--profile",
            "sfqa",
            "--requests",
            "40",
            "--concurrency",
            "8",
            "--warmup",
            "none",
        ],
        &temp_dir("profile-sfqa"),
    );
    let p = cfg.workload.profile.clone().expect("the profile");
    assert_eq!(p.id, "SFQA");
    assert_eq!(
        cfg.slo.as_ref().unwrap().to_string(),
        "ttft_ms<=500,e2e_ms<=3000"
    );
    let (out, summary) = run(&cfg);
    let truth: HashMap<String, _> = truth_by_id(&sim, out.records.len());
    let records: Vec<_> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    assert_eq!(summary.requests.completed, 40);
    for r in &records {
        let t = &truth[r.response_id.as_deref().unwrap()];
        // SFQA: output 5–100 tokens, all of them generated (ignore_eos), as the engine says.
        assert!((5..=100).contains(&r.output_tokens), "{}", r.output_tokens);
        assert_eq!(r.output_tokens, t.completion_tokens);
        // Input 16–512 tokens of text; the chat template adds the engine's few.
        assert!((16..=540).contains(&t.prompt_tokens), "{}", t.prompt_tokens);
    }
    sim.shutdown();
}

#[test]
fn chained_and_session_profiles_send_sessions_and_embed_switches_the_endpoint() {
    let sim = sim();
    // AGNT: chained steps, each repeating the history before it.
    let cfg = config(
        &sim.base_url(),
        &[
            "--profile",
            "AGNT",
            "--requests",
            "12",
            "--concurrency",
            "4",
            "--warmup",
            "none",
        ],
        &temp_dir("profile-agnt"),
    );
    assert!(
        cfg.workload.body.is_empty(),
        "JSON answers are recorded, not asked for"
    );
    let (out, _) = run(&cfg);
    let turns = out
        .records
        .iter()
        .filter(|r| r.session.is_some_and(|(_, turn)| turn > 0))
        .count();
    assert!(turns > 0, "later steps of a session were sent");
    // EMBED turns the default chat endpoint into embeddings, with 1–16 items a request.
    let cfg = config(
        &sim.base_url(),
        &[
            "--profile",
            "EMBED",
            "--requests",
            "8",
            "--concurrency",
            "4",
            "--warmup",
            "none",
        ],
        &temp_dir("profile-embed"),
    );
    assert_eq!(
        cfg.target.endpoint,
        servebench::client::Endpoint::Embeddings
    );
    assert!(cfg.slo.is_none(), "throughput-oriented: no SLO default");
    let (out, s) = run(&cfg);
    assert_eq!(s.requests.completed, 8);
    assert!(out.records.iter().all(|r| (1..=16).contains(&r.items)));
    // XRANK: the rerank route, judged end to end.
    let cfg = config(
        &sim.base_url(),
        &[
            "--profile",
            "XRANK",
            "--requests",
            "4",
            "--concurrency",
            "2",
            "--warmup",
            "none",
        ],
        &temp_dir("profile-xrank"),
    );
    assert_eq!(cfg.target.endpoint, servebench::client::Endpoint::Rerank);
    assert_eq!(cfg.slo.as_ref().unwrap().to_string(), "e2e_ms<=3000");
    assert!(cfg.workload.items_query, "rerank sends a query first");
    sim.shutdown();
}

#[test]
fn the_cli_lists_profiles_and_refuses_a_mismatched_endpoint() {
    let o = servebench(&["workload", "profiles"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for id in servebench::workload::profile::PRESET_IDS {
        assert!(text.contains(id), "{id} listed");
    }
    let o = servebench(&["workload", "show", "--profile", "CHAT", "--requests", "20"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("\"growing_history\""), "{text}");
    let o = servebench(&[
        "run",
        "--profile",
        "CHAT",
        "--endpoint",
        "embeddings",
        "--requests",
        "1",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("profile CHAT generates text"), "{err}");
    // One capacity describes one workload, not every profile's.
    let o = servebench(&["suite", "--profiles", "CHAT,SUMM", "--capacity", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be used with"));
    let o = servebench(&["run", "--profile", "NOPE", "--requests", "1"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown profile `NOPE`"));
}
