//! The end-of-run report in the terminal: the answer first, in the layout of the draft's
//! Appendix C.1 minimum report, within 100 columns. The full tables (the draft's Tables 1–6,
//! 8–9, user experience, server timings) follow with `--detail` and are always in the
//! report file.

use super::tables;
use super::RunReport;
use crate::metrics::fluidity::FluidRate;
use crate::metrics::Distribution;
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

/// The client's connections and network side in one line.
pub(crate) fn client_line(g: &crate::record::run::GeneratorReport) -> String {
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
    let s = &r.summary;
    let c = &r.config;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n=== servebench: {} (minimum report, draft Appendix C.1) ===",
        if r.interrupted {
            "run interrupted, partial results"
        } else {
            "run complete"
        }
    );
    let _ = writeln!(out, "System");
    let engine = match (&r.server.engine, &r.server.version) {
        (Some(e), Some(v)) => format!("{e} {v}"),
        (Some(e), None) => e.clone(),
        _ => "engine not reported by the server".into(),
    };
    row(&mut out, "Model", &format!("{} ({engine})", c.target.model));
    row(
        &mut out,
        "Hardware",
        r.system
            .hardware
            .as_deref()
            .unwrap_or("not given (--hardware)"),
    );
    row(
        &mut out,
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
    let _ = writeln!(out, "Test");
    row(
        &mut out,
        "Workload",
        &format!("{} (seed {})", c.workload.name, c.seed),
    );
    row(&mut out, "Load", &tables::describe_load(c));
    row(
        &mut out,
        "Requests",
        &format!(
            "{} measured: {} completed, {} failed, over {:.1} s",
            s.requests.total, s.requests.completed, s.requests.failed, s.window.duration_s
        ),
    );
    let _ = writeln!(out, "Results");
    row(
        &mut out,
        "TTFT",
        &format!(
            "P50 {} · P99 {}{}",
            opt_ms(s.ttft_ms, |d| d.p50),
            opt_ms(s.ttft_ms, |d| d.p99),
            timestamp_bound(&r.generator.timestamps)
        ),
    );
    row(
        &mut out,
        "TPOT",
        &format!(
            "P50 {} · P99 {}",
            opt_ms(s.tpot_ms, |d| d.p50),
            opt_ms(s.tpot_ms, |d| d.p99)
        ),
    );
    let mut thr = format!(
        "{} tok/s output, {} req/s",
        fmt_rate(s.output_tokens_per_s),
        fmt_rate(s.requests_per_s)
    );
    if s.total_reasoning_tokens > 0 {
        let _ = write!(
            thr,
            " ({} tok/s of it answer, the rest reasoning)",
            fmt_rate(s.answer_tokens_per_s)
        );
    }
    row(&mut out, "Throughput", &thr);
    row(
        &mut out,
        "<500ms",
        &match s.ttft_ms {
            Some(d) if d.p99 < 500.0 => format!(
                "{} tok/s with P99 TTFT {} < 500 ms (C.1's \"throughput at P99 TTFT < 500 ms\"; `servebench test throughput` searches for the maximum)",
                fmt_rate(s.output_tokens_per_s),
                fmt_ms(d.p99)
            ),
            Some(d) => format!(
                "not met at this load: P99 TTFT {} (`servebench test throughput --slo 'p99(ttft_ms)<=500'` finds the load that meets it)",
                fmt_ms(d.p99)
            ),
            None => "-".into(),
        },
    );
    let e = &s.experience;
    let mut ux = format!(
        "idle P99 {} · smooth goodput {}",
        opt_ms(e.user_idle_ms, |d| d.p99),
        e.smooth_goodput
            .as_ref()
            .map(|g| format!(
                "{} tok/s (T {:.1} s)",
                fmt_rate(g.value),
                g.window.duration_s
            ))
            .unwrap_or_else(|| "-".into())
    );
    match &e.fluid_token_rate {
        Some(FluidRate::Bounded { tokens_per_s, .. }) => {
            let _ = write!(ux, " · fluid rate {} tok/s", fmt_rate(*tokens_per_s));
        }
        Some(FluidRate::Unbounded { .. }) => ux.push_str(" · fluid rate unbounded (--detail)"),
        Some(FluidRate::NotReached { .. }) => ux.push_str(" · fluid rate not reached (--detail)"),
        None => {}
    }
    row(&mut out, "Users", &ux);
    row(&mut out, "", USERS_LEGEND);
    if let Some(slo) = &s.slo {
        if let Some(a) = &slo.per_request {
            row(
                &mut out,
                "SLO",
                &format!(
                    "{}: {:.2} % of requests met every bound (target {:.1} %), goodput {} req/s → {}",
                    a.spec,
                    a.attainment * 100.0,
                    a.target_attainment * 100.0,
                    fmt_rate(a.goodput_requests_per_s),
                    if a.passed { "PASS" } else { "FAIL" }
                ),
            );
        }
        for check in &slo.run_checks {
            row(
                &mut out,
                "SLO",
                &format!(
                    "{}: observed {} → {}",
                    check.term,
                    check
                        .observed
                        .map(|v| format!("{v:.3}"))
                        .unwrap_or_else(|| "no samples".into()),
                    if check.passed { "PASS" } else { "FAIL" }
                ),
            );
        }
    }
    if !s.failures.by_kind.is_empty() {
        let kinds: Vec<String> = s
            .failures
            .by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        row(&mut out, "Failures", &kinds.join(", "));
        for m in s.failures.top.iter().take(3) {
            let msg: String = m.message.chars().take(160).collect();
            row(&mut out, "", &format!("{}× {msg}", m.count));
            if let Some(h) = &m.hint {
                row(&mut out, "", &format!("→ {h}"));
            }
        }
    }
    let _ = writeln!(out, "Notes");
    let g = &r.generator;
    let gen = if g.kept_up {
        "kept up".to_owned()
    } else {
        format!("DID NOT KEEP UP ({})", g.notes.join("; "))
    };
    row(
        &mut out,
        "Generator",
        &format!(
            "{gen}; {:.2} of {:.0} cores; arrivals timed by {}",
            g.cpu_cores_used,
            g.cpu_cores_available,
            if g.arrival_clock == "kernel_rx" {
                "the kernel's receive timestamps"
            } else {
                "read returns"
            }
        ),
    );
    row(&mut out, "Client", &client_line(g));
    if let Some(b) = s.arrival_balance {
        if let Some(share) = b.completion_share {
            row(
                &mut out,
                "Server",
                &format!(
                    "completed {:.0} % of the arrival rate ({} of {} req/s){}",
                    share * 100.0,
                    fmt_rate(b.completion_rate_per_s),
                    fmt_rate(b.arrival_rate_per_s),
                    if b.saturated {
                        ": SATURATED (draft 5.2.3.1)"
                    } else {
                        ""
                    }
                ),
            );
        }
    }
    let t = &r.telemetry;
    match &t.server {
        Some(sv) if sv.scrapes_ok > 0 => {
            let mut line = format!("/metrics ({}): ", sv.engine);
            match sv.comparison.output_tokens.difference_pct {
                Some(d) => {
                    let _ = write!(line, "generated tokens {d:+.1} % vs the client");
                }
                None => line.push_str("no token counter"),
            }
            if let Some(q) = &sv.queue {
                let _ = write!(
                    line,
                    "; queue {} (mean {:.1}, {:+.2}/s)",
                    if q.growing { "GROWING" } else { "stable" },
                    q.waiting_mean,
                    q.slope_per_s
                );
            }
            if let Some(p) = sv.delta.preemptions.filter(|p| *p > 0.0) {
                let _ = write!(line, "; {p:.0} preemptions");
            }
            row(&mut out, "Metrics", &line);
        }
        _ => row(&mut out, "Metrics", &t.sources.server_metrics),
    }
    match &t.gpu {
        Some(g) => {
            let util: Vec<f64> = g.gpus.iter().filter_map(|x| x.util_mean_pct).collect();
            let mut line = format!(
                "{} GPUs, mean utilisation {:.0} %",
                g.gpus.len(),
                util.iter().sum::<f64>() / util.len().max(1) as f64
            );
            if let (Some(j), Some(tpj)) = (g.joules_per_output_token, g.output_tokens_per_joule) {
                let _ = write!(line, "; {j:.3} J per output token ({tpj:.2} tokens/J)");
            }
            row(&mut out, "GPUs", &line);
        }
        // The reason in brief; the whole of it is in the detailed report.
        None => row(
            &mut out,
            "GPUs",
            t.sources.gpu.split(" (").next().unwrap_or(&t.sources.gpu),
        ),
    }
    row(&mut out, "Warm-up", &tables::warmup_line(&r.warmup));
    // Few-sample warnings share one line: they say the same thing about several figures.
    let few: Vec<String> = s
        .warnings
        .iter()
        .filter_map(|w| match w {
            crate::metrics::warnings::Warning::FewSamples {
                metric, percentile, ..
            } => Some(format!("{metric} {percentile}")),
            _ => None,
        })
        .collect();
    if !few.is_empty() {
        row(
            &mut out,
            "-",
            &format!(
                "{} from fewer samples than the draft requires (5.1.4.3): indicative",
                few.join(", ")
            ),
        );
    }
    for w in s
        .warnings
        .iter()
        .filter(|w| !matches!(w, crate::metrics::warnings::Warning::FewSamples { .. }))
    {
        row(&mut out, "-", &w.short());
    }
    for n in &r.system.notes {
        row(&mut out, "-", n);
    }
    let verdict = format!(
        "=== exit status {}: {} ===",
        r.verdict.exit_status,
        r.verdict.reasons.join("; ")
    );
    let _ = writeln!(out, "{}", wrap(&verdict, WIDTH, 4));
    out
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
