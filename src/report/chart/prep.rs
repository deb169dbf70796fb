//! Reduces a chart's series to what will be drawn, and finds the axis ranges.
//!
//! This is where the size promises are kept: non-finite values (and non-positive ones on
//! log axes) are dropped and counted, long series are decimated deterministically, and
//! timelines are sampled to a bounded number of rows and token ticks. Every reduction
//! leaves a sentence for the chart's `<desc>`, so that nothing is hidden silently.

use super::axis::{group_thousands, Axis, Scale};
use super::charts::{AxisSpec, Chart, Kind, Series, Tip};
use super::data::{decimate_even, decimate_minmax, even_indices, Bin};

/// Total token ticks a timeline draws, whatever the number of rows.
const TOKEN_BUDGET: usize = 4000;
/// Total pauses a timeline draws.
const PAUSE_BUDGET: usize = 2000;

/// A count with thousands separators, for descriptions and tooltips.
pub(super) fn count(n: usize) -> String {
    group_thousands(n as f64)
}

/// Whether `v` can be placed on an axis of `scale`.
pub(super) fn valid(v: f64, scale: Scale) -> bool {
    v.is_finite() && (scale == Scale::Linear || v > 0.0)
}

/// Counts of what could not be drawn and why, plus sentences for `<desc>`.
#[derive(Default)]
pub(super) struct Stats {
    pub(super) nonfinite: usize,
    pub(super) off_scale: usize,
    pub(super) notes: Vec<String>,
}

impl Stats {
    /// Whether `values` can all be drawn on `scales`; counts the first failure.
    pub(super) fn check(&mut self, values: &[(f64, Scale)]) -> bool {
        if values.iter().any(|(v, _)| !v.is_finite()) {
            self.nonfinite += 1;
            false
        } else if values.iter().any(|&(v, s)| !valid(v, s)) {
            self.off_scale += 1;
            false
        } else {
            true
        }
    }
}

/// One timeline row after sampling.
pub(super) struct Row {
    pub(super) index: usize,
    /// `(token number, arrival)` of the tokens drawn.
    pub(super) toks: Vec<(usize, f64)>,
    pub(super) total: usize,
    pub(super) last: f64,
    /// `(token number before the gap, gap start, gap end)`.
    pub(super) pauses: Vec<(usize, f64, f64)>,
}

/// A series reduced to what will be drawn.
pub(super) struct Prep<'a> {
    pub(super) s: &'a Series,
    pub(super) color: usize,
    pub(super) pts: Vec<(f64, f64)>,
    /// Tooltip names of `pts` (empty: the default tooltips).
    pub(super) labels: Vec<String>,
    /// Error bars `(x, low, high)` to draw.
    pub(super) whiskers: Vec<(f64, f64, f64)>,
    pub(super) bins: Vec<(usize, Bin)>,
    pub(super) rows: Vec<Row>,
    pub(super) band: Vec<(f64, f64, f64)>,
}

impl Prep<'_> {
    pub(super) fn is_empty(&self) -> bool {
        self.pts.is_empty() && self.bins.is_empty() && self.rows.is_empty()
    }
}

/// Filters series `s` to drawable values and decimates it to the chart's caps; `color`
/// is its palette slot.
pub(super) fn prepare<'a>(c: &Chart, color: usize, s: &'a Series, st: &mut Stats) -> Prep<'a> {
    let (xs, ys) = (c.x.scale, c.y.scale);
    st.nonfinite += s.skipped;
    let (pts, labels) = prepare_points(c, s, st);
    let whiskers: Vec<(f64, f64, f64)> = s
        .whiskers
        .iter()
        .copied()
        .filter(|&(x, lo, hi)| st.check(&[(x, xs), (lo, ys), (hi, ys)]))
        .collect();
    let band: Vec<(f64, f64, f64)> = s
        .band
        .iter()
        .copied()
        .filter(|&(x, lo, hi)| st.check(&[(x, xs), (lo, ys), (hi, ys)]))
        .collect();
    let band = decimate_even(&band, c.max_points);
    let bins = s
        .bins
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, b)| st.check(&[(b.lo, xs), (b.hi, xs), (b.count, ys)]))
        .collect();
    Prep {
        s,
        color,
        pts,
        labels,
        whiskers,
        bins,
        rows: prepare_rows(c, s, st),
        band,
    }
}

