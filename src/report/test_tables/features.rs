//! The tables of the tests of serving features: fairness between classes (draft Tables 8
//! and 9), prefix caching (Table 10) and guardrails (Tables 13 and 14, and the disclosure
//! of draft 4.8.1).

use super::{ms, pct, result, table, Parts};
use crate::procedure::fairness::FairnessResult;
use crate::procedure::guardrails::GuardrailResult;
use crate::procedure::level::rate;
use crate::procedure::prefix_cache::PrefixCacheResult;
use crate::procedure::report::TestReport;
use crate::procedure::throughput::thousands;

pub(super) fn fairness(r: &TestReport, out: &mut Parts) {
    let Some(x) = result::<FairnessResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Class", "Count", "TTFT P50", "TTFT P99", "TPOT P50", "TPOT P99",
    ]);
    for (name, c) in &x.classes {
        t.push(vec![
            name.clone(),
            c.count.to_string(),
            ms(c.ttft_p50_ms),
            ms(c.ttft_p99_ms),
            ms(c.tpot_p50_ms),
            ms(c.tpot_p99_ms),
        ]);
    }
    out.table(t.titled("Table 8: Per-class results (mixed run)"));
    let mut t = table(&["Metric", "Value"]);
    if let Some(j) = x.jain_index {
        t.push(vec!["Jain's Fairness Index".to_string(), format!("{j:.3}")]);
    }
    for (name, c) in &x.classes {
        t.push(vec![format!("{name} starvation"), pct(c.starvation_rate)]);
        if let Some(i) = c.latency_inflation_p50 {
            t.push(vec![
                format!("{name} TTFT inflation P50"),
                format!("{i:.2}×"),
            ]);
        }
        if let Some(i) = c.latency_inflation_p99 {
            t.push(vec![
                format!("{name} TTFT inflation P99"),
                format!("{i:.2}×"),
            ]);
        }
    }
    out.table(t.titled("Table 9: Fairness metrics"));
}

pub(super) fn prefix_cache(r: &TestReport, out: &mut Parts) {
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
        t.push(vec![
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
    out.table(t.titled(&format!("Table 10: Cache effectiveness ({})", x.mode)));
    if let Some(v) = x.ttft_reduction {
        out.text(format!("TTFT reduction (P50, warm): {:.1} %", v * 100.0));
    }
    if let Some(v) = x.throughput_improvement {
        out.text(format!("Throughput improvement: {:+.1} %", v * 100.0));
    }
}

pub(super) fn guardrails(r: &TestReport, out: &mut Parts) {
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
        t.push(vec![
            row.configuration.clone(),
            format!("{:.0} %", row.share * 100.0),
            ms(row.ttft_p50_ms),
            ms(row.ttft_p99_ms),
            ms(row.e2e_p50_ms),
            ms(row.e2e_p99_ms),
        ]);
    }
    out.table(t.titled("Table 13: Guardrail overhead"));
    let mut t = table(&[
        "Configuration",
        "Max Throughput",
        "Sustained rate",
        "Reduction",
    ]);
    for c in &x.capacity {
        t.push(vec![
            c.configuration.clone(),
            match c.level {
                Some(_) => format!("{} tok/s", thousands(c.max_output_tokens_per_s)),
                None => "none sustained".into(),
            },
            c.max_rate_per_s
                .map(|r| format!("{} req/s", rate(r)))
                .unwrap_or_else(|| "-".into()),
            c.reduction
                .map(|v| format!("{:+.1}%", v * 100.0))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    out.table(t.titled("Table 14: Throughput impact").note(
        "Max Throughput: output tokens per second at the highest rate each configuration's throughput search (5.2) sustained",
    ));
    // Draft 4.8.1: what each configuration filters, the safety systems, and refusals.
    let mut t = table(&["Configuration", "Input filter", "Output filter", "Refused"]);
    let yes_no = |v: Option<bool>| match v {
        Some(true) => "enabled".to_owned(),
        Some(false) => "disabled".to_owned(),
        None => "not stated".to_owned(),
    };
    for d in &x.disclosure {
        t.push(vec![
            d.configuration.clone(),
            yes_no(d.input_filter),
            yes_no(d.output_filter),
            thousands(d.refused_requests as f64),
        ]);
    }
    if !x.disclosure.is_empty() {
        out.table(t.titled("Guardrail disclosure (draft 4.8.1)"));
        out.text(format!(
            "Safety systems: {}",
            x.safety_systems
                .as_deref()
                .unwrap_or("not named (--safety-systems)")
        ));
    }
}
