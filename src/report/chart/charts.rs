//! The chart model: a [`Chart`] builder, its [`Series`] and [`Marker`]s, and ready-made
//! constructors for the charts a servebench report shows (latency CDFs and histograms,
//! per-request token timelines, time series, load curves with confidence bands, fits,
//! per-class bars).
//!
//! A chart is plain data until [`Chart::render`] lays it out (in `render.rs`), so
//! callers can keep adjusting titles, units and scales after using a constructor.

use super::axis::{Scale, Unit};
use super::data::{cdf_points, histogram, Bin, Bins};

/// Default drawing width in SVG user units; the SVG scales to its container.
pub const WIDTH: f64 = 720.0;
/// Default drawing height in SVG user units.
pub const HEIGHT: f64 = 360.0;
/// Default cap on drawn points per series; larger series are decimated.
pub const MAX_POINTS: usize = 2000;
/// Default cap on rows (requests) drawn by a timeline.
pub const MAX_ROWS: usize = 80;

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

/// One point of a [`Chart::curve`], with an optional confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurvePoint {
    /// Position along x (e.g. offered load).
    pub x: f64,
    /// Measured value (e.g. P99 TTFT).
    pub y: f64,
    /// `(low, high)` bounds of the interval around `y`, if known.
    pub ci: Option<(f64, f64)>,
}

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

    /// The CDF of latencies in milliseconds: y is the percentage of values at or below x.
    pub fn cdf(name: &str, values_ms: &[f64]) -> Self {
        Self::new(
            &format!("{name}-cdf"),
            &format!("{name}: cumulative distribution"),
        )
        .x_axis(name, Unit::Ms)
        .y_axis("share ≤ x", Unit::Percent)
        .y_range(0.0, 100.0)
        .series(Series::cdf(name, values_ms))
    }

    /// A histogram of `values` (read as milliseconds; change with [`Chart::x_axis`]).
    /// [`Bins::Log`] also switches the x axis to a log scale.
    pub fn histogram(name: &str, values: &[f64], bins: Bins) -> Self {
        let h = histogram(values, bins);
        let mut series = Series::bars(name, h.bins);
        series.values = values.len();
        series.skipped = h.skipped;
        let scale = if h.log { Scale::Log } else { Scale::Linear };
        let chart = Self::new(&format!("{name}-hist"), &format!("{name}: histogram"))
            .x_axis(name, Unit::Ms)
            .x_scale(scale)
            .y_axis("count", Unit::Plain)
            .series(series);
        match (h.log, chart.series[0].bins.first()) {
            (true, Some(_)) => chart.describe("Bins are equal widths on a log scale."),
            (false, Some(b)) => {
                let width = b.hi - b.lo;
                let text = format!("Bins are {} wide.", Unit::Ms.format(width));
                chart.describe(&text)
            }
            _ => chart,
        }
    }

    /// Per-request token timelines: one row per request (first at the top), a tick per
    /// token at its arrival time in ms since send, and gaps over `pause_threshold_ms`
    /// highlighted as pauses. More than [`MAX_ROWS`] requests are sampled evenly.
    pub fn timeline(rows: &[Vec<f64>], pause_threshold_ms: f64) -> Self {
        let shown = rows.len().min(MAX_ROWS) as f64;
        let mut chart = Self::new("timeline", "Token arrivals per request")
            .x_axis("time since request sent", Unit::Ms)
            .y_axis("request", Unit::Plain)
            .size(WIDTH, (110.0 + shown * 6.0).clamp(HEIGHT * 0.75, 600.0))
            .series(Series::segments(
                "tokens",
                rows.to_vec(),
                pause_threshold_ms,
            ));
        chart.x.zero = true;
        chart.y.zero = false;
        chart.y.tight = true;
        chart.y.reversed = true;
        chart
    }

    /// Values over time: one line per `(name, [(t_s, value)])`, t in seconds.
    pub fn time_series<S: AsRef<str>>(series: &[(S, Vec<(f64, f64)>)]) -> Self {
        let mut chart = Self::new("time-series", "Over time").x_axis("time", Unit::S);
        chart.x.tight = true;
        for (name, points) in series {
            chart = chart.series(Series::line(name.as_ref(), points.clone()));
        }
        chart
    }

    /// A measured curve (e.g. P99 TTFT against offered load) with its confidence band
    /// and reference markers such as the knee, saturation point or SLO bound.
    pub fn curve(name: &str, points: &[CurvePoint], markers: Vec<Marker>) -> Self {
        let line: Vec<(f64, f64)> = points.iter().map(|p| (p.x, p.y)).collect();
        let band: Vec<(f64, f64, f64)> = points
            .iter()
            .filter_map(|p| p.ci.map(|(lo, hi)| (p.x, lo, hi)))
            .collect();
        let mut series = Series::line(name, line);
        if !band.is_empty() {
            series = series.with_band("confidence interval", band);
        }
        let mut chart = Self::new(name, name).series(series);
        chart.markers = markers;
        chart
    }

    /// Measured points with a fitted model drawn as a line, sampled from `fitted` across
    /// the points' x range (geometrically when that range spans more than two decades).
    pub fn scatter_with_fit(
        name: &str,
        points: &[(f64, f64)],
        fit_name: &str,
        fitted: impl Fn(f64) -> f64,
    ) -> Self {
        let xs = points.iter().map(|p| p.0).filter(|x| x.is_finite());
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        let mut fit = Vec::new();
        if lo <= hi {
            let geometric = lo > 0.0 && hi / lo > 100.0;
            let n = 120;
            for i in 0..=n {
                let t = i as f64 / n as f64;
                let x = if geometric {
                    lo * (hi / lo).powf(t)
                } else {
                    lo + (hi - lo) * t
                };
                fit.push((x, fitted(x)));
            }
        }
        Self::scatter_with_fit_points(name, points, fit_name, fit)
    }

    /// Like [`Chart::scatter_with_fit`], with the fitted line given as points.
    pub fn scatter_with_fit_points(
        name: &str,
        points: &[(f64, f64)],
        fit_name: &str,
        fit: Vec<(f64, f64)>,
    ) -> Self {
        Self::new(name, name)
            .series(Series::scatter(name, points.to_vec()))
            .series(Series::line(fit_name, fit).show_points(false))
    }

    /// One bar per `(label, value)` category, e.g. per-class fairness.
    pub fn bars<S: AsRef<str>>(name: &str, categories: &[(S, f64)]) -> Self {
        let bins = (0..categories.len())
            .map(|i| Bin {
                lo: i as f64 - 0.35,
                hi: i as f64 + 0.35,
                count: categories[i].1,
            })
            .collect();
        let mut series = Series::bars(name, bins);
        series.tip = Tip::Category;
        let mut chart = Self::new(name, name)
            .y_axis(name, Unit::Plain)
            .series(series);
        chart.categories = categories
            .iter()
            .map(|c| c.0.as_ref().to_string())
            .collect();
        chart.x.label = String::new();
        chart
    }
}

