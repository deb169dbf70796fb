//! The tables about the machines rather than the requests: the server's metrics, GPUs
//! and energy over the measurement window, and the load generator's own health.

use super::table;
use crate::artifacts::RunReport;
use crate::report::page::Table;
use crate::report::terminal::{client_line, fmt_ms};
use crate::telemetry::summary::{GpuWindow, Pair, ServerWindow};

/// The server's metrics, GPUs and energy over the measurement window.
pub fn telemetry(r: &RunReport) -> Table {
    let t = &r.telemetry;
    let mut tab = table(&["Telemetry", "Value"])
        .text()
        .titled("Telemetry over the measurement window");
    tab.push([
        "Server metrics".to_string(),
        t.sources.server_metrics.clone(),
    ]);
    if let Some(sv) = &t.server {
        server_rows(&mut tab, sv);
    }
    tab.push(["GPUs".to_string(), t.sources.gpu.clone()]);
    if let Some(g) = &t.gpu {
        gpu_rows(&mut tab, g);
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

/// A figure as the client counted it, as the server reported it, and how far apart.
fn pair(p: &Pair) -> String {
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
}

/// The rows from the server's own metrics: scrapes, the client–server comparison, the
/// waiting queue, preemptions and caches.
fn server_rows(tab: &mut Table, sv: &ServerWindow) {
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

/// One row per GPU, then the energy.
fn gpu_rows(tab: &mut Table, g: &GpuWindow) {
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
    t.notes.push(format!("Client: {}", client_line(g)));
    if let Some(b) = g.timestamps.error_bound_ms {
        t.notes.push(format!(
            "Timestamp error bound (P99 socket wait): {} on TTFT and ± that on ITL, for {}",
            fmt_ms(b),
            g.timestamps.bound_applies_to
        ));
    }
    for n in &g.notes {
        t.notes.push(format!("! {n}"));
    }
    t
}
