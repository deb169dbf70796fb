//! Charts of the draft's multi-run tests, ready for test pages: the throughput–latency
//! curve (5.3) with its knee, saturation point and SLO bound marked, and the long-context
//! scaling fit (5.9).
//!
//! They take the very types the statistics compute (`stats::curve::Level`,
//! `stats::fit::Fit`) and mark points by the same definitions (`stats::curve::sustained_knee`,
//! `saturation`, `peak`), so a chart can never disagree with its table.

use super::axis::{linear_ticks, Scale, Unit};
use super::charts::{Chart, CurvePoint, Marker, MarkerKind, Series};
use crate::stats::curve::{peak, saturation, sustained_knee, Level};
use crate::stats::fit::{Fit, Model};

/// The two panels of a throughput–latency curve, on the same offered-load axis: latency
/// (P99 and P50) above, achieved throughput below.
#[derive(Debug, Clone)]
pub struct LoadCurveCharts {
    /// P99 and P50 latency (ms) against offered load (req/s); SLO bound as a horizontal
    /// line; levels that missed the SLO drawn as separate points.
    pub latency: Chart,
    /// Achieved output throughput (tok/s, with its 95 % confidence band) against offered
    /// load.
    pub throughput: Chart,
}

/// Vertical markers for the knee, the saturation point (or, when throughput never
/// clearly decreases, the peak), each placed at its level's offered load.
fn load_markers(levels: &[Level]) -> Vec<Marker> {
    let mut marks = Vec::new();
    if let Some(k) = sustained_knee(levels) {
        marks.push(
            Marker::vertical(
                k.offered_rate_per_s,
                &format!("knee {}", Unit::ReqPerS.format(k.offered_rate_per_s)),
            )
            .kind(MarkerKind::Knee),
        );
    }
    match saturation(levels) {
        Some(s) => marks.push(
            Marker::vertical(
                s.offered_rate_per_s,
                &format!("saturation {}", Unit::ReqPerS.format(s.offered_rate_per_s)),
            )
            .kind(MarkerKind::Saturation),
        ),
        None => {
            if let Some(p) = peak(levels) {
                marks.push(Marker::vertical(
                    p.offered_rate_per_s,
                    &format!(
                        "peak throughput {}",
                        Unit::ReqPerS.format(p.offered_rate_per_s)
                    ),
                ));
            }
        }
    }
    marks
}

/// The throughput–latency curve of a sweep (draft 5.3): `latency_metric` names the
/// latency the levels hold (e.g. "TTFT"), `slo_p99_ms` draws the SLO bound on P99.
/// Knee: from this load on, every P99 is above twice the sweep's lowest P99 (the
/// procedure's reading, `stats::curve::sustained_knee`); saturation: achieved throughput
/// falls below the previous level's with separated confidence intervals (`stats::curve`).
pub fn load_curve(
    levels: &[Level],
    latency_metric: &str,
    slo_p99_ms: Option<f64>,
) -> LoadCurveCharts {
    let mut sorted: Vec<&Level> = levels
        .iter()
        .filter(|l| l.offered_rate_per_s.is_finite())
        .collect();
    sorted.sort_by(|a, b| a.offered_rate_per_s.total_cmp(&b.offered_rate_per_s));
    let max_x = sorted.last().map_or(1.0, |l| l.offered_rate_per_s);
    let (x_lo, x_hi, _, _) = linear_ticks(0.0, max_x, 6, false);
    let marks = load_markers(levels);

    let p99: Vec<(f64, f64)> = sorted
        .iter()
        .map(|l| (l.offered_rate_per_s, l.p99_latency_ms))
        .collect();
    let p50: Vec<(f64, f64)> = sorted
        .iter()
        .map(|l| (l.offered_rate_per_s, l.p50_latency_ms))
        .collect();
    let missed: Vec<(f64, f64)> = sorted
        .iter()
        .filter(|l| l.slo_attained == Some(false))
        .map(|l| (l.offered_rate_per_s, l.p99_latency_ms))
        .collect();
    let mut latency = Chart::new(
        &format!("load-curve-{latency_metric}"),
        &format!("{latency_metric} against offered load"),
    )
    .x_axis("offered load", Unit::ReqPerS)
    .x_range(x_lo, x_hi)
    .y_axis(latency_metric, Unit::Ms)
    .series(Series::line(&format!("P99 {latency_metric}"), p99))
    .series(Series::line(&format!("P50 {latency_metric}"), p50));
    if !missed.is_empty() {
        latency = latency.series(Series::scatter("level missed the SLO", missed));
    }
    for m in &marks {
        latency = latency.marker(m.clone());
    }
    if let Some(slo) = slo_p99_ms {
        latency = latency.marker(
            Marker::horizontal(
                slo,
                &format!("SLO: P99 {latency_metric} ≤ {}", Unit::Ms.format(slo)),
            )
            .kind(MarkerKind::Slo),
        );
    }
    latency = latency.describe(
        "Knee: the load from which every P99 exceeds twice the lowest P99 of the sweep (draft 5.3.4).",
    );

    let points: Vec<CurvePoint> = sorted
        .iter()
        .map(|l| CurvePoint {
            x: l.offered_rate_per_s,
            y: l.achieved_tokens_per_s,
            ci: Some(l.achieved_ci).filter(|(a, b)| a.is_finite() && b.is_finite()),
        })
        .collect();
    let throughput = Chart::curve("achieved output throughput", &points, marks)
        .id("load-curve-throughput")
        .title("Achieved output throughput against offered load")
        .x_axis("offered load", Unit::ReqPerS)
        .x_range(x_lo, x_hi)
        .y_axis("output throughput", Unit::TokPerS)
        .describe(
            "Saturation: the first load whose throughput falls below the previous level's, \
             confidence intervals apart (draft 5.3.4).",
        );
    LoadCurveCharts {
        latency,
        throughput,
    }
}

