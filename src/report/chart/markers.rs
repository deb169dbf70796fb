//! Reference lines (knee, saturation, SLO bounds) and their labels. Each label tries a few
//! positions and takes the first that collides with no label placed before it; vertical
//! markers are labelled in a band above the plot that the layout reserves for them.

use super::axis::Axis;
use super::charts::{Chart, Marker, MarkerKind};
use super::draw::{text_w, Plot, FONT};
use super::prep::valid;
use super::svg::Svg;

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
