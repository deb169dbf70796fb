//! Layout of a run folder and the files in it.

use crate::record::wire::WireRecord;
use crate::record::RequestRecord;
use anyhow::{Context, Result};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// `runs/<UTC date>-<time>` under the current directory.
pub fn default_run_dir(unix_us: u64) -> PathBuf {
    let iso = crate::clock::iso8601_ms(unix_us); // 2026-11-22T01:02:03.456Z
    let stamp: String = iso[..19]
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    PathBuf::from("runs").join(stamp.replace('T', "-"))
}

/// Writes `run.json` (pretty, atomically via a temporary file).
pub fn write_run_json(dir: &Path, value: &serde_json::Value) -> Result<()> {
    let tmp = dir.join("run.json.tmp");
    let path = dir.join("run.json");
    std::fs::write(&tmp, serde_json::to_vec_pretty(value)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Reads `requests.jsonl` back into records with times relative to `anchor_unix_us`.
/// A truncated last line (a crash mid-write) is skipped; other bad lines are errors.
pub fn read_requests(path: &Path, anchor_unix_us: u64) -> Result<Vec<RequestRecord>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let lines: Vec<String> = std::io::BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<WireRecord>(line) {
            Ok(w) => out.push(w.into_record(anchor_unix_us)),
            Err(_) if i + 1 == lines.len() => break,
            Err(e) => anyhow::bail!("{}:{}: not a request record: {e}", path.display(), i + 1),
        }
    }
    Ok(out)
}
