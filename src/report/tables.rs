//! The full tables of a run, in the layouts of the draft's examples (Tables 1–6, 8–9), with
//! the user-experience, server-timing and generator tables beside them. One function per
//! table, each returning the table as data ([`Table`]); the terminal draws them with
//! [`to_terminal`] within 100 columns, and the Markdown and HTML reports draw the very same
//! tables.
//!
//! The tables are grouped by subject: request timing in `tables/timing.rs`, what users
//! experience (and fairness between classes) in `tables/users.rs`, and the server's and the
//! load generator's machines in `tables/machines.rs`.

mod machines;
pub mod media;
pub mod sessions;
mod timing;
mod users;

use super::page::Table;
use super::terminal::WIDTH;
use crate::artifacts::RunReport;
use crate::client::Endpoint;
use crate::config::RunConfig;
use crate::metrics::RunSummary;
use crate::record::run::WarmupReport;
use crate::record::FailureKind;
use crate::schedule::{Arrival, LoadPattern};
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement};
use std::fmt::Write;

pub use machines::{generator, telemetry};
pub use media::media;
pub use sessions::sessions;
pub use timing::{itl, latency, server, throughput, ttft};
pub use users::{experience, fairness};

fn table(header: &[&str]) -> Table {
    Table::new(header)
}

/// Requests the benchmark itself cancelled at the run's end (still unanswered when it
/// stopped): not the server's failures, and counted apart from them.
pub fn cancelled(s: &RunSummary) -> u64 {
    s.failures
        .by_kind
        .get(&FailureKind::Cancelled)
        .copied()
        .unwrap_or(0)
}

/// What became of the measured requests, by kind: "9 completed, 140 cancelled at the end",
/// "995 completed, 5 failed". The requests cancelled at the end are never called failed
/// (the verdict calls them unanswered, the run overloaded).
pub fn outcome_counts(s: &RunSummary) -> String {
    let cancelled = cancelled(s);
    let failed = s.requests.failed.saturating_sub(cancelled);
    let mut out = format!("{} completed", s.requests.completed);
    if failed > 0 || cancelled == 0 {
        let _ = write!(out, ", {failed} failed");
    }
    if cancelled > 0 {
        let _ = write!(out, ", {cancelled} cancelled at the end");
    }
    out
}

/// Beside a TTFT figure: how many requests it covers when some measured requests have
/// none (they failed, or were still waiting when the run ended): " (over the 9 of 149
/// measured requests that completed)"; empty when it covers them all.
pub fn ttft_coverage(s: &RunSummary) -> String {
    let Some(d) = s.ttft_ms else {
        return String::new();
    };
    let covered = d.n as u64;
    if covered >= s.requests.total {
        return String::new();
    }
    format!(
        " (over the {covered} of {} measured requests that completed)",
        s.requests.total
    )
}

