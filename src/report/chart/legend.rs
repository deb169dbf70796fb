//! The legend of a chart: one entry per drawn series (plus its band, error bars and, for
//! timelines, the pause highlight), laid out left to right and wrapped to the width.

use super::charts::{Chart, Kind};
use super::draw::{text_w, FONT, PAD};
use super::prep::Prep;
use super::svg::{PathData, Svg};

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
