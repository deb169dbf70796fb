//! The tables of request timing: TTFT (draft Tables 1 and 2), ITL (Table 6), throughput
//! (Table 3), latency side by side (Table 4), and the server's own timings beside the
//! client's.

use super::table;
use crate::metrics::summary::Bounded;
use crate::metrics::RunSummary;
use crate::report::bounded::{legend, opt_ms_bounded};
use crate::report::page::Table;
use crate::report::terminal::{fmt_ms, fmt_rate, opt_ms};
use crate::stats::Distribution;

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

/// TTFT percentiles (draft Table 1) and, when the workload had them, TTFT by input length
/// (Table 2).
pub fn ttft(s: &RunSummary) -> Vec<Table> {
    let mut t = table(&["Metric", "Value"]).titled("Time to first token (draft Table 1)");
    t.push(["Requests".to_string(), s.requests.completed.to_string()]);
    for (name, f) in PCTS {
        t.push([
            format!("TTFT {name}"),
            bounded_or(s, s.ttft_ms, Bounded::Ttft, name, f),
        ]);
    }
    // The brackets' one line of explanation, once per report: under the first table that
    // has them, when the run has intervals at all (runs from before them do not).
    let t = match s.percentile_bounds {
        Some(b) => t.note(&legend(Some(b))),
        None => t,
    };
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
        t.push([
            format!("{short} {name}"),
            bounded_or(s, s.itl_ms, Bounded::Itl, name, *f),
        ]);
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
    // Embeddings and rerank answer items, not tokens: no output figure is a zero to read.
    let whole = s.total_items > 0;
    if whole {
        t.push([
            "Item throughput".into(),
            format!("{} items/s", fmt_rate(s.items_per_s)),
        ]);
        t.push([
            "Output throughput".to_string(),
            "n/a: non-generative endpoint".to_string(),
        ]);
    } else {
        t.push([
            "Output throughput".into(),
            format!("{} tok/s", fmt_rate(s.output_tokens_per_s)),
        ]);
    }
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
    if !whole {
        t.push([
            "Steady-state output".into(),
            format!(
                "{} tok/s (first {:.1} s excluded)",
                fmt_rate(s.steady_state.output_tokens_per_s),
                s.steady_state.excluded_s
            ),
        ]);
    }
    t.push([
        "Success rate".into(),
        format!("{:.2} %", s.success_rate * 100.0),
    ]);
    t
}

/// Latency percentiles side by side (draft Table 4).
pub fn latency(s: &RunSummary) -> Table {
    let mut t = table(&["Metric", "P50", "P95", "P99"]).titled("Latency (draft Table 4)");
    for (name, d, bounds) in [
        ("TTFT", s.ttft_ms, Some(Bounded::Ttft)),
        ("TPOT", s.tpot_ms, Some(Bounded::Tpot)),
        ("End-to-End", s.e2e_ms, Some(Bounded::E2e)),
        ("TTFT from schedule", s.ttft_from_schedule_ms, None),
        ("First reasoning token", s.time_to_first_reasoning_ms, None),
        ("Connection wait", s.connect_ms, None),
    ] {
        if s.total_items > 0 && matches!(name, "TTFT" | "TPOT") {
            let na = "n/a: non-generative endpoint".to_string();
            t.push([name.to_string(), na, "-".into(), "-".into()]);
            continue;
        }
        if d.is_none() && name != "TTFT" && name != "TPOT" && name != "End-to-End" {
            continue;
        }
        let at = |p: f64| match bounds {
            Some(metric) => opt_ms_bounded(d, s.percentile_bounds, metric, p),
            None => opt_ms(d, |d| d.at(p)),
        };
        t.push([name.to_string(), at(50.0), at(95.0), at(99.0)]);
    }
    t
}

/// A row of Table 1 or 6: the percentile with its interval, or the plain figure (mean, min,
/// max).
fn bounded_or(
    s: &RunSummary,
    d: Option<Distribution>,
    metric: Bounded,
    name: &str,
    f: Pick,
) -> String {
    let percentile = match name {
        "P50" => 50.0,
        "P90" => 90.0,
        "P95" => 95.0,
        "P99" => 99.0,
        "P99.9" => 99.9,
        _ => return opt_ms(d, f),
    };
    opt_ms_bounded(d, s.percentile_bounds, metric, percentile)
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
