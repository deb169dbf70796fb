//! From raw measurements to what gets drawn: CDF steps, histogram bins, and
//! deterministic decimation.
//!
//! A benchmark run can record a million latencies; an SVG with a million elements is
//! unusable. These helpers shrink data for drawing in ways that are reproducible (the
//! same input always gives the same picture, so reports can be diffed and browser tests
//! can count elements) and that keep what readers look for: the first and last points,
//! the tails of distributions, and spikes in time series.

use super::axis::nice_step;

/// Largest number of bins the automatic rules produce: beyond this, bars become thinner
/// than a few pixels at 720 px and the histogram reads as noise.
pub const MAX_AUTO_BINS: usize = 60;

/// Upper bound for an explicitly requested bin count.
pub const MAX_BINS: usize = 1000;

/// One histogram bin (or one category bar).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bin {
    /// Left edge, in data units.
    pub lo: f64,
    /// Right edge, in data units.
    pub hi: f64,
    /// Bar height: a count for histograms, any value for category bars.
    pub count: f64,
}

/// How histogram bins are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bins {
    /// Freedman–Diaconis width, rounded to a 1-2-5 step, at most [`MAX_AUTO_BINS`] bins.
    Auto,
    /// Bins of equal width in log space (a whole number of bins per decade), for
    /// latencies whose tail spans orders of magnitude; non-positive values are skipped.
    Log,
    /// Exactly this many equal bins between the smallest and largest value.
    Count(usize),
}

/// Binned values with what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Bins in increasing order, adjacent, covering every counted value.
    pub bins: Vec<Bin>,
    /// Whether the bins are log-spaced (the chart should use a log x axis).
    pub log: bool,
    /// Values not counted: non-finite ones, and non-positive ones for [`Bins::Log`].
    pub skipped: usize,
}

/// Empirical CDF as step points: one `(value, percent ≤ value)` per distinct finite
/// value, in increasing order; also returns how many non-finite values were skipped.
pub fn cdf_points(values: &[f64]) -> (Vec<(f64, f64)>, usize) {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let skipped = values.len() - v.len();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mut out = Vec::new();
    for i in 0..v.len() {
        // Emit once per run of equal values, at its last (highest-rank) occurrence.
        if i + 1 == v.len() || v[i + 1] != v[i] {
            out.push((v[i], (i + 1) as f64 * 100.0 / n));
        }
    }
    (out, skipped)
}

/// Linear-interpolated quantile of sorted data (`q` in 0..=1); `NaN` when empty.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let i = pos.floor() as usize;
    let j = (i + 1).min(sorted.len() - 1);
    sorted[i] + (sorted[j] - sorted[i]) * (pos - i as f64)
}

/// Counts `values` into bins chosen by `bins`. Counts always add up to the number of
/// values not reported as skipped.
pub fn histogram(values: &[f64], bins: Bins) -> Histogram {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if bins == Bins::Log {
        v.retain(|x| *x > 0.0);
    }
    let skipped = values.len() - v.len();
    v.sort_by(f64::total_cmp);
    let log = bins == Bins::Log;
    let bins = match (v.first(), v.last()) {
        (Some(&min), Some(&max)) if min == max => vec![single_bin(min, v.len(), log)],
        (Some(_), Some(_)) => match bins {
            Bins::Auto => linear_bins(&v),
            Bins::Log => log_bins(&v),
            Bins::Count(k) => count_bins(&v, k.clamp(1, MAX_BINS)),
        },
        _ => Vec::new(),
    };
    Histogram { bins, log, skipped }
}

/// One bin centred on a value that every sample shares.
fn single_bin(v: f64, n: usize, log: bool) -> Bin {
    let (lo, hi) = if log {
        (v / 1.25, v * 1.25)
    } else if v == 0.0 {
        (-0.5, 0.5)
    } else {
        (v - v.abs() * 0.05, v + v.abs() * 0.05)
    };
    Bin {
        lo,
        hi,
        count: n as f64,
    }
}

/// Freedman–Diaconis bin width for sorted data, falling back to Sturges' rule when the
/// interquartile range is zero (many identical values).
fn fd_width(sorted: &[f64]) -> f64 {
    let n = sorted.len() as f64;
    let iqr = quantile_sorted(sorted, 0.75) - quantile_sorted(sorted, 0.25);
    let fd = 2.0 * iqr / n.cbrt();
    if fd > 0.0 {
        fd
    } else {
        let range = sorted[sorted.len() - 1] - sorted[0];
        range / (n.log2().ceil() + 1.0)
    }
}

/// Counts sorted values into `k` bins starting at `lo`, `index(v)` giving each bin.
fn count_into(sorted: &[f64], k: usize, index: impl Fn(f64) -> f64) -> Vec<f64> {
    let mut counts = vec![0.0; k];
    for &x in sorted {
        // Clamp: values on the last edge, and rounding at edges, stay in range.
        let i = index(x).floor().clamp(0.0, (k - 1) as f64) as usize;
        counts[i] += 1.0;
    }
    counts
}

