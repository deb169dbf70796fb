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
pub mod workload;

use crate::flags::{Cli, Command};
use clap::Parser;
use std::process::ExitCode;

// Exit statuses (documented in the README): the pipeline decides them.
use crate::pipeline::exit;

/// Whether a panic's message is `print!`'s on a closed standard output.
pub fn is_closed_pipe(message: &str) -> bool {
    message.contains("failed printing to std") && message.contains("Broken pipe")
}

/// A reader that stops early (`servebench history | head -3`) closes the pipe; Rust
/// ignores SIGPIPE, so the next `print!` panics with "failed printing to stdout: Broken
/// pipe" (and a `write!` returns the error). That is the reader's choice, not an error:
/// the process ends quietly with status 0, as `ls | head` does. Every other panic keeps the
/// default report.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_closed_pipe(message) {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Whether a command's error is a closed standard output (a `write!` to it failed).
fn closed_pipe_error(e: &anyhow::Error) -> bool {
    // Writers that wrap the I/O error (serde_json's) say which kind it was.
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| c.downcast_ref::<serde_json::Error>()?.io_error_kind())
            == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    quiet_on_closed_pipe();
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
        Command::Test(args) => crate::pipeline::test::test(*args),
        Command::Suite(args) => crate::pipeline::test::suite(*args),
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
        Err(e) if closed_pipe_error(&e) => ExitCode::from(exit::OK),
        // The reason was printed where the command stopped.
        Err(e) if e.downcast_ref::<exit::EarlyExit>().is_some() => {
            ExitCode::from(exit::status_of(&e))
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit::USAGE)
        }
    }
}
