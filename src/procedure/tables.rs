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
use crate::report::page::Table;
use crate::report::tables::to_terminal;
use crate::report::terminal::{fmt_ms, wrap, WIDTH};
use serde::de::DeserializeOwned;
use std::fmt::Write;

fn table(header: &[&str]) -> Table {
    Table::new(header)
}

/// One piece of a test's report: a table (as data) or a sentence.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Table(Table),
    Text(String),
}

/// A test's report in order, drawn by the terminal ([`render`]) and by the report page
/// (`report::test_page`) from the same data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parts(pub Vec<Part>);

impl Parts {
    fn table(&mut self, t: Table) {
        self.0.push(Part::Table(t));
    }

    fn text(&mut self, s: impl Into<String>) {
        self.0.push(Part::Text(s.into()));
    }

    /// The terminal's drawing: tables within 100 columns, sentences wrapped.
    pub fn to_terminal(&self) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Part::Table(t) => out.push_str(&to_terminal(t)),
                Part::Text(s) => {
                    let _ = writeln!(out, "{}", wrap(s, WIDTH, 2));
                }
            }
        }
        out
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

/// The whole test report for the terminal.
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
    out.push_str(&results(r).to_terminal());
    out.push_str(&level_parts(r).to_terminal());
    let mut c = Parts::default();
    compliance(r, &mut c);
    out.push('\n');
    out.push_str(&c.to_terminal());
    out
}

/// The test's own tables (the draft's Tables 1–14 that apply) and its derived points.
pub fn results(r: &TestReport) -> Parts {
    let mut out = Parts::default();
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
    out
}

/// Every level in one table, then the saturation signals that fired.
pub fn level_parts(r: &TestReport) -> Parts {
    let mut out = Parts::default();
    levels(r, &mut out);
    out
}

