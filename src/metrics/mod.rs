//! Pure measurement: records in, numbers out. No I/O, no clock reads.
//!
//! `distribution` gives percentiles with one stated method; `request` derives each request's
//! TTFT, TPOT, ITL, jitter and pauses; `summary` aggregates a run; `slo` judges goodput;
//! `ux` (deadlines, user idle latency, smooth goodput), `fluidity` (Etalon) and `fairness`
//! (draft 5.6) are the user-experience metrics; `modality` describes a distribution's shape.

pub mod distribution;
pub mod experience;
pub mod fairness;
pub mod fluidity;
pub mod modality;
pub mod request;
pub mod slo;
pub mod summary;
pub mod ux;

pub use distribution::Distribution;
pub use request::{ItlOption, RequestMetrics};
pub use summary::{summarize, RunSummary};
