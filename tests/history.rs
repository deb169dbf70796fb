//! History, comparison, the regression gate and exports, end to end through the binary
//! against the built-in simulator: two engine presets (Llama-3-8B on an H100 against
//! Llama-3-70B on four A100s, twice as fast as real time) over five seeds each, plus a
//! rerun of the first. The runs are interleaved (a, b, a again, per seed) so that a busy
//! machine slows every system alike, and each is short (40 requests at concurrency 8).

use crate::common::{servebench, temp_dir};
use servebench::compare::metrics::Metric;
use servebench::compare::ComparisonReport;
use servebench::stats::compare::{Outcome, Verdict};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// The runs every test here reads, made once.
struct Runs {
    root: PathBuf,
    store: PathBuf,
    fast: Vec<PathBuf>,
    slow: Vec<PathBuf>,
    rerun: Vec<PathBuf>,
}

fn run(root: &Path, store: &Path, config: &Path, seed: u64, out: &Path, label: &str) {
    let o = servebench(&[
        "run",
        "--sim-config",
        config.to_str().unwrap(),
        "--seed",
        &seed.to_string(),
        "--concurrency",
        "8",
        "--requests",
        "40",
        "--warmup",
        "none",
        "--no-fluidity",
        "--input-tokens",
        "128",
        "--output-tokens",
        "32",
        "--no-server-metrics",
        "--no-gpu-metrics",
        "--client-threads",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--label",
        label,
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "run {label} seed {seed} in {}: {}",
        root.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn runs() -> &'static Runs {
    static RUNS: OnceLock<Runs> = OnceLock::new();
    RUNS.get_or_init(|| {
        let root = temp_dir("history");
        let store = root.join("history.db");
        let fast_cfg = root.join("fast.toml");
        let slow_cfg = root.join("slow.toml");
        std::fs::write(&fast_cfg, "preset = \"h100-llama3-8b\"\ntime_scale = 2.0\n").unwrap();
        std::fs::write(
            &slow_cfg,
            "preset = \"a100-llama3-70b-tp4\"\ntime_scale = 2.0\n",
        )
        .unwrap();
        let mut r = Runs {
            root: root.clone(),
            store: store.clone(),
            fast: Vec::new(),
            slow: Vec::new(),
            rerun: Vec::new(),
        };
        for seed in SEEDS {
            for (label, cfg, list) in [
                ("fast", &fast_cfg, &mut r.fast),
                ("slow", &slow_cfg, &mut r.slow),
                ("rerun", &fast_cfg, &mut r.rerun),
            ] {
                let out = root.join("runs").join(format!("{label}-{seed}"));
                run(&root, &store, cfg, seed, &out, label);
                list.push(out);
            }
        }
        r
    })
}

fn sb(args: &[&str]) -> (Option<i32>, String, String) {
    let o = servebench(args);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn compare_json(r: &Runs, a: &str, b: &str) -> ComparisonReport {
    let (code, out, err) = sb(&[
        "compare",
        a,
        b,
        "--json",
        "--store",
        r.store.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    serde_json::from_str(&out).expect("compare --json is a ComparisonReport")
}

fn verdict(c: &ComparisonReport, m: Metric) -> Option<Verdict> {
    let row = c.metrics.iter().find(|r| r.metric == m)?;
    match &row.versus_baseline[0].outcome {
        Outcome::Compared(x) => Some(x.verdict),
        _ => None,
    }
}

#[test]
fn comparing_two_presets_finds_the_real_difference() {
    let r = runs();
    let c = compare_json(r, "label:fast", "label:slow");
    assert!(c.enough_runs);
    assert_eq!(c.systems[0].runs.len(), 5);
    // The 70B preset's steps cost about three times the 8B's: slower on every latency, lower
    // on every throughput, with the whole interval beyond the 5 % tolerance.
    for m in [
        Metric::TtftP50Ms,
        Metric::TpotP50Ms,
        Metric::TpotP99Ms,
        Metric::E2eP99Ms,
        Metric::OutputTokensPerS,
        Metric::RequestsPerS,
    ] {
        assert_eq!(verdict(&c, m), Some(Verdict::Worse), "{m:?}");
    }
    let row = c
        .metrics
        .iter()
        .find(|x| x.metric == Metric::TpotP50Ms)
        .unwrap();
    let Outcome::Compared(x) = &row.versus_baseline[0].outcome else {
        unreachable!()
    };
    assert!(x.welch.p_value < 0.01, "{:?}", x.welch);
    assert!(x.relative_difference.unwrap() > 0.5, "{x:?}");
    // Same workload, seeds, load, limits: the checklist holds, and the one real difference
    // (the model served) is listed.
    for id in [
        "workload",
        "seeds",
        "load",
        "duration",
        "warmup",
        "success_criteria",
        "runs",
    ] {
        let item = c.checklist.iter().find(|i| i.id == id).unwrap();
        assert_eq!(
            item.status,
            servebench::compare::checklist::CheckStatus::Pass,
            "{id}: {}",
            item.detail
        );
    }
    let model = c
        .differences
        .iter()
        .find(|d| d.setting == "/config/target/model")
        .expect("the model differs");
    assert_eq!(model.values, ["\"sim-llama3-8b\"", "\"sim-llama3-70b\""]);
    // The tables say the same in words.
    let (code, text, _) = sb(&[
        "compare",
        "label:fast",
        "label:slow",
        "--store",
        r.store.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0));
    assert!(text.contains("slow against fast"), "{text}");
    assert!(text.contains("worse"), "{text}");
}

#[test]
fn comparing_a_preset_with_itself_finds_no_difference() {
    let r = runs();
    // Folders of runs work as systems too.
    let fast = r.root.join("fast-only");
    let again = r.root.join("rerun-only");
    for (dir, list) in [(&fast, &r.fast), (&again, &r.rerun)] {
        std::fs::create_dir_all(dir).unwrap();
        for run in list {
            let to = dir.join(run.file_name().unwrap());
            if !to.exists() {
                std::os::unix::fs::symlink(run, &to).unwrap();
            }
        }
    }
    let c = compare_json(r, fast.to_str().unwrap(), again.to_str().unwrap());
    assert!(c.enough_runs);
    for row in &c.metrics {
        let v = verdict(&c, row.metric);
        assert!(
            !matches!(v, Some(Verdict::Better | Verdict::Worse)),
            "{:?}: {v:?} ({})",
            row.metric,
            row.versus_baseline[0].summary
        );
    }
    // How close the two means come (and so "no difference" rather than "inconclusive")
    // depends on how busy the machine is, so only the verdicts above are asserted; the
    // configurations are the same, so the checklist finds no difference.
    assert!(c.differences.is_empty(), "{:?}", c.differences);
}

#[test]
fn regress_fails_a_slowdown_and_passes_a_rerun() {
    let r = runs();
    let store = r.store.to_str().unwrap();
    let slow: Vec<&str> = r.slow.iter().map(|p| p.to_str().unwrap()).collect();
    let mut args = vec!["regress", "--baseline", "fast", "--store", store];
    args.extend(&slow);
    let (code, out, err) = sb(&args);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("REGRESSED"), "{out}");
    assert!(out.contains("REGRESSION in"), "{out}");
    assert!(out.contains("TPOT P50"), "{out}");
    let (code, out, err) = sb(&[
        "regress",
        "--baseline",
        "label:fast",
        "label:rerun",
        "--store",
        store,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("no regression"), "{out}");
    // One run on a side decides nothing statistically, but a gross slowdown (TPOT more
    // than doubled) is still flagged: a likely regression, no statistical claim, exit 3.
    let (code, out, _) = sb(&[
        "regress",
        "--baseline",
        "label:fast",
        slow[0],
        "--store",
        store,
    ]);
    assert_eq!(code, Some(3), "{out}");
    assert!(out.contains("LIKELY REGRESSION in"), "{out}");
    // (The verdict wraps at 100 columns: read it as one line.)
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("no statistical claim"), "{out}");
    // One run against itself: no change to flag, and nothing decided: a usage error, not
    // a pass.
    let fast = r.fast[0].to_str().unwrap();
    let (code, out, _) = sb(&["regress", "--baseline", fast, fast, "--store", store]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("NOT DECIDED"), "{out}");
    // The JSON says which metric regressed and by how much.
    let mut args = vec![
        "regress",
        "--baseline",
        "label:fast",
        "--json",
        "--store",
        store,
    ];
    args.extend(&slow);
    let (code, out, _) = sb(&args);
    assert_eq!(code, Some(1));
    let g: servebench::compare::regress::RegressionReport = serde_json::from_str(&out).unwrap();
    let tpot = g
        .metrics
        .iter()
        .find(|m| m.metric == Metric::TpotP50Ms)
        .unwrap();
    assert_eq!(tpot.regressed, Some(true));
    assert!(tpot.relative_difference.unwrap() > 0.5);
}

#[test]
fn history_lists_runs_and_survives_reindex() {
    let r = runs();
    let store = r.store.to_str().unwrap();
    let (code, out, err) = sb(&["history", "--json", "--limit", "100", "--store", store]);
    assert_eq!(code, Some(0), "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.len(), 15);
    // A row holds the run's own figures.
    let first = std::fs::canonicalize(&r.fast[0]).unwrap();
    let row = rows
        .iter()
        .find(|x| x["path"] == first.to_str().unwrap())
        .expect("fast-1 is listed");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.fast[0].join("run.json")).unwrap())
            .unwrap();
    assert_eq!(row["ttft_p99_ms"], doc["summary"]["ttft_ms"]["p99"]);
    assert_eq!(
        row["output_tokens_per_s"],
        doc["summary"]["output_tokens_per_s"]
    );
    assert_eq!(row["labels"], serde_json::json!(["fast"]));
    let id = format!("#{}", row["id"]);
    let (code, _, err) = sb(&["note", &id, "before the driver upgrade", "--store", store]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = sb(&[
        "label",
        r.fast[0].to_str().unwrap(),
        "golden",
        "--store",
        store,
    ]);
    assert_eq!(code, Some(0), "{err}");
    // Filters.
    let (_, out, _) = sb(&["history", "--model", "70b", "--json", "--store", store]);
    let slow: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(slow.len(), 5);
    let (_, out, _) = sb(&["history", "--label", "golden", "--store", store]);
    assert!(out.contains("fast-1") && !out.contains("fast-2"), "{out}");
    // Rebuilt from the folders: the same rows, labels and notes kept.
    let (code, out, err) = sb(&[
        "reindex",
        r.root.join("runs").to_str().unwrap(),
        "--store",
        store,
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Indexed 15 run(s)"), "{out}");
    let (_, out, _) = sb(&["history", "--json", "--limit", "100", "--store", store]);
    let again: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(again.len(), 15);
    let row = again
        .iter()
        .find(|x| x["path"] == first.to_str().unwrap())
        .unwrap();
    assert_eq!(row["labels"], serde_json::json!(["fast", "golden"]));
    assert_eq!(
        row["notes"],
        serde_json::json!(["before the driver upgrade"])
    );
    // A new database rebuilt from nothing but the folders lists every run again.
    let fresh = r.root.join("fresh.db");
    let (code, _, err) = sb(&[
        "reindex",
        r.root.join("runs").to_str().unwrap(),
        "--store",
        fresh.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (_, out, _) = sb(&["history", "--json", "--store", fresh.to_str().unwrap()]);
    let rebuilt: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(rebuilt.len(), 15);
}

#[test]
fn exports_read_as_the_other_tools_write() {
    let r = runs();
    let dir = r.fast[0].to_str().unwrap();
    let out = r.root.join("vllm.json");
    let (code, _, err) = sb(&[
        "export",
        dir,
        "--format",
        "vllm",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["completed"], 40);
    assert_eq!(v["max_concurrency"], 8);
    assert!(v["p99_ttft_ms"].as_f64().unwrap() > 0.0);
    let (code, csv, _) = sb(&["export", dir, "--format", "csv"]);
    assert_eq!(code, Some(0));
    assert_eq!(csv.lines().count(), 41);
    assert!(csv.starts_with("id,phase,"));
    let (code, a, _) = sb(&["export", dir, "--format", "aiperf"]);
    assert_eq!(code, Some(0));
    let a: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(a["request_count"]["avg"], 40.0);
    let (code, jsonl, _) = sb(&["export", dir, "--format", "aiperf-jsonl"]);
    assert_eq!(code, Some(0));
    assert_eq!(jsonl.lines().count(), 40);
    let dirs: Vec<&str> = r.slow.iter().map(|p| p.to_str().unwrap()).collect();
    let mut args = vec!["export", "--format", "csv-summary"];
    args.extend(&dirs);
    let (code, table, _) = sb(&args);
    assert_eq!(code, Some(0));
    assert_eq!(table.lines().count(), 6);
    let (code, _, err) = sb(&["export", dirs[0], dirs[1], "--format", "vllm"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("csv-summary takes several"), "{err}");
}

#[test]
fn a_run_is_kept_when_it_cannot_be_indexed_and_bad_labels_stop_it_first() {
    let root = temp_dir("history-store-fails");
    let common = [
        "run",
        "--sim-preset",
        "fast",
        "--requests",
        "8",
        "--concurrency",
        "2",
        "--warmup",
        "none",
        "--no-fluidity",
        "--no-server-metrics",
        "--no-gpu-metrics",
        "--quiet",
    ];
    // A store inside a regular file cannot be created: the run warns and keeps its folder.
    let blocker = root.join("not-a-folder");
    std::fs::write(&blocker, "x").unwrap();
    let store = blocker.join("history.db");
    let out = root.join("kept");
    let mut args = common.to_vec();
    args.extend([
        "--out",
        out.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    let (code, _, err) = sb(&args);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("WARNING: the run was not indexed"), "{err}");
    assert!(err.contains("servebench reindex"), "{err}");
    assert!(out.join("run.json").is_file() && out.join("requests.jsonl").is_file());
    // A label that cannot be one is refused before anything starts.
    let out = root.join("never");
    let mut args = common.to_vec();
    args.extend(["--out", out.to_str().unwrap(), "--label", "two words"]);
    let (code, _, err) = sb(&args);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--label"), "{err}");
    assert!(!out.exists());
    // --no-store leaves the history alone.
    let store = root.join("untouched.db");
    let out = root.join("unindexed");
    let mut args = common.to_vec();
    args.extend(["--out", out.to_str().unwrap(), "--no-store"]);
    let o = crate::common::servebench_command()
        .args(&args)
        .env("SERVEBENCH_STORE", &store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(out.join("run.json").is_file());
    assert!(!store.exists());
}
