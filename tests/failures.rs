//! Bad servers and bad configurations: clear errors and failure records, never panics.

use crate::common::{config, run, temp_dir};
use servebench::record::FailureKind;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;

/// A one-trick server on 127.0.0.1:0: answers every request with `response` bytes, then
/// closes the connection.
fn scripted_server(response: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                let mut got = Vec::new();
                // Read the head and the body announced by Content-Length.
                loop {
                    let n = match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    got.extend_from_slice(&buf[..n]);
                    if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| {
                                l.strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if got.len() >= end + 4 + len {
                            break;
                        }
                    }
                }
                let _ = s.write_all(response);
            });
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

#[test]
fn http_error_keeps_the_servers_message() {
    let url = scripted_server(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 58\r\nConnection: close\r\n\r\n{\"error\":{\"message\":\"the request exceeds the context\"}}xx");
    let cfg = config(
        &url,
        &[
            "--concurrency",
            "1",
            "--requests",
            "3",
            "--warmup",
            "none",
            "--input-tokens",
            "8",
            "--output-tokens",
            "4",
        ],
        &temp_dir("http400"),
    );
    let (out, summary) = run(&cfg);
    assert_eq!(summary.requests.failed, 3);
    assert_eq!(summary.requests.failed_by_kind["http_status"], 3);
    let r = &out.records[0];
    assert_eq!(r.http_status, Some(400));
    match &r.outcome {
        servebench::record::Outcome::Failed { kind, detail } => {
            assert_eq!(*kind, FailureKind::HttpStatus);
            assert!(detail.contains("exceeds the context"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_stream_cut_mid_way_is_recorded_with_what_arrived() {
    let url = scripted_server(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
39\r\ndata: {\"id\":\"x\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\r\n",
    );
    let cfg = config(
        &url,
        &[
            "--concurrency",
            "2",
            "--requests",
            "4",
            "--warmup",
            "none",
            "--input-tokens",
            "8",
            "--output-tokens",
            "4",
        ],
        &temp_dir("cut"),
    );
    let (out, summary) = run(&cfg);
    assert_eq!(summary.requests.failed_by_kind["stream_cut"], 4);
    for r in &out.records {
        assert_eq!(r.chunks.len(), 1, "the chunk before the cut is kept");
        assert_eq!(r.response_id.as_deref(), Some("x"));
    }
    assert_eq!(
        summary.total_output_tokens, 4,
        "delivered tokens of failed requests still count"
    );
}

#[test]
fn malformed_json_is_a_protocol_failure() {
    let url = scripted_server(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 22\r\n\r\ndata: {not json}\n\n\n\n\n");
    let cfg = config(
        &url,
        &[
            "--concurrency",
            "1",
            "--requests",
            "2",
            "--warmup",
            "none",
            "--input-tokens",
            "8",
            "--output-tokens",
            "4",
        ],
        &temp_dir("badjson"),
    );
    let (_, summary) = run(&cfg);
    assert_eq!(summary.requests.failed_by_kind["protocol"], 2);
}

use crate::common::servebench;

#[test]
fn connection_refused_exits_2_with_advice() {
    // Bind then drop: the port is (almost certainly) closed now.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = servebench(&[
        "run",
        "--url",
        &url,
        "--requests",
        "1",
        "--quiet",
        "--out",
        temp_dir("refused").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("connection refused") && err.contains("is the server running?"),
        "{err}"
    );
}

#[test]
fn bad_flags_exit_2_and_say_what_to_fix() {
    let out = servebench(&["run", "--slo", "latency<=5", "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown per-request SLO metric"));
    let out = servebench(&["run", "--workload", "nope", "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("synthetic-uniform"));
}

#[test]
fn builtin_simulator_run_and_slo_exit_status() {
    let dir = temp_dir("slo");
    let common = [
        "run",
        "--requests",
        "20",
        "--concurrency",
        "4",
        "--warmup",
        "none",
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--sim-ttft-ms",
        "2",
        "--sim-itl-ms",
        "1",
        "--quiet",
        "--out",
    ];
    let mut ok_args = common.to_vec();
    ok_args.push(dir.to_str().unwrap());
    let ok = servebench(&ok_args);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stderr).contains("built-in simulator"));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("minimum report"));
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run_json["schema_version"], 2);
    assert_eq!(run_json["verdict"]["exit_status"], 0);
    // 20 requests of 8 tokens, one per chunk: 20 TTFTs and TPOTs, 20 × 7 gaps.
    let s = &run_json["summary"];
    for (key, n) in [
        ("ttft_ms", 20),
        ("tpot_ms", 20),
        ("itl_ms", 140),
        ("e2e_ms", 20),
        ("jitter_ms", 20),
        ("max_pause_ms", 20),
    ] {
        let d = &s[key];
        assert_eq!(d["n"], n, "{key}");
        let stats: Vec<f64> = ["min", "p50", "p90", "p95", "p99", "p999", "max"]
            .iter()
            .map(|k| d[k].as_f64().unwrap())
            .collect();
        assert!(stats.windows(2).all(|w| w[0] <= w[1]), "{key}: {stats:?}");
    }
    assert!(
        s["ttft_ms"]["min"].as_f64().unwrap() >= 2.0,
        "the simulated TTFT is 2 ms"
    );
    assert_eq!(s["requests"]["completed"], 20);
    assert_eq!(s["total_output_tokens"], 160);

    let dir2 = temp_dir("slo3");
    let mut fail_args: Vec<String> = common.iter().map(|s| s.to_string()).collect();
    fail_args.push(dir2.to_str().unwrap().to_owned());
    fail_args.extend(["--slo".to_owned(), "ttft_ms<=0.001".to_owned()]);
    let fail = crate::common::servebench_command()
        .args(&fail_args)
        .output()
        .unwrap();
    assert_eq!(
        fail.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&fail.stderr)
    );
    assert!(String::from_utf8_lossy(&fail.stdout).contains("FAIL"));
}

#[test]
fn a_server_that_stays_503_is_reported_not_ready() {
    let url = scripted_server(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    let out = servebench(&[
        "run",
        "--url",
        &url,
        "--ready-timeout",
        "1s",
        "--requests",
        "1",
        "--quiet",
        "--out",
        temp_dir("503").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not ready") && err.contains("loading"),
        "{err}"
    );
}

#[test]
fn ctrl_c_keeps_what_was_measured() {
    let dir = temp_dir("sigint");
    let mut child = crate::common::servebench_command()
        .args([
            "run",
            "--requests",
            "100000",
            "--concurrency",
            "4",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "64",
            "--sim-ttft-ms",
            "1",
            "--sim-itl-ms",
            "2",
            "--grace",
            "5s",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some requests have been written, then interrupt.
    let jsonl = dir.join("requests.jsonl");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&jsonl)
        .map(|s| s.lines().count())
        .unwrap_or(0)
        < 8
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no records after 60 s"
        );
        // Poll, leaving the cores to the servers under test.
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    // The shell's convention for an interrupted program: 128 + SIGINT.
    assert_eq!(status.code(), Some(130));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["interrupted"], true);
    let written = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"phase\":\"measure\""))
        .count() as u64;
    assert_eq!(
        run["summary"]["requests"]["total"].as_u64().unwrap(),
        written,
        "every record is in the summary"
    );
    assert!(written < 100_000);
    assert_eq!(run["verdict"]["exit_status"], 130);
}
