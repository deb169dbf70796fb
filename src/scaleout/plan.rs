//! The frozen load: what `servebench plan` writes and every shard replays.
//!
//! A plan holds the run options as given (so each shard resolves them exactly as a plain
//! run would: one code path, one request sequence) together with what they froze: the
//! seed, the workload and a hash of it, the load, the limits, the warm-up, the number of
//! shards and a common start time. The frozen fields are for people and for checks: a
//! shard recomputes the workload hash from its own files and refuses to run a different
//! workload. Credentials never enter a plan (it ends up in a ConfigMap): each shard reads
//! its key from its own environment.

use crate::config::{Limits, RunConfig, Warmup};
use crate::schedule::LoadPattern;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Version of the plan format; a shard refuses plans of another version.
pub const PLAN_SCHEMA_VERSION: u32 = 1;
/// The `kind` field of every plan file.
pub const PLAN_KIND: &str = "servebench-plan";

/// One frozen load, cut into `shards` shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Always [`PLAN_KIND`].
    pub kind: String,
    pub schema_version: u32,
    /// servebench version that made the plan.
    pub tool_version: String,
    /// When the plan was made (ISO 8601 UTC).
    pub created_at: String,
    /// How many shards share the load (N).
    pub shards: u32,
    /// The common start of the measured phase, Unix ms (on the reference clock).
    pub start_unix_ms: u64,
    /// The same, ISO 8601 UTC.
    pub start_at: String,
    /// The `servebench run` options every shard resolves (`--seed` made explicit).
    pub run_args: Vec<String>,
    /// The target, as given.
    pub url: String,
    pub seed: u64,
    pub load: LoadPattern,
    pub limits: Limits,
    pub warmup: Warmup,
    /// The workload specification.
    pub workload: serde_json::Value,
    /// FNV-1a (64 bit, hex) over the workload specification, the seed and the dataset
    /// file's bytes: equal hashes, equal request sequences.
    pub workload_hash: String,
}

/// Why options cannot be frozen into a plan.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlanError {
    #[error("a plan needs --url: every shard must load the same server (the built-in simulator is one per process)")]
    NoUrl,
    #[error("`{0}` belongs to each shard's `servebench run --plan`, not to the plan")]
    ShardOnly(String),
    #[error("{0}: credentials never go into a plan (it is stored in a ConfigMap); give them to each shard: the API key through its environment (--api-key-env), headers with `run --plan ... --header`")]
    Credential(String),
    #[error("{0} has sessions, which cannot be sharded yet: a session's requests follow each other's answers, so one generator must send them all, and the plan splits requests, not sessions; use a single-turn workload")]
    MultiTurn(String),
    #[error("closed loop with --concurrency {concurrency} cannot be split into {shards} shards: each shard needs at least one stream")]
    TooFewStreams { concurrency: u32, shards: u32 },
    #[error("--shards must be between 1 and 1000")]
    Shards,
    #[error("not a servebench plan (kind `{0}`)")]
    NotAPlan(String),
    #[error("plan format version {0}; this servebench reads version {PLAN_SCHEMA_VERSION}: make the plan again with this version")]
    Version(u32),
}

/// Flags of `servebench plan` that are not run options (with whether they take a value).
const PLAN_ONLY: &[(&str, bool)] = &[
    ("--shards", true),
    ("-o", true),
    ("--output", true),
    ("--start-in", true),
    ("--start-at", true),
];

/// Flags a `servebench run --plan` command line may add: where the shard writes, how it
/// shows progress, its own credentials and certificates, and its clock. Everything that
/// shapes the load comes from the plan.
pub const SHARD_FLAGS: &[&str] = &[
    "--plan",
    "--shard",
    "--clock-offset-ms",
    "--clock-sync",
    "--out",
    "--force",
    "--detail",
    "--parquet",
    "--quiet",
    "-q",
    "--client-threads",
    "--header",
    "--api-key-env",
    "--api-key-file",
    "--ca-cert",
    "--client-cert",
    "--client-key",
    "--ready-timeout",
];

