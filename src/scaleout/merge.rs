//! Putting shards back together: every ordinal exactly once, clocks corrected, records in
//! ordinal order, so the union can be summarised by the same code as a single run.
//!
//! The checks ([`check`]) are pure and refuse, naming folders, shards and ordinals, any
//! set of folders that is not one plan's complete set of shards: a shard missing or given
//! twice, folders from different plans, records a shard does not own, ordinals twice, or a
//! shard whose ordinals have gaps (records lost). Percentiles are then computed from the
//! raw records of all shards together, never averaged across shards.

use super::clock::{ClockOffset, LARGE_OFFSET_MS};
use crate::artifacts::{HostInfo, RunReport};
use crate::record::{Phase, RequestRecord};
use crate::schedule::shard::Shard;
use crate::store::run_dir::earliest_us;
use crate::store::{read_requests, RunFolder};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The `kind` of `shard.json`.
pub const SHARD_KIND: &str = "servebench-shard";
/// Version of the `shard.json` format.
pub const SHARD_SCHEMA_VERSION: u32 = 1;
/// A shard that reached the common start later than this is flagged.
pub const LATE_START_MS: f64 = 100.0;

/// `shard.json`: what a shard of a plan records beside its ordinary run folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// Always [`SHARD_KIND`].
    pub kind: String,
    pub schema_version: u32,
    /// The plan's identity ([`super::plan::Plan::id`]).
    pub plan_id: String,
    /// This shard's index `i`.
    pub index: u32,
    /// The plan's shard count `N`.
    pub shards: u32,
    /// The machine it ran on.
    pub host: HostInfo,
    /// This machine's clock against the reference.
    pub clock: ClockOffset,
    /// The plan's common start, Unix µs (reference clock).
    pub planned_start_unix_us: u64,
    /// How late the measured phase started against the plan, ms.
    pub late_ms: f64,
    /// Whether this shard collected server and GPU metrics (only shard 0 does).
    pub server_metrics: bool,
}

/// What [`check`] needs of one folder.
#[derive(Debug, Clone)]
pub struct ShardView {
    pub dir: String,
    pub plan_id: String,
    pub index: u32,
    pub count: u32,
    /// Ordinals of its measured records, in any order.
    pub ordinals: Vec<u64>,
    /// Whether it may legitimately end early: a duration limit, or Ctrl-C.
    pub may_end_early: bool,
}

/// Why folders cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MergeError {
    #[error("no shard folders given")]
    NoShards,
    #[error("{a} and {b} come from different plans ({a_id} vs {b_id}): merge the shards of one plan only")]
    DifferentPlans {
        a: String,
        a_id: String,
        b: String,
        b_id: String,
    },
    #[error("{a} says {a_n} shards but {b} says {b_n}")]
    DifferentCounts {
        a: String,
        a_n: u32,
        b: String,
        b_n: u32,
    },
    #[error("shard {index}/{count} is given twice: {}: the same folder passed twice, or two runs with the same --shard", dirs.join(" and "))]
    DuplicateShard {
        index: u32,
        count: u32,
        dirs: Vec<String>,
    },
    #[error("missing shard{} {} of {count}: pass every shard's folder (the --out of `servebench run --plan --shard i/{count}`); a merge of fewer shards would report a smaller load than planned", if missing.len() > 1 { "s" } else { "" }, list(missing))]
    MissingShards { missing: Vec<u32>, count: u32 },
    #[error("{dir} (shard {index}/{count}) holds ordinals that are not its own (k mod {count} != {index}): {}", list(ordinals))]
    ForeignOrdinals {
        dir: String,
        index: u32,
        count: u32,
        ordinals: Vec<u64>,
    },
    #[error("ordinal{} recorded more than once: {}", if ordinals.len() > 1 { "s" } else { "" }, ordinals.iter().map(|(k, d)| format!("{k} (in {})", d.join(", "))).collect::<Vec<_>>().join("; "))]
    DuplicateOrdinals { ordinals: Vec<(u64, Vec<String>)> },
    #[error("{dir} (shard {index}/{count}) lacks ordinals {} ({total} in all): its records are incomplete (a killed shard? `servebench report {dir}` recovers what was written, but the load it reports is then not the plan's)", list(missing))]
    MissingOrdinals {
        dir: String,
        index: u32,
        count: u32,
        missing: Vec<u64>,
        total: usize,
    },
}

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    let mut s: Vec<String> = v.iter().take(10).map(|x| x.to_string()).collect();
    if v.len() > 10 {
        s.push("…".into());
    }
    s.join(", ")
}

