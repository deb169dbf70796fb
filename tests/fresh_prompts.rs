//! Every run sends prompts of its own: against a server that caches prefixes (the
//! simulator's default preset, as vLLM and SGLang do by default), running the same command
//! twice must not measure the cache the first run filled, and the summary says how much of
//! the prompts the cache served.

use crate::common::{config, run, temp_dir};
use servebench::sim::{SimConfig, SimServer};

fn args(extra: &[&'static str]) -> Vec<&'static str> {
    let mut a = vec![
        "--concurrency",
        "4",
        "--requests",
        "40",
        "--warmup",
        "none",
        "--input-tokens",
        "128",
        "--output-tokens",
        "8",
        "--seed",
        "7",
    ];
    a.extend(extra);
    a
}

/// The same run twice: the second's prompts are new (a cached share near 0 %, no warning),
/// with the first's lengths. Given the first run's salt again, a run replays its exact
/// prompts: the cache serves them, the summary says so and warns. Before, every run with
/// the same seed replayed the same prompts (127 of 128 prompt tokens cached the second
/// time) and the summary had no cache figure.
#[test]
fn the_same_run_twice_sends_fresh_prompts() {
    let sim = SimServer::spawn(SimConfig::default(), 0).unwrap();
    let url = sim.base_url();
    let first = config(&url, &args(&[]), &temp_dir("fresh-prompts-1"));
    let (out1, s1) = run(&first);
    let second = config(&url, &args(&[]), &temp_dir("fresh-prompts-2"));
    assert_ne!(
        first.prompt_salt, second.prompt_salt,
        "each run draws its own salt"
    );
    let (out2, s2) = run(&second);

    let cached = |s: &servebench::metrics::RunSummary| {
        s.prompt_cache
            .as_ref()
            .and_then(|c| c.hit_rate())
            .expect("the simulator reports cached tokens")
    };
    assert!(cached(&s1) < 0.05, "first run: {}", cached(&s1));
    assert!(
        cached(&s2) < 0.05,
        "second run measured a cache: {}",
        cached(&s2)
    );
    let warned = |s: &servebench::metrics::RunSummary| {
        s.warnings.iter().any(|w| w.kind() == "prompts_from_cache")
    };
    assert!(!warned(&s2));
    let lengths = |o: &servebench::runner::RunOutput| {
        let mut v: Vec<(u64, u32)> = o.records.iter().map(|r| (r.id, r.input_tokens)).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(lengths(&out1), lengths(&out2), "the seed keeps the lengths");

    let salt = first.prompt_salt.to_string();
    let salt: &'static str = Box::leak(salt.into_boxed_str());
    let replay = config(
        &url,
        &args(&["--prompt-salt", salt]),
        &temp_dir("fresh-prompts-3"),
    );
    let (_, s3) = run(&replay);
    assert!(
        cached(&s3) > 0.5,
        "a replay hits the cache: {}",
        cached(&s3)
    );
    assert!(warned(&s3), "and the summary warns: {:?}", s3.warnings);
}
