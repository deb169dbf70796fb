//! The terminal report's Results section (latency, throughput, users, SLO, failures), in a
//! file of its own so that `render` reads as its sections and no function runs past 80 lines.

use super::{fmt_ms, fmt_rate, opt_ms, row, timestamp_bound, USERS_LEGEND};
use crate::artifacts::RunReport;
use crate::metrics::fluidity::FluidRate;
use crate::metrics::summary::Bounded;
use crate::report::bounded;
use std::fmt::Write;

/// Results: latency, throughput, what users saw, the SLO and the failures.
pub(super) fn results(out: &mut String, r: &RunReport) {
    let _ = writeln!(out, "Results");
    latency(out, r);
    throughput(out, r);
    users(out, r);
    slo(out, r);
    failures(out, r);
}

/// The TTFT and TPOT lines; for a non-generative endpoint, the request latency instead.
/// Each percentile carries its interval ([`bounded`]), and one line says what the brackets
/// are when any is shown.
fn latency(out: &mut String, r: &RunReport) {
    let s = &r.summary;
    let pct = |d, metric, p| bounded::opt_ms_bounded(d, s.percentile_bounds, metric, p);
    let bracketed = |figures: &[&String]| figures.iter().any(|f| f.contains(" ("));
    if !r.config.target.endpoint.is_generative() {
        let [p50, p90, p99] = [50.0, 90.0, 99.0].map(|p| pct(s.e2e_ms, Bounded::E2e, p));
        row(
            out,
            "Latency",
            &format!(
                "P50 {p50} · P90 {p90} · P99 {p99} · max {} (request, whole answer)",
                opt_ms(s.e2e_ms, |d| d.max),
            ),
        );
        if bracketed(&[&p50, &p90, &p99]) {
            row(out, "", &bounded::legend(s.percentile_bounds));
        }
        row(
            out,
            "TTFT",
            "n/a: non-generative endpoint (no tokens are streamed)",
        );
        return;
    }
    let [ttft50, ttft99] = [50.0, 99.0].map(|p| pct(s.ttft_ms, Bounded::Ttft, p));
    let [tpot50, tpot99] = [50.0, 99.0].map(|p| pct(s.tpot_ms, Bounded::Tpot, p));
    row(
        out,
        "TTFT",
        &format!(
            "P50 {ttft50} · P99 {ttft99}{}{}",
            crate::report::tables::ttft_coverage(s),
            timestamp_bound(&r.generator.timestamps)
        ),
    );
    row(out, "TPOT", &format!("P50 {tpot50} · P99 {tpot99}"));
    if bracketed(&[&ttft50, &ttft99, &tpot50, &tpot99]) {
        row(out, "", &bounded::legend(s.percentile_bounds));
    }
    media(out, r);
    sessions(out, r);
    prompt_cache(out, r);
}

/// The share of prompt tokens the server's cache served, as the responses report it (the
/// sessions' line says it per session when the workload has sessions).
fn prompt_cache(out: &mut String, r: &RunReport) {
    let s = &r.summary;
    let Some(c) = s.prompt_cache.as_ref().filter(|_| s.sessions.is_none()) else {
        return;
    };
    let Some(share) = c.hit_rate() else {
        return;
    };
    row(
        out,
        "Cache",
        &format!(
            "{:.1} % of prompt tokens served from the server's prefix cache ({} of {}, as {} responses report)",
            share * 100.0,
            c.cached_tokens,
            c.prompt_tokens,
            c.requests_reporting
        ),
    );
}

