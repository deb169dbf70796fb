//! Layout of a run folder and the files in it.

use super::folder::{self, RunFolder};
use crate::record::wire::WireRecord;
use crate::record::RequestRecord;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// `runs/<UTC date>-<time>-<ms><pid>` under the current directory: two runs started in the
/// same second (or in parallel) get different names.
pub fn default_run_dir(unix_us: u64) -> PathBuf {
    let iso = crate::clock::iso8601_ms(unix_us); // 2026-11-22T01:02:03.456Z
    let stamp: String = iso[..19]
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    let unique = format!(
        "{:03}{:x}",
        (unix_us / 1000) % 1000,
        std::process::id() % 0xfff
    );
    PathBuf::from("runs").join(format!("{}-{unique}", stamp.replace('T', "-")))
}

/// Files servebench writes into a run folder (what `--force` replaces).
pub const RUN_FILES: [&str; 10] = [
    folder::REQUESTS_JSONL,
    folder::RUN_JSON,
    folder::RUN_JSON_TMP,
    folder::PREFILL_CURVE_JSON,
    folder::TIMESERIES_CSV,
    folder::REQUESTS_PARQUET,
    folder::CHUNKS_PARQUET,
    folder::TIMESERIES_PARQUET,
    folder::REPORT_MD,
    folder::REPORT_HTML,
];

/// Why a run folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("{0} already holds a run (or other files): choose another --out, omit --out for a fresh folder, or pass --force to replace its run files")]
    NotEmpty(PathBuf),
    #[error("cannot write to the run folder {path}: {source}")]
    Unwritable {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The run folder to use: `out` (refused when it exists and is not empty, unless `force`),
/// or a fresh default one. Created and checked writable before anything starts.
pub fn prepare_run_dir(out: Option<&Path>, force: bool) -> Result<PathBuf, RunDirError> {
    let dir = match out {
        Some(p) => p.to_path_buf(),
        None => {
            let mut d = default_run_dir(crate::clock::RunClock::start().unix_us(0));
            let mut n = 1;
            while d.exists() {
                n += 1;
                d.set_extension(n.to_string());
            }
            d
        }
    };
    let unwritable = |source| RunDirError::Unwritable {
        path: dir.clone(),
        source,
    };
    let non_empty = std::fs::read_dir(&dir)
        .map(|mut it| it.next().is_some())
        .unwrap_or(false);
    if non_empty {
        if !force {
            return Err(RunDirError::NotEmpty(dir));
        }
        for f in RUN_FILES {
            let p = dir.join(f);
            if p.exists() {
                std::fs::remove_file(&p).map_err(unwritable)?;
            }
        }
    }
    std::fs::create_dir_all(&dir).map_err(unwritable)?;
    let probe = dir.join(".servebench-write-check");
    std::fs::write(&probe, b"").map_err(unwritable)?;
    std::fs::remove_file(&probe).map_err(unwritable)?;
    Ok(dir)
}

/// Writes `run.json` (pretty, atomically via a temporary file).
pub fn write_run_json(dir: &Path, value: &serde_json::Value) -> Result<()> {
    let run = RunFolder::new(dir);
    let tmp = run.run_json_tmp();
    let path = run.run_json();
    std::fs::write(&tmp, serde_json::to_vec_pretty(value)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Reads `requests.jsonl` back into records with times relative to `anchor_unix_us`.
/// A truncated last line (a crash mid-write) is skipped; other bad lines are errors.
pub fn read_requests(path: &Path, anchor_unix_us: u64) -> Result<Vec<RequestRecord>> {
    let mut out = Vec::new();
    for_each_request(path, anchor_unix_us, |r| out.push(r))?;
    Ok(out)
}

/// Hands each record of `requests.jsonl` to `f`, one line in memory at a time (a run of a
/// million requests is read back in the memory of one); returns how many there were.
pub fn for_each_request(
    path: &Path,
    anchor_unix_us: u64,
    mut f: impl FnMut(RequestRecord),
) -> Result<u64> {
    let mut n = 0;
    for_each_wire(path, |w| {
        f(w.into_record(anchor_unix_us));
        n += 1;
    })?;
    Ok(n)
}

/// Hands each line of `requests.jsonl` to `f`, parsed; the truncated-last-line rule of
/// [`read_requests`].
pub fn for_each_wire(path: &Path, mut f: impl FnMut(WireRecord)) -> Result<()> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::new();
    for i in 1.. {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .with_context(|| format!("reading {}", path.display()))?;
        if read == 0 {
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<WireRecord>(&line) {
            Ok(w) => f(w),
            // A last line without its newline was cut by a crash mid-write (possibly inside
            // a multi-byte character): everything before it is whole.
            Err(_) if line.last() != Some(&b'\n') => break,
            Err(e) => anyhow::bail!("{}:{i}: not a request record: {e}", path.display()),
        }
    }
    Ok(())
}

/// The earliest time in `requests.jsonl` (µs since the epoch), a safe anchor for reading
/// it back when the run's own anchor is unknown.
pub fn earliest_us(path: &Path) -> Result<u64> {
    let mut earliest = u64::MAX;
    for_each_wire(path, |w| {
        earliest = earliest.min(
            w.scheduled_at_us
                .unwrap_or(w.queued_at_us)
                .min(w.queued_at_us),
        );
    })?;
    Ok(if earliest == u64::MAX { 0 } else { earliest })
}
