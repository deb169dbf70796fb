//! A run's report as a [`Page`]: what matters first (the verdict, the key numbers, the TTFT
//! distribution and throughput over time), then the draft's Appendix C.1 minimum report, then
//! the C.2 full report (1 system identification, 2 test configuration, 3 results, 4 detailed
//! results with the draft's tables and the other charts, 5 methodology compliance, 6
//! reproduction). `report.md` and `report.html` are this page rendered twice.
//!
//! Test and comparison pages reuse the parts: [`sections`] gives a run's whole report as
//! sections, [`summary_section`] one compact section per run (a level of a sweep), and
//! `report::chart::procedures` the charts of multi-run tests.
//!
//! Pure: a [`RunReport`] (`run.json`) and the [`RunData`] taken from `requests.jsonl` in,
//! a page out.

pub mod compliance;
pub mod data;
pub mod figures;
pub mod identity;
pub mod reproduce;

pub use data::RunData;

use super::page::{Page, Section, Table, Tone};
use super::tables;
use super::terminal::{fmt_ms, fmt_rate, opt_ms};
use crate::artifacts::RunReport;

/// The whole report of one run.
pub fn page(r: &RunReport, data: &RunData) -> Page {
    Page::new(&format!(
        "servebench report: {} on {}",
        identity::model(r),
        identity::software(r)
    ))
    .lead(&format!(
        "{} to {} · {} · {} measured requests over {:.1} s",
        r.started_at,
        r.finished_at,
        tables::describe_load(&r.config),
        r.summary.requests.total,
        r.summary.window.duration_s
    ))
    .sections(sections(r, data))
}

/// The verdict as a call-out: the exit status and its reasons.
pub fn verdict(r: &RunReport) -> (Tone, String) {
    let v = &r.verdict;
    let tone = match v.exit_status {
        0 => Tone::Pass,
        130 => Tone::Warn,
        _ => Tone::Fail,
    };
    (
        tone,
        format!("exit status {}: {}", v.exit_status, v.reasons.join("; ")),
    )
}

/// Every section of a run's report, in order: the verdict with the key numbers and charts,
/// C.1, then C.2 items 1 to 6.
pub fn sections(r: &RunReport, data: &RunData) -> Vec<Section> {
    // The guardrail disclosure has its own line in the C.1 notes.
    let deviations: Vec<String> = compliance::deviations(r)
        .into_iter()
        .filter(|d| !d.contains("(draft 4.8.1)"))
        .collect();
    let mut out = vec![
        at_a_glance(r, data),
        Section::new("minimum", "Minimum report (draft Appendix C.1)")
            .pre(&identity::minimum_report(r, &deviations)),
        identity::system(r),
        identity::configuration(r),
        results(r),
    ];
    out.extend(detailed(r, data));
    out.push(compliance::section(r));
    out.push(reproduction(r));
    out
}

/// The page's opening: the verdict, the key numbers, then the TTFT distribution and the
/// throughput over time (the charts that answer "how fast, and did it hold"). The C.1 text
/// and the configuration follow it.
pub fn at_a_glance(r: &RunReport, data: &RunData) -> Section {
    let (tone, text) = verdict(r);
    let mut sec = Section::new("verdict", "Verdict and key numbers")
        .callout(tone, &text)
        .facts(key_numbers(r));
    for (chart, caption) in [figures::ttft_cdf(r, data), figures::throughput_over_time(r)]
        .into_iter()
        .flatten()
    {
        sec = sec.chart(&chart, &caption);
    }
    sec
}

/// A compact section about one run, for pages that show many (the levels of a sweep):
/// the verdict, the load and the key figures. `id` must be unique on the page.
pub fn summary_section(r: &RunReport, id: &str, heading: &str) -> Section {
    let (tone, text) = verdict(r);
    let mut facts = key_numbers(r);
    facts.push(("Run folder", r.config.out_dir.display().to_string()));
    Section::sub(id, heading).callout(tone, &text).facts(facts)
}

