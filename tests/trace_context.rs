//! W3C trace context and the OTLP export end to end: the simulator, as a traced server
//! would, reads each request's `traceparent`, and a stand-in collector receives the run's
//! spans. Both must join the records of `requests.jsonl` by their ids.

use crate::common::{servebench, temp_dir};
use servebench::client::trace;
use servebench::sim::{SimConfig, SimServer};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// A collector on 127.0.0.1 (port 0) that answers 200 to every POST and keeps the bodies.
fn collector() -> (String, Arc<Mutex<Vec<serde_json::Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut line, mut length, mut path) = (String::new(), 0usize, String::new());
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if lower.starts_with("post ") {
                    path = line.split(' ').nth(1).unwrap_or("").to_owned();
                }
                line.clear();
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            assert_eq!(path, "/v1/traces");
            kept.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap());
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
        }
    });
    (url, bodies)
}

fn run_against(sim: &SimServer, dir: &std::path::Path, extra: &[&str]) {
    let url = sim.base_url();
    let mut args = vec![
        "run",
        "--url",
        &url,
        "--requests",
        "6",
        "--concurrency",
        "2",
        "--warmup",
        "none",
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = servebench(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_server_and_the_collector_see_each_records_trace() {
    let sim = SimServer::spawn(SimConfig::fixed(2.0, 1.0), 0).unwrap();
    let (collector_url, bodies) = collector();
    let dir = temp_dir("trace-context");
    run_against(&sim, &dir, &["--otlp-endpoint", &collector_url]);

    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let prefix = run["config"]["target"]["trace_id_prefix"]
        .as_str()
        .expect("run.json names the trace id prefix")
        .to_owned();
    assert!(trace::valid_prefix(&prefix), "{prefix}");
    let records = lines(&dir.join("requests.jsonl"));
    let measured: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["phase"] == "measure").collect();
    assert_eq!(measured.len(), 6);

    // The server read each record's own traceparent: trace id = prefix + record id.
    let truth: HashMap<String, Option<String>> = sim
        .truth()
        .wait_for(6, std::time::Duration::from_secs(10))
        .into_iter()
        .map(|t| (t.response_id, t.traceparent))
        .collect();
    for r in &measured {
        let id = r["id"].as_u64().unwrap();
        let seen = truth[r["response_id"].as_str().unwrap()].as_deref();
        assert_eq!(seen, Some(trace::traceparent(&prefix, id).as_str()));
        assert!(seen.unwrap().contains(&format!("{prefix}{id:016x}")));
    }

    // The collector got one span per record, with its times and one event per chunk.
    let spans: Vec<serde_json::Value> = bodies
        .lock()
        .unwrap()
        .iter()
        .flat_map(|b| {
            b["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect();
    assert_eq!(spans.len(), records.len());
    for r in &records {
        let id = r["id"].as_u64().unwrap();
        let span = spans
            .iter()
            .find(|s| s["traceId"] == trace::trace_id(&prefix, id))
            .unwrap_or_else(|| panic!("no span for record {id}"));
        assert_eq!(span["spanId"], trace::span_id(&prefix, id));
        let sent_ns = r["sent_at_us"].as_u64().unwrap() as u128 * 1000;
        assert_eq!(span["startTimeUnixNano"], sent_ns.to_string());
        assert_eq!(
            span["events"].as_array().unwrap().len(),
            r["chunks"].as_array().unwrap().len()
        );
    }
}

#[test]
fn no_trace_context_sends_no_header() {
    let sim = SimServer::spawn(SimConfig::fixed(2.0, 1.0), 0).unwrap();
    let dir = temp_dir("no-trace-context");
    run_against(&sim, &dir, &["--no-trace-context"]);
    let truth = sim.truth().wait_for(6, std::time::Duration::from_secs(10));
    assert!(!truth.is_empty());
    assert!(truth.iter().all(|t| t.traceparent.is_none()));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert!(run["config"]["target"]["trace_id_prefix"].is_null());
}
