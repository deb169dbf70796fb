//! A test's report in the terminal: the one-line answer first, then the draft's tables for
//! the test (Tables 1-14 layouts), every level in one table, and compliance with what was
//! not met. Within 100 columns, like the run report.

use super::capacity::CapacityResult;
use super::compliance::Strength;
use super::curve::CurveResult;
use super::fairness::FairnessResult;
use super::guardrails::GuardrailResult;
use super::itl::ItlResult;
use super::level::rate;
use super::long_context::LongContextResult;
use super::memory::MemoryResult;
use super::prefix_cache::PrefixCacheResult;
use super::report::{TestReport, TestStatus};
use super::throughput::{thousands, ThroughputResult};
use super::ttft::TtftResult;
use super::TestName;
use crate::report::terminal::{fmt_ms, wrap, WIDTH};
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use serde::de::DeserializeOwned;
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

fn result<T: DeserializeOwned>(r: &TestReport) -> Option<T> {
    serde_json::from_value(r.result.clone()).ok()
}

/// The whole test report.
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
    out.push('\n');
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
    levels(r, &mut out);
    compliance(r, &mut out);
    out
}

fn levels(r: &TestReport, out: &mut String) {
    let mut t = table(&[
        "#", "Level", "Role", "Verdict", "tok/s", "req/s", "P99 TTFT", "Queue",
    ]);
    for l in &r.levels {
        t.add_row(vec![
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
    right(&mut t);
    let _ = writeln!(out, "Levels (each a run folder under levels/)\n{t}\n");
    for l in r.levels.iter().filter(|l| l.signals.any()) {
        let _ = writeln!(
            out,
            "{}",
            wrap(
                &format!(
                    "level {}: saturation signal: {}",
                    l.index + 1,
                    l.signals.fired.join("; ")
                ),
                WIDTH,
                2
            )
        );
    }
}

fn compliance(r: &TestReport, out: &mut String) {
    let c = &r.compliance;
    let _ = writeln!(
        out,
        "\nCompliance with draft {}: {} ({} of {} requirements met)",
        r.section,
        c.verdict.words(),
        c.requirements.iter().filter(|x| x.met).count(),
        c.requirements.len()
    );
    for req in c.unmet() {
        let word = match req.strength {
            Strength::Must => "MUST",
            Strength::Should => "SHOULD",
        };
        let _ = writeln!(
            out,
            "{}",
            wrap(
                &format!(
                    "  not met: {word} ({}) {}: {}",
                    req.section, req.text, req.detail
                ),
                WIDTH,
                4
            )
        );
    }
}

fn ttft(r: &TestReport, out: &mut String) {
    let Some(x) = result::<TtftResult>(r) else {
        return;
    };
    if let Some(d) = x.ttft_ms {
        let mut t = table(&["Metric", "Value"]);
        t.add_row(vec!["Requests".to_string(), d.n.to_string()]);
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
            t.add_row(vec![name.to_string(), fmt_ms(v)]);
        }
        right(&mut t);
        let _ = writeln!(out, "Table 1: TTFT results\n{t}\n");
    }
    if !x.by_input_tokens.is_empty() {
        let mut t = table(&["Input Tokens", "n", "P50", "P95", "P99"]);
        for b in &x.by_input_tokens {
            t.add_row(vec![
                b.label.clone(),
                b.n.to_string(),
                fmt_ms(b.p50_ms),
                fmt_ms(b.p95_ms),
                fmt_ms(b.p99_ms),
            ]);
        }
        right(&mut t);
        let _ = writeln!(out, "Table 2: TTFT by input length\n{t}\n");
    }
    if let Some(p) = x.prefill_ms {
        let _ = writeln!(
            out,
            "Prefill (server prompt time): P50 {}, P99 {}; queueing and transport (TTFT − prefill): P50 {}\n",
            fmt_ms(p.p50),
            fmt_ms(p.p99),
            ms(x.queue_and_transport_ms.map(|d| d.p50))
        );
    }
}

fn throughput(r: &TestReport, out: &mut String) {
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
        t.add_row(vec![k.to_string(), v.unwrap_or_else(|| "-".into())]);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 3: Throughput summary\n{t}\n");
    if let Some(l) = x.sustainable_level.and_then(|i| r.levels.get(i)) {
        let s = &l.summary;
        let mut t = table(&["Metric", "P50", "P95", "P99"]);
        for (name, d) in [
            ("TTFT", s.ttft_ms),
            ("TPOT", s.tpot_ms),
            ("End-to-End", s.e2e_ms),
        ] {
            t.add_row(vec![
                name.to_string(),
                ms(d.map(|d| d.p50)),
                ms(d.map(|d| d.p95)),
                ms(d.map(|d| d.p99)),
            ]);
        }
        right(&mut t);
        let _ = writeln!(
            out,
            "Table 4: Latency at maximum throughput ({})\n{t}\n",
            l.label
        );
    }
    let _ = writeln!(
        out,
        "{}\n",
        wrap(&format!("Search: {}", x.search), WIDTH, 2)
    );
}

fn curve(r: &TestReport, out: &mut String) {
    let Some(x) = result::<CurveResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Offered (r/s)",
        "Achieved (tok/s)",
        "TTFT P50",
        "TTFT P99",
        "TPOT P50",
        "TPOT P99",
        "Success",
        "Queue",
    ]);
    for p in &x.points {
        t.add_row(vec![
            rate(p.offered_rate_per_s),
            format!("{:.0}", p.achieved_tokens_per_s),
            ms(p.ttft_p50_ms),
            ms(p.ttft_p99_ms),
            ms(p.tpot_p50_ms),
            ms(p.tpot_p99_ms),
            pct(p.success_rate),
            p.queue.clone(),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 5: Throughput-latency\n{t}");
    let at = |v: Option<f64>, none: &str| {
        v.map(|v| format!("{} req/s", rate(v)))
            .unwrap_or_else(|| none.into())
    };
    let _ = writeln!(
        out,
        "Knee point: {} (TTFT P99 exceeds 2× the minimum)",
        at(x.knee_rate_per_s, "none")
    );
    let _ = writeln!(
        out,
        "Saturation point: {} (achieved throughput falls beyond its interval)",
        at(x.saturation_rate_per_s, "none")
    );
    let _ = writeln!(
        out,
        "Optimal operating point: {} ({})\n",
        at(x.optimal_rate_per_s, "none"),
        match x.optimal_basis.as_deref() {
            Some("slo") => "highest throughput meeting the SLO",
            _ => "no SLO given: highest throughput below the knee",
        }
    );
}

fn itl(r: &TestReport, out: &mut String) {
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
    type Pick = fn(&crate::metrics::Distribution) -> f64;
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
    t.add_row(row);
    for (name, f) in dist_rows {
        let mut row = vec![name.to_string()];
        row.extend(x.levels.iter().map(|l| ms(l.itl_ms.map(|d| f(&d)))));
        t.add_row(row);
    }
    let mut row = vec!["P99/P50 Ratio".to_string()];
    row.extend(x.levels.iter().map(|l| {
        l.p99_over_p50
            .map(|v| format!("{v:.2}"))
            .unwrap_or_else(|| "-".into())
    }));
    t.add_row(row);
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
        t.add_row(row);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 6: ITL by load (share of capacity)\n{t}");
    for l in &x.levels {
        let _ = writeln!(
            out,
            "{}",
            wrap(&format!("{:.0} %: {}", l.share * 100.0, l.shape), WIDTH, 2)
        );
    }
    let _ = writeln!(
        out,
        "{}\n",
        wrap(&format!("Measurement: {}", x.measurement_method), WIDTH, 2)
    );
}

fn capacity(r: &TestReport, out: &mut String) {
    let Some(x) = result::<CapacityResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Concurrency",
        "Completion",
        "TTFT P99",
        "TPOT P99",
        "Errors",
        "Status",
    ]);
    for row in &x.rows {
        t.add_row(vec![
            row.concurrency.to_string(),
            pct(row.completion),
            ms(row.ttft_p99_ms),
            ms(row.tpot_p99_ms),
            row.errors.to_string(),
            row.status.clone(),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 7: Capacity search\n{t}");
    let _ = writeln!(
        out,
        "Maximum concurrent requests meeting criteria: {}",
        x.max_concurrency
            .map(|c| c.to_string())
            .unwrap_or_else(|| "none".into())
    );
    if let (Some(t), Some(k)) = (x.achieved_output_tokens_per_s, x.tokens_in_flight) {
        let _ = writeln!(
            out,
            "At the maximum: {} tok/s, about {} tokens in flight",
            thousands(t),
            thousands(k)
        );
    }
    let _ = writeln!(
        out,
        "{}\n",
        wrap(&format!("Criteria: {}", x.criteria), WIDTH, 2)
    );
}

fn fairness(r: &TestReport, out: &mut String) {
    let Some(x) = result::<FairnessResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Class", "Count", "TTFT P50", "TTFT P99", "TPOT P50", "TPOT P99",
    ]);
    for (name, c) in &x.classes {
        t.add_row(vec![
            name.clone(),
            c.count.to_string(),
            ms(c.ttft_p50_ms),
            ms(c.ttft_p99_ms),
            ms(c.tpot_p50_ms),
            ms(c.tpot_p99_ms),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 8: Per-class results (mixed run)\n{t}\n");
    let mut t = table(&["Metric", "Value"]);
    if let Some(j) = x.jain_index {
        t.add_row(vec!["Jain's Fairness Index".to_string(), format!("{j:.3}")]);
    }
    for (name, c) in &x.classes {
        t.add_row(vec![format!("{name} starvation"), pct(c.starvation_rate)]);
        if let Some(i) = c.latency_inflation_p50 {
            t.add_row(vec![
                format!("{name} TTFT inflation P50"),
                format!("{i:.2}×"),
            ]);
        }
        if let Some(i) = c.latency_inflation_p99 {
            t.add_row(vec![
                format!("{name} TTFT inflation P99"),
                format!("{i:.2}×"),
            ]);
        }
    }
    right(&mut t);
    let _ = writeln!(out, "Table 9: Fairness metrics\n{t}\n");
}

fn prefix_cache(r: &TestReport, out: &mut String) {
    let Some(x) = result::<PrefixCacheResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Configuration",
        "TTFT P50",
        "TTFT P95",
        "TTFT P99",
        "tok/s",
        "Cached",
    ]);
    for row in &x.rows {
        t.add_row(vec![
            row.configuration.clone(),
            ms(row.ttft_p50_ms),
            ms(row.ttft_p95_ms),
            ms(row.ttft_p99_ms),
            format!("{:.0}", row.output_tokens_per_s),
            row.hit_rate
                .or(row.server_hit_rate)
                .map(pct)
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 10: Cache effectiveness ({})\n{t}", x.mode);
    if let Some(v) = x.ttft_reduction {
        let _ = writeln!(out, "TTFT reduction (P50, warm): {:.1} %", v * 100.0);
    }
    if let Some(v) = x.throughput_improvement {
        let _ = writeln!(out, "Throughput improvement: {:+.1} %", v * 100.0);
    }
    out.push('\n');
}

fn memory(r: &TestReport, out: &mut String) {
    let Some(x) = result::<MemoryResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Oversub Level",
        "Concurrency",
        "Complete",
        "Preempt",
        "Fail Rate",
        "TTFT P99",
    ]);
    for row in &x.levels {
        t.add_row(vec![
            format!("{:.0}%", row.share * 100.0),
            row.concurrency.to_string(),
            pct(row.completion),
            row.preemptions_per_request
                .map(|p| format!("{:.2}/req", p))
                .unwrap_or_else(|| "not measured".into()),
            pct(row.failure_rate),
            ms(row.ttft_p99_ms),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 11: Memory pressure degradation\n{t}");
    let _ = writeln!(
        out,
        "{}\n",
        wrap(&format!("Preemptions: {}", x.preemption_source), WIDTH, 2)
    );
}

fn long_context(r: &TestReport, out: &mut String) {
    let Some(x) = result::<LongContextResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Context (tokens)",
        "TTFT Mean",
        "TTFT P95",
        "ms/1K tokens",
        "Requests",
    ]);
    for row in &x.rows {
        t.add_row(vec![
            row.context_tokens.to_string(),
            ms(row.ttft_mean_ms),
            ms(row.ttft_p95_ms),
            row.ms_per_1k_tokens
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "-".into()),
            row.requests.to_string(),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 12: Long context scaling\n{t}");
    if let Some(best) = &x.best_fit {
        let _ = writeln!(
            out,
            "Best fit: {} (R² = {:.4}), exponent k = {}, {}",
            best.replace('_', " "),
            x.r2.unwrap_or(f64::NAN),
            x.scaling_exponent
                .map(|k| format!("{k:.2}"))
                .unwrap_or_else(|| "-".into()),
            x.us_per_input_token
                .map(|u| format!("~{u:.0} µs per input token"))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(
        out,
        "{}\n",
        wrap(&format!("Longest length: {}", x.context_limit), WIDTH, 2)
    );
}

fn guardrails(r: &TestReport, out: &mut String) {
    let Some(x) = result::<GuardrailResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Configuration",
        "Load",
        "TTFT P50",
        "TTFT P99",
        "E2E P50",
        "E2E P99",
    ]);
    for row in &x.rows {
        t.add_row(vec![
            row.configuration.clone(),
            format!("{:.0} %", row.share * 100.0),
            ms(row.ttft_p50_ms),
            ms(row.ttft_p99_ms),
            ms(row.e2e_p50_ms),
            ms(row.e2e_p99_ms),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 13: Guardrail overhead\n{t}\n");
    let mut t = table(&["Configuration", "Max Throughput", "Reduction"]);
    for c in &x.capacity {
        t.add_row(vec![
            c.configuration.clone(),
            format!("{} tok/s", thousands(c.max_output_tokens_per_s)),
            c.reduction
                .map(|v| format!("{:+.1}%", v * 100.0))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "Table 14: Throughput impact\n{t}\n");
}
