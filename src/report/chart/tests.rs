//! Whole-chart tests: the output is well-formed XML, carries the promised DOM contract
//! (classes, `data-*`, tooltips, ARIA), never contains `NaN`, stays inside its viewBox,
//! and degrades sensibly on empty, hostile or huge input.
//!
//! No XML crate is allowed, so a minimal well-formedness checker lives in `tests/xml.rs`:
//! balanced tags, quoted and unique attributes, only known entities, no stray `<` or `&`.
//! The sample charts the tests render are in `tests/fixtures.rs`.

mod fixtures;
mod xml;

use super::axis::{Scale, Unit};
use super::charts::{Chart, Series};
use super::data::Bins;
use fixtures::{latencies, samples, token_rows};
use xml::{parse, Node};

#[test]
fn every_sample_is_well_formed_and_keeps_the_dom_contract() {
    for (name, chart) in samples() {
        let svg = chart.render();
        let root = parse(&svg).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(root.name, "svg");
        assert_eq!(root.attr("role"), Some("img"));
        assert_eq!(root.attr("width"), Some("100%"));
        let id = root.attr("id").unwrap();
        assert_eq!(root.attr("data-chart"), Some(id));
        let labelled = root.attr("aria-labelledby").unwrap();
        let all = root.walk();
        for target in labelled.split(' ') {
            let hit = all.iter().find(|n| n.attr("id") == Some(target));
            let hit = hit.unwrap_or_else(|| panic!("{name}: no element {target}"));
            assert!(hit.name == "title" || hit.name == "desc");
            assert!(!hit.text.is_empty());
        }
        assert_eq!(
            root.children.iter().filter(|c| c.name == "style").count(),
            1
        );
        let points: Vec<&&Node> = all
            .iter()
            .filter(|n| n.has_class("pt") || n.has_class("bar") || n.has_class("tok"))
            .collect();
        assert_eq!(
            root.attr("data-points"),
            Some(points.len().to_string().as_str()),
            "{name}"
        );
        for p in &points {
            assert!(p.attr("data-x").is_some(), "{name}: data-x on {p:?}");
            assert!(
                p.title().is_some_and(|t| !t.is_empty()),
                "{name}: title on {p:?}"
            );
        }
        for bad in ["NaN", "inf", "undefined"] {
            assert!(!svg.contains(bad) || name == "nan", "{name} contains {bad}");
        }
    }
}

/// Estimated extent of every text element stays within the viewBox: nothing is clipped.
#[test]
fn labels_stay_inside_the_drawing() {
    for (name, chart) in samples() {
        let root = parse(&chart.render()).unwrap();
        let vb: Vec<f64> = root
            .attr("viewBox")
            .unwrap()
            .split(' ')
            .map(|v| v.parse().unwrap())
            .collect();
        for t in root
            .walk()
            .into_iter()
            .filter(|n| n.name == "text" && n.attr("x").is_some())
        {
            let x: f64 = t.attr("x").unwrap().parse().unwrap();
            let y: f64 = t.attr("y").unwrap().parse().unwrap();
            let w = t.text.chars().count() as f64 * 11.0 * 0.55;
            let (a, b) = match t.attr("text-anchor") {
                Some("middle") => (x - w / 2.0, x + w / 2.0),
                Some("end") => (x - w, x),
                _ => (x, x + w),
            };
            assert!(
                a >= 0.0 && b <= vb[2] && y > 8.0 && y <= vb[3],
                "{name}: {:?} at {a}..{b}, {y}",
                t.text
            );
        }
    }
}

#[test]
fn nan_input_writes_no_nan_and_is_counted() {
    let svg = samples()
        .into_iter()
        .find(|s| s.0 == "nan")
        .unwrap()
        .1
        .render();
    let lower = svg.to_lowercase();
    // The title deliberately says "NaN & inf"; everything else must be clean.
    let body = lower
        .replace("nan &amp; inf &lt;everywhere&gt;", "")
        .replace("nan marker", "");
    assert!(!body.contains("nan") && !body.contains("inf"), "{svg}");
    let root = parse(&svg).unwrap();
    assert_eq!(root.attr("data-points"), Some("2"));
    assert_eq!(root.attr("data-skipped"), Some("3"));
    let desc = root.children.iter().find(|c| c.name == "desc").unwrap();
    assert!(
        desc.text.contains("3 non-finite values skipped"),
        "{}",
        desc.text
    );
}

#[test]
fn hostile_names_round_trip_through_escaping() {
    let name = "<script>alert('x') & \"y\"</script>\u{7}";
    let svg = Chart::new("x", name)
        .series(Series::scatter(name, vec![(1.0, 2.0)]))
        .render();
    assert!(!svg.contains("<script>"));
    let root = parse(&svg).unwrap();
    let title = root.children.iter().find(|c| c.name == "title").unwrap();
    assert_eq!(title.text, name.replace('\u{7}', "\u{FFFD}"));
    let pt = root.walk().into_iter().find(|n| n.has_class("pt")).unwrap();
    assert!(pt.title().unwrap().starts_with("<script>"));
}

