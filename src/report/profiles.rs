//! The workload profiles as a table (`servebench workload profiles`): every preset's five
//! dimensions and its SLO default, so a user picks one knowing what it sends.

use super::page::Table;
use crate::procedure::suite::{ProfileSuite, SuiteTest};
use crate::workload::profile::{preset, span, Profile, PRESET_IDS, PRESET_SOURCE};

/// A dimension's name as written in `run.json` and scenario files, spaced for reading.
fn spaced(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
        .unwrap_or_default()
}

/// A run's profile in one line for its reports: `CHAT (Interactive Streaming,
/// interactive): sessions, growing history, text out; SLO default ttft_ms<=500, …`.
pub fn line(p: &Profile) -> String {
    format!(
        "{}: {} arrivals, caching {}, {} out; SLO default {}",
        p.label(),
        spaced(p.concurrency),
        spaced(p.caching),
        spaced(p.output_structure),
        p.slo
            .as_deref()
            .map(|s| s.replace(',', ", "))
            .unwrap_or_else(|| "none (throughput-oriented)".into())
    )
}

/// The shared part of a prompt before its own tokens: `512 + ` (a system prompt),
/// `context 256–4096 + ` (one of the shared contexts).
fn shared(s: &crate::workload::Scenario) -> String {
    match (&s.system_prompt, &s.prefix_groups) {
        (_, Some(g)) => format!("context {} + ", span(&g.tokens)),
        (Some(p), None) => format!("{} + ", p.tokens),
        (None, None) => String::new(),
    }
}

/// One row per preset profile.
pub fn table() -> Table {
    let mut t = Table::new(&[
        "id",
        "group",
        "class",
        "input tokens",
        "output tokens",
        "structure",
        "arrivals",
        "caching",
        "SLO default",
    ])
    .titled("Workload profiles (--profile ID)")
    .text();
    for s in PRESET_IDS.iter().filter_map(|id| preset(id)) {
        let Some(p) = &s.profile else { continue };
        let per_turn = if s.sessions.is_some() { " a turn" } else { "" };
        let items = s
            .items
            .as_ref()
            .map(|i| format!(" × {} items", span(i)))
            .unwrap_or_default();
        t.rows.push(vec![
            p.id.clone(),
            p.group.short().to_owned(),
            p.latency.code().to_owned(),
            format!("{}{}{per_turn}{items}", shared(&s), span(&s.input)),
            match p.output_structure.api() {
                crate::workload::profile::ProfileApi::Generate => span(&s.output),
                _ => "none".into(),
            },
            spaced(p.output_structure),
            spaced(p.concurrency),
            spaced(p.caching),
            p.slo
                .as_deref()
                .map(|s| s.replace(',', ", "))
                .unwrap_or_else(|| "none".into()),
        ]);
    }
    t.notes.push(
        "Input tokens: the shared part (a system prompt, or one of the shared contexts) + the request's own (a turn: added to a session's history). Class: IN interactive, NR near-real-time, TO throughput-oriented (no SLO: judged on saturation alone)."
            .into(),
    );
    t.notes.push(format!("Source: {PRESET_SOURCE}."));
    t.notes.push(
        "`servebench workload show --profile ID` prints one in full; docs/workloads.md says why each parameter is what it is."
            .into(),
    );
    t
}

/// The answers of a suite run per profile (`suite --profiles`), one row per profile and
/// test, from `profiles.json`'s entries.
pub fn suites_table(entries: &[ProfileSuite]) -> Table {
    let mut t = Table::new(&["profile", "test", "answer", "compliance"])
        .titled("Answers per workload profile")
        .text()
        .nowrap(&[0, 1]);
    for e in entries {
        let id = e.profile().to_owned();
        let tests = match e {
            ProfileSuite::Ran { tests, .. } => tests,
            ProfileSuite::Failed { error: why, .. }
            | ProfileSuite::Skipped { skipped: why, .. } => {
                t.rows.push(vec![id, "—".into(), why.clone(), "—".into()]);
                continue;
            }
        };
        for test in tests {
            let (answer, compliance) = match test {
                SuiteTest::Skipped(s) => (format!("skipped: {}", s.why), "—".into()),
                SuiteTest::Ran(r) => (r.answer.clone(), r.compliance.words().to_owned()),
            };
            t.rows.push(vec![
                id.clone(),
                test.test().slug().into(),
                answer,
                compliance,
            ]);
        }
    }
    t.notes.push(
        "Each profile's folder holds its whole suite (suite.json, report.html); its SLO is the profile's default unless --slo was given."
            .into(),
    );
    t
}
