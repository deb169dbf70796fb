//! Charts for the HTML report, rendered server-side as inline SVG strings.
//!
//! Hand-written rather than built on a plotting crate: the report must work offline and
//! without JavaScript, and its browser tests rely on an exact DOM. Every data point, bar
//! and token is one element with a `class` (`pt`, `bar`, `tok`), `data-x`/`data-y` and a
//! `<title>` tooltip; every root `<svg>` has `role="img"`, `aria-labelledby` (its
//! `<title>` and `<desc>`), `data-chart` and `data-points`. Only std is used.

pub mod axis;
pub mod charts;
pub mod data;
mod draw;
mod frame;
pub mod groups;
mod legend;
mod markers;
mod prep;
mod presets;
pub mod procedures;
mod render;
mod series;
pub mod svg;
#[cfg(test)]
mod tests;

pub use axis::{Axis, Scale, Tick, Unit};
pub use charts::{Chart, CurvePoint, Kind, Marker, MarkerKind, Series};
pub use data::{Bin, Bins, Histogram};
pub use groups::RunGroup;
pub use procedures::{load_curve, long_context_fit, LoadCurveCharts};