/// The run options among `servebench plan`'s arguments: plan-only flags removed, run
/// options checked. `args` is everything after `plan`.
pub fn run_options(args: &[String]) -> Result<Vec<String>, PlanError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        if let Some((_, takes_value)) = PLAN_ONLY.iter().find(|(f, _)| *f == name) {
            i += if *takes_value && !a.contains('=') {
                2
            } else {
                1
            };
            continue;
        }
        if name == "--out" || name == "--force" {
            return Err(PlanError::ShardOnly(name.into()));
        }
        let header = match (name, a.split_once('=')) {
            ("--header", Some((_, v))) => Some(v.to_owned()),
            ("--header", None) => args.get(i + 1).cloned(),
            _ => None,
        };
        if let Some(h) = header {
            let key = h.split(':').next().unwrap_or("").trim();
            if crate::client::is_credential_header(key) {
                return Err(PlanError::Credential(format!("--header {key}")));
            }
        }
        if a.contains("://")
            && a.split("://").nth(1).is_some_and(|rest| {
                rest.split(['/', '?', '#'])
                    .next()
                    .unwrap_or("")
                    .contains('@')
            })
        {
            return Err(PlanError::Credential("a URL with user:password@".into()));
        }
        out.push(a.clone());
        i += 1;
    }
    Ok(out)
}

/// What a frozen configuration must allow to be sharded.
pub fn check_shardable(config: &RunConfig, shards: u32) -> Result<(), PlanError> {
    if shards == 0 || shards > 1000 {
        return Err(PlanError::Shards);
    }
    if !config.target.url.to_string().starts_with("http") || config.target.builtin_simulator {
        return Err(PlanError::NoUrl);
    }
    let w = &config.workload;
    let agent_dataset = matches!(
        config.dataset.as_deref(),
        Some(crate::workload::datasets::Dataset::Agent(_))
    );
    if w.sessions.is_some() || w.agent.is_some() || agent_dataset {
        let what = match &w.profile {
            Some(p) => format!("profile {}", p.id),
            None => format!("workload `{}`", w.name),
        };
        return Err(PlanError::MultiTurn(what));
    }
    if let LoadPattern::Closed { concurrency } = config.load {
        if concurrency < shards {
            return Err(PlanError::TooFewStreams {
                concurrency,
                shards,
            });
        }
    }
    Ok(())
}