/// The drawable points of `s` with their labels, thinned to the chart's cap; a note says
/// how when they were.
fn prepare_points(c: &Chart, s: &Series, st: &mut Stats) -> (Vec<(f64, f64)>, Vec<String>) {
    let (xs, ys) = (c.x.scale, c.y.scale);
    // Each point keeps its label (if any) through filtering and decimation.
    let labelled: Vec<((f64, f64), String)> = s
        .points
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, (x, y))| st.check(&[(x, xs), (y, ys)]))
        .map(|(i, p)| (p, s.labels.get(i).cloned().unwrap_or_default()))
        .collect();
    let valid_pts: Vec<(f64, f64)> = labelled.iter().map(|(p, _)| *p).collect();
    if !s.labels.is_empty() {
        // Labelled points are few and named one by one: thinned evenly if ever too many.
        let kept = decimate_even(&labelled, c.max_points);
        if kept.len() < labelled.len() {
            st.notes.push(format!(
                "{}: {} points drawn as {} (evenly spaced; first and last kept).",
                s.name,
                count(labelled.len()),
                count(kept.len())
            ));
        }
        kept.into_iter().unzip()
    } else if valid_pts.len() > c.max_points {
        let (d, how) = match s.kind {
            Kind::Line => (
                decimate_minmax(&valid_pts, c.max_points),
                "lowest and highest of each interval",
            ),
            _ => (decimate_even(&valid_pts, c.max_points), "evenly spaced"),
        };
        st.notes.push(if s.tip == Tip::Cdf {
            format!(
                "{}: CDF of {} values drawn with {} of its {} steps ({how}; first and last kept).",
                s.name,
                count(s.values),
                count(d.len()),
                count(valid_pts.len())
            )
        } else {
            format!(
                "{}: {} points drawn as {} ({how}; first and last kept).",
                s.name,
                count(valid_pts.len()),
                count(d.len())
            )
        });
        (d, Vec::new())
    } else {
        (valid_pts, Vec::new())
    }
}

/// Samples timeline rows to `max_rows`, thins token ticks to a shared budget and finds
/// the pauses (from all tokens, before thinning, so none is missed).
pub(super) fn prepare_rows(c: &Chart, s: &Series, st: &mut Stats) -> Vec<Row> {
    if s.rows.is_empty() {
        return Vec::new();
    }
    let picked = even_indices(s.rows.len(), c.max_rows);
    let per_row = (TOKEN_BUDGET / picked.len()).max(2);
    let (mut thinned, mut pauses_left, mut pauses_total) = (false, PAUSE_BUDGET, 0);
    let mut rows = Vec::with_capacity(picked.len());
    for index in picked {
        let mut toks: Vec<f64> = s.rows[index]
            .iter()
            .copied()
            .filter(|&t| st.check(&[(t, c.x.scale)]))
            .collect();
        if toks.is_empty() {
            continue;
        }
        toks.sort_by(f64::total_cmp);
        let mut pauses = Vec::new();
        for k in 1..toks.len() {
            if toks[k] - toks[k - 1] > s.pause_ms {
                pauses_total += 1;
                if pauses_left > 0 {
                    pauses_left -= 1;
                    pauses.push((k, toks[k - 1], toks[k]));
                }
            }
        }
        let keep = even_indices(toks.len(), per_row);
        thinned |= keep.len() < toks.len();
        rows.push(Row {
            index,
            toks: keep.into_iter().map(|k| (k + 1, toks[k])).collect(),
            total: toks.len(),
            last: toks[toks.len() - 1],
            pauses,
        });
    }
    if rows.len() < s.rows.len() {
        st.notes.push(format!(
            "Showing {} of {} requests, evenly spaced.",
            count(rows.len()),
            count(s.rows.len())
        ));
    }
    if thinned {
        st.notes.push(format!(
            "Token ticks thinned to at most {per_row} per request (first and last kept)."
        ));
    }
    if s.pause_ms.is_finite() {
        let shown = pauses_total.min(PAUSE_BUDGET);
        st.notes.push(format!(
            "{} pauses longer than {} highlighted{}.",
            count(pauses_total),
            c.x.unit.format(s.pause_ms),
            if shown < pauses_total {
                format!(" ({} drawn)", count(shown))
            } else {
                String::new()
            }
        ));
    }
    rows
}

