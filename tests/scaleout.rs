//! Scale-out against the simulator: `plan`, N shard processes of the built binary,
//! `merge`. The merged run must send exactly the single-process plan's requests at its
//! schedule's times (clock offsets corrected) and summarise like one generator; bad sets of
//! shards are refused with messages that name what is wrong.

use crate::common::{servebench, servebench_command, temp_dir};
use servebench::sim::{SimConfig, SimServer};
use std::path::{Path, PathBuf};
use std::process::Stdio;

fn sim() -> SimServer {
    SimServer::spawn(SimConfig::preset("fast").unwrap(), 0).expect("simulator starts")
}

fn ok(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn records(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["phase"] == "measure")
        .collect()
}

fn run_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap()
}

/// `(id, input_tokens, max_tokens)` in id order: the request sequence.
fn sequence(recs: &[serde_json::Value]) -> Vec<(u64, u64, u64)> {
    let mut v: Vec<_> = recs
        .iter()
        .map(|r| {
            (
                r["id"].as_u64().unwrap(),
                r["input_tokens"].as_u64().unwrap(),
                r["max_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Planned send times relative to ordinal 0's, µs, in id order (open loop).
fn schedule(recs: &[serde_json::Value]) -> Vec<i64> {
    let mut v: Vec<(u64, i64)> = recs
        .iter()
        .map(|r| {
            (
                r["id"].as_u64().unwrap(),
                r["scheduled_at_us"].as_i64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v.iter().map(|(_, t)| t - v[0].1).collect()
}

/// Plans `load` for `n` shards, runs them as separate processes (`extra[i]` added to shard
/// i's command line), merges them; returns the shard folders and the merged folder.
fn sharded(
    root: &Path,
    url: &str,
    load: &[&str],
    n: u32,
    extra: &[&[&str]],
) -> (Vec<PathBuf>, PathBuf) {
    let plan = root.join(format!("plan-{n}.json"));
    let mut args = vec!["plan", "--url", url];
    args.extend_from_slice(load);
    let n_s = n.to_string();
    args.extend([
        "--shards",
        &n_s,
        "--start-in",
        "3s",
        "-o",
        plan.to_str().unwrap(),
    ]);
    ok(&servebench(&args), "plan");
    let dirs: Vec<PathBuf> = (0..n)
        .map(|i| root.join(format!("n{n}-shard-{i}")))
        .collect();
    let children: Vec<_> = (0..n)
        .map(|i| {
            let shard = format!("{i}/{n}");
            let mut cmd = servebench_command();
            cmd.args(["run", "--plan", plan.to_str().unwrap(), "--shard", &shard])
                .args(["--quiet", "--out", dirs[i as usize].to_str().unwrap()])
                .args(
                    extra
                        .get(i as usize)
                        .copied()
                        .unwrap_or(&["--clock-sync", "none"]),
                )
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            cmd.spawn().expect("shard starts")
        })
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        ok(&c.wait_with_output().unwrap(), &format!("shard {i}/{n}"));
    }
    let merged = root.join(format!("n{n}-merged"));
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    args.extend(["-o", merged.to_str().unwrap()]);
    ok(&servebench(&args), "merge");
    (dirs, merged)
}

const OPEN: &[&str] = &[
    "--rate",
    "60",
    "--requests",
    "48",
    "--input-tokens",
    "32",
    "--output-tokens",
    "8",
    "--warmup",
    "none",
    "--seed",
    "7",
];

#[test]
fn shards_replay_the_single_plan_and_merge_exactly() {
    let server = sim();
    let url = server.base_url();
    let root = temp_dir("scaleout-open");
    let single = root.join("single");
    let mut args = vec!["run", "--url", &url, "--quiet", "--no-fluidity"];
    args.extend_from_slice(OPEN);
    args.extend(["--out", single.to_str().unwrap()]);
    ok(&servebench(&args), "single run");
    let one = records(&single);
    let one_summary = &run_json(&single)["summary"];
    assert_eq!(one.len(), 48);

    for n in [1u32, 2, 4] {
        // With 2 shards, shard 0 measures its offset from the simulator's Date header, and
        // shard 1's clock is declared 1.5 s ahead: it starts 1.5 s later in real time, and
        // merge must move its records back onto the common timeline.
        let extra: &[&[&str]] = if n == 2 {
            &[&["--clock-sync", "date"], &["--clock-offset-ms", "1500"]]
        } else {
            &[]
        };
        let (dirs, merged) = sharded(&root, &url, OPEN, n, extra);
        let recs = records(&merged);
        // The request sequence is the single process's, every ordinal once.
        assert_eq!(sequence(&recs), sequence(&one), "n={n}: request sequence");
        let ids: Vec<u64> = recs.iter().map(|r| r["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, (0..48).collect::<Vec<_>>(), "n={n}: ordinal order");
        // Each shard sent only its own ordinals.
        for (i, d) in dirs.iter().enumerate() {
            for r in records(d) {
                assert_eq!(r["id"].as_u64().unwrap() % u64::from(n), i as u64);
            }
        }
        // Send times are the global schedule's, to the microsecond (the injected 1.5 s
        // offset corrected): the single run's planned times, relative to ordinal 0.
        let got = schedule(&recs);
        let want = schedule(&one);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 3,
                "n={n}: ordinal {k} planned at {g} µs, single run {w} µs"
            );
        }
        // The summary agrees with one generator's, within noise: counts exactly, latency
        // loosely (a loaded 2-core machine runs N generators and the simulator at once).
        let s = &run_json(&merged)["summary"];
        assert_eq!(s["requests"]["completed"], 48, "n={n}");
        assert_eq!(
            s["total_output_tokens"], one_summary["total_output_tokens"],
            "n={n}"
        );
        assert_eq!(
            s["total_input_tokens"], one_summary["total_input_tokens"],
            "n={n}"
        );
        let (m, o) = (
            s["ttft_ms"]["p50"].as_f64().unwrap(),
            one_summary["ttft_ms"]["p50"].as_f64().unwrap(),
        );
        assert!(
            (m - o).abs() <= 0.5 * o + 50.0,
            "n={n}: TTFT P50 merged {m} ms, single {o} ms"
        );
        let (m, o) = (
            s["output_tokens_per_s"].as_f64().unwrap(),
            one_summary["output_tokens_per_s"].as_f64().unwrap(),
        );
        // Throughput spans planned start to last byte: a shard that reached the common
        // start late on a busy machine stretches it, hence the wide band.
        assert!(
            m > 0.25 * o && m < 4.0 * o,
            "n={n}: output tok/s merged {m}, single {o}"
        );
        eprintln!(
            "n={n}: TTFT P50 {:.2} ms (single {:.2}), output {:.0} tok/s (single {o:.0})",
            s["ttft_ms"]["p50"].as_f64().unwrap(),
            one_summary["ttft_ms"]["p50"].as_f64().unwrap(),
            m
        );
        // A normal run folder: reports written, indexed in the history, readable again.
        assert!(merged.join("report.html").exists() && merged.join("report.md").exists());
        ok(
            &servebench(&["report", merged.to_str().unwrap()]),
            "report of the merged run",
        );
        let history = servebench(&["history", "--json"]);
        ok(&history, "history");
        let merged_name = merged.file_name().unwrap().to_str().unwrap();
        assert!(
            String::from_utf8_lossy(&history.stdout).contains(merged_name),
            "the merged run is not in the history"
        );
        let merge_json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(merged.join("merge.json")).unwrap()).unwrap();
        assert_eq!(merge_json["shards"].as_array().unwrap().len(), n as usize);
        if n == 2 {
            assert_eq!(merge_json["shards"][1]["clock"]["applied_ms"], 1500.0);
            assert_eq!(merge_json["shards"][1]["clock"]["method"], "given");
            let date = &merge_json["shards"][0]["clock"];
            assert_eq!(date["method"], "date-header", "{date}");
            // Same machine: the Date estimate brackets zero.
            let (off, unc) = (
                date["offset_ms"].as_f64().unwrap(),
                date["uncertainty_ms"].as_f64().unwrap(),
            );
            assert!(off.abs() <= unc + 1.0 && unc < 600.0, "{date}");
            let warnings = run_json(&merged)["summary"]["warnings"].to_string();
            assert!(warnings.contains("clock offset +1500.0 ms"), "{warnings}");
            // Server metrics: only shard 0 scraped them.
            let s1 = run_json(&dirs[1]);
            assert!(s1["config"]["telemetry"]["metrics_url"].is_null());
            // Shard 0's per-second server columns are on the merged timeline.
            let scraped = |v: &serde_json::Value| {
                v["timeseries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|r| !r["server_running"].is_null())
                    .count()
            };
            let own = scraped(&run_json(&dirs[0]));
            let spliced = scraped(&run_json(&merged));
            assert!(own > 0, "shard 0 scraped the simulator's /metrics");
            assert!(spliced > 0 && spliced <= own, "{spliced} of {own} seconds");

            // A missing shard, a duplicated one, folders of two plans: refused, named.
            let s0 = dirs[0].to_str().unwrap();
            let out = root.join("refused");
            let o = servebench(&["merge", s0, "-o", out.to_str().unwrap()]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success());
            assert!(err.contains("missing shard 1 of 2"), "{err}");
            let o = servebench(&["merge", s0, s0, "-o", out.to_str().unwrap()]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success());
            assert!(err.contains("shard 0/2 is given twice"), "{err}");
            assert!(!out.join("run.json").exists());
        }
        if n == 4 {
            let two = root.join("n2-shard-1");
            let mut args = vec!["merge"];
            let ds: Vec<String> = dirs[..3].iter().map(|d| d.display().to_string()).collect();
            args.extend(ds.iter().map(|s| s.as_str()));
            args.extend([two.to_str().unwrap(), "-o", "/nonexistent/never"]);
            let o = servebench(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("different plans"), "{err}");
        }
    }
}

#[test]
fn closed_loop_shards_split_streams_and_ordinals() {
    let server = sim();
    let url = server.base_url();
    let root = temp_dir("scaleout-closed");
    let load = [
        "--concurrency",
        "4",
        "--requests",
        "40",
        "--warmup",
        "none",
        "--workload",
        "synthetic-skewed",
    ];
    let single = root.join("single");
    let mut args = vec!["run", "--url", &url, "--quiet", "--no-fluidity"];
    args.extend_from_slice(&load);
    args.extend(["--out", single.to_str().unwrap()]);
    ok(&servebench(&args), "single run");
    let (shards, merged) = sharded(&root, &url, &load, 2, &[]);
    assert_eq!(sequence(&records(&merged)), sequence(&records(&single)));
    assert_eq!(run_json(&merged)["summary"]["requests"]["completed"], 40);
    // The plan gave every shard one trace id prefix, so the merged run's names every trace.
    let prefix = |dir: &Path| run_json(dir)["config"]["target"]["trace_id_prefix"].clone();
    assert!(prefix(&merged).is_string());
    assert_eq!(prefix(&shards[0]), prefix(&merged));
    assert_eq!(prefix(&shards[1]), prefix(&merged));
}

#[test]
fn plans_and_shards_refuse_what_cannot_be_split() {
    let root = temp_dir("scaleout-refuse");
    let plan = root.join("plan.json");
    let p = plan.to_str().unwrap();
    let o = servebench(&["plan", "--rate", "5", "--shards", "2", "-o", p]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("a plan needs --url"));
    let o = servebench(&[
        "plan",
        "--url",
        "http://127.0.0.1:9/v1",
        "--workload",
        "multi-turn-chat",
        "--shards",
        "2",
        "-o",
        p,
    ]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("multi-turn"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = servebench(&[
        "plan",
        "--url",
        "http://127.0.0.1:9/v1",
        "--concurrency",
        "2",
        "--shards",
        "4",
        "-o",
        p,
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("each shard needs at least one stream"));
    let o = servebench(&[
        "plan",
        "--url",
        "http://127.0.0.1:9/v1",
        "--header",
        "Authorization: Bearer sk-1",
        "--shards",
        "2",
        "-o",
        p,
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("credentials never go into a plan"));
    assert!(!plan.exists());
    ok(
        &servebench(&[
            "plan",
            "--url",
            "http://127.0.0.1:9/v1",
            "--rate",
            "5",
            "--shards",
            "2",
            "-o",
            p,
        ]),
        "plan",
    );
    let o = servebench(&["run", "--plan", p, "--shard", "1/3"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("the plan was made for 2"));
    let o = servebench(&["run", "--plan", p, "--shard", "1/2", "--rate", "9"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("`--rate` cannot be given here"));
    let o = servebench_command()
        .args(["run", "--plan", p])
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_PROCID")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("no shard index"));
}

#[test]
fn trace_replay_shards_keep_the_trace_times() {
    let server = sim();
    let url = server.base_url();
    let root = temp_dir("scaleout-trace");
    // Irregular gaps, so a shard that counted from its own first request would be off.
    let trace = root.join("trace.jsonl");
    let mut t = 5_000.0;
    let lines: Vec<String> = (0..21)
        .map(|k| {
            t += 7.0 + (k * 13 % 29) as f64;
            format!(
                "{{\"timestamp\": {t}, \"input_length\": {}, \"output_length\": 4}}",
                16 + k % 5
            )
        })
        .collect();
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let load = [
        "--arrival",
        "trace",
        "--dataset",
        trace.to_str().unwrap(),
        "--requests",
        "21",
        "--warmup",
        "none",
    ];
    let single = root.join("single");
    let mut args = vec!["run", "--url", &url, "--quiet", "--no-fluidity"];
    args.extend_from_slice(&load);
    args.extend(["--out", single.to_str().unwrap()]);
    ok(&servebench(&args), "single run");
    let (_, merged) = sharded(&root, &url, &load, 3, &[]);
    let (recs, one) = (records(&merged), records(&single));
    assert_eq!(sequence(&recs), sequence(&one));
    for (k, (g, w)) in schedule(&recs).iter().zip(schedule(&one)).enumerate() {
        assert!(
            (g - w).abs() <= 3,
            "ordinal {k}: planned at {g} µs, single run {w} µs"
        );
    }
}

#[test]
fn duration_limited_shards_stop_together() {
    // The duration counts from the common start in every shard, so the merged run sends
    // the arrivals the single run's schedule puts before the limit. (An arrival within a
    // dispatch lag of the limit may fall on either side of it, in either run: only the last
    // ordinal may differ.)
    let server = sim();
    let url = server.base_url();
    let root = temp_dir("scaleout-duration");
    let load = [
        "--rate",
        "40",
        "--duration",
        "1500ms",
        "--input-tokens",
        "16",
        "--output-tokens",
        "4",
        "--warmup",
        "none",
        "--seed",
        "11",
    ];
    let single = root.join("single");
    let mut args = vec!["run", "--url", &url, "--quiet", "--no-fluidity"];
    args.extend_from_slice(&load);
    args.extend(["--out", single.to_str().unwrap()]);
    ok(&servebench(&args), "single run");
    let (_, merged) = sharded(&root, &url, &load, 2, &[]);
    let (recs, one) = (records(&merged), records(&single));
    assert!(one.len() > 20, "{} requests in 1.5 s at 40/s", one.len());
    let (got, want) = (sequence(&recs), sequence(&one));
    let n = want.len();
    assert!(
        got.len().abs_diff(n) <= 1,
        "{} merged, {n} single",
        got.len()
    );
    assert_eq!(got[..n - 1], want[..n - 1]);
    assert!(got.iter().all(|r| r.0 <= n as u64), "{got:?}");
}
