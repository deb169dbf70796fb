//! Nothing lost: `kill -9` at 20 moments of a run leaves a `requests.jsonl` of whole lines,
//! and `servebench report` rebuilds the run from it, marked interrupted.

use crate::common::{servebench, temp_dir};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Lines of `requests.jsonl` so far (0 when it does not exist yet).
fn lines(path: &std::path::Path) -> usize {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

#[test]
fn kill_9_at_twenty_moments_loses_nothing_written() {
    // Kill points: once the run has written this many records (records are flushed in whole
    // lines at least every half second), spread over warm-up and measurement.
    let points = [
        0usize, 1, 2, 3, 5, 8, 12, 16, 20, 25, 30, 40, 50, 60, 75, 90, 110, 130, 160, 200,
    ];
    for (i, &after) in points.iter().enumerate() {
        let dir = temp_dir(&format!("kill-{i}"));
        let mut child = crate::common::servebench_command()
            .args([
                "run",
                "--requests",
                "100000",
                "--concurrency",
                "8",
                "--warmup",
                "10",
                "--input-tokens",
                "16",
                "--output-tokens",
                "32",
                "--sim-ttft-ms",
                "2",
                "--sim-itl-ms",
                "1",
                "--quiet",
                "--no-fluidity",
                "--out",
            ])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let jsonl = dir.join("requests.jsonl");
        let start = Instant::now();
        // The run has started once run.json says "running"; then wait for the records.
        while !std::fs::read_to_string(dir.join("run.json")).is_ok_and(|t| t.contains("running"))
            || lines(&jsonl) < after
        {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "point {i}: no progress"
            );
            // Poll, leaving the cores to the servers under test.
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Every complete line parses; only a last line without its newline may be cut.
        let bytes = std::fs::read(&jsonl).unwrap_or_default();
        let whole = bytes.iter().filter(|&&c| c == b'\n').count();
        for (n, line) in bytes.split(|&c| c == b'\n').take(whole).enumerate() {
            assert!(
                serde_json::from_slice::<serde_json::Value>(line).is_ok(),
                "point {i}: line {} is not whole JSON",
                n + 1
            );
        }
        // The report rebuilds the run.
        let o = servebench(&["report", dir.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        if !jsonl.exists() {
            assert_eq!(o.status.code(), Some(2), "point {i}: {err}");
            assert!(err.contains("before its first request"), "{err}");
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "point {i}: {err}");
        assert!(err.contains("Recovered"), "{err}");
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(run["interrupted"], true);
        assert_eq!(run["recovered"], true);
        let measured = bytes
            .split(|&c| c == b'\n')
            .take(whole)
            .filter(|l| l.windows(17).any(|w| w == b"\"phase\":\"measure\""))
            .count() as u64;
        assert_eq!(run["summary"]["requests"]["total"], measured, "point {i}");
        // Reading it again is now a plain report of the recovered run.
        let o = servebench(&["report", dir.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("Recovered"));
    }
}
