//! The simulated engine shows the behaviour each methodology test exists to reveal.
//! Each test asserts the direction and rough size of an effect, at a sped-up time scale.

use crate::common::{config, run, temp_dir};
use servebench::client::simple::call;
use servebench::client::BaseUrl;
use servebench::sim::config::{Faults, PrefillPolicy};
use servebench::sim::{SimConfig, SimServer};
use std::time::Duration;

fn preset(name: &str, time_scale: f64) -> SimConfig {
    SimConfig {
        time_scale,
        ..SimConfig::preset(name).unwrap()
    }
}

fn metric(url: &str, name: &str) -> f64 {
    let url = BaseUrl::parse(url).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt
        .block_on(call(
            &url,
            None,
            "GET",
            "/metrics",
            None,
            Duration::from_secs(5),
        ))
        .unwrap();
    let text = String::from_utf8(r.body).unwrap();
    text.lines()
        .find(|l| l.starts_with(&format!("vllm:{name}{{")))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
}

/// Runs, then the median TTFT as the engine produced it (first token − when it was first
/// scheduled, from the simulator's truth), ms: the engine model's own figure, which a busy
/// machine's task wake-ups and request parsing cannot move.
fn engine_ttft_p50(sim: &SimServer, args: &[&str], name: &str) -> f64 {
    sim.truth().take();
    let _ = run(&config(&sim.base_url(), args, &temp_dir(name)));
    let mut ms: Vec<f64> = sim
        .truth()
        .take()
        .iter()
        .filter_map(|t| {
            Some(
                t.token_times
                    .first()?
                    .0
                    .duration_since(t.scheduled?)
                    .as_secs_f64()
                    * 1e3,
            )
        })
        .collect();
    assert!(!ms.is_empty(), "{name}: no truth records");
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

#[test]
fn ttft_rises_with_prompt_length_superlinearly_at_long_context() {
    let sim = SimServer::spawn(preset("h100-llama3-8b", 5.0), 0).unwrap();
    let mut ttft = Vec::new();
    for len in ["512", "2048", "8192", "32768"] {
        let args = [
            "--concurrency",
            "1",
            "--requests",
            "3",
            "--warmup",
            "none",
            "--input-tokens",
            len,
            "--output-tokens",
            "2",
            "--no-prefix-cache",
        ];
        ttft.push(engine_ttft_p50(&sim, &args, &format!("ttft-{len}")));
    }
    assert!(
        ttft.windows(2).all(|w| w[1] > w[0]),
        "TTFT must rise with prompt length: {ttft:?}"
    );
    // 4x the prompt costs more than 4x the time once attention dominates.
    assert!(
        ttft[3] / ttft[2] > 4.5,
        "superlinear at long context: {ttft:?}"
    );
}

#[test]
fn throughput_saturates_and_queueing_grows_past_capacity() {
    // cpu-tiny: 4 sequences at a time; 32-token answers make capacity roughly 7 req/s
    // (simulated), 140 req/s at time scale 20.
    let sim = SimServer::spawn(preset("cpu-tiny", 20.0), 0).unwrap();
    let args = |rate: &'static str| {
        [
            "--rate",
            rate,
            "--requests",
            "120",
            "--warmup",
            "none",
            "--input-tokens",
            "32",
            "--output-tokens",
            "32",
        ]
    };
    let (_, low) = run(&config(&sim.base_url(), &args("60"), &temp_dir("sat-low")));
    let (out, high) = run(&config(
        &sim.base_url(),
        &args("480"),
        &temp_dir("sat-high"),
    ));
    let offered = 480.0 / 60.0;
    let achieved = high.output_tokens_per_s / low.output_tokens_per_s;
    assert!(
        achieved < 0.6 * offered,
        "throughput must saturate: x{achieved:.2} for x{offered} offered"
    );
    // Past capacity the queue grows: later requests wait much longer than early ones.
    let mut recs: Vec<_> = out.records.iter().filter(|r| r.outcome.is_ok()).collect();
    recs.sort_by_key(|r| r.sent_at);
    let ttft = |r: &&servebench::record::RequestRecord| {
        (r.first_token_at().unwrap() - r.submitted_at().unwrap()) as f64
    };
    let q = recs.len() / 4;
    let early: f64 = recs[..q].iter().map(ttft).sum::<f64>() / q as f64;
    let late: f64 = recs[recs.len() - q..].iter().map(ttft).sum::<f64>() / q as f64;
    assert!(
        late > 3.0 * early,
        "queueing delay must grow past capacity: early {early} ns, late {late} ns"
    );
    let low_ttft = low.ttft_ms.unwrap();
    assert!(
        low_ttft.p99 < high.ttft_ms.unwrap().p50,
        "below capacity the tail stays under the overloaded median"
    );
}

