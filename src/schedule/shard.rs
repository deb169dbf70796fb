//! Which share of a plan one generator sends: shard `i` of `N` owns the global request
//! ordinals `k` with `k mod N = i` (and, in closed loop, the streams `s mod N = i`).
//!
//! Interleaving rather than contiguous blocks gives every shard the same mix of prompts
//! and the same pacing from the first request to the last. Pure: no I/O beyond reading the
//! two environment variables that schedulers set.

use super::LoadPattern;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use thiserror::Error;

/// Environment variable Kubernetes sets in every pod of an Indexed Job.
pub const K8S_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// Environment variable Slurm sets for every task of a step.
pub const SLURM_INDEX_ENV: &str = "SLURM_PROCID";

/// One shard of `count`: the ordinals `k` with `k mod count = index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// Why a shard could not be named.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShardError {
    #[error("--shard `{0}` is not of the form i/N (e.g. 0/4) or i")]
    Syntax(String),
    #[error("--shard {index}/{count}: the index must be below the count (0 to {last})", last = count.saturating_sub(1))]
    OutOfRange { index: u32, count: u32 },
    #[error("--shard names {given} shards but the plan was made for {plan}: make a new plan with --shards {given}, or pass i/{plan}")]
    CountMismatch { given: u32, plan: u32 },
    #[error("no shard index: pass --shard i/N, or run where {K8S_INDEX_ENV} (Kubernetes Indexed Job) or {SLURM_INDEX_ENV} (Slurm) is set")]
    Missing,
    #[error("{var}=`{value}` is not a shard index (a whole number)")]
    BadEnv { var: &'static str, value: String },
}

impl Shard {
    /// The single shard of a plain run: owns everything.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Whether this shard sends global ordinal `k`.
    pub fn owns(&self, k: u64) -> bool {
        k % u64::from(self.count) == u64::from(self.index)
    }

    /// How many of the global ordinals `0..total` this shard owns.
    pub fn share_of_count(&self, total: u64) -> u64 {
        let (i, n) = (u64::from(self.index), u64::from(self.count));
        if total <= i {
            0
        } else {
            (total - i).div_ceil(n)
        }
    }

    /// This shard's load: closed loop, its streams (`s mod N = i`); open loop, the global
    /// schedule (the shard sends its ordinals at their global times; the rate field is the
    /// whole load's); trace, unchanged.
    pub fn load_of(&self, load: LoadPattern) -> LoadPattern {
        match load {
            LoadPattern::Closed { concurrency } => LoadPattern::Closed {
                concurrency: self.share_of_count(u64::from(concurrency)) as u32,
            },
            other => other,
        }
    }

