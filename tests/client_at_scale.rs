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

/// Past `--exact-summary-limit` a run keeps no records: what it returns is the summary's
/// sample, and the streamed summary counts every request that `requests.jsonl` holds, its
/// distributions equal to the exact summary of the file (every one still fits its exact
/// part here) and its steady state within the stated bin error.
#[test]
fn past_the_limit_a_run_keeps_no_records_and_its_summary_is_the_files() {
    let sim = SimServer::spawn(SimConfig::fixed(2.0, 0.5), 0).unwrap();
    let out_dir = temp_dir("streamed");
    let cfg = config(
        &sim.base_url(),
        &[
            "--concurrency",
            "8",
            "--requests",
            "2400",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "4",
            "--exact-summary-limit",
            "300",
            "--no-server-metrics",
        ],
        &out_dir,
    );
    let out = servebench::runner::run(
        &cfg,
        servebench::tokenizer::reference(),
        &servebench::record::run::ServerInfo::default(),
    )
    .unwrap();
    let streamed = out
        .streamed
        .as_ref()
        .expect("past the limit the run streams");
    assert!(
        out.records.len() <= servebench::metrics::stream::SAMPLE_REQUESTS,
        "kept {} records",
        out.records.len()
    );
    let s = streamed.summary.clone().finish();
    assert_eq!(s.streamed.as_ref().unwrap().requests, 2400);
    let written =
        servebench::store::read_requests(&out_dir.join("requests.jsonl"), out.clock.unix_us(0))
            .unwrap();
    assert_eq!(written.len(), 2400);
    let exact =
        servebench::metrics::summarize(&written, &servebench::metrics::SummaryParams::default());
    assert_eq!(s.requests, exact.requests);
    assert_eq!(s.total_output_tokens, exact.total_output_tokens);
    // The file holds whole microseconds: the streamed figures (from nanoseconds) agree
    // to within a microsecond per value.
    let (a, b) = (s.ttft_ms.unwrap(), exact.ttft_ms.unwrap());
    assert_eq!(a.n, b.n);
    assert!(
        (a.p99 - b.p99).abs() < 2e-3 && (a.p50 - b.p50).abs() < 2e-3,
        "{a:?} {b:?}"
    );
    let (a, b) = (s.steady_state, exact.steady_state);
    assert!(
        (a.requests_per_s - b.requests_per_s).abs() <= 0.02 * b.requests_per_s,
        "{a:?} {b:?}"
    );
}
