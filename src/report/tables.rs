//! The full tables of a run, in the layouts of the draft's examples (Tables 1–6, 8–9), with
//! the user-experience, server-timing and generator tables beside them. One function per
//! table, each fitting 100 columns.

use super::terminal::{fmt_ms, fmt_rate, opt_ms, WIDTH};
use super::RunReport;
use crate::config::{Arrival, Endpoint, LoadPattern, RunConfig};
use crate::metrics::experience::Experience;
use crate::metrics::fluidity::FluidRate;
use crate::metrics::{Distribution, RunSummary};
use crate::record::run::WarmupReport;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use std::fmt::Write;

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_content_arrangement(ContentArrangement::Dynamic);
    t.set_width(WIDTH as u16);
    t.set_header(header.iter().map(Cell::new));
    t
}

fn right(t: &mut Table) {
    for i in 1..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
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

/// Every table of the run.
pub fn render(r: &RunReport) -> String {
    let s = &r.summary;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{}",
        super::terminal::wrap(
            &format!(
                "Tokens: {} ({}, option {}); ITL {}",
                r.tokenizer.name,
                r.tokenizer.source,
                r.tokenizer.counting_option,
                s.itl_method.description
            ),
            WIDTH,
            2
        )
    );
    ttft(s, &mut out);
    itl(s, &mut out);
    throughput(s, &mut out);
    latency(s, &mut out);
    server(s, &mut out);
    experience(&s.experience, &mut out);
    fairness(&s.experience, &mut out);
    telemetry(r, &mut out);
    generator(r, &mut out);
    out
}

fn ttft(s: &RunSummary, out: &mut String) {
    let mut t = table(&["Metric", "Value"]);
    t.add_row(vec![
        "Requests".to_string(),
        s.requests.completed.to_string(),
    ]);
    for (name, f) in PCTS {
        t.add_row(vec![format!("TTFT {name}"), opt_ms(s.ttft_ms, f)]);
    }
    right(&mut t);
    let _ = writeln!(out, "\nTime to first token (draft Table 1)\n{t}");
    if !s.ttft_by_input_tokens.is_empty() {
        let mut t = table(&["Input tokens", "n", "P50", "P95", "P99"]);
        for b in &s.ttft_by_input_tokens {
            t.add_row(vec![
                b.label.clone(),
                b.n.to_string(),
                fmt_ms(b.p50_ms),
                fmt_ms(b.p95_ms),
                fmt_ms(b.p99_ms),
            ]);
        }
        right(&mut t);
        let _ = writeln!(out, "\nTTFT by input length (draft Table 2)\n{t}");
    }
}

