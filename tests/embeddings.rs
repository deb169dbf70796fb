//! The non-generative endpoints end to end against the simulator (`--endpoint embeddings`
//! and `rerank`): each record's items and input tokens agree with what the simulator
//! served, its latency is at least the simulator's analytic service time, and the summary
//! has items and input tokens per second but no TTFT.

use crate::common::{config, run, servebench, temp_dir, truth_by_id};
use servebench::record::{FailureKind, Phase};
use servebench::sim::{Faults, SimConfig, SimServer, TruthRecord};
use std::collections::HashMap;

/// The simulator of these tests: `cpu-tiny`'s costs (base 10 ms, 1.2 ms per token, 4 slots)
/// 10× faster, so one request of 4 × 16 tokens costs (10 + 1.2·64) / 10 = 8.68 ms.
fn sim_config() -> SimConfig {
    let mut c = SimConfig::preset("cpu-tiny").unwrap();
    c.time_scale = 10.0;
    c
}

/// A closed-loop run of 16 requests of `items` items of 16 tokens through `endpoint`.
fn drive(
    tag: &str,
    sim: &SimServer,
    endpoint: &str,
    items: &str,
) -> (
    Vec<servebench::record::RequestRecord>,
    servebench::metrics::RunSummary,
    HashMap<String, TruthRecord>,
) {
    let cfg = config(
        &sim.base_url(),
        &[
            "--endpoint",
            endpoint,
            "--concurrency",
            "4",
            "--requests",
            "16",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--items-per-request",
            items,
        ],
        &temp_dir(&format!("embeddings-{tag}-{endpoint}")),
    );
    let (out, summary) = run(&cfg);
    let truth = truth_by_id(sim, out.records.len());
    let records = out
        .records
        .into_iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    (records, summary, truth)
}

#[test]
fn embeddings_and_rerank_record_what_the_simulator_served() {
    for (endpoint, query) in [("embeddings", false), ("rerank", true)] {
        let cfg = sim_config();
        let sim = SimServer::spawn(cfg.clone(), 0).unwrap();
        let (records, s, truth) = drive("truth", &sim, endpoint, "2..6");
        assert_eq!(
            s.requests.completed, 16,
            "{endpoint}: {:?}",
            records[0].outcome
        );
        let mut items_total = 0u64;
        for r in &records {
            let t = &truth[r.response_id.as_deref().expect("the answer's id")];
            assert!((2..=6).contains(&r.items), "{endpoint}: {}", r.items);
            assert_eq!(r.items, t.items, "{endpoint}: items sent = items served");
            assert_eq!(
                r.usage_prompt_tokens(),
                Some(t.prompt_tokens as u64),
                "{endpoint}"
            );
            // Every text is exactly 16 tokens by the same tokenizer; rerank's query is one more.
            let texts = r.items + u32::from(query);
            assert_eq!(t.prompt_tokens, 16 * texts, "{endpoint}");
            assert_eq!(
                r.input_tokens, t.prompt_tokens,
                "{endpoint}: planned = served"
            );
            assert!(r.chunks.is_empty() && r.output_tokens == 0, "{endpoint}");
            let service_ms = cfg.pooling_capacity(r.items, 16, query).service_ms;
            let latency_ms = r.derived.as_ref().unwrap().e2e_ms.unwrap();
            assert!(
                latency_ms >= service_ms,
                "{endpoint}: {latency_ms} < {service_ms}"
            );
            assert_eq!(r.derived.as_ref().unwrap().ttft_ms, None, "{endpoint}");
            items_total += u64::from(r.items);
        }
        assert_eq!(s.total_items, items_total, "{endpoint}");
        assert!(s.ttft_ms.is_none() && s.tpot_ms.is_none() && s.itl_ms.is_none());
        let e2e = s.e2e_ms.expect("request latency");
        assert_eq!(e2e.n, 16);
        let rate = s.items_per_s / s.requests_per_s;
        assert!(
            (rate - items_total as f64 / 16.0).abs() < 1e-9,
            "{endpoint}"
        );
        assert!(
            s.input_tokens_per_s > s.items_per_s * 16.0 - 1e-9,
            "{endpoint}"
        );
        sim.shutdown();
    }
}

#[test]
fn mismatched_and_failed_answers_are_failures_of_their_kind() {
    // Injected 503s fail as http_status; the rest complete.
    let mut cfg = sim_config();
    cfg.faults = Faults {
        error_rate: 0.5,
        error_statuses: vec![503],
        ..Faults::default()
    };
    let sim = SimServer::spawn(cfg, 0).unwrap();
    let (records, s, _) = drive("faults", &sim, "embeddings", "3");
    let failed = records
        .iter()
        .filter(|r| r.outcome.failure_kind() == Some(FailureKind::HttpStatus))
        .count() as u64;
    assert!(failed > 0 && failed < 16);
    assert_eq!(s.requests.failed_by_kind.get("http_status"), Some(&failed));
    assert_eq!(s.total_items, 3 * (16 - failed));
    sim.shutdown();
}

#[test]
fn token_slos_are_refused_and_the_summary_says_what_it_measured() {
    let sim = SimServer::spawn(sim_config(), 0).unwrap();
    let url = sim.base_url();
    let out = temp_dir("embeddings-slo");
    let o = servebench(&[
        "run",
        "--url",
        &url,
        "--endpoint",
        "embeddings",
        "--requests",
        "4",
        "--warmup",
        "none",
        "--slo",
        "p99(ttft_ms)<=500",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("needs generated tokens"),
        "{err}"
    );
    let o = servebench(&[
        "run",
        "--url",
        &url,
        "--endpoint",
        "rerank",
        "--requests",
        "8",
        "--warmup",
        "none",
        "--items-per-request",
        "4",
        "--input-tokens",
        "32",
        "--slo",
        "p99(e2e_ms)<=5000",
        "--out",
        out.to_str().unwrap(),
        "--force",
        "--no-fluidity",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("items/s") && text.contains("n/a: non-generative"),
        "{text}"
    );
    let o = servebench(&[
        "run",
        "--url",
        &url,
        "--endpoint",
        "chat",
        "--items-per-request",
        "4",
        "--out",
        out.to_str().unwrap(),
        "--force",
    ]);
    assert!(!o.status.success());
    sim.shutdown();
}
