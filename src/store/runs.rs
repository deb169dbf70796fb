//! Reading finished runs back from their folders for `compare`, `regress` and `export`:
//! `run.json` as its typed [`RunReport`], `requests.jsonl` as wire records (absolute
//! times, as written), and what a folder named on the command line holds.
//!
//! A folder is one of three things: a run folder (`run.json`), a test folder (`test.json`
//! and one run folder per load level), or a plain folder of run folders (one system's
//! repeated runs). A test folder stands for the level runs that hold its answer when the
//! test names them (throughput's sustainable level, capacity's highest passing concurrency,
//! ttft's measured run): those are what "is A faster than B" compares. A sweep's answer is
//! all of its levels (curve, ITL, …), read from `test.json`'s `levels[].run` when it lists
//! them, else from its subfolders that hold a `run.json`.

use super::folder::{RunFolder, TestFolder};
use crate::artifacts::RunReport;
use crate::record::wire::WireRecord;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// What a folder named on the command line holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Folder {
    /// A run folder.
    Run(PathBuf),
    /// A test procedure's folder and its level runs, in order: the answer's level runs
    /// when the test names them (`answer`), else every level.
    Test {
        dir: PathBuf,
        runs: Vec<PathBuf>,
        answer: bool,
    },
    /// A plain folder and the run folders directly inside it, sorted by name.
    Group { dir: PathBuf, runs: Vec<PathBuf> },
}

impl Folder {
    /// The run folders it stands for.
    pub fn runs(&self) -> Vec<PathBuf> {
        match self {
            Folder::Run(p) => vec![p.clone()],
            Folder::Test { runs, .. } | Folder::Group { runs, .. } => runs.clone(),
        }
    }
}

/// Names of the subfolders of `dir` that hold a `run.json`, sorted.
pub fn run_subfolders(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| RunFolder::new(e.path()).holds_run())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Indices in `levels` of the runs that hold a test's answer, when the test names them:
/// throughput's `sustainable_level`, capacity's passing level at `max_concurrency` (the
/// last, if extended), ttft's `measure` level. `None` for the other tests and for a test
/// with no answer. Pure.
pub fn answer_levels(doc: &serde_json::Value) -> Option<Vec<usize>> {
    let levels = doc.get("levels")?.as_array()?;
    let result = doc.get("result")?;
    let picked: Vec<usize> = match doc.get("test")?.as_str()? {
        "throughput" => vec![usize::try_from(result.get("sustainable_level")?.as_u64()?).ok()?],
        "capacity" => {
            let c = result.get("max_concurrency")?.as_u64()?;
            let i = levels.iter().rposition(|l| {
                l["load"]["concurrency"].as_u64() == Some(c) && l["verdict"] == "pass"
            })?;
            vec![i]
        }
        "ttft" => levels
            .iter()
            .enumerate()
            .filter(|(_, l)| l["role"] == "measure")
            .map(|(i, _)| i)
            .collect(),
        _ => return None,
    };
    (!picked.is_empty() && picked.iter().all(|&i| i < levels.len())).then_some(picked)
}

/// The level runs of a test folder and whether they are its answer's only (see
/// [`answer_levels`]); otherwise every level: `test.json`'s `levels[].run` (relative to the
/// folder) when it lists them, else its subfolders holding a `run.json`.
pub fn test_runs(dir: &Path) -> Result<(Vec<PathBuf>, bool)> {
    let doc = read_test_json(dir)?;
    if let Some(picked) = answer_levels(&doc) {
        let runs: Vec<PathBuf> = picked
            .iter()
            .filter_map(|&i| doc["levels"][i]["run"].as_str())
            .map(|r| dir.join(r))
            .filter(|p| RunFolder::new(p).holds_run())
            .collect();
        if !runs.is_empty() {
            return Ok((runs, true));
        }
    }
    Ok((test_levels(dir)?, false))
}

