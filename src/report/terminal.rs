//! The end-of-run report in the terminal: the answer first, in the layout of the draft's
//! Appendix C.1 minimum report, within 100 columns. The full tables (the draft's Tables 1–6,
//! 8–9, user experience, server timings) follow with `--detail` and are always in the
//! report file.

mod notes;
mod results;

use super::tables;
use crate::artifacts::RunReport;
use crate::stats::Distribution;
use std::fmt::Write;

/// Width the terminal report fits in.
pub const WIDTH: usize = 100;

/// The `Users` line's terms in one line (each defined in docs/metrics.md, "User-experience
/// metrics"): idle is the user idle latency, T the window smooth goodput is counted over.
pub const USERS_LEGEND: &str =
    "idle: longest wait for a token · T: smooth goodput's window · terms: docs/metrics.md";

/// A duration in ms, with a precision that suits its size.
pub fn fmt_ms(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v == 0.0 {
        "0 ms".into()
    } else if v >= 10_000.0 {
        format!("{:.2} s", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 1.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.3} ms")
    }
}

/// A rate with thousands separators: `12,345.6`.
pub fn fmt_rate(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let whole = v.trunc() as u64;
    let frac = ((v - v.trunc()) * 10.0).round() as u64;
    let (whole, frac) = if frac == 10 {
        (whole + 1, 0)
    } else {
        (whole, frac)
    };
    let digits = whole.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out}.{frac}")
}

pub(crate) fn opt_ms(d: Option<Distribution>, f: impl Fn(&Distribution) -> f64) -> String {
    d.map(|d| fmt_ms(f(&d))).unwrap_or_else(|| "-".into())
}

/// Wraps `text` to `width` columns, each line after the first indented by `indent`.
pub fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line_len = 0;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if line_len > 0 && line_len + 1 + len > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line_len = indent;
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(word);
        line_len += len;
    }
    out
}

/// One `label  value` line of the short report, wrapped to the width.
fn row(out: &mut String, label: &str, value: &str) {
    let _ = writeln!(out, "  {label:<11}{}", wrap(value, WIDTH - 13, 13));
}

/// " (timestamps ± 0.02 ms)": the error bound the client's reaction time puts on TTFT and
/// ITL, beside their percentiles; empty when unknown.
pub(crate) fn timestamp_bound(t: &crate::record::run::TimestampReport) -> String {
    match t.error_bound_ms {
        Some(b) if t.shared_read_chunks > 0 || b > 0.0 => format!(
            " (timestamps within {} at P99{})",
            fmt_ms(b),
            if t.chunks > 0 && t.bound_applies_to.starts_with("the ") {
                format!(
                    " for the {:.1} % of chunks that shared a read",
                    100.0 * t.shared_read_chunks as f64 / t.chunks as f64
                )
            } else {
                String::new()
            }
        ),
        _ => String::new(),
    }
}

/// Whether the server, not the client, kept connections from being reused: almost no
/// request reused one, and most connections opened were found closed by the server when
/// next used (llama.cpp's HTTP layer closes after every streamed answer).
pub(crate) fn closes_every_connection(c: &crate::record::run::ConnectionReport) -> bool {
    !c.new_connection_per_request
        && c.reuse_share.is_some_and(|s| s < 0.1)
        && c.opened > 0
        && c.closed_by_server * 2 >= c.opened
}

/// The client's connections and network side in one line.
pub fn client_line(g: &crate::record::run::GeneratorReport) -> String {
    let c = &g.connections;
    let mut line = format!(
        "{} connections opened while measuring ({:.1}/s){}",
        c.opened,
        c.opened_per_s,
        match (c.new_connection_per_request, c.reuse_share) {
            (true, _) => ", one per request (--new-connection-per-request)".to_owned(),
            (false, Some(share)) => format!(", {:.1} % of requests reused one", share * 100.0),
            (false, None) => String::new(),
        }
    );
    if closes_every_connection(c) {
        let _ = write!(
            line,
            "; the server closed each connection after its answer ({} kept-alive connections found closed when next used), though its responses announce keep-alive: every request paid a new connection (connect time is reported apart from TTFT)",
            c.closed_by_server
        );
    }
    if let Some(p) = c.ephemeral_ports {
        let _ = write!(line, "; {} of {} ephemeral ports held", p.in_use, p.range);
    }
    if let Some(n) = c.tcp_retransmits {
        let _ = write!(line, "; {n} TCP retransmits (system-wide)");
    }
    let t = &g.timestamps;
    if let Some(w) = t.socket_wait_p99_ms {
        let _ = write!(line, "; socket wait P99 {}", fmt_ms(w));
    }
    if let Some(b) = t.client_busy_share {
        let _ = write!(line, "; reading threads busy {:.0} %", b * 100.0);
    }
    line
}

