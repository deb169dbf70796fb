//! Axis ranges, tick positions and the text of tick labels and tooltips.
//!
//! Readers compare values against gridlines, so ticks sit on "nice" numbers: steps of
//! 1, 2 or 5 times a power of ten on linear axes, whole decades (with 2× and 5× minor
//! ticks) on log axes. Degenerate inputs (one point, all values equal, nothing positive
//! on a log axis) still produce a usable axis with the data in view.

use super::svg::fmt_fixed;

/// What a value measures; decides how tooltips and tick labels read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
    /// Tokens per second.
    TokPerS,
    /// Requests per second.
    ReqPerS,
    /// A percentage, given as 0–100 (not as a fraction).
    Percent,
    /// A bare number (counts, ratios, row numbers).
    Plain,
}

impl Unit {
    /// The unit as written after a number, `""` for [`Unit::Plain`].
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::S => "s",
            Unit::TokPerS => "tok/s",
            Unit::ReqPerS => "req/s",
            Unit::Percent => "%",
            Unit::Plain => "",
        }
    }

    /// A value with its unit, for tooltips and descriptions: `512 ms`, `12.0 req/s`,
    /// `45.2%`, `1,234`. Precision follows magnitude (about three significant digits).
    pub fn format(self, v: f64) -> String {
        let n = fmt_value(v);
        match self {
            Unit::Plain => n,
            Unit::Percent => format!("{n}%"),
            u => format!("{n} {}", u.symbol()),
        }
    }

    /// Axis title text: `TTFT (ms)`, or just the label for plain numbers and percentages
    /// (whose tick labels already carry the `%`).
    pub fn axis_title(self, label: &str) -> String {
        match self {
            Unit::Plain | Unit::Percent => label.to_string(),
            u => format!("{label} ({})", u.symbol()),
        }
    }
}

/// A number for humans: about three significant digits, thousands separated, `n/a` when
/// not finite.
pub fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    let a = v.abs();
    let s = if a >= 10_000.0 {
        return group_thousands(v);
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a == 0.0 {
        "0".to_string()
    } else if a < 1e-4 {
        return format!("{v:.2e}");
    } else {
        let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
        format!("{v:.decimals$}")
    };
    if s.starts_with('-') && s.trim_start_matches(['-', '0', '.']).is_empty() {
        return s[1..].to_string();
    }
    s
}

/// Rounds to an integer and separates thousands with commas: `-1,234,568`.
pub fn group_thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if v < 0.0 && digits != "0" {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Linear or logarithmic mapping of values to an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Equal distances for equal differences.
    Linear,
    /// Equal distances for equal ratios; only positive values can be shown.
    Log,
}

/// One tick on an axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// Position in data units.
    pub value: f64,
    /// Major ticks get gridlines and labels first; minor labels are shown only if there
    /// is room.
    pub major: bool,
    /// The label text.
    pub label: String,
}

/// A finished axis: its shown range and ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// How values map to positions.
    pub scale: Scale,
    /// Value at the start of the axis.
    pub lo: f64,
    /// Value at the end of the axis.
    pub hi: f64,
    /// Ticks in increasing order, all within `lo..=hi`.
    pub ticks: Vec<Tick>,
}

impl Axis {
    /// A linear axis covering `min..=max` with about `target` intervals.
    ///
    /// Unless `tight`, the range is widened to the enclosing ticks so that the data ends
    /// on gridlines; `tight` keeps it exactly (time axes, row numbers).
    pub fn linear(min: f64, max: f64, target: usize, unit: Unit, tight: bool) -> Self {
        let (lo, hi, step, values) = linear_ticks(min, max, target, tight);
        let labels = linear_labels(&values, step, unit);
        let ticks = values
            .into_iter()
            .zip(labels)
            .map(|(value, label)| Tick {
                value,
                major: true,
                label,
            })
            .collect();
        Self {
            scale: Scale::Linear,
            lo,
            hi,
            ticks,
        }
    }

