//! Turns a [`Chart`] into one self-contained `<svg>` element.
//!
//! The output is written by hand rather than through a plotting library so that the DOM
//! is exactly what the report's browser tests and screen readers expect: every data point,
//! bar and token is one element with a `class`, `data-*` values and a `<title>` tooltip;
//! the root carries `role="img"`, `aria-labelledby`, `data-chart` and `data-points`.
//! Styling is one `<style>` block scoped to the chart's id, because an inline SVG's
//! style sheet applies to the whole HTML page it sits in.

use std::fmt::Write;

use super::axis::{Axis, Scale};
use super::charts::{AxisSpec, Chart};
use super::draw::*;
use super::frame::{draw_axes, draw_axis_break, draw_tick_labels, shorten};
use super::legend::{draw_legend, legend_items, legend_layout};
use super::markers::{draw_markers, marker_label_rows};
use super::prep::{build_axis, count, extents, prepare, Prep, Stats};
use super::svg::{escape, fmt_coord, Svg};

/// Okabe–Ito colours, distinguishable with the common colour-vision deficiencies; the
/// yellow is left out because it vanishes on white.
const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];
/// Dash patterns paired with colours so that lines differ by more than hue alone.
const DASHES: [&str; 4] = ["none", "7 3", "2 3", "9 3 2 3"];

fn style(id: &str) -> String {
    let s = format!("#{id}");
    let mut css = format!(
        "{s}{{font-family:system-ui,sans-serif}}\
{s} text{{fill:#222;font-size:{FONT}px}}\
{s} .title{{font-size:15px;font-weight:600}}\
{s} .atitle{{font-size:12px;fill:#333}}\
{s} .tick{{fill:#444}}\
{s} .bg{{fill:#fff}}\
{s} .grid{{stroke:#e6e6e6;stroke-width:1}}\
{s} .grid.minor{{stroke:#f2f2f2}}\
{s} .axis{{stroke:#555;stroke-width:1;fill:none}}\
{s} .brk{{stroke:#555;stroke-width:1.2;fill:none}}\
{s} .brk-gap{{fill:#fff;stroke:none}}\
{s} .frame{{fill:none;stroke:#ccc}}\
{s} .line,{s} .sw-line{{fill:none;stroke:currentColor;stroke-width:2;stroke-linejoin:round}}\
{s} .band,{s} .sw-band{{fill:currentColor;fill-opacity:.18;stroke:none}}\
{s} .ci,{s} .sw-ci{{fill:none;stroke:currentColor;stroke-width:2}}\
{s} .pt,{s} .sw-dot{{fill:currentColor;stroke:#fff;stroke-width:1}}\
{s} .dense .pt{{fill-opacity:0;stroke:none}}\
{s} .pt:hover{{fill-opacity:1;stroke:#222;stroke-width:1.5}}\
{s} .bar,{s} .sw-bar{{fill:currentColor;fill-opacity:.85;stroke:#fff;stroke-width:.5}}\
{s} .bar:hover{{fill-opacity:1}}\
{s} .row,{s} .sw-row{{stroke:#c8c8c8;stroke-width:1}}\
{s} .tok,{s} .sw-tok{{stroke:currentColor;stroke-width:1.5}}\
{s} .pause,{s} .sw-pause{{stroke:#D55E00;stroke-width:3}}\
{s} .mk line{{stroke:#444;stroke-width:1.2;stroke-dasharray:5 4}}\
{s} .mk text{{fill:#333;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}}\
{s} .mk.slo line{{stroke:#111;stroke-width:1.5;stroke-dasharray:2 3}}\
{s} .mk.slo text{{font-weight:600}}\
{s} .mk.knee line{{stroke-dasharray:8 4}}\
{s} .mk.saturation line{{stroke-dasharray:10 3 2 3}}\
{s} .val{{font-size:10px;fill:#333}}\
{s} .nodata{{font-size:14px;fill:#666}}"
    );
    for (i, colour) in PALETTE.iter().enumerate() {
        let _ = write!(css, "{s} .s{i}{{color:{colour}}}");
        let dash = DASHES[i % DASHES.len()];
        if dash != "none" {
            let _ = write!(
                css,
                "{s} .s{i} .line,{s} .s{i} .sw-line{{stroke-dasharray:{dash}}}"
            );
        }
    }
    css
}