impl Chart {
    /// Bars grouped by category: one series per `(name, values)`, `values[i]` the bar of
    /// category `i` (a non-finite value leaves a gap). E.g. TTFT P50 and P99 per class.
    pub fn grouped_bars<C: AsRef<str>, S: AsRef<str>>(
        name: &str,
        categories: &[C],
        groups: &[(S, Vec<f64>)],
    ) -> Self {
        let n = groups.len().max(1) as f64;
        let width = 0.7 / n;
        let mut chart = Self::new(name, name).y_axis(name, Unit::Plain);
        for (j, (series_name, values)) in groups.iter().enumerate() {
            let bins = (0..categories.len())
                .map(|i| {
                    let lo = i as f64 - 0.35 + j as f64 * width;
                    Bin {
                        lo,
                        hi: lo + width,
                        count: values.get(i).copied().unwrap_or(f64::NAN),
                    }
                })
                .collect();
            let mut series = Series::bars(series_name.as_ref(), bins);
            series.tip = Tip::Category;
            chart = chart.series(series);
        }
        chart.categories = categories.iter().map(|c| c.as_ref().to_string()).collect();
        chart.x.label = String::new();
        chart
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

    #[test]
    fn cdf_constructor_sets_percent_axis() {
        let c = Chart::cdf("TTFT", &[1.0, 2.0, f64::NAN]);
        assert_eq!(c.y.range, Some((0.0, 100.0)));
        assert_eq!(c.series[0].points, vec![(1.0, 50.0), (2.0, 100.0)]);
        assert_eq!(c.series[0].skipped, 1);
        assert_eq!(c.chart_id(), "ttft-cdf");
    }

    #[test]
    fn fit_is_sampled_over_the_data_range() {
        let c = Chart::scatter_with_fit("m", &[(1.0, 1.0), (1000.0, 9.0)], "fit", |x| x.ln());
        let fit = &c.series[1].points;
        assert_eq!(fit.len(), 121);
        assert_eq!(fit[0].0, 1.0);
        assert!((fit[120].0 - 1000.0).abs() < 1e-9);
        assert!(!c.series[1].show_points);
    }

    #[test]
    fn grouped_bars_share_each_slot() {
        let c = Chart::grouped_bars(
            "TTFT",
            &["a", "b"],
            &[("P50", vec![1.0, 2.0]), ("P99", vec![3.0, f64::NAN])],
        );
        assert_eq!(c.series.len(), 2);
        let b = &c.series[1].bins;
        assert!((b[0].lo - 0.0).abs() < 1e-12 && (b[0].hi - 0.35).abs() < 1e-12);
        assert!((b[1].lo - 1.0).abs() < 1e-12);
        assert!(b[1].count.is_nan());
        assert_eq!(c.categories, vec!["a", "b"]);
    }

    #[test]
    fn category_bars_sit_on_integer_slots() {
        let c = Chart::bars("share", &[("a", 1.0), ("b", 2.0)]);
        assert_eq!(c.categories, vec!["a", "b"]);
        assert_eq!(c.series[0].bins[1].count, 2.0);
        assert!((c.series[0].bins[1].lo - 0.65).abs() < 1e-12);
    }
}
