//! Statistics the procedures and comparisons need: one sample's summary (`distribution`), confidence intervals (Wilson, Student t,
//! bootstrap over runs), trend tests, the throughput–latency curve's derived points, scaling
//! fits, and two-group comparison. Pure, seeded where random.

pub mod compare;
pub mod curve;
pub mod dist;
pub mod distribution;
pub mod fit;
pub mod interval;
pub mod log_histogram;
pub mod percentile_bounds;
pub mod sketch;
pub mod time_bins;
pub mod trend;

pub use distribution::Distribution;