#[test]
fn prefix_cache_hits_cut_ttft_and_show_in_metrics() {
    let sim = SimServer::spawn(preset("h100-llama3-8b", 5.0), 0).unwrap();
    let url = sim.base_url();
    let base = BaseUrl::parse(&url).unwrap();
    let prompt = "cache ".repeat(6000);
    let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": prompt}], "max_tokens": 2, "ignore_eos": true}).to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for _ in 0..2 {
        let r = rt
            .block_on(call(
                &base,
                None,
                "POST",
                "/v1/chat/completions",
                Some(body.as_bytes()),
                Duration::from_secs(30),
            ))
            .unwrap();
        assert_eq!(r.status, 200);
    }
    let truth = sim.truth().wait_for(2, std::time::Duration::from_secs(10));
    // From when the engine scheduled it: the request's parsing and tokenising (thousands of
    // tokens) and the task's wake-up are not the prefix cache's to cut.
    let ttft = |t: &servebench::sim::TruthRecord| {
        t.token_times[0]
            .0
            .duration_since(t.scheduled.unwrap())
            .as_secs_f64()
    };
    assert_eq!(truth[0].cached_tokens, 0);
    assert!(
        truth[1].cached_tokens as f64 > 0.9 * truth[1].prompt_tokens as f64,
        "{} of {}",
        truth[1].cached_tokens,
        truth[1].prompt_tokens
    );
    assert!(
        ttft(&truth[1]) < 0.3 * ttft(&truth[0]),
        "a warm prefix must cut TTFT: {} vs {}",
        ttft(&truth[1]),
        ttft(&truth[0])
    );
    assert!(metric(&url, "prefix_cache_hits_total") > 0.0);
    assert!(metric(&url, "prefix_cache_queries_total") >= 2.0 * truth[0].prompt_tokens as f64);
}

#[test]
fn kv_oversubscription_causes_preemptions_visible_in_metrics() {
    let cfg = SimConfig {
        kv_capacity_tokens: 2048,
        max_num_seqs: 16,
        ..preset("fast", 1.0)
    };
    let sim = SimServer::spawn(cfg, 0).unwrap();
    let (out, s) = run(&config(
        &sim.base_url(),
        &[
            "--concurrency",
            "16",
            "--requests",
            "32",
            "--warmup",
            "none",
            "--input-tokens",
            "64",
            "--output-tokens",
            "200",
        ],
        &temp_dir("kv"),
    ));
    assert_eq!(
        s.requests.completed, 32,
        "preempted requests still complete"
    );
    assert!(metric(&sim.base_url(), "num_preemptions_total") > 0.0);
    assert!(sim
        .truth()
        .wait_for(32, std::time::Duration::from_secs(10))
        .iter()
        .any(|t| t.preemptions > 0));
    assert!(out.records.iter().all(|r| r.output_tokens == 200));
}

fn max_pause_p95(policy: PrefillPolicy, name: &str) -> f64 {
    let cfg = SimConfig {
        prefill_policy: policy,
        max_batched_tokens: 512,
        prefix_cache: false,
        ..preset("h100-llama3-8b", 4.0)
    };
    let sim = SimServer::spawn(cfg, 0).unwrap();
    let _ = run(&config(
        &sim.base_url(),
        &[
            "--concurrency",
            "8",
            "--requests",
            "24",
            "--warmup",
            "none",
            "--input-tokens",
            "4000",
            "--output-tokens",
            "64",
        ],
        &temp_dir(name),
    ));
    // Each request's longest gap between the engine's token steps (the simulator's truth, so
    // a busy machine's late wake-ups do not count as the engine's pauses), its P95 in ms.
    let mut pauses: Vec<f64> = sim
        .truth()
        .wait_for(24, std::time::Duration::from_secs(10))
        .iter()
        .map(|t| {
            t.token_times
                .windows(2)
                .map(|w| w[1].0.duration_since(w[0].0).as_secs_f64() * 1e3)
                .fold(0.0, f64::max)
        })
        .collect();
    pauses.sort_by(f64::total_cmp);
    pauses[(pauses.len() * 95).div_ceil(100) - 1]
}