fn describe(c: &Chart, preps: &[Prep], st: &Stats, drawn: usize) -> String {
    let mut parts = Vec::new();
    if drawn == 0 {
        parts.push("No data.".to_string());
    } else {
        let names: Vec<String> = preps
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| p.s.name.clone())
            .collect();
        let axis = |a: &AxisSpec| {
            let log = if a.scale == Scale::Log {
                ", log scale"
            } else {
                ""
            };
            format!("{}{log}", a.unit.axis_title(&a.label))
        };
        let x = if c.categories.is_empty() {
            format!("X axis: {}", axis(&c.x))
        } else {
            format!("Categories: {}", c.categories.join(", "))
        };
        parts.push(format!(
            "{} drawn {}; series: {}. {x}. Y axis: {}.",
            count(drawn),
            if drawn == 1 { "point" } else { "points" },
            names.join(", "),
            axis(&c.y)
        ));
    }
    parts.extend(st.notes.iter().cloned());
    if st.nonfinite > 0 {
        parts.push(format!(
            "{} non-finite values skipped.",
            count(st.nonfinite)
        ));
    }
    if st.off_scale > 0 {
        parts.push(format!(
            "{} values not positive, skipped on the log axis.",
            count(st.off_scale)
        ));
    }
    parts.extend(c.notes.iter().cloned());
    parts.join(" ")
}

pub(super) fn render(c: &Chart) -> String {
    let (w, h) = (c.width, c.height);
    let mut st = Stats::default();
    let preps: Vec<Prep> = c
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| prepare(c, i % PALETTE.len(), s, &mut st))
        .collect();
    let has_data = preps.iter().any(|p| !p.is_empty());
    let mut svg = Svg::new();
    svg.el("rect")
        .attr("class", "bg")
        .num("width", w)
        .num("height", h)
        .leaf();
    let title = shorten(&c.title, w - 2.0 * PAD, 15.0);
    svg.el("text")
        .attr("class", "title")
        .num("x", PAD)
        .num("y", 22.0)
        .text(&title);
    let items = legend_items(c, &preps);
    let items = if items.len() >= 2 { items } else { Vec::new() };
    let (at, rows) = legend_layout(&items, w);
    draw_legend(&mut svg, &items, &at, 32.0);
    let legend_bottom = 36.0 + rows as f64 * 16.0 + if rows > 0 { 6.0 } else { 0.0 };
    let bottom = h - 42.0;
    let mut drawn = 0;
    if has_data {
        let plot = layout(c, &preps, legend_bottom, bottom);
        draw_plot(&mut svg, c, &preps, &plot, &mut st, &mut drawn);
    } else {
        draw_no_data(&mut svg, c, legend_bottom, bottom);
    }
    st.nonfinite += svg.skipped();
    let desc = describe(c, &preps, &st, drawn);
    let body = svg.finish();
    wrap(c, &body, &desc, drawn, st.nonfinite + st.off_scale)
}

/// The plot area between the legend and the x tick labels, with its two axes.
fn layout(c: &Chart, preps: &[Prep], legend_bottom: f64, bottom: f64) -> Plot {
    let w = c.width;
    let x_target =
        |left: f64, right: f64| ((right - left) / 110.0).round().clamp(2.0, 10.0) as usize;
    let (xe, ye) = extents(c, preps);
    let x_axis = |left: f64, right: f64| {
        if c.categories.is_empty() {
            build_axis(&c.x, false, xe, x_target(left, right))
        } else {
            Axis::categorical(&c.categories)
        }
    };
    // Vertical marker labels sit in a band above the plot, so the band's height must
    // be known before the y axis; a provisional x mapping is close enough for that.
    let guess = x_axis(70.0, w - PAD - 8.0);
    let label_rows = marker_label_rows(c, &guess, 70.0, w - PAD - 8.0);
    let top = legend_bottom + 14.0 * label_rows as f64;
    let y = build_axis(
        &c.y,
        true,
        ye,
        ((bottom - top) / 50.0).round().clamp(2.0, 10.0) as usize,
    );
    let widest = y
        .ticks
        .iter()
        .map(|t| text_w(&t.label, FONT))
        .fold(0.0, f64::max);
    let left = (PAD + 16.0 + widest + 10.0).max(52.0);
    let right = w - PAD - 8.0;
    let x = x_axis(left, right);
    Plot {
        left,
        right,
        top,
        bottom,
        x,
        y,
        y_rev: c.y.reversed,
        label_rows,
    }
}

