//! The regression gate in words (`servebench regress`): one line per metric, the
//! regressions marked, then the gate's verdict, within 100 columns. Pure: a
//! [`RegressionReport`] in, text out.

use crate::compare::regress::{MetricGate, RegressionReport};
use crate::compare::{signed, signed_bare};
use crate::report::terminal::wrap;
use crate::stats::compare::{Outcome, Verdict};

/// The gate in words: one line per metric, regressions first marked `REGRESSED`.
pub fn render(r: &RegressionReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Regression gate: {} candidate run(s) against {} baseline run(s), tolerance {:.1} %",
        r.candidate_runs,
        r.baseline_runs,
        r.tolerance * 100.0
    );
    for g in &r.metrics {
        let rel = g
            .relative_difference
            .map(|x| format!("({:+.1} %)", x * 100.0))
            .unwrap_or_default();
        let state = state(g);
        let _ = writeln!(
            out,
            "  {:<18} {:>9} → {:>9} {:<5} {:>12} {:>10}  {state}",
            g.label,
            short(g.baseline_mean),
            short(g.candidate_mean),
            g.unit,
            signed(g.metric, g.difference),
            rel,
        );
        if let Outcome::Compared(c) = &g.outcome {
            let p = if c.welch.p_value < 0.001 {
                "< 0.001".to_owned()
            } else {
                format!("= {:.3}", c.welch.p_value)
            };
            let unit = match g.unit.as_str() {
                "share" => String::new(),
                u => format!(" {u}"),
            };
            let _ = writeln!(
                out,
                "      95 % CI of the change {} to {}{unit}; Welch p {p}{}",
                signed_bare(g.metric, c.difference_ci.0),
                signed_bare(g.metric, c.difference_ci.1),
                if g.regressed == Some(true) {
                    format!("; beyond the {:.1} % tolerance", r.tolerance * 100.0)
                } else {
                    String::new()
                }
            );
        }
    }
    let _ = writeln!(out, "{}", verdict(r));
    out
}

/// A metric's state in words: `REGRESSED`, `LIKELY REGRESSION` (too few runs, a gross
/// change), the comparison's verdict, or `not decided`.
fn state(g: &MetricGate) -> &'static str {
    match (&g.outcome, g.regressed) {
        (_, Some(true)) => "REGRESSED",
        _ if g.likely_regression => "LIKELY REGRESSION",
        (Outcome::Compared(c), _) => match c.verdict {
            Verdict::Better => "better",
            Verdict::NoDifference => "no difference",
            Verdict::Inconclusive => "within noise",
            Verdict::Worse => "worse",
        },
        _ => "not decided",
    }
}

/// The gate's last line: a regression, a likely one, no decision, or none.
fn verdict(r: &RegressionReport) -> String {
    let names = |pick: fn(&MetricGate) -> bool| {
        r.metrics
            .iter()
            .filter(|g| pick(g))
            .map(|g| g.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let wrap = |text: String| wrap(&text, 100, 2);
    if !r.decided && r.likely_regression {
        wrap(format!(
            "LIKELY REGRESSION in {}: worse than the baseline by more than {:.0} % with {} \
             baseline and {} candidate run(s); no statistical claim (a gate decides with at \
             least {} runs on each side)",
            names(|g| g.likely_regression),
            r.gross_change * 100.0,
            r.baseline_runs,
            r.candidate_runs,
            r.min_runs
        ))
    } else if !r.decided {
        format!(
            "NOT DECIDED: a gate needs at least {} runs on each side (got {} baseline, {} candidate); with fewer, noise and a regression look alike",
            r.min_runs, r.baseline_runs, r.candidate_runs
        )
    } else if r.regressed {
        wrap(format!(
            "REGRESSION in {}",
            names(|g| g.regressed == Some(true))
        ))
    } else {
        "no regression beyond the tolerance".into()
    }
}

fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}
