//! The frame around the data: grid lines, the axis lines, the break on a value axis that
//! does not reach zero, and tick labels thinned so that none overlap.

use super::axis::{Scale, Tick};
use super::charts::Chart;
use super::draw::{text_w, Plot, FONT};
use super::svg::{PathData, Svg};

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
