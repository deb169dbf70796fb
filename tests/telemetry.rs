//! Telemetry on one timeline: the simulator's `/metrics` scraped during runs, its counters
//! agreeing with the client, its queue growing past capacity, and `timeseries.csv` written.

use crate::common::{config, run, servebench, temp_dir};
use servebench::sim::{SimConfig, SimServer};
use servebench::telemetry::summary::{summarize, ClientTotals};

#[test]
fn server_counters_agree_with_the_client_within_one_percent() {
    let sim = SimServer::spawn(SimConfig::preset("fast").unwrap(), 0).unwrap();
    let (out, s) = run(&config(
        &sim.base_url(),
        &[
            "--concurrency",
            "8",
            "--requests",
            "200",
            "--warmup",
            "10",
            "--input-tokens",
            "32",
            "--output-tokens",
            "64",
        ],
        &temp_dir("telemetry-agree"),
    ));
    // What the client saw over the span the server's counters are read (warm-up lead-in
    // requests generated inside it included), as the run's report counts it.
    let seen = servebench::telemetry::summary::client_counts_in_window(
        &out.records,
        &out.telemetry,
        s.window.start,
        s.window.end,
    );
    let t = summarize(
        &out.telemetry,
        s.window.start,
        s.window.end,
        s.window.start,
        out.idle_until,
        &ClientTotals {
            output_tokens: seen.output_tokens,
            completed: s.requests.completed,
            ended: seen.ended,
            mean_ttft_ms: s.ttft_ms.map(|d| d.mean),
        },
    );
    assert!(t
        .sources
        .server_metrics
        .starts_with("scraped from http://127.0.0.1:"));
    let sv = t.server.expect("the simulator's /metrics was scraped");
    assert_eq!(sv.engine, "vllm", "the simulator speaks vLLM's names");
    assert_eq!(sv.scrapes_failed, 0);
    let tokens = sv.comparison.output_tokens;
    // The measured requests' 200 × 64 tokens, and those of the warm-up's lead-in requests
    // that were generated inside the measured window.
    assert!(tokens.client >= 200.0 * 64.0, "{tokens:?}");
    assert!(tokens.difference_pct.unwrap().abs() <= 1.0, "{tokens:?}");
    let finished = sv.comparison.requests_finished;
    assert!(
        finished.difference_pct.unwrap().abs() <= 1.0,
        "{finished:?}"
    );
    // No GPU on this machine: said so, never zero.
    assert!(t.gpu.is_none());
    assert!(
        t.sources.gpu.starts_with("not measured"),
        "{}",
        t.sources.gpu
    );
}

#[test]
fn the_waiting_queue_grows_past_capacity() {
    // Four slots, ~34 requests/s of capacity at this time scale; arrivals at 60 req/s.
    let sim = SimServer::spawn(
        SimConfig {
            time_scale: 10.0,
            ..SimConfig::preset("cpu-tiny").unwrap()
        },
        0,
    )
    .unwrap();
    let mut cfg = config(
        &sim.base_url(),
        &[
            "--rate",
            "60",
            "--arrival",
            "constant",
            // The trend needs p < 0.01: at the 1 Hz default 7 s gave only 5 or 6 samples in
            // the steady window, so the collector samples every 250 ms here (~22 samples).
            "--duration",
            "7s",
            "--grace",
            "0s",
            "--warmup",
            "none",
            "--input-tokens",
            "64",
            "--output-tokens",
            "64",
        ],
        &temp_dir("telemetry-queue"),
    );
    cfg.telemetry.interval_s = 0.25;
    let (out, s) = run(&cfg);
    let t = summarize(
        &out.telemetry,
        s.window.start,
        s.window.end,
        s.window.start + (s.window.end - s.window.start) / 10,
        out.idle_until,
        &ClientTotals::default(),
    );
    let q = t
        .server
        .unwrap()
        .queue
        .expect("waiting samples in the steady window");
    assert!(q.growing, "{q:?}");
    assert!(
        q.slope_per_s > 5.0,
        "60 arrivals/s against ~34 completions/s: {q:?}"
    );
}

#[test]
fn a_run_writes_its_timeline_and_telemetry() {
    let dir = temp_dir("telemetry-files");
    let o = servebench(&[
        "run",
        "--requests",
        "100",
        "--warmup",
        "none",
        "--no-fluidity",
        "--sim-preset",
        "fast",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(header[0], "t_s");
    assert!(header.contains(&"server_waiting") && header.contains(&"gpu_power_w"));
    // Every request sent is in the timeline's sends.
    let sends: u64 = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let lines = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
    let sent = lines
        .lines()
        .filter(|l| !l.contains("\"sent_at_us\":null"))
        .count() as u64;
    assert_eq!(sends, sent);
    assert_eq!(
        run["timeseries"].as_array().unwrap().len(),
        csv.lines().count() - 1
    );
    assert_eq!(run["telemetry"]["server"]["engine"], "vllm");
    assert!(run["telemetry"]["sources"]["gpu"]
        .as_str()
        .unwrap()
        .starts_with("not measured"));
}

/// Malformed metrics: the scrape is marked failed and the run goes on.
#[test]
fn a_bad_metrics_endpoint_fails_its_scrapes_not_the_run() {
    let sim = SimServer::spawn(SimConfig::fixed(1.0, 1.0), 0).unwrap();
    let (out, s) = run(&config(
        &sim.base_url(),
        &[
            "--requests",
            "20",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "4",
            "--metrics-url",
            // The models route answers JSON, not the exposition format.
            &format!("{}/models", sim.base_url()),
        ],
        &temp_dir("telemetry-bad"),
    ));
    assert_eq!(s.requests.completed, 20);
    let t = summarize(
        &out.telemetry,
        s.window.start,
        s.window.end,
        0,
        0,
        &ClientTotals::default(),
    );
    let sv = t.server.unwrap();
    assert_eq!(sv.scrapes_ok, 0);
    assert!(sv.scrapes_failed >= 2);
    assert!(sv.last_error.unwrap().contains("unparseable metrics"));
}