/// What the sessions were, where their time went, and how TTFT grew with their history.
fn sessions(out: &mut String, r: &RunReport) {
    use crate::report::tables::sessions::{cache_line, shape_line, time_line};
    let Some(s) = &r.summary.sessions else {
        return;
    };
    row(out, "Sessions", &shape_line(s));
    row(
        out,
        "",
        &format!(
            "wall P50 {} · P99 {}; {}",
            opt_ms(s.wall_ms, |d| d.p50),
            opt_ms(s.wall_ms, |d| d.p99),
            time_line(s)
        ),
    );
    let (first, last) = (s.ttft_by_step.first(), s.ttft_by_step.last());
    if let (Some(a), Some(b)) = (first, last.filter(|_| s.ttft_by_step.len() > 1)) {
        row(
            out,
            "",
            &format!(
                "TTFT P50 {} at step 1 ({:.0} input tokens) → {} at step {}{} ({:.0})",
                opt_ms(a.ttft_ms, |d| d.p50),
                a.mean_input_tokens,
                opt_ms(b.ttft_ms, |d| d.p50),
                b.step + 1,
                if b.and_later { " and later" } else { "" },
                b.mean_input_tokens
            ),
        );
    }
    row(out, "", &cache_line(s));
}

/// What the requests' images and audio were, and how long their upload took before TTFT.
fn media(out: &mut String, r: &RunReport) {
    use crate::report::tables::media::{sent_line, tokens_line};
    let Some(m) = &r.summary.media else {
        return;
    };
    row(out, "Media", &sent_line(m));
    let share = m
        .upload_share_of_wait
        .map(|v| format!(" ({:.1} % of the wait for the first token)", v * 100.0))
        .unwrap_or_default();
    row(
        out,
        "Upload",
        &format!(
            "P50 {} · P99 {}{share}, before TTFT (P50 {} · P99 {}) starts",
            opt_ms(m.upload_ms, |d| d.p50),
            opt_ms(m.upload_ms, |d| d.p99),
            opt_ms(m.ttft_ms, |d| d.p50),
            opt_ms(m.ttft_ms, |d| d.p99),
        ),
    );
    row(out, "", &tokens_line(m));
}

/// The Throughput line and C.1's throughput at P99 TTFT < 500 ms; for a non-generative
/// endpoint, items, input tokens and requests per second.
fn throughput(out: &mut String, r: &RunReport) {
    let s = &r.summary;
    if !r.config.target.endpoint.is_generative() {
        let thr = format!(
            "{} items/s, {} input tok/s, {} req/s ({} items in all)",
            fmt_rate(s.items_per_s),
            fmt_rate(s.input_tokens_per_s),
            fmt_rate(s.requests_per_s),
            s.total_items
        );
        row(out, "Throughput", &thr);
        return;
    }
    let mut thr = format!(
        "{} tok/s output, {} req/s",
        fmt_rate(s.output_tokens_per_s),
        fmt_rate(s.requests_per_s)
    );
    if s.total_reasoning_tokens > 0 {
        let _ = write!(
            thr,
            " ({} tok/s of it answer, the rest reasoning)",
            fmt_rate(s.answer_tokens_per_s)
        );
    }
    row(out, "Throughput", &thr);
    row(
        out,
        "<500ms",
        &match s.ttft_ms {
            // A P99 the requests cannot bound below 500 ms from above is no evidence that
            // it meets the target: said so, in place of the hint.
            Some(d) if d.p99 < 500.0 && !p99_bounded_below(s, 500.0) => format!(
                "{} tok/s with P99 TTFT {} < 500 ms, indicative: {} requests do not bound the P99 below 500 ms (C.1's \"throughput at P99 TTFT < 500 ms\")",
                fmt_rate(s.output_tokens_per_s),
                fmt_ms(d.p99),
                d.n
            ),
            Some(d) if d.p99 < 500.0 => format!(
                "{} tok/s with P99 TTFT {} < 500 ms (C.1's \"throughput at P99 TTFT < 500 ms\"; `servebench test throughput` searches for the maximum)",
                fmt_rate(s.output_tokens_per_s),
                fmt_ms(d.p99)
            ),
            Some(d) => format!(
                "not met at this load: P99 TTFT {} (`servebench test throughput --slo 'p99(ttft_ms)<=500'` finds the load that meets it)",
                fmt_ms(d.p99)
            ),
            None => "-".into(),
        },
    );
}

