//! Pure measurement: records in, numbers out. No I/O, no clock reads.
//!
//! `distribution` gives percentiles with one stated method; `request` derives each request's
//! TTFT, TPOT, ITL, jitter and pauses; `summary` aggregates a run; `slo` judges goodput.

pub mod distribution;
pub mod request;
pub mod slo;
pub mod summary;

pub use distribution::Distribution;
pub use request::{ItlOption, RequestMetrics};
pub use summary::{summarize, RunSummary};
