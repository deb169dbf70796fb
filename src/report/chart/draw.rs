//! Drawing primitives of a chart: plot mapping, axes and tick labels, legend, series,
//! and reference markers.
//!
//! Text size is estimated rather than measured (there is no font engine on the server),
//! so the layout errs on the wide side: labels that might collide are thinned, shortened
//! or moved instead of being drawn on top of each other.

use super::axis::{fmt_value, group_thousands, Axis, Scale, Tick};
use super::charts::{Chart, Kind, Marker, MarkerKind, Series, Tip};
use super::prep::{count, valid, Prep};
use super::svg::{fmt_fixed, PathData, Svg};

/// Outer padding of the drawing.
pub(super) const PAD: f64 = 12.0;
/// Font size of tick labels, legend and marker labels.
pub(super) const FONT: f64 = 11.0;

/// Rough advance width of a string in a proportional sans-serif font. Generous on
/// purpose: overestimating only costs some space, underestimating makes labels collide.
pub(super) fn text_w(s: &str, px: f64) -> f64 {
    s.chars().count() as f64 * px * 0.6
}

/// The plot rectangle and the mapping of data into it.
pub(super) struct Plot {
    pub(super) left: f64,
    pub(super) right: f64,
    pub(super) top: f64,
    pub(super) bottom: f64,
    pub(super) x: Axis,
    pub(super) y: Axis,
    pub(super) y_rev: bool,
    /// Rows reserved above the plot for vertical marker labels.
    pub(super) label_rows: usize,
}

impl Plot {
    pub(super) fn px(&self, v: f64) -> f64 {
        self.left + self.x.frac(v) * (self.right - self.left)
    }
    pub(super) fn py(&self, v: f64) -> f64 {
        let f = self.y.frac(v);
        if self.y_rev {
            self.top + f * (self.bottom - self.top)
        } else {
            self.bottom - f * (self.bottom - self.top)
        }
    }
}

/// Which tick labels to show so that none overlap: majors, thinned to every k-th if
/// needed, then minors wherever they fit. `extent[i]` is label i's size along the axis.
pub(super) fn fit_labels(ticks: &[Tick], pos: &[f64], extent: &[f64], gap: f64) -> Vec<bool> {
    let span = |i: usize| (pos[i] - extent[i] / 2.0, pos[i] + extent[i] / 2.0);
    let clear = |shown: &[bool], i: usize| {
        let (a, b) = span(i);
        (0..ticks.len()).all(|j| {
            let (c, d) = span(j);
            !shown[j] || j == i || b + gap <= c || d + gap <= a
        })
    };
    let majors: Vec<usize> = (0..ticks.len()).filter(|&i| ticks[i].major).collect();
    let mut shown = vec![false; ticks.len()];
    for stride in 1..=majors.len().max(1) {
        shown.iter_mut().for_each(|s| *s = false);
        for &i in majors.iter().step_by(stride) {
            shown[i] = true;
        }
        if majors.iter().all(|&i| !shown[i] || clear(&shown, i)) {
            break;
        }
    }
    for i in 0..ticks.len() {
        if !ticks[i].major && clear(&shown, i) {
            shown[i] = true;
        }
    }
    shown
}

/// What a legend entry shows. Swatches use their own `sw-*` classes so that selectors
/// for data elements (`.pt`, `.bar`, `.tok`) never match the legend.
pub(super) enum Swatch {
    Line,
    Dot,
    Bar,
    Band,
    Whisker,
    Tok,
    Pause,
}

/// Legend entries as (label, swatch, colour index): one per drawn series, plus its band
/// and, for timelines, the pause highlight.
pub(super) fn legend_items(c: &Chart, preps: &[Prep]) -> Vec<(String, Swatch, usize)> {
    let mut items = Vec::new();
    for p in preps.iter().filter(|p| !p.is_empty()) {
        let swatch = match p.s.kind {
            Kind::Line | Kind::Step => Swatch::Line,
            Kind::Scatter => Swatch::Dot,
            Kind::Bars => Swatch::Bar,
            Kind::Segments => Swatch::Tok,
        };
        items.push((p.s.name.clone(), swatch, p.color));
        if !p.band.is_empty() {
            items.push((p.s.band_label.clone(), Swatch::Band, p.color));
        }
        if !p.whiskers.is_empty() {
            items.push((p.s.whisker_label.clone(), Swatch::Whisker, p.color));
        }
        if p.s.kind == Kind::Segments && p.s.pause_ms.is_finite() {
            let label = format!("pause > {}", c.x.unit.format(p.s.pause_ms));
            items.push((label, Swatch::Pause, p.color));
        }
    }
    items
}

