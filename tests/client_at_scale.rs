//! The client at scale: connections kept alive as real clients keep them, and reuse counted
//! against the server's own count of accepted connections.

use crate::common::{config, generator, run, temp_dir};
use servebench::sim::{SimConfig, SimServer};

/// A closed loop of 4 streams over 40 requests reuses the 4 connections opened before the
/// first request: the server accepts exactly 4, and 36 requests (all but each connection's
/// first) are counted as reuses.
#[test]
fn connections_are_kept_alive_and_reuse_is_counted_honestly() {
    let sim = SimServer::spawn(SimConfig::fixed(5.0, 1.0), 0).unwrap();
    let out_dir = temp_dir("keepalive");
    let cfg = config(
        &sim.base_url(),
        &[
            "--concurrency",
            "4",
            "--requests",
            "40",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "8",
            // The metrics scrapes would be connections of their own.
            "--no-server-metrics",
        ],
        &out_dir,
    );
    let (out, summary) = run(&cfg);
    assert_eq!(summary.requests.completed, 40);
    assert_eq!(
        sim.connections_accepted(),
        4,
        "one connection per stream, kept alive across its requests"
    );
    let g = generator(&out);
    let c = &g.connections;
    assert_eq!((c.sent_requests, c.reused_requests), (40, 36));
    assert_eq!(
        c.opened, 0,
        "the 4 connections were opened before measuring"
    );
    assert!(!c.new_connection_per_request);
    assert_eq!(
        out.records.iter().filter(|r| r.reused_connection).count(),
        36
    );
}

/// `--new-connection-per-request` opens one connection per request, and none is a reuse.
#[test]
fn a_new_connection_per_request_when_asked() {
    let sim = SimServer::spawn(SimConfig::fixed(5.0, 1.0), 0).unwrap();
    let out_dir = temp_dir("fresh-conns");
    let cfg = config(
        &sim.base_url(),
        &[
            "--concurrency",
            "4",
            "--requests",
            "20",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "8",
            "--new-connection-per-request",
            "--no-server-metrics",
        ],
        &out_dir,
    );
    let (out, summary) = run(&cfg);
    assert_eq!(summary.requests.completed, 20);
    assert_eq!(sim.connections_accepted(), 20);
    let c = generator(&out).connections;
    assert_eq!((c.sent_requests, c.reused_requests, c.opened), (20, 0, 20));
    assert!(c.new_connection_per_request);
}

/// Every HTTP API keeps its connections: each stream format ends its body once, the client
/// drains it after the stream's end event, and the next request on that connection reads a
/// clean response (a second chunked terminator, as the simulator's TGI stream once wrote,
/// would be read as the next response's head).
#[test]
fn every_http_api_reuses_its_connections() {
    for endpoint in [
        "chat",
        "completions",
        "responses",
        "messages",
        "llamacpp",
        "tgi",
        "sglang",
    ] {
        let sim = SimServer::spawn(SimConfig::fixed(2.0, 1.0), 0).unwrap();
        let out_dir = temp_dir(&format!("keepalive-{endpoint}"));
        let cfg = config(
            &sim.base_url(),
            &[
                "--endpoint",
                endpoint,
                "--concurrency",
                "2",
                "--requests",
                "12",
                "--warmup",
                "none",
                "--input-tokens",
                "16",
                "--output-tokens",
                "4",
                "--no-server-metrics",
            ],
            &out_dir,
        );
        let (out, summary) = run(&cfg);
        assert_eq!(summary.requests.completed, 12, "{endpoint}");
        assert_eq!(sim.connections_accepted(), 2, "{endpoint}");
        assert_eq!(
            generator(&out).connections.reused_requests,
            10,
            "{endpoint}"
        );
    }
}