/// FNV-1a, 64 bit: a name for content, not a security measure.
pub fn fnv1a(parts: &[&[u8]]) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for part in parts {
        for b in part.iter() {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        h = (h ^ 0xff).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The workload hash of a resolved configuration: specification, seed, dataset bytes.
pub fn workload_hash(config: &RunConfig, dataset_bytes: Option<&[u8]>) -> String {
    let spec = serde_json::to_vec(&config.workload).unwrap_or_default();
    fnv1a(&[
        &spec,
        &config.seed.to_le_bytes(),
        dataset_bytes.unwrap_or(b""),
    ])
}

impl Plan {
    /// Reads a plan from its JSON text, checking kind and version.
    pub fn from_json(text: &str) -> Result<Plan, anyhow::Error> {
        let v: serde_json::Value = serde_json::from_str(text)?;
        let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or("");
        if kind != PLAN_KIND {
            return Err(PlanError::NotAPlan(kind.into()).into());
        }
        let version = v
            .get("schema_version")
            .and_then(|k| k.as_u64())
            .unwrap_or(0) as u32;
        if version != PLAN_SCHEMA_VERSION {
            return Err(PlanError::Version(version).into());
        }
        Ok(serde_json::from_value(v)?)
    }

    /// The plan's identity: a hash of its canonical JSON. Every shard of one run records
    /// it, and merge refuses folders from different plans.
    pub fn id(&self) -> String {
        fnv1a(&[&serde_json::to_vec(self).unwrap_or_default()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn plan_only_flags_are_removed() {
        let got = run_options(&s(&[
            "--url",
            "http://h:1/v1",
            "--shards",
            "4",
            "-o",
            "p.json",
            "--start-in=30s",
            "--rate",
            "5",
            "--header",
            "X-Team: a",
        ]))
        .unwrap();
        assert_eq!(
            got,
            s(&[
                "--url",
                "http://h:1/v1",
                "--rate",
                "5",
                "--header",
                "X-Team: a"
            ])
        );
    }

    #[test]
    fn credentials_and_shard_flags_are_refused() {
        assert!(matches!(
            run_options(&s(&["--header", "Authorization: Bearer x"])),
            Err(PlanError::Credential(_))
        ));
        assert!(matches!(
            run_options(&s(&["--header=X-Api-Key: x"])),
            Err(PlanError::Credential(_))
        ));
        assert!(matches!(
            run_options(&s(&["--url", "http://u:p@h/v1"])),
            Err(PlanError::Credential(_))
        ));
        assert_eq!(
            run_options(&s(&["--out", "x"])),
            Err(PlanError::ShardOnly("--out".into()))
        );
    }

    #[test]
    fn session_workloads_are_refused_by_name() {
        let mut config = crate::export::fixture::report().config;
        config.target.url = crate::client::BaseUrl::parse("http://h:1/v1").unwrap();
        config.target.builtin_simulator = false;
        config.load = LoadPattern::Closed { concurrency: 8 };
        assert_eq!(check_shardable(&config, 2), Ok(()));
        config.workload = crate::workload::Scenario::named("agentic").unwrap();
        let err = check_shardable(&config, 2).unwrap_err();
        assert_eq!(err, PlanError::MultiTurn("workload `agentic`".into()));
        config.workload = crate::workload::profile::preset("CHAT").unwrap();
        let err = check_shardable(&config, 2).unwrap_err().to_string();
        assert!(err.starts_with("profile CHAT has sessions"), "{err}");
    }

    #[test]
    fn hash_separates_parts() {
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[b"x"]), fnv1a(&[b"x"]));
        assert_eq!(fnv1a(&[b"x"]).len(), 16);
    }

    #[test]
    fn plans_round_trip_and_versions_are_checked() {
        let plan = Plan {
            kind: PLAN_KIND.into(),
            schema_version: PLAN_SCHEMA_VERSION,
            tool_version: "0.1.0".into(),
            created_at: "2026-11-23T00:00:00.000Z".into(),
            shards: 4,
            start_unix_ms: 1_795_000_000_000,
            start_at: "x".into(),
            run_args: s(&["--url", "http://h:1/v1", "--seed", "7"]),
            url: "http://h:1/v1".into(),
            seed: 7,
            load: LoadPattern::Open {
                rate_per_s: 12.5,
                arrival: crate::schedule::Arrival::Poisson,
            },
            limits: Limits {
                requests: Some(100),
                duration: Some(std::time::Duration::from_secs(60)),
            },
            warmup: Warmup::Requests(10),
            workload: serde_json::json!({"name": "w"}),
            workload_hash: "0123456789abcdef".into(),
        };
        let text = serde_json::to_string_pretty(&plan).unwrap();
        let back = Plan::from_json(&text).unwrap();
        assert_eq!(back, plan);
        assert_eq!(back.id(), plan.id());
        let mut other = plan.clone();
        other.seed = 8;
        assert_ne!(other.id(), plan.id());
        let wrong = text.replace("\"schema_version\": 1", "\"schema_version\": 9");
        assert!(Plan::from_json(&wrong)
            .unwrap_err()
            .to_string()
            .contains("version 9"));
        assert!(Plan::from_json("{\"kind\": \"other\"}")
            .unwrap_err()
            .to_string()
            .contains("not a servebench plan"));
    }
}