/// Checks that `shards` are one plan's complete set and every ordinal is there exactly
/// once. `requests` is the plan's request limit: without an early end, shard `i` must hold
/// exactly its ordinals below it; otherwise a gap-free prefix of its ordinals.
/// Returns the shards in index order (positions into `shards`).
pub fn check(shards: &[ShardView], requests: Option<u64>) -> Result<Vec<usize>, MergeError> {
    let first = shards.first().ok_or(MergeError::NoShards)?;
    check_one_plan(first, &shards[1..])?;
    let count = first.count;
    let by_index = positions_by_index(shards, count)?;
    // Ordinals: each its shard's own, each once, and each shard's a gap-free run.
    check_ordinals_owned_once(shards, count)?;
    check_ordinals_complete(shards, count, requests)?;
    Ok(by_index.into_values().map(|p| p[0]).collect())
}

/// The other shards come from `first`'s plan and say the same shard count.
fn check_one_plan(first: &ShardView, others: &[ShardView]) -> Result<(), MergeError> {
    for s in others {
        if s.plan_id != first.plan_id {
            return Err(MergeError::DifferentPlans {
                a: first.dir.clone(),
                a_id: first.plan_id.clone(),
                b: s.dir.clone(),
                b_id: s.plan_id.clone(),
            });
        }
        if s.count != first.count {
            return Err(MergeError::DifferentCounts {
                a: first.dir.clone(),
                a_n: first.count,
                b: s.dir.clone(),
                b_n: s.count,
            });
        }
    }
    Ok(())
}

/// The shards' positions by shard index, when each of the `count` indices is there once.
fn positions_by_index(
    shards: &[ShardView],
    count: u32,
) -> Result<BTreeMap<u32, Vec<usize>>, MergeError> {
    let mut by_index: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (pos, s) in shards.iter().enumerate() {
        by_index.entry(s.index).or_default().push(pos);
    }
    if let Some((&index, positions)) = by_index.iter().find(|(_, p)| p.len() > 1) {
        return Err(MergeError::DuplicateShard {
            index,
            count,
            dirs: positions.iter().map(|&p| shards[p].dir.clone()).collect(),
        });
    }
    let missing: Vec<u32> = (0..count).filter(|i| !by_index.contains_key(i)).collect();
    if !missing.is_empty() {
        return Err(MergeError::MissingShards { missing, count });
    }
    Ok(by_index)
}

/// Every ordinal is its shard's own (k mod `count` = index) and recorded once over all
/// shards.
fn check_ordinals_owned_once(shards: &[ShardView], count: u32) -> Result<(), MergeError> {
    let mut seen: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for s in shards {
        let shard = Shard {
            index: s.index,
            count,
        };
        let foreign: Vec<u64> = s
            .ordinals
            .iter()
            .copied()
            .filter(|&k| !shard.owns(k))
            .collect();
        if !foreign.is_empty() {
            return Err(MergeError::ForeignOrdinals {
                dir: s.dir.clone(),
                index: s.index,
                count,
                ordinals: foreign,
            });
        }
        for &k in &s.ordinals {
            seen.entry(k).or_default().push(s.dir.clone());
        }
    }
    let dups: Vec<(u64, Vec<String>)> = seen
        .iter()
        .filter(|(_, d)| d.len() > 1)
        .map(|(k, d)| (*k, d.clone()))
        .collect();
    if !dups.is_empty() {
        return Err(MergeError::DuplicateOrdinals { ordinals: dups });
    }
    Ok(())
}

/// Each shard's ordinals are a gap-free run: all of its share below the plan's request
/// limit `requests`, or (when it may have ended early) all of it up to the highest it sent.
fn check_ordinals_complete(
    shards: &[ShardView],
    count: u32,
    requests: Option<u64>,
) -> Result<(), MergeError> {
    for s in shards {
        let shard = Shard {
            index: s.index,
            count,
        };
        let have: std::collections::BTreeSet<u64> = s.ordinals.iter().copied().collect();
        let highest = have.iter().next_back().copied();
        // The ordinals it must hold: all of its share below the request limit, or (when it
        // may have ended early) all of its share up to the highest it sent.
        let expected_n = match (requests, s.may_end_early, highest) {
            (Some(r), false, _) => shard.share_of_count(r),
            (_, _, Some(h)) => (h - u64::from(s.index)) / u64::from(count) + 1,
            (_, _, None) => 0,
        };
        let missing: Vec<u64> = (0..expected_n)
            .map(|j| u64::from(s.index) + j * u64::from(count))
            .filter(|k| !have.contains(k))
            .collect();
        if !missing.is_empty() {
            return Err(MergeError::MissingOrdinals {
                dir: s.dir.clone(),
                index: s.index,
                count,
                total: missing.len(),
                missing,
            });
        }
    }
    Ok(())
}