/// Places legend items left to right, wrapping; returns `(x, row)` per item and rows.
pub(super) fn legend_layout(
    items: &[(String, Swatch, usize)],
    width: f64,
) -> (Vec<(f64, usize)>, usize) {
    let (mut x, mut row, mut out) = (PAD, 0, Vec::new());
    for (label, _, _) in items {
        let w = 24.0 + text_w(label, FONT) + 14.0;
        if x > PAD && x + w > width - PAD {
            x = PAD;
            row += 1;
        }
        out.push((x, row));
        x += w;
    }
    let rows = if items.is_empty() { 0 } else { row + 1 };
    (out, rows)
}

/// Draws the legend entries at the positions from [`legend_layout`], rows from `top`.
pub(super) fn draw_legend(
    svg: &mut Svg,
    items: &[(String, Swatch, usize)],
    at: &[(f64, usize)],
    top: f64,
) {
    if items.is_empty() {
        return;
    }
    svg.el("g").attr("class", "legend").open();
    for ((label, swatch, color), &(x, row)) in items.iter().zip(at) {
        let cy = top + row as f64 * 16.0 + 7.0;
        svg.el("g").attr("class", &format!("s{color}")).open();
        let el = match swatch {
            Swatch::Line => svg.el("line").attr("class", "sw-line"),
            Swatch::Pause => svg.el("line").attr("class", "sw-pause"),
            Swatch::Tok => svg.el("line").attr("class", "sw-row"),
            Swatch::Whisker => svg.el("path").attr("class", "sw-ci"),
            Swatch::Dot => svg.el("circle").attr("class", "sw-dot").num("cx", x + 9.0),
            Swatch::Bar => svg.el("rect").attr("class", "sw-bar").num("x", x + 2.0),
            Swatch::Band => svg.el("rect").attr("class", "sw-band").num("x", x + 2.0),
        };
        match swatch {
            Swatch::Line | Swatch::Pause | Swatch::Tok => el
                .num("x1", x)
                .num("x2", x + 18.0)
                .num("y1", cy)
                .num("y2", cy)
                .leaf(),
            Swatch::Dot => el.num("cy", cy).num("r", 4.0).leaf(),
            Swatch::Whisker => {
                let mut d = PathData::new();
                for (x1, y1, x2, y2) in [
                    (x + 9.0, cy - 6.0, x + 9.0, cy + 6.0),
                    (x + 5.0, cy - 6.0, x + 13.0, cy - 6.0),
                    (x + 5.0, cy + 6.0, x + 13.0, cy + 6.0),
                ] {
                    d.move_to(x1, y1);
                    d.line_to(x2, y2);
                }
                el.attr("d", d.as_str()).leaf()
            }
            Swatch::Bar | Swatch::Band => el
                .num("y", cy - 5.0)
                .num("width", 14.0)
                .num("height", 10.0)
                .leaf(),
        };
        if let Swatch::Tok = swatch {
            for dx in [4.0, 9.0, 14.0] {
                svg.el("line")
                    .attr("class", "sw-tok")
                    .num("x1", x + dx)
                    .num("x2", x + dx)
                    .num("y1", cy - 4.0)
                    .num("y2", cy + 4.0)
                    .leaf();
            }
        }
        svg.el("text")
            .num("x", x + 24.0)
            .num("y", cy + 4.0)
            .text(label);
        svg.close();
    }
    svg.close();
}

