//! The chart model: a [`Chart`] builder, its [`Series`] and [`Marker`]s, and ready-made
//! constructors for the charts a servebench report shows (latency CDFs and histograms,
//! per-request token timelines, time series, load curves with confidence bands, fits,
//! per-class bars).
//!
//! A chart is plain data until [`Chart::render`] lays it out (in `render.rs`), so
//! callers can keep adjusting titles, units and scales after using a constructor.
//! The series and markers a chart holds live in `series.rs`, and the ready-made
//! constructors in `presets.rs`; both are re-exported here.

use super::axis::{Scale, Unit};
pub(super) use super::series::Tip;
pub use super::series::{CurvePoint, Kind, Marker, MarkerKind, Series};

/// Default drawing width in SVG user units; the SVG scales to its container.
pub const WIDTH: f64 = 720.0;
/// Default drawing height in SVG user units.
pub const HEIGHT: f64 = 360.0;
/// Default cap on drawn points per series; larger series are decimated.
pub const MAX_POINTS: usize = 2000;
/// Default cap on rows (requests) drawn by a timeline.
pub const MAX_ROWS: usize = 80;

/// Settings of one axis.
#[derive(Debug, Clone)]
pub(super) struct AxisSpec {
    pub(super) label: String,
    pub(super) unit: Unit,
    pub(super) scale: Scale,
    pub(super) range: Option<(f64, f64)>,
    pub(super) zero: bool,
    pub(super) tight: bool,
    pub(super) reversed: bool,
}

impl AxisSpec {
    fn new(label: &str, zero: bool) -> Self {
        Self {
            label: label.to_string(),
            unit: Unit::Plain,
            scale: Scale::Linear,
            range: None,
            zero,
            tight: false,
            reversed: false,
        }
    }
}

/// A chart under construction; [`Chart::render`] turns it into an SVG string.
#[derive(Debug, Clone)]
pub struct Chart {
    pub(super) id: String,
    pub(super) title: String,
    pub(super) notes: Vec<String>,
    pub(super) x: AxisSpec,
    pub(super) y: AxisSpec,
    pub(super) series: Vec<Series>,
    pub(super) markers: Vec<Marker>,
    pub(super) categories: Vec<String>,
    pub(super) width: f64,
    pub(super) height: f64,
    pub(super) max_points: usize,
    pub(super) max_rows: usize,
}

impl Chart {
    /// An empty chart. `id` names it in `data-chart` and prefixes its element ids and
    /// CSS, so it must be unique within one HTML page; it is reduced to
    /// `[a-z0-9-]` and made to start with a letter.
    pub fn new(id: &str, title: &str) -> Self {
        Self {
            id: slug(id),
            title: title.to_string(),
            notes: Vec::new(),
            x: AxisSpec::new("x", false),
            y: AxisSpec::new("y", true),
            series: Vec::new(),
            markers: Vec::new(),
            categories: Vec::new(),
            width: WIDTH,
            height: HEIGHT,
            max_points: MAX_POINTS,
            max_rows: MAX_ROWS,
        }
    }

    /// Replaces the id (see [`Chart::new`]).
    pub fn id(mut self, id: &str) -> Self {
        self.id = slug(id);
        self
    }

    /// Replaces the title.
    pub fn title(mut self, title: &str) -> Self {
        self.title = title.to_string();
        self
    }

    /// Adds a sentence to the chart's `<desc>` (read by screen readers).
    pub fn describe(mut self, text: &str) -> Self {
        self.notes.push(text.to_string());
        self
    }

    /// Sets the x axis label and unit.
    pub fn x_axis(mut self, label: &str, unit: Unit) -> Self {
        self.x.label = label.to_string();
        self.x.unit = unit;
        self
    }

    /// Sets the y axis label and unit.
    pub fn y_axis(mut self, label: &str, unit: Unit) -> Self {
        self.y.label = label.to_string();
        self.y.unit = unit;
        self
    }

    /// Sets the x scale; on a log scale non-positive values are skipped and counted.
    pub fn x_scale(mut self, scale: Scale) -> Self {
        self.x.scale = scale;
        self
    }

    /// Sets the y scale; on a log scale non-positive values are skipped and counted.
    pub fn y_scale(mut self, scale: Scale) -> Self {
        self.y.scale = scale;
        self
    }

    /// Fixes the x range instead of deriving it from the data; data outside is clipped.
    pub fn x_range(mut self, lo: f64, hi: f64) -> Self {
        self.x.range = Some((lo, hi));
        self
    }

    /// Fixes the y range instead of deriving it from the data; data outside is clipped.
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y.range = Some((lo, hi));
        self
    }

    /// Whether a linear y axis must include zero (default true, so that heights are
    /// honest; turn off to zoom into a narrow band of values).
    pub fn y_from_zero(mut self, zero: bool) -> Self {
        self.y.zero = zero;
        self
    }

    /// Changes the viewBox size (default 720×360); the SVG still scales to its container.
    pub fn size(mut self, width: f64, height: f64) -> Self {
        if width.is_finite() && height.is_finite() {
            self.width = width.clamp(240.0, 4000.0);
            self.height = height.clamp(160.0, 4000.0);
        }
        self
    }

    /// Caps drawn points per series (default [`MAX_POINTS`]); larger series are
    /// decimated deterministically and the `<desc>` says so.
    pub fn max_points(mut self, n: usize) -> Self {
        self.max_points = n.max(2);
        self
    }

    /// Caps the rows a timeline draws (default [`MAX_ROWS`]).
    pub fn max_rows(mut self, n: usize) -> Self {
        self.max_rows = n.max(1);
        self
    }

    /// Adds a series; colours follow the order of addition.
    pub fn series(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }

    /// Adds a labelled reference line.
    pub fn marker(mut self, marker: Marker) -> Self {
        self.markers.push(marker);
        self
    }

    /// The chart's id after sanitising.
    pub fn chart_id(&self) -> &str {
        &self.id
    }

    /// Lays the chart out and returns a standalone `<svg>` element (no XML prolog), fit
    /// for inlining into HTML or saving as a `.svg` file.
    pub fn render(&self) -> String {
        super::render::render(self)
    }
}

/// Reduces `s` to a CSS- and id-safe slug: lowercase ASCII letters, digits and single
/// hyphens, starting with a letter.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    match out.chars().next() {
        None => "chart".to_string(),
        Some(c) if c.is_ascii_digit() => format!("c-{out}"),
        Some(_) => out.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_css_safe() {
        assert_eq!(slug("P99 TTFT (ms)"), "p99-ttft-ms");
        assert_eq!(slug("99th"), "c-99th");
        assert_eq!(slug("<&>"), "chart");
        assert_eq!(slug("--a--b--"), "a-b");
    }
}
