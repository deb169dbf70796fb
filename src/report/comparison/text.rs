//! A comparison as text for the terminal, within 100 columns: the key metrics side by side,
//! each system against the baseline, the fair-comparison checklist and every configuration
//! difference. Pure: a [`ComparisonReport`] in, a `String` out.

use crate::compare::checklist::CheckStatus;
use crate::compare::metrics::Metric;
use crate::compare::{signed, signed_bare, ComparisonReport, MetricRow, SystemValues, Versus};
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
    let names = system_names(r);
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

/// Each system's name with its run count, the baseline marked: `a, baseline (5 runs)`.
pub fn system_names(r: &ComparisonReport) -> Vec<String> {
    r.systems
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
        .collect()
}

/// One system's cell of the key-metrics table: the mean over runs with its interval
/// (`100.0 [98.0, 102.0]`), or with too few runs the runs' values (`100.0, 102.0`).
pub fn system_cell(row: &MetricRow, s: &SystemValues) -> String {
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
}

/// The key-metrics table's caption: what its cells hold.
pub fn key_metrics_caption(r: &ComparisonReport) -> String {
    if r.enough_runs {
        format!(
            "Key metrics: mean over runs [{:.0} % interval, bootstrap and Student's t]",
            r.confidence * 100.0
        )
    } else {
        "Key metrics: the value of each run".to_owned()
    }
}

/// Key metrics: per system, the mean over runs with its interval, or the runs' values.
fn side_by_side(r: &ComparisonReport) -> String {
    let mut header = vec!["Metric".to_owned(), "Unit".to_owned()];
    header.extend(r.systems.iter().map(|s| s.name.clone()));
    let mut t = table(header);
    for row in &r.metrics {
        let mut cells = vec![row.label.clone(), row.unit.clone()];
        cells.extend(row.systems.iter().map(|s| system_cell(row, s)));
        t.add_row(cells);
    }
    right_from(&mut t, 2);
    format!("{}\n{t}\n", key_metrics_caption(r))
}

/// How system `i` reads against the baseline: with statistics, or (too few runs) as
/// differences of the means only.
pub struct AgainstBaseline {
    /// The table's caption.
    pub caption: String,
    /// Column headings.
    pub header: Vec<String>,
    /// One row per metric.
    pub rows: Vec<Vec<String>>,
    /// Whether any row is a claim (has statistics).
    pub claims: bool,
}

/// System `i` against the baseline, metric by metric: the decisions of the terminal
/// table, shared with the comparison page.
pub fn against_baseline_rows(r: &ComparisonReport, i: usize) -> AgainstBaseline {
    let (base, other) = (&r.systems[0].name, &r.systems[i].name);
    let versus: Vec<(&MetricRow, &Versus)> = r
        .metrics
        .iter()
        .filter_map(|row| Some((row, row.versus_baseline.iter().find(|v| v.system == i)?)))
        .collect();
    let claims = versus
        .iter()
        .any(|(_, v)| matches!(v.outcome, Outcome::Compared(_)));
    if !claims {
        // Too few runs: the differences of the means, and no statistics.
        let rows = versus
            .iter()
            .map(|(row, v)| {
                let base_mean = row.systems[0].mean;
                vec![
                    row.label.clone(),
                    v.difference_of_means
                        .map(|d| signed(row.metric, d))
                        .unwrap_or_else(|| "–".into()),
                    match (v.difference_of_means, base_mean) {
                        (Some(d), Some(b)) if b != 0.0 => {
                            format!("{:+.1} %", d / b.abs() * 100.0)
                        }
                        _ => "–".into(),
                    },
                ]
            })
            .collect();
        return AgainstBaseline {
            caption: format!(
                "{other} against {base}: differences of the means, no claim (< {} runs per system)",
                r.min_runs
            ),
            header: ["Metric", "Change", "Relative"].map(String::from).to_vec(),
            rows,
            claims,
        };
    }
    AgainstBaseline {
        caption: format!("{other} against {base}"),
        header: [
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
        rows: versus.iter().map(|(row, v)| change_cells(row, v)).collect(),
        claims,
    }
}

/// One system against the baseline, metric by metric.
fn against_baseline(r: &ComparisonReport, i: usize) -> String {
    let a = against_baseline_rows(r, i);
    let mut t = table(a.header);
    for row in a.rows {
        t.add_row(row);
    }
    right_from(&mut t, 1);
    if a.claims {
        if let Some(c) = t.column_mut(6) {
            c.set_cell_alignment(CellAlignment::Left);
        }
    }
    format!("{}\n{t}\n", a.caption)
}

/// A verdict in words.
pub fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::NoDifference => "no difference",
        Verdict::Inconclusive => "inconclusive",
    }
}

fn change_cells(row: &MetricRow, v: &Versus) -> Vec<String> {
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
            verdict_word(c.verdict).into(),
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

/// A checklist item's status in words, the same in the terminal and on the page.
pub fn check_mark(status: CheckStatus) -> &'static str {
    match status {
        CheckStatus::Pass => "met",
        CheckStatus::Fail => "NOT MET",
        CheckStatus::NotApplicable => "n/a",
        CheckStatus::Manual => "check by hand",
    }
}

/// Checklist items NOT MET.
pub fn failed_checks(r: &ComparisonReport) -> usize {
    r.checklist
        .iter()
        .filter(|c| c.status == CheckStatus::Fail)
        .count()
}

/// The checklist's caption: whether anything in the records makes the comparison unfair.
pub fn checklist_caption(r: &ComparisonReport) -> String {
    match failed_checks(r) {
        0 => "Fair-comparison checklist (draft 6.1, 6.3, 6.4): nothing in the records makes the comparison unfair".to_owned(),
        failed => format!("Fair-comparison checklist (draft 6.1, 6.3, 6.4): {failed} item(s) NOT MET — read the comparison with that in mind"),
    }
}

fn checklist(r: &ComparisonReport) -> String {
    let mut t = table(
        ["", "Requirement (draft section)", "Found"]
            .map(String::from)
            .to_vec(),
    );
    for c in &r.checklist {
        t.add_row(vec![
            check_mark(c.status).to_owned(),
            format!("{} ({})", c.requirement, c.section),
            c.detail.clone(),
        ]);
    }
    format!("{}\n{t}\n", checklist_caption(r))
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