/// Whether the run's P99 TTFT interval closes below `limit_ms` (runs from before the
/// intervals count as bounded: nothing is known against them).
fn p99_bounded_below(s: &crate::metrics::RunSummary, limit_ms: f64) -> bool {
    match s.percentile_bounds.and_then(|b| b.of(Bounded::Ttft, 99.0)) {
        Some(b) => b.hi.is_some_and(|hi| hi < limit_ms),
        None => true,
    }
}

/// The Users line (user experience) and its legend.
fn users(out: &mut String, r: &RunReport) {
    let s = &r.summary;
    if !r.config.target.endpoint.is_generative() {
        return; // Idle time and goodput are per token: none is streamed.
    }
    let e = &s.experience;
    let mut ux = format!(
        "idle P99 {} · smooth goodput {}",
        opt_ms(e.user_idle_ms, |d| d.p99),
        e.smooth_goodput
            .as_ref()
            .map(|g| format!(
                "{} tok/s (T {:.1} s)",
                fmt_rate(g.value),
                g.window.duration_s
            ))
            .unwrap_or_else(|| "-".into())
    );
    match &e.fluid_token_rate {
        Some(FluidRate::Bounded { tokens_per_s, .. }) => {
            let _ = write!(ux, " · fluid rate {} tok/s", fmt_rate(*tokens_per_s));
        }
        Some(FluidRate::Unbounded { .. }) => ux.push_str(" · fluid rate unbounded (--detail)"),
        Some(FluidRate::NotReached { .. }) => ux.push_str(" · fluid rate not reached (--detail)"),
        None => {}
    }
    row(out, "Users", &ux);
    row(out, "", USERS_LEGEND);
}

/// One SLO line per judgement: the per-request attainment, then each run-level check.
fn slo(out: &mut String, r: &RunReport) {
    let s = &r.summary;
    if let Some(slo) = &s.slo {
        if let Some(a) = &slo.per_request {
            row(
                out,
                "SLO",
                &format!(
                    "{}: {:.2} % of requests met every bound (target {:.1} %), goodput {} req/s → {}",
                    a.spec,
                    a.attainment * 100.0,
                    a.target_attainment * 100.0,
                    fmt_rate(a.goodput_requests_per_s),
                    if a.passed { "PASS" } else { "FAIL" }
                ),
            );
        }
        for check in &slo.run_checks {
            row(
                out,
                "SLO",
                &format!(
                    "{}: observed {} → {}",
                    check.term,
                    check
                        .observed
                        .map(|v| format!("{v:.3}"))
                        .unwrap_or_else(|| "no samples".into()),
                    if check.passed { "PASS" } else { "FAIL" }
                ),
            );
        }
    }
}

/// Failures by kind, then the three commonest messages with their hints. Requests the
/// run cancelled at its end have a line of their own: they are not the server's failures.
fn failures(out: &mut String, r: &RunReport) {
    use crate::record::FailureKind;
    let s = &r.summary;
    if !s.failures.by_kind.is_empty() {
        let kinds: Vec<String> = s
            .failures
            .by_kind
            .iter()
            .filter(|(k, _)| **k != FailureKind::Cancelled)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        if !kinds.is_empty() {
            row(out, "Failures", &kinds.join(", "));
        }
        let cancelled = crate::report::tables::cancelled(s);
        if cancelled > 0 {
            row(
                out,
                "Cancelled",
                &format!(
                    "{cancelled} still unanswered when the run ended, cancelled by servebench"
                ),
            );
        }
        for m in s.failures.top.iter().take(3) {
            let msg: String = m.message.chars().take(160).collect();
            row(out, "", &format!("{}× {msg}", m.count));
            if let Some(h) = &m.hint {
                row(out, "", &format!("→ {h}"));
            }
        }
    }
}