fn levels(r: &TestReport, out: &mut Parts) {
    let mut t = table(&[
        "#", "Level", "Role", "Verdict", "tok/s", "req/s", "P99 TTFT", "Queue",
    ]);
    for l in &r.levels {
        t.push(vec![
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
    out.table(t.titled("Levels (each a run folder under levels/)"));
    for l in r.levels.iter().filter(|l| l.signals.any()) {
        out.text(format!(
            "level {}: saturation signal: {}",
            l.index + 1,
            l.signals.fired.join("; ")
        ));
    }
}

fn compliance(r: &TestReport, out: &mut Parts) {
    let c = &r.compliance;
    out.text(format!(
        "Compliance with draft {}: {} ({} of {} requirements met)",
        r.section,
        c.verdict.words(),
        c.requirements.iter().filter(|x| x.met).count(),
        c.requirements.len()
    ));
    for req in c.unmet() {
        let word = match req.strength {
            Strength::Must => "MUST",
            Strength::Should => "SHOULD",
        };
        out.text(format!(
            "not met: {word} ({}) {}: {}",
            req.section, req.text, req.detail
        ));
    }
}

fn ttft(r: &TestReport, out: &mut Parts) {
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

fn throughput(r: &TestReport, out: &mut Parts) {
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

fn curve(r: &TestReport, out: &mut Parts) {
    if let Some(x) = result::<CurveResult>(r) {
        curve_parts(&x, out);
    }
}

/// The SLO a curve was judged against: as given, or (an older report) that one was.
fn curve_slo(x: &CurveResult) -> Option<String> {
    x.slo.clone().or_else(|| {
        (x.optimal_basis.as_deref() == Some("slo") || x.points.iter().any(|p| p.slo_met.is_some()))
            .then(|| "the SLO".to_string())
    })
}

/// Table 5 with an SLO column when one was given, then the knee, saturation and optimal
/// points, the optimal one under the SLO that was given.
fn curve_parts(x: &CurveResult, out: &mut Parts) {
    let slo = curve_slo(x);
    let mut header = vec![
        "Offered (r/s)",
        "Achieved (tok/s)",
        "TTFT P50",
        "TTFT P99",
        "TPOT P50",
        "TPOT P99",
        "Success",
        "Queue",
    ];
    if slo.is_some() {
        header.push("SLO");
    }
    let mut t = table(&header);
    let (mut indicative, mut observed) = (false, false);
    for p in &x.points {
        // The interval the saturation point is read with; without one (too few requests
        // in the steady window, as at the low levels of a short sweep) the value is only
        // indicative, and the table says so.
        let achieved = match p.achieved_ci {
            Some((lo, hi)) => format!("{:.0} ±{:.0}", p.achieved_tokens_per_s, (hi - lo) / 2.0),
            None => {
                indicative = true;
                format!("{:.0} *", p.achieved_tokens_per_s)
            }
        };
        let mut row = vec![
            rate(p.offered_rate_per_s),
            achieved,
            ms(p.ttft_p50_ms),
            ms(p.ttft_p99_ms),
            ms(p.tpot_p50_ms),
            ms(p.tpot_p99_ms),
            pct(p.success_rate),
            p.queue.clone(),
        ];
        if slo.is_some() {
            let seen = p.slo_reading.as_deref() == Some("observed");
            observed |= seen;
            row.push(format!(
                "{}{}",
                match p.slo_met {
                    Some(true) => "met",
                    Some(false) => "missed",
                    None => "-",
                },
                if seen { " †" } else { "" }
            ));
        }
        t.push(row);
    }
    let mut t = t.titled(&match &x.slo {
        Some(s) => format!("Table 5: Throughput-latency (SLO {s})"),
        None => "Table 5: Throughput-latency".to_string(),
    });
    if indicative {
        t = t.note("* too few requests in the level's steady window for an interval: indicative only (lengthen --level-duration)");
    }
    if x.points.iter().any(|p| p.achieved_ci.is_some()) {
        t = t.note("± half the 95 % interval of the steady window's throughput");
    }
    if observed {
        t = t.note("† read on the observed values: the 95 % interval straddles the target, too few requests to decide (a P99 bound needs 381 within it); met when the level's own percentile is within the bound");
    }
    out.table(t);
    curve_points(x, slo.as_deref(), out);
}

/// The knee, saturation and optimal operating points in words.
fn curve_points(x: &CurveResult, slo: Option<&str>, out: &mut Parts) {
    let at = |v: Option<f64>, none: &str| {
        v.map(|v| format!("{} req/s", rate(v)))
            .unwrap_or_else(|| none.into())
    };
    out.text(format!(
        "Knee point: {} (TTFT P99 exceeds 2× the minimum)",
        at(x.knee_rate_per_s, "none")
    ));
    out.text(format!(
        "Saturation point: {} (achieved throughput falls beyond its interval)",
        at(x.saturation_rate_per_s, "none")
    ));
    out.text(format!(
        "Optimal operating point: {} ({})",
        at(x.optimal_rate_per_s, "none"),
        match (slo, x.optimal_rate_per_s) {
            (Some(s), Some(_)) => format!("highest throughput meeting {s}"),
            (Some(s), None) => format!("no level met {s}"),
            (None, _) => "no SLO given: highest throughput below the knee".to_string(),
        }
    ));
}

fn itl(r: &TestReport, out: &mut Parts) {
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

fn capacity(r: &TestReport, out: &mut Parts) {
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

fn fairness(r: &TestReport, out: &mut Parts) {
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

fn prefix_cache(r: &TestReport, out: &mut Parts) {
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

fn memory(r: &TestReport, out: &mut Parts) {
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

fn long_context(r: &TestReport, out: &mut Parts) {
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
                .map(|k| format!("{k:.2}"))
                .unwrap_or_else(|| "-".into()),
            x.us_per_input_token
                .map(|u| super::long_context::per_token_cost(&x, u)
                    .trim_start_matches(", ")
                    .to_owned())
                .unwrap_or_default()
        ));
    }
    out.text(format!("Longest length: {}", x.context_limit));
}

fn guardrails(r: &TestReport, out: &mut Parts) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedure::curve::CurvePoint;

    fn point(rate: f64, p99: f64, met: Option<bool>, reading: Option<&str>) -> CurvePoint {
        CurvePoint {
            level: 0,
            share: 0.0,
            offered_rate_per_s: rate,
            achieved_tokens_per_s: 100.0 * rate,
            achieved_ci: None,
            achieved_requests_per_s: rate,
            ttft_p50_ms: Some(p99 / 2.0),
            ttft_p95_ms: None,
            ttft_p99_ms: Some(p99),
            tpot_p50_ms: None,
            tpot_p95_ms: None,
            tpot_p99_ms: None,
            e2e_p50_ms: None,
            e2e_p95_ms: None,
            e2e_p99_ms: None,
            success_rate: 1.0,
            cancelled: 0,
            queue: "stable".into(),
            slo_met: met,
            slo_reading: reading.map(str::to_owned),
            saturation_signals: Vec::new(),
        }
    }

    fn texts(out: &Parts) -> Vec<String> {
        out.0
            .iter()
            .filter_map(|p| match p {
                Part::Text(s) => Some(s.clone()),
                Part::Table(_) => None,
            })
            .collect()
    }

    /// Issue 19, item 3: with `--slo 'p99(ttft_ms)<=10000'` given and no level shown to meet
    /// it, the table said "no SLO given". It now names the SLO in Table 5's title, has an
    /// SLO column (a level read on its observed values marked †), and says no level met it.
    #[test]
    fn table_5_shows_the_slo_that_was_given() {
        let slo = "p99(ttft_ms)<=10000";
        let x = CurveResult {
            slo: Some(slo.into()),
            points: vec![
                point(1.0, 11.0, Some(false), Some("interval")),
                point(2.0, 39.0, Some(false), Some("observed")),
            ],
            ..Default::default()
        };
        let mut out = Parts::default();
        curve_parts(&x, &mut out);
        let Some(Part::Table(t)) = out.0.first() else {
            panic!("Table 5 first: {out:?}");
        };
        assert_eq!(
            t.title.as_deref(),
            Some("Table 5: Throughput-latency (SLO p99(ttft_ms)<=10000)")
        );
        assert_eq!(t.header.last().map(String::as_str), Some("SLO"));
        assert_eq!(t.rows[0].last().map(String::as_str), Some("missed"));
        assert_eq!(t.rows[1].last().map(String::as_str), Some("missed †"));
        assert_eq!(
            texts(&out).last().map(String::as_str),
            Some("Optimal operating point: none (no level met p99(ttft_ms)<=10000)")
        );
        // Met at 2 req/s: the highest throughput meeting the SLO, named.
        let x = CurveResult {
            optimal_rate_per_s: Some(2.0),
            optimal_basis: Some("slo".into()),
            ..x
        };
        let mut out = Parts::default();
        curve_parts(&x, &mut out);
        assert_eq!(
            texts(&out).last().map(String::as_str),
            Some(
                "Optimal operating point: 2 req/s (highest throughput meeting p99(ttft_ms)<=10000)"
            )
        );
        // Without an SLO: no column, and the knee's reading.
        let x = CurveResult {
            points: vec![point(1.0, 11.0, None, None)],
            ..Default::default()
        };
        let mut out = Parts::default();
        curve_parts(&x, &mut out);
        let Some(Part::Table(t)) = out.0.first() else {
            panic!("Table 5 first");
        };
        assert_eq!(t.header.len(), 8);
        assert_eq!(
            texts(&out).last().map(String::as_str),
            Some("Optimal operating point: none (no SLO given: highest throughput below the knee)")
        );
    }
}
