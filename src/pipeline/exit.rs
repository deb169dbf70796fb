//! Exit statuses (documented in the README). Here because the pipeline decides them (a run's
//! `verdict`, a server `execute` could not use); every command returns one (`cli` reads them
//! here).

/// A command that ends before its work with an exit status, its reason already printed (a
/// server that could not be used: exit status 2). Carried as an error so every stage returns
/// one `anyhow::Result` and `?` carries it up; `cli::main` exits with its status and prints
/// nothing more. One typed value in place of `Result<Result<T, u8>>` across two layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stopped with exit status {0} (the reason is printed above)")]
pub struct EarlyExit(pub u8);

/// The status an error ends the process with: an [`EarlyExit`]'s own, else [`USAGE`].
pub fn status_of(e: &anyhow::Error) -> u8 {
    e.downcast_ref::<EarlyExit>().map_or(USAGE, |x| x.0)
}

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
