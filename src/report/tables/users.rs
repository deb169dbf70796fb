//! The tables of what users experience: idle latency, smooth goodput, fluidity and token
//! rates, and per-class latencies with starvation and inflation (draft Tables 8 and 9).

use super::table;
use crate::metrics::experience::Experience;
use crate::metrics::fluidity::FluidRate;
use crate::report::page::Table;
use crate::report::terminal::{fmt_ms, fmt_rate, opt_ms};

/// User idle latency, smooth goodput, fluidity and token rates; then fluidity against the
/// decode deadline when fluidity was computed.
pub fn experience(e: &Experience) -> Vec<Table> {
    let mut t = table(&["User experience", "Value", "Parameters"])
        .text()
        .titled("User experience (Etalon's fluidity; smooth goodput of \"Revisiting SLOs and System Level Metrics in LLM Serving\")");
    deadline_rows(&mut t, e);
    fluidity_rows(&mut t, e);
    token_rate_rows(&mut t, e);
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

/// User idle latency, deadline attainment and smooth goodput.
fn deadline_rows(t: &mut Table, e: &Experience) {
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
}

/// The fluidity index and the share of fluid requests, or why there is none.
fn fluidity_rows(t: &mut Table, e: &Experience) {
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
}

/// The fluid token generation rate, beside what TPOT and tail TBT suggest.
fn token_rate_rows(t: &mut Table, e: &Experience) {
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