fn linear_bins(sorted: &[f64]) -> Vec<Bin> {
    let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
    let mut w = nice_step(fd_width(sorted));
    let (mut lo, mut k);
    loop {
        lo = (min / w).floor() * w;
        k = ((max - lo) / w).floor() as usize + 1;
        if k <= MAX_AUTO_BINS {
            break;
        }
        // Next 1-2-5 step up: 1→2, 2→5, 5→10.
        w = nice_step(w * 2.2);
    }
    let counts = count_into(sorted, k, |x| (x - lo) / w);
    let edge = |i: usize| lo + i as f64 * w;
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| Bin {
            lo: edge(i),
            hi: edge(i + 1),
            count,
        })
        .collect()
}

fn count_bins(sorted: &[f64], k: usize) -> Vec<Bin> {
    let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
    let w = (max - min) / k as f64;
    let counts = count_into(sorted, k, |x| (x - min) / w);
    let edge = |i: usize| if i == k { max } else { min + i as f64 * w };
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| Bin {
            lo: edge(i),
            hi: edge(i + 1),
            count,
        })
        .collect()
}

/// Bins per decade that log histograms may use; each divides a decade evenly, so bin
/// edges fall on round values such as 1, 2, 5 or 10^0.1 steps.
const PER_DECADE: [f64; 9] = [1.0, 2.0, 4.0, 5.0, 10.0, 20.0, 25.0, 50.0, 100.0];

fn log_bins(sorted: &[f64]) -> Vec<Bin> {
    let logs: Vec<f64> = sorted.iter().map(|x| x.log10()).collect();
    let (lmin, lmax) = (logs[0], logs[logs.len() - 1]);
    let target = fd_width(&logs);
    // The allowed width nearest the Freedman–Diaconis width, in ratio terms.
    let mut choice = PER_DECADE
        .iter()
        .enumerate()
        .min_by(|a, b| {
            let da = (target * a.1).ln().abs();
            let db = (target * b.1).ln().abs();
            da.total_cmp(&db)
        })
        .map(|(i, _)| i)
        .unwrap_or(4);
    let (mut first, mut k);
    loop {
        let per = PER_DECADE[choice];
        first = (lmin * per + 1e-9).floor();
        k = ((lmax * per - 1e-9).floor() - first) as usize + 1;
        if k <= MAX_AUTO_BINS || choice == 0 {
            break;
        }
        choice -= 1;
    }
    let per = PER_DECADE[choice];
    let counts = count_into(&logs, k, |l| l * per - first);
    let edge = |i: usize| 10f64.powf((first + i as f64) / per);
    counts
        .into_iter()
        .enumerate()
        .map(|(i, count)| Bin {
            lo: edge(i),
            hi: edge(i + 1),
            count,
        })
        .collect()
}

/// At most `max` indices into `0..n`, evenly spaced, always including `0` and `n - 1`
/// (for `max >= 2`), strictly increasing, and the same for the same `(n, max)`.
pub fn even_indices(n: usize, max: usize) -> Vec<usize> {
    if n <= max {
        return (0..n).collect();
    }
    if max == 0 {
        return Vec::new();
    }
    if max == 1 {
        return vec![0];
    }
    let (span, steps) = ((n - 1) as u128, (max - 1) as u128);
    // Rounded i·span/steps in integers: exact, platform-independent, and increasing
    // because span > steps.
    (0..=steps)
        .map(|i| ((2 * i * span + steps) / (2 * steps)) as usize)
        .collect()
}

/// Keeps at most `max` items at evenly spaced positions (see [`even_indices`]).
pub fn decimate_even<T: Clone>(items: &[T], max: usize) -> Vec<T> {
    even_indices(items.len(), max)
        .into_iter()
        .map(|i| items[i].clone())
        .collect()
}