/// A CDF share in percent, with more decimals near 100 where tail percentiles
/// (99.9, 99.99) must stay distinguishable: `50%`, `99.95%`, `0.08%`.
fn fmt_share(y: f64) -> String {
    let decimals = if y >= 99.0 { 3 } else { 2 };
    format!("{}%", fmt_fixed(y, decimals).unwrap_or_default())
}

/// A bar height: whole numbers with thousands separators, others with three digits.
fn fmt_count(v: f64) -> String {
    if v.fract() == 0.0 {
        group_thousands(v)
    } else {
        fmt_value(v)
    }
}

/// Tooltip of one point: "P99 TTFT 512 ms at 12.0 req/s", or for a CDF
/// "TTFT: 50% ≤ 512 ms".
pub(super) fn tip(c: &Chart, s: &Series, x: f64, y: f64) -> String {
    match s.tip {
        Tip::Cdf => format!("{}: {} ≤ {}", s.name, fmt_share(y), c.x.unit.format(x)),
        _ => format!(
            "{} {} at {}",
            s.name,
            c.y.unit.format(y),
            c.x.unit.format(x)
        ),
    }
}

/// Draws one series in its own `<g class="ser sN">` group (N picks the colour), adding
/// the number of data elements written to `drawn`.
pub(super) fn draw_series(svg: &mut Svg, c: &Chart, p: &Prep, plot: &Plot, drawn: &mut usize) {
    let s = p.s;
    // On a line with many points the dots would hide the line: they stay hoverable but
    // invisible until hovered. Scatter dots are the data and always show.
    let dense = match s.kind {
        Kind::Line => p.pts.len() > 40,
        Kind::Step => p.pts.len() > 12,
        _ => false,
    };
    let class = format!("ser s{}{}", p.color, if dense { " dense" } else { "" });
    svg.el("g")
        .attr("class", &class)
        .attr("data-series", &s.name)
        .open();
    if !p.band.is_empty() {
        let mut d = PathData::new();
        for &(x, _, hi) in &p.band {
            d.line_to(plot.px(x), plot.py(hi));
        }
        for &(x, lo, _) in p.band.iter().rev() {
            d.line_to(plot.px(x), plot.py(lo));
        }
        d.close();
        svg.el("path")
            .attr("class", "band")
            .attr("d", d.as_str())
            .titled(&s.band_label);
    }
    if matches!(s.kind, Kind::Line | Kind::Step) && !p.pts.is_empty() {
        let mut d = PathData::new();
        if let (Kind::Step, Some(y0)) = (s.kind, s.step_from) {
            d.line_to(plot.px(p.pts[0].0), plot.py(y0));
        }
        for (i, &(x, y)) in p.pts.iter().enumerate() {
            if s.kind == Kind::Step && i > 0 {
                d.line_to(plot.px(x), plot.py(p.pts[i - 1].1));
            }
            d.line_to(plot.px(x), plot.py(y));
        }
        svg.el("path")
            .attr("class", "line")
            .attr("d", d.as_str())
            .leaf();
    }
    draw_whiskers(svg, c, p, plot);
    if s.show_points && matches!(s.kind, Kind::Line | Kind::Step | Kind::Scatter) {
        let r = if s.kind == Kind::Scatter {
            s.radius
        } else {
            3.0
        };
        for (i, &(x, y)) in p.pts.iter().enumerate() {
            let title = match p.labels.get(i).filter(|l| !l.is_empty()) {
                Some(label) => format!("{label}: {}", c.y.unit.format(y)),
                None => tip(c, s, x, y),
            };
            *drawn += svg
                .el("circle")
                .attr("class", "pt")
                .num("cx", plot.px(x))
                .num("cy", plot.py(y))
                .num("r", r)
                .data("x", x)
                .data("y", y)
                .titled(&title) as usize;
        }
    }
    draw_bars(svg, c, p, plot, drawn);
    draw_rows(svg, c, p, plot, drawn);
    svg.close();
}