/// The load and the figures a reader looks for first, as `label: value` facts.
pub fn key_numbers(r: &RunReport) -> Vec<(&'static str, String)> {
    let s = &r.summary;
    if !r.config.target.endpoint.is_generative() {
        return whole_answer_numbers(r);
    }
    let mut numbers = load_and_requests(r);
    numbers.extend([
        (
            "TTFT",
            format!(
                "P50 {} · P99 {}{}",
                opt_ms(s.ttft_ms, |d| d.p50),
                opt_ms(s.ttft_ms, |d| d.p99),
                tables::ttft_coverage(s)
            ),
        ),
        (
            "TPOT",
            format!(
                "P50 {} · P99 {}",
                opt_ms(s.tpot_ms, |d| d.p50),
                opt_ms(s.tpot_ms, |d| d.p99)
            ),
        ),
        (
            "Throughput",
            format!(
                "{} tok/s output, {} req/s",
                fmt_rate(s.output_tokens_per_s),
                fmt_rate(s.requests_per_s)
            ),
        ),
    ]);
    numbers
}

/// The first two key numbers of every run: its load and what became of its requests.
fn load_and_requests(r: &RunReport) -> Vec<(&'static str, String)> {
    let s = &r.summary;
    vec![
        ("Load", tables::describe_load(&r.config)),
        (
            "Requests",
            format!(
                "{} measured, {}, over {:.1} s",
                s.requests.total,
                tables::outcome_counts(s),
                s.window.duration_s
            ),
        ),
    ]
}

/// The key numbers of a non-generative endpoint (embeddings, rerank): request latency,
/// items and input tokens per second, and no token figures.
fn whole_answer_numbers(r: &RunReport) -> Vec<(&'static str, String)> {
    let s = &r.summary;
    let mut numbers = load_and_requests(r);
    numbers.extend([
        (
            "Latency",
            format!(
                "P50 {} · P90 {} · P99 {} (request, whole answer)",
                opt_ms(s.e2e_ms, |d| d.p50),
                opt_ms(s.e2e_ms, |d| d.p90),
                opt_ms(s.e2e_ms, |d| d.p99)
            ),
        ),
        ("TTFT, TPOT", "n/a: non-generative endpoint".into()),
        (
            "Throughput",
            format!(
                "{} items/s, {} input tok/s, {} req/s",
                fmt_rate(s.items_per_s),
                fmt_rate(s.input_tokens_per_s),
                fmt_rate(s.requests_per_s)
            ),
        ),
    ]);
    numbers
}

/// C.2 item 3: requests, latency and throughput summaries, SLO verdicts.
pub fn results(r: &RunReport) -> Section {
    let s = &r.summary;
    let mut sec = Section::new("results", "3. Results")
        .table(identity::outcomes(r))
        .table(tables::latency(s))
        .table(tables::throughput(s));
    if let Some(t) = tables::media(s) {
        sec = sec.table(t);
    }
    if let Some(t) = tables::sessions(s) {
        sec = sec.table(t);
    }
    if let Some(slo) = &s.slo {
        let mut t = Table::new(&["SLO", "Observed", "Verdict"])
            .text()
            .titled(&format!("SLO verdicts ({})", slo.spec));
        if let Some(a) = &slo.per_request {
            t.push([
                format!("every request: {}", a.spec),
                format!(
                    "{:.2} % of requests met every bound ({} of {}; target {:.1} %); goodput {} req/s, {} tok/s",
                    a.attainment * 100.0,
                    a.met,
                    a.total,
                    a.target_attainment * 100.0,
                    fmt_rate(a.goodput_requests_per_s),
                    fmt_rate(a.goodput_tokens_per_s)
                ),
                pass(a.passed),
            ]);
            for (bound, share) in &a.attainment_by_threshold {
                t.push([
                    format!("  {bound} alone"),
                    format!("{:.2} % of requests", share * 100.0),
                    String::new(),
                ]);
            }
        }
        for c in &slo.run_checks {
            t.push([
                c.term.clone(),
                match c.observed {
                    Some(v) => format!("{v:.3} ({} samples)", c.samples),
                    None => "no samples".into(),
                },
                pass(c.passed),
            ]);
        }
        sec = sec.table(t);
    }
    if !s.failures.top.is_empty() {
        let mut t = Table::new(&["Failure", "Count", "Message", "Likely cause"])
            .text()
            .nowrap(&[0, 1])
            .titled("Most frequent failures");
        for m in &s.failures.top {
            t.push([
                m.kind.to_string(),
                m.count.to_string(),
                m.message.clone(),
                m.hint.clone().unwrap_or_default(),
            ]);
        }
        sec = sec.table(t);
    }
    sec
}

