//! Against a real engine: llama.cpp's `llama-server` with Gemma 3 270M on CPU.
//!
//! `#[ignore]`d: a plain `cargo test` lists it as ignored with the reason. It runs with
//! `cargo test -- --include-ignored` once `scripts/real-server.sh install` has built the
//! server (CI does both), or against a running server named by `SERVEBENCH_REAL_SERVER_URL`;
//! asked to run without a server, it fails and says how to get one. One test runs the
//! scenarios in order, since the last one kills the server.

use crate::common::{config, run, run_with, temp_dir};
use servebench::record::{FailureKind, Outcome, Phase};
use std::path::PathBuf;
use std::process::Command;

fn server() -> String {
    crate::common::real_server_url()
}

fn pid_file() -> PathBuf {
    let cache = std::env::var("SERVEBENCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache"));
    cache.join("run/llama-server.pid")
}

#[test]
#[ignore = "needs llama.cpp: run scripts/real-server.sh install, then cargo test -- --include-ignored"]
fn llama_cpp_server_end_to_end() {
    let _cpu = crate::common::exclusive_cpu();
    let url = server();
    let base = [
        "--warmup",
        "none",
        "--input-tokens",
        "48",
        "--output-tokens",
        "48",
        "--timeout",
        "120s",
    ];

    // 1. Closed loop, one stream: counts match usage, TTFT covers the server's prompt time,
    //    the decode rate agrees with the server's own figure.
    let mut args = base.to_vec();
    args.extend(["--concurrency", "1", "--requests", "4"]);
    let (out, s) = run(&config(&url, &args, &temp_dir("real-c1")));
    assert_eq!(
        s.requests.completed,
        4,
        "{:?}",
        out.records.iter().map(|r| &r.outcome).collect::<Vec<_>>()
    );
    let mut ratios = Vec::new();
    for r in &out.records {
        let usage = r
            .usage_completion_tokens()
            .expect("llama.cpp sends a usage chunk");
        assert_eq!(r.output_tokens as u64, usage);
        assert_eq!(r.chunks.iter().map(|c| c.tokens as u64).sum::<u64>(), usage);
        let t = r
            .server_timing
            .as_ref()
            .expect("llama.cpp timings are recorded");
        // The server's figures count every token, whitespace included, so compare them with
        // the first and last chunk of any text (an all-blank answer has no "first token").
        let (first, last) = (r.chunks.first().unwrap().at, r.chunks.last().unwrap().at);
        let ttft_ms = (first - r.submitted_at().unwrap()) as f64 / 1e6;
        assert!(
            ttft_ms >= t.prompt_ms.unwrap(),
            "TTFT {ttft_ms} ms < server prompt {} ms",
            t.prompt_ms.unwrap()
        );
        let client_rate = (r.output_tokens - 1) as f64 / ((last - first) as f64 / 1e9);
        ratios.push(client_rate / t.predicted_per_second.unwrap());
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    assert!(
        (0.9..=1.1).contains(&median),
        "client/server decode rate ratio {median} (all {ratios:?})"
    );
    assert!(
        s.server.is_some(),
        "the summary compares client and server timings"
    );

    // 2. Closed loop, four streams, completions endpoint.
    let mut args = base.to_vec();
    args.extend([
        "--concurrency",
        "4",
        "--requests",
        "8",
        "--endpoint",
        "completions",
    ]);
    let (out, s) = run(&config(&url, &args, &temp_dir("real-c4")));
    assert_eq!(s.requests.completed, 8);
    for r in &out.records {
        assert_eq!(r.output_tokens as u64, r.usage_completion_tokens().unwrap());
    }
    // llama.cpp's /metrics (started with --metrics) was scraped: its token counter agrees
    // with what the client received within 1 %.
    let t = servebench::telemetry::summary::summarize(
        &out.telemetry,
        s.window.start,
        s.window.end,
        s.window.start,
        out.idle_until,
        &servebench::telemetry::summary::ClientTotals {
            // What the client saw over the span the counters are read (as the report
            // counts it).
            output_tokens: servebench::telemetry::summary::client_counts_in_window(
                &out.records,
                &out.telemetry,
                s.window.start,
                s.window.end,
            )
            .output_tokens,
            completed: s.requests.completed,
            ended: s.requests.total,
            mean_ttft_ms: None,
        },
    );
    let sv = t.server.expect("llama.cpp's /metrics was scraped");
    assert_eq!(sv.engine, "llamacpp");
    let tokens = sv.comparison.output_tokens;
    assert!(
        tokens.difference_pct.unwrap().abs() <= 1.0,
        "server vs client tokens: {tokens:?}"
    );

    // 3. Open loop, Poisson.
    let mut args = base.to_vec();
    args.extend(["--rate", "2", "--requests", "6", "--no-prefix-cache"]);
    let (out, s) = run(&config(&url, &args, &temp_dir("real-open")));
    assert_eq!(s.requests.total, 6);
    assert_eq!(s.requests.completed, 6);
    assert!(out.records.iter().all(|r| r.scheduled_at.is_some()));
    assert!(
        out.records
            .iter()
            .all(|r| r.server_timing.as_ref().and_then(|t| t.cache_n) == Some(0)),
        "cache_prompt: false is honoured"
    );

    // 4. A prompt longer than the slot's context: HTTP 400 with the server's message kept.
    let (out, s) = run(&config(
        &url,
        &[
            "--warmup",
            "none",
            "--input-tokens",
            "6000",
            "--output-tokens",
            "8",
            "--concurrency",
            "1",
            "--requests",
            "1",
        ],
        &temp_dir("real-long"),
    ));
    assert_eq!(s.requests.failed_by_kind.get("http_status"), Some(&1));
    match &out.records[0].outcome {
        Outcome::Failed {
            kind: FailureKind::HttpStatus,
            detail,
        } => assert!(detail.contains("context"), "{detail}"),
        other => panic!("expected an HTTP 400, got {other:?}"),
    }

    // 4b. What the server says about itself, and the isolated prefill profile within the
    //     slot's context (8192 tokens over 4 slots).
    let server_info = {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let target = config(&url, &[], &temp_dir("real-info")).target;
        rt.block_on(servebench::runner::wait_until_ready(
            &target,
            std::time::Duration::from_secs(30),
        ))
        .unwrap()
    };
    assert_eq!(server_info.engine.as_deref(), Some("llama.cpp"));
    assert!(server_info.version.is_some());
    // The server the script built names its own llama.cpp build (issue 23, item 8: built
    // inside this repository, it used to report this repository's commit, `b86-76c98df`).
    if std::env::var("SERVEBENCH_REAL_SERVER_URL").is_err() {
        let build = script_build();
        assert_eq!(
            server_info.version.as_deref(),
            Some(format!("{build}-unknown").as_str()),
            "the engine's version is llama.cpp's {build}"
        );
    }
    let ctx = server_info
        .context_tokens
        .expect("llama.cpp's /props gives n_ctx");
    assert_eq!(ctx, 2048);
    let mut plan = servebench::config::ProfilePlan {
        lengths: Some(vec![64, 512, 4000]),
        repeats: 1,
        max_prompt_tokens: Some(ctx),
        ..Default::default()
    };
    let mut cfg = config(
        &url,
        &[
            "--warmup",
            "none",
            "--requests",
            "2",
            "--input-tokens",
            "64",
            "--output-tokens",
            "8",
        ],
        &temp_dir("real-profile"),
    );
    cfg.prefill = servebench::config::PrefillSetup::Profile(plan.clone());
    let tok = servebench::tokenizer::reference();
    let out = servebench::runner::run(&cfg, tok.clone(), &server_info).unwrap();
    let report = out.profile.expect("the profile ran");
    let lengths: Vec<u32> = report.points.iter().map(|p| p.0).collect();
    // Capped to the slot's context, with room for the chat template and the difference
    // between the reference tokenizer and the server's: 2048 · 0.9 − 32.
    assert_eq!(lengths, vec![64, 512, 1811], "capped to the slot's context");
    assert!(
        report.points.iter().all(|(_, t)| t.len() == 1),
        "{report:?}"
    );
    let curve = out.prefill_curve.expect("a curve").curve;
    assert!(curve.predict_ms(2000.0) > curve.predict_ms(64.0));
    plan.lengths = None;

    // 5. The server's own tokenizer (Option A): prompts exactly as long as the server counts
    //    them, chat template included.
    for endpoint in ["chat", "completions"] {
        let (out, s) = run_with(
            &config(
                &url,
                &[
                    "--warmup",
                    "none",
                    "--endpoint",
                    endpoint,
                    "--input-tokens",
                    "200",
                    "--output-tokens",
                    "4",
                    "--concurrency",
                    "1",
                    "--requests",
                    "2",
                ],
                &temp_dir(&format!("real-tok-{endpoint}")),
            ),
            "server",
        );
        assert_eq!(s.requests.completed, 2);
        for r in &out.records {
            assert_eq!(
                r.usage_prompt_tokens(),
                Some(200),
                "{endpoint}: the server counts exactly the target"
            );
        }
    }

    // 5b. The other APIs llama.cpp serves agree with its chat route.
    crate::real_apis::apis_agree_with_chat(&url);
    // The first hour (issue 23): a wrong route fails before any load, the warm-up says its
    // cost, an overloaded run says so.
    crate::real_first_hour::the_first_hour_against_llama_cpp(&url);

    // 6. The server is killed mid-run: cut streams are recorded as such, every request is
    //    accounted for, and the summary is still produced.
    if std::env::var("SERVEBENCH_REAL_SERVER_URL").is_ok() {
        return; // not our server to kill
    }
    let dir = temp_dir("real-kill");
    let cfg = config(
        &url,
        &[
            "--warmup",
            "none",
            "--input-tokens",
            "32",
            "--output-tokens",
            "400",
            "--concurrency",
            "2",
            "--requests",
            "6",
            "--timeout",
            "60s",
        ],
        &dir,
    );
    let pid = std::fs::read_to_string(pid_file())
        .expect("the script writes a pid file")
        .trim()
        .to_owned();
    let before = decode_calls(&url);
    let runner = std::thread::spawn(move || run(&cfg));
    // Kill once this run's tokens are flowing (the server's decode counter has moved on).
    let start = std::time::Instant::now();
    while decode_calls(&url) < before + 20.0 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "the server never decoded"
        );
        // Poll, leaving the cores to the servers under test.
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = Command::new("kill").args(["-9", &pid]).status();
    let (out, s) = runner.join().unwrap();
    assert_eq!(s.requests.total, 6, "every request is accounted for");
    assert!(
        s.requests
            .failed_by_kind
            .get("stream_cut")
            .copied()
            .unwrap_or(0)
            >= 1,
        "{:?}",
        s.requests.failed_by_kind
    );
    assert!(out.records.iter().all(|r| r.phase == Phase::Measure));
    let _ = Command::new(crate::common::real_server_script())
        .arg("stop")
        .status();
}

/// The llama.cpp build `scripts/real-server.sh` installs (`b11434`), from its `paths`.
fn script_build() -> String {
    let out = Command::new(crate::common::real_server_script())
        .arg("paths")
        .output()
        .expect("running scripts/real-server.sh paths");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("build=").map(str::to_owned))
        .expect("the script names its build")
}

/// llama.cpp's `n_decode_total` counter (decode calls since the server started).
fn decode_calls(base_url: &str) -> f64 {
    let url = servebench::client::BaseUrl::parse(base_url).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = rt
        .block_on(servebench::client::simple::call(
            &url,
            None,
            "GET",
            "/metrics",
            None,
            std::time::Duration::from_secs(5),
        ))
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("llamacpp:n_decode_total"))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
        .unwrap_or(0.0)
}
