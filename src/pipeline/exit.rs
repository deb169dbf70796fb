//! Exit statuses (documented in the README). Here because the pipeline decides them (a run's
//! `verdict`, a server `execute` could not use); every command returns one (`cli` reads them
//! here).

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
