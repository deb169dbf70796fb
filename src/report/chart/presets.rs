//! Ready-made charts for what a servebench report shows: latency CDFs and histograms,
//! per-request token timelines, time series, load curves with confidence bands, fits and
//! per-class bars. Each returns a plain [`Chart`] that callers can keep adjusting.

use super::axis::{Scale, Unit};
use super::charts::{Chart, HEIGHT, MAX_ROWS, WIDTH};
use super::data::{histogram, Bin, Bins};
use super::series::{CurvePoint, Marker, Series, Tip};

impl Chart {
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

#[cfg(test)]
mod tests {
    use super::*;

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