/// The short report (the draft's Appendix C.1, plus the verdict).
pub fn render(r: &RunReport) -> String {
    let mut out = String::new();
    heading(&mut out, r);
    system_section(&mut out, r);
    test_section(&mut out, r);
    results::results(&mut out, r);
    notes::notes(&mut out, r);
    verdict(&mut out, r);
    out
}

/// The title line: whether the run completed.
fn heading(out: &mut String, r: &RunReport) {
    let _ = writeln!(
        out,
        "\n=== servebench: {} (minimum report, draft Appendix C.1) ===",
        if r.interrupted {
            "run interrupted, partial results"
        } else {
            "run complete"
        }
    );
}

/// System: the model and engine, the hardware, the system under test.
fn system_section(out: &mut String, r: &RunReport) {
    let c = &r.config;
    let _ = writeln!(out, "System");
    let engine = match (&r.server.engine, &r.server.version) {
        (Some(e), Some(v)) => format!("{e} {v}"),
        (Some(e), None) => e.clone(),
        _ => "engine not reported by the server".into(),
    };
    row(out, "Model", &format!("{} ({engine})", c.target.model));
    row(
        out,
        "Hardware",
        r.system
            .hardware
            .as_deref()
            .unwrap_or("not given (--hardware)"),
    );
    row(
        out,
        "SUT",
        &format!(
            "{} boundary: {}{}; {}",
            r.system.sut_boundary,
            c.target.url,
            if c.target.builtin_simulator {
                ", the built-in simulator"
            } else {
                ""
            },
            tables::endpoint_name(c)
        ),
    );
}

/// Test: the workload, the load and what was measured.
fn test_section(out: &mut String, r: &RunReport) {
    let s = &r.summary;
    let c = &r.config;
    let _ = writeln!(out, "Test");
    row(
        out,
        "Workload",
        &format!("{} (seed {})", c.workload.name, c.seed),
    );
    if let Some(p) = &c.workload.profile {
        row(out, "Profile", &super::profiles::line(p));
    }
    row(out, "Load", &tables::describe_load(c));
    row(
        out,
        "Requests",
        &format!(
            "{} measured: {}, over {:.1} s",
            s.requests.total,
            tables::outcome_counts(s),
            s.window.duration_s
        ),
    );
}

/// The closing line: the exit status and why.
fn verdict(out: &mut String, r: &RunReport) {
    let verdict = format!(
        "=== exit status {}: {} ===",
        r.verdict.exit_status,
        r.verdict.reasons.join("; ")
    );
    let _ = writeln!(out, "{}", wrap(&verdict, WIDTH, 4));
}

/// The full report: the short one, then every table.
pub fn render_detail(r: &RunReport) -> String {
    let mut out = render(r);
    out.push_str(&tables::render(r));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_helpers() {
        assert_eq!(fmt_ms(0.1234), "0.123 ms");
        assert_eq!(fmt_ms(12.34), "12.3 ms");
        assert_eq!(fmt_ms(523.7), "524 ms");
        assert_eq!(fmt_ms(12_345.0), "12.35 s");
        assert_eq!(fmt_ms(f64::NAN), "-");
        assert_eq!(fmt_ms(0.0), "0 ms");
        assert_eq!(fmt_rate(1234567.89), "1,234,567.9");
        assert_eq!(fmt_rate(999.96), "1,000.0");
        assert_eq!(fmt_rate(12.0), "12.0");
        assert_eq!(wrap("aaa bbb ccc ddd", 8, 2), "aaa bbb\n  ccc\n  ddd");
    }

    #[test]
    fn the_users_legend_fits_one_line() {
        assert!(USERS_LEGEND.chars().count() <= WIDTH - 13, "{USERS_LEGEND}");
        assert!(!wrap(USERS_LEGEND, WIDTH - 13, 13).contains('\n'));
    }
}
