//! `run.json`: the machine-readable record of a run, serialised from the typed
//! [`RunReport`]. Its shape is described by `docs/run.schema.json`, which a test checks
//! real output against.

use crate::artifacts::RunReport;

/// The whole `run.json` document.
pub fn run_json(report: &RunReport) -> serde_json::Value {
    serde_json::to_value(report).expect("a run report always serialises")
}
