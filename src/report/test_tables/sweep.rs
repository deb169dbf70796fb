//! The throughput-latency curve (draft Table 5): one row per level, with an SLO column
//! when one was given, then the knee, saturation and optimal operating points in words.

use super::{ms, pct, result, table, Parts};
use crate::procedure::curve::CurveResult;
use crate::procedure::level::rate;
use crate::procedure::report::TestReport;

pub(super) fn curve(r: &TestReport, out: &mut Parts) {
    if let Some(x) = result::<CurveResult>(r) {
        curve_parts(&x, out);
    }
}

/// The SLO a curve was judged against: as given, or (an older report) that one was.
fn curve_slo(x: &CurveResult) -> Option<String> {
    x.slo.clone().or_else(|| {
        (x.optimal_basis.as_deref() == Some("slo") || x.points.iter().any(|p| p.slo_met.is_some()))
            .then(|| "the SLO".to_string())
    })
}

/// Table 5 with an SLO column when one was given, then the knee, saturation and optimal
/// points, the optimal one under the SLO that was given.
fn curve_parts(x: &CurveResult, out: &mut Parts) {
    let slo = curve_slo(x);
    let mut header = vec![
        "Offered (r/s)",
        "Achieved (tok/s)",
        "TTFT P50",
        "TTFT P99",
        "TPOT P50",
        "TPOT P99",
        "Success",
        "Queue",
    ];
    if slo.is_some() {
        header.push("SLO");
    }
    let mut t = table(&header);
    let (mut indicative, mut observed) = (false, false);
    for p in &x.points {
        // The interval the saturation point is read with; without one (too few requests
        // in the steady window, as at the low levels of a short sweep) the value is only
        // indicative, and the table says so.
        let achieved = match p.achieved_ci {
            Some((lo, hi)) => format!("{:.0} ±{:.0}", p.achieved_tokens_per_s, (hi - lo) / 2.0),
            None => {
                indicative = true;
                format!("{:.0} *", p.achieved_tokens_per_s)
            }
        };
        let mut row = vec![
            rate(p.offered_rate_per_s),
            achieved,
            ms(p.ttft_p50_ms),
            ms(p.ttft_p99_ms),
            ms(p.tpot_p50_ms),
            ms(p.tpot_p99_ms),
            pct(p.success_rate),
            p.queue.clone(),
        ];
        if slo.is_some() {
            let seen = p.slo_reading.as_deref() == Some("observed");
            observed |= seen;
            row.push(format!(
                "{}{}",
                match p.slo_met {
                    Some(true) => "met",
                    Some(false) => "missed",
                    None => "-",
                },
                if seen { " †" } else { "" }
            ));
        }
        t.push(row);
    }
    let mut t = t.titled(&match &x.slo {
        Some(s) => format!("Table 5: Throughput-latency (SLO {s})"),
        None => "Table 5: Throughput-latency".to_string(),
    });
    if indicative {
        t = t.note("* too few requests in the level's steady window for an interval: indicative only (lengthen --level-duration)");
    }
    if x.points.iter().any(|p| p.achieved_ci.is_some()) {
        t = t.note("± half the 95 % interval of the steady window's throughput");
    }
    if observed {
        t = t.note("† read on the observed values: the 95 % interval straddles the target, too few requests to decide (a P99 bound needs 381 within it); met when the level's own percentile is within the bound");
    }
    out.table(t);
    curve_points(x, slo.as_deref(), out);
}

/// The knee, saturation and optimal operating points in words.
fn curve_points(x: &CurveResult, slo: Option<&str>, out: &mut Parts) {
    let at = |v: Option<f64>, none: &str| {
        v.map(|v| format!("{} req/s", rate(v)))
            .unwrap_or_else(|| none.into())
    };
    out.text(format!(
        "Knee point: {} (TTFT P99 exceeds 2× the minimum)",
        at(x.knee_rate_per_s, "none")
    ));
    out.text(format!(
        "Saturation point: {} ({})",
        at(x.saturation_rate_per_s, "none"),
        match x.saturation_rule.as_deref() {
            Some("shortfall") => "achieved throughput under 90 % of what the offered load asks",
            Some(_) => "achieved throughput falls from the previous level beyond its interval",
            None => "throughput neither fell from a level to the next nor fell short of the offer",
        }
    ));
    if x.saturation_rule.as_deref() == Some("shortfall") {
        // A departure from the draft's words: say so where the answer is read.
        out.text("Why: by the draft's words (throughput \"first decreases from previous level\") no level up to this one saturated; servebench also reads the level where throughput falls short of the offer, the reading that gives the draft's own Table 5 its stated 22 req/s (docs/methodology.md)");
    }
    out.text(format!(
        "Saturation onset: {} (the request rate the levels saturated for good completed, at least what a lower level sustained and at most the first saturated level's offer)",
        at(x.saturation_onset_rate_per_s, "none (no level saturated for good)")
    ));
    out.text(format!(
        "Optimal operating point: {} ({})",
        at(x.optimal_rate_per_s, "none"),
        match (slo, x.optimal_rate_per_s) {
            (Some(s), Some(_)) => format!("highest throughput meeting {s}"),
            (Some(s), None) => format!("no level met {s}"),
            (None, _) => "no SLO given: highest throughput below the knee".to_string(),
        }
    ));
}

