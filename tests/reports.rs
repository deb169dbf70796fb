//! `report.md` and `report.html` from real runs against the simulator: written by `run`,
//! rewritten by `servebench report`, every chart with data, and a run whose reports cannot be
//! written still complete. (The browser test, `browser.rs`, opens the HTML in Chromium.)

use crate::common::{servebench, temp_dir};
use std::path::Path;

fn run_fast(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "--requests",
        "40",
        "--concurrency",
        "4",
        "--warmup",
        "none",
        "--no-fluidity",
        "--sim-preset",
        "fast",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend(extra);
    servebench(&args)
}

/// `data-chart` id and `data-points` of every chart in an HTML report.
fn charts(html: &str) -> Vec<(String, usize)> {
    html.split("<svg ")
        .skip(1)
        .map(|svg| {
            let attr = |name: &str| {
                svg.split(&format!(" {name}=\""))
                    .nth(1)
                    .and_then(|s| s.split('"').next())
                    .unwrap_or("")
                    .to_string()
            };
            (attr("data-chart"), attr("data-points").parse().unwrap_or(0))
        })
        .collect()
}

#[test]
fn a_run_writes_both_reports_and_report_rewrites_them() {
    let dir = temp_dir("reports");
    let o = run_fast(
        &dir,
        &["--hardware", "test rig", "--note", "guardrails: off"],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("report.html (charts) · report.md"),
        "{stdout}"
    );

    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for needle in [
        "## Minimum report (draft Appendix C.1)",
        "=== LLM Benchmark Report (Minimum) ===",
        "- Hardware: test rig",
        "- Request Count: 40 (40 completed, 0 failed)",
        "- Guardrail configuration: guardrails: off; 0 requests refused",
        "## 1. System identification",
        "## 2. Test configuration",
        "## 3. Results",
        "## 4. Detailed results",
        "**Time to first token (draft Table 1)**",
        "## 5. Methodology compliance",
        "## 6. Reproduction",
        "- **Workload hash:** sha256:",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}:\n{md}");
    }

    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let found = charts(&html);
    let ids: Vec<&str> = found.iter().map(|c| c.0.as_str()).collect();
    for id in [
        "ttft-cdf",
        "ttft-hist",
        "itl-hist",
        "token-timeline",
        "throughput-over-time",
        "concurrency-over-time",
    ] {
        assert!(ids.contains(&id), "no chart {id} in {ids:?}");
    }
    assert!(
        found.iter().all(|c| c.1 > 0),
        "a chart without data: {found:?}"
    );
    // The C.1 figures on the page are the run's own.
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let p99 = run["summary"]["ttft_ms"]["p99"].as_f64().unwrap();
    assert!(md.contains(&format!("- TTFT P99: {p99:.1} ms")), "{md}");

    // `report` writes the same pages again (the run folder may have moved: it says where
    // it is now).
    std::fs::remove_file(dir.join("report.md")).unwrap();
    std::fs::remove_file(dir.join("report.html")).unwrap();
    let o = servebench(&["report", dir.to_str().unwrap(), "--format", "all"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("minimum report, draft Appendix C.1"));
    assert_eq!(std::fs::read_to_string(dir.join("report.md")).unwrap(), md);
    assert_eq!(
        charts(&std::fs::read_to_string(dir.join("report.html")).unwrap()),
        found
    );

    // One format to stdout or to a file; --output is for one file only.
    let o = servebench(&["report", dir.to_str().unwrap(), "--format", "md", "-o", "-"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), md);
    let elsewhere = temp_dir("reports-elsewhere").join("page.html");
    let o = servebench(&[
        "report",
        dir.to_str().unwrap(),
        "--format",
        "html",
        "--output",
        elsewhere.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(charts(&std::fs::read_to_string(&elsewhere).unwrap()), found);
    let o = servebench(&["report", dir.to_str().unwrap(), "--output", "x.md"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--output goes with --format md"));
}

#[test]
fn a_report_that_cannot_be_written_never_loses_the_run() {
    let dir = temp_dir("reports-unwritable");
    // A directory where the report's temporary file would go: writing it fails.
    std::fs::create_dir_all(dir.join("report.md.tmp/x")).unwrap();
    let o = run_fast(&dir, &["--force"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: the reports were not written"),
        "{stderr}"
    );
    assert!(stderr.contains("--format all"), "{stderr}");
    assert!(dir.join("run.json").exists() && dir.join("requests.jsonl").exists());
    let o = servebench(&["report", dir.to_str().unwrap(), "--format", "all"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--output PATH"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