#[test]
fn empty_chart_shows_no_data_frame() {
    for chart in [
        Chart::cdf("x", &[]),
        Chart::timeline(&[], 100.0),
        Chart::new("e", "e"),
        Chart::bars::<&str>("b", &[]),
        Chart::histogram("h", &[f64::NAN], Bins::Auto),
    ] {
        let svg = chart.render();
        let root = parse(&svg).unwrap();
        assert_eq!(root.attr("data-points"), Some("0"));
        assert!(root
            .walk()
            .iter()
            .any(|n| n.has_class("nodata") && n.text == "no data"));
        assert!(root.walk().iter().any(|n| n.has_class("frame")));
    }
}

#[test]
fn million_value_cdf_is_decimated_deterministically() {
    let values = latencies(1_000_000, 42);
    let chart = Chart::cdf("big", &values);
    let svg = chart.render();
    assert_eq!(svg, chart.render(), "same input, same output");
    let root = parse(&svg).unwrap();
    let pts: Vec<&Node> = root
        .walk()
        .into_iter()
        .filter(|n| n.has_class("pt"))
        .collect();
    assert!(pts.len() <= 2000 && pts.len() >= 1900, "{}", pts.len());
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(pts[0].attr("data-x"), super::svg::fmt_data(min).as_deref());
    assert_eq!(pts[pts.len() - 1].attr("data-y"), Some("100"));
    let desc = root.children.iter().find(|c| c.name == "desc").unwrap();
    assert!(
        desc.text
            .contains("CDF of 1,000,000 values drawn with 2,000 of its 1,000,000 steps"),
        "{}",
        desc.text
    );
}

#[test]
fn cdf_points_are_exact_for_known_values() {
    let root = parse(&Chart::cdf("k", &[3.0, 1.0, 2.0, 5.0, 2.0]).render()).unwrap();
    let pts: Vec<(&str, &str)> = root
        .walk()
        .into_iter()
        .filter(|n| n.has_class("pt"))
        .map(|n| (n.attr("data-x").unwrap(), n.attr("data-y").unwrap()))
        .collect();
    assert_eq!(
        pts,
        vec![("1", "20"), ("2", "60"), ("3", "80"), ("5", "100")]
    );
    let tips: Vec<&str> = root
        .walk()
        .into_iter()
        .filter_map(|n| if n.has_class("pt") { n.title() } else { None })
        .collect();
    assert_eq!(tips[1], "k: 60% ≤ 2.00 ms");
}

#[test]
fn timeline_caps_rows_and_highlights_pauses() {
    let rows = token_rows(400, 5);
    let root = parse(&Chart::timeline(&rows, 250.0).render()).unwrap();
    let all = root.walk();
    let row_lines = all
        .iter()
        .filter(|n| n.has_class("row") && n.attr("data-y").is_some())
        .count();
    assert_eq!(row_lines, super::charts::MAX_ROWS);
    assert!(all.iter().filter(|n| n.has_class("tok")).count() <= 4000 + 3);
    assert!(all
        .iter()
        .any(|n| n.has_class("pause") && n.attr("data-x2").is_some()));
    let desc = root.children.iter().find(|c| c.name == "desc").unwrap();
    assert!(
        desc.text.contains("Showing 80 of 400 requests"),
        "{}",
        desc.text
    );
}

#[test]
fn close_vertical_markers_do_not_overlap_their_labels() {
    let chart = samples().into_iter().find(|s| s.0 == "markers").unwrap().1;
    let root = parse(&chart.render()).unwrap();
    let mut boxes = Vec::new();
    for g in root.walk().into_iter().filter(|n| n.has_class("mk")) {
        let t = g.children.iter().find(|c| c.name == "text").unwrap();
        let x: f64 = t.attr("x").unwrap().parse().unwrap();
        let y: f64 = t.attr("y").unwrap().parse().unwrap();
        let w = t.text.chars().count() as f64 * 11.0 * 0.6;
        let (a, b) = if t.attr("text-anchor") == Some("end") {
            (x - w, x)
        } else {
            (x, x + w)
        };
        assert!(a >= 0.0 && b <= 720.0, "{:?} {a}..{b}", t.text);
        boxes.push((a, b, y));
    }
    assert_eq!(boxes.len(), 6);
    for (i, p) in boxes.iter().enumerate() {
        for q in &boxes[i + 1..] {
            let apart = p.1 <= q.0 || q.1 <= p.0 || (p.2 - q.2).abs() >= 12.0;
            assert!(apart, "{p:?} overlaps {q:?}");
        }
    }
}

#[test]
fn log_axis_skips_non_positive_values() {
    let chart = Chart::new("l", "l")
        .x_scale(Scale::Log)
        .series(Series::line(
            "s",
            vec![(0.0, 1.0), (-1.0, 2.0), (10.0, 3.0), (100.0, 4.0)],
        ));
    let root = parse(&chart.render()).unwrap();
    assert_eq!(root.attr("data-points"), Some("2"));
    assert_eq!(root.attr("data-skipped"), Some("2"));
}

#[test]
fn tooltip_reads_like_a_sentence() {
    let chart = Chart::new("t", "t")
        .x_axis("load", Unit::ReqPerS)
        .y_axis("P99 TTFT", Unit::Ms)
        .series(Series::line("P99 TTFT", vec![(12.0, 512.0)]));
    let root = parse(&chart.render()).unwrap();
    let pt = root.walk().into_iter().find(|n| n.has_class("pt")).unwrap();
    assert_eq!(pt.title(), Some("P99 TTFT 512 ms at 12.0 req/s"));
}
