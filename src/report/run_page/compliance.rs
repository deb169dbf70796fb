//! C.2 item 5, methodology compliance: the draft's requirements a single run can be held
//! to, each checked from the run's own record, met or not, with the evidence; then every
//! warning the summary raised. What is not met becomes a deviation in the C.1 notes.

use crate::artifacts::RunReport;
use crate::report::page::{Section, Table, Tone};

/// One requirement and how the run fared.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// What the draft asks, in brief.
    pub requirement: &'static str,
    /// Where (section of the draft).
    pub section: &'static str,
    /// `Some(true)` met, `Some(false)` not met, `None` not applicable or not checkable here.
    pub met: Option<bool>,
    /// The evidence, or what to do.
    pub detail: String,
}

fn check(
    requirement: &'static str,
    section: &'static str,
    met: Option<bool>,
    detail: String,
) -> Check {
    Check {
        requirement,
        section,
        met,
        detail,
    }
}

/// Draft 4.2.6: every request's times, token counts and outcome are recorded.
fn record_check(s: &crate::metrics::RunSummary) -> Check {
    check(
        "Every request's times, token counts and outcome recorded",
        "4.2.6",
        Some(true),
        format!(
            "{} measured: {}; every one is in requests.jsonl",
            s.requests.total,
            crate::report::tables::outcome_counts(s)
        ),
    )
}

/// Every requirement a run can be checked against, in the draft's order.
pub fn checks(r: &RunReport) -> Vec<Check> {
    let mut out = measurement_checks(r);
    out.extend(setup_checks(r));
    out.extend(sample_checks(&r.summary));
    out.extend(run_checks(r));
    out
}

/// Draft 4.1 to 4.2.6: the boundary, the timer and what is recorded of each request.
fn measurement_checks(r: &RunReport) -> Vec<Check> {
    let g = &r.generator;
    vec![
        check(
            "SUT boundary declared",
            "4.1",
            Some(true),
            format!("{} (--sut-boundary)", super::identity::boundary(r)),
        ),
        check(
            "Timer resolution of 1 ms or better",
            "4.2.1",
            Some(r.timing.resolution_us <= 1000),
            format!("{} µs, {}", r.timing.resolution_us, r.timing.clock),
        ),
        check(
            "Arrival time of every streamed chunk recorded",
            "4.2.2",
            Some(true),
            r.timing.arrival.clone(),
        ),
        check(
            "Slow responses never delay the load generator",
            "4.2.5",
            Some(g.kept_up),
            if g.kept_up {
                format!(
                    "the generator kept up ({:.2} of {:.0} cores)",
                    g.cpu_cores_used, g.cpu_cores_available
                )
            } else {
                format!("the generator fell behind: {}", g.notes.join("; "))
            },
        ),
        record_check(&r.summary),
    ]
}

/// Draft 4.3.3 to 4.8.1: seed, tokenizer, warm-up, chunking, clock and guardrails declared.
fn setup_checks(r: &RunReport) -> Vec<Check> {
    let s = &r.summary;
    let mut out = vec![
        check(
            "Deterministic seed, reported",
            "4.3.3",
            Some(true),
            format!("seed {}", r.config.seed),
        ),
        check(
            "Tokenizer and counting option declared",
            "4.4.1, 4.4.2",
            Some(true),
            format!(
                "{} ({}), option {}",
                r.tokenizer.name, r.tokenizer.source, r.tokenizer.counting_option
            ),
        ),
        check(
            "Special-token handling stated",
            "4.4.3",
            Some(true),
            r.tokenizer.special_tokens.clone(),
        ),
        check(
            "Warm-up before measuring",
            "4.5",
            Some(r.warmup.compliant),
            crate::report::tables::warmup_line(&r.warmup),
        ),
        check(
            "Chunking and ITL option declared",
            "4.6.2, 4.6.3",
            Some(true),
            format!(
                "{}; {:.1} % of answer tokens arrived alone, {:.2} tokens per chunk",
                s.itl_method.description,
                s.itl_method.single_token_share * 100.0,
                s.itl_method.mean_tokens_per_chunk
            ),
        ),
        check(
            "Clock synchronisation stated",
            "4.7.2",
            Some(true),
            "one monotonic clock on the load generator times every request; nothing is compared across machines".into(),
        ),
        check(
            "Timestamps with millisecond precision or better",
            "4.7.4",
            Some(true),
            "Unix-epoch microseconds in requests.jsonl, ISO 8601 with milliseconds in run.json".into(),
        ),
    ];
    let declared = !super::identity::guardrails(r).starts_with("not declared");
    out.push(check(
        "Guardrail configuration disclosed",
        "4.8.1",
        Some(declared),
        super::identity::guardrails(r),
    ));
    out
}

