//! Telemetry on the run's clock: the server's Prometheus metrics, GPUs and energy, and the
//! generator's own host, sampled once a second beside the client's records.
//!
//! The client sees latency; the server knows why. The draft's saturation detection reads
//! the queue (5.2.3.1), its cache test needs hit rates (5.7), its memory test preemptions
//! (5.8), and exo-bench's methodology reports power and energy. Parsing and arithmetic are
//! pure (`prometheus`, `engines`, `window`, `window_energy`, `gpu`, `timeline`,
//! `summary`); only `collector`, `nvml` and `host` read the world. A source that cannot be read is reported as "not
//! measured" with the reason, never as zero.

pub mod client_seconds;
pub mod collector;
pub mod engines;
pub mod gpu;
pub mod histogram;
pub mod host;
pub mod nvml;
pub mod prometheus;
mod sample_line;
pub mod summary;
pub mod timeline;
pub mod window;
pub mod window_energy;

pub use collector::{Collector, TelemetryConfig, TelemetryData};
pub use summary::TelemetrySummary;