/// Axes, the series clipped to the plot, markers, tick labels and axis titles; counts the
/// points drawn into `drawn`.
fn draw_plot(
    svg: &mut Svg,
    c: &Chart,
    preps: &[Prep],
    plot: &Plot,
    st: &mut Stats,
    drawn: &mut usize,
) {
    let (left, right, top, bottom) = (plot.left, plot.right, plot.top, plot.bottom);
    draw_axes(svg, c, plot);
    st.notes.extend(draw_axis_break(svg, c, plot));
    let clip = format!("{}-clip", c.id);
    svg.el("clipPath").attr("id", &clip).open();
    svg.el("rect")
        .num("x", left - 5.0)
        .num("y", top - 5.0)
        .num("width", right - left + 10.0)
        .num("height", bottom - top + 10.0)
        .leaf();
    svg.close();
    svg.el("g")
        .attr("class", "data")
        .attr("clip-path", &format!("url(#{clip})"))
        .open();
    for p in preps.iter().filter(|p| !p.is_empty()) {
        draw_series(svg, c, p, plot, drawn);
    }
    svg.close();
    draw_markers(svg, c, plot);
    draw_tick_labels(svg, c, plot);
    draw_axis_titles(svg, c, plot);
}

/// The y axis title turned along the axis, the x axis title under the tick labels.
fn draw_axis_titles(svg: &mut Svg, c: &Chart, plot: &Plot) {
    let mid_y = (plot.top + plot.bottom) / 2.0;
    let rot = format!(
        "translate({},{}) rotate(-90)",
        fmt_coord(PAD + 10.0).unwrap_or_default(),
        fmt_coord(mid_y).unwrap_or_default()
    );
    if !c.y.label.is_empty() {
        svg.el("text")
            .attr("class", "atitle")
            .attr("text-anchor", "middle")
            .attr("transform", &rot)
            .text(&c.y.unit.axis_title(&c.y.label));
    }
    if !c.x.label.is_empty() {
        svg.el("text")
            .attr("class", "atitle")
            .attr("text-anchor", "middle")
            .num("x", (plot.left + plot.right) / 2.0)
            .num("y", c.height - 8.0)
            .text(&c.x.unit.axis_title(&c.x.label));
    }
}

/// An empty frame saying "no data" where the plot would be.
fn draw_no_data(svg: &mut Svg, c: &Chart, top: f64, bottom: f64) {
    let (left, right) = (PAD + 40.0, c.width - PAD - 8.0);
    svg.el("rect")
        .attr("class", "frame")
        .num("x", left)
        .num("y", top)
        .num("width", right - left)
        .num("height", bottom - top)
        .leaf();
    svg.el("text")
        .attr("class", "nodata")
        .attr("text-anchor", "middle")
        .num("x", (left + right) / 2.0)
        .num("y", (top + bottom) / 2.0 + 5.0)
        .text("no data");
}

/// The `<svg>` root around `body`, with its title, description and scoped style.
fn wrap(c: &Chart, body: &str, desc: &str, drawn: usize, skipped: usize) -> String {
    let id = &c.id;
    let mut out = String::with_capacity(body.len() + 4096);
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{id}\" class=\"sb-chart\" \
         viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" \
         aria-labelledby=\"{id}-title {id}-desc\" data-chart=\"{id}\" \
         data-points=\"{drawn}\" data-skipped=\"{}\">",
        fmt_coord(c.width).unwrap_or_default(),
        fmt_coord(c.height).unwrap_or_default(),
        skipped
    );
    let _ = write!(
        out,
        "<title id=\"{id}-title\">{}</title><desc id=\"{id}-desc\">{}</desc><style>{}</style>",
        escape(&c.title),
        escape(desc),
        style(id)
    );
    out.push_str(body);
    out.push_str("</svg>");
    out
}