fn pass(ok: bool) -> String {
    if ok { "PASS" } else { "FAIL" }.into()
}

/// Where the TTFT distribution went: it opens the page.
const AT_THE_TOP_TTFT: &str =
    "The cumulative distribution of TTFT is at the top of the page, under the verdict.";
/// Where throughput over time went: it opens the page.
const AT_THE_TOP_THROUGHPUT: &str =
    "Throughput over time is at the top of the page, under the verdict.";

/// C.2 item 4: the draft's tables beside the charts (the TTFT CDF and throughput over time
/// open the page instead), by topic.
pub fn detailed(r: &RunReport, data: &RunData) -> Vec<Section> {
    let s = &r.summary;
    let fig = |sec: Section, f: Option<figures::Fig>| match f {
        Some((chart, caption)) => sec.chart(&chart, &caption),
        None => sec,
    };
    let mut out =
        vec![Section::new("detailed", "4. Detailed results").paragraph(&tables::counting_line(r))];

    let mut ttft = Section::sub("ttft", "Time to first token (draft 5.1)");
    for t in tables::ttft(s) {
        ttft = ttft.table(t);
    }
    if !data.ttft_ms.is_empty() {
        ttft = ttft.paragraph(AT_THE_TOP_TTFT);
    }
    ttft = fig(ttft, figures::ttft_histogram(r, data));
    out.push(ttft);

    let mut itl = Section::sub("itl", "Inter-token latency and streams (draft 5.4)");
    for t in tables::itl(s) {
        itl = itl.table(t);
    }
    itl = fig(itl, figures::itl_histogram(r, data));
    itl = fig(itl, figures::token_timelines(r, data));
    out.push(itl);

    let mut time = Section::sub("over-time", "Over time");
    if !r.timeseries.is_empty() {
        time = time.paragraph(AT_THE_TOP_THROUGHPUT);
    }
    for f in [
        figures::latency_over_time(r),
        figures::concurrency_over_time(r),
    ] {
        time = fig(time, f);
    }
    if r.timeseries.is_empty() {
        time = time.paragraph("No per-second timeline was recorded for this run.");
    }
    out.push(time);

    out.push(experience_section(r, data));
    out.push(fairness_section(r));
    out.push(telemetry_section(r));
    out.push(Section::sub("generator", "Load generator").table(tables::generator(r)));
    out
}

/// Part of item 4: idle latency, smooth goodput and fluidity.
fn experience_section(r: &RunReport, data: &RunData) -> Section {
    let s = &r.summary;
    let mut ux = Section::sub("experience", "User experience");
    for t in tables::experience(&s.experience) {
        ux = ux.table(t);
    }
    match figures::fluidity_vs_tbt(r, data) {
        Some((c, caption)) => ux.chart(&c, &caption),
        None => ux.paragraph(&format!(
            "No fluidity chart: {}",
            s.experience
                .fluidity_note
                .clone()
                .unwrap_or_else(|| "the fluidity-index was not computed".into())
        )),
    }
}