/// A table drawn for the terminal: title, box-drawn table within [`WIDTH`] columns, notes.
pub fn to_terminal(t: &Table) -> String {
    let mut c = comfy_table::Table::new();
    c.load_style(UTF8_FULL_CONDENSED);
    c.set_content_arrangement(ContentArrangement::Dynamic);
    c.set_width(WIDTH as u16);
    c.set_header(t.header.iter().map(Cell::new));
    for row in &t.rows {
        c.add_row(row.iter().map(Cell::new));
    }
    if t.numeric {
        for i in 1..c.column_count() {
            if let Some(col) = c.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    let mut out = String::new();
    if let Some(title) = &t.title {
        let _ = writeln!(out, "\n{}", super::terminal::wrap(title, WIDTH, 2));
    }
    let _ = writeln!(out, "{c}");
    for n in &t.notes {
        let _ = writeln!(out, "{}", super::terminal::wrap(n, WIDTH, 2));
    }
    out
}

/// The API driven and its protocol, as the report names them (draft 4.6.2).
pub fn endpoint_name(c: &RunConfig) -> String {
    let e: Endpoint = c.target.endpoint;
    format!("{} API over {}", e.api_name(), e.protocol())
}

/// The load model and limits in words.
pub fn describe_load(c: &RunConfig) -> String {
    let limits = match (c.limits.requests, c.limits.duration) {
        (Some(n), Some(d)) => format!("{n} requests or {:.0} s, whichever first", d.as_secs_f64()),
        (Some(n), None) => format!("{n} requests"),
        (None, Some(d)) => format!("{:.0} s", d.as_secs_f64()),
        (None, None) => "until stopped".into(),
    };
    let cap = c
        .max_concurrency
        .map(|n| format!(", at most {n} in flight"))
        .unwrap_or_default();
    match c.load {
        LoadPattern::Closed { concurrency } => {
            format!("closed loop, concurrency {concurrency}; {limits}")
        }
        LoadPattern::Trace { speed } => {
            format!("trace replay at {speed}x the recorded arrival times{cap}; {limits}")
        }
        LoadPattern::Open {
            rate_per_s,
            arrival,
        } => {
            let a = match arrival {
                Arrival::Poisson => "Poisson".to_owned(),
                Arrival::Constant => "constant".to_owned(),
                Arrival::Gamma { cv } => format!("gamma (CV {cv})"),
            };
            format!("open loop, {rate_per_s} req/s {a} arrivals{cap}; {limits}")
        }
    }
}

/// What the warm-up achieved against what the draft requires.
pub fn warmup_line(w: &WarmupReport) -> String {
    if w.policy.starts_with("none") {
        return "none: a cold-start measurement (draft 4.5)".into();
    }
    let mut s = format!("{} requests, {} output tokens", w.requests, w.output_tokens);
    if let (Some(rr), Some(0)) = (w.required_requests, w.required_output_tokens) {
        // A non-generative endpoint: requests are what it counts.
        let _ = write!(s, " (draft 4.5 requires >= {rr} requests)");
    } else if let (Some(rr), Some(rt)) = (w.required_requests, w.required_output_tokens) {
        let _ = write!(s, " (draft 4.5 requires >= {rr} and >= {rt})");
    } else {
        let _ = write!(s, " ({})", w.policy);
    }
    if w.capped {
        let _ = write!(
            s,
            "; stopped at its {:.0} s cap ({})",
            w.cap_s,
            w.cap_source
                .as_deref()
                .map_or("--warmup-max".to_owned(), |c| {
                    format!("{c}; --warmup-max sets it")
                })
        );
    }
    if !w.probe_e2e_ms.is_empty() {
        let _ = write!(
            s,
            "; {} probes, {}",
            w.probe_e2e_ms.len(),
            if w.stabilized {
                "latency stable"
            } else {
                "latency NOT stable"
            }
        );
    }
    let _ = write!(
        s,
        " → {}",
        if w.compliant {
            "compliant"
        } else {
            "NOT compliant"
        }
    );
    s
}

/// How tokens were counted and ITL formed: the line above the tables.
pub fn counting_line(r: &RunReport) -> String {
    format!(
        "Tokens: {} ({}, option {}); ITL {}",
        r.tokenizer.name,
        r.tokenizer.source,
        r.tokenizer.counting_option,
        r.summary.itl_method.description
    )
}

/// Every table of the run, in report order.
pub fn all(r: &RunReport) -> Vec<Table> {
    let s = &r.summary;
    let mut out = ttft(s);
    out.extend(itl(s));
    out.push(throughput(s));
    out.push(latency(s));
    out.extend(media(s));
    out.extend(server(s));
    out.extend(experience(&s.experience));
    out.extend(fairness(&s.experience));
    out.push(telemetry(r));
    out.push(generator(r));
    out
}

/// Every table of the run, drawn for the terminal.
pub fn render(r: &RunReport) -> String {
    let mut out = format!("\n{}\n", super::terminal::wrap(&counting_line(r), WIDTH, 2));
    for t in all(r) {
        out.push_str(&to_terminal(&t));
    }
    out
}

#[cfg(test)]
mod warmup_line_tests {
    use super::warmup_line;
    use crate::record::run::WarmupReport;

    /// Issue 36, item 5: the cap a run sized itself is not called `--warmup-max`.
    #[test]
    fn a_capped_warm_up_names_who_set_its_cap() {
        let mut w = WarmupReport {
            policy: "auto".into(),
            requests: 6,
            output_tokens: 731,
            required_requests: Some(100),
            required_output_tokens: Some(10_000),
            capped: true,
            cap_s: 10.0,
            ..Default::default()
        };
        assert!(warmup_line(&w).contains("stopped at its 10 s cap (--warmup-max)"));
        w.cap_source = Some("half the measured phase".into());
        assert!(
            warmup_line(&w).contains(
                "stopped at its 10 s cap (half the measured phase; --warmup-max sets it)"
            ),
            "{}",
            warmup_line(&w)
        );
    }
}
