//! How load is offered, owned by the schedule: a closed loop of a fixed concurrency, an open
//! loop of seeded arrivals, or a trace's own timestamps.

use serde::Serialize;

/// How inter-arrival times are drawn in open loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Arrival {
    /// Exponential gaps (draft 4.2.3, required).
    Poisson,
    /// Equal gaps.
    Constant,
    /// Gamma gaps with coefficient of variation `cv` (1 = Poisson, > 1 burstier).
    Gamma { cv: f64 },
}

/// How load is offered.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum LoadPattern {
    /// A fixed number of requests in flight; a new one as soon as one completes.
    Closed { concurrency: u32 },
    /// Arrivals from a seeded schedule, independent of responses.
    Open { rate_per_s: f64, arrival: Arrival },
    /// Arrivals at the timestamps of a trace (`--dataset` in trace format), divided by `speed`.
    Trace { speed: f64 },
}
