//! A test's report in the terminal: the one-line answer first, then the draft's tables for
//! the test (Tables 1-14 layouts), every level in one table, and compliance with what was
//! not met. Within 100 columns, like the run report.
//!
//! This file holds the parts, the helpers and the tables every test shows (its levels and
//! compliance); each test's own tables are in `tables/timing.rs` (TTFT, throughput, ITL),
//! `tables/sweep.rs` (the throughput-latency curve), `tables/limits.rs` (capacity, memory
//! pressure, long context) and `tables/features.rs` (fairness, prefix caching, guardrails).

mod features;
mod limits;
mod sweep;
mod timing;

use super::page::Table;
use super::tables::to_terminal;
use super::terminal::{fmt_ms, wrap, WIDTH};
use crate::procedure::compliance::Strength;
use crate::procedure::level::rate;
use crate::procedure::report::{TestReport, TestStatus};
use crate::procedure::OneResult;
use crate::procedure::TestName;
use features::{fairness, guardrails, prefix_cache};
use limits::{capacity, long_context, memory};
use std::fmt::Write;
use sweep::curve;
use timing::{itl, throughput, ttft};

fn table(header: &[&str]) -> Table {
    Table::new(header)
}

/// One piece of a test's report: a table (as data) or a sentence.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Table(Table),
    Text(String),
}

/// A test's report in order, drawn by the terminal ([`render`]) and by the report page
/// (`report::test_page`) from the same data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parts(pub Vec<Part>);

impl Parts {
    fn table(&mut self, t: Table) {
        self.0.push(Part::Table(t));
    }

    fn text(&mut self, s: impl Into<String>) {
        self.0.push(Part::Text(s.into()));
    }

    /// The terminal's drawing: tables within 100 columns, sentences wrapped.
    pub fn to_terminal(&self) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Part::Table(t) => out.push_str(&to_terminal(t)),
                Part::Text(s) => {
                    let _ = writeln!(out, "{}", wrap(s, WIDTH, 2));
                }
            }
        }
        out
    }
}

fn ms(v: Option<f64>) -> String {
    v.map(fmt_ms).unwrap_or_else(|| "-".into())
}

fn pct(v: f64) -> String {
    if (v - 1.0).abs() < 1e-12 {
        "100%".into()
    } else {
        format!("{:.1}%", v * 100.0)
    }
}

fn result<T: OneResult + Clone>(r: &TestReport) -> Option<T> {
    T::of(&r.result).cloned()
}

/// The whole test report for the terminal.
pub fn render(r: &TestReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n{} (draft {} {})", r.test.slug(), r.section, r.title);
    let _ = writeln!(out, "{}", wrap(&format!("→ {}", r.answer), WIDTH, 2));
    if r.status == TestStatus::Incomplete {
        let _ = writeln!(
            out,
            "{}",
            wrap(
                &format!(
                    "INCOMPLETE: {}",
                    r.stopped.as_deref().unwrap_or("stopped early")
                ),
                WIDTH,
                2
            )
        );
    }
    out.push_str(&results(r).to_terminal());
    out.push_str(&level_parts(r).to_terminal());
    let mut c = Parts::default();
    compliance(r, &mut c);
    out.push('\n');
    out.push_str(&c.to_terminal());
    out
}

/// The test's own tables (the draft's Tables 1–14 that apply) and its derived points.
pub fn results(r: &TestReport) -> Parts {
    let mut out = Parts::default();
    match r.test {
        TestName::Ttft => ttft(r, &mut out),
        TestName::Throughput => throughput(r, &mut out),
        TestName::Curve => curve(r, &mut out),
        TestName::Itl => itl(r, &mut out),
        TestName::Capacity => capacity(r, &mut out),
        TestName::Fairness => fairness(r, &mut out),
        TestName::PrefixCache => prefix_cache(r, &mut out),
        TestName::MemoryPressure => memory(r, &mut out),
        TestName::LongContext => long_context(r, &mut out),
        TestName::Guardrails => guardrails(r, &mut out),
    }
    out
}

/// Every level in one table, then the saturation signals that fired.
pub fn level_parts(r: &TestReport) -> Parts {
    let mut out = Parts::default();
    levels(r, &mut out);
    out
}

fn levels(r: &TestReport, out: &mut Parts) {
    let mut t = table(&[
        "#", "Level", "Role", "Verdict", "tok/s", "req/s", "P99 TTFT", "Queue",
    ]);
    for l in &r.levels {
        t.push(vec![
            (l.index + 1).to_string(),
            l.label.clone(),
            serde_json::to_value(l.role)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            l.verdict.word().to_string(),
            format!("{:.0}", l.summary.steady_state.output_tokens_per_s),
            rate(l.summary.steady_state.requests_per_s),
            ms(l.summary.ttft_ms.map(|d| d.p99)),
            l.signals.queue_indicator().to_string(),
        ]);
    }
    out.table(t.titled("Levels (each a run folder under levels/)"));
    for l in r.levels.iter().filter(|l| l.signals.any()) {
        out.text(format!(
            "level {}: saturation signal: {}",
            l.index + 1,
            l.signals.fired.join("; ")
        ));
    }
}

fn compliance(r: &TestReport, out: &mut Parts) {
    let c = &r.compliance;
    out.text(format!(
        "Compliance with draft {}: {} ({} of {} requirements met)",
        r.section,
        c.verdict.words(),
        c.requirements.iter().filter(|x| x.met).count(),
        c.requirements.len()
    ));
    for req in c.unmet() {
        let word = match req.strength {
            Strength::Must => "MUST",
            Strength::Should => "SHOULD",
        };
        out.text(format!(
            "not met: {word} ({}) {}: {}",
            req.section, req.text, req.detail
        ));
    }
}
