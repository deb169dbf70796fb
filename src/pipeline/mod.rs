//! The run pipeline, outside the command line: a run's configuration resolved from its flags
//! (`resolve`, one file per flag group), one run executed into its folder (`execute`), its
//! report assembled (`assemble`) and written as pages (`pages`), its exit status (`verdict`,
//! `exit`) and the host's facts (`host`). `cli` parses the flags and calls these, as short
//! command functions; nothing here imports from `cli` but the flag structs of `cli::args`,
//! which `resolve` reads.

pub mod assemble;
pub mod execute;
pub mod exit;
pub mod host;
pub mod pages;
pub mod resolve;
pub mod verdict;