#[test]
fn chunked_prefill_lowers_the_maximum_pause() {
    let prefill_first = max_pause_p95(PrefillPolicy::PrefillFirst, "pause-pf");
    let chunked = max_pause_p95(PrefillPolicy::Chunked, "pause-chunked");
    assert!(
        chunked < 0.5 * prefill_first,
        "chunked {chunked} ms vs prefill-first {prefill_first} ms"
    );
}

#[test]
fn speculative_decoding_produces_multi_token_chunks() {
    let cfg = SimConfig {
        spec_tokens: 3,
        spec_acceptance: 0.8,
        ..preset("fast", 1.0)
    };
    let sim = SimServer::spawn(cfg, 0).unwrap();
    let (_, s) = run(&config(
        &sim.base_url(),
        &[
            "--concurrency",
            "4",
            "--requests",
            "8",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "64",
        ],
        &temp_dir("spec"),
    ));
    assert!(
        s.itl_method.mean_tokens_per_chunk > 1.5,
        "{:?}",
        s.itl_method
    );
    assert_eq!(
        s.itl_method.option,
        servebench::metrics::ItlOption::A,
        "multi-token chunks switch to time between chunks"
    );
    assert_eq!(s.total_output_tokens, 8 * 64);
}

#[test]
fn fault_injection_produces_each_failure_kind() {
    let cfg = SimConfig {
        faults: Faults {
            error_rate: 0.15,
            error_statuses: vec![429, 500, 503],
            cut_rate: 0.15,
            stall_rate: 0.15,
            stall_ms: 60_000.0,
            malformed_rate: 0.15,
            error_event_rate: 0.0,
            refusal_rate: 0.0,
            ..Default::default()
        },
        ..preset("fast", 1.0)
    };
    let sim = SimServer::spawn(cfg, 0).unwrap();
    let (out, s) = run(&config(
        &sim.base_url(),
        &[
            "--concurrency",
            "16",
            "--requests",
            "80",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "16",
            "--timeout",
            "2s",
        ],
        &temp_dir("faults"),
    ));
    for kind in ["http_status", "stream_cut", "protocol", "timeout"] {
        assert!(
            s.requests.failed_by_kind.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} in {:?}",
            s.requests.failed_by_kind
        );
    }
    assert!(out.records.iter().any(|r| matches!(&r.outcome, servebench::record::Outcome::Failed { detail, .. } if detail.contains("Retry-After"))));
    assert_eq!(s.requests.total, 80, "every request is accounted for");
}

#[test]
fn one_seed_gives_identical_token_counts() {
    let counts = |name: &str| {
        let sim = SimServer::spawn(
            SimConfig {
                seed: 7,
                ..preset("fast", 1.0)
            },
            0,
        )
        .unwrap();
        let (out, _) = run(&config(
            &sim.base_url(),
            &[
                "--concurrency",
                "1",
                "--requests",
                "12",
                "--warmup",
                "none",
                "--input-tokens",
                "16",
                "--output-tokens",
                "400",
                "--ignore-eos",
                "false",
            ],
            &temp_dir(name),
        ));
        let mut v: Vec<(u64, u32)> = out
            .records
            .iter()
            .map(|r| (r.id, r.output_tokens))
            .collect();
        v.sort_unstable();
        v
    };
    let a = counts("seed-sim-a");
    assert_eq!(a, counts("seed-sim-b"));
    assert!(
        a.iter().any(|&(_, n)| n < 400),
        "natural lengths differ from max_tokens: {a:?}"
    );
}