    /// A log axis covering `min..=max` (both must be positive; see [`log_ticks`]).
    pub fn log(min: f64, max: f64, unit: Unit, tight: bool) -> Self {
        let (lo, hi, values) = log_ticks(min, max, tight);
        let ticks = values
            .into_iter()
            .map(|(value, major)| Tick {
                value,
                major,
                label: with_percent(compact(value), unit),
            })
            .collect();
        Self {
            scale: Scale::Log,
            lo,
            hi,
            ticks,
        }
    }

    /// An axis of named categories at positions `0..n`, each with a half-slot margin.
    pub fn categorical(labels: &[String]) -> Self {
        let ticks = labels
            .iter()
            .enumerate()
            .map(|(i, label)| Tick {
                value: i as f64,
                major: true,
                label: label.clone(),
            })
            .collect();
        Self {
            scale: Scale::Linear,
            lo: -0.5,
            hi: labels.len().max(1) as f64 - 0.5,
            ticks,
        }
    }

    /// Where `v` lies along the axis, 0 at `lo` and 1 at `hi`; `NaN` when it cannot be
    /// shown (not finite, or not positive on a log axis).
    pub fn frac(&self, v: f64) -> f64 {
        if !v.is_finite() {
            return f64::NAN;
        }
        let (a, b, x) = match self.scale {
            Scale::Linear => (self.lo, self.hi, v),
            Scale::Log if v > 0.0 => (self.lo.ln(), self.hi.ln(), v.ln()),
            Scale::Log => return f64::NAN,
        };
        if b - a == 0.0 {
            0.5
        } else {
            (x - a) / (b - a)
        }
    }
}

/// The 1, 2, 5 × 10ⁿ step nearest to `raw` in ratio terms (1 for nonsense input).
///
/// Rounding geometrically rather than always upwards keeps the number of intervals close
/// to what was asked for: 0–97 in five intervals gives steps of 20, not 50.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let exp = raw.log10().floor() as i32;
    let f = raw / 10f64.powi(exp);
    // Thresholds are the geometric means of neighbouring steps: √2, √10, √50.
    let (m, exp) = if f < 2f64.sqrt() {
        (1, exp)
    } else if f < 10f64.sqrt() {
        (2, exp)
    } else if f < 50f64.sqrt() {
        (5, exp)
    } else {
        (1, exp + 1)
    };
    // Parsing "5e-3" yields the double nearest 0.005, unlike 5.0 * 10f64.powi(-3).
    format!("{m}e{exp}").parse().unwrap_or(1.0)
}

/// Widens an empty or inverted range so that it has a width and contains the data:
/// zero becomes 0–1, any other single value `v` becomes `v ± 10 %`.
fn widen(min: f64, max: f64) -> (f64, f64) {
    let (min, max) = match (min.is_finite(), max.is_finite()) {
        (true, true) => (min.min(max), min.max(max)),
        (true, false) => (min, min),
        (false, true) => (max, max),
        (false, false) => (0.0, 1.0),
    };
    let scale = min.abs().max(max.abs());
    if max - min > scale * 1e-12 {
        return (min, max);
    }
    if scale == 0.0 {
        (0.0, 1.0)
    } else {
        (min - scale * 0.1, max + scale * 0.1)
    }
}

/// Decimal places that show every multiple of `step` exactly.
fn step_decimals(step: f64) -> usize {
    (-(step.log10() + 1e-9).floor()).max(0.0) as usize
}

/// Snaps a computed tick to the decimal grid so that 3 × 0.2 is 0.6, not 0.6000000000000001.
fn clean(v: f64, decimals: usize) -> f64 {
    format!("{v:.decimals$}").parse::<f64>().unwrap_or(v) + 0.0
}