fn read_test_json(dir: &Path) -> Result<serde_json::Value> {
    let path = TestFolder::new(dir).test_json();
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

/// The level runs of a test folder: `test.json`'s `levels[].run` (relative to the folder)
/// when it lists them, else its subfolders holding a `run.json`.
pub fn test_levels(dir: &Path) -> Result<Vec<PathBuf>> {
    let doc = read_test_json(dir)?;
    let listed: Option<Vec<PathBuf>> = doc.get("levels").and_then(|l| l.as_array()).map(|levels| {
        levels
            .iter()
            .filter_map(|l| l.get("run").and_then(|r| r.as_str()))
            .map(|r| dir.join(r))
            .filter(|p| RunFolder::new(p).holds_run())
            .collect()
    });
    Ok(listed.unwrap_or_else(|| {
        run_subfolders(dir)
            .into_iter()
            .map(|n| dir.join(n))
            .collect()
    }))
}

/// What `dir` holds (see the module documentation).
pub fn classify(dir: &Path) -> Result<Folder> {
    if !dir.is_dir() {
        bail!("{} is not a folder", dir.display());
    }
    if TestFolder::new(dir).holds_test() {
        let (runs, answer) = test_runs(dir)?;
        if runs.is_empty() {
            bail!("the test folder {} holds no level runs yet", dir.display());
        }
        return Ok(Folder::Test {
            dir: dir.to_path_buf(),
            runs,
            answer,
        });
    }
    if RunFolder::new(dir).holds_run() {
        return Ok(Folder::Run(dir.to_path_buf()));
    }
    let runs: Vec<PathBuf> = run_subfolders(dir)
        .into_iter()
        .map(|n| dir.join(n))
        .collect();
    if runs.is_empty() {
        bail!(
            "{} holds no run.json, no test.json and no run folders: give a folder written by `servebench run` (its --out)",
            dir.display()
        );
    }
    Ok(Folder::Group {
        dir: dir.to_path_buf(),
        runs,
    })
}

/// A finished run's `run.json` as its report. A run that never finished (its `run.json`
/// still says `running`) is refused with the command that recovers it.
pub fn read_report(dir: &Path) -> Result<RunReport> {
    let path = RunFolder::new(dir).run_json();
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} has no run.json: is it a run folder (the --out of `servebench run`)?",
            dir.display()
        )
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if value.get("status").and_then(|s| s.as_str()) == Some("running") {
        bail!(
            "{} belongs to a run that never finished: `servebench report {}` rebuilds it from requests.jsonl first",
            path.display(),
            dir.display()
        );
    }
    serde_json::from_value(value).with_context(|| {
        format!(
            "{} is not a run.json this version of servebench reads",
            path.display()
        )
    })
}