/// Error bars: per `(x, low, high)` a `path.ci`, a vertical line with short caps, whose
/// tooltip names the interval (and the category, on a categorical axis).
fn draw_whiskers(svg: &mut Svg, c: &Chart, p: &Prep, plot: &Plot) {
    let cap = 6.0;
    for &(x, lo, hi) in &p.whiskers {
        let px = plot.px(x);
        let (y0, y1) = (plot.py(lo), plot.py(hi));
        let mut d = PathData::new();
        d.move_to(px, y0);
        d.line_to(px, y1);
        for y in [y0, y1] {
            d.move_to(px - cap, y);
            d.line_to(px + cap, y);
        }
        let category = c
            .categories
            .get(x.round().max(0.0) as usize)
            .map(|n| format!("{n}, "))
            .unwrap_or_default();
        svg.el("path")
            .attr("class", "ci")
            .attr("d", d.as_str())
            .data("y", lo)
            .data("y2", hi)
            .titled(&format!(
                "{category}{}: {} to {}",
                p.s.whisker_label,
                c.y.unit.format(lo),
                c.y.unit.format(hi)
            ));
    }
}

/// Histogram bins or category bars, each a `rect.bar`; category bars get a value label
/// when there are few of them and the label fits.
pub(super) fn draw_bars(svg: &mut Svg, c: &Chart, p: &Prep, plot: &Plot, drawn: &mut usize) {
    let base = match c.y.scale {
        Scale::Linear => 0f64.clamp(plot.y.lo, plot.y.hi),
        Scale::Log => plot.y.lo,
    };
    let labels = p.s.tip == Tip::Category && p.bins.len() <= 24;
    for &(i, b) in &p.bins {
        let (x0, x1) = (plot.px(b.lo), plot.px(b.hi));
        let (y0, y1) = (plot.py(base), plot.py(b.count));
        let label = c.categories.get(i).cloned().unwrap_or_default();
        let title = match p.s.tip {
            Tip::Category if c.series.len() > 1 => {
                format!("{label}, {}: {}", p.s.name, c.y.unit.format(b.count))
            }
            Tip::Category => format!("{label}: {}", c.y.unit.format(b.count)),
            _ => format!(
                "{}: {} in {}–{}",
                p.s.name,
                fmt_count(b.count),
                fmt_value(b.lo),
                c.x.unit.format(b.hi)
            ),
        };
        let mut el = svg
            .el("rect")
            .attr("class", "bar")
            .num("x", x0.min(x1))
            .num("y", y0.min(y1))
            .num("width", (x1 - x0).abs().max(0.5))
            .num("height", (y1 - y0).abs());
        el = if p.s.tip == Tip::Category {
            el.data("x", i as f64).attr("data-cat", &label)
        } else {
            el.data("x", b.lo).data("x2", b.hi)
        };
        *drawn += el.data("y", b.count).titled(&title) as usize;
        let text = c.y.unit.format(b.count);
        if labels && text_w(&text, 10.0) < (x1 - x0).abs() + 8.0 {
            svg.el("text")
                .attr("class", "val")
                .attr("text-anchor", "middle")
                .num("x", (x0 + x1) / 2.0)
                .num("y", y1.min(y0) - 4.0)
                .text(&text);
        }
    }
}

/// Timeline rows: a thin `line.row` from send time to the last token, a thick
/// `line.pause` per long gap, and a short vertical `line.tok` per token.
pub(super) fn draw_rows(svg: &mut Svg, c: &Chart, p: &Prep, plot: &Plot, drawn: &mut usize) {
    let pitch = (plot.py(1.0) - plot.py(0.0)).abs();
    let half = (pitch * 0.35).clamp(1.0, 4.0);
    let fx = |v: f64| c.x.unit.format(v);
    for r in &p.rows {
        let y = plot.py(r.index as f64);
        let n = r.index;
        let title = format!(
            "request {n}: {} tokens, first at {}, last at {}, {} pauses",
            count(r.total),
            fx(r.toks[0].1),
            fx(r.last),
            r.pauses.len()
        );
        svg.el("line")
            .attr("class", "row")
            .num("x1", plot.px(plot.x.lo.max(0.0)))
            .num("x2", plot.px(r.last))
            .num("y1", y)
            .num("y2", y)
            .data("y", r.index as f64)
            .titled(&title);
        for &(k, start, end) in &r.pauses {
            svg.el("line")
                .attr("class", "pause")
                .num("x1", plot.px(start))
                .num("x2", plot.px(end))
                .num("y1", y)
                .num("y2", y)
                .data("x", start)
                .data("x2", end)
                .data("y", r.index as f64)
                .titled(&format!(
                    "request {n}: pause of {} after token {k}",
                    fx(end - start)
                ));
        }
        for &(k, t) in &r.toks {
            *drawn += svg
                .el("line")
                .attr("class", "tok")
                .num("x1", plot.px(t))
                .num("x2", plot.px(t))
                .num("y1", y - half)
                .num("y2", y + half)
                .data("x", t)
                .data("y", r.index as f64)
                .titled(&format!("request {n}, token {k} at {}", fx(t)))
                as usize;
        }
    }
}

