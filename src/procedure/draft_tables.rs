//! The draft's own example tables fed to the analysis, each held to the answer the draft
//! states beside it (issue 31, item 4): Table 5 (knee 14 req/s, saturation 22 req/s),
//! Table 7 (capacity 64), Table 12 (linear, ~68 µs a token) and Tables 13 and 14 (the
//! guardrail overheads and throughput reductions). Where servebench reads a definition
//! other than word for word to reach the draft's answer (Table 5's saturation point), or
//! answers otherwise (Table 12's label), docs/methodology.md says so ("Where servebench
//! departs from the literal draft") and the test's report prints why.
//! Tables 1-4, 6 and 8-11 state no derived answer to hold.

use super::capacity::CapacityRow;
use super::curve::{read_curve, CurvePoint, CurveResult};
use super::guardrails::{overheads, reductions, GuardrailCapacity, GuardrailRow};
use super::level::Role;
use super::long_context::{fit_scaling, label_reason, LengthRow, LongContextResult};
use super::search::{search_concurrency, ConcurrencyPlan, Probe};
use super::session::meets_completion;

/// A Table 5 row: offered req/s, achieved tok/s, TTFT P50 and P99, TPOT P50 and P99 (ms),
/// success share. The draft gives no interval: each value is taken as exact.
fn table5_row(row: (f64, f64, f64, f64, f64, f64, f64)) -> CurvePoint {
    let (offered, achieved, ttft50, ttft99, tpot50, tpot99, success) = row;
    CurvePoint {
        level: 0,
        share: 0.0,
        offered_rate_per_s: offered,
        achieved_tokens_per_s: achieved,
        achieved_ci: Some((achieved, achieved)),
        achieved_requests_per_s: offered * success,
        ttft_p50_ms: Some(ttft50),
        ttft_p95_ms: None,
        ttft_p99_ms: Some(ttft99),
        tpot_p50_ms: Some(tpot50),
        tpot_p95_ms: None,
        tpot_p99_ms: Some(tpot99),
        e2e_p50_ms: None,
        e2e_p95_ms: None,
        e2e_p99_ms: None,
        success_rate: success,
        cancelled: 0,
        queue: "stable".into(),
        slo_met: None,
        slo_reading: None,
        saturation_signals: Vec::new(),
    }
}

/// Table 5: "Knee point: 14 req/s (TTFT P99 exceeds 2x minimum)", "Saturation point:
/// 22 req/s (throughput peaks)". The minimum P99 is 142 ms; 267 ms at 10 req/s stays under
/// 284, 512 ms at 14 exceeds it. Throughput never falls (284 … 2,712 tok/s), so the draft's
/// words find no saturation point; 22 req/s is where throughput falls short of what the
/// offer asks (2,712 < 0.9 × 142 × 22 = 2,812 tok/s), the reading servebench adds.
#[test]
fn table_5_knee_14_saturation_22() {
    let mut r = CurveResult {
        points: [
            (2.0, 284.0, 95.0, 142.0, 32.0, 41.0, 1.0),
            (6.0, 852.0, 102.0, 178.0, 34.0, 48.0, 1.0),
            (10.0, 1420.0, 128.0, 267.0, 38.0, 62.0, 1.0),
            (14.0, 1988.0, 198.0, 512.0, 48.0, 98.0, 1.0),
            (18.0, 2534.0, 378.0, 1234.0, 72.0, 198.0, 0.998),
            (22.0, 2712.0, 823.0, 3456.0, 142.0, 523.0, 0.941),
        ]
        .into_iter()
        .map(table5_row)
        .collect(),
        ..Default::default()
    };
    read_curve(&mut r);
    assert_eq!(r.knee_rate_per_s, Some(14.0));
    assert_eq!(r.saturation_rate_per_s, Some(22.0));
    assert_eq!(r.saturation_rule.as_deref(), Some("shortfall"));
    assert_eq!(r.peak_rate_per_s, Some(22.0));
}

/// Table 7: concurrency 8, 16, 32 and 64 pass (completion 100 %, 100 %, 100 %, 99.7 %),
/// 128 fails (97.2 % < 99 %, 3 errors): "Maximum concurrent requests meeting criteria: 64".
/// The rows are fed to servebench's own search from the draft's initial concurrency 8 up to
/// its maximum 512; the table holds the doubling steps only, so the search's tolerance is one
/// doubling (it would otherwise bisect 64-128 further). The draft gives no TTFT threshold:
/// completion and out-of-memory failures (none are said to be) decide.
#[test]
fn table_7_capacity_64() {
    let row = |concurrency: u32, completion: f64, ttft: f64, tpot: f64, errors: u64| CapacityRow {
        level: 0,
        concurrency,
        completion,
        ttft_p99_ms: Some(ttft),
        tpot_p99_ms: Some(tpot),
        errors,
        cancelled: 0,
        status: String::new(),
        output_tokens_per_s: None,
    };
    let rows = [
        row(8, 1.0, 142.0, 38.0, 0),
        row(16, 1.0, 178.0, 42.0, 0),
        row(32, 1.0, 267.0, 52.0, 0),
        row(64, 0.997, 523.0, 78.0, 0),
        row(128, 0.972, 1234.0, 156.0, 3),
    ];
    let plan = ConcurrencyPlan {
        start: 8,
        max: 512,
        tolerance: 1.0,
    };
    let mut asked = Vec::new();
    let (found, stopped) = search_concurrency(&plan, |c, _: Role| {
        asked.push(c);
        let r = rows
            .iter()
            .find(|r| r.concurrency == c)
            .unwrap_or_else(|| panic!("the search asked for {c}, which Table 7 lacks"));
        Ok(if meets_completion(r.completion, 0.99) {
            Probe::Pass
        } else {
            Probe::Fail
        })
    });
    assert!(stopped.is_none());
    assert_eq!(asked, vec![8, 16, 32, 64, 128]);
    assert_eq!(found.sustainable, Some(64));
    assert_eq!(found.failing, Some(128));
    assert!(found.converged, "{}", found.note);
}

