//! Helpers shared by the integration tests.

use clap::Parser;
use servebench::cli::args::{Cli, Command, RunArgs};
use servebench::cli::run::resolve;
use servebench::config::RunConfig;
use servebench::engine::{self, RunOutput};
use servebench::metrics::{summarize, RunSummary};
use std::path::PathBuf;

/// A fresh temporary folder for a run.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("servebench-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Parses `servebench run <args>` into a configuration against `url`.
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
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(argv).expect("valid test arguments");
    let Command::Run(run_args) = cli.command else {
        unreachable!()
    };
    let run_args: RunArgs = *run_args;
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

/// Runs the engine with the named tokenizer (`server` for the target's) and summarises.
pub fn run_with(config: &RunConfig, tokenizer: &str) -> (RunOutput, RunSummary) {
    let tok =
        servebench::tokenizer::load_for(tokenizer, &config.target).expect("the tokenizer loads");
    let out = engine::run(config, tok).expect("the run starts");
    let summary = summarize(&out.records, config.slo.as_ref());
    (out, summary)
}
