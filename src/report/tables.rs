//! The full tables of a run, in the layouts of the draft's examples (Tables 1–6, 8–9), with
//! the user-experience, server-timing and generator tables beside them. One function per
//! table, each returning the table as data ([`Table`]); the terminal draws them with
//! [`to_terminal`] within 100 columns, and the Markdown and HTML reports draw the very same
//! tables.

use super::page::Table;
use super::terminal::{fmt_ms, fmt_rate, opt_ms, WIDTH};
use super::RunReport;
use crate::config::{Arrival, Endpoint, LoadPattern, RunConfig};
use crate::metrics::experience::Experience;
use crate::metrics::fluidity::FluidRate;
use crate::metrics::{Distribution, RunSummary};
use crate::record::run::WarmupReport;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement};
use std::fmt::Write;

fn table(header: &[&str]) -> Table {
    Table::new(header)
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
    if let (Some(rr), Some(rt)) = (w.required_requests, w.required_output_tokens) {
        let _ = write!(s, " (draft 4.5 requires >= {rr} and >= {rt})");
    } else {
        let _ = write!(s, " ({})", w.policy);
    }
    if w.capped {
        let _ = write!(s, "; stopped at its {:.0} s cap (--warmup-max)", w.cap_s);
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

type Pick = fn(&Distribution) -> f64;
const PCTS: [(&str, Pick); 8] = [
    ("P50", |d| d.p50),
    ("P90", |d| d.p90),
    ("P95", |d| d.p95),
    ("P99", |d| d.p99),
    ("P99.9", |d| d.p999),
    ("Mean", |d| d.mean),
    ("Min", |d| d.min),
    ("Max", |d| d.max),
];

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

/// TTFT percentiles (draft Table 1) and, when the workload had them, TTFT by input length
/// (Table 2).
pub fn ttft(s: &RunSummary) -> Vec<Table> {
    let mut t = table(&["Metric", "Value"]).titled("Time to first token (draft Table 1)");
    t.push(["Requests".to_string(), s.requests.completed.to_string()]);
    for (name, f) in PCTS {
        t.push([format!("TTFT {name}"), opt_ms(s.ttft_ms, f)]);
    }
    let mut out = vec![t];
    if !s.ttft_by_input_tokens.is_empty() {
        let mut t = table(&["Input tokens", "n", "P50", "P95", "P99"])
            .titled("TTFT by input length (draft Table 2)");
        for b in &s.ttft_by_input_tokens {
            t.push([
                b.label.clone(),
                b.n.to_string(),
                fmt_ms(b.p50_ms),
                fmt_ms(b.p95_ms),
                fmt_ms(b.p99_ms),
            ]);
        }
        out.push(t);
    }
    out
}

/// ITL (or time between chunks under option A) in the layout of draft Table 6, with the
/// distribution's shape, then per-request jitter and max pause.
pub fn itl(s: &RunSummary) -> Vec<Table> {
    // Under option A the samples are gaps between chunks, not tokens: the title says so.
    let (title, short) = match s.itl_method.title() {
        "Time Between Chunks" => (
            "Time between chunks (draft Table 6 layout, option A)",
            "TBC",
        ),
        _ => ("Inter-token latency (draft Table 6)", "ITL"),
    };
    let mut t = table(&["Metric", "Value"]).titled(title);
    t.push([
        format!("{short} samples"),
        s.itl_ms
            .map(|d| d.n.to_string())
            .unwrap_or_else(|| "0".into()),
    ]);
    for (name, f) in PCTS.iter().take(5) {
        t.push([format!("{short} {name}"), opt_ms(s.itl_ms, f)]);
    }
    t.push([format!("{short} Mean"), opt_ms(s.itl_ms, |d| d.mean)]);
    t.push([format!("{short} Std Dev"), opt_ms(s.itl_ms, |d| d.std)]);
    t.push([
        "P99/P50 Ratio".to_string(),
        s.itl_tail_ratio
            .map(|v| format!("{v:.2}"))
            .unwrap_or_else(|| "-".into()),
    ]);
    let t = t.note(&format!("Shape: {}", s.itl_shape.statement));
    let mut per = table(&["Per request", "P50", "P95", "P99"]);
    for (name, d) in [
        ("Jitter (ITL std)", s.jitter_ms),
        ("Max pause", s.max_pause_ms),
    ] {
        per.push([
            name.to_string(),
            opt_ms(d, |d| d.p50),
            opt_ms(d, |d| d.p95),
            opt_ms(d, |d| d.p99),
        ]);
    }
    vec![t, per]
}

/// Throughput over the measurement window (draft Table 3).
pub fn throughput(s: &RunSummary) -> Table {
    let mut t = table(&["Metric", "Value"]).titled("Throughput (draft Table 3)");
    t.push([
        "Output throughput".into(),
        format!("{} tok/s", fmt_rate(s.output_tokens_per_s)),
    ]);
    if s.total_reasoning_tokens > 0 {
        t.push([
            "  of which answer".into(),
            format!("{} tok/s", fmt_rate(s.answer_tokens_per_s)),
        ]);
    }
    t.push([
        "Request throughput".into(),
        format!("{:.2} req/s", s.requests_per_s),
    ]);
    t.push([
        "Input throughput".into(),
        format!("{} tok/s", fmt_rate(s.input_tokens_per_s)),
    ]);
    t.push([
        "Steady-state output".into(),
        format!(
            "{} tok/s (first {:.1} s excluded)",
            fmt_rate(s.steady_state.output_tokens_per_s),
            s.steady_state.excluded_s
        ),
    ]);
    t.push([
        "Success rate".into(),
        format!("{:.2} %", s.success_rate * 100.0),
    ]);
    t
}

/// Latency percentiles side by side (draft Table 4).
pub fn latency(s: &RunSummary) -> Table {
    let mut t = table(&["Metric", "P50", "P95", "P99"]).titled("Latency (draft Table 4)");
    for (name, d) in [
        ("TTFT", s.ttft_ms),
        ("TPOT", s.tpot_ms),
        ("End-to-End", s.e2e_ms),
        ("TTFT from schedule", s.ttft_from_schedule_ms),
        ("First reasoning token", s.time_to_first_reasoning_ms),
        ("Connection wait", s.connect_ms),
    ] {
        if d.is_none() && name != "TTFT" && name != "TPOT" && name != "End-to-End" {
            continue;
        }
        t.push([
            name.to_string(),
            opt_ms(d, |d| d.p50),
            opt_ms(d, |d| d.p95),
            opt_ms(d, |d| d.p99),
        ]);
    }
    t
}

/// Client figures beside the server's own timings, when the server reported them.
pub fn server(s: &RunSummary) -> Option<Table> {
    let sv = s.server.as_ref()?;
    let mut t = table(&["Client vs server", "P50", "P95", "P99"])
        .titled("Server-reported timings (llama.cpp `timings`)");
    for (name, d) in [
        ("Client TTFT", s.ttft_ms),
        ("Server prompt time", sv.prompt_ms),
        ("TTFT - prompt (queue+transport)", sv.ttft_minus_prompt_ms),
        ("Client TPOT", s.tpot_ms),
        ("Server time per token", sv.server_tpot_ms),
    ] {
        t.push([
            name.to_string(),
            opt_ms(d, |d| d.p50),
            opt_ms(d, |d| d.p95),
            opt_ms(d, |d| d.p99),
        ]);
    }
    if let Some(d) = sv.decode_rate_ratio {
        t.push([
            "Decode rate client/server".to_string(),
            format!("{:.3}", d.p50),
            format!("{:.3}", d.p95),
            format!("{:.3}", d.p99),
        ]);
    }
    Some(t)
}

/// User idle latency, smooth goodput, fluidity and token rates; then fluidity against the
/// decode deadline when fluidity was computed.
pub fn experience(e: &Experience) -> Vec<Table> {
    let mut t = table(&["User experience", "Value", "Parameters"])
        .text()
        .titled("User experience (Etalon's fluidity; smooth goodput of \"Revisiting SLOs and System Level Metrics in LLM Serving\")");
    t.push([
        "User idle latency P50/P95/P99".to_string(),
        format!(
            "{} / {} / {}",
            opt_ms(e.user_idle_ms, |d| d.p50),
            opt_ms(e.user_idle_ms, |d| d.p95),
            opt_ms(e.user_idle_ms, |d| d.p99)
        ),
        format!("deadlines: {}", e.deadlines),
    ]);
    t.push([
        "Requests meeting every deadline".to_string(),
        format!("{:.1} %", e.deadline_attainment * 100.0),
        String::new(),
    ]);
    if let Some(sg) = &e.smooth_goodput {
        t.push([
            "Smooth goodput".to_string(),
            format!(
                "{} tok/s (answer tokens read: {} tok/s)",
                fmt_rate(sg.value),
                fmt_rate(sg.throughput_tokens_per_s)
            ),
            format!(
                "α = {}, f = {}, patience {} s, T = {:.1} s{}",
                sg.alpha,
                format!("{:?}", sg.f).to_lowercase(),
                sg.patience_s,
                sg.window.duration_s,
                if sg.window.outcome_independent {
                    ""
                } else {
                    " (closed loop: depends on outcomes)"
                }
            ),
        ]);
    }
    match &e.fluidity {
        Some(f) => {
            t.push([
                "Fluidity-index P1/P5/P50/mean".to_string(),
                format!("{:.3} / {:.3} / {:.3} / {:.3}", f.p1, f.p5, f.p50, f.mean),
                format!(
                    "D_d {} ms, D_p = isolated prefill + {} ms",
                    f.tbt_deadline_ms, f.slack_ms
                ),
            ]);
            t.push([
                format!("Requests with fluidity >= {}", f.threshold),
                format!("{:.1} %", f.share_meeting * 100.0),
                f.prefill_curve_source.clone(),
            ]);
        }
        None => {
            t.push([
                "Fluidity-index".to_string(),
                "-".to_string(),
                e.fluidity_note.clone().unwrap_or_default(),
            ]);
        }
    }
    let (rate, why) = match &e.fluid_token_rate {
        Some(FluidRate::Bounded {
            tokens_per_s,
            decode_deadline_ms,
        }) => (
            format!("{} tok/s", fmt_rate(*tokens_per_s)),
            format!("D_d = {decode_deadline_ms:.2} ms"),
        ),
        Some(FluidRate::Unbounded { reason }) => ("unbounded".into(), reason.clone()),
        Some(FluidRate::NotReached { reason }) => ("not reached".into(), reason.clone()),
        None => ("-".into(), String::new()),
    };
    t.push(["Fluid token generation rate".to_string(), rate, why]);
    let r = |v: Option<f64>| {
        v.map(|v| format!("{} tok/s", fmt_rate(v)))
            .unwrap_or_else(|| "-".into())
    };
    t.push([
        "1 / mean TPOT".to_string(),
        r(e.token_rates.inverse_mean_tpot_per_s),
        "what TPOT suggests".to_string(),
    ]);
    t.push([
        "1 / P99 TBT".to_string(),
        r(e.token_rates.inverse_p99_tbt_per_s),
        "what tail TBT suggests".to_string(),
    ]);
    let mut out = vec![t];
    if let Some(f) = &e.fluidity {
        let mut t = table(&["Target TBT (D_d)", "Requests fluid"]);
        for (dd, share) in &f.curve_vs_tbt {
            t.push([fmt_ms(*dd), format!("{:.1} %", share * 100.0)]);
        }
        out.push(t);
    }
    out
}

/// Per-class latencies, starvation and inflation (draft Tables 8 and 9), when the workload
/// had classes.
pub fn fairness(e: &Experience) -> Option<Table> {
    let fair = e.fairness.as_ref()?;
    let mut t = table(&[
        "Class",
        "Count",
        "Failed",
        "TTFT P50",
        "TTFT P99",
        "TPOT P50",
        "TPOT P99",
        "Starved",
        "Inflation",
    ])
    .titled(&format!(
        "Fairness (draft Tables 8 and 9): Jain's index {:.3}",
        fair.jain_index
    ));
    for (name, c) in &fair.classes {
        let o = |v: Option<f64>| v.map(fmt_ms).unwrap_or_else(|| "-".into());
        t.push([
            name.clone(),
            c.count.to_string(),
            c.failed.to_string(),
            o(c.ttft_p50_ms),
            o(c.ttft_p99_ms),
            o(c.tpot_p50_ms),
            o(c.tpot_p99_ms),
            format!("{:.1} %", c.starvation_rate * 100.0),
            c.latency_inflation_p50
                .map(|v| format!("{v:.2}x"))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    Some(t)
}

/// The server's metrics, GPUs and energy over the measurement window.
pub fn telemetry(r: &RunReport) -> Table {
    let t = &r.telemetry;
    let mut tab = table(&["Telemetry", "Value"])
        .text()
        .titled("Telemetry over the measurement window");
    let pair = |p: &crate::telemetry::summary::Pair| {
        format!(
            "client {:.0} · server {} · {}",
            p.client,
            p.server
                .map(|v| format!("{v:.0}"))
                .unwrap_or_else(|| "-".into()),
            p.difference_pct
                .map(|d| format!("{d:+.2} %"))
                .unwrap_or_else(|| "-".into())
        )
    };
    tab.push([
        "Server metrics".to_string(),
        t.sources.server_metrics.clone(),
    ]);
    if let Some(sv) = &t.server {
        tab.push([
            "Scrapes".to_string(),
            format!(
                "{} ok, {} failed{}",
                sv.scrapes_ok,
                sv.scrapes_failed,
                sv.last_error
                    .as_ref()
                    .map(|e| format!(" (last: {e})"))
                    .unwrap_or_default()
            ),
        ]);
        tab.push([
            "Output tokens".to_string(),
            pair(&sv.comparison.output_tokens),
        ]);
        tab.push([
            "Requests finished".to_string(),
            pair(&sv.comparison.requests_finished),
        ]);
        if let Some(p) = &sv.comparison.mean_ttft_ms {
            tab.push(["Mean TTFT, ms".to_string(), pair(p)]);
        }
        if let Some(q) = &sv.queue {
            tab.push([
                "Waiting queue (steady part)".to_string(),
                format!(
                    "mean {:.1}, max {:.0}, slope {:+.3}/s (p = {:.3}){}",
                    q.waiting_mean,
                    q.waiting_max,
                    q.slope_per_s,
                    q.p_value,
                    if q.growing {
                        ": GROWING (draft 5.2.3.1)"
                    } else {
                        ""
                    }
                ),
            ]);
        }
        let d = &sv.delta;
        let o = |v: Option<f64>| v.map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into());
        tab.push(["Preemptions".to_string(), o(d.preemptions)]);
        tab.push([
            "Prefix-cache hit rate".to_string(),
            d.prefix_cache_hit_rate
                .map(|v| format!("{:.1} %", v * 100.0))
                .unwrap_or_else(|| "-".into()),
        ]);
        if let Some(kv) = sv.kv_cache_usage_max {
            tab.push([
                "KV cache usage, max".to_string(),
                format!("{:.1} %", kv * 100.0),
            ]);
        }
    }
    tab.push(["GPUs".to_string(), t.sources.gpu.clone()]);
    if let Some(g) = &t.gpu {
        for x in &g.gpus {
            tab.push([
                format!("GPU {}", x.index),
                format!(
                    "util {} %, power {} W, memory {} MiB, {} °C{}",
                    x.util_mean_pct
                        .map(|v| format!("{v:.0}"))
                        .unwrap_or_else(|| "-".into()),
                    x.power_mean_w
                        .map(|v| format!("{v:.0}"))
                        .unwrap_or_else(|| "-".into()),
                    x.mem_used_max_mib
                        .map(|v| format!("{v:.0}"))
                        .unwrap_or_else(|| "-".into()),
                    x.temp_max_c
                        .map(|v| format!("{v:.0}"))
                        .unwrap_or_else(|| "-".into()),
                    if x.throttle_reasons.is_empty() {
                        String::new()
                    } else {
                        format!(", throttled: {}", x.throttle_reasons.join(", "))
                    }
                ),
            ]);
        }
        if let Some(e) = &g.energy {
            tab.push([
                "Energy".to_string(),
                format!(
                    "{:.0} J ({:?}){}",
                    e.joules,
                    e.method,
                    e.active_joules
                        .map(|a| format!(", {a:.0} J above idle"))
                        .unwrap_or_default()
                ),
            ]);
        }
        if let Some(j) = g.joules_per_output_token {
            tab.push(["J per output token".to_string(), format!("{j:.4}")]);
        }
    }
    tab.push([
        "CPU energy".to_string(),
        match &t.cpu_energy {
            Some(c) => format!("{:.0} J", c.joules),
            None => t.sources.cpu_energy.clone(),
        },
    ]);
    tab
}

/// The load generator's own health: dispatch and send lag, CPU, connections.
pub fn generator(r: &RunReport) -> Table {
    let g = &r.generator;
    let title = format!(
        "Load generator: {:.2} of {:.0} cores, {}, {} connections, arrivals by {}",
        g.cpu_cores_used,
        g.cpu_cores_available,
        match (g.cpu_us_per_chunk, &g.cpu_per_chunk_note) {
            (Some(v), _) => format!("{v:.1} µs CPU per chunk"),
            (None, Some(n)) => format!("no per-chunk CPU figure ({n})"),
            (None, None) => "no per-chunk CPU figure".into(),
        },
        g.connections_opened,
        g.arrival_clock
    );
    let mut t = table(&["Generator", "P50", "P99", "Max"]).titled(&title);
    for (name, d) in [
        ("Dispatch lag (generator)", g.dispatch_lag_ms),
        ("Connection wait (server side)", g.connection_wait_ms),
        ("Send lag (total)", g.send_lag_ms),
    ] {
        let Some(d) = d else { continue };
        t.push([
            name.to_string(),
            fmt_ms(d.p50),
            fmt_ms(d.p99),
            fmt_ms(d.max),
        ]);
    }
    t.notes
        .push(format!("Client: {}", super::terminal::client_line(g)));
    if let Some(b) = g.timestamps.error_bound_ms {
        t.notes.push(format!(
            "Timestamp error bound (P99 socket wait): {} on TTFT and ± that on ITL, for {}",
            super::terminal::fmt_ms(b),
            g.timestamps.bound_applies_to
        ));
    }
    for n in &g.notes {
        t.notes.push(format!("! {n}"));
    }
    t
}
