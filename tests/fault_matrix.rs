//! The fault matrix: a hostile server misbehaving in every way the client must survive. For
//! each case: no panic, the right failure kind, everything received before the failure
//! kept, the other requests measured correctly, and a consistent summary. docs/reliability.md
//! lists every case with its outcome.

use crate::common::{config, run, servebench, temp_dir};
use crate::hostile::proxy::Proxy;
use crate::hostile::tls::TlsHostile;
use crate::hostile::{Behaviour, Hostile, FIXED_TOKENS};
use servebench::record::{FailureKind, Outcome, Phase, RequestRecord};
use std::time::Duration;

/// Runs `n` requests, one at a time, against `url`; returns the measured records.
fn drive(url: &str, n: u32, extra: &[&str], name: &str) -> Vec<RequestRecord> {
    let n = n.to_string();
    let mut args = vec![
        "--model",
        "hostile",
        "--no-model-check",
        "--warmup",
        "none",
        "--concurrency",
        "1",
        "--requests",
        &n,
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--no-server-metrics",
    ];
    if !extra.contains(&"--timeout") {
        args.extend(["--timeout", "10s"]);
    }
    args.extend_from_slice(extra);
    let (out, s) = run(&config(url, &args, &temp_dir(name)));
    // The summary is consistent with its records whatever happened.
    assert_eq!(s.requests.total, out.records.len() as u64, "{name}");
    assert_eq!(
        s.requests.completed + s.requests.failed,
        s.requests.total,
        "{name}"
    );
    out.records
        .into_iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect()
}

fn kind(r: &RequestRecord) -> Option<FailureKind> {
    r.outcome.failure_kind()
}

fn detail(r: &RequestRecord) -> &str {
    match &r.outcome {
        Outcome::Failed { detail, .. } => detail,
        Outcome::Ok => "",
    }
}

/// One behaviour for every request; checks each record with `check`.
fn case(behaviour: Behaviour, extra: &[&str], check: impl Fn(&RequestRecord)) {
    let name = format!("{behaviour:?}")
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(40)
        .collect::<String>();
    let h = Hostile::start(behaviour);
    for r in drive(&h.base_url(), 2, extra, &format!("fault-{name}")) {
        check(&r);
    }
}

#[test]
fn resets_and_closes_are_cut_streams_keeping_what_arrived() {
    case(Behaviour::ResetBeforeHeaders, &[], |r| {
        assert_eq!(kind(r), Some(FailureKind::StreamCut), "{:?}", r.outcome);
        assert!(r.chunks.is_empty() && r.http_status.is_none());
    });
    case(Behaviour::ResetMidHeaders, &[], |r| {
        assert!(
            matches!(
                kind(r),
                Some(FailureKind::StreamCut | FailureKind::Protocol)
            ),
            "{:?}",
            r.outcome
        );
        assert!(r.chunks.is_empty());
    });
    for b in [
        Behaviour::ResetMidStream { after_events: 3 },
        Behaviour::ResetMidEvent { after_events: 3 },
        Behaviour::CloseMidStream { after_events: 3 },
    ] {
        case(b, &[], |r| {
            assert_eq!(kind(r), Some(FailureKind::StreamCut), "{:?}", r.outcome);
            assert_eq!(r.http_status, Some(200));
            assert_eq!(r.chunks.len(), 3, "the chunks before the cut are kept");
            assert_eq!(r.output_tokens, 3);
        });
    }
}

