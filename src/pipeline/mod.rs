//! The run pipeline, outside the command line: a run's configuration resolved from its flags
//! (`resolve`, one file per flag group), one run executed into its folder (`execute`), its
//! report assembled (`assemble`) and written as pages (`pages`), its exit status (`verdict`,
//! `exit`), the host's facts (`host`) and a scale-out plan's shards merged into one run
//! (`merge`). `cli` parses the flags and calls these, as short command functions; nothing
//! here imports from `cli` (the flag structs `resolve` reads live in `flags`).

pub mod assemble;
pub mod execute;
pub mod exit;
pub mod host;
pub mod index;
pub mod merge;
pub mod otlp;
pub mod pages;
pub mod parquet;
pub mod recover;
pub mod resolve;
pub mod target;
pub mod test;
pub mod verdict;
