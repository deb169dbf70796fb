//! The tables of the tests that look for limits: capacity (draft Table 7), memory
//! pressure (Table 11) and long-context scaling (Table 12).

use super::{ms, pct, result, table, Parts};
use crate::procedure::capacity::CapacityResult;
use crate::procedure::long_context::LongContextResult;
use crate::procedure::memory::MemoryResult;
use crate::procedure::report::TestReport;
use crate::procedure::throughput::thousands;

pub(super) fn capacity(r: &TestReport, out: &mut Parts) {
    let Some(x) = result::<CapacityResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Concurrency",
        "Completion",
        "TTFT P99",
        "TPOT P99",
        "Errors",
        "Cancelled",
        "Status",
    ]);
    for row in &x.rows {
        t.push(vec![
            row.concurrency.to_string(),
            pct(row.completion),
            ms(row.ttft_p99_ms),
            ms(row.tpot_p99_ms),
            row.errors.to_string(),
            row.cancelled.to_string(),
            row.status.clone(),
        ]);
    }
    out.table(t.titled("Table 7: Capacity search").note(
        "Completion and errors are the server's; cancelled: still in flight when the level ended, stopped by servebench",
    ));
    out.text(format!(
        "Maximum concurrent requests meeting criteria: {}",
        x.max_concurrency
            .map(|c| c.to_string())
            .unwrap_or_else(|| "none".into())
    ));
    if let (Some(t), Some(k)) = (x.achieved_output_tokens_per_s, x.tokens_in_flight) {
        out.text(format!(
            "At the maximum: {} tok/s, about {} tokens in flight",
            thousands(t),
            thousands(k)
        ));
    }
    out.text(format!("Criteria: {}", x.criteria));
}

pub(super) fn memory(r: &TestReport, out: &mut Parts) {
    let Some(x) = result::<MemoryResult>(r) else {
        return;
    };
    let mut t = table(&[
        "Oversub Level",
        "Concurrency",
        "Complete",
        "Preempt",
        "Fail Rate",
        "Cancelled",
        "TTFT P99",
    ]);
    for row in &x.levels {
        t.push(vec![
            format!("{:.0}%", row.share * 100.0),
            row.concurrency.to_string(),
            pct(row.completion),
            row.preemptions_per_request
                .map(|p| format!("{:.2}/req", p))
                .unwrap_or_else(|| "not measured".into()),
            pct(row.failure_rate),
            row.cancelled.to_string(),
            ms(row.ttft_p99_ms),
        ]);
    }
    out.table(t.titled("Table 11: Memory pressure degradation").note(
        "Complete and fail rate are over the requests the server decided; cancelled: still in flight when the level ended, stopped by servebench",
    ));
    out.text(format!("Preemptions: {}", x.preemption_source));
}

pub(super) fn long_context(r: &TestReport, out: &mut Parts) {
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
        t.push(vec![
            row.context_tokens.to_string(),
            ms(row.ttft_mean_ms),
            ms(row.ttft_p95_ms),
            row.ms_per_1k_tokens
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "-".into()),
            row.requests.to_string(),
        ]);
    }
    out.table(t.titled("Table 12: Long context scaling"));
    if let Some(best) = &x.best_fit {
        out.text(format!(
            "Best fit: {} (R² = {:.4}), exponent k = {}, {}",
            best.replace('_', " "),
            x.r2.unwrap_or(f64::NAN),
            x.scaling_exponent
                .map(|k| format!(
                    "{k:.2}{}",
                    crate::procedure::long_context::exponent_note(best, k)
                ))
                .unwrap_or_else(|| "-".into()),
            x.us_per_input_token
                .map(|u| crate::procedure::long_context::per_token_cost(&x, u)
                    .trim_start_matches(", ")
                    .to_owned())
                .unwrap_or_default()
        ));
    }
    if let Some(k0) = x.origin_exponent {
        out.text(format!(
            "The draft's literal reading, TTFT ∝ length^k through the origin: k = {k0:.2} (R² = {:.4}); a fixed overhead bends it below the k above",
            x.origin_r2.unwrap_or(f64::NAN)
        ));
    }
    if let Some(why) = crate::procedure::long_context::label_reason(&x) {
        out.text(why);
    }
    out.text(format!("Longest length: {}", x.context_limit));
}