/// A label position: x, baseline, text-anchor.
type Spot = (f64, f64, &'static str);

/// Horizontal extent of a label of width `w` anchored at `x`.
fn span(x: f64, anchor: &str, w: f64) -> (f64, f64) {
    if anchor == "start" {
        (x, x + w)
    } else {
        (x - w, x)
    }
}

/// The first spot where a label of width `w` stays inside `0..width` and overlaps none
/// of the `placed` labels, given as (left, right, baseline).
fn first_free(spots: &[Spot], w: f64, placed: &[(f64, f64, f64)], width: f64) -> Option<Spot> {
    spots.iter().copied().find(|&(x, y, anchor)| {
        let (a, b) = span(x, anchor, w);
        a >= 2.0
            && b <= width - 2.0
            && !placed
                .iter()
                .any(|&(pa, pb, py)| a < pb && pa < b && (py - y).abs() < FONT + 2.0)
    })
}

/// Vertical markers that can be drawn on axis `x` of scale `scale`, in x order.
fn vertical_markers<'a>(c: &'a Chart, x: &Axis) -> Vec<&'a Marker> {
    let mut v: Vec<&Marker> = c
        .markers
        .iter()
        .filter(|m| m.vertical && valid(m.value, c.x.scale))
        .filter(|m| (-1e-9..=1.0 + 1e-9).contains(&x.frac(m.value)))
        .collect();
    v.sort_by(|a, b| a.value.total_cmp(&b.value));
    v
}

/// Most label rows reserved above the plot for vertical markers.
const MAX_LABEL_ROWS: usize = 4;

/// Label spots above the plot for a vertical marker at `x`: right of the line, then
/// left of it, one row after another going up from `baseline`.
fn above_spots(x: f64, baseline: f64, rows: usize) -> Vec<Spot> {
    (0..rows.max(1))
        .flat_map(|r| {
            let y = baseline - 14.0 * r as f64;
            [(x + 4.0, y, "start"), (x - 4.0, y, "end")]
        })
        .collect()
}

/// Label rows (0 to 4) that vertical markers need above the plot, judged on a
/// provisional mapping of `x` onto `left..right` (the final one differs by a few units).
pub(super) fn marker_label_rows(c: &Chart, x: &Axis, left: f64, right: f64) -> usize {
    let mut placed = Vec::new();
    let mut rows = 0;
    for m in vertical_markers(c, x) {
        let px = left + x.frac(m.value) * (right - left);
        let w = text_w(&m.label, FONT);
        let spots = above_spots(px, 0.0, MAX_LABEL_ROWS);
        let (tx, y, anchor) = first_free(&spots, w, &placed, c.width).unwrap_or(spots[0]);
        let (a, b) = span(tx, anchor, w);
        placed.push((a, b, y));
        rows = rows.max(1 + (-y / 14.0).round() as usize);
    }
    rows
}