#[test]
fn error_statuses_keep_the_servers_words() {
    case(
        Behaviour::json(500, r#"{"error":{"message":"engine crashed"}}"#),
        &[],
        |r| {
            assert_eq!(kind(r), Some(FailureKind::HttpStatus));
            assert!(detail(r).contains("HTTP 500") && detail(r).contains("engine crashed"));
        },
    );
    case(
        Behaviour::html(502, "<html><body>Bad gateway</body></html>"),
        &[],
        |r| {
            assert_eq!(r.http_status, Some(502));
            assert!(detail(r).contains("Bad gateway"), "{}", detail(r));
        },
    );
    case(Behaviour::empty(404), &[], |r| {
        assert_eq!(kind(r), Some(FailureKind::HttpStatus));
        assert_eq!(detail(r), "HTTP 404 with an empty body");
    });
    case(
        Behaviour::RetryAfter {
            code: 429,
            seconds: 7,
        },
        &[],
        |r| {
            assert_eq!(r.http_status, Some(429));
            assert!(detail(r).contains("Retry-After: 7"), "{}", detail(r));
            assert_eq!(r.retries, 0, "no retry unless asked");
        },
    );
}

/// `--retry` retries 429/503 after Retry-After; latency counts from the first attempt.
#[test]
fn retries_are_opt_in_and_recorded() {
    let h = Hostile::start_script(vec![
        Behaviour::RetryAfter {
            code: 503,
            seconds: 0,
        },
        Behaviour::Normal {
            tokens: 4,
            gap: Duration::ZERO,
        },
    ]);
    let records = drive(&h.base_url(), 2, &["--retry", "2"], "fault-retry");
    for r in &records {
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        assert_eq!(r.retries, 1);
        assert_eq!(r.chunks.len(), 4);
    }
    assert_eq!(h.posts_seen(), 4);
}

#[test]
fn stalls_meet_each_timeout() {
    case(
        Behaviour::StallBeforeFirstByte(Duration::from_secs(5)),
        &["--first-byte-timeout", "300ms"],
        |r| {
            assert_eq!(kind(r), Some(FailureKind::Timeout));
            assert!(detail(r).contains("--first-byte-timeout"), "{}", detail(r));
        },
    );
    case(
        Behaviour::StallAfterHead(Duration::from_secs(5)),
        &["--first-token-timeout", "300ms"],
        |r| {
            assert_eq!(kind(r), Some(FailureKind::Timeout));
            assert_eq!(r.http_status, Some(200));
            assert!(detail(r).contains("--first-token-timeout"), "{}", detail(r));
        },
    );
    case(
        Behaviour::StallMidStream {
            after_events: 2,
            stall: Duration::from_secs(5),
        },
        &["--timeout", "600ms"],
        |r| {
            assert_eq!(kind(r), Some(FailureKind::Timeout));
            assert_eq!(r.chunks.len(), 2, "tokens before the stall are kept");
        },
    );
    // A stall shorter than the limits is just a long gap.
    case(
        Behaviour::StallMidStream {
            after_events: 2,
            stall: Duration::from_millis(300),
        },
        &[],
        |r| {
            assert!(r.outcome.is_ok());
            let gaps: Vec<u64> = r.chunks.windows(2).map(|w| w[1].at - w[0].at).collect();
            assert!(gaps.iter().any(|&g| g >= 250_000_000), "{gaps:?}");
        },
    );
}

#[test]
fn stream_markers_are_respected() {
    case(Behaviour::NoDone, &[], |r| {
        assert_eq!(kind(r), Some(FailureKind::StreamCut));
        assert_eq!(r.chunks.len() as u32, FIXED_TOKENS);
    });
    case(Behaviour::DoneThenMore, &[], |r| {
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        assert_eq!(
            r.chunks.len() as u32,
            FIXED_TOKENS,
            "nothing after [DONE] is output"
        );
    });
}

#[test]
fn broken_payloads_are_protocol_failures() {
    case(Behaviour::MalformedJson { after_events: 2 }, &[], |r| {
        assert_eq!(kind(r), Some(FailureKind::Protocol));
        assert_eq!(r.chunks.len(), 2);
        assert!(detail(r).contains("invalid JSON"), "{}", detail(r));
    });
    case(Behaviour::InvalidUtf8, &[], |r| {
        assert_eq!(kind(r), Some(FailureKind::Protocol));
        assert_eq!(r.chunks.len(), 1);
    });
}

#[test]
fn multi_byte_characters_split_across_reads_arrive_whole() {
    case(Behaviour::SplitUtf8, &[], |r| {
        assert!(r.outcome.is_ok(), "{:?}", r.outcome);
        // "café", " 日本", " 🎉": 5, 7 and 5 bytes.
        let bytes: Vec<u32> = r.chunks.iter().map(|c| c.bytes).collect();
        assert_eq!(bytes, vec![5, 7, 5]);
    });
}

/// A line that never ends and a stream that never stops: bounded buffers, protocol failures.
#[test]
fn endless_input_is_bounded() {
    case(
        Behaviour::HugeLine { bytes: 100 << 20 },
        &["--max-line-mib", "1"],
        |r| {
            assert_eq!(kind(r), Some(FailureKind::Protocol), "{:?}", r.outcome);
            assert!(detail(r).contains("--max-line-bytes"), "{}", detail(r));
            assert!(r.chunks.is_empty());
        },
    );
    case(Behaviour::Endless, &["--max-response-mib", "1"], |r| {
        assert_eq!(kind(r), Some(FailureKind::Protocol), "{:?}", r.outcome);
        assert!(detail(r).contains("--max-response-bytes"), "{}", detail(r));
        assert!(r.chunks.len() > 1000, "what arrived is kept");
    });
}

#[test]
fn unusual_but_valid_framings_succeed() {
    for b in [
        Behaviour::SlowDrip {
            bytes_per_sec: 4000,
        },
        Behaviour::ContentLengthBody,
        Behaviour::UntilClose,
    ] {
        case(b, &[], |r| {
            assert!(r.outcome.is_ok(), "{:?}", r.outcome);
            assert_eq!(r.chunks.len() as u32, FIXED_TOKENS);
        });
    }
}

/// Good and bad answers interleaved: each bad one fails alone, the good ones are measured
/// exactly as if alone.
#[test]
fn failures_do_not_disturb_the_other_requests() {
    let normal = Behaviour::Normal {
        tokens: 6,
        gap: Duration::from_millis(2),
    };
    let h = Hostile::start_script(vec![
        normal.clone(),
        Behaviour::ResetMidStream { after_events: 2 },
        normal.clone(),
        Behaviour::json(500, "{}"),
        normal.clone(),
        Behaviour::MalformedJson { after_events: 1 },
    ]);
    let records = drive(&h.base_url(), 12, &[], "fault-mixed");
    let mut by_kind = std::collections::BTreeMap::new();
    for r in &records {
        *by_kind.entry(kind(r)).or_insert(0) += 1;
        if r.outcome.is_ok() {
            assert_eq!(r.chunks.len(), 6);
            assert_eq!(r.usage_completion_tokens(), Some(6));
        }
    }
    assert_eq!(by_kind[&None], 6, "{by_kind:?}");
    assert_eq!(by_kind[&Some(FailureKind::StreamCut)], 2);
    assert_eq!(by_kind[&Some(FailureKind::HttpStatus)], 2);
    assert_eq!(by_kind[&Some(FailureKind::Protocol)], 2);
}

#[test]
fn dns_failure_is_a_clear_configuration_error() {
    let o = servebench(&[
        "run",
        "--url",
        "http://no-such-host.invalid:8000/v1",
        "--requests",
        "1",
        "--quiet",
        "--out",
        temp_dir("dns").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("could not resolve the host"), "{err}");
}

/// TLS with a private CA, a wrong name, mutual TLS, and --insecure.
#[test]
fn tls_set_ups() {
    let normal = Behaviour::Normal {
        tokens: 4,
        gap: Duration::ZERO,
    };
    let dir = temp_dir("tls");
    let base_args = |url: &str, out: &str| -> Vec<String> {
        [
            "run",
            "--url",
            url,
            "--model",
            "hostile",
            "--no-model-check",
            "--requests",
            "2",
            "--warmup",
            "none",
            "--no-fluidity",
            "--no-server-metrics",
            "--quiet",
            "--out",
            out,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let servebench_s = |args: &[String]| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        servebench(&a)
    };
    // Unknown CA: refused, with advice.
    let (server, ca) = TlsHostile::start(normal.clone());
    let o = servebench_s(&base_args(
        &server.base_url(),
        dir.join("a").to_str().unwrap(),
    ));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--ca-cert"), "{err}");
    // Trusted with --ca-cert.
    let ca_file = ca.write_to(&dir);
    let mut args = base_args(&server.base_url(), dir.join("b").to_str().unwrap());
    args.extend(["--ca-cert".into(), ca_file.display().to_string()]);
    let o = servebench_s(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A certificate for another name: refused even with the right CA.
    let (wrong, wrong_ca) = TlsHostile::start_wrong_name(normal.clone());
    let wrong_ca_file = wrong_ca.write_to(&temp_dir("tls-wrong"));
    let mut args = base_args(&wrong.base_url(), dir.join("c").to_str().unwrap());
    args.extend(["--ca-cert".into(), wrong_ca_file.display().to_string()]);
    let o = servebench_s(&args);
    assert_eq!(o.status.code(), Some(2));
    // --insecure accepts it, loudly.
    let mut args = base_args(&wrong.base_url(), dir.join("d").to_str().unwrap());
    args.push("--insecure".into());
    let o = servebench_s(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("WARNING: --insecure"));
    // Mutual TLS: without a client certificate the requests fail; with it they succeed.
    let (mtls, mtls_ca, client) = TlsHostile::start_mtls(normal);
    let mdir = temp_dir("tls-mtls");
    let mca = mtls_ca.write_to(&mdir);
    let (cert, key) = client.write_to(&mdir);
    let mut args = base_args(&mtls.base_url(), dir.join("e").to_str().unwrap());
    args.extend([
        "--ca-cert".into(),
        mca.display().to_string(),
        "--client-cert".into(),
        cert.display().to_string(),
        "--client-key".into(),
        key.display().to_string(),
    ]);
    let o = servebench_s(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut args = base_args(&mtls.base_url(), dir.join("f").to_str().unwrap());
    args.extend(["--ca-cert".into(), mca.display().to_string()]);
    let o = servebench_s(&args);
    assert_ne!(
        o.status.code(),
        Some(0),
        "no client certificate, no service"
    );
}

/// HTTPS_PROXY tunnels with CONNECT, HTTP_PROXY sends absolute-form requests; the proxy
/// sees the traffic, and its set-up is outside TTFT.
#[test]
fn proxies_from_the_environment_carry_the_traffic() {
    let normal = Behaviour::Normal {
        tokens: 4,
        gap: Duration::ZERO,
    };
    let plain = Hostile::start(normal.clone());
    let proxy = Proxy::start();
    let dir = temp_dir("proxy-http");
    let o = crate::common::servebench_command()
        .env("HTTP_PROXY", proxy.url())
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .args([
            "run",
            "--url",
            &plain.base_url(),
            "--model",
            "hostile",
            "--no-model-check",
            "--requests",
            "3",
            "--warmup",
            "none",
            "--no-fluidity",
            "--no-server-metrics",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(proxy.requests_seen() >= 3, "{:?}", proxy.seen());
    let (tls, ca) = TlsHostile::start(normal);
    let ca_file = ca.write_to(&temp_dir("proxy-ca"));
    let tunnel = Proxy::start();
    let dir = temp_dir("proxy-https");
    let o = crate::common::servebench_command()
        .env("HTTPS_PROXY", tunnel.url())
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .args([
            "run",
            "--url",
            &tls.base_url(),
            "--model",
            "hostile",
            "--no-model-check",
            "--requests",
            "3",
            "--warmup",
            "none",
            "--no-fluidity",
            "--no-server-metrics",
            "--quiet",
            "--ca-cert",
            ca_file.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(tunnel.connects_seen() >= 1, "{:?}", tunnel.seen());
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["config"]["target"]["proxy"]["tunnel"], true);
}

/// Bad input on the command line: a clear message, exit 2, and no run folder left behind.
#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = temp_dir("badin");
    let toml = dir.join("bad.toml");
    std::fs::write(
        &toml,
        "name = \"x\"\ninput = { dist = \"fixed\", value = 10 }\noutput = 3\n",
    )
    .unwrap();
    let jsonl = dir.join("bad.jsonl");
    std::fs::write(&jsonl, "{\"prompt\": \"hi\"}\n{\"prompt\": \n").unwrap();
    let out = dir.join("never");
    let o_str = out.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--workload", "nope"], "unknown workload"),
        (vec!["--workload", toml.to_str().unwrap()], "output"),
        (vec!["--dataset", jsonl.to_str().unwrap()], "line 2"),
        (vec!["--input-tokens", "0"], "at least 1"),
        (vec!["--rate=-3"], "--rate must be a positive"),
        (
            vec!["--concurrency", "0"],
            "--concurrency must be at least 1",
        ),
        (vec!["--slo-target", "3"], "--slo-target"),
    ];
    for (extra, expect) in cases {
        let mut args = vec!["run", "--quiet", "--out", o_str];
        args.extend(extra.iter());
        let o = servebench(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(expect), "{extra:?}: {err}");
        assert!(!out.exists(), "{extra:?}: a run folder was left behind");
    }
    // An output folder that cannot be written.
    let o = servebench(&["run", "--quiet", "--out", "/proc/servebench-cannot-write"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot write to the run folder"));
}
