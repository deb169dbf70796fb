//! A chart of repeated runs per group (system), for comparison pages: each run's value as
//! a dot, and beside them the group's mean with its confidence interval as an error bar.
//!
//! Showing every run, not only the mean, lets a reader see how much the runs of one
//! system disagree and whether one odd run carries a difference (draft section 6.3 asks
//! for repeated runs and their spread). The statistics are computed elsewhere
//! (`stats::interval`); the chart only draws the numbers it is given.

use super::axis::Unit;
use super::charts::{Chart, Series, Tip};

/// One group of a [`Chart::runs_by_group`]: a system and its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RunGroup {
    /// The group's name, shown under its slot.
    pub name: String,
    /// `(label, value)` per run, e.g. `("run 2", 512.0)`; a non-finite value (the run has
    /// none) is left out and counted in the chart's description.
    pub runs: Vec<(String, f64)>,
    /// Mean over the runs, if any.
    pub mean: Option<f64>,
    /// Confidence interval of the mean `(low, high)`, when there were enough runs.
    pub ci: Option<(f64, f64)>,
}

/// Half the width of the strip where one group's run dots spread, in slots.
const SPREAD: f64 = 0.11;
/// Where the run dots (left) and the mean (right) sit within a slot.
const RUNS_AT: f64 = -0.14;
const MEAN_AT: f64 = 0.14;

impl Chart {
    /// One slot per group: its runs' values as dots on the left, its mean (and, where
    /// given, the interval labelled `interval_label`) on the right. The y axis is
    /// `label` in `unit`; it does not start at zero (dots, not bars: a narrow range of
    /// values stays readable), and an axis break drawn at its foot says so.
    pub fn runs_by_group(
        id: &str,
        title: &str,
        label: &str,
        unit: Unit,
        groups: &[RunGroup],
        interval_label: &str,
    ) -> Self {
        let (mut runs, mut run_labels) = (Vec::new(), Vec::new());
        let (mut means, mut mean_labels, mut whiskers) = (Vec::new(), Vec::new(), Vec::new());
        for (i, g) in groups.iter().enumerate() {
            let slot = i as f64;
            let n = g.runs.len();
            for (k, (run, v)) in g.runs.iter().enumerate() {
                // Spread evenly across the strip, so equal values stay distinguishable.
                let offset = if n > 1 {
                    -SPREAD + 2.0 * SPREAD * k as f64 / (n - 1) as f64
                } else {
                    0.0
                };
                runs.push((slot + RUNS_AT + offset, *v));
                run_labels.push(format!("{}, {run}", g.name));
            }
            if let Some(m) = g.mean {
                means.push((slot + MEAN_AT, m));
                mean_labels.push(format!("{}, mean of {n} runs", g.name));
            }
            if let Some((lo, hi)) = g.ci {
                whiskers.push((slot + MEAN_AT, lo, hi));
            }
        }
        let mut run_series = Series::scatter("runs", runs).with_labels(run_labels);
        run_series.tip = Tip::Category;
        let mut mean_series = Series::scatter("mean", means).with_labels(mean_labels);
        mean_series.tip = Tip::Category;
        mean_series.radius = 5.5;
        if !whiskers.is_empty() {
            mean_series = mean_series.with_whiskers(interval_label, whiskers);
        }
        let mut chart = Chart::new(id, title)
            .y_axis(label, unit)
            .y_from_zero(false)
            .series(run_series)
            .series(mean_series);
        chart.categories = groups.iter().map(|g| g.name.clone()).collect();
        chart.x.label = String::new();
        chart
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str, values: &[f64], ci: Option<(f64, f64)>) -> RunGroup {
        RunGroup {
            name: name.into(),
            runs: values
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("run {}", i + 1), *v))
                .collect(),
            mean: Some(values.iter().sum::<f64>() / values.len() as f64),
            ci,
        }
    }

    #[test]
    fn every_run_is_a_point_and_the_interval_an_error_bar() {
        let c = Chart::runs_by_group(
            "ttft-p50",
            "TTFT P50 per run",
            "TTFT P50",
            Unit::Ms,
            &[
                group("a", &[100.0, 102.0, 98.0], Some((98.5, 101.4))),
                RunGroup {
                    mean: Some(130.0),
                    ..group("b", &[130.0, f64::NAN], None)
                },
            ],
            "95 % interval",
        );
        let svg = c.render();
        // 5 run dots (one not finite, skipped) and 2 means.
        assert!(svg.contains("data-points=\"6\""), "{svg}");
        assert!(svg.contains("data-skipped=\"1\""));
        assert_eq!(svg.matches("class=\"pt\"").count(), 6);
        assert!(svg.contains("<title>b, mean of 2 runs: 130 ms</title>"));
        assert_eq!(svg.matches("class=\"ci\"").count(), 1);
        assert!(svg.contains("<title>a, run 2: 102 ms</title>"), "{svg}");
        assert!(svg.contains("<title>a, mean of 3 runs: 100 ms</title>"));
        assert!(svg.contains("<title>a, 95 % interval: 98.5 ms to 101 ms</title>"));
        assert!(svg.contains("Categories: a, b"));
        // The dots of one slot sit left of its mean, the slots at 0 and 1.
        let runs = &c.series[0].points;
        assert!((runs[0].0 - (-0.25)).abs() < 1e-12 && (runs[2].0 - (-0.03)).abs() < 1e-12);
        assert!((c.series[1].points[1].0 - 1.14).abs() < 1e-12);
        assert!(!c.y.zero);
    }

    /// Issue 23: a value axis that does not reach zero carries an explicit break (and its
    /// description says where it starts); one that shows zero has none.
    #[test]
    fn an_axis_that_misses_zero_is_marked_with_a_break() {
        let zoomed = Chart::runs_by_group(
            "tok",
            "Output throughput per run",
            "Output throughput",
            Unit::TokPerS,
            &[
                group("a", &[1000.0, 1010.0, 990.0], None),
                group("b", &[900.0, 910.0, 890.0], None),
            ],
            "95 % interval",
        )
        .render();
        assert_eq!(
            zoomed.matches("class=\"axis-break\"").count(),
            1,
            "{zoomed}"
        );
        assert!(zoomed.contains("class=\"brk\""));
        assert!(zoomed.contains(", not at zero (marked by a break on the axis)."));
        let from_zero = Chart::new("z", "From zero")
            .series(Series::scatter("s", vec![(1.0, 1000.0), (2.0, 1010.0)]))
            .render();
        assert!(!from_zero.contains("axis-break"), "{from_zero}");
        // Values below zero that miss it are cut at the top instead; the break is still one.
        let negative = Chart::new("n", "Below zero")
            .y_from_zero(false)
            .series(Series::scatter("s", vec![(1.0, -1000.0), (2.0, -1010.0)]))
            .render();
        assert_eq!(negative.matches("class=\"axis-break\"").count(), 1);
    }
}