/// Linear ticks for `min..=max`: returns `(lo, hi, step, ticks)`.
///
/// With `tight` false, `lo` and `hi` are the outermost ticks (0–97 gives 0–100 in steps
/// of 20); with `tight` true they are the (widened) data range and only ticks inside it
/// are returned.
pub fn linear_ticks(min: f64, max: f64, target: usize, tight: bool) -> (f64, f64, f64, Vec<f64>) {
    let (min, max) = widen(min, max);
    let step = nice_step((max - min) / target.max(1) as f64);
    let decimals = step_decimals(step);
    let (first, last) = if tight {
        ((min / step - 1e-9).ceil(), (max / step + 1e-9).floor())
    } else {
        ((min / step + 1e-9).floor(), (max / step - 1e-9).ceil())
    };
    let ticks: Vec<f64> = (0..=((last - first).max(0.0) as usize))
        .map(|i| clean((first + i as f64) * step, decimals))
        .collect();
    let (lo, hi) = if tight {
        (min, max)
    } else {
        (ticks[0], ticks[ticks.len() - 1])
    };
    (lo, hi, step, ticks)
}

/// Log ticks for `min..=max`: returns `(lo, hi, ticks)` where each tick is
/// `(value, major)`.
///
/// Majors are powers of ten (every second or third one when the range spans more than
/// eight decades, to keep labels apart); 2× and 5× minors are added when the range spans
/// at most six decades. Unless `tight`, the ends are the nearest 1, 2 or 5 × 10ⁿ around
/// the data. A single value is widened by a decade on both sides. Non-positive input
/// falls back to 1–10.
pub fn log_ticks(min: f64, max: f64, tight: bool) -> (f64, f64, Vec<(f64, bool)>) {
    let ok = |v: f64| v.is_finite() && v > 0.0;
    let (min, max) = match (ok(min), ok(max)) {
        (true, true) => (min.min(max), min.max(max)),
        (true, false) => (min, min),
        (false, true) => (max, max),
        (false, false) => (1.0, 10.0),
    };
    let mut e0 = (min.log10() + 1e-9).floor() as i32;
    let mut e1 = (max.log10() - 1e-9).ceil() as i32;
    let degenerate = e1 <= e0 || max / min < 1.0 + 1e-9;
    if degenerate {
        e0 = e0.min(e1) - 1;
        e1 = e0 + 2;
    }
    let pow = |m: u32, e: i32| format!("{m}e{e}").parse::<f64>().unwrap_or(f64::NAN);
    // Ends snap to the nearest 1, 2 or 5 × 10ⁿ outside the data rather than to whole
    // decades, which could leave most of an outer decade empty.
    let (lo, hi) = if degenerate {
        (pow(1, e0), pow(1, e1))
    } else if tight {
        (min, max)
    } else {
        let grid = |e: i32| [pow(1, e), pow(2, e), pow(5, e)];
        let lo = (e0..e1)
            .flat_map(grid)
            .rev()
            .find(|&v| v <= min * (1.0 + 1e-9));
        let hi = (e0..e1)
            .flat_map(grid)
            .chain([pow(1, e1)])
            .find(|&v| v >= max * (1.0 - 1e-9));
        (lo.unwrap_or(pow(1, e0)), hi.unwrap_or(pow(1, e1)))
    };
    let decades = (e1 - e0) as u32;
    let stride = decades.div_ceil(8).max(1) as i32;
    let minors = decades <= 6;
    let mut ticks = Vec::new();
    for e in e0..=e1 {
        ticks.push((pow(1, e), e.rem_euclid(stride) == 0));
        if minors && e < e1 {
            ticks.push((pow(2, e), false));
            ticks.push((pow(5, e), false));
        }
    }
    let slack = 1e-9;
    ticks.retain(|&(v, _)| v >= lo * (1.0 - slack) && v <= hi * (1.0 + slack));
    (lo, hi, ticks)
}

/// Labels for linear ticks sharing one `step`: all with the same number of decimals, and
/// with a k/M/G suffix when the largest tick reaches ten thousand.
fn linear_labels(values: &[f64], step: f64, unit: Unit) -> Vec<String> {
    let biggest = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let (div, suffix) = if biggest >= 1e10 {
        (1e9, "G")
    } else if biggest >= 1e7 {
        (1e6, "M")
    } else if biggest >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let decimals = step_decimals(step / div);
    values
        .iter()
        .map(|v| {
            let n = fmt_fixed(v / div, decimals).unwrap_or_default();
            let n = if n == "0" { n } else { format!("{n}{suffix}") };
            with_percent(n, unit)
        })
        .collect()
}

