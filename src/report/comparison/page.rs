//! A comparison as a report page (`compare --md FILE`, `--html FILE`): the same tables as
//! the terminal, a chart per key metric with every run's value, the fair-comparison
//! checklist with its evidence, the configuration differences, the normalisations and how
//! to reproduce the comparison.
//!
//! Every number and verdict comes from the [`ComparisonReport`] through the terminal
//! renderer's own cell functions (`text`), so the page and the terminal can never
//! disagree; nothing here computes a statistic. Pure: a report and the command line in,
//! a [`Page`] out.

use super::text;
use crate::compare::metrics::Metric;
use crate::compare::{ComparisonReport, MetricRow};
use crate::report::chart::{Chart, RunGroup, Unit};
use crate::report::page::{Page, Section, Table, Tone};
use crate::report::run_page::reproduce::command_line;
use crate::stats::compare::{Direction, Outcome, Verdict};

/// The comparison page. `command` is the `compare` command line as typed (program name
/// first), shown under "How to reproduce".
pub fn page(r: &ComparisonReport, command: &[String]) -> Page {
    let names: Vec<&str> = r.systems.iter().map(|s| s.name.as_str()).collect();
    let mut page = Page::new(&format!("servebench comparison: {}", names.join(" vs ")))
        .lead(&format!(
            "Comparison of {} systems: {}",
            r.systems.len(),
            text::system_names(r).join(" · ")
        ))
        .lead(&r.note);
    for i in 1..r.systems.len() {
        page = page.lead(&verdict_line(r, i));
    }
    page.section(key_metrics(r))
        .section(charts(r))
        .section(checklist(r))
        .section(differences(r))
        .sections(normalisation(r))
        .section(reproduce(r, command))
}

/// One line per system against the baseline: which metrics are better, worse, the same,
/// undecided; or that there is no claim.
fn verdict_line(r: &ComparisonReport, i: usize) -> String {
    let (base, other) = (&r.systems[0].name, &r.systems[i].name);
    let mut by_verdict: Vec<(Verdict, Vec<&str>)> = [
        Verdict::Worse,
        Verdict::Better,
        Verdict::NoDifference,
        Verdict::Inconclusive,
    ]
    .into_iter()
    .map(|v| (v, Vec::new()))
    .collect();
    for row in &r.metrics {
        let Some(v) = row.versus_baseline.iter().find(|v| v.system == i) else {
            continue;
        };
        if let Outcome::Compared(c) = &v.outcome {
            if let Some((_, labels)) = by_verdict.iter_mut().find(|(x, _)| *x == c.verdict) {
                labels.push(&row.label);
            }
        }
    }
    let parts: Vec<String> = by_verdict
        .iter()
        .filter(|(_, labels)| !labels.is_empty())
        .map(|(v, labels)| format!("{} on {}", text::verdict_word(*v), labels.join(", ")))
        .collect();
    if parts.is_empty() {
        format!(
            "{other} against {base}: no claim (fewer than {} runs per system)",
            r.min_runs
        )
    } else {
        format!("{other} against {base}: {}", parts.join("; "))
    }
}

/// The side-by-side table, then each system against the baseline.
fn key_metrics(r: &ComparisonReport) -> Section {
    let mut header = vec!["Metric", "Unit"];
    header.extend(r.systems.iter().map(|s| s.name.as_str()));
    let mut side = Table::new(&header).titled(&text::key_metrics_caption(r));
    for row in &r.metrics {
        let mut cells = vec![row.label.clone(), row.unit.clone()];
        cells.extend(row.systems.iter().map(|s| text::system_cell(row, s)));
        side.push(cells);
    }
    let mut section = Section::new("key-metrics", "Key metrics")
        .paragraph(
            "One value per run (its P50, its throughput): the run is the unit of evidence. \
             With at least 3 runs per system, each cell is the mean over runs with its \
             interval (the hull of a percentile bootstrap and Student's t), and each system \
             is compared with the baseline (the first) by the difference of the means with \
             its interval, Welch's t-test \
             and Hedges' g. The verdict reads the interval against the tolerance, not the \
             p-value.",
        )
        .table(side);
    for i in 1..r.systems.len() {
        let a = text::against_baseline_rows(r, i);
        let header: Vec<&str> = a.header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header).titled(&a.caption);
        if a.claims {
            // The verdict column is words; keep it from wrapping.
            t = t.nowrap(&[6]);
        }
        for row in a.rows {
            t.push(row);
        }
        section = section.table(t);
    }
    section
}

/// The chart unit and axis label of a metric.
fn axis(row: &MetricRow) -> (Unit, String) {
    match row.unit.as_str() {
        "ms" => (Unit::Ms, row.label.clone()),
        "tok/s" => (Unit::TokPerS, row.label.clone()),
        "req/s" => (Unit::ReqPerS, row.label.clone()),
        "share" => (Unit::Plain, format!("{} (share)", row.label)),
        u => (Unit::Plain, format!("{} ({u})", row.label)),
    }
}