/// Reference lines with their labels. Vertical markers are labelled above the plot, in
/// a band the layout reserves for them, so labels never sit on data; horizontal ones are
/// labelled just above their line at the left (or right) end. Each label tries a few
/// positions and takes the first that collides with no label placed before it.
pub(super) fn draw_markers(svg: &mut Svg, c: &Chart, plot: &Plot) {
    let mut placed: Vec<(f64, f64, f64)> = Vec::new(); // (left, right, baseline)
    let mut markers: Vec<_> = c.markers.iter().collect();
    markers.sort_by(|a, b| (a.vertical.cmp(&b.vertical)).then(a.value.total_cmp(&b.value)));
    for m in markers {
        let (axis, scale, unit) = if m.vertical {
            (&plot.x, c.x.scale, c.x.unit)
        } else {
            (&plot.y, c.y.scale, c.y.unit)
        };
        let f = axis.frac(m.value);
        if !valid(m.value, scale) || !(-1e-9..=1.0 + 1e-9).contains(&f) {
            continue;
        }
        let w = text_w(&m.label, FONT);
        let (line, spots) = if m.vertical {
            let x = plot.px(m.value);
            let spots = above_spots(x, plot.top - 5.0, plot.label_rows);
            ((x, x, plot.top, plot.bottom), spots)
        } else {
            let y = plot.py(m.value);
            let above = if y - 4.0 - FONT < plot.top {
                y + 13.0
            } else {
                y - 4.0
            };
            let below = if y + 13.0 > plot.bottom - 2.0 {
                y - 4.0
            } else {
                y + 13.0
            };
            let (l, r) = (plot.left + 4.0, plot.right - 4.0);
            let spots = vec![
                (l, above, "start"),
                (r, above, "end"),
                (l, below, "start"),
                (r, below, "end"),
            ];
            ((plot.left, plot.right, y, y), spots)
        };
        let (tx, ty, anchor) = first_free(&spots, w, &placed, c.width).unwrap_or(spots[0]);
        let (a, b) = span(tx, anchor, w);
        placed.push((a, b, ty));
        let kind = match m.kind {
            MarkerKind::Knee => "knee",
            MarkerKind::Saturation => "saturation",
            MarkerKind::Slo => "slo",
            MarkerKind::Note => "note",
        };
        svg.el("g")
            .attr("class", &format!("mk {kind}"))
            .data(if m.vertical { "x" } else { "y" }, m.value)
            .open();
        svg.el("title")
            .text(&format!("{}: {}", m.label, unit.format(m.value)));
        svg.el("line")
            .num("x1", line.0)
            .num("x2", line.1)
            .num("y1", line.2)
            .num("y2", line.3)
            .leaf();
        svg.el("text")
            .attr("text-anchor", anchor)
            .num("x", tx)
            .num("y", ty)
            .text(&m.label);
        svg.close();
    }
}

pub(super) fn draw_axes(svg: &mut Svg, c: &Chart, plot: &Plot) {
    let categorical = !c.categories.is_empty();
    svg.el("g").attr("class", "grid").open();
    for t in &plot.y.ticks {
        let y = plot.py(t.value);
        let class = if t.major { "grid" } else { "grid minor" };
        svg.el("line")
            .attr("class", class)
            .num("x1", plot.left)
            .num("x2", plot.right)
            .num("y1", y)
            .num("y2", y)
            .leaf();
    }
    for t in plot.x.ticks.iter().filter(|_| !categorical) {
        let x = plot.px(t.value);
        let class = if t.major { "grid" } else { "grid minor" };
        svg.el("line")
            .attr("class", class)
            .num("x1", x)
            .num("x2", x)
            .num("y1", plot.top)
            .num("y2", plot.bottom)
            .leaf();
    }
    svg.close();
    let mut d = PathData::new();
    d.move_to(plot.left, plot.top);
    d.line_to(plot.left, plot.bottom);
    d.line_to(plot.right, plot.bottom);
    svg.el("path")
        .attr("class", "axis")
        .attr("d", d.as_str())
        .leaf();
}

