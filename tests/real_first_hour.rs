//! The first hour against a real, slow server (llama.cpp's `llama-server`, Gemma 3 270M on
//! CPU): a wrong route fails before any load, the warm-up says what it will cost before it
//! starts, and a run whose offered load mostly never completed is called overloaded.
//!
//! `#[ignore]`d like the other real-server tests: CI installs the server and runs it with
//! `--include-ignored`; without a server it fails and says how to get one.

use crate::common::{servebench, temp_dir};

#[test]
#[ignore = "needs llama.cpp: run scripts/real-server.sh install, then cargo test -- --include-ignored"]
fn the_first_hour_against_llama_cpp() {
    let url = crate::common::real_server_url();
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();

    // 1. A route the server does not serve (TGI's /generate_stream on llama.cpp) fails on the
    //    check before the load, with exit 2 and the cause, and sends no warm-up.
    let dir = temp_dir("real-first-hour-route");
    let out = servebench(&[
        "run",
        "--url",
        &url,
        "--endpoint",
        "tgi",
        "--requests",
        "4",
        "--no-store",
        "--force",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("404") || err.contains("not"), "{err}");
    assert!(
        !err.contains("warming up:"),
        "no load before the check: {err}"
    );

    // 3. The warm-up is sized from the server's measured speed and says what it costs
    //    before it starts; a small run then completes and passes.
    let dir = temp_dir("real-first-hour-warm");
    let out = servebench(&[
        "run",
        "--url",
        &url,
        "--concurrency",
        "2",
        "--requests",
        "4",
        "--input-tokens",
        "32",
        "--output-tokens",
        "8",
        "--warmup-max",
        "20s",
        "--no-store",
        "--force",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warming up: ~"), "{err}");

    // 2. Offered far beyond what 4 CPU slots serve (~0.5 req/s of 128 tokens): most requests
    //    are still unanswered when the run ends, and the verdict says overloaded, exit 1.
    let dir = temp_dir("real-first-hour-overload");
    let out = servebench(&[
        "run",
        "--url",
        &url,
        "--rate",
        "4",
        "--duration",
        "6s",
        "--grace",
        "1s",
        "--warmup",
        "none",
        "--input-tokens",
        "32",
        "--output-tokens",
        "128",
        "--no-store",
        "--force",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = text(&out);
    let all = format!("{err}{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("overloaded"), "{all}");
}