/// The model's name and goodness of fit, for a legend: `linear fit, R² = 0.9987`.
pub fn fit_label(fit: &Fit) -> String {
    let name = match fit.model {
        Model::Linear { .. } => "linear fit",
        Model::Quadratic { .. } => "quadratic fit",
        Model::PowerLaw { .. } => "power-law fit",
    };
    format!("{name}, R² = {:.4}", fit.r_squared)
}

/// Long-context scaling (draft 5.9): measured latency (ms) against input length
/// (tokens) as points, and the fitted model as a line across their range. Both axes
/// turn logarithmic when the lengths span more than 20×, so a power law reads as a
/// straight line and short prompts stay visible; change with `x_scale`/`y_scale`.
pub fn long_context_fit(points: &[(f64, f64)], fit: Option<&Fit>, latency_metric: &str) -> Chart {
    let xs = points
        .iter()
        .map(|p| p.0)
        .filter(|x| x.is_finite() && *x > 0.0);
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let wide = lo > 0.0 && hi / lo > 20.0;
    let mut chart = match fit {
        Some(f) => {
            let model = f.model;
            Chart::scatter_with_fit(latency_metric, points, &fit_label(f), move |x| {
                model.predict(x)
            })
        }
        None => Chart::new(latency_metric, latency_metric)
            .series(Series::scatter(latency_metric, points.to_vec())),
    }
    .id("long-context-fit")
    .title(&format!("{latency_metric} against input length"))
    .x_axis("input length (tokens)", Unit::Plain)
    .y_axis(latency_metric, Unit::Ms);
    if wide {
        chart = chart
            .x_scale(Scale::Log)
            .y_scale(Scale::Log)
            .describe("Both axes are logarithmic: a power law is a straight line.");
    }
    chart
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(x: f64, p99: f64, thr: f64, ci: f64, slo: Option<bool>) -> Level {
        Level {
            offered_rate_per_s: x,
            achieved_tokens_per_s: thr,
            achieved_ci: (thr - ci, thr + ci),
            p99_latency_ms: p99,
            p50_latency_ms: p99 / 2.0,
            slo_attained: slo,
        }
    }

    fn svg_markers(svg: &str) -> Vec<&str> {
        svg.split("<g class=\"mk ")
            .skip(1)
            .map(|s| s.split('"').next().unwrap())
            .collect()
    }

    #[test]
    fn the_curve_marks_knee_saturation_and_slo() {
        // Lowest P99 100: the knee is the first level above 200 (8 req/s); throughput
        // drops clearly at 10 req/s (CIs apart): saturation.
        let levels = vec![
            level(8.0, 250.0, 1500.0, 10.0, Some(true)),
            level(2.0, 100.0, 500.0, 10.0, Some(true)),
            level(4.0, 120.0, 1000.0, 10.0, Some(true)),
            level(10.0, 900.0, 1200.0, 10.0, Some(false)),
        ];
        let c = load_curve(&levels, "TTFT", Some(500.0));
        let lat = c.latency.render();
        assert_eq!(svg_markers(&lat), vec!["slo", "knee", "saturation"]);
        assert!(lat.contains("knee 8.00 req/s"));
        assert!(lat.contains("saturation 10.0 req/s"));
        assert!(lat.contains("SLO: P99 TTFT ≤ 500 ms"));
        // 4 P99 + 4 P50 points + 1 missed-SLO point, in offered-load order.
        assert!(lat.contains("data-points=\"9\""));
        assert!(lat.contains("data-x=\"2\" data-y=\"100\""));
        let thr = c.throughput.render();
        assert_eq!(svg_markers(&thr), vec!["knee", "saturation"]);
        assert!(thr.contains("class=\"band\""));
        assert!(thr.contains("data-points=\"4\""));
        // Both panels share the x axis: 0 to 10 req/s.
        assert_eq!(c.latency.x.range, Some((0.0, 10.0)));
        assert_eq!(c.throughput.x.range, c.latency.x.range);
    }

    #[test]
    fn without_a_clear_drop_the_peak_is_marked() {
        let levels = vec![
            level(1.0, 100.0, 500.0, 50.0, None),
            level(2.0, 110.0, 900.0, 50.0, None),
            level(3.0, 120.0, 880.0, 50.0, None),
        ];
        let c = load_curve(&levels, "TTFT", None);
        let thr = c.throughput.render();
        assert_eq!(svg_markers(&thr), vec!["note"]);
        assert!(thr.contains("peak throughput 2.00 req/s"));
        assert!(!c.latency.render().contains("mk slo"));
    }

    #[test]
    fn the_fit_is_drawn_through_the_points() {
        let pts: Vec<(f64, f64)> = [1000.0, 4000.0, 16000.0, 64000.0]
            .iter()
            .map(|&x| (x, 20.0 + 0.07 * x))
            .collect();
        let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
        let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
        let fit = crate::stats::fit::fit_linear(&xs, &ys).unwrap();
        let c = long_context_fit(&pts, Some(&fit), "TTFT");
        assert_eq!(c.x.scale, Scale::Log);
        let svg = c.render();
        assert!(svg.contains("linear fit, R² = 1.0000"));
        // The four measured points are the data; the fitted line is not.
        assert!(svg.contains("data-points=\"4\""));
        assert!(svg.contains("data-x=\"64000\" data-y=\"4500\""));
        let no_fit = long_context_fit(&pts[..2], None, "TTFT");
        assert_eq!(no_fit.x.scale, Scale::Linear);
        assert!(no_fit.render().contains("data-points=\"2\""));
    }
}
