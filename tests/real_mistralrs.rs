//! Against the second real engine: mistral.rs 0.8.1 (`mistralrs serve`, a continuous-batching
//! scheduler with its own prefix cache) with SmolLM2 135M on CPU, installed and started by
//! `scripts/mistralrs-server.sh`.
//!
//! `#[ignore]`d like the llama.cpp tests: a plain `cargo test` lists it with the reason; CI
//! installs the engine (cached per machine) and runs it with `--include-ignored`, and asked to
//! run without it, it fails and says how to get it.

use crate::common::{config, run, temp_dir};

/// The base URL of the mistral.rs server `scripts/mistralrs-server.sh` starts (or
/// `SERVEBENCH_MISTRALRS_URL`); fails, saying how to install it, when there is none.
fn server() -> String {
    if let Ok(url) = std::env::var("SERVEBENCH_MISTRALRS_URL") {
        return url;
    }
    let script =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/mistralrs-server.sh");
    let paths = std::process::Command::new(&script)
        .arg("paths")
        .output()
        .expect("running scripts/mistralrs-server.sh paths");
    let installed = String::from_utf8_lossy(&paths.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("server=").map(std::path::PathBuf::from))
        .is_some_and(|p| p.exists());
    assert!(
        installed,
        "mistral.rs is not installed: run scripts/mistralrs-server.sh install (45-60 minutes on 2 cores, once), or set SERVEBENCH_MISTRALRS_URL"
    );
    let out = std::process::Command::new(&script)
        .arg("start")
        .output()
        .expect("running scripts/mistralrs-server.sh start");
    assert!(
        out.status.success(),
        "scripts/mistralrs-server.sh start failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .expect("the script prints the URL last")
        .trim()
        .to_owned()
}

/// A closed loop of two streams against mistral.rs: every request completes; the output
/// count is the server's own usage (which mistral.rs puts on the last content chunk, unasked)
/// and equals the tokens counted over the chunks; the prompt count is the server's; each
/// run's prompts are its own (the prompt salt), so no request is answered from the cache a
/// previous run filled, whatever mistral.rs's prefix cache holds.
#[test]
#[ignore = "needs mistral.rs: run scripts/mistralrs-server.sh install, then cargo test -- --include-ignored"]
fn mistralrs_server_end_to_end() {
    let _cpu = crate::common::exclusive_cpu();
    let url = server();
    let args = [
        "--model",
        "default",
        "--warmup",
        "none",
        "--input-tokens",
        "32",
        "--output-tokens",
        "16",
        "--concurrency",
        "2",
        "--requests",
        "6",
        "--timeout",
        "120s",
    ];
    let mut salts = Vec::new();
    for attempt in 0..2 {
        let cfg = config(&url, &args, &temp_dir(&format!("mistralrs-{attempt}")));
        let (out, s) = run(&cfg);
        assert_eq!(
            s.requests.completed,
            6,
            "{:?}",
            out.records.iter().map(|r| &r.outcome).collect::<Vec<_>>()
        );
        for r in &out.records {
            let usage = r
                .usage_completion_tokens()
                .expect("mistral.rs puts usage on its last chunk");
            assert_eq!(u64::from(r.output_tokens), usage);
            assert_eq!(
                r.chunks.iter().map(|c| u64::from(c.tokens)).sum::<u64>(),
                usage
            );
            assert!(r.usage_prompt_tokens().is_some_and(|p| p >= 16), "{r:?}");
        }
        salts.push(cfg.prompt_salt);
    }
    assert_ne!(salts[0], salts[1], "every run has its own prompts");
}
