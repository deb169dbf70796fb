//! Command-line interface: flags in, validated configuration out, pipeline run.
//!
//! `args` holds the clap definitions (the manual: `servebench run --help`), `run` turns them
//! into a `RunConfig` and runs the pipeline, `sim` serves the simulator; `history`,
//! `compare` and `export` read finished runs back (`runs` resolves what an argument names).

pub mod args;
pub mod assemble;
pub mod compare;
pub mod export;
pub mod history;
pub mod profile;
pub mod report;
pub mod run;
pub mod runs;
pub mod scaleout;
pub mod selfbench;
pub mod sim;
pub mod test;
pub mod workload;

use args::{Cli, Command};
use clap::Parser;
use std::process::ExitCode;

/// Exit statuses (documented in the README).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The run completed but did not pass: an SLO verdict failed, more requests failed than
    /// `--max-failures` allows, or no request succeeded.
    pub const FAILED: u8 = 1;
    /// Bad configuration, or the server could not be used (unreachable, not ready, model
    /// not served); for `regress`, too few runs to decide.
    pub const USAGE: u8 = 2;
    /// `regress` with too few runs to decide, where a key metric is still worse than the
    /// baseline by more than `compare::regress::GROSS_CHANGE` (20 %, or the tolerance if
    /// larger): a likely regression, with no statistical claim.
    pub const LIKELY_REGRESSION: u8 = 3;
    /// Interrupted with Ctrl-C (the shell's convention, 128 + SIGINT); everything measured
    /// was written.
    pub const INTERRUPTED: u8 = 130;
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    crate::runner::host_net::raise_open_file_limit();
    let result = match cli.command {
        Command::Run(args) if args.scaleout.plan.is_some() => scaleout::run_planned(*args),
        Command::Run(args) => run::run(args.run),
        Command::Sim(args) => sim::serve(args),
        Command::Selfbench(args) => selfbench::selfbench(args),
        Command::ProfilePrefill(args) => profile::profile(*args),
        Command::Workload(cmd) => workload::workload(cmd),
        Command::Report(args) => report::report(args),
        Command::Test(args) => test::test(*args),
        Command::Suite(args) => test::suite(*args),
        Command::History(args) => history::history(args),
        Command::Label(args) => history::label(args),
        Command::Note(args) => history::note(args),
        Command::Reindex(args) => history::reindex(args),
        Command::Compare(args) => compare::compare(args),
        Command::Regress(args) => compare::regress(args),
        Command::Export(args) => export::export(args),
        Command::Plan(args) => scaleout::plan(*args),
        Command::Merge(args) => scaleout::merge(args),
        Command::K8s(args) => scaleout::k8s(*args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit::USAGE)
        }
    }
}
