//! What a new user meets in their first hour, each as it was seen: exit statuses a script
//! can trust, runs never overwritten, flags checked before anything starts, progress in CI
//! logs, verdicts that blame the right side, a short report, complete files.

use crate::common::{config, generator, run, servebench, temp_dir};
use servebench::record::Phase;
use servebench::sim::{SimConfig, SimServer};

fn text(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn run_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

/// A URL without `/v1`: every request is a 404. That run used to exit 0.
#[test]
fn a_run_where_every_request_failed_exits_1_with_a_hint() {
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
        "--warmup",
        "none",
        "--no-fluidity",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("5× HTTP 404"), "{out}");
    assert!(out.contains("is `/v1`"), "the hint: {out}");
    let r = run_json(&dir);
    assert_eq!(r["verdict"]["exit_status"], 1);
    assert_eq!(r["summary"]["failures"]["by_kind"]["http_status"], 5);
    assert!(r["verdict"]["reasons"][0]
        .as_str()
        .unwrap()
        .contains("no request succeeded"));
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