/// A short label for a log tick: `0.02`, `5`, `200`, `1k`, `50M`, `1e-6`.
fn compact(v: f64) -> String {
    let a = v.abs();
    let (div, suffix) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    if a > 0.0 && a < 1e-4 {
        return fmt_fixed(v / 10f64.powi(a.log10().floor() as i32), 1)
            .map(|m| format!("{m}e{}", a.log10().floor() as i32))
            .unwrap_or_default();
    }
    let x = v / div;
    let decimals = if x.abs() >= 1.0 || x == 0.0 {
        1
    } else {
        (-(x.abs().log10() + 1e-9).floor() as usize) + 1
    };
    format!("{}{suffix}", fmt_fixed(x, decimals).unwrap_or_default())
}

fn with_percent(label: String, unit: Unit) -> String {
    if unit == Unit::Percent {
        format!("{label}%")
    } else {
        label
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(axis: &Axis) -> Vec<f64> {
        axis.ticks.iter().map(|t| t.value).collect()
    }

    fn labels(axis: &Axis) -> Vec<&str> {
        axis.ticks.iter().map(|t| t.label.as_str()).collect()
    }

    #[test]
    fn nice_steps_are_one_two_five() {
        assert_eq!(nice_step(19.4), 20.0);
        assert_eq!(nice_step(0.13), 0.1);
        assert_eq!(nice_step(3.0), 2.0);
        assert_eq!(nice_step(7.0), 5.0);
        assert_eq!(nice_step(8.0), 10.0);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(0.0042), 0.005);
        assert_eq!(nice_step(f64::NAN), 1.0);
    }

    #[test]
    fn zero_to_97_ticks_by_twenty() {
        let a = Axis::linear(0.0, 97.0, 5, Unit::Ms, false);
        assert_eq!(values(&a), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(labels(&a), vec!["0", "20", "40", "60", "80", "100"]);
        assert_eq!((a.lo, a.hi), (0.0, 100.0));
    }

    #[test]
    fn fractional_and_offset_ranges() {
        let a = Axis::linear(0.0, 1.0, 5, Unit::Plain, false);
        assert_eq!(values(&a), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(labels(&a), vec!["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        let b = Axis::linear(-3.2, 7.9, 5, Unit::Plain, false);
        assert_eq!(values(&b), vec![-4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0]);
        let c = Axis::linear(1003.0, 1047.0, 4, Unit::Plain, false);
        assert_eq!(
            values(&c),
            vec![1000.0, 1010.0, 1020.0, 1030.0, 1040.0, 1050.0]
        );
    }

    #[test]
    fn tight_axis_keeps_range_and_inner_ticks() {
        let a = Axis::linear(0.5, 9.5, 5, Unit::S, true);
        assert_eq!((a.lo, a.hi), (0.5, 9.5));
        assert_eq!(values(&a), vec![2.0, 4.0, 6.0, 8.0]);
    }

    #[test]
    fn big_values_use_suffixes_and_percent_gets_sign() {
        let a = Axis::linear(0.0, 48_000.0, 5, Unit::TokPerS, false);
        assert_eq!(labels(&a), vec!["0", "10k", "20k", "30k", "40k", "50k"]);
        let p = Axis::linear(0.0, 100.0, 2, Unit::Percent, false);
        assert_eq!(labels(&p), vec!["0%", "50%", "100%"]);
    }

    #[test]
    fn zero_width_and_single_point_ranges() {
        let a = Axis::linear(5.0, 5.0, 5, Unit::Ms, false);
        assert!(a.lo < 5.0 && a.hi > 5.0, "{a:?}");
        assert!(a.ticks.len() >= 2);
        let z = Axis::linear(0.0, 0.0, 5, Unit::Ms, false);
        assert_eq!((z.lo, z.hi), (0.0, 1.0));
        let n = Axis::linear(f64::NAN, f64::INFINITY, 5, Unit::Ms, false);
        assert_eq!((n.lo, n.hi), (0.0, 1.0));
        let l = Axis::log(100.0, 100.0, Unit::Ms, false);
        assert_eq!((l.lo, l.hi), (10.0, 1000.0));
        assert!((l.frac(100.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn log_ticks_for_a_small_range() {
        let (lo, hi, ticks) = log_ticks(0.013, 0.87, false);
        assert_eq!((lo, hi), (0.01, 1.0));
        let majors: Vec<f64> = ticks.iter().filter(|t| t.1).map(|t| t.0).collect();
        let minors: Vec<f64> = ticks.iter().filter(|t| !t.1).map(|t| t.0).collect();
        assert_eq!(majors, vec![0.01, 0.1, 1.0]);
        assert_eq!(minors, vec![0.02, 0.05, 0.2, 0.5]);
        let a = Axis::log(0.013, 0.87, Unit::S, false);
        assert_eq!(
            labels(&a),
            vec!["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"]
        );
    }

    #[test]
    fn log_ticks_thin_out_over_many_decades() {
        let (lo, hi, ticks) = log_ticks(1e-3, 1e9, false);
        assert_eq!((lo, hi), (1e-3, 1e9));
        assert!(
            ticks.iter().all(|t| t.0 != 2e-3),
            "no 2x minors over 12 decades"
        );
        let labelled = ticks.iter().filter(|t| t.1).count();
        assert!((4..=8).contains(&labelled), "{ticks:?}");
        let a = Axis::log(1.0, 1e6, Unit::Ms, false);
        let majors: Vec<&str> = a
            .ticks
            .iter()
            .filter(|t| t.major)
            .map(|t| t.label.as_str())
            .collect();
        assert_eq!(majors, vec!["1", "10", "100", "1k", "10k", "100k", "1M"]);
    }

    #[test]
    fn log_range_ends_on_one_two_five() {
        let (lo, hi, ticks) = log_ticks(19.0, 1300.0, false);
        assert_eq!((lo, hi), (10.0, 2000.0));
        assert_eq!(ticks.last(), Some(&(2000.0, false)));
        let (lo, hi, _) = log_ticks(2.5, 480.0, false);
        assert_eq!((lo, hi), (2.0, 500.0));
        let (lo, hi, _) = log_ticks(2.5, 480.0, true);
        assert_eq!((lo, hi), (2.5, 480.0));
    }

    #[test]
    fn log_axis_positions() {
        let a = Axis::log(1.0, 1000.0, Unit::Ms, false);
        assert!((a.frac(10.0) - 1.0 / 3.0).abs() < 1e-12);
        assert!(a.frac(0.0).is_nan());
        assert!(a.frac(-1.0).is_nan());
        let (lo, hi, _) = log_ticks(-5.0, 0.0, false);
        assert_eq!((lo, hi), (1.0, 10.0));
    }

    #[test]
    fn values_read_with_units() {
        assert_eq!(Unit::Ms.format(512.3), "512 ms");
        assert_eq!(Unit::ReqPerS.format(12.0), "12.0 req/s");
        assert_eq!(Unit::S.format(1.5), "1.50 s");
        assert_eq!(Unit::Percent.format(45.24), "45.2%");
        assert_eq!(Unit::TokPerS.format(12_345.6), "12,346 tok/s");
        assert_eq!(Unit::Plain.format(0.01234), "0.0123");
        assert_eq!(Unit::Plain.format(0.0), "0");
        assert_eq!(Unit::Plain.format(-0.0001), "-0.000100");
        assert_eq!(Unit::Plain.format(f64::NAN), "n/a");
        assert_eq!(group_thousands(-1_234_567.8), "-1,234,568");
        assert_eq!(Unit::Ms.axis_title("TTFT"), "TTFT (ms)");
        assert_eq!(Unit::Percent.axis_title("requests ≤ x"), "requests ≤ x");
    }
}
