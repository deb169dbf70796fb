//! Terminal tables in the layout of the draft's examples (Tables 1–6).

use super::RunReport;
use crate::metrics::Distribution;
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};
use std::fmt::Write;

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
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

/// A duration in ms, with a precision that suits its size.
pub fn fmt_ms(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
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

fn opt_ms(d: Option<Distribution>, f: impl Fn(&Distribution) -> f64) -> String {
    d.map(|d| fmt_ms(f(&d))).unwrap_or_else(|| "-".into())
}

/// Renders the whole end-of-run report.
pub fn render(r: &RunReport) -> String {
    let s = &r.summary;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n=== servebench: {} ===",
        if r.interrupted {
            "run interrupted (partial results)"
        } else {
            "run complete"
        }
    );
    let _ = writeln!(
        out,
        "Target: {}{}  model {}  ({})",
        r.target_url,
        if r.builtin_simulator {
            " (built-in simulator)"
        } else {
            ""
        },
        r.model,
        r.endpoint
    );
    let _ = writeln!(out, "Workload: {}  seed {}", r.workload, r.seed);
    let _ = writeln!(out, "Load: {}", r.load);
    let _ = writeln!(
        out,
        "Requests: {} measured ({} completed, {} failed) over {:.1} s; warm-up: {}",
        s.requests.total,
        s.requests.completed,
        s.requests.failed,
        s.window.duration_s,
        r.warmup.policy
    );
    let _ = writeln!(
        out,
        "Tokens: {} ({}, option {}); ITL option {}",
        r.tokenizer.name, r.tokenizer.source, r.tokenizer.counting_option, s.itl_method.description
    );

    // Table 1: TTFT.
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

    // Table 6: ITL, plus per-request jitter and pauses (5.4.4.2).
    let mut t = table(&["Metric", "Value"]);
    t.add_row(vec![
        "ITL samples".to_string(),
        s.itl_ms
            .map(|d| d.n.to_string())
            .unwrap_or_else(|| "0".into()),
    ]);
    for (name, f) in PCTS.iter().take(5) {
        t.add_row(vec![format!("ITL {name}"), opt_ms(s.itl_ms, f)]);
    }
    t.add_row(vec!["ITL Mean".to_string(), opt_ms(s.itl_ms, |d| d.mean)]);
    t.add_row(vec!["ITL Std Dev".to_string(), opt_ms(s.itl_ms, |d| d.std)]);
    t.add_row(vec![
        "P99/P50 Ratio".to_string(),
        s.itl_tail_ratio
            .map(|v| format!("{v:.2}"))
            .unwrap_or_else(|| "-".into()),
    ]);
    right(&mut t);
    let _ = writeln!(out, "\nInter-token latency (draft Table 6)\n{t}");
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

    // Table 3: throughput.
    let mut t = table(&["Metric", "Value"]);
    t.add_row(vec![
        "Output throughput".into(),
        format!("{:.1} tok/s", s.output_tokens_per_s),
    ]);
    t.add_row(vec![
        "Request throughput".into(),
        format!("{:.2} req/s", s.requests_per_s),
    ]);
    t.add_row(vec![
        "Input throughput".into(),
        format!("{:.1} tok/s", s.input_tokens_per_s),
    ]);
    t.add_row(vec![
        "Steady-state output".into(),
        format!(
            "{:.1} tok/s (first {:.1} s excluded)",
            s.steady_state.output_tokens_per_s, s.steady_state.excluded_s
        ),
    ]);
    t.add_row(vec![
        "Success rate".into(),
        format!("{:.2} %", s.success_rate * 100.0),
    ]);
    right(&mut t);
    let _ = writeln!(out, "\nThroughput (draft Table 3)\n{t}");

    // Table 4: latency.
    let mut t = table(&["Metric", "P50", "P95", "P99"]);
    for (name, d) in [
        ("TTFT", s.ttft_ms),
        ("TPOT", s.tpot_ms),
        ("End-to-End", s.e2e_ms),
    ] {
        t.add_row(vec![
            name.to_string(),
            opt_ms(d, |d| d.p50),
            opt_ms(d, |d| d.p95),
            opt_ms(d, |d| d.p99),
        ]);
    }
    if s.ttft_from_schedule_ms.is_some() {
        t.add_row(vec![
            "TTFT from schedule".to_string(),
            opt_ms(s.ttft_from_schedule_ms, |d| d.p50),
            opt_ms(s.ttft_from_schedule_ms, |d| d.p95),
            opt_ms(s.ttft_from_schedule_ms, |d| d.p99),
        ]);
    }
    right(&mut t);
    let _ = writeln!(out, "\nLatency (draft Table 4)\n{t}");

    if let Some(sv) = &s.server {
        let mut t = table(&["Client vs server", "P50", "P95", "P99"]);
        for (name, d) in [
            ("Client TTFT", s.ttft_ms),
            ("Server prompt time", sv.prompt_ms),
            ("TTFT - prompt (queue + transport)", sv.ttft_minus_prompt_ms),
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

    if let Some(g) = &s.goodput {
        let _ = writeln!(
            out,
            "\nGoodput ({}): {:.2} req/s, {:.1} tok/s; SLO attainment {:.2} % (target {:.1} %) → {}",
            g.spec,
            g.goodput_requests_per_s,
            g.goodput_tokens_per_s,
            g.attainment * 100.0,
            g.target_attainment * 100.0,
            if g.passed { "PASS" } else { "FAIL" }
        );
        for (name, a) in &g.attainment_by_threshold {
            let _ = writeln!(out, "  {name}: {:.2} % of requests", a * 100.0);
        }
    }

    if let Some(e) = &s.experience {
        render_experience(e, &mut out);
    }

    let g = &r.generator;
    let lag = g
        .send_lag_ms
        .map(|d| {
            format!(
                "send lag P50 {} P99 {} max {}; ",
                fmt_ms(d.p50),
                fmt_ms(d.p99),
                fmt_ms(d.max)
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\nGenerator: {}{:.2} of {:.0} cores, {} per chunk, {} connections → {}",
        lag,
        g.cpu_cores_used,
        g.cpu_cores_available,
        g.cpu_us_per_chunk
            .map(|v| format!("{v:.1} µs"))
            .unwrap_or_else(|| "-".into()),
        g.connections_opened,
        if g.kept_up {
            "kept up"
        } else {
            "DID NOT KEEP UP: results may reflect the generator, not the server"
        }
    );
    for n in &g.notes {
        let _ = writeln!(out, "  ! {n}");
    }
    if !s.warnings.is_empty() {
        let _ = writeln!(out, "\nWarnings:");
        for w in &s.warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    out
}

fn render_experience(e: &crate::metrics::experience::Experience, out: &mut String) {
    let mut t = table(&["User experience", "Value", "Parameters"]);
    t.add_row(vec![
        "User idle latency P50 / P95 / P99".to_string(),
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
    let sg = &e.smooth_goodput;
    t.add_row(vec![
        "Smooth goodput".to_string(),
        format!(
            "{:.1} tok/s (throughput {:.1})",
            sg.value, sg.throughput_tokens_per_s
        ),
        format!("α = {}, f = {:?}", sg.alpha, sg.f).to_lowercase(),
    ]);
    if let Some(f) = &e.fluidity {
        t.add_row(vec![
            "Fluidity-index P1 / P5 / P50 / mean".to_string(),
            format!("{:.3} / {:.3} / {:.3} / {:.3}", f.p1, f.p5, f.p50, f.mean),
            format!(
                "D_d {} ms, D_p = curve + {} ms slack",
                f.tbt_deadline_ms, f.slack_ms
            ),
        ]);
        t.add_row(vec![
            format!("Requests with fluidity >= {}", f.threshold),
            format!("{:.1} %", f.share_meeting * 100.0),
            format!(
                "curve: {} (R² {:.3})",
                f.prefill_curve_source, f.prefill_curve.r2
            ),
        ]);
    }
    let rate = |v: Option<f64>| {
        v.map(|v| format!("{v:.1} tok/s"))
            .unwrap_or_else(|| "-".into())
    };
    t.add_row(vec![
        "Fluid token generation rate".to_string(),
        rate(e.fluid_token_rate_per_s),
        e.fluidity
            .as_ref()
            .map(|f| {
                format!(
                    "{:.0} % of requests with fluidity >= {}",
                    f.quantile * 100.0,
                    f.threshold
                )
            })
            .unwrap_or_default(),
    ]);
    t.add_row(vec![
        "1 / mean TPOT".to_string(),
        rate(e.token_rates.inverse_mean_tpot_per_s),
        "what TPOT suggests".to_string(),
    ]);
    t.add_row(vec![
        "1 / P99 TBT".to_string(),
        rate(e.token_rates.inverse_p99_tbt_per_s),
        "what tail TBT suggests".to_string(),
    ]);
    if let Some(m) = &e.itl_modality {
        t.add_row(vec![
            "ITL distribution".to_string(),
            if m.unimodal {
                "unimodal".to_string()
            } else {
                format!("{} modes", m.modes)
            },
            m.mode_values
                .iter()
                .map(|v| fmt_ms(*v))
                .collect::<Vec<_>>()
                .join(", "),
        ]);
    }
    let _ = writeln!(
        out,
        "\nUser experience (Etalon fluidity, seed 003 deadlines)\n{t}"
    );
    if let Some(f) = &e.fluidity {
        let mut t = table(&["Target TBT (D_d)", "Requests fluid"]);
        for (dd, share) in &f.curve_vs_tbt {
            t.add_row(vec![fmt_ms(*dd), format!("{:.1} %", share * 100.0)]);
        }
        right(&mut t);
        let _ = writeln!(out, "{t}");
    }
    if let Some(fair) = &e.fairness {
        let mut t = table(&[
            "Class",
            "Count",
            "TTFT P50",
            "TTFT P99",
            "TPOT P50",
            "TPOT P99",
            "Starvation",
            "Inflation P50",
        ]);
        for (name, c) in &fair.classes {
            let o = |v: Option<f64>| v.map(fmt_ms).unwrap_or_else(|| "-".into());
            t.add_row(vec![
                name.clone(),
                c.count.to_string(),
                fmt_ms(c.ttft_p50_ms),
                fmt_ms(c.ttft_p99_ms),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_formatting() {
        assert_eq!(fmt_ms(0.1234), "0.123 ms");
        assert_eq!(fmt_ms(12.34), "12.3 ms");
        assert_eq!(fmt_ms(523.7), "524 ms");
        assert_eq!(fmt_ms(12_345.0), "12.35 s");
        assert_eq!(fmt_ms(f64::NAN), "-");
    }
}

#[cfg(test)]
mod render_tests {
    use super::*;
    use crate::engine::generator::judge;
    use crate::engine::WarmupReport;
    use crate::metrics::summarize;
    use crate::record::RequestRecord;
    use crate::report::{RunReport, TokenizerInfo};

    /// A run of two requests with hand-picked times renders to exact table rows.
    #[test]
    fn renders_the_draft_tables_exactly() {
        let rec = |id: u64, sent: u64, tokens: &[u64]| {
            RequestRecord::completed_for_tests(id, sent, tokens, 100)
        };
        let records = vec![rec(0, 0, &[100, 120, 140]), rec(1, 0, &[200, 230, 260])];
        let report = RunReport {
            started_unix_us: 0,
            finished_unix_us: 0,
            interrupted: false,
            target_url: "http://127.0.0.1:1/v1".into(),
            model: "m".into(),
            endpoint: "chat".into(),
            builtin_simulator: false,
            workload: "fixed".into(),
            load: "closed loop, concurrency 2; 2 requests".into(),
            seed: 42,
            tokenizer: TokenizerInfo {
                name: "cl100k_base".into(),
                source: "tiktoken".into(),
                vocab_size: 100_277,
                counting_option: "B".into(),
                special_tokens: String::new(),
            },
            warmup: WarmupReport::default(),
            summary: summarize(&records, None),
            generator: judge(&records, 0.0, 1.0, 2.0, 2),
        };
        let text = render(&report);
        for row in [
            // TTFTs 100 and 200 ms.
            "│ Requests   ┆      2 │",
            "│ TTFT P50   ┆ 150 ms │",
            "│ TTFT P90   ┆ 190 ms │",
            "│ TTFT Min   ┆ 100 ms │",
            "│ TTFT Max   ┆ 200 ms │",
            // Gaps 20, 20, 30, 30 ms.
            "│ ITL samples   ┆       4 │",
            "│ ITL P50       ┆ 25.0 ms │",
            "│ ITL Std Dev   ┆  5.0 ms │",
            "│ P99/P50 Ratio ┆    1.20 │",
            "│ Jitter (ITL std) ┆ 0.000 ms ┆ 0.000 ms ┆ 0.000 ms │",
            // 6 tokens over the 260 ms window.
            "│ Output throughput   ┆                        23.1 tok/s │",
            "│ TPOT       ┆ 25.0 ms ┆ 29.5 ms ┆ 29.9 ms │",
            "│ End-to-End ┆  200 ms ┆  254 ms ┆  259 ms │",
        ] {
            assert!(text.contains(row), "missing `{row}` in:\n{text}");
        }
        assert!(text.contains("TTFT P99 from 2 samples"));
        assert!(text.contains("→ kept up"));
    }
}
