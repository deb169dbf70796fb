//! Whole-chart tests: the output is well-formed XML, carries the promised DOM contract
//! (classes, `data-*`, tooltips, ARIA), never contains `NaN`, stays inside its viewBox,
//! and degrades sensibly on empty, hostile or huge input.
//!
//! No XML crate is allowed, so a minimal well-formedness checker lives here: balanced
//! tags, quoted and unique attributes, only known entities, no stray `<` or `&`.

use super::axis::{Scale, Unit};
use super::charts::{Chart, CurvePoint, Marker, MarkerKind, Series};
use super::data::Bins;

/// A parsed element.
#[derive(Debug, Default)]
struct Node {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Node>,
    /// Unescaped character data directly inside this element.
    text: String,
}

impl Node {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn has_class(&self, class: &str) -> bool {
        self.attr("class")
            .is_some_and(|c| c.split(' ').any(|x| x == class))
    }

    /// This node and all descendants, depth first.
    fn walk(&self) -> Vec<&Node> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }

    fn title(&self) -> Option<&str> {
        self.children
            .iter()
            .find(|c| c.name == "title")
            .map(|c| c.text.as_str())
    }
}

struct Parser<'a> {
    s: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.s[self.i..]
    }

    fn skip_ws(&mut self) {
        let n = self.rest().len() - self.rest().trim_start().len();
        self.i += n;
    }

    fn expect(&mut self, t: &str) -> Result<(), String> {
        if self.rest().starts_with(t) {
            self.i += t.len();
            Ok(())
        } else {
            Err(format!("expected {t:?} at byte {}", self.i))
        }
    }

    fn name(&mut self) -> Result<String, String> {
        let ok = |c: char, first: bool| {
            c.is_ascii_alphabetic()
                || c == '_'
                || (!first && (c.is_ascii_digit() || "-.:".contains(c)))
        };
        let mut end = self.i;
        for (k, c) in self.rest().char_indices() {
            if !ok(c, k == 0) {
                break;
            }
            end = self.i + k + c.len_utf8();
        }
        if end == self.i {
            return Err(format!("bad name at byte {}", self.i));
        }
        let n = self.s[self.i..end].to_string();
        self.i = end;
        Ok(n)
    }

    fn element(&mut self) -> Result<Node, String> {
        self.expect("<")?;
        let mut node = Node {
            name: self.name()?,
            ..Node::default()
        };
        loop {
            let before = self.i;
            self.skip_ws();
            if self.rest().starts_with("/>") {
                self.i += 2;
                return Ok(node);
            }
            if self.rest().starts_with('>') {
                self.i += 1;
                break;
            }
            if self.i == before {
                return Err(format!("no space before attribute at byte {}", self.i));
            }
            let key = self.name()?;
            self.skip_ws();
            self.expect("=")?;
            self.skip_ws();
            let quote = self.rest().chars().next().ok_or("eof in tag")?;
            if quote != '"' && quote != '\'' {
                return Err(format!("unquoted attribute {key}"));
            }
            self.i += 1;
            let end = self.rest().find(quote).ok_or("unterminated attribute")?;
            let raw = &self.s[self.i..self.i + end];
            if raw.contains('<') {
                return Err(format!("'<' in attribute {key}"));
            }
            self.i += end + 1;
            if node.attrs.iter().any(|(k, _)| *k == key) {
                return Err(format!("duplicate attribute {key}"));
            }
            node.attrs.push((key, unescape(raw)?));
        }
        loop {
            if self.rest().starts_with("</") {
                self.i += 2;
                let close = self.name()?;
                self.skip_ws();
                self.expect(">")?;
                if close != node.name {
                    return Err(format!("</{close}> closes <{}>", node.name));
                }
                return Ok(node);
            } else if self.rest().starts_with("<!--") {
                let end = self.rest().find("-->").ok_or("unterminated comment")?;
                self.i += end + 3;
            } else if self.rest().starts_with('<') {
                node.children.push(self.element()?);
            } else {
                let end = self
                    .rest()
                    .find('<')
                    .ok_or(format!("unclosed <{}>", node.name))?;
                node.text
                    .push_str(&unescape(&self.s[self.i..self.i + end])?);
                self.i += end;
            }
        }
    }
}