fn itl(s: &RunSummary, out: &mut String) {
    // Under option A the samples are gaps between chunks, not tokens: the title says so.
    let (title, short) = match s.itl_method.title() {
        "Time Between Chunks" => (
            "Time between chunks (draft Table 6 layout, option A)",
            "TBC",
        ),
        _ => ("Inter-token latency (draft Table 6)", "ITL"),
    };
    let mut t = table(&["Metric", "Value"]);
    t.add_row(vec![
        format!("{short} samples"),
        s.itl_ms
            .map(|d| d.n.to_string())
            .unwrap_or_else(|| "0".into()),
    ]);
    for (name, f) in PCTS.iter().take(5) {
        t.add_row(vec![format!("{short} {name}"), opt_ms(s.itl_ms, f)]);
    }
    t.add_row(vec![format!("{short} Mean"), opt_ms(s.itl_ms, |d| d.mean)]);
    t.add_row(vec![
        format!("{short} Std Dev"),
        opt_ms(s.itl_ms, |d| d.std),
    ]);
    t.add_row(vec![
        "P99/P50 Ratio".to_string(),
        s.itl_tail_ratio
            .map(|v| format!("{v:.2}"))
            .unwrap_or_else(|| "-".into()),
    ]);
    right(&mut t);
    let _ = writeln!(out, "\n{title}\n{t}");
    let _ = writeln!(
        out,
        "{}",
        super::terminal::wrap(&format!("Shape: {}", s.itl_shape.statement), WIDTH, 2)
    );
    let mut t = table(&["Per request", "P50", "P95", "P99"]);
    for (name, d) in [
        ("Jitter (ITL std)", s.jitter_ms),
        ("Max pause", s.max_pause_ms),
    ] {
        t.add_row(vec![
            name.to_string(),
            opt_ms(d, |d| d.p50),
            opt_ms(d, |d| d.p95),
            opt_ms(d, |d| d.p99),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "{t}");
}

fn throughput(s: &RunSummary, out: &mut String) {
    let mut t = table(&["Metric", "Value"]);
    t.add_row(vec![
        "Output throughput".into(),
        format!("{} tok/s", fmt_rate(s.output_tokens_per_s)),
    ]);
    if s.total_reasoning_tokens > 0 {
        t.add_row(vec![
            "  of which answer".into(),
            format!("{} tok/s", fmt_rate(s.answer_tokens_per_s)),
        ]);
    }
    t.add_row(vec![
        "Request throughput".into(),
        format!("{:.2} req/s", s.requests_per_s),
    ]);
    t.add_row(vec![
        "Input throughput".into(),
        format!("{} tok/s", fmt_rate(s.input_tokens_per_s)),
    ]);
    t.add_row(vec![
        "Steady-state output".into(),
        format!(
            "{} tok/s (first {:.1} s excluded)",
            fmt_rate(s.steady_state.output_tokens_per_s),
            s.steady_state.excluded_s
        ),
    ]);
    t.add_row(vec![
        "Success rate".into(),
        format!("{:.2} %", s.success_rate * 100.0),
    ]);
    right(&mut t);
    let _ = writeln!(out, "\nThroughput (draft Table 3)\n{t}");
}

fn latency(s: &RunSummary, out: &mut String) {
    let mut t = table(&["Metric", "P50", "P95", "P99"]);
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
        t.add_row(vec![
            name.to_string(),
            opt_ms(d, |d| d.p50),
            opt_ms(d, |d| d.p95),
            opt_ms(d, |d| d.p99),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "\nLatency (draft Table 4)\n{t}");
}

fn server(s: &RunSummary, out: &mut String) {
    let Some(sv) = &s.server else { return };
    let mut t = table(&["Client vs server", "P50", "P95", "P99"]);
    for (name, d) in [
        ("Client TTFT", s.ttft_ms),
        ("Server prompt time", sv.prompt_ms),
        ("TTFT - prompt (queue+transport)", sv.ttft_minus_prompt_ms),
        ("Client TPOT", s.tpot_ms),
        ("Server time per token", sv.server_tpot_ms),
    ] {
        t.add_row(vec![
            name.to_string(),
            opt_ms(d, |d| d.p50),
            opt_ms(d, |d| d.p95),
            opt_ms(d, |d| d.p99),
        ]);
    }
    if let Some(d) = sv.decode_rate_ratio {
        t.add_row(vec![
            "Decode rate client/server".to_string(),
            format!("{:.3}", d.p50),
            format!("{:.3}", d.p95),
            format!("{:.3}", d.p99),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "\nServer-reported timings (llama.cpp `timings`)\n{t}");
}

fn experience(e: &Experience, out: &mut String) {
    let mut t = table(&["User experience", "Value", "Parameters"]);
    t.add_row(vec![
        "User idle latency P50/P95/P99".to_string(),
        format!(
            "{} / {} / {}",
            opt_ms(e.user_idle_ms, |d| d.p50),
            opt_ms(e.user_idle_ms, |d| d.p95),
            opt_ms(e.user_idle_ms, |d| d.p99)
        ),
        format!("deadlines: {}", e.deadlines),
    ]);
    t.add_row(vec![
        "Requests meeting every deadline".to_string(),
        format!("{:.1} %", e.deadline_attainment * 100.0),
        String::new(),
    ]);
    if let Some(sg) = &e.smooth_goodput {
        t.add_row(vec![
            "Smooth goodput".to_string(),
            format!(
                "{} tok/s (answer tokens in window: {} tok/s)",
                fmt_rate(sg.value),
                fmt_rate(sg.throughput_tokens_per_s)
            ),
            format!(
                "α = {}, f = {:?}, T = {:.1} s{}",
                sg.alpha,
                sg.f,
                sg.window.duration_s,
                if sg.window.outcome_independent {
                    ""
                } else {
                    " (closed loop: depends on outcomes)"
                }
            )
            .to_lowercase(),
        ]);
    }
    match &e.fluidity {
        Some(f) => {
            t.add_row(vec![
                "Fluidity-index P1/P5/P50/mean".to_string(),
                format!("{:.3} / {:.3} / {:.3} / {:.3}", f.p1, f.p5, f.p50, f.mean),
                format!(
                    "D_d {} ms, D_p = isolated prefill + {} ms",
                    f.tbt_deadline_ms, f.slack_ms
                ),
            ]);
            t.add_row(vec![
                format!("Requests with fluidity >= {}", f.threshold),
                format!("{:.1} %", f.share_meeting * 100.0),
                f.prefill_curve_source.clone(),
            ]);
        }
        None => {
            t.add_row(vec![
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
    t.add_row(vec!["Fluid token generation rate".to_string(), rate, why]);
    let r = |v: Option<f64>| {
        v.map(|v| format!("{} tok/s", fmt_rate(v)))
            .unwrap_or_else(|| "-".into())
    };
    t.add_row(vec![
        "1 / mean TPOT".to_string(),
        r(e.token_rates.inverse_mean_tpot_per_s),
        "what TPOT suggests".to_string(),
    ]);
    t.add_row(vec![
        "1 / P99 TBT".to_string(),
        r(e.token_rates.inverse_p99_tbt_per_s),
        "what tail TBT suggests".to_string(),
    ]);
    let _ = writeln!(
        out,
        "\nUser experience (Etalon's fluidity; smooth goodput of \"Revisiting SLOs and System\nLevel Metrics in LLM Serving\")\n{t}"
    );
    if let Some(f) = &e.fluidity {
        let mut t = table(&["Target TBT (D_d)", "Requests fluid"]);
        for (dd, share) in &f.curve_vs_tbt {
            t.add_row(vec![fmt_ms(*dd), format!("{:.1} %", share * 100.0)]);
        }
        right(&mut t);
        let _ = writeln!(out, "{t}");
    }
}

fn fairness(e: &Experience, out: &mut String) {
    let Some(fair) = &e.fairness else { return };
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
    ]);
    for (name, c) in &fair.classes {
        let o = |v: Option<f64>| v.map(fmt_ms).unwrap_or_else(|| "-".into());
        t.add_row(vec![
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
    right(&mut t);
    let _ = writeln!(
        out,
        "\nFairness (draft Tables 8 and 9): Jain's index {:.3}\n{t}",
        fair.jain_index
    );
}

fn telemetry(r: &RunReport, out: &mut String) {
    let t = &r.telemetry;
    let mut tab = table(&["Telemetry", "Value"]);
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
    tab.add_row(vec![
        "Server metrics".to_string(),
        t.sources.server_metrics.clone(),
    ]);
    if let Some(sv) = &t.server {
        tab.add_row(vec![
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
        tab.add_row(vec![
            "Output tokens".to_string(),
            pair(&sv.comparison.output_tokens),
        ]);
        tab.add_row(vec![
            "Requests finished".to_string(),
            pair(&sv.comparison.requests_finished),
        ]);
        if let Some(p) = &sv.comparison.mean_ttft_ms {
            tab.add_row(vec!["Mean TTFT, ms".to_string(), pair(p)]);
        }
        if let Some(q) = &sv.queue {
            tab.add_row(vec![
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
        tab.add_row(vec!["Preemptions".to_string(), o(d.preemptions)]);
        tab.add_row(vec![
            "Prefix-cache hit rate".to_string(),
            d.prefix_cache_hit_rate
                .map(|v| format!("{:.1} %", v * 100.0))
                .unwrap_or_else(|| "-".into()),
        ]);
        if let Some(kv) = sv.kv_cache_usage_max {
            tab.add_row(vec![
                "KV cache usage, max".to_string(),
                format!("{:.1} %", kv * 100.0),
            ]);
        }
    }
    tab.add_row(vec!["GPUs".to_string(), t.sources.gpu.clone()]);
    if let Some(g) = &t.gpu {
        for x in &g.gpus {
            tab.add_row(vec![
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
            tab.add_row(vec![
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
            tab.add_row(vec!["J per output token".to_string(), format!("{j:.4}")]);
        }
    }
    tab.add_row(vec![
        "CPU energy".to_string(),
        match &t.cpu_energy {
            Some(c) => format!("{:.0} J", c.joules),
            None => t.sources.cpu_energy.clone(),
        },
    ]);
    let _ = writeln!(out, "\nTelemetry over the measurement window\n{tab}");
}

fn generator(r: &RunReport, out: &mut String) {
    let g = &r.generator;
    let mut t = table(&["Generator", "P50", "P99", "Max"]);
    for (name, d) in [
        ("Dispatch lag (generator)", g.dispatch_lag_ms),
        ("Connection wait (server side)", g.connection_wait_ms),
        ("Send lag (total)", g.send_lag_ms),
    ] {
        let Some(d) = d else { continue };
        t.add_row(vec![
            name.to_string(),
            fmt_ms(d.p50),
            fmt_ms(d.p99),
            fmt_ms(d.max),
        ]);
    }
    right(&mut t);
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
    let _ = writeln!(out, "\n{}\n{t}", super::terminal::wrap(&title, WIDTH, 2));
    for n in &g.notes {
        let _ = writeln!(out, "  ! {}", super::terminal::wrap(n, WIDTH - 4, 4));
    }
}