/// Where a linear value axis does not reach zero, the end nearest zero is cut by an axis
/// break (two slanted strokes across the axis, the axis line gapped between them), so that
/// no one reads the heights as proportions. Returns the sentence the chart's description
/// adds, or `None` when the axis shows zero (or is logarithmic, where zero has no place).
pub(super) fn draw_axis_break(svg: &mut Svg, c: &Chart, plot: &Plot) -> Option<String> {
    let (lo, hi) = (plot.y.lo, plot.y.hi);
    if c.y.scale != Scale::Linear || !lo.is_finite() || !hi.is_finite() || (lo <= 0.0 && hi >= 0.0)
    {
        return None;
    }
    // The cut end: the axis start when all values are positive, its end when negative.
    let start = if lo > 0.0 { lo } else { hi };
    let edge = plot.py(start);
    // Inside the plot from that edge, clear of the edge's tick label.
    let y = if edge > (plot.top + plot.bottom) / 2.0 {
        edge - 14.0
    } else {
        edge + 14.0
    };
    let x = plot.left;
    let sentence = format!(
        "The value axis starts at {}, not at zero (marked by a break on the axis).",
        c.y.unit.format(start)
    );
    let mut gap = PathData::new();
    gap.move_to(x - 7.0, y + 1.0);
    gap.line_to(x + 7.0, y - 5.0);
    gap.line_to(x + 7.0, y - 1.0);
    gap.line_to(x - 7.0, y + 5.0);
    gap.close();
    let mut strokes = PathData::new();
    strokes.move_to(x - 7.0, y + 1.0);
    strokes.line_to(x + 7.0, y - 5.0);
    strokes.move_to(x - 7.0, y + 5.0);
    strokes.line_to(x + 7.0, y - 1.0);
    svg.el("g").attr("class", "axis-break").open();
    svg.el("path")
        .attr("class", "brk-gap")
        .attr("d", gap.as_str())
        .leaf();
    svg.el("path")
        .attr("class", "brk")
        .attr("d", strokes.as_str())
        .titled(&sentence);
    svg.close();
    Some(sentence)
}

pub(super) fn draw_tick_labels(svg: &mut Svg, c: &Chart, plot: &Plot) {
    svg.el("g").attr("class", "tick").open();
    // y labels: right-aligned left of the axis, kept a line height apart.
    let ypos: Vec<f64> = plot.y.ticks.iter().map(|t| plot.py(t.value)).collect();
    let show = fit_labels(&plot.y.ticks, &ypos, &vec![FONT; ypos.len()], 2.0);
    for (i, t) in plot.y.ticks.iter().enumerate().filter(|(i, _)| show[*i]) {
        svg.el("text")
            .attr("text-anchor", "end")
            .num("x", plot.left - 6.0)
            .num("y", ypos[i] + 4.0)
            .text(&t.label);
    }
    // x labels: centred under ticks, category names shortened to their slot.
    let slot = if c.categories.is_empty() {
        f64::INFINITY
    } else {
        (plot.right - plot.left) / c.categories.len() as f64 - 4.0
    };
    let labels: Vec<String> = plot
        .x
        .ticks
        .iter()
        .map(|t| shorten(&t.label, slot, FONT))
        .collect();
    let xpos: Vec<f64> = plot.x.ticks.iter().map(|t| plot.px(t.value)).collect();
    let widths: Vec<f64> = labels.iter().map(|l| text_w(l, FONT)).collect();
    let show = fit_labels(&plot.x.ticks, &xpos, &widths, 6.0);
    for i in (0..labels.len()).filter(|&i| show[i]) {
        // Keep edge labels inside the drawing instead of letting them clip.
        let x = xpos[i].clamp(widths[i] / 2.0 + 2.0, c.width - widths[i] / 2.0 - 2.0);
        svg.el("text")
            .attr("text-anchor", "middle")
            .num("x", x)
            .num("y", plot.bottom + 16.0)
            .text(&labels[i]);
    }
    svg.close();
}

/// Cuts `s` with an ellipsis so that it fits `room` user units at font size `px`.
pub(super) fn shorten(s: &str, room: f64, px: f64) -> String {
    if text_w(s, px) <= room {
        return s.to_string();
    }
    let keep = ((room / (px * 0.6)).floor() as usize)
        .saturating_sub(1)
        .max(1);
    let mut out: String = s.chars().take(keep).collect();
    out.push('…');
    out
}
