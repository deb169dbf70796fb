//! A percentile with its confidence interval, as a reader sees it: "P99 420 ms (360–620)",
//! "P99 870 ms (≥ 620)" when the sample cannot bound the tail from above, and the figure
//! alone when its interval is narrower than its digits.
//!
//! The figure and its bounds are rounded to a tenth of the interval's width (never finer
//! than [`fmt_ms`] would print), so no digit is shown that the interval says is noise; the
//! lower bound is rounded down and the upper up, so rounding never narrows the interval.

use crate::metrics::summary::{Bounded, SummaryBounds};
use crate::report::terminal::fmt_ms;
use crate::stats::percentile_bounds::Bound;
use crate::stats::Distribution;

/// Relative width (hi − lo over the figure) below which an interval is not printed: within
/// about ±1 %, the figure's third significant digit already says as much.
pub const SHOWN_ABOVE: f64 = 0.02;

/// `value` ms with its interval when the interval is wider than [`SHOWN_ABOVE`] or open.
/// The interval is first stretched to hold `value` (a streamed run's ITL interval comes
/// from its sample, the figure from every gap), so the figure never reads outside it.
pub fn fmt_ms_bounded(value: f64, bound: Option<Bound>) -> String {
    let Some(b) = bound.filter(|_| value.is_finite() && value > 0.0) else {
        return fmt_ms(value);
    };
    let b = Bound {
        lo: b.lo.map(|lo| lo.min(value)),
        hi: b.hi.map(|hi| hi.max(value)),
    };
    if b.relative_width(value).is_some_and(|w| w <= SHOWN_ABOVE) {
        return fmt_ms(value);
    }
    // Seconds from 10 s, as fmt_ms; the step in that unit.
    let (scale, unit) = if value >= 10_000.0 {
        (1000.0, "s")
    } else {
        (1.0, "ms")
    };
    let own_step: f64 = if value >= 10_000.0 {
        0.01
    } else if value >= 100.0 {
        1.0
    } else if value >= 1.0 {
        0.1
    } else {
        0.001
    };
    let step = match (b.lo, b.hi) {
        (Some(lo), Some(hi)) if hi > lo => {
            own_step.max(10f64.powf(((hi - lo) / scale).log10().floor()) / 10.0)
        }
        _ => own_step,
    };
    // The figure keeps two significant digits however wide its interval (4.6 ms within
    // 4.0–150 is "4.6", not "0").
    let figure_step = step.min(
        10f64
            .powf((value / scale).log10().floor() - 1.0)
            .max(own_step),
    );
    let figure = format!(
        "{} {unit}",
        on_step(value / scale, figure_step, Toward::Nearest)
    );
    let show = |v: f64, toward| on_step(v / scale, step, toward);
    let interval = match (b.lo, b.hi) {
        (Some(lo), Some(hi)) => format!("{}–{}", show(lo, Toward::Down), show(hi, Toward::Up)),
        (Some(lo), None) => format!("≥ {}", show(lo, Toward::Down)),
        (None, Some(hi)) => format!("≤ {}", show(hi, Toward::Up)),
        (None, None) => "too few requests for an interval".to_string(),
    };
    format!("{figure} ({interval})")
}

/// Which way a figure rounds to its step.
#[derive(Clone, Copy)]
enum Toward {
    Nearest,
    Down,
    Up,
}

/// `v` rounded `toward` a multiple of `step` (a power of ten), printed with the decimals the
/// step has. Whole steps are counted with a hair of slack, so 0.3 on a step of 0.1 is 3
/// steps down, not the 2 that the binary fraction 2.999… would floor to.
fn on_step(v: f64, step: f64, toward: Toward) -> String {
    let decimals = (-step.log10().round()).max(0.0) as usize;
    let steps = v / step;
    let whole = match toward {
        Toward::Nearest => steps.round(),
        Toward::Down => (steps + 1e-9).floor(),
        Toward::Up => (steps - 1e-9).ceil(),
    };
    format!("{:.decimals$}", whole * step)
}

/// Percentile `percentile` (0–100, one of the reported five) of `d` with its interval from
/// `bounds`; "-" without a distribution.
pub fn opt_ms_bounded(
    d: Option<Distribution>,
    bounds: Option<SummaryBounds>,
    metric: Bounded,
    percentile: f64,
) -> String {
    let Some(d) = d else {
        return "-".into();
    };
    let value = d.at(percentile);
    fmt_ms_bounded(value, bounds.and_then(|b| b.of(metric, percentile)))
}

/// The one line that says what the brackets are.
pub fn legend(bounds: Option<SummaryBounds>) -> String {
    let confidence = bounds.map_or(crate::stats::percentile_bounds::DEFAULT_CONFIDENCE, |b| {
        b.confidence
    });
    format!(
        "(a–b): {} % interval of the true value · (≥ a): not bounded above · docs/metrics.md",
        // 0.95 → "95", 0.995 → "99.5".
        format!("{:.1}", confidence * 100.0).trim_end_matches(".0")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(lo: Option<f64>, hi: Option<f64>) -> Option<Bound> {
        Some(Bound { lo, hi })
    }

    #[test]
    fn figures_are_rounded_to_what_their_interval_allows() {
        // Width 250 ms: tens of ms are the last digit worth showing.
        assert_eq!(
            fmt_ms_bounded(423.7, b(Some(361.2), Some(611.9))),
            "420 ms (360–620)"
        );
        // Width 5.15 ms at 46 ms: tenths, as fmt_ms prints anyway.
        assert_eq!(
            fmt_ms_bounded(46.03, b(Some(44.12), Some(49.27))),
            "46.0 ms (44.1–49.3)"
        );
        // Seconds from 10 s: width 4.2 s, tenths of a second.
        assert_eq!(
            fmt_ms_bounded(12_345.0, b(Some(11_020.0), Some(15_230.0))),
            "12.3 s (11.0–15.3)"
        );
    }

    #[test]
    fn open_sides_and_narrow_intervals_read_plainly() {
        assert_eq!(
            fmt_ms_bounded(870.2, b(Some(620.5), None)),
            "870 ms (≥ 620)"
        );
        assert_eq!(
            fmt_ms_bounded(870.2, b(None, None)),
            "870 ms (too few requests for an interval)"
        );
        // A wide interval does not round its figure away; an interval from a sample that
        // left the figure out is stretched to hold it.
        assert_eq!(
            fmt_ms_bounded(4.6, b(Some(4.0), Some(150.0))),
            "4.6 ms (0–150)"
        );
        assert_eq!(
            fmt_ms_bounded(20.0, b(Some(10.0), Some(15.0))),
            "20 ms (10–20)"
        );
        // Binary fractions do not push a bound a step out: 0.3 stays 0.3.
        assert_eq!(
            fmt_ms_bounded(2.0, b(Some(0.3), Some(3.3))),
            "2.0 ms (0.3–3.3)"
        );
        // Within ±1 %: the figure alone, as fmt_ms prints it.
        assert_eq!(fmt_ms_bounded(46.03, b(Some(45.9), Some(46.4))), "46.0 ms");
        assert_eq!(fmt_ms_bounded(46.03, None), "46.0 ms");
    }
}