/// Keeps at most `max` points of a line (at least 4 are kept when there are that many):
/// the first, the last, and the lowest and highest point of each of equal-sized buckets
/// in between, in their original order. Unlike even spacing, this cannot hide a spike.
pub fn decimate_minmax(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let max = max.max(4);
    let n = points.len();
    if n <= max {
        return points.to_vec();
    }
    let inner = &points[1..n - 1];
    let buckets = (max - 2) / 2;
    let mut out = Vec::with_capacity(max);
    out.push(points[0]);
    for b in 0..buckets {
        let (start, end) = (b * inner.len() / buckets, (b + 1) * inner.len() / buckets);
        let slice = &inner[start..end];
        if slice.is_empty() {
            continue;
        }
        let mut lo = 0;
        let mut hi = 0;
        for (i, p) in slice.iter().enumerate() {
            if p.1 < slice[lo].1 {
                lo = i;
            }
            if p.1 > slice[hi].1 {
                hi = i;
            }
        }
        out.push(slice[lo.min(hi)]);
        if lo != hi {
            out.push(slice[lo.max(hi)]);
        }
    }
    out.push(points[n - 1]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_of_five_values_steps_exactly() {
        let (pts, skipped) = cdf_points(&[3.0, 1.0, 2.0, 5.0, 2.0]);
        assert_eq!(
            pts,
            vec![(1.0, 20.0), (2.0, 60.0), (3.0, 80.0), (5.0, 100.0)]
        );
        assert_eq!(skipped, 0);
        let (pts, skipped) = cdf_points(&[f64::NAN, 4.0, f64::INFINITY]);
        assert_eq!((pts, skipped), (vec![(4.0, 100.0)], 2));
        assert_eq!(cdf_points(&[]), (vec![], 0));
    }

    #[test]
    fn quantiles_interpolate() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&s, 0.5), 2.5);
        assert_eq!(quantile_sorted(&s, 0.0), 1.0);
        assert_eq!(quantile_sorted(&s, 1.0), 4.0);
        assert!(quantile_sorted(&[], 0.5).is_nan());
    }

    /// A deterministic, skewed sample (no RNG crate allowed): a quadratic ramp.
    fn skewed(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let u = (i as f64 * 0.618_033_988_75).fract();
                5.0 + 400.0 * u * u
            })
            .collect()
    }

    #[test]
    fn histogram_counts_sum_to_n() {
        for bins in [Bins::Auto, Bins::Log, Bins::Count(7)] {
            for n in [1, 2, 17, 1000, 100_000] {
                let h = histogram(&skewed(n), bins);
                let total: f64 = h.bins.iter().map(|b| b.count).sum();
                assert_eq!(total as usize + h.skipped, n, "{bins:?} n={n}");
                assert!(
                    h.bins.len() <= MAX_AUTO_BINS.max(7),
                    "{bins:?} {}",
                    h.bins.len()
                );
                for w in h.bins.windows(2) {
                    assert_eq!(w[0].hi, w[1].lo, "adjacent bins");
                }
            }
        }
    }

    #[test]
    fn auto_bins_are_nice_and_capped() {
        let h = histogram(&skewed(10_000), Bins::Auto);
        let w = h.bins[0].hi - h.bins[0].lo;
        assert_eq!(w, nice_step(w), "width is a 1-2-5 step");
        assert!(h.bins.len() >= 10 && h.bins.len() <= MAX_AUTO_BINS);
        // A huge outlier would ask for thousands of FD bins; the cap holds.
        let mut v = skewed(10_000);
        v.push(1e7);
        assert!(histogram(&v, Bins::Auto).bins.len() <= MAX_AUTO_BINS);
    }

    #[test]
    fn log_bins_skip_non_positive_and_span_data() {
        let mut v = skewed(5000);
        v.extend([0.0, -3.0, f64::NAN]);
        let h = histogram(&v, Bins::Log);
        assert!(h.log);
        assert_eq!(h.skipped, 3);
        assert!(h.bins[0].lo <= 5.0 && h.bins.last().unwrap().hi >= 405.0);
    }

    #[test]
    fn identical_values_make_one_bin() {
        let h = histogram(&[7.0; 10], Bins::Auto);
        assert_eq!(h.bins.len(), 1);
        assert_eq!(h.bins[0].count, 10.0);
        assert!(h.bins[0].lo < 7.0 && h.bins[0].hi > 7.0);
        assert!(histogram(&[], Bins::Auto).bins.is_empty());
    }

    #[test]
    fn even_decimation_keeps_ends_and_is_deterministic() {
        let idx = even_indices(1_000_000, 2000);
        assert_eq!(idx.len(), 2000);
        assert_eq!((idx[0], idx[1999]), (0, 999_999));
        assert!(idx.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(idx, even_indices(1_000_000, 2000));
        assert_eq!(even_indices(5, 10), vec![0, 1, 2, 3, 4]);
        assert_eq!(even_indices(10, 3), vec![0, 5, 9]);
        assert_eq!(even_indices(10, 1), vec![0]);
        assert!(even_indices(10, 0).is_empty());
    }

    #[test]
    fn minmax_decimation_keeps_ends_and_spikes() {
        let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0)).collect();
        pts[4321].1 = 99.0;
        let d = decimate_minmax(&pts, 200);
        assert!(d.len() <= 200);
        assert_eq!(d[0], pts[0]);
        assert_eq!(d[d.len() - 1], pts[9999]);
        assert!(d.contains(&(4321.0, 99.0)), "spike kept");
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "order kept");
        assert_eq!(d, decimate_minmax(&pts, 200));
    }
}
