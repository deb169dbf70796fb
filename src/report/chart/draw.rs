//! Drawing primitives of a chart: plot mapping, axes and tick labels, legend, series,
//! and reference markers.
//!
//! Text size is estimated rather than measured (there is no font engine on the server),
//! so the layout errs on the wide side: labels that might collide are thinned, shortened
//! or moved instead of being drawn on top of each other.
//!
//! This file holds the plot mapping, text sizes and the series; the legend is drawn in
//! `legend.rs`, reference markers in `markers.rs`, and the frame (grid, axes, tick labels)
//! in `frame.rs`.

use super::axis::{fmt_value, group_thousands, Axis, Scale};
use super::charts::{Chart, Kind, Series, Tip};
use super::prep::{count, Prep};
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
