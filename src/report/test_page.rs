//! A test's report as a [`Page`] (`report.md` and `report.html` of a `servebench test`
//! folder), and a suite's page: the answer first, then the test's own tables (the draft's
//! Tables 1–14 as the terminal shows them, from the same data), the charts where people
//! would rather look than read (the throughput–latency curve with its knee, saturation
//! and SLO marked; the long-context fit; ITL, fairness, cache and guardrail comparisons),
//! every level with its verdict and a summary of its run, the compliance checklist
//! requirement by requirement, the system and how to reproduce the test.
//!
//! Pure: a [`TestReport`] (`test.json`) and the levels' [`RunReport`]s in, a page out.

use super::chart::procedures::{load_curve, long_context_fit};
use super::chart::{Chart, Series, Unit};
use super::page::{Page, Section, Table, Tone};
use super::run_page::summary_section;
use crate::artifacts::RunReport;
use crate::procedure::capacity::CapacityResult;
use crate::procedure::compliance::Strength;
use crate::procedure::curve::{stats_levels, CurveResult};
use crate::procedure::fairness::FairnessResult;
use crate::procedure::guardrails::GuardrailResult;
use crate::procedure::itl::ItlResult;
use crate::procedure::level::Load;
use crate::procedure::long_context::LongContextResult;
use crate::procedure::prefix_cache::PrefixCacheResult;
use crate::procedure::report::{TestReport, TestStatus};
use crate::procedure::OneResult;
use crate::procedure::TestName;
use crate::report::test_tables::{level_parts, results, Part, Parts};
use crate::stats::fit::{Fit, ModelKind};

/// One level's run as the page shows it: its folder (relative to the test folder) and its
/// `run.json`.
pub struct LevelReport<'a> {
    pub folder: &'a str,
    pub report: &'a RunReport,
}

/// The whole page of one test.
pub fn page(r: &TestReport, levels: &[LevelReport]) -> Page {
    let mut page = Page::new(&format!(
        "servebench test {}: {} (draft {})",
        r.test.slug(),
        r.title,
        r.section
    ))
    .lead(&format!(
        "{} on {} · {} to {} · {} levels · {:.0} s",
        r.target.model,
        r.target.url,
        r.started_at,
        r.finished_at,
        r.levels.len(),
        r.duration_s
    ));
    page = page.section(answer(r));
    page = page.section(parts_section(
        Section::new("results", "Results"),
        &results(r),
    ));
    let charts = charts(r);
    if !charts.is_empty() {
        let mut s = Section::new("charts", "Charts");
        for (chart, caption) in &charts {
            s = s.chart(chart, caption);
        }
        page = page.section(s);
    }
    page = page.sections(levels_section(r, levels));
    page = page.section(compliance(r));
    page = page.section(system(r));
    page.section(reproduction(r))
}

fn result<T: OneResult + Clone>(r: &TestReport) -> Option<T> {
    T::of(&r.result).cloned()
}

/// The one-line answer as a call-out: pass when answered, a warning when incomplete, a
/// failure when the test found no answer.
fn answer(r: &TestReport) -> Section {
    let tone = match (r.exit_status, r.status) {
        (0, TestStatus::Complete) => Tone::Pass,
        (0, _) | (130, _) => Tone::Warn,
        _ => Tone::Fail,
    };
    let mut s = Section::new("answer", "Answer").callout(tone, &r.answer);
    if let Some(why) = &r.stopped {
        s = s.callout(Tone::Warn, &format!("Stopped early: {why}"));
    }
    s.facts([
        (
            "Test",
            format!("{} (draft {} {})", r.test.slug(), r.section, r.title),
        ),
        ("Status", format!("{:?}", r.status).to_lowercase()),
        ("Exit status", r.exit_status.to_string()),
        ("Compliance", r.compliance.verdict.words().to_string()),
    ])
}