/// Resolves the five XML entities and character references; anything else is an error.
fn unescape(raw: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let semi = rest[amp..].find(';').ok_or("bare '&'")?;
        let ent = &rest[amp + 1..amp + semi];
        let c = match ent {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = if let Some(h) = ent.strip_prefix("#x") {
                    u32::from_str_radix(h, 16).ok()
                } else {
                    ent.strip_prefix('#').and_then(|d| d.parse().ok())
                };
                code.and_then(char::from_u32)
                    .ok_or(format!("unknown entity &{ent};"))?
            }
        };
        out.push(c);
        rest = &rest[amp + semi + 1..];
    }
    out.push_str(rest);
    if let Some(c) = out
        .chars()
        .find(|&c| (c as u32) < 0x20 && !"\t\n\r".contains(c))
    {
        return Err(format!("control character {:?}", c));
    }
    Ok(out)
}

/// Parses one well-formed XML element (an optional prolog aside) or says why not.
fn parse(s: &str) -> Result<Node, String> {
    let mut p = Parser { s, i: 0 };
    p.skip_ws();
    if p.rest().starts_with("<?") {
        p.i += p.rest().find("?>").ok_or("bad prolog")? + 2;
        p.skip_ws();
    }
    let root = p.element()?;
    p.skip_ws();
    if p.i != s.len() {
        return Err(format!("content after root at byte {}", p.i));
    }
    Ok(root)
}

