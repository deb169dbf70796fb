//! The parts a chart is made of: its data [`Series`] (and how each is drawn and
//! tooltipped), reference [`Marker`]s, and the [`CurvePoint`]s of a measured curve.

use super::data::{cdf_points, Bin};

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Points joined in the given order.
    Line,
    /// Unjoined dots.
    Scatter,
    /// A staircase that holds each value until the next point (CDFs).
    Step,
    /// Rectangles from a base line: histogram bins or category bars.
    Bars,
    /// One horizontal row per request with a tick per token and highlighted pauses.
    Segments,
}

/// How a series' hover tooltips read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tip {
    /// "P99 TTFT 512 ms at 12.0 req/s".
    YAtX,
    /// "TTFT: 50.0% ≤ 512 ms".
    Cdf,
    /// "TTFT: 1,234 in 200–220 ms".
    Bin,
    /// "class A: 0.95".
    Category,
}

/// One data series.
#[derive(Debug, Clone)]
pub struct Series {
    pub(super) name: String,
    pub(super) kind: Kind,
    pub(super) points: Vec<(f64, f64)>,
    pub(super) bins: Vec<Bin>,
    pub(super) rows: Vec<Vec<f64>>,
    pub(super) pause_ms: f64,
    pub(super) band: Vec<(f64, f64, f64)>,
    pub(super) band_label: String,
    /// Error bars `(x, low, high)`, drawn as vertical lines with caps (an interval at one x).
    pub(super) whiskers: Vec<(f64, f64, f64)>,
    pub(super) whisker_label: String,
    /// Per point, what its tooltip names instead of the series and x (e.g. "a, run 2").
    pub(super) labels: Vec<String>,
    /// Dot radius of a scatter series (default 3.5).
    pub(super) radius: f64,
    pub(super) show_points: bool,
    /// Where a step series starts before its first point (0 for a CDF).
    pub(super) step_from: Option<f64>,
    pub(super) tip: Tip,
    /// Raw values behind the series when it was derived (a CDF's sample size).
    pub(super) values: usize,
    /// Non-finite inputs dropped while deriving the series.
    pub(super) skipped: usize,
}

impl Series {
    fn new(name: &str, kind: Kind) -> Self {
        Self {
            name: name.to_string(),
            kind,
            points: Vec::new(),
            bins: Vec::new(),
            rows: Vec::new(),
            pause_ms: f64::INFINITY,
            band: Vec::new(),
            band_label: String::new(),
            whiskers: Vec::new(),
            whisker_label: String::new(),
            labels: Vec::new(),
            radius: 3.5,
            show_points: true,
            step_from: None,
            tip: Tip::YAtX,
            values: 0,
            skipped: 0,
        }
    }

    /// A line through `points` in the given order.
    pub fn line(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self {
            points,
            ..Self::new(name, Kind::Line)
        }
    }

    /// Unjoined dots.
    pub fn scatter(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self {
            points,
            ..Self::new(name, Kind::Scatter)
        }
    }

    /// A staircase: each `y` holds from its `x` until the next point's `x`.
    pub fn step(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self {
            points,
            ..Self::new(name, Kind::Step)
        }
    }

    /// Bars spanning each bin's edges, `count` high.
    pub fn bars(name: &str, bins: Vec<Bin>) -> Self {
        Self {
            bins,
            tip: Tip::Bin,
            ..Self::new(name, Kind::Bars)
        }
    }

    /// Token timelines: `rows[i]` holds request `i`'s token arrival times (ms since the
    /// request was sent). Gaps between consecutive tokens longer than
    /// `pause_threshold_ms` are drawn highlighted as pauses.
    pub fn segments(name: &str, rows: Vec<Vec<f64>>, pause_threshold_ms: f64) -> Self {
        Self {
            rows,
            pause_ms: pause_threshold_ms,
            ..Self::new(name, Kind::Segments)
        }
    }

    /// The empirical CDF of `values` as a step series in percent (y from 0 to 100);
    /// non-finite values are left out and counted.
    pub fn cdf(name: &str, values: &[f64]) -> Self {
        let (points, skipped) = cdf_points(values);
        Self {
            points,
            step_from: Some(0.0),
            tip: Tip::Cdf,
            values: values.len(),
            skipped,
            ..Self::new(name, Kind::Step)
        }
    }

    /// Adds a shaded band (e.g. a confidence interval) drawn under the series:
    /// `(x, low, high)` triples, in x order.
    pub fn with_band(mut self, label: &str, band: Vec<(f64, f64, f64)>) -> Self {
        self.band = band;
        self.band_label = label.to_string();
        self
    }

    /// Adds error bars: `(x, low, high)` triples, each drawn as a vertical line with caps
    /// from `low` to `high` at `x` (e.g. the confidence interval of a mean).
    pub fn with_whiskers(mut self, label: &str, whiskers: Vec<(f64, f64, f64)>) -> Self {
        self.whiskers = whiskers;
        self.whisker_label = label.to_string();
        self
    }

    /// Names each point for its tooltip (`labels[i]` for `points[i]`): "a, run 2: 512
    /// ms" instead of "series 512 ms at x". Missing labels fall back to the default.
    pub fn with_labels(mut self, labels: Vec<String>) -> Self {
        self.labels = labels;
        self
    }

    /// Whether each point gets a hoverable dot (default true). Turn off for lines that
    /// are not measurements, such as a fitted model.
    pub fn show_points(mut self, show: bool) -> Self {
        self.show_points = show;
        self
    }

    /// The series name shown in the legend and tooltips.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the series is drawn.
    pub fn kind(&self) -> Kind {
        self.kind
    }
}

/// What a reference line marks; decides its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// The knee of a latency–load curve.
    Knee,
    /// The load at which the system saturates.
    Saturation,
    /// A service-level objective bound.
    Slo,
    /// Anything else.
    Note,
}

/// A labelled reference line across the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub(super) vertical: bool,
    pub(super) value: f64,
    pub(super) label: String,
    pub(super) kind: MarkerKind,
}

impl Marker {
    /// A vertical line at `x`.
    pub fn vertical(x: f64, label: &str) -> Self {
        Self {
            vertical: true,
            value: x,
            label: label.to_string(),
            kind: MarkerKind::Note,
        }
    }

    /// A horizontal line at `y`.
    pub fn horizontal(y: f64, label: &str) -> Self {
        Self {
            vertical: false,
            value: y,
            label: label.to_string(),
            kind: MarkerKind::Note,
        }
    }

    /// Sets what the line marks.
    pub fn kind(mut self, kind: MarkerKind) -> Self {
        self.kind = kind;
        self
    }
}

/// One point of a [`Chart::curve`](super::Chart::curve), with an optional confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurvePoint {
    /// Position along x (e.g. offered load).
    pub x: f64,
    /// Measured value (e.g. P99 TTFT).
    pub y: f64,
    /// `(low, high)` bounds of the interval around `y`, if known.
    pub ci: Option<(f64, f64)>,
}