/// Running minimum and maximum of finite values.
#[derive(Clone, Copy)]
pub(super) struct Ext(pub(super) f64, pub(super) f64);

impl Ext {
    pub(super) fn new() -> Self {
        Self(f64::INFINITY, f64::NEG_INFINITY)
    }
    pub(super) fn add(&mut self, v: f64) {
        if v.is_finite() {
            self.0 = self.0.min(v);
            self.1 = self.1.max(v);
        }
    }
}

/// Data extents along x and y of everything that will be drawn, markers included.
pub(super) fn extents(c: &Chart, preps: &[Prep]) -> (Ext, Ext) {
    let (mut x, mut y) = (Ext::new(), Ext::new());
    for p in preps {
        for &(a, b) in &p.pts {
            x.add(a);
            y.add(b);
        }
        for &(a, lo, hi) in p.band.iter().chain(&p.whiskers) {
            x.add(a);
            y.add(lo);
            y.add(hi);
        }
        for (_, b) in &p.bins {
            x.add(b.lo);
            x.add(b.hi);
            y.add(b.count);
            if c.y.scale == Scale::Linear {
                y.add(0.0); // bars grow from zero
            }
        }
        for r in &p.rows {
            x.add(r.toks[0].1);
            x.add(r.last);
            y.add(r.index as f64 - 0.5);
            y.add(r.index as f64 + 0.5);
        }
        if let (Some(v), false) = (p.s.step_from, p.pts.is_empty()) {
            y.add(v);
        }
    }
    for m in &c.markers {
        let (ext, scale) = if m.vertical {
            (&mut x, c.x.scale)
        } else {
            (&mut y, c.y.scale)
        };
        if valid(m.value, scale) {
            ext.add(m.value);
        }
    }
    (x, y)
}

/// Builds an axis from the data extent and the axis settings. With `headroom`, data
/// that would touch the far end of an automatic linear axis gets a little space (a point
/// on the frame is hard to see, and bar value labels need room above the bar).
pub(super) fn build_axis(spec: &AxisSpec, headroom: bool, ext: Ext, target: usize) -> Axis {
    let (min, max, tight) = match spec.range {
        Some((lo, hi)) => (lo, hi, true),
        None => {
            let (mut lo, mut hi) = if ext.0 <= ext.1 {
                (ext.0, ext.1)
            } else {
                (f64::NAN, f64::NAN)
            };
            if spec.zero && spec.scale == Scale::Linear {
                lo = if lo.is_nan() { 0.0 } else { lo.min(0.0) };
                hi = if hi.is_nan() { 0.0 } else { hi.max(0.0) };
            }
            (lo, hi, spec.tight)
        }
    };
    let build = |max: f64| match spec.scale {
        Scale::Linear => Axis::linear(min, max, target, spec.unit, tight),
        Scale::Log => Axis::log(min, max, spec.unit, tight),
    };
    let axis = build(max);
    let span = axis.hi - axis.lo;
    let crowded = max > min && axis.hi - max < 0.02 * span;
    if headroom && !tight && spec.scale == Scale::Linear && crowded {
        return build(max + 0.04 * span);
    }
    axis
}