/// A chart per key metric: every run's value, each system's mean and interval.
fn charts(r: &ComparisonReport) -> Section {
    let interval = format!("{:.0} % interval of the mean", r.confidence * 100.0);
    let mut section = Section::new("charts", "Run-level values").paragraph(&format!(
        "Each small dot is one run; the large dot beside them is the system's mean and the \
         bar its {:.0} % interval (bootstrap and Student's t; drawn with at least {} runs). \
         The value axes do not start at zero, so that the spread between runs stays visible: \
         a break on each axis marks the cut. Read differences from the tables.",
        r.confidence * 100.0,
        r.min_runs
    ));
    for row in r.metrics.iter().filter(|m| Metric::KEY.contains(&m.metric)) {
        let groups: Vec<RunGroup> = r
            .systems
            .iter()
            .zip(&row.systems)
            .map(|(sys, v)| RunGroup {
                name: sys.name.clone(),
                runs: v
                    .values
                    .iter()
                    .enumerate()
                    .map(|(k, x)| {
                        let seed = sys.runs.get(k).map(|id| id.seed);
                        let label = match seed {
                            Some(s) => format!("run {} (seed {s})", k + 1),
                            None => format!("run {}", k + 1),
                        };
                        (label, x.unwrap_or(f64::NAN))
                    })
                    .collect(),
                mean: v.mean,
                ci: v.ci,
            })
            .collect();
        let (unit, label) = axis(row);
        let chart = Chart::runs_by_group(
            &format!("compare-{}", row.metric.key()),
            &format!("{} per run", row.label),
            &label,
            unit,
            &groups,
            &interval,
        )
        .describe(&format!(
            "{} is better.",
            match row.direction {
                Direction::LowerIsBetter => "Lower",
                Direction::HigherIsBetter => "Higher",
            }
        ));
        let better = match row.direction {
            Direction::LowerIsBetter => "lower is better",
            Direction::HigherIsBetter => "higher is better",
        };
        let versus: Vec<String> = row
            .versus_baseline
            .iter()
            .map(|v| format!("{}: {}", r.systems[v.system].name, v.summary))
            .collect();
        let caption = if versus.is_empty() {
            format!("{} ({better}).", row.label)
        } else {
            format!("{} ({better}). {}.", row.label, versus.join("; "))
        };
        section = section.chart(&chart, &caption);
    }
    section
}

/// The fair-comparison checklist: each requirement, whether it is met, the evidence.
fn checklist(r: &ComparisonReport) -> Section {
    let tone = match text::failed_checks(r) {
        0 => Tone::Pass,
        _ => Tone::Fail,
    };
    let mut t = Table::new(&["Requirement", "Draft", "Met?", "Evidence from the records"])
        .text()
        .nowrap(&[1, 2]);
    for c in &r.checklist {
        let met = text::check_mark(c.status);
        t.push([
            c.requirement.clone(),
            c.section.clone(),
            met.to_owned(),
            c.detail.clone(),
        ]);
    }
    Section::new("checklist", "Fair-comparison checklist")
        .callout(tone, &text::checklist_caption(r))
        .table(t.note(
            "met / NOT MET: what the run records show; check by hand: what no record can show \
             (the person comparing must confirm it); n/a: does not apply to these runs.",
        ))
}

/// Every setting that differs between the systems (or between one system's runs).
fn differences(r: &ComparisonReport) -> Section {
    let section = Section::new("differences", "Configuration differences");
    if r.differences.is_empty() {
        return section.paragraph("None: every recorded setting is the same for all systems.");
    }
    let mut header = vec!["Setting"];
    header.extend(r.systems.iter().map(|s| s.name.as_str()));
    let mut t = Table::new(&header).text();
    for d in &r.differences {
        let mut cells = vec![format!("`{}`", d.setting)];
        cells.extend(d.values.iter().cloned());
        t.push(cells);
    }
    section
        .paragraph(
            "Settings whose recorded values differ, as JSON pointers into each run's \
             configuration; `varies: a | b` when one system's runs disagree among themselves.",
        )
        .table(t)
}

/// How the normalised figures were computed (draft 6.2), and their inputs per system.
fn normalisation(r: &ComparisonReport) -> Option<Section> {
    if r.normalisation.is_empty() {
        return None;
    }
    let mut t = Table::new(&["System", "GPUs", "Cost ($/h)"]);
    for s in &r.systems {
        t.push([
            s.name.clone(),
            s.norm
                .gpus
                .map(|g| format!("{g}"))
                .unwrap_or_else(|| "each run's own".into()),
            s.norm
                .cost_per_hour
                .map(|c| format!("{c}"))
                .unwrap_or_else(|| "–".into()),
        ]);
    }
    Some(
        Section::new("normalisation", "Normalisation (draft 6.2)")
            .list(r.normalisation.iter().cloned())
            .table(t),
    )
}

/// The command that makes this page again, and the runs it read.
fn reproduce(r: &ComparisonReport, command: &[String]) -> Section {
    let mut runs = Table::new(&[
        "System", "Run", "Started", "Seed", "Model", "Engine", "Folder",
    ])
    .text()
    .nowrap(&[0, 1, 2, 3, 4, 5]);
    for s in &r.systems {
        for (k, id) in s.runs.iter().enumerate() {
            runs.push([
                s.name.clone(),
                (k + 1).to_string(),
                id.started_at.clone(),
                id.seed.to_string(),
                id.model.clone(),
                id.engine.clone().unwrap_or_else(|| "–".into()),
                format!("`{}`", id.path),
            ]);
        }
    }
    let mut args = command.to_vec();
    if let Some(first) = args.first_mut() {
        *first = "servebench".into();
    }
    Section::new("reproduce", "How to reproduce")
        .paragraph(&format!(
            "The comparison, from the same runs ({} {}, tolerance ±{} %):",
            r.tool.name,
            r.tool.version,
            crate::compare::pct(r.tolerance)
        ))
        .pre(&command_line(&args))
        .paragraph(
            "The runs it read, in order; each run folder's `report.html` holds the command \
             line that made it.",
        )
        .table(runs)
}

#[cfg(test)]
#[path = "page_tests.rs"]
mod tests;