/// Tables as tables, sentences as paragraphs, in order.
fn parts_section(mut s: Section, parts: &Parts) -> Section {
    for p in &parts.0 {
        s = match p {
            Part::Table(t) => s.table(t.clone()),
            Part::Text(text) => s.paragraph(text),
        };
    }
    s
}

/// The charts that apply to this test, with what to read from each.
fn charts(r: &TestReport) -> Vec<(Chart, String)> {
    match r.test {
        TestName::Curve => curve_charts(r),
        TestName::Throughput | TestName::Guardrails | TestName::Ttft => {
            let mut out = Vec::new();
            if let Some(c) = achieved_vs_offered(r) {
                out.push((
                    c,
                    "Each level tried: achieved against offered requests per second. Levels \
                     that kept up lie on the diagonal."
                        .to_string(),
                ));
            }
            if r.test == TestName::Guardrails {
                out.extend(guardrail_chart(r));
            }
            out
        }
        TestName::Capacity => capacity_chart(r).into_iter().collect(),
        TestName::Itl => itl_chart(r).into_iter().collect(),
        TestName::Fairness => fairness_chart(r).into_iter().collect(),
        TestName::PrefixCache => prefix_cache_chart(r).into_iter().collect(),
        TestName::MemoryPressure => memory_pressure_chart(r).into_iter().collect(),
        TestName::LongContext => long_context_chart(r).into_iter().collect(),
    }
}

/// The load curve's latency and throughput charts.
fn curve_charts(r: &TestReport) -> Vec<(Chart, String)> {
    let Some(x) = result::<CurveResult>(r).filter(|x| !x.points.is_empty()) else {
        return Vec::new();
    };
    let c = load_curve(&stats_levels(&x.points), "TTFT", None);
    vec![
        (
            c.latency,
            "P50 and P99 TTFT at each offered load; the knee is where P99 stays above \
             twice its lowest value, red points missed the SLO."
                .to_string(),
        ),
        (
            c.throughput,
            "Achieved output throughput with its 95 % interval: it stops following \
             the offered load at saturation."
                .to_string(),
        ),
    ]
}

/// TTFT P50 and P99 per guardrail configuration and load.
fn guardrail_chart(r: &TestReport) -> Option<(Chart, String)> {
    let x = result::<GuardrailResult>(r)?;
    let names: Vec<String> = x
        .rows
        .iter()
        .map(|row| format!("{} {:.0} %", row.configuration, row.share * 100.0))
        .collect();
    let p50 = x.rows.iter().map(|r| r.ttft_p50_ms.unwrap_or(f64::NAN));
    let p99 = x.rows.iter().map(|r| r.ttft_p99_ms.unwrap_or(f64::NAN));
    Some((
        Chart::grouped_bars(
            "guardrail-ttft",
            &names,
            &[("TTFT P50", p50.collect()), ("TTFT P99", p99.collect())],
        )
        .title("TTFT by configuration and load")
        .y_axis("TTFT", Unit::Ms),
        "The overhead of each guardrail configuration at the same load.".to_string(),
    ))
}

/// P99 TTFT and TPOT at each concurrency the capacity search tried.
fn capacity_chart(r: &TestReport) -> Option<(Chart, String)> {
    let x = result::<CapacityResult>(r).filter(|x| !x.rows.is_empty())?;
    let mut rows = x.rows.clone();
    rows.sort_by_key(|r| r.concurrency);
    let pts = |f: fn(&crate::procedure::capacity::CapacityRow) -> Option<f64>| {
        rows.iter()
            .filter_map(|r| Some((f64::from(r.concurrency), f(r)?)))
            .collect::<Vec<_>>()
    };
    let chart = Chart::new("capacity-search", "P99 latency against concurrency")
        .x_axis("concurrent requests", Unit::Plain)
        .y_axis("P99", Unit::Ms)
        .series(Series::scatter("TTFT P99", pts(|r| r.ttft_p99_ms)))
        .series(Series::scatter("TPOT P99", pts(|r| r.tpot_p99_ms)));
    Some((
        chart,
        format!(
            "Each concurrency the search tried. Criteria: {}",
            x.criteria
        ),
    ))
}

