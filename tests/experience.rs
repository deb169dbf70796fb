//! User-experience metrics end to end: the output-delay trick, prefill profiling, and the
//! fields they add to `run.json` and `requests.jsonl`.

use crate::common::{config, run, temp_dir};
use servebench::metrics::experience::{summarize, ExperienceOptions};
use servebench::metrics::ux::{DeadlineScheme, UxParams};
use servebench::sim::{FixedTiming, SimConfig, SimServer};
use std::process::Command;

fn jittery(smoothing_tbt_ms: f64) -> SimConfig {
    SimConfig {
        fixed: Some(FixedTiming {
            ttft_ms: 20.0,
            itl_ms: 10.0,
            itl_jitter_ms: 9.0,
            ..FixedTiming::default()
        }),
        smoothing_tbt_ms,
        ..SimConfig::preset("fast").unwrap()
    }
}

#[test]
fn output_delay_trick_lowers_tail_tbt_but_not_user_idle_time() {
    let opts = ExperienceOptions {
        ux: UxParams {
            scheme: DeadlineScheme::Reading {
                d0_ms: 60.0,
                rate_per_s: 100.0,
            },
            ..UxParams::default()
        },
        ..ExperienceOptions::default()
    };
    let measure = |smoothing: f64, name: &str| {
        let sim = SimServer::spawn(jittery(smoothing), 0).unwrap();
        let (out, s) = run(&config(
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
                "120",
            ],
            &temp_dir(name),
        ));
        let e = summarize(&out.records, &s, &opts);
        (s.itl_ms.unwrap().p99, e.user_idle_ms.unwrap().mean)
    };
    let (raw_tbt, raw_idle) = measure(0.0, "trick-raw");
    let (smooth_tbt, smooth_idle) = measure(12.0, "trick-smooth");
    assert!(
        smooth_tbt < raw_tbt,
        "the trick lowers tail TBT: {raw_tbt} -> {smooth_tbt} ms"
    );
    assert!(
        smooth_idle >= raw_idle,
        "but users wait no less: {raw_idle} -> {smooth_idle} ms"
    );
}

#[test]
fn profile_prefill_then_run_with_the_curve() {
    let dir = temp_dir("profile");
    let curve = dir.join("curve.json");
    let out = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args([
            "profile-prefill",
            "--lengths",
            "64,512,2048",
            "--repeats",
            "2",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .arg("--save")
        .arg(&curve)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&curve).unwrap()).unwrap();
    assert!(
        doc["curve"]["b_ms_per_token"].as_f64().unwrap() > 0.0,
        "TTFT grows with the prompt: {doc}"
    );
    assert!(doc["curve"]["r2"].as_f64().unwrap() > 0.8);
    assert_eq!(doc["points"].as_array().unwrap().len(), 6);

    let run_dir = dir.join("run");
    let out = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args([
            "run",
            "--requests",
            "30",
            "--concurrency",
            "4",
            "--warmup",
            "none",
            "--sim-preset",
            "fast",
            "--input-tokens",
            "64",
            "--output-tokens",
            "16",
            "--quiet",
            "--prefill-curve",
        ])
        .arg(&curve)
        .arg("--out")
        .arg(&run_dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    let s = &run["summary"];
    assert_eq!(
        s["fluidity"]["prefill_curve_source"],
        "given (--prefill-curve)"
    );
    for key in [
        "threshold",
        "quantile",
        "tbt_deadline_ms",
        "p1",
        "p5",
        "p50",
        "mean",
        "share_meeting",
    ] {
        assert!(s["fluidity"].get(key).is_some(), "summary.fluidity.{key}");
    }
    for key in ["value", "alpha", "reading_rate_per_s", "d0_ms", "f"] {
        assert!(
            s["smooth_goodput"].get(key).is_some(),
            "summary.smooth_goodput.{key}"
        );
    }
    assert!(s["user_idle_ms"]["p99"].is_number());
    assert!(s.get("fluid_token_rate_per_s").is_some());
    let lines = std::fs::read_to_string(run_dir.join("requests.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    for key in ["fluidity", "user_idle_ms", "deadline_misses"] {
        assert!(first.get(key).is_some(), "requests.jsonl lacks {key}");
    }
}

fn servebench_run(dir: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .args([
            "run",
            "--warmup",
            "none",
            "--sim-preset",
            "fast",
            "--quiet",
            "--out",
        ])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

#[test]
fn fairness_per_class_with_a_baseline() {
    let base = temp_dir("fair-base");
    let b = servebench_run(
        &base,
        &[
            "--workload",
            "fairness-mix",
            "--requests",
            "40",
            "--concurrency",
            "2",
        ],
    );
    assert!(
        b["summary"]["fairness"]["classes"]["short"]["count"]
            .as_u64()
            .unwrap()
            > 0
    );
    let mixed = temp_dir("fair-mixed");
    let m = servebench_run(
        &mixed,
        &[
            "--workload",
            "fairness-mix",
            "--requests",
            "60",
            "--concurrency",
            "8",
            "--baseline",
            base.to_str().unwrap(),
        ],
    );
    let f = &m["summary"]["fairness"];
    let j = f["jain_index"].as_f64().unwrap();
    assert!(j > 0.0 && j <= 1.0, "{j}");
    for class in ["short", "long"] {
        let c = &f["classes"][class];
        for key in [
            "ttft_p50_ms",
            "ttft_p95_ms",
            "ttft_p99_ms",
            "tpot_p50_ms",
            "starvation_rate",
            "latency_inflation_p50",
        ] {
            assert!(
                c.get(key).is_some_and(|v| !v.is_null()),
                "{class}.{key}: {c}"
            );
        }
    }
}

#[test]
fn api_keys_never_reach_any_output() {
    let dir = temp_dir("secret");
    let out = Command::new(env!("CARGO_BIN_EXE_servebench"))
        .env("MY_TEST_KEY", "sk-live-very-secret-123")
        .args([
            "run",
            "--warmup",
            "none",
            "--sim-preset",
            "fast",
            "--requests",
            "5",
            "--api-key-env",
            "MY_TEST_KEY",
            "--header",
            "X-Api-Token: tok-also-secret",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let mut everything =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    for f in ["run.json", "requests.jsonl"] {
        everything += &std::fs::read_to_string(dir.join(f)).unwrap();
    }
    assert!(
        !everything.contains("very-secret") && !everything.contains("also-secret"),
        "a secret leaked"
    );
    assert!(everything.contains("<redacted>"));
}