/// One shard folder, read.
pub struct ShardFolder {
    pub dir: PathBuf,
    pub info: ShardRecord,
    pub report: RunReport,
}

/// Reads `shard.json` and the finished `run.json` of a shard folder.
pub fn read_shard(dir: &Path) -> Result<ShardFolder> {
    let folder = RunFolder::new(dir);
    let path = folder.shard_json();
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} has no shard.json: is it the --out of `servebench run --plan --shard i/N`?",
            dir.display()
        )
    })?;
    let info: ShardRecord = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a servebench shard.json", path.display()))?;
    if info.kind != SHARD_KIND || info.schema_version != SHARD_SCHEMA_VERSION {
        bail!(
            "{}: kind `{}` version {}, expected `{SHARD_KIND}` version {SHARD_SCHEMA_VERSION}",
            path.display(),
            info.kind,
            info.schema_version
        );
    }
    let run_json = folder.run_json();
    let value: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&run_json).with_context(|| format!("reading {}", run_json.display()))?,
    )
    .with_context(|| format!("{} is not JSON", run_json.display()))?;
    if value.get("status").and_then(|s| s.as_str()) == Some("running") {
        bail!(
            "{} did not finish (its run.json still says running): run `servebench report {}` to recover it, or run the shard again",
            dir.display(),
            dir.display()
        );
    }
    let report: RunReport = serde_json::from_value(value).with_context(|| {
        format!(
            "{} is not a run.json this servebench reads",
            run_json.display()
        )
    })?;
    Ok(ShardFolder {
        dir: dir.to_path_buf(),
        info,
        report,
    })
}

/// Shards merged: measured records of all shards on one timeline, in ordinal order.
pub struct Merged {
    /// Shards in index order.
    pub shards: Vec<ShardFolder>,
    /// Every measured record, times in ns from `base_unix_us` on the reference clock.
    pub records: Vec<RequestRecord>,
    /// The merged timeline's origin, Unix µs (reference clock).
    pub base_unix_us: u64,
    /// Notes for the report: large clock offsets, late starts, generators that fell behind.
    pub notes: Vec<String>,
}