/// Table 12: mean TTFT 89, 289, 1,023, 4,234 and 9,123 ms at 1,024 … 131,072 tokens; "Best
/// fit: Linear (R^2 = 0.9987), ~68 microseconds per input token". servebench answers
/// otherwise, and says why in the report: the line's R² (0.9986) and slope (69 µs a token)
/// match the draft's, and the draft's literal TTFT ∝ length^k through the origin gives
/// k = 0.95; but the line misses the 1K mean by 85 ms where the table's P95 implies a
/// standard error of 3 ms (σ ≈ (P95 − mean) ÷ 1.645 over √19, at 5.9.2's 20 requests), so
/// the simplest model within the noise is the quadratic (`stats::fit::choice`).
#[test]
fn table_12_curves_beyond_its_noise_and_says_why() {
    let row = |tokens: u32, mean: f64, p95: f64| LengthRow {
        level: 0,
        context_tokens: tokens,
        input_tokens_mean: None,
        ttft_mean_ms: Some(mean),
        ttft_p50_ms: None,
        ttft_p95_ms: Some(p95),
        ttft_se_ms: Some((p95 - mean) / 1.645 / 19f64.sqrt()),
        ms_per_1k_tokens: None,
        e2e_mean_ms: None,
        output_tokens_per_s: 0.0,
        requests: 20,
    };
    let mut r = LongContextResult {
        rows: vec![
            row(1024, 89.0, 112.0),
            row(4096, 289.0, 367.0),
            row(16384, 1023.0, 1287.0),
            row(65536, 4234.0, 5123.0),
            row(131072, 9123.0, 11234.0),
        ],
        ..Default::default()
    };
    fit_scaling(&mut r);
    assert_eq!(r.best_fit.as_deref(), Some("quadratic"));
    let us = r.us_per_input_token.unwrap();
    assert!((us - 69.2).abs() < 0.05, "{us} µs a token");
    assert!((r.origin_exponent.unwrap() - 0.954).abs() < 5e-4);
    assert_eq!(
        label_reason(&r).as_deref(),
        Some("Why quadratic: the quadratic term departs from the line by 94.3 ms at 1024 tokens, more than the noise of 6.4 ms there (twice the standard error of that length's mean TTFT), and is significant (F = 1001.2, 95 % critical value 18.51); a curve is named only when it is both")
    );
}

/// Tables 13 and 14. Overheads (5.10.4) at the draft's rows: input filter = TTFT P50 112 −
/// 98 = 14 ms; total = E2E P50 5.0 − 4.2 s = 800 ms (the draft states the formulas, not these
/// numbers). Reductions: 2,756, 2,412 and 2,289 tok/s against the baseline's 2,867: −3.9 %,
/// −15.9 % and −20.2 %, as Table 14 states.
#[test]
fn tables_13_and_14_guardrail_overheads() {
    let row = |name: &str, ttft50: f64, ttft99: f64, e2e50_s: f64, e2e99_s: f64| GuardrailRow {
        level: 0,
        configuration: name.into(),
        share: 0.5,
        offered_rate_per_s: 1.0,
        ttft_p50_ms: Some(ttft50),
        ttft_p95_ms: None,
        ttft_p99_ms: Some(ttft99),
        e2e_p50_ms: Some(e2e50_s * 1000.0),
        e2e_p99_ms: Some(e2e99_s * 1000.0),
        output_tokens_per_s: 0.0,
    };
    let rows = [
        row("baseline", 98.0, 234.0, 4.2, 8.7),
        row("input", 112.0, 267.0, 4.3, 8.9),
        row("output", 101.0, 242.0, 4.8, 9.8),
        row("full", 118.0, 289.0, 5.0, 10.2),
    ];
    let targets: Vec<String> = ["baseline", "input", "output", "full"]
        .map(String::from)
        .to_vec();
    let (input, total) = overheads(&rows, &targets, "baseline");
    assert!((input.unwrap() - 14.0).abs() < 1e-9, "{input:?}");
    assert!((total.unwrap() - 800.0).abs() < 1e-9, "{total:?}");
    let capacity = |name: &str, level: usize, tokens: f64| GuardrailCapacity {
        configuration: name.into(),
        level: Some(level),
        max_output_tokens_per_s: tokens,
        max_rate_per_s: None,
        search: String::new(),
        reduction: None,
    };
    let mut table14 = vec![
        capacity("baseline", 0, 2867.0),
        capacity("input", 1, 2756.0),
        capacity("output", 2, 2412.0),
        capacity("full", 3, 2289.0),
    ];
    reductions(&mut table14, "baseline");
    let shown: Vec<Option<String>> = table14
        .iter()
        .map(|c| c.reduction.map(|x| format!("{:.1}%", x * 100.0)))
        .collect();
    assert_eq!(
        shown,
        vec![
            None,
            Some("-3.9%".into()),
            Some("-15.9%".into()),
            Some("-20.2%".into())
        ]
    );
}
