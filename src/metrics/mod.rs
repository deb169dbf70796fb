//! Pure measurement: records in, numbers out. No I/O, no clock reads.
//!
//! `distribution` gives percentiles with one stated method; `request` derives each request's
//! TTFT, TPOT, ITL, jitter and pauses; `summary` aggregates a run into one `RunSummary`;
//! `slo` judges per-request attainment, goodput and run-level bounds; `ux` (deadlines, user
//! idle latency, smooth goodput), `fluidity` (Etalon) and `fairness` (draft 5.6) are the
//! user-experience metrics, gathered by `experience`; `modality` describes a distribution's
//! shape; `failures` explains what went wrong; `generator` judges the load generator itself;
//! `derive` computes the per-request figures written with each record.

pub mod cache;
pub mod derive;
pub mod experience;
pub mod failures;
pub mod fairness;
pub mod fluidity;
pub mod generator;
pub mod live;
pub mod media;
pub mod modality;
pub mod request;
pub mod sessions;
pub mod slo;
pub mod stream;
pub mod summary;
pub mod ux;
pub mod warnings;

pub use request::{ItlOption, RequestMetrics};
pub use summary::{summarize, RunSummary, SummaryParams};