/// Part of item 4: fairness between request classes, or why there is none.
fn fairness_section(r: &RunReport) -> Section {
    let fair = Section::sub("fairness", "Fairness between request classes (draft 5.6)");
    match tables::fairness(&r.summary.experience) {
        Some(t) => {
            let mut fair = fair.table(t);
            for (c, caption) in figures::fairness(r) {
                fair = fair.chart(&c, &caption);
            }
            fair
        }
        None => fair.paragraph(
            "The workload had no request classes, so there is no fairness to compare. \
             A workload with classes (e.g. --workload fairness-mix, or classes in a \
             scenario file) measures it.",
        ),
    }
}

/// Part of item 4: the server's metrics and the hardware's series.
fn telemetry_section(r: &RunReport) -> Section {
    let mut tel = Section::sub("telemetry", "Server and hardware telemetry");
    if let Some(t) = tables::server(&r.summary) {
        tel = tel.table(t);
    }
    tel = tel.table(tables::telemetry(r));
    let charts = figures::telemetry(r);
    if charts.is_empty() {
        tel = tel.paragraph(
            "No server or GPU series over time: the sources above say what was measured and \
             why the rest was not.",
        );
    }
    for (c, caption) in charts {
        tel = tel.chart(&c, &caption);
    }
    tel
}

/// C.2 item 6: how to run it again.
pub fn reproduction(r: &RunReport) -> Section {
    let dir = r.config.out_dir.display().to_string();
    Section::new("reproduction", "6. Reproduction")
        .paragraph("The exact command line (credentials redacted):")
        .pre(&reproduce::command_line(&r.command_line))
        .facts([
            ("servebench", format!("{} {}", r.tool.name, r.tool.version)),
            ("Seed", r.config.seed.to_string()),
            (
                "Prompt salt",
                match r.config.prompt_salt {
                    // Also what a run from before prompt salts reads as: its words came from
                    // the seed's stream of that version, which this one no longer draws.
                    0 => "0 (the seed's own prompts; a run recorded before prompt salts cannot be replayed word for word)".to_owned(),
                    salt => format!(
                        "{salt} (the words of this run's prompts: --prompt-salt {salt} sends them again)"
                    ),
                },
            ),
            (
                "Workload hash",
                format!(
                    "{} (workload, seed, dataset, tokenizer, API and request options)",
                    reproduce::workload_hash(r)
                ),
            ),
            (
                "Started",
                format!("{} (Unix {} µs)", r.started_at, r.started_at_us),
            ),
            (
                "Finished",
                format!("{} (Unix {} µs)", r.finished_at, r.finished_at_us),
            ),
            ("Run folder", dir.clone()),
            (
                "Files",
                "requests.jsonl (every request, the raw truth), run.json (this report's data; \
                 schema in docs/run.schema.json), timeseries.csv (per second), report.md, \
                 report.html"
                    .into(),
            ),
        ])
        .paragraph(
            "The workload's requests as drawn with the run's seed, without sending anything:",
        )
        .pre(&reproduce::export_command(r))
        .paragraph("This report, rebuilt from the run folder:")
        .pre(&format!(
            "servebench report {} --format all",
            reproduce::shell_quote(&dir)
        ))
}

/// The run's short figures in one line, e.g. for a test page's table of levels.
pub fn key_figures(r: &RunReport) -> [String; 4] {
    let s = &r.summary;
    [
        s.ttft_ms
            .map(|d| fmt_ms(d.p99))
            .unwrap_or_else(|| "-".into()),
        s.tpot_ms
            .map(|d| fmt_ms(d.p99))
            .unwrap_or_else(|| "-".into()),
        format!("{} tok/s", fmt_rate(s.output_tokens_per_s)),
        format!("{:.1} %", s.success_rate * 100.0),
    ]
}

#[cfg(test)]
pub(crate) mod tests;
