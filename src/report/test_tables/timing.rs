//! The tables of the tests that time requests: TTFT (draft Tables 1 and 2), throughput
//! (Tables 3 and 4) and ITL by load (Table 6).

use super::{ms, result, table, Parts};
use crate::procedure::itl::ItlResult;
use crate::procedure::level::rate;
use crate::procedure::report::TestReport;
use crate::procedure::throughput::{thousands, ThroughputResult};
use crate::procedure::ttft::TtftResult;
use crate::report::terminal::fmt_ms;

pub(super) fn ttft(r: &TestReport, out: &mut Parts) {
    let Some(x) = result::<TtftResult>(r) else {
        return;
    };
    if let Some(d) = x.ttft_ms {
        let mut t = table(&["Metric", "Value"]);
        t.push(vec!["Requests".to_string(), d.n.to_string()]);
        for (name, v) in [
            ("TTFT P50", d.p50),
            ("TTFT P90", d.p90),
            ("TTFT P95", d.p95),
            ("TTFT P99", d.p99),
            ("TTFT P99.9", d.p999),
            ("TTFT Mean", d.mean),
            ("TTFT Min", d.min),
            ("TTFT Max", d.max),
        ] {
            t.push(vec![name.to_string(), fmt_ms(v)]);
        }
        out.table(t.titled("Table 1: TTFT results"));
    }
    if !x.by_input_tokens.is_empty() {
        let mut t = table(&["Input Tokens", "n", "P50", "P95", "P99"]);
        for b in &x.by_input_tokens {
            t.push(vec![
                b.label.clone(),
                b.n.to_string(),
                fmt_ms(b.p50_ms),
                fmt_ms(b.p95_ms),
                fmt_ms(b.p99_ms),
            ]);
        }
        out.table(t.titled("Table 2: TTFT by input length"));
    }
    if let Some(p) = x.prefill_ms {
        out.text(format!("Prefill (server prompt time): P50 {}, P99 {}; queueing and transport (TTFT − prefill): P50 {}",
            fmt_ms(p.p50),
            fmt_ms(p.p99),
            ms(x.queue_and_transport_ms.map(|d| d.p50))));
    }
}

pub(super) fn throughput(r: &TestReport, out: &mut Parts) {
    let Some(x) = result::<ThroughputResult>(r) else {
        return;
    };
    let mut t = table(&["Metric", "Value"]);
    let tok = |v: Option<f64>| v.map(|v| format!("{} tok/s", thousands(v)));
    let rows = [
        ("Max Output Throughput", tok(x.max_output_tokens_per_s)),
        (
            "Max Request Throughput",
            x.max_requests_per_s.map(|v| format!("{} req/s", rate(v))),
        ),
        ("Max Input Throughput", tok(x.max_input_tokens_per_s)),
        (
            "Sustainable Load",
            x.sustainable_rate_per_s
                .map(|v| format!("{} req/s", rate(v)))
                .or(x
                    .sustainable_concurrency
                    .map(|c| format!("concurrency {c}"))),
        ),
        (
            "Tokens per GPU-second",
            x.tokens_per_gpu_s
                .map(|v| format!("{} tok/s/GPU", thousands(v)))
                .or(Some("- (give --gpus N)".into())),
        ),
    ];
    for (k, v) in rows {
        t.push(vec![k.to_string(), v.unwrap_or_else(|| "-".into())]);
    }
    out.table(t.titled("Table 3: Throughput summary"));
    if let Some(l) = x.sustainable_level.and_then(|i| r.levels.get(i)) {
        let s = &l.summary;
        let mut t = table(&["Metric", "P50", "P95", "P99"]);
        for (name, d) in [
            ("TTFT", s.ttft_ms),
            ("TPOT", s.tpot_ms),
            ("End-to-End", s.e2e_ms),
        ] {
            t.push(vec![
                name.to_string(),
                ms(d.map(|d| d.p50)),
                ms(d.map(|d| d.p95)),
                ms(d.map(|d| d.p99)),
            ]);
        }
        out.table(t.titled(&format!(
            "Table 4: Latency at maximum throughput ({})",
            l.label
        )));
    }
    out.text(format!("Search: {}", x.search));
}

pub(super) fn itl(r: &TestReport, out: &mut Parts) {
    let Some(x) = result::<ItlResult>(r) else {
        return;
    };
    if x.levels.is_empty() {
        return;
    }
    let mut header = vec!["Metric".to_string()];
    header.extend(x.levels.iter().map(|l| format!("{:.0} %", l.share * 100.0)));
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = table(&h);
    type Pick = fn(&crate::stats::Distribution) -> f64;
    let dist_rows: [(&str, Pick); 7] = [
        ("ITL P50", |d| d.p50),
        ("ITL P90", |d| d.p90),
        ("ITL P95", |d| d.p95),
        ("ITL P99", |d| d.p99),
        ("ITL P99.9", |d| d.p999),
        ("ITL Mean", |d| d.mean),
        ("ITL Std Dev", |d| d.std),
    ];
    let mut row = vec!["ITL Samples".to_string()];
    row.extend(
        x.levels
            .iter()
            .map(|l| l.itl_ms.map_or(0, |d| d.n).to_string()),
    );
    t.push(row);
    for (name, f) in dist_rows {
        let mut row = vec![name.to_string()];
        row.extend(x.levels.iter().map(|l| ms(l.itl_ms.map(|d| f(&d)))));
        t.push(row);
    }
    let mut row = vec!["P99/P50 Ratio".to_string()];
    row.extend(x.levels.iter().map(|l| {
        l.p99_over_p50
            .map(|v| format!("{v:.2}"))
            .unwrap_or_else(|| "-".into())
    }));
    t.push(row);
    for (name, pick) in [
        ("Jitter P50", 0usize),
        ("Jitter P99", 1),
        ("Max pause P50", 2),
        ("Max pause P99", 3),
    ] {
        let mut row = vec![name.to_string()];
        row.extend(x.levels.iter().map(|l| match pick {
            0 => ms(l.jitter_ms.map(|d| d.p50)),
            1 => ms(l.jitter_ms.map(|d| d.p99)),
            2 => ms(l.max_pause_ms.map(|d| d.p50)),
            _ => ms(l.max_pause_ms.map(|d| d.p99)),
        }));
        t.push(row);
    }
    out.table(t.titled("Table 6: ITL by load (share of capacity)"));
    for l in &x.levels {
        out.text(format!("{:.0} %: {}", l.share * 100.0, l.shape));
    }
    out.text(format!("Measurement: {}", x.measurement_method));
}
