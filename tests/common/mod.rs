//! Helpers shared by the integration tests.

use clap::Parser;
use servebench::config::RunConfig;
use servebench::flags::{Cli, Command, RunArgs};
use servebench::metrics::generator::judge;
use servebench::metrics::{summarize, RunSummary, SummaryParams};
use servebench::pipeline::resolve::resolve;
use servebench::record::run::GeneratorReport;
use servebench::record::run::ServerInfo;
use servebench::record::{Phase, RequestRecord};
use servebench::runner::{self, RunOutput};
use std::path::PathBuf;

/// A fresh, empty temporary folder (a run may use it as its `--out`).
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("servebench-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Parses `servebench run <args>` into a configuration against `url`. Fluidity's prefill
/// profile is off unless the arguments ask for it (`--fluidity`, dropped here).
pub fn config(url: &str, args: &[&str], out: &std::path::Path) -> RunConfig {
    let mut argv = vec![
        "servebench",
        "run",
        "--url",
        url,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    let wants_fluidity = args.contains(&"--fluidity") || args.contains(&"--prefill-curve");
    if !wants_fluidity {
        argv.push("--no-fluidity");
    }
    argv.extend(args.iter().filter(|a| **a != "--fluidity"));
    let cli = Cli::try_parse_from(argv).expect("valid test arguments");
    let Command::Run(run_args) = cli.command else {
        unreachable!()
    };
    let run_args: RunArgs = run_args.run;
    let mut resolved = resolve(&run_args, url, false)
        .expect("valid configuration")
        .config;
    if resolved.target.model.is_empty() {
        resolved.target.model = "test-model".into();
    }
    resolved
}

/// Runs the engine with the reference tokenizer and summarises.
pub fn run(config: &RunConfig) -> (RunOutput, RunSummary) {
    run_with(config, "cl100k_base")
}

/// Runs with the named tokenizer (`server` for the target's) and summarises.
pub fn run_with(config: &RunConfig, tokenizer: &str) -> (RunOutput, RunSummary) {
    let tok = servebench::client::server_tokenizer::load_for(tokenizer, &config.target)
        .expect("the tokenizer loads");
    let out = runner::run(config, tok, &ServerInfo::default()).expect("the run starts");
    let summary = summarize(&out.records, &params(config, &out));
    (out, summary)
}

/// The summary parameters a run used.
pub fn params(config: &RunConfig, out: &RunOutput) -> SummaryParams {
    SummaryParams {
        slo: config.slo.clone(),
        ux: config.ux,
        fluidity: out.fluidity.clone(),
        baseline: Default::default(),
        warmup: Some(out.warmup.clone()),
        extra_warnings: Vec::new(),
        expects_cached_prompts: config.workload.expects_cached_prompts(),
        confidence: config.confidence,
    }
}

/// The generator's judgement of its own run.
pub fn generator(out: &RunOutput) -> GeneratorReport {
    let measured: Vec<&RequestRecord> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    judge(&measured, &out.generator)
}

/// The history database the tests' `servebench` processes index their runs in: a
/// temporary file of this test process, never the user's own history.
pub fn test_store() -> PathBuf {
    std::env::temp_dir()
        .join(format!("servebench-test-store-{}", std::process::id()))
        .join("history.db")
}

/// The `servebench` binary built for these tests, as a command whose history goes to
/// [`test_store`].
pub fn servebench_command() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_servebench"));
    c.env("SERVEBENCH_STORE", test_store());
    c
}

/// Runs the `servebench` binary built for these tests (history in [`test_store`]).
pub fn servebench(args: &[&str]) -> std::process::Output {
    servebench_command()
        .args(args)
        .output()
        .expect("running servebench")
}

pub fn real_server_script() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/real-server.sh")
}

/// The base URL of the real llama.cpp server (`SERVEBENCH_REAL_SERVER_URL`, or one started
/// by `scripts/real-server.sh` when it is installed); fails, saying how to install it, when
/// there is none.
pub fn real_server_url() -> String {
    if let Ok(url) = std::env::var("SERVEBENCH_REAL_SERVER_URL") {
        return url;
    }
    let installed = std::process::Command::new(real_server_script())
        .arg("paths")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("server=").map(std::path::PathBuf::from))
        })
        .is_some_and(|p| p.exists());
    assert!(
        installed,
        "llama-server is not installed: run scripts/real-server.sh install (about 7 minutes, once), or set SERVEBENCH_REAL_SERVER_URL"
    );
    let out = std::process::Command::new(real_server_script())
        .arg("start")
        .output()
        .expect("running scripts/real-server.sh");
    assert!(
        out.status.success(),
        "scripts/real-server.sh start failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .last()
        .expect("the script prints the URL last")
        .trim()
        .to_owned()
}

/// Held by the tests that keep both cores busy (the real llama.cpp server) and by the few
/// whose assertions still read times the client measured against a simulator running in real
/// time, so the one never runs beside the other. Tests that can assert on the simulator's
/// truth do so instead and need no lock. A test that panicked while holding it poisons
/// nothing: the guard is recovered.
pub fn exclusive_cpu() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The simulator's truth of the `n` requests it has answered, by the response id it sent
/// (waiting up to 10 s for the last ones to be logged): what the tests check records by.
pub fn truth_by_id(
    sim: &servebench::sim::SimServer,
    n: usize,
) -> std::collections::HashMap<String, servebench::sim::TruthRecord> {
    sim.truth()
        .wait_for(n, std::time::Duration::from_secs(10))
        .into_iter()
        .map(|t| (t.response_id.clone(), t))
        .collect()
}
