//! servebench: benchmark LLM serving systems the way their users feel them.
//!
//! The crate is a pipeline of stages, one folder each (see `docs/architecture.md`):
//! `workload` (what to send) → `schedule` (when) → `client` + `runner` (send, read, time) →
//! `record` (what happened) → `metrics` (what it means) → `artifacts` (the documents a run
//! leaves) → `report` (how it reads), with
//! `sim` as the built-in target and test fixture, `store` writing run folders and indexing
//! them, `compare` judging runs against each other, and `export` writing other tools' formats.
//! `flags` declares the command line; `pipeline` runs the stages from a run's flags to its
//! exit status; `cli` parses the flags and calls it.

pub mod artifacts;
pub mod cli;
pub mod client;
pub mod clock;
pub mod compare;
pub mod config;
pub mod export;
pub mod flags;
pub mod metrics;
pub mod pipeline;
pub mod procedure;
pub mod record;
pub mod report;
pub mod runner;
pub mod scaleout;
pub mod schedule;
pub mod sim;
pub mod stats;
pub mod store;
pub mod telemetry;
pub mod tokenizer;
pub mod workload;