#[test]
fn checker_rejects_ill_formed_markup() {
    assert!(parse("<a><b/></a>").is_ok());
    assert!(parse("<a x='1' y=\"&lt;&#39;&#x41;\">t &amp; u</a>").is_ok());
    for bad in [
        "<a><b></a>",
        "<a x=1/>",
        "<a x='1' x='2'/>",
        "<a>&</a>",
        "<a>&nbsp;</a>",
        "<a x='<'/>",
        "<a></a><b/>",
        "<a>",
        "<a x='1'y='2'/>",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

/// Deterministic pseudo-random numbers in [0, 1) (no RNG crate allowed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Log-normal latency in ms with the given median.
    fn latency(&mut self, median: f64) -> f64 {
        let (u, v) = (self.next().max(1e-12), self.next());
        let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
        median * (0.6 * z).exp()
    }
}

fn latencies(n: usize, seed: u64) -> Vec<f64> {
    let mut r = Lcg(seed);
    (0..n).map(|_| r.latency(180.0)).collect()
}

fn token_rows(n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut r = Lcg(seed);
    (0..n)
        .map(|_| {
            let mut t = r.latency(150.0);
            let tokens = 20 + (r.next() * 120.0) as usize;
            let mut row = vec![t];
            for _ in 1..tokens {
                t += if r.next() < 0.01 {
                    300.0 + r.next() * 900.0
                } else {
                    8.0 + r.next() * 20.0
                };
                row.push(t);
            }
            row
        })
        .collect()
}

/// The charts a report shows, plus hostile cases.
fn samples() -> Vec<(&'static str, Chart)> {
    let lat = latencies(5000, 7);
    let loads = [1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0];
    let curve: Vec<CurvePoint> = loads
        .iter()
        .map(|&x| {
            let y = 120.0 + 8.0 * x + 900.0 / (18.0 - x) + 40.0 * (x - 11.0_f64).max(0.0).powi(2);
            CurvePoint {
                x,
                y,
                ci: Some((y * 0.9, y * 1.12)),
            }
        })
        .collect();
    let mut r = Lcg(3);
    let ts: Vec<(String, Vec<(f64, f64)>)> = ["output tok/s", "input tok/s"]
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let pts = (0..600)
                .map(|i| {
                    let dip = if i == 400 { 1800.0 } else { 0.0 };
                    (
                        i as f64 * 0.5,
                        2000.0 + 1500.0 * k as f64 + 300.0 * r.next() - dip,
                    )
                })
                .collect();
            (name.to_string(), pts)
        })
        .collect();
    let fit_pts: Vec<(f64, f64)> = (1..60)
        .map(|i| {
            let x = i as f64 * 64.0;
            (x, 30.0 + 0.05 * x + 20.0 * (r.next() - 0.5))
        })
        .collect();
    vec![
        (
            "cdf",
            Chart::cdf("TTFT", &lat)
                .series(Series::cdf(
                    "TPOT ×4",
                    &latencies(3000, 9)
                        .iter()
                        .map(|v| v * 0.4)
                        .collect::<Vec<_>>(),
                ))
                .marker(Marker::vertical(500.0, "SLO 500 ms").kind(MarkerKind::Slo)),
        ),
        (
            "cdf-log",
            Chart::cdf("E2E latency", &latencies(200_000, 11))
                .id("e2e-cdf")
                .x_scale(Scale::Log),
        ),
        ("hist", Chart::histogram("TTFT", &lat, Bins::Auto)),
        (
            "hist-log",
            Chart::histogram("ITL", &lat, Bins::Log).id("itl-hist"),
        ),
        ("timeline", Chart::timeline(&token_rows(400, 5), 250.0)),
        (
            "timeline-few",
            Chart::timeline(&token_rows(6, 8), 250.0).id("timeline-few"),
        ),
        (
            "time-series",
            Chart::time_series(&ts).y_axis("throughput", Unit::TokPerS),
        ),
        (
            "curve",
            Chart::curve(
                "P99 TTFT",
                &curve,
                vec![
                    Marker::vertical(11.0, "knee").kind(MarkerKind::Knee),
                    Marker::vertical(15.2, "saturation").kind(MarkerKind::Saturation),
                    Marker::horizontal(600.0, "SLO P99 TTFT ≤ 600 ms").kind(MarkerKind::Slo),
                ],
            )
            .title("P99 TTFT against offered load")
            .x_axis("offered load", Unit::ReqPerS)
            .y_axis("P99 TTFT", Unit::Ms),
        ),
        (
            "fit",
            Chart::scatter_with_fit("prefill time", &fit_pts, "linear fit", |x| 30.0 + 0.05 * x)
                .x_axis("prompt length (tokens)", Unit::Plain)
                .y_axis("TTFT", Unit::Ms),
        ),
        (
            "bars",
            Chart::bars(
                "goodput share",
                &[
                    ("interactive", 41.5),
                    ("batch summarisation", 33.0),
                    ("code", 18.2),
                    ("long-context RAG", 7.3),
                ],
            )
            .y_axis("share of goodput", Unit::Percent)
            .title("Goodput share per class"),
        ),
        (
            "markers",
            Chart::new("markers", "Crowded markers")
                .series(Series::line(
                    "s",
                    (0..=20).map(|i| (i as f64, (i * i) as f64)).collect(),
                ))
                .marker(Marker::vertical(10.0, "knee at 10").kind(MarkerKind::Knee))
                .marker(Marker::vertical(10.4, "saturation at 10.4").kind(MarkerKind::Saturation))
                .marker(Marker::vertical(10.8, "SLO bound").kind(MarkerKind::Slo))
                .marker(Marker::vertical(19.9, "right edge label that is long"))
                .marker(Marker::horizontal(395.0, "near the top"))
                .marker(Marker::horizontal(380.0, "also near the top")),
        ),
        (
            "grouped",
            Chart::grouped_bars(
                "TTFT per class",
                &["interactive", "batch", "all failed"],
                &[
                    ("P50", vec![120.0, 900.0, f64::NAN]),
                    ("P99", vec![480.0, 2400.0, f64::NAN]),
                ],
            )
            .y_axis("TTFT", Unit::Ms),
        ),
        {
            let levels: Vec<crate::stats::curve::Level> = loads
                .iter()
                .map(|&x| {
                    let p99 = 120.0 + 8.0 * x + 900.0 / (18.0 - x);
                    let thr = 400.0 * x.min(12.0) - 30.0 * (x - 12.0).max(0.0);
                    crate::stats::curve::Level {
                        offered_rate_per_s: x,
                        achieved_tokens_per_s: thr,
                        achieved_ci: (thr * 0.97, thr * 1.03),
                        p99_latency_ms: p99,
                        p50_latency_ms: p99 * 0.4,
                        slo_attained: Some(p99 <= 400.0),
                    }
                })
                .collect();
            (
                "load-curve",
                super::procedures::load_curve(&levels, "TTFT", Some(400.0)).latency,
            )
        },
        {
            let levels: Vec<crate::stats::curve::Level> = loads
                .iter()
                .map(|&x| {
                    let thr = 400.0 * x.min(12.0) - 300.0 * (x - 12.0).max(0.0);
                    crate::stats::curve::Level {
                        offered_rate_per_s: x,
                        achieved_tokens_per_s: thr,
                        achieved_ci: (thr * 0.98, thr * 1.02),
                        p99_latency_ms: 100.0 + x * x * 4.0,
                        p50_latency_ms: 50.0 + x,
                        slo_attained: None,
                    }
                })
                .collect();
            (
                "load-curve-throughput",
                super::procedures::load_curve(&levels, "TTFT", None).throughput,
            )
        },
        {
            let pts: Vec<(f64, f64)> = [1024.0, 2048.0, 8192.0, 32768.0, 131072.0]
                .iter()
                .map(|&x| (x, 30.0 + 0.07 * x + 2e-7 * x * x))
                .collect();
            let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
            let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
            let fit = crate::stats::fit::fit_quadratic(&xs, &ys);
            (
                "long-context",
                super::procedures::long_context_fit(&pts, fit.as_ref(), "TTFT"),
            )
        },
        ("empty", Chart::cdf("nothing", &[])),
        (
            "nan",
            Chart::new("bad-values", "NaN & inf <everywhere>")
                .series(Series::line(
                    "bad \"line\"",
                    vec![
                        (0.0, f64::NAN),
                        (1.0, 2.0),
                        (f64::INFINITY, 3.0),
                        (3.0, 1.0),
                    ],
                ))
                .series(Series::scatter("all bad", vec![(f64::NAN, f64::NAN)]))
                .marker(Marker::horizontal(f64::NAN, "nan marker")),
        ),
        (
            "single",
            Chart::new("single", "One point").series(Series::scatter("only", vec![(5.0, 5.0)])),
        ),
    ]
}

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

/// Writes sample charts and an offline `index.html` that inlines them. Run with
/// `CHART_OUT=<dir> cargo test -- --ignored write_samples` (defaults to
/// `target/chart-samples` under the crate).
#[test]
#[ignore]
fn write_samples() {
    let dir = std::env::var("CHART_OUT").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/target/chart-samples").to_string()
    });
    std::fs::create_dir_all(&dir).unwrap();
    let mut html = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>chart samples</title><style>body{font-family:system-ui,sans-serif;\
         max-width:760px;margin:2em auto;color:#222}figure{margin:0 0 2em}</style>\
         </head><body><h1>Chart samples</h1>\n",
    );
    for (name, chart) in samples() {
        let svg = chart.render();
        std::fs::write(format!("{dir}/{name}.svg"), &svg).unwrap();
        html.push_str(&format!("<figure id=\"fig-{name}\">{svg}</figure>\n"));
    }
    html.push_str("</body></html>\n");
    std::fs::write(format!("{dir}/index.html"), html).unwrap();
}