/// Every line of a run's `requests.jsonl`, as written. A last line cut by a crash is
/// skipped; any other bad line is an error naming it.
pub fn read_wire_records(dir: &Path) -> Result<Vec<WireRecord>> {
    let path = RunFolder::new(dir).requests_jsonl();
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<WireRecord>(line) {
            Ok(w) => out.push(w),
            Err(_) if i + 1 == lines.len() => break,
            Err(e) => bail!("{}:{}: not a request record: {e}", path.display(), i + 1),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/run-sim");

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sb-runs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn copy_run(to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for f in ["run.json", "requests.jsonl"] {
            std::fs::copy(Path::new(FIXTURE).join(f), to.join(f)).unwrap();
        }
    }

    #[test]
    fn folders_are_runs_tests_or_groups() {
        let root = scratch("classify");
        copy_run(&root.join("group/b"));
        copy_run(&root.join("group/a"));
        std::fs::create_dir_all(root.join("group/empty")).unwrap();
        assert_eq!(
            classify(&root.join("group/a")).unwrap(),
            Folder::Run(root.join("group/a"))
        );
        assert_eq!(
            classify(&root.join("group")).unwrap().runs(),
            vec![root.join("group/a"), root.join("group/b")]
        );
        // A test folder lists its levels in test.json order…
        copy_run(&root.join("test/levels/c8"));
        copy_run(&root.join("test/levels/c1"));
        std::fs::write(
            root.join("test/test.json"),
            r#"{"test": "curve", "levels": [{"run": "levels/c8"}, {"run": "levels/c1"}]}"#,
        )
        .unwrap();
        let t = classify(&root.join("test")).unwrap();
        assert!(matches!(t, Folder::Test { .. }));
        assert_eq!(
            t.runs(),
            vec![root.join("test/levels/c8"), root.join("test/levels/c1")]
        );
        // A throughput test stands for its sustainable level (the other tests' answers in
        // `answer_levels_are_the_levels_a_test_stands_for`).
        copy_run(&root.join("tp/levels/a"));
        copy_run(&root.join("tp/levels/b"));
        std::fs::write(
            root.join("tp/test.json"),
            r#"{"test": "throughput", "result": {"sustainable_level": 1},
                "levels": [{"run": "levels/a"}, {"run": "levels/b"}]}"#,
        )
        .unwrap();
        let t = classify(&root.join("tp")).unwrap();
        assert_eq!(
            t,
            Folder::Test {
                dir: root.join("tp"),
                runs: vec![root.join("tp/levels/b")],
                answer: true
            }
        );
        // …or, without a list, is its subfolders with a run.json.
        copy_run(&root.join("t2/x"));
        std::fs::write(root.join("t2/test.json"), r#"{"test": "ttft"}"#).unwrap();
        assert_eq!(
            classify(&root.join("t2")).unwrap().runs(),
            vec![root.join("t2/x")]
        );
        let err = classify(&root.join("group/empty")).unwrap_err().to_string();
        assert!(err.contains("no run.json"), "{err}");
        assert!(classify(&root.join("nope")).is_err());
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn answer_levels_are_the_levels_a_test_stands_for() {
        // A capacity test stands for its passing level at the maximum, a ttft test for its
        // measured run.
        let doc = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        let capacity = doc(
            r#"{"test": "capacity", "result": {"max_concurrency": 8}, "levels": [
                {"load": {"concurrency": 1}, "verdict": "measured"},
                {"load": {"concurrency": 8}, "verdict": "pass"},
                {"load": {"concurrency": 16}, "verdict": "fail"},
                {"load": {"concurrency": 8}, "verdict": "pass"}]}"#,
        );
        assert_eq!(answer_levels(&capacity), Some(vec![3]));
        let ttft = doc(r#"{"test": "ttft", "result": {}, "levels": [
                {"role": "estimate"}, {"role": "measure"}]}"#);
        assert_eq!(answer_levels(&ttft), Some(vec![1]));
        // No answer, an answer out of range, or a sweep: every level.
        assert_eq!(
            answer_levels(&doc(
                r#"{"test": "throughput", "result": {"sustainable_level": null}, "levels": []}"#
            )),
            None
        );
        assert_eq!(
            answer_levels(&doc(
                r#"{"test": "throughput", "result": {"sustainable_level": 5}, "levels": [{}]}"#
            )),
            None
        );
        assert_eq!(
            answer_levels(&doc(r#"{"test": "curve", "result": {}, "levels": [{}]}"#)),
            None
        );
    }

    #[test]
    fn reports_and_records_read_back() {
        let r = read_report(Path::new(FIXTURE)).unwrap();
        assert_eq!(r.config.seed, 7);
        let w = read_wire_records(Path::new(FIXTURE)).unwrap();
        assert_eq!(w.len() as u64, r.summary.requests.total);
        // A run that is still `running` is refused with the way out.
        let root = scratch("running");
        std::fs::write(root.join("run.json"), r#"{"status": "running"}"#).unwrap();
        let err = read_report(&root).unwrap_err().to_string();
        assert!(err.contains("servebench report"), "{err}");
        // A cut last line is skipped; a bad line in the middle is an error.
        let lines: Vec<&str> = include_str!("../../tests/fixtures/run-sim/requests.jsonl")
            .lines()
            .collect();
        std::fs::write(
            root.join("requests.jsonl"),
            format!("{}\n{}\n{{\"id\": 9", lines[0], lines[1]),
        )
        .unwrap();
        assert_eq!(read_wire_records(&root).unwrap().len(), 2);
        std::fs::write(
            root.join("requests.jsonl"),
            format!("{}\nnot json\n{}\n", lines[0], lines[1]),
        )
        .unwrap();
        let err = read_wire_records(&root).unwrap_err().to_string();
        assert!(err.contains("requests.jsonl:2"), "{err}");
        std::fs::remove_dir_all(root).unwrap();
    }
}