#[cfg(test)]
mod tests {
    use super::super::Part;
    use super::*;
    use crate::procedure::curve::CurvePoint;

    fn point(rate: f64, p99: f64, met: Option<bool>, reading: Option<&str>) -> CurvePoint {
        CurvePoint {
            level: 0,
            share: 0.0,
            offered_rate_per_s: rate,
            achieved_tokens_per_s: 100.0 * rate,
            achieved_ci: None,
            achieved_requests_per_s: rate,
            ttft_p50_ms: Some(p99 / 2.0),
            ttft_p95_ms: None,
            ttft_p99_ms: Some(p99),
            tpot_p50_ms: None,
            tpot_p95_ms: None,
            tpot_p99_ms: None,
            e2e_p50_ms: None,
            e2e_p95_ms: None,
            e2e_p99_ms: None,
            success_rate: 1.0,
            cancelled: 0,
            queue: "stable".into(),
            slo_met: met,
            slo_reading: reading.map(str::to_owned),
            saturation_signals: Vec::new(),
        }
    }

    fn texts(out: &Parts) -> Vec<String> {
        out.0
            .iter()
            .filter_map(|p| match p {
                Part::Text(s) => Some(s.clone()),
                Part::Table(_) => None,
            })
            .collect()
    }

    /// Issue 19, item 3: with `--slo 'p99(ttft_ms)<=10000'` given and no level shown to meet
    /// it, the table said "no SLO given". It now names the SLO in Table 5's title, has an
    /// SLO column (a level read on its observed values marked †), and says no level met it.
    #[test]
    fn table_5_shows_the_slo_that_was_given() {
        let slo = "p99(ttft_ms)<=10000";
        let x = CurveResult {
            slo: Some(slo.into()),
            points: vec![
                point(1.0, 11.0, Some(false), Some("interval")),
                point(2.0, 39.0, Some(false), Some("observed")),
            ],
            ..Default::default()
        };
        let mut out = Parts::default();
        curve_parts(&x, &mut out);
        let Some(Part::Table(t)) = out.0.first() else {
            panic!("Table 5 first: {out:?}");
        };
        assert_eq!(
            t.title.as_deref(),
            Some("Table 5: Throughput-latency (SLO p99(ttft_ms)<=10000)")
        );
        assert_eq!(t.header.last().map(String::as_str), Some("SLO"));
        assert_eq!(t.rows[0].last().map(String::as_str), Some("missed"));
        assert_eq!(t.rows[1].last().map(String::as_str), Some("missed †"));
        assert_eq!(
            texts(&out).last().map(String::as_str),
            Some("Optimal operating point: none (no level met p99(ttft_ms)<=10000)")
        );
        // Met at 2 req/s: the highest throughput meeting the SLO, named.
        let x = CurveResult {
            optimal_rate_per_s: Some(2.0),
            optimal_basis: Some("slo".into()),
            ..x
        };
        let mut out = Parts::default();
        curve_parts(&x, &mut out);
        assert_eq!(
            texts(&out).last().map(String::as_str),
            Some(
                "Optimal operating point: 2 req/s (highest throughput meeting p99(ttft_ms)<=10000)"
            )
        );
        // A saturation point found by the shortfall says why, under the table.
        let x = CurveResult {
            saturation_rate_per_s: Some(2.0),
            saturation_rule: Some("shortfall".into()),
            ..x
        };
        let mut out = Parts::default();
        curve_parts(&x, &mut out);
        let said = texts(&out);
        assert!(said.contains(&"Saturation point: 2 req/s (achieved throughput under 90 % of what the offered load asks)".to_string()), "{said:?}");
        assert!(
            said.iter()
                .any(|t| t.starts_with("Why: by the draft's words")),
            "{said:?}"
        );
        // Without an SLO: no column, and the knee's reading.
        let x = CurveResult {
            points: vec![point(1.0, 11.0, None, None)],
            ..Default::default()
        };
        let mut out = Parts::default();
        curve_parts(&x, &mut out);
        let Some(Part::Table(t)) = out.0.first() else {
            panic!("Table 5 first");
        };
        assert_eq!(t.header.len(), 8);
        assert_eq!(
            texts(&out).last().map(String::as_str),
            Some("Optimal operating point: none (no SLO given: highest throughput below the knee)")
        );
    }
}
