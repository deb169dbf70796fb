//! What a new user meets in their first hour, each as it was seen: exit statuses a script
//! can trust, runs never overwritten, flags checked before anything starts, progress in CI
//! logs, verdicts that blame the right side, a short report, complete files.

use crate::common::{config, generator, run, servebench, servebench_command, temp_dir};
use servebench::record::{Phase, RequestRecord};
use servebench::sim::{Faults, SimConfig, SimServer};

fn text(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn run_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

/// A URL without `/v1`: every request is a 404. That run used to exit 0, then exit 1 after
/// a warm-up of 404s; the request sent before any load now finds it at once: exit 2, the
/// URL to try, and no run folder.
#[test]
fn a_url_without_v1_fails_before_any_load_with_the_url_to_try() {
    let sim = SimServer::spawn(SimConfig::fixed(1.0, 1.0), 0).unwrap();
    let url = sim.base_url().trim_end_matches("/v1").to_owned();
    let dir = temp_dir("all-404");
    let o = servebench(&[
        "run",
        "--url",
        &url,
        "--model",
        "x",
        "--no-model-check",
        "--requests",
        "5",
        "--no-fluidity",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    let flat = err.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("HTTP 404"), "{err}");
    assert!(
        flat.contains(&format!("try --url {url}/v1")),
        "the fix: {err}"
    );
    assert!(!dir.join("requests.jsonl").exists(), "no load was sent");
}

/// A port that answers an HTML page (a web UI, another service), with 200 or 501: before,
/// the whole 120-s warm-up ran on failures; now one request ends the run, exit 2, naming
/// the page.
#[test]
fn an_html_page_ends_the_run_before_the_warm_up() {
    for status in [200u16, 501] {
        let sim = SimServer::spawn(
            SimConfig {
                faults: Faults {
                    html_status: status,
                    ..Default::default()
                },
                ..SimConfig::fixed(1.0, 1.0)
            },
            0,
        )
        .unwrap();
        let dir = temp_dir(&format!("html-{status}"));
        // The default warm-up (auto, up to 120 s) would run, were the page not caught.
        let o = servebench(&[
            "run",
            "--url",
            &sim.base_url(),
            "--requests",
            "5",
            "--no-fluidity",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{status}: {out}\n{err}");
        let flat = err.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&format!(
                "answered with an HTML page (HTTP {status}, \"Welcome to the web UI\")"
            )),
            "{status}: {err}"
        );
        assert!(flat.contains("not at the API"), "{status}: {err}");
        assert!(
            !dir.join("requests.jsonl").exists(),
            "{status}: no warm-up ran"
        );
    }
}

/// A server started with an API key: without it, or with a wrong one, the run ends before
/// the warm-up with exit 2 and says which variable sets the key; with it, the run works.
#[test]
fn a_missing_or_wrong_api_key_ends_the_run_before_the_warm_up() {
    let sim = SimServer::spawn(
        SimConfig {
            faults: Faults {
                api_key: Some("sekret".into()),
                ..Default::default()
            },
            ..SimConfig::fixed(1.0, 1.0)
        },
        0,
    )
    .unwrap();
    let url = sim.base_url();
    let attempt = |name: &str, key: Option<&str>| {
        let dir = temp_dir(name);
        let mut c = servebench_command();
        c.env_remove("OPENAI_API_KEY").env_remove("SB_TEST_KEY");
        if let Some(k) = key {
            c.env("SB_TEST_KEY", k);
        }
        let o = c
            .args([
                "run",
                "--url",
                url.as_str(),
                "--api-key-env",
                "SB_TEST_KEY",
                "--requests",
                "3",
                "--warmup",
                "none",
                "--no-fluidity",
                "--quiet",
                "--out",
                dir.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let (_, err) = text(&o);
        (
            o.status.code(),
            err.split_whitespace().collect::<Vec<_>>().join(" "),
            dir,
        )
    };
    let (code, err, dir) = attempt("key-missing", None);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(
        err.contains("No API key was sent: export SB_TEST_KEY=<key>"),
        "{err}"
    );
    assert!(!dir.join("requests.jsonl").exists());
    let (code, err, _) = attempt("key-wrong", Some("guess"));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("from the variable SB_TEST_KEY") && err.contains("not accepted"),
        "{err}"
    );
    let (code, err, dir) = attempt("key-right", Some("sekret"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(run_json(&dir)["summary"]["requests"]["completed"], 3);
}

/// A server that fails every request after a good start: neither the warm-up nor the
/// measured phase spins on the failures; each stops after `GIVE_UP_AFTER` in a row (no
/// request of its own having succeeded) and says so.
#[test]
fn a_phase_stops_sending_after_a_streak_of_failures() {
    use servebench::runner::phase::GIVE_UP_AFTER;
    let sim = SimServer::spawn(
        SimConfig {
            faults: Faults {
                error_rate: 1.0,
                error_statuses: vec![500],
                ..Default::default()
            },
            ..SimConfig::fixed(1.0, 1.0)
        },
        0,
    )
    .unwrap();
    let (out, s) = run(&config(
        &sim.base_url(),
        &[
            "--concurrency",
            "4",
            "--requests",
            "5000",
            "--warmup",
            "5000",
            "--input-tokens",
            "8",
            "--output-tokens",
            "4",
        ],
        &temp_dir("streak"),
    ));
    // At most the requests already in flight (4 workers) end after the limit.
    let bound = GIVE_UP_AFTER + 2 * 4;
    let warmup = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Warmup)
        .count() as u64;
    assert!(
        (GIVE_UP_AFTER..=bound).contains(&warmup),
        "{warmup} warm-up requests"
    );
    let measured = s.requests.total;
    assert!(
        (GIVE_UP_AFTER..=bound).contains(&measured),
        "{measured} measured requests"
    );
    assert_eq!(s.requests.completed, 0);
    assert!(out
        .measure
        .gave_up_after
        .is_some_and(|n| n >= GIVE_UP_AFTER));
}

/// `run --rate 0.5 --duration 60s` against a 4-slot server completed 4 of 30 requests and
/// cancelled 26, yet passed. A run whose offered load mostly never finished is overloaded:
/// exit 1, said the same way in the terminal, run.json and the report files. (One slot at
/// about 20 ms a step: each answer takes about 0.2 s, arrivals come every 25 ms.)
#[test]
fn a_run_whose_load_mostly_never_finished_fails_as_overloaded() {
    let dir = temp_dir("overloaded");
    let sim_cfg = dir.join("one-slot.toml");
    std::fs::write(
        &sim_cfg,
        "preset = \"fast\"\nmax_num_seqs = 1\n[step]\nbase_ms = 20.0\n",
    )
    .unwrap();
    let run_dir = dir.join("run");
    let o = servebench(&[
        "run",
        "--sim-config",
        sim_cfg.to_str().unwrap(),
        "--rate",
        "40",
        "--arrival",
        "constant",
        "--duration",
        "1s",
        "--grace",
        "200ms",
        "--warmup",
        "none",
        "--no-fluidity",
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--quiet",
        "--out",
        run_dir.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    let r = run_json(&run_dir);
    assert_eq!(r["verdict"]["exit_status"], 1);
    let reason = r["verdict"]["reasons"][0].as_str().unwrap().to_owned();
    assert!(reason.starts_with("overloaded: "), "{reason}");
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat(out.as_str()).contains(&format!("exit status 1: {reason}")),
        "{out}"
    );
    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(
        flat(md.as_str()).contains("were still unanswered when the run ended"),
        "{md}"
    );
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(flat(html.as_str()).contains("were still unanswered when the run ended"));
}

/// Prompts longer than the server's context: 400s, exit 1, the context hint.
#[test]
fn prompts_over_the_context_fail_the_run() {
    let dir = temp_dir("over-ctx");
    std::fs::create_dir_all(&dir).unwrap();
    let sim_cfg = dir.join("small.toml");
    std::fs::write(&sim_cfg, "preset = \"fast\"\nkv_capacity_tokens = 256\n").unwrap();
    let run_dir = dir.join("run");
    let o = servebench(&[
        "run",
        "--sim-config",
        sim_cfg.to_str().unwrap(),
        "--input-tokens",
        "600",
        "--output-tokens",
        "8",
        "--requests",
        "3",
        "--warmup",
        "none",
        "--no-fluidity",
        "--quiet",
        "--out",
        run_dir.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("HTTP 400"), "{out}");
}

/// `--max-failures` decides between 0 and 1 when some requests fail.
#[test]
fn the_failure_threshold_sets_the_exit_status() {
    let dir = temp_dir("faults");
    std::fs::create_dir_all(&dir).unwrap();
    let sim_cfg = dir.join("faulty.toml");
    std::fs::write(
        &sim_cfg,
        "preset = \"fast\"\n[faults]\nerror_rate = 0.3\nerror_statuses = [500]\n",
    )
    .unwrap();
    for (max, code) in [("0.05", 1), ("0.9", 0)] {
        let run_dir = dir.join(format!("run-{max}"));
        let o = servebench(&[
            "run",
            "--sim-config",
            sim_cfg.to_str().unwrap(),
            "--requests",
            "40",
            "--input-tokens",
            "16",
            "--output-tokens",
            "4",
            "--warmup",
            "none",
            "--no-fluidity",
            "--max-failures",
            max,
            "--quiet",
            "--out",
            run_dir.to_str().unwrap(),
        ]);
        let (out, err) = text(&o);
        assert_eq!(
            o.status.code(),
            Some(code),
            "--max-failures {max}: {out}\n{err}"
        );
        let r = run_json(&run_dir);
        let failed = r["summary"]["requests"]["failed"].as_u64().unwrap();
        assert!(failed > 2 && failed < 30, "{failed}");
    }
}

#[test]
fn a_model_the_server_does_not_serve_is_refused_with_the_list() {
    let sim = SimServer::spawn(SimConfig::fixed(1.0, 1.0), 0).unwrap();
    let dir = temp_dir("bad-model");
    let o = servebench(&[
        "run",
        "--url",
        &sim.base_url(),
        "--model",
        "gpt-9",
        "--requests",
        "2",
        "--warmup",
        "none",
        "--no-fluidity",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let served = SimConfig::fixed(1.0, 1.0).model;
    assert!(
        err.contains("does not list model `gpt-9`") && err.contains(&served),
        "{err}"
    );
    // For servers that ignore the field: opt out.
    let o = servebench(&[
        "run",
        "--url",
        &sim.base_url(),
        "--model",
        "gpt-9",
        "--no-model-check",
        "--requests",
        "2",
        "--warmup",
        "none",
        "--no-fluidity",
        "--quiet",
        "--out",
        temp_dir("bad-model-ok").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
}

/// Files named by flags are read before anything starts (the simulator included), and the
/// OS error appears once.
#[test]
fn flags_and_files_are_checked_before_anything_starts() {
    let o = servebench(&["run", "--dataset", "/nonexistent/data.json", "--quiet"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !err.contains("built-in simulator"),
        "nothing started: {err}"
    );
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    let o = servebench(&["run", "--rate", "0", "--quiet"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--rate must be a positive number"));
    // A negative rate is a value, refused as one (not an "unexpected argument").
    let o = servebench(&["run", "--rate", "-1", "--quiet"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("--rate must be a positive number"),
        "{}",
        text(&o).1
    );
    let o = servebench(&["run", "--duration", "10 parsecs", "--quiet"]);
    assert_eq!(o.status.code(), Some(2));
}

/// An existing run folder is never silently replaced.
#[test]
fn an_existing_run_folder_is_refused_unless_forced() {
    let dir = temp_dir("existing");
    let args = |force: bool| {
        let mut a = vec![
            "run",
            "--requests",
            "3",
            "--warmup",
            "none",
            "--no-fluidity",
            "--sim-preset",
            "fast",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ];
        if force {
            a.push("--force");
        }
        a
    };
    assert_eq!(servebench(&args(false)).status.code(), Some(0));
    let first = std::fs::read_to_string(dir.join("run.json")).unwrap();
    let o = servebench(&args(false));
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--force"), "{}", text(&o).1);
    assert_eq!(
        std::fs::read_to_string(dir.join("run.json")).unwrap(),
        first
    );
    assert_eq!(servebench(&args(true)).status.code(), Some(0));
    assert_ne!(
        std::fs::read_to_string(dir.join("run.json")).unwrap(),
        first
    );
}

/// The warm-up cap is a flag, and a capped warm-up is reported as what it was.
#[test]
fn a_capped_warm_up_says_what_it_achieved() {
    let dir = temp_dir("warm-cap");
    let o = servebench(&[
        "run",
        "--requests",
        "5",
        "--warmup-max",
        "300ms",
        "--concurrency",
        "2",
        "--sim-ttft-ms",
        "50",
        "--sim-itl-ms",
        "20",
        "--output-tokens",
        "10",
        "--input-tokens",
        "16",
        "--no-fluidity",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    let r = run_json(&dir);
    let w = &r["warmup"];
    assert_eq!(w["capped"], true);
    assert_eq!(w["compliant"], false);
    assert_eq!(w["required_requests"], 100);
    assert!(w["requests"].as_u64().unwrap() < 100);
    assert!(r["summary"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["kind"] == "warmup_capped"));
    assert!(text(&o).0.contains("NOT compliant"));
}

/// Without a terminal (CI, pipes), status lines are printed as the run goes.
#[test]
fn progress_is_printed_when_stderr_is_not_a_terminal() {
    let o = servebench(&[
        "run",
        "--requests",
        "20",
        "--warmup",
        "none",
        "--no-fluidity",
        "--sim-preset",
        "fast",
        "--out",
        temp_dir("progress").to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("[servebench") && l.contains("measuring")),
        "{err}"
    );
}

/// The short report leads, fits 100 columns, and names its draft template; the tables come
/// with --detail. run.json carries the command line and the server's identity.
#[test]
fn the_report_is_short_by_default_and_files_are_complete() {
    let dir = temp_dir("short");
    let o = servebench(&[
        "run",
        "--requests",
        "20",
        "--warmup",
        "none",
        "--no-fluidity",
        "--sim-preset",
        "fast",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (out, _) = text(&o);
    assert!(out.contains("minimum report, draft Appendix C.1"), "{out}");
    for line in out.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    assert!(!out.contains("draft Table 1"));
    assert!(out.lines().count() < 40, "{out}");
    // The Users line's jargon (idle, smooth goodput's T, fluid rate) points to its legend.
    assert!(out.contains("docs/metrics.md"), "{out}");
    let r = run_json(&dir);
    assert_eq!(r["command_line"][1], "run");
    assert_eq!(r["server"]["engine"], "servebench-sim");
    assert_eq!(r["server"]["version"], env!("CARGO_PKG_VERSION"));
    let o = servebench(&[
        "run",
        "--requests",
        "20",
        "--warmup",
        "none",
        "--no-fluidity",
        "--sim-preset",
        "fast",
        "--quiet",
        "--detail",
        "--out",
        temp_dir("detail").to_str().unwrap(),
    ]);
    let (out, _) = text(&o);
    assert!(out.contains("Time to first token (draft Table 1)"), "{out}");
    for line in out.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
}

#[test]
fn help_is_grouped_under_headings() {
    let o = servebench(&["run", "--help"]);
    let (out, _) = text(&o);
    for h in [
        "Target:",
        "Workload:",
        "Load:",
        "Limits:",
        "Request body:",
        "SLOs:",
        "User experience:",
        "Output:",
        "Built-in simulator:",
    ] {
        assert!(out.contains(h), "no `{h}` heading");
    }
}

/// The server, not the generator, is blamed when arrivals outrun completions: open loop at
/// 40 req/s against four slots of a slow engine.
#[test]
fn an_overloaded_server_is_named_and_the_generator_is_not_blamed() {
    let sim = SimServer::spawn(
        SimConfig {
            time_scale: 10.0,
            ..SimConfig::preset("cpu-tiny").unwrap()
        },
        0,
    )
    .unwrap();
    let (out, s) = run(&config(
        &sim.base_url(),
        &[
            "--rate",
            "40",
            "--arrival",
            "constant",
            "--duration",
            "3s",
            "--grace",
            "0s",
            "--warmup",
            "none",
            "--input-tokens",
            "64",
            "--output-tokens",
            "64",
        ],
        &temp_dir("overload"),
    ));
    let b = s.arrival_balance.expect("open loop balance");
    assert!(b.saturated, "{b:?}");
    assert!(s.warnings.iter().any(|w| matches!(
        w,
        servebench::metrics::warnings::Warning::ServerSaturated { .. }
    )));
    // The generator's typical lateness is a rounding error next to the server's queueing
    // (the machine may be busy with other tests, so no absolute bound is asserted, and the
    // median rather than the P99, which one descheduled dispatch can set).
    let g = generator(&out);
    let lag = g.dispatch_lag_ms.unwrap().p50;
    let queued = s.ttft_from_schedule_ms.unwrap().p50;
    assert!(
        lag * 10.0 < queued,
        "dispatch lag {lag} ms vs TTFT from schedule {queued} ms"
    );
}

/// `--max-concurrency` caps what is in flight in open loop.
#[test]
fn max_concurrency_caps_requests_in_flight() {
    let sim = SimServer::spawn(SimConfig::fixed(20.0, 2.0), 0).unwrap();
    let (out, s) = run(&config(
        &sim.base_url(),
        &[
            "--rate",
            "200",
            "--max-concurrency",
            "2",
            "--requests",
            "20",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "8",
        ],
        &temp_dir("max-conc"),
    ));
    assert_eq!(s.requests.completed, 20);
    let mut events: Vec<(u64, i32)> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .flat_map(|r| [(r.sent_at.unwrap(), 1), (r.finished_at, -1)])
        .collect();
    events.sort_by_key(|e| (e.0, e.1));
    let mut live = 0;
    let mut peak = 0;
    for (_, d) in events {
        live += d;
        peak = peak.max(live);
    }
    assert_eq!(peak, 2);
}

/// Every named workload is documented; docs and README cite sources by title, not by our
/// working names.
#[test]
fn docs_cover_every_workload_and_cite_sources_by_title() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let workloads = std::fs::read_to_string(root.join("docs/workloads.md")).unwrap();
    for name in servebench::workload::Scenario::NAMES {
        assert!(
            workloads.contains(&format!("`{name}`")),
            "docs/workloads.md lacks {name}"
        );
    }
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        files.push(e.unwrap().path());
    }
    for f in files {
        let t = std::fs::read_to_string(&f).unwrap();
        for bad in ["seed 00", "DESIGN.md"] {
            assert!(!t.contains(bad), "{} mentions `{bad}`", f.display());
        }
    }
}

/// The line of `err` that contains `needle`, by index.
fn line_with(err: &str, needle: &str) -> usize {
    err.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with `{needle}` in:\n{err}"))
}

/// Issue 23, items 3 and 5: nothing said how long a run would take. Before anything is
/// sent it now prints its planned length (the warm-up and the measured requests at the rate
/// the test request measured), then the warm-up's size against the draft's minimum, and
/// its progress lines carry an ETA.
#[test]
fn a_run_says_how_long_it_will_take_before_it_starts() {
    let o = servebench(&[
        "run",
        "--requests",
        "40",
        "--concurrency",
        "4",
        "--warmup",
        "10",
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--sim-ttft-ms",
        "5",
        "--sim-itl-ms",
        "1",
        "--no-fluidity",
        "--out",
        temp_dir("planned").to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let planned = line_with(&err, "Planned: warm-up ~");
    let warming = line_with(&err, "warming up: ~10 requests, ~");
    let measuring = err
        .lines()
        .position(|l| l.starts_with("[servebench") && l.contains("measuring"))
        .unwrap_or_else(|| panic!("no measuring line in:\n{err}"));
    assert!(planned < warming && warming < measuring, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[planned].contains("40 measured requests at ~") && lines[planned].contains("in all"),
        "{err}"
    );
    assert!(
        lines[warming].contains(
            "draft 4.5: >= 100 requests and >= 10,000 output tokens; --warmup 10 is short of it"
        ),
        "{err}"
    );
    assert!(lines[measuring].contains("s left"), "the ETA: {err}");
}

/// Issue 23, item 3: against a server of four slots, the draft's warm-up does not fit in its
/// cap; it used to run to the cap and only then say "NOT compliant". The speed the test
/// request measured (four requests at a time) says so before the warm-up starts, with the
/// cap that would meet it, and the run reports the same.
#[test]
fn a_warm_up_that_cannot_meet_the_draft_says_so_before_it_starts() {
    let dir = temp_dir("warm-plan");
    let sim_cfg = dir.join("four-slots.toml");
    std::fs::write(&sim_cfg, "preset = \"cpu-tiny\"\ntime_scale = 10.0\n").unwrap();
    let run_dir = dir.join("run");
    let o = servebench(&[
        "run",
        "--sim-config",
        sim_cfg.to_str().unwrap(),
        "--concurrency",
        "8",
        "--requests",
        "8",
        "--warmup-max",
        "200ms",
        "--input-tokens",
        "16",
        "--output-tokens",
        "16",
        "--no-fluidity",
        "--out",
        run_dir.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    // 16-token answers: the draft's 10,000 tokens are 625 requests, seconds of this server.
    let line = err.lines().nth(line_with(&err, "warming up: ~")).unwrap();
    assert!(
        line.contains("NOT compliant") && line.contains("would meet it"),
        "{line}"
    );
    assert!(line.contains("more than --warmup-max 200ms"), "{line}");
    let w = &run_json(&run_dir)["warmup"];
    assert_eq!(w["capped"], true, "{w}");
    assert_eq!(w["compliant"], false, "{w}");
}

/// Issue 23, item 4: the warm-up drained the server, then every stream of the measured
/// phase started at once, and that burst was the run's P99 TTFT. A closed loop now carries
/// the load on: each stream first sends one more warm-up request, the streams spread over
/// one request's time, and the measured requests start as those end, while the later ones
/// are still in flight.
#[test]
fn a_closed_loop_carries_the_warm_ups_load_into_the_measurement() {
    // 20 ms to the first token, 2 ms a token: 34 ms a request of 8 tokens, whatever the load.
    let sim = SimServer::spawn(SimConfig::fixed(20.0, 2.0), 0).unwrap();
    let (out, s) = run(&config(
        &sim.base_url(),
        &[
            "--concurrency",
            "8",
            "--requests",
            "40",
            "--warmup",
            "16",
            "--input-tokens",
            "16",
            "--output-tokens",
            "8",
        ],
        &temp_dir("lead-in"),
    ));
    assert_eq!(s.requests.completed, 40);
    let mut warm: Vec<&RequestRecord> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Warmup)
        .collect();
    assert_eq!(warm.len(), 16 + 8, "one lead-in request per stream");
    warm.sort_by_key(|r| r.queued_at);
    let (proper, lead) = warm.split_at(16);
    // The warm-up drained (draft 4.5) before the lead-in started…
    let drained = proper.iter().map(|r| r.finished_at).max().unwrap();
    assert!(lead.iter().all(|r| r.queued_at >= drained));
    // …which spreads the streams over one request's time under the warm-up's load (at
    // least the 34 ms a request takes; 7/8 of it from the first stream to the last)…
    let spread = lead[7].queued_at - lead[0].queued_at;
    assert!(spread >= 10_000_000, "lead-in spread {spread} ns");
    // …and the measurement starts as lead-in requests end, with others still in flight.
    let first = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .map(|r| r.attempted_at())
        .min()
        .unwrap();
    assert!(lead.iter().any(|r| r.finished_at <= first), "{first}");
    assert!(
        lead.iter().any(|r| r.finished_at > first),
        "no drain before the measurement"
    );
}

/// Issue 23, item 5: a test prints its plan (its levels, how long each, the total) before
/// its first level, and each level's line the time left of it.
#[test]
fn a_test_says_how_long_it_will_take_before_it_starts() {
    let dir = temp_dir("test-planned");
    let o = servebench(&[
        "test",
        "ttft",
        "--quick",
        "--capacity",
        "20",
        "--requests",
        "20",
        "--warmup",
        "5",
        "--sim-preset",
        "fast",
        "--input-tokens",
        "16",
        "--output-tokens",
        "8",
        "--no-fluidity",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    // 20 requests at half of --capacity 20 req/s: 2 s.
    let planned = line_with(&err, "Planned: TTFT 20 requests (~2s); 1 level, about ");
    let level = line_with(&err, "[test] level 1");
    assert!(planned < level, "{err}");
    assert!(
        err.lines().nth(level).unwrap().contains("left of the plan"),
        "{err}"
    );
}

/// Issue 36, item 6: inputs that cannot make a measurement end at once with status 2 and
/// the reason, before any server, simulator or warm-up starts. Before, `run --requests 0`
/// exited 0 with "100.0 % of requests succeeded" and the test flags started minutes of
/// warm-up or wrote an empty test.
#[test]
fn inputs_that_cannot_measure_are_refused_at_once() {
    let cases: [(&[&str], &str); 7] = [
        (&["run", "--requests", "0"], "--requests must be at least 1"),
        (
            &["run", "--timeout", "0s"],
            "--timeout must be longer than zero",
        ),
        (
            &["run", "--slo", "success_rate>=1.5"],
            "a share between 0 and 1",
        ),
        (
            &["test", "ttft", "--requests", "0"],
            "--requests must be at least 1",
        ),
        (
            &["test", "capacity", "--start-concurrency", "0"],
            "--start-concurrency and --concurrency-limit must be at least 1",
        ),
        (
            &[
                "test",
                "capacity",
                "--start-concurrency",
                "8",
                "--concurrency-limit",
                "2",
            ],
            "above --concurrency-limit 2",
        ),
        (
            &["test", "throughput", "--budget", "0s"],
            "--budget must be longer than zero",
        ),
    ];
    for (args, reason) in cases {
        let mut argv = args.to_vec();
        argv.push("--quiet");
        let o = servebench(&argv);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(reason), "{args:?}: {err}");
        assert!(
            !err.contains("built-in simulator"),
            "{args:?} started: {err}"
        );
    }
}
