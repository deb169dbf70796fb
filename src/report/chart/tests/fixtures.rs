//! The sample charts the whole-chart tests render: the charts a report shows, plus hostile
//! cases, from deterministic pseudo-random data; and an ignored test that writes them out
//! for a look in a browser.

use super::super::axis::{Scale, Unit};
use super::super::charts::{Chart, CurvePoint, Marker, MarkerKind, Series};
use super::super::data::Bins;

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

pub(super) fn latencies(n: usize, seed: u64) -> Vec<f64> {
    let mut r = Lcg(seed);
    (0..n).map(|_| r.latency(180.0)).collect()
}

pub(super) fn token_rows(n: usize, seed: u64) -> Vec<Vec<f64>> {
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

/// Offered loads of the sample load curves, requests per second.
const LOADS: [f64; 9] = [1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0];

/// The charts a report shows, plus hostile cases.
pub(super) fn samples() -> Vec<(&'static str, Chart)> {
    let mut out = distribution_samples();
    out.extend(timeline_samples());
    out.extend(trend_samples());
    out.extend(bar_samples());
    out.extend(procedure_samples());
    out.extend(hostile_samples());
    out
}

/// CDFs and histograms, linear and log.
fn distribution_samples() -> Vec<(&'static str, Chart)> {
    let lat = latencies(5000, 7);
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
    ]
}

/// Token timelines, many rows and few.
fn timeline_samples() -> Vec<(&'static str, Chart)> {
    vec![
        ("timeline", Chart::timeline(&token_rows(400, 5), 250.0)),
        (
            "timeline-few",
            Chart::timeline(&token_rows(6, 8), 250.0).id("timeline-few"),
        ),
    ]
}

/// A time series, a curve with markers and a scatter with its fit.
fn trend_samples() -> Vec<(&'static str, Chart)> {
    let curve: Vec<CurvePoint> = LOADS
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
    ]
}

/// Bars, crowded markers and grouped bars with a missing group.
fn bar_samples() -> Vec<(&'static str, Chart)> {
    vec![
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
    ]
}

/// The procedures' charts: the load curve's latency and throughput, the long-context fit.
fn procedure_samples() -> Vec<(&'static str, Chart)> {
    vec![
        {
            let levels: Vec<crate::stats::curve::Level> = LOADS
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
                super::super::procedures::load_curve(&levels, "TTFT", Some(400.0)).latency,
            )
        },
        {
            let levels: Vec<crate::stats::curve::Level> = LOADS
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
                super::super::procedures::load_curve(&levels, "TTFT", None).throughput,
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
                super::super::procedures::long_context_fit(&pts, fit.as_ref(), "TTFT"),
            )
        },
    ]
}

/// Hostile cases: no data, non-finite values, one point.
fn hostile_samples() -> Vec<(&'static str, Chart)> {
    vec![
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