/// ITL P50, P99 and P99.9 at each share of capacity.
fn itl_chart(r: &TestReport) -> Option<(Chart, String)> {
    let x = result::<ItlResult>(r).filter(|x| !x.levels.is_empty())?;
    let names: Vec<String> = x
        .levels
        .iter()
        .map(|l| format!("{:.0} % of capacity", l.share * 100.0))
        .collect();
    let pick = |f: fn(&crate::stats::Distribution) -> f64| {
        x.levels
            .iter()
            .map(|l| l.itl_ms.map_or(f64::NAN, |d| f(&d)))
            .collect::<Vec<_>>()
    };
    Some((
        Chart::grouped_bars(
            "itl-by-load",
            &names,
            &[
                ("ITL P50", pick(|d| d.p50)),
                ("ITL P99", pick(|d| d.p99)),
                ("ITL P99.9", pick(|d| d.p999)),
            ],
        )
        .title("Inter-token latency by load")
        .y_axis("ITL", Unit::Ms),
        "How the tail of the gaps between tokens grows with load.".to_string(),
    ))
}

/// TTFT P50 and P99 per class in the mixed run.
fn fairness_chart(r: &TestReport) -> Option<(Chart, String)> {
    let x = result::<FairnessResult>(r).filter(|x| !x.classes.is_empty())?;
    let names: Vec<&String> = x.classes.keys().collect();
    let p50 = x
        .classes
        .values()
        .map(|c| c.ttft_p50_ms.unwrap_or(f64::NAN));
    let p99 = x
        .classes
        .values()
        .map(|c| c.ttft_p99_ms.unwrap_or(f64::NAN));
    Some((
        Chart::grouped_bars(
            "fairness-ttft",
            &names,
            &[("TTFT P50", p50.collect()), ("TTFT P99", p99.collect())],
        )
        .title("TTFT per class in the mixed run")
        .y_axis("TTFT", Unit::Ms),
        "A fair server keeps every class's TTFT near what it gets alone.".to_string(),
    ))
}

/// TTFT P50 and P99 per cache configuration.
fn prefix_cache_chart(r: &TestReport) -> Option<(Chart, String)> {
    let x = result::<PrefixCacheResult>(r).filter(|x| !x.rows.is_empty())?;
    let names: Vec<&String> = x.rows.iter().map(|r| &r.configuration).collect();
    let p50 = x.rows.iter().map(|r| r.ttft_p50_ms.unwrap_or(f64::NAN));
    let p99 = x.rows.iter().map(|r| r.ttft_p99_ms.unwrap_or(f64::NAN));
    Some((
        Chart::grouped_bars(
            "prefix-cache-ttft",
            &names,
            &[("TTFT P50", p50.collect()), ("TTFT P99", p99.collect())],
        )
        .title("TTFT by cache configuration")
        .y_axis("TTFT", Unit::Ms),
        "What a warm prefix cache saves on the time to the first token.".to_string(),
    ))
}

/// P99 TTFT against oversubscription of the concurrent capacity.
fn memory_pressure_chart(r: &TestReport) -> Option<(Chart, String)> {
    let x = result::<crate::procedure::memory::MemoryResult>(r).filter(|x| !x.levels.is_empty())?;
    let points: Vec<(f64, f64)> = x
        .levels
        .iter()
        .filter_map(|l| Some((l.share * 100.0, l.ttft_p99_ms?)))
        .collect();
    let chart = Chart::new(
        "memory-pressure",
        "P99 TTFT against oversubscription of the concurrent capacity",
    )
    .x_axis("concurrency, % of the 5.5 capacity", Unit::Percent)
    .y_axis("TTFT P99", Unit::Ms)
    .series(Series::line("TTFT P99", points));
    Some((
        chart,
        "Past 100 % the cache cannot hold every sequence: preemptions and \
         recomputation show as a latency jump."
            .to_string(),
    ))
}