/// Draft 5.1: enough TTFT samples for the percentiles reported, and their distribution.
fn sample_checks(s: &crate::metrics::RunSummary) -> Vec<Check> {
    let n = s.ttft_ms.map(|d| d.n).unwrap_or(0);
    vec![
        check(
            "At least 1,000 samples for P99",
            "5.1.2.1, 5.1.4.3",
            Some(n >= 1000),
            format!("{n} TTFT samples"),
        ),
        check(
            "At least 10,000 samples for P99.9",
            "5.1.2.1, 5.1.4.3",
            Some(n >= 10_000),
            format!("{n} TTFT samples"),
        ),
        check(
            "Every TTFT percentile, mean, min and max reported",
            "5.1.4.1",
            Some(s.ttft_ms.is_some()),
            if s.ttft_ms.is_some() {
                "P50, P90, P95, P99, P99.9, mean, min, max (Table 1)".into()
            } else {
                "no request completed".into()
            },
        ),
        check(
            "TTFT histogram or CDF",
            "5.1.5.4",
            Some(s.ttft_ms.is_some()),
            "in report.html".into(),
        ),
    ]
}

/// Whether the run went as planned and (open loop) the server kept up with the arrivals.
fn run_checks(r: &RunReport) -> Vec<Check> {
    let s = &r.summary;
    let mut out = vec![check(
        "Run completed as planned",
        "-",
        Some(!r.interrupted && !r.recovered),
        if r.recovered {
            "recovered from requests.jsonl after the process died; generator figures missing".into()
        } else if r.interrupted {
            "interrupted (Ctrl-C): partial results".into()
        } else {
            "ran to its limits".into()
        },
    )];
    if let Some(b) = s.arrival_balance {
        out.push(check(
            "Server kept up with the arrivals (not saturated)",
            "5.2.3.1",
            b.completion_share.map(|_| !b.saturated),
            match b.completion_share {
                Some(share) => format!("{:.0} % of the arrival rate completed", share * 100.0),
                None => "the run was too short against its latency to tell".into(),
            },
        ));
    }
    out
}

/// Requirements not met, one line each: the C.1 report's deviations.
pub fn deviations(r: &RunReport) -> Vec<String> {
    checks(r)
        .into_iter()
        .filter(|c| c.met == Some(false))
        .map(|c| format!("{} (draft {}): {}", c.requirement, c.section, c.detail))
        .collect()
}

/// The compliance section: a verdict, the checks, the warnings, the limits of a single run.
pub fn section(r: &RunReport) -> Section {
    let all = checks(r);
    let missed = all.iter().filter(|c| c.met == Some(false)).count();
    let mut t = Table::new(&["Requirement", "Draft", "Status", "Evidence"])
        .text()
        .nowrap(&[1, 2])
        .titled("Requirements a single run can be checked against");
    for c in &all {
        t.push([
            c.requirement.to_string(),
            c.section.to_string(),
            match c.met {
                Some(true) => "met",
                Some(false) => "NOT met",
                None => "n/a",
            }
            .to_string(),
            c.detail.clone(),
        ]);
    }
    let verdict = if missed == 0 {
        (
            Tone::Pass,
            "every requirement checked here was met".to_string(),
        )
    } else {
        (
            Tone::Warn,
            format!("{missed} of {} requirements checked here were not met: the figures are indicative where these apply", all.len()),
        )
    };
    let mut section = Section::new("compliance", "5. Methodology compliance")
        .callout(verdict.0, &verdict.1)
        .table(t);
    let warnings: Vec<String> = r.summary.warnings.iter().map(|w| w.to_string()).collect();
    if !warnings.is_empty() {
        section = section
            .paragraph("Warnings raised by the summary:")
            .list(warnings);
    }
    section.paragraph(
        "Limitations: one run measures one load level. The draft's tests that search or sweep \
         (maximum throughput 5.2, the throughput–latency curve 5.3, concurrent capacity 5.5, \
         prefix cache 5.7, memory pressure 5.8, long context 5.9, guardrail overhead 5.10) need \
         `servebench test`, and a comparison across systems needs the equivalence of draft \
         section 6.",
    )
}