    /// Parses `i/N` or `i`; `plan_count` is the plan's N, which `i/N` must repeat.
    pub fn parse(text: &str, plan_count: u32) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(text.to_owned());
        let (i, n) = match text.trim().split_once('/') {
            Some((i, n)) => (i, Some(n)),
            None => (text.trim(), None),
        };
        let index: u32 = i.trim().parse().map_err(|_| syntax())?;
        if let Some(n) = n {
            let given: u32 = n.trim().parse().map_err(|_| syntax())?;
            if given != plan_count {
                return Err(ShardError::CountMismatch {
                    given,
                    plan: plan_count,
                });
            }
        }
        Shard::new(index, plan_count)
    }

    /// A checked shard.
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        if count == 0 || index >= count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    /// The shard from `--shard`, else from `JOB_COMPLETION_INDEX`, else `SLURM_PROCID`
    /// (`env` reads a variable; the real environment in the CLI, a map in tests).
    pub fn resolve(
        flag: Option<&str>,
        plan_count: u32,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Shard, ShardError> {
        if let Some(f) = flag {
            return Shard::parse(f, plan_count);
        }
        for var in [K8S_INDEX_ENV, SLURM_INDEX_ENV] {
            if let Some(v) = env(var).filter(|v| !v.trim().is_empty()) {
                let index: u32 = v.trim().parse().map_err(|_| ShardError::BadEnv {
                    var,
                    value: v.clone(),
                })?;
                return Shard::new(index, plan_count);
            }
        }
        if plan_count == 1 {
            return Ok(Shard::WHOLE);
        }
        Err(ShardError::Missing)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What the runner needs to run one shard of a plan.
#[derive(Debug, Clone)]
pub struct ShardRun {
    pub shard: Shard,
    /// The plan's common start, Unix µs on the reference clock.
    pub start_unix_us: u64,
    /// This machine's clock minus the reference clock, µs (positive: this clock is ahead).
    /// The shard starts when its own clock reads `start_unix_us + clock_offset_us`.
    pub clock_offset_us: i64,
    /// Filled by the runner: how late the measured phase started against the plan, µs
    /// (0 when on time).
    pub late_us: Arc<AtomicU64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_are_owned_exactly_once() {
        for n in 1..=5u32 {
            for k in 0..50u64 {
                let owners: Vec<u32> = (0..n)
                    .filter(|&i| Shard::new(i, n).unwrap().owns(k))
                    .collect();
                assert_eq!(owners, vec![(k % u64::from(n)) as u32]);
            }
            for total in 0..20u64 {
                let sum: u64 = (0..n)
                    .map(|i| Shard::new(i, n).unwrap().share_of_count(total))
                    .sum();
                assert_eq!(sum, total, "n={n} total={total}");
            }
        }
        // 10 requests over 4 shards: ordinals 0,4,8 / 1,5,9 / 2,6 / 3,7.
        let shares: Vec<u64> = (0..4)
            .map(|i| Shard::new(i, 4).unwrap().share_of_count(10))
            .collect();
        assert_eq!(shares, [3, 3, 2, 2]);
    }

    #[test]
    fn closed_loop_streams_split_by_residue() {
        let c = |i| {
            Shard::new(i, 3)
                .unwrap()
                .load_of(LoadPattern::Closed { concurrency: 8 })
        };
        assert_eq!(c(0), LoadPattern::Closed { concurrency: 3 });
        assert_eq!(c(1), LoadPattern::Closed { concurrency: 3 });
        assert_eq!(c(2), LoadPattern::Closed { concurrency: 2 });
    }

    #[test]
    fn parsing_and_environment() {
        assert_eq!(Shard::parse("2/4", 4), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(Shard::parse(" 3 ", 4), Ok(Shard { index: 3, count: 4 }));
        assert_eq!(
            Shard::parse("2/3", 4),
            Err(ShardError::CountMismatch { given: 3, plan: 4 })
        );
        assert_eq!(
            Shard::parse("4/4", 4),
            Err(ShardError::OutOfRange { index: 4, count: 4 })
        );
        assert!(matches!(Shard::parse("x/4", 4), Err(ShardError::Syntax(_))));
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            Shard::resolve(
                None,
                4,
                env(&[("JOB_COMPLETION_INDEX", "1"), ("SLURM_PROCID", "2")])
            ),
            Ok(Shard { index: 1, count: 4 })
        );
        assert_eq!(
            Shard::resolve(None, 4, env(&[("SLURM_PROCID", "2")])),
            Ok(Shard { index: 2, count: 4 })
        );
        assert_eq!(
            Shard::resolve(Some("0/4"), 4, env(&[("SLURM_PROCID", "2")])),
            Ok(Shard { index: 0, count: 4 })
        );
        assert_eq!(Shard::resolve(None, 4, env(&[])), Err(ShardError::Missing));
        assert_eq!(Shard::resolve(None, 1, env(&[])), Ok(Shard::WHOLE));
        assert!(matches!(
            Shard::resolve(None, 4, env(&[("JOB_COMPLETION_INDEX", "a")])),
            Err(ShardError::BadEnv { .. })
        ));
    }
}
