//! A comparison as text for the terminal, within 100 columns: the key metrics side by side,
//! each system against the baseline, the fair-comparison checklist and every configuration
//! difference. Pure: a [`ComparisonReport`] in, a `String` out.

use super::checklist::CheckStatus;
use super::metrics::Metric;
use super::{signed, signed_bare, ComparisonReport, MetricRow};
use crate::report::terminal::WIDTH;
use crate::stats::compare::{Outcome, Verdict};
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use std::fmt::Write;

fn table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_content_arrangement(ContentArrangement::Dynamic);
    t.set_width(WIDTH as u16);
    t.set_header(header.into_iter().map(Cell::new));
    t
}

fn right_from(t: &mut Table, first: usize) {
    for i in first..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// A value in the metric's unit with sensible digits.
pub fn value(metric: Metric, v: f64) -> String {
    if metric == Metric::SuccessRate {
        format!("{v:.3}")
    } else if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The whole comparison.
pub fn render(r: &ComparisonReport) -> String {
    let mut out = String::new();
    let names: Vec<String> = r
        .systems
        .iter()
        .enumerate()
        .map(|(i, s)| {
            format!(
                "{}{} ({} run{})",
                s.name,
                if i == 0 { ", baseline" } else { "" },
                s.runs.len(),
                if s.runs.len() == 1 { "" } else { "s" }
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "Comparison of {} systems: {}",
        r.systems.len(),
        names.join(" · ")
    );
    let _ = writeln!(out, "{}\n", r.note);
    out.push_str(&side_by_side(r));
    for i in 1..r.systems.len() {
        out.push('\n');
        out.push_str(&against_baseline(r, i));
    }
    if !r.normalisation.is_empty() {
        let _ = writeln!(out, "\nNormalisation (draft 6.2):");
        for n in &r.normalisation {
            let _ = writeln!(out, "  {n}");
        }
    }
    out.push('\n');
    out.push_str(&checklist(r));
    if !r.differences.is_empty() {
        out.push('\n');
        out.push_str(&differences(r));
    }
    out
}

/// Key metrics: per system, the mean over runs with its interval, or the runs' values.
fn side_by_side(r: &ComparisonReport) -> String {
    let mut header = vec!["Metric".to_owned(), "Unit".to_owned()];
    header.extend(r.systems.iter().map(|s| s.name.clone()));
    let mut t = table(header);
    for row in &r.metrics {
        let mut cells = vec![row.label.clone(), row.unit.clone()];
        cells.extend(row.systems.iter().map(|s| {
            match (s.mean, s.ci) {
                (Some(m), Some((lo, hi))) => format!(
                    "{} [{}, {}]",
                    value(row.metric, m),
                    value(row.metric, lo),
                    value(row.metric, hi)
                ),
                (Some(_), None) => s
                    .values
                    .iter()
                    .map(|v| v.map_or("–".into(), |v| value(row.metric, v)))
                    .collect::<Vec<_>>()
                    .join(", "),
                (None, _) => "–".into(),
            }
        }));
        t.add_row(cells);
    }
    right_from(&mut t, 2);
    let caption = if r.enough_runs {
        format!(
            "Key metrics: mean over runs [{:.0} % bootstrap interval]",
            r.confidence * 100.0
        )
    } else {
        "Key metrics: the value of each run".to_owned()
    };
    format!("{caption}\n{t}\n")
}

/// One system against the baseline, metric by metric.
fn against_baseline(r: &ComparisonReport, i: usize) -> String {
    let (base, other) = (&r.systems[0].name, &r.systems[i].name);
    let versus: Vec<(&MetricRow, &super::Versus)> = r
        .metrics
        .iter()
        .filter_map(|row| Some((row, row.versus_baseline.iter().find(|v| v.system == i)?)))
        .collect();
    let claims = versus
        .iter()
        .any(|(_, v)| matches!(v.outcome, Outcome::Compared(_)));
    if !claims {
        // Too few runs: the differences of the means, and no statistics.
        let mut t = table(["Metric", "Change", "Relative"].map(String::from).to_vec());
        for (row, v) in &versus {
            let base_mean = row.systems[0].mean;
            t.add_row(vec![
                row.label.clone(),
                v.difference_of_means
                    .map(|d| signed(row.metric, d))
                    .unwrap_or_else(|| "–".into()),
                match (v.difference_of_means, base_mean) {
                    (Some(d), Some(b)) if b != 0.0 => format!("{:+.1} %", d / b.abs() * 100.0),
                    _ => "–".into(),
                },
            ]);
        }
        right_from(&mut t, 1);
        return format!(
            "{other} against {base}: differences of the means, no claim (< {} runs per system)\n{t}\n",
            r.min_runs
        );
    }
    let mut t = table(
        [
            "Metric",
            "Change",
            "95 % CI of change",
            "Relative",
            "Welch p",
            "Hedges g",
            "Verdict",
        ]
        .map(String::from)
        .to_vec(),
    );
    for (row, v) in &versus {
        t.add_row(change_cells(row, v));
    }
    right_from(&mut t, 1);
    if let Some(c) = t.column_mut(6) {
        c.set_cell_alignment(CellAlignment::Left);
    }
    format!("{other} against {base}\n{t}\n")
}

fn change_cells(row: &MetricRow, v: &super::Versus) -> Vec<String> {
    match &v.outcome {
        Outcome::Compared(c) => vec![
            row.label.clone(),
            signed(row.metric, c.difference),
            format!(
                "{} to {}",
                signed_bare(row.metric, c.difference_ci.0),
                signed_bare(row.metric, c.difference_ci.1)
            ),
            c.relative_difference
                .map(|x| format!("{:+.1} %", x * 100.0))
                .unwrap_or_else(|| "–".into()),
            if c.welch.p_value < 0.001 {
                "< 0.001".into()
            } else {
                format!("{:.3}", c.welch.p_value)
            },
            c.hedges_g
                .map(|g| format!("{g:+.2}"))
                .unwrap_or_else(|| "–".into()),
            match c.verdict {
                Verdict::Better => "better",
                Verdict::Worse => "worse",
                Verdict::NoDifference => "no difference",
                Verdict::Inconclusive => "inconclusive",
            }
            .into(),
        ],
        Outcome::NotEnoughRuns { required, .. } => vec![
            row.label.clone(),
            v.difference_of_means
                .map(|d| signed(row.metric, d))
                .unwrap_or_else(|| "–".into()),
            "–".into(),
            "–".into(),
            "–".into(),
            "–".into(),
            format!("no claim (< {required} runs)"),
        ],
        Outcome::InvalidInput { reason } => vec![
            row.label.clone(),
            "–".into(),
            "–".into(),
            "–".into(),
            "–".into(),
            "–".into(),
            reason.clone(),
        ],
    }
}

fn checklist(r: &ComparisonReport) -> String {
    let mut t = table(
        ["", "Requirement (draft section)", "Found"]
            .map(String::from)
            .to_vec(),
    );
    for c in &r.checklist {
        let mark = match c.status {
            CheckStatus::Pass => "ok",
            CheckStatus::Fail => "FAIL",
            CheckStatus::NotApplicable => "n/a",
            CheckStatus::Manual => "check",
        };
        t.add_row(vec![
            mark.to_owned(),
            format!("{} ({})", c.requirement, c.section),
            c.detail.clone(),
        ]);
    }
    let failed = r
        .checklist
        .iter()
        .filter(|c| c.status == CheckStatus::Fail)
        .count();
    let caption = if failed == 0 {
        "Fair-comparison checklist (draft 6.1, 6.3, 6.4): nothing in the records makes the comparison unfair".to_owned()
    } else {
        format!("Fair-comparison checklist (draft 6.1, 6.3, 6.4): {failed} item(s) FAIL — read the comparison with that in mind")
    };
    format!("{caption}\n{t}\n")
}

fn differences(r: &ComparisonReport) -> String {
    let mut header = vec!["Setting".to_owned()];
    header.extend(r.systems.iter().map(|s| s.name.clone()));
    let mut t = table(header);
    for d in &r.differences {
        let mut cells = vec![d.setting.clone()];
        cells.extend(d.values.iter().cloned());
        t.add_row(cells);
    }
    format!("Configuration differences\n{t}\n")
}
