//! Command-line interface: flags in, pipeline run, exit status out.
//!
//! `args` holds the clap definitions (the manual: `servebench run --help`), `run` gets the
//! target ready and runs the pipeline (`crate::pipeline`: the flags resolved into a
//! `RunConfig`, the run executed, its verdict), `sim` serves the simulator; `history`,
//! `compare` and `export` read finished runs back (`runs` resolves what an argument names).

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

use crate::flags::{Cli, Command};
use clap::Parser;
use std::process::ExitCode;

// Exit statuses (documented in the README): the pipeline decides them.
use crate::pipeline::exit;

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