/// Mean TTFT at each input length, with the best-fitting scaling model.
fn long_context_chart(r: &TestReport) -> Option<(Chart, String)> {
    let x = result::<LongContextResult>(r).filter(|x| !x.rows.is_empty())?;
    let points: Vec<(f64, f64)> = x
        .rows
        .iter()
        .filter_map(|row| {
            Some((
                row.input_tokens_mean
                    .unwrap_or(f64::from(row.context_tokens)),
                row.ttft_mean_ms?,
            ))
        })
        .collect();
    let best = x.best_fit.as_deref().and_then(|b| {
        let kind = match b {
            "linear" => ModelKind::Linear,
            "quadratic" => ModelKind::Quadratic,
            "power_law" => ModelKind::PowerLaw,
            _ => return None,
        };
        let model = *x.fits.iter().find(|m| m.kind() == kind)?;
        Some(Fit {
            model,
            r_squared: x.r2.unwrap_or(f64::NAN),
            adj_r_squared: f64::NAN,
            bic: f64::NAN,
            rss: f64::NAN,
        })
    });
    Some((
        long_context_fit(&points, best.as_ref(), "TTFT mean"),
        "Mean TTFT at each input length, with the best-fitting scaling model.".to_string(),
    ))
}

/// Achieved against offered requests per second over the open-loop levels, with the
/// diagonal: the levels that kept up lie on it.
fn achieved_vs_offered(r: &TestReport) -> Option<Chart> {
    let points: Vec<(f64, f64)> = r
        .levels
        .iter()
        .filter_map(|l| match l.load {
            Load::Rate { rate_per_s } => Some((rate_per_s, l.summary.steady_state.requests_per_s)),
            Load::Concurrency { .. } => None,
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    let hi = points.iter().map(|p| p.0.max(p.1)).fold(0.0, f64::max);
    Some(
        Chart::new("achieved-vs-offered", "Achieved against offered load")
            .x_axis("offered load", Unit::ReqPerS)
            .y_axis("achieved", Unit::ReqPerS)
            .series(Series::line(
                "offered = achieved",
                vec![(0.0, 0.0), (hi, hi)],
            ))
            .series(Series::scatter("levels", points)),
    )
}

/// Every level: the table, the signals, and a summary of each level's run.
fn levels_section(r: &TestReport, levels: &[LevelReport]) -> Vec<Section> {
    let s = parts_section(
        Section::new("levels", "Levels").paragraph(
            "Each level is a full run folder under `levels/`, with its own report.md and \
             report.html.",
        ),
        &level_parts(r),
    );
    let mut out = vec![s];
    for (i, l) in levels.iter().enumerate() {
        out.push(summary_section(
            l.report,
            &format!("level-{}", i + 1),
            &format!("Level {}: {}", i + 1, l.folder),
        ));
    }
    out
}

/// Every requirement of the draft's procedure, met or not, with the evidence.
fn compliance(r: &TestReport) -> Section {
    let c = &r.compliance;
    let mut t = Table::new(&["Section", "Requirement", "Strength", "Met", "Evidence"])
        .text()
        .nowrap(&[0, 2, 3]);
    for req in &c.requirements {
        t.push([
            req.section.clone(),
            req.text.clone(),
            match req.strength {
                Strength::Must => "MUST".to_string(),
                Strength::Should => "SHOULD".to_string(),
            },
            if req.met { "yes" } else { "no" }.to_string(),
            req.detail.clone(),
        ]);
    }
    let tone = if c.unmet().next().is_none() {
        Tone::Pass
    } else {
        Tone::Warn
    };
    Section::new(
        "compliance",
        &format!("Compliance with draft {}", r.section),
    )
    .callout(
        tone,
        &format!(
            "{} ({} of {} requirements met)",
            c.verdict.words(),
            c.requirements.iter().filter(|x| x.met).count(),
            c.requirements.len()
        ),
    )
    .table(t)
}

/// The system under test, as given by flags or read from the server.
fn system(r: &TestReport) -> Section {
    let t = &r.target;
    let mut facts = vec![
        ("Target".to_string(), t.url.clone()),
        ("Model".to_string(), t.model.clone()),
        (
            "Engine".to_string(),
            match (&t.engine, &t.engine_version) {
                (Some(e), Some(v)) => format!("{e} {v}"),
                (Some(e), None) => e.clone(),
                _ => "not reported by the server".into(),
            },
        ),
        (
            "Hardware".to_string(),
            r.system
                .hardware
                .clone()
                .unwrap_or_else(|| "not given (--hardware)".into()),
        ),
        (
            "GPUs".to_string(),
            r.system
                .gpus
                .map(|g| g.to_string())
                .unwrap_or_else(|| "not given (--gpus)".into()),
        ),
        ("SUT boundary".to_string(), r.system.sut_boundary.clone()),
    ];
    let profile = r.parameters.pointer("/common/profile").cloned();
    if let Some(p) = profile.and_then(|p| serde_json::from_value(p).ok()) {
        facts.push((
            "Workload profile".to_string(),
            crate::report::profiles::line(&p),
        ));
    }
    for (name, url) in &t.targets {
        facts.push((format!("Configuration {name}"), url.clone()));
    }
    Section::new("system", "System under test").facts(facts)
}

/// The exact command line, the parameters and the tool's version.
fn reproduction(r: &TestReport) -> Section {
    Section::new("reproduction", "Reproduction")
        .facts([
            ("servebench", r.tool.version.clone()),
            ("Schema", format!("test.json version {}", r.schema_version)),
        ])
        .paragraph("The command that ran this test (credentials redacted):")
        .pre(&r.command_line.join(" "))
        .paragraph("Its parameters, as test.json records them:")
        .pre(&serde_json::to_string_pretty(&r.parameters).unwrap_or_default())
}

/// One test of a suite: its folder and its `test.json`, or why it was skipped.
pub struct SuiteEntry<'a> {
    pub test: &'a str,
    pub folder: Option<&'a str>,
    pub report: Option<&'a TestReport>,
    pub skipped: Option<&'a str>,
}

/// A suite's page: every test's answer and compliance, then each test's own sections
/// (the draft's full report, Appendix C.2, for the whole suite).
pub fn suite_page(title_target: &str, started_at: &str, entries: &[SuiteEntry]) -> Page {
    let mut t = Table::new(&["Test", "Draft", "Answer", "Compliance", "Folder"])
        .text()
        .nowrap(&[0, 1]);
    for e in entries {
        match (e.report, e.skipped) {
            (Some(r), _) => t.push([
                e.test.to_string(),
                r.section.clone(),
                r.answer.clone(),
                r.compliance.verdict.words().to_string(),
                format!("{}/report.html", e.folder.unwrap_or(e.test)),
            ]),
            (None, why) => t.push([
                e.test.to_string(),
                String::new(),
                format!("skipped: {}", why.unwrap_or("no test.json")),
                String::new(),
                String::new(),
            ]),
        }
    }
    let mut page = Page::new(&format!("servebench suite: {title_target}"))
        .lead(&format!("started {started_at}"))
        .section(Section::new("tests", "Tests").table(t));
    for e in entries {
        if let Some(r) = e.report {
            let mut s = Section::new(
                &format!("test-{}", r.test.slug()),
                &format!("{} (draft {})", r.title, r.section),
            )
            .callout(
                if r.exit_status == 0 {
                    Tone::Pass
                } else {
                    Tone::Fail
                },
                &r.answer,
            );
            s = parts_section(s, &results(r));
            for (i, (chart, caption)) in charts(r).iter().enumerate() {
                // Chart ids must be unique on the page: prefix them with the test.
                let chart =
                    chart
                        .clone()
                        .id(&format!("{}-{}-{}", r.test.slug(), i, chart.chart_id()));
                s = s.chart(&chart, caption);
            }
            page = page.section(s);
        }
    }
    page
}