/// Reads, checks and merges shard folders.
pub fn merge(dirs: &[PathBuf]) -> Result<Merged> {
    let folders: Vec<ShardFolder> = dirs.iter().map(|d| read_shard(d)).collect::<Result<_>>()?;
    // Each shard's clock, shifted onto the reference: reference = local − offset.
    let offsets: Vec<i64> = folders.iter().map(|f| f.info.clock.applied_us()).collect();
    let mut base = i64::MAX;
    for (f, off) in folders.iter().zip(&offsets) {
        let jsonl = RunFolder::new(&f.dir).requests_jsonl();
        let earliest = earliest_us(&jsonl)? as i64;
        let start = f.report.started_at_us as i64;
        let local = if earliest > 0 {
            earliest.min(start)
        } else {
            start
        };
        base = base.min(local - off);
    }
    let base = base.max(0) as u64;
    let mut views = Vec::new();
    let mut per_shard: Vec<Vec<RequestRecord>> = Vec::new();
    for (f, off) in folders.iter().zip(&offsets) {
        let anchor = (base as i64 + off).max(0) as u64;
        let jsonl = RunFolder::new(&f.dir).requests_jsonl();
        let records: Vec<RequestRecord> = read_requests(&jsonl, anchor)?
            .into_iter()
            .filter(|r| r.phase == Phase::Measure)
            .collect();
        let cfg = &f.report.config;
        views.push(ShardView {
            dir: f.dir.display().to_string(),
            plan_id: f.info.plan_id.clone(),
            index: f.info.index,
            count: f.info.shards,
            ordinals: records.iter().map(|r| r.id).collect(),
            may_end_early: cfg.limits.duration.is_some() || f.report.interrupted,
        });
        per_shard.push(records);
    }
    let requests = folders[0].report.config.limits.requests;
    let order = check(&views, requests)?;
    let mut notes = Vec::new();
    for f in &folders {
        let i = f.info.index;
        let c = &f.info.clock;
        if c.applied_ms.abs() >= LARGE_OFFSET_MS {
            notes.push(format!(
                "shard {i} ({}): clock offset {:+.1} ms ({}, ± {:.1} ms) corrected; its send times were that far off the others' unless it started on the corrected clock",
                f.info.host.hostname, c.applied_ms, c.method, c.uncertainty_ms
            ));
        }
        if f.info.late_ms >= LATE_START_MS {
            notes.push(format!(
                "shard {i} ({}): reached the common start {:.0} ms late; its first requests went out late",
                f.info.host.hostname, f.info.late_ms
            ));
        }
        if !f.report.generator.kept_up {
            notes.push(format!(
                "shard {i} ({}): its generator did not keep up: {}",
                f.info.host.hostname,
                f.report.generator.notes.join("; ")
            ));
        }
    }
    let mut records: Vec<RequestRecord> = per_shard.into_iter().flatten().collect();
    records.sort_by_key(|r| r.id);
    let mut folders: Vec<Option<ShardFolder>> = folders.into_iter().map(Some).collect();
    let shards = order
        .into_iter()
        .filter_map(|p| folders[p].take())
        .collect();
    Ok(Merged {
        shards,
        records,
        base_unix_us: base,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(dir: &str, index: u32, count: u32, ordinals: &[u64]) -> ShardView {
        ShardView {
            dir: dir.into(),
            plan_id: "p1".into(),
            index,
            count,
            ordinals: ordinals.to_vec(),
            may_end_early: false,
        }
    }

    #[test]
    fn a_complete_set_passes_in_index_order() {
        let v = [view("b", 1, 2, &[1, 3, 5]), view("a", 0, 2, &[0, 2, 4])];
        assert_eq!(check(&v, Some(6)), Ok(vec![1, 0]));
        // 5 requests over 2 shards: 0,2,4 and 1,3.
        let v = [view("a", 0, 2, &[4, 0, 2]), view("b", 1, 2, &[1, 3])];
        assert_eq!(check(&v, Some(5)), Ok(vec![0, 1]));
    }

    #[test]
    fn missing_and_duplicated_shards_are_named() {
        let v = [view("a", 0, 3, &[0, 3]), view("c", 2, 3, &[2])];
        let e = check(&v, Some(5)).unwrap_err();
        assert_eq!(
            e,
            MergeError::MissingShards {
                missing: vec![1],
                count: 3
            }
        );
        assert!(e.to_string().starts_with("missing shard 1 of 3"), "{e}");
        let v = [
            view("a", 0, 2, &[0]),
            view("a2", 0, 2, &[0]),
            view("b", 1, 2, &[1]),
        ];
        let e = check(&v, Some(2)).unwrap_err();
        assert!(
            e.to_string().contains("shard 0/2 is given twice: a and a2"),
            "{e}"
        );
        assert_eq!(check(&[], None), Err(MergeError::NoShards));
    }

    #[test]
    fn ordinals_must_be_own_once_and_complete() {
        let v = [view("a", 0, 2, &[0, 1]), view("b", 1, 2, &[1])];
        let e = check(&v, Some(2)).unwrap_err();
        assert!(
            e.to_string()
                .contains("a (shard 0/2) holds ordinals that are not its own"),
            "{e}"
        );
        let v = [view("a", 0, 2, &[0, 2, 2]), view("b", 1, 2, &[1, 3])];
        let e = check(&v, Some(4)).unwrap_err();
        assert_eq!(
            e,
            MergeError::DuplicateOrdinals {
                ordinals: vec![(2, vec!["a".into(), "a".into()])]
            }
        );
        let v = [view("a", 0, 2, &[0, 4]), view("b", 1, 2, &[1, 3, 5])];
        let e = check(&v, Some(6)).unwrap_err();
        assert!(
            e.to_string()
                .contains("a (shard 0/2) lacks ordinals 2 (1 in all)"),
            "{e}"
        );
        // Request limit not reached: complete share still required without an early end.
        let v = [view("a", 0, 2, &[0]), view("b", 1, 2, &[1])];
        assert!(check(&v, Some(4)).is_err());
        // With a duration limit a gap-free prefix is fine, a gap is not.
        let mut v = [view("a", 0, 2, &[0, 2]), view("b", 1, 2, &[1])];
        v[0].may_end_early = true;
        v[1].may_end_early = true;
        assert!(check(&v, Some(100)).is_ok());
        v[0].ordinals = vec![0, 4];
        assert!(check(&v, None).is_err());
    }

    #[test]
    fn different_plans_are_refused() {
        let mut v = [view("a", 0, 2, &[0]), view("b", 1, 2, &[1])];
        v[1].plan_id = "p2".into();
        let e = check(&v, Some(2)).unwrap_err();
        assert!(e.to_string().contains("different plans"), "{e}");
        let v = [view("a", 0, 2, &[0]), view("b", 1, 3, &[1])];
        assert!(matches!(
            check(&v, Some(2)),
            Err(MergeError::DifferentCounts { .. })
        ));
    }
}
