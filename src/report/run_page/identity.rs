//! Who and what was measured, and how: the draft's Appendix C.1 minimum report as its
//! template reads, then the system identification and test configuration of the C.2 full
//! report (items 1 and 2).

use crate::artifacts::RunReport;
use crate::report::chart::axis::group_thousands;
use crate::report::page::{Section, Table};
use crate::report::tables::{
    cancelled, describe_load, endpoint_name, outcome_counts, ttft_coverage, warmup_line,
};
use crate::report::terminal::fmt_rate;
use std::fmt::Write;

/// The model as the run named it, with what the server listed when that differs.
pub fn model(r: &RunReport) -> String {
    let m = &r.config.target.model;
    if m.is_empty() {
        "not named (the server's default)".into()
    } else {
        m.clone()
    }
}

/// The serving software: engine and version as the server reported them.
pub fn software(r: &RunReport) -> String {
    match (&r.server.engine, &r.server.version) {
        (Some(e), Some(v)) => format!("{e} {v}"),
        (Some(e), None) => format!("{e} (version not reported)"),
        _ => match &r.server.server_header {
            Some(h) => format!("not reported by the server (Server header: {h})"),
            None => "not reported by the server".into(),
        },
    }
}

/// The accelerators: `--hardware` when given, else the GPUs NVML or DCGM saw.
pub fn hardware(r: &RunReport) -> String {
    if let Some(h) = &r.system.hardware {
        return h.clone();
    }
    if let Some(g) = &r.telemetry.gpu {
        let mut names: Vec<String> = g
            .gpus
            .iter()
            .map(|x| x.name.clone().unwrap_or_else(|| "GPU".into()))
            .collect();
        names.dedup();
        if !g.gpus.is_empty() {
            return format!(
                "{} x {} (as the GPU telemetry reported)",
                names.join(", "),
                g.gpus.len()
            );
        }
    }
    "not given (--hardware)".into()
}

/// The draft's name of the SUT boundary (4.1).
pub fn boundary(r: &RunReport) -> &'static str {
    match r.system.sut_boundary.as_str() {
        "engine" => "Model Engine",
        "gateway" => "Gateway",
        "compound" => "Compound",
        "firewall" => "AI Firewall",
        _ => "not declared",
    }
}

/// What the guardrails were, as far as the run knows (draft 4.8.1).
pub fn guardrails(r: &RunReport) -> String {
    let refused = r
        .summary
        .failures
        .by_kind
        .get(&crate::record::FailureKind::Refused)
        .copied()
        .unwrap_or(0);
    let declared: Vec<&String> = r
        .system
        .notes
        .iter()
        .filter(|n| {
            let n = n.to_lowercase();
            n.contains("guard") || n.contains("safety") || n.contains("filter")
        })
        .collect();
    let config = if declared.is_empty() {
        "not declared (add --note 'guardrails: ...')".to_string()
    } else {
        declared
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    format!("{config}; {refused} requests refused as content during the run")
}

fn ms(d: Option<crate::stats::Distribution>, f: fn(&crate::stats::Distribution) -> f64) -> String {
    d.map(|d| format!("{:.1}", f(&d)))
        .unwrap_or_else(|| "- (no completed request)".into())
}

/// C.1's key results of a generative endpoint: TTFT, TPOT and output throughput.
fn token_results(out: &mut String, s: &crate::metrics::RunSummary) {
    let _ = writeln!(
        out,
        "- TTFT P50: {} ms{}",
        ms(s.ttft_ms, |d| d.p50),
        ttft_coverage(s)
    );
    let _ = writeln!(out, "- TTFT P99: {} ms", ms(s.ttft_ms, |d| d.p99));
    let _ = writeln!(out, "- TPOT P50: {} ms", ms(s.tpot_ms, |d| d.p50));
    let _ = writeln!(out, "- TPOT P99: {} ms", ms(s.tpot_ms, |d| d.p99));
    let _ = writeln!(
        out,
        "- Max Throughput: {} tok/s (output, at this run's load; `servebench test throughput` searches for the maximum)",
        fmt_rate(s.output_tokens_per_s)
    );
    let _ = writeln!(
        out,
        "- Throughput at P99 TTFT < 500ms: {}",
        match s.ttft_ms {
            Some(d) if d.p99 < 500.0 => format!(
                "{} tok/s (P99 TTFT {:.1} ms at this load)",
                fmt_rate(s.output_tokens_per_s),
                d.p99
            ),
            Some(d) => format!("not met at this load (P99 TTFT {:.1} ms)", d.p99),
            None => "- (no completed request)".into(),
        }
    );
}

/// C.1's key results of a non-generative endpoint (embeddings, rerank): the request
/// latency stands where TTFT and TPOT would, and items per second beside requests.
fn whole_answer_results(out: &mut String, s: &crate::metrics::RunSummary) {
    let na = "n/a: non-generative endpoint";
    let _ = writeln!(out, "- TTFT P50, P99, TPOT P50, P99: {na}");
    let _ = writeln!(out, "- Request latency P50: {} ms", ms(s.e2e_ms, |d| d.p50));
    let _ = writeln!(out, "- Request latency P99: {} ms", ms(s.e2e_ms, |d| d.p99));
    let _ = writeln!(
        out,
        "- Max Throughput: {} items/s, {} input tok/s, {} req/s (at this run's load; `servebench test throughput` searches for the maximum)",
        fmt_rate(s.items_per_s),
        fmt_rate(s.input_tokens_per_s),
        fmt_rate(s.requests_per_s)
    );
}

/// The draft's Appendix C.1 minimum report, filled in, as plain text in the template's
/// own layout.
pub fn minimum_report(r: &RunReport, deviations: &[String]) -> String {
    let s = &r.summary;
    let c = &r.config;
    let mut out =
        String::from("=== LLM Benchmark Report (Minimum) ===\n\nSystem Identification:\n");
    let _ = writeln!(out, "- Model: {}", model(r));
    let _ = writeln!(out, "- Hardware: {}", hardware(r));
    let _ = writeln!(out, "- Software: {}", software(r));
    let _ = writeln!(out, "- SUT Boundary: {}", boundary(r));
    out.push_str("\nTest Configuration:\n");
    let _ = writeln!(out, "- Workload: {} (seed {})", c.workload.name, c.seed);
    if let Some(p) = &c.workload.profile {
        let _ = writeln!(
            out,
            "- Workload Profile: {}",
            crate::report::profiles::line(p)
        );
    }
    let _ = writeln!(out, "- Load Model: {}", load_model(c));
    let _ = writeln!(
        out,
        "- Request Count: {} ({})",
        s.requests.total,
        outcome_counts(s)
    );
    let _ = writeln!(out, "- Test Duration: {:.1} seconds", s.window.duration_s);
    out.push_str("\nKey Results:\n");
    if c.target.endpoint.is_generative() {
        token_results(&mut out, s);
    } else {
        whole_answer_results(&mut out, s);
    }
    out.push_str("\nNotes:\n");
    if deviations.is_empty() {
        out.push_str("- Deviations from methodology: none found\n");
    } else {
        for d in deviations {
            let _ = writeln!(out, "- Deviation: {d}");
        }
    }
    let _ = writeln!(out, "- Guardrail configuration: {}", guardrails(r));
    for n in &r.system.notes {
        let _ = writeln!(out, "- {n}");
    }
    out.push_str("\n=== End Report ===\n");
    out
}

/// The load model in the C.1 template's words: open-loop rate or closed-loop concurrency,
/// with the arrivals and limits.
fn load_model(c: &crate::config::RunConfig) -> String {
    describe_load(c)
}

/// C.2 item 1: model, hardware, software, boundary, the target and the generator's host.
pub fn system(r: &RunReport) -> Section {
    let c = &r.config;
    let mut facts = vec![
        ("Model", model(r)),
        (
            "Models the server lists",
            if r.server.models.is_empty() {
                "none listed".into()
            } else {
                r.server.models.join(", ")
            },
        ),
        ("Software", software(r)),
        ("Hardware", hardware(r)),
    ];
    if let Some(g) = r.system.gpus {
        facts.push(("GPUs serving the model", g.to_string()));
    }
    facts.push((
        "SUT boundary",
        format!(
            "{} (draft 4.1; --sut-boundary {})",
            boundary(r),
            r.system.sut_boundary
        ),
    ));
    facts.push((
        "Target",
        format!(
            "{}, {} API{}",
            c.target.url,
            endpoint_name(c),
            if c.target.builtin_simulator {
                " (servebench's built-in simulator)"
            } else {
                ""
            }
        ),
    ));
    if let Some(ctx) = r.server.context_tokens {
        facts.push((
            "Context per request",
            format!("{} tokens (from the server)", group_thousands(ctx as f64)),
        ));
    }
    facts.push(("Guardrails (draft 4.8)", guardrails(r)));
    let h = &r.host;
    facts.push((
        "Load generator host",
        format!(
            "{} ({} {}, {} CPUs{})",
            if h.hostname.is_empty() {
                "unnamed"
            } else {
                h.hostname.as_str()
            },
            h.os,
            h.arch,
            h.cpus,
            if h.cpu_model.is_empty() {
                String::new()
            } else {
                format!(", {}", h.cpu_model)
            }
        ),
    ));
    facts.push(("Tokenizer (draft 4.4)", tokenizer_line(&r.tokenizer)));
    facts.push(("Special tokens", r.tokenizer.special_tokens.clone()));
    Section::new("system", "1. System identification").facts(facts)
}

/// The tokenizer, where it came from, its vocabulary's size when known (0: not known, as
/// for a server's tokenizer that does not say) and the counting option.
pub(super) fn tokenizer_line(t: &crate::artifacts::TokenizerInfo) -> String {
    let vocab = match t.vocab_size {
        0 => String::new(),
        n => format!(", {} tokens in its vocabulary", group_thousands(n as f64)),
    };
    format!(
        "{} from {}{vocab}, counting option {}",
        t.name, t.source, t.counting_option
    )
}

/// C.2 item 2: the workload, the load and every execution parameter.
pub fn configuration(r: &RunReport) -> Section {
    let mut facts = workload_facts(r);
    facts.extend(execution_facts(r));
    facts.extend(measurement_facts(r));
    Section::new("configuration", "2. Test configuration").facts(facts)
}

/// The workload, its classes and data set, the seed, the load and the warm-up.
fn workload_facts(r: &RunReport) -> Vec<(&'static str, String)> {
    let c = &r.config;
    let w = &c.workload;
    let mut facts = vec![
        (
            "Workload",
            if w.description.is_empty() {
                w.name.clone()
            } else {
                format!("{}: {}", w.name, w.description)
            },
        ),
        ("Input length (tokens)", w.input.to_string()),
        ("Output length (max_tokens)", w.output.to_string()),
    ];
    if let Some(p) = &w.profile {
        facts.push(("Workload profile", crate::report::profiles::line(p)));
    }
    if !w.classes.is_empty() {
        let classes: Vec<String> = w
            .classes
            .iter()
            .map(|k| format!("{} (weight {})", k.name, k.weight))
            .collect();
        facts.push(("Request classes", classes.join(", ")));
    }
    if let Some(d) = &c.dataset_info {
        facts.push((
            "Dataset",
            format!("{} ({}, {} records used)", d.path, d.format, d.records),
        ));
    }
    facts.push(("Seed", c.seed.to_string()));
    facts.push(("Load", describe_load(c)));
    facts.push(("Warm-up (draft 4.5)", warmup_line(&r.warmup)));
    facts
}

/// The request options, the SLO, the limits and the retries.
fn execution_facts(r: &RunReport) -> Vec<(&'static str, String)> {
    let c = &r.config;
    vec![
        (
            "Request options",
            format!(
                "ignore EOS {}, prefix cache {}, temperature {}{}",
                yes(c.request.ignore_eos),
                if c.request.prefix_cache {
                    "allowed"
                } else {
                    "disabled per request"
                },
                c.request
                    .temperature
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "server default".into()),
                if c.request.extra_body.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", extra body fields: {}",
                        c.request
                            .extra_body
                            .iter()
                            .map(|(k, _)| k.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ),
        ),
        (
            "SLO",
            c.slo
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_else(|| "none given (--slo)".into()),
        ),
        (
            "Limits",
            format!(
                "timeout {:.0} s per request, at most {:.1} % failed requests, grace {:.0} s",
                c.request_timeout.as_secs_f64(),
                c.max_failure_share * 100.0,
                c.grace.as_secs_f64()
            ),
        ),
        (
            "Retries",
            if c.retry.max_retries == 0 {
                "none (failures are measured, never retried)".to_string()
            } else {
                format!(
                    "up to {} per request on HTTP {:?}{}, waiting at most {:.0} s",
                    c.retry.max_retries,
                    c.retry.statuses,
                    if c.retry.connect_errors {
                        " and connection errors"
                    } else {
                        ""
                    },
                    c.retry.max_wait_s
                )
            },
        ),
    ]
}

/// How the figures were measured: deadlines, timing, TTFT, ITL, percentiles, telemetry.
fn measurement_facts(r: &RunReport) -> Vec<(&'static str, String)> {
    vec![
        (
            "User-experience deadlines",
            r.summary.experience.deadlines.clone(),
        ),
        (
            "Timing (draft 4.2.1, 4.7)",
            format!(
                "{}; resolution {} µs; arrivals: {}",
                r.timing.clock, r.timing.resolution_us, r.timing.arrival
            ),
        ),
        ("TTFT", r.timing.ttft.clone()),
        (
            "ITL (draft 4.6.3)",
            format!(
                "{} ({})",
                r.summary.itl_method.description, r.summary.itl_method.reason
            ),
        ),
        ("Percentiles", r.timing.percentiles.clone()),
        (
            "Telemetry",
            format!(
                "server metrics: {}; GPUs: {}",
                r.telemetry.sources.server_metrics, r.telemetry.sources.gpu
            ),
        ),
    ]
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The requests' outcome counts as a table.
pub fn outcomes(r: &RunReport) -> Table {
    let s = &r.summary;
    let mut t = Table::new(&["Requests", "Count"]).titled("Requests of the measured phase");
    t.push(["Measured".to_string(), s.requests.total.to_string()]);
    t.push(["Completed".to_string(), s.requests.completed.to_string()]);
    let cancelled = cancelled(s);
    t.push([
        "Failed".to_string(),
        s.requests.failed.saturating_sub(cancelled).to_string(),
    ]);
    for (kind, n) in &s.failures.by_kind {
        if *kind != crate::record::FailureKind::Cancelled {
            t.push([format!("  {kind}"), n.to_string()]);
        }
    }
    if cancelled > 0 {
        t.push([
            "Cancelled at the end (unanswered when the run ended)".to_string(),
            cancelled.to_string(),
        ]);
    }
    if s.requests.never_sent > 0 {
        t.push([
            "Never sent (no connection)".to_string(),
            s.requests.never_sent.to_string(),
        ]);
    }
    if s.requests.ended_early > 0 {
        t.push([
            "Ended before max_tokens".to_string(),
            s.requests.ended_early.to_string(),
        ]);
    }
    if s.requests.with_reasoning > 0 {
        t.push([
            "Reasoned before answering".to_string(),
            s.requests.with_reasoning.to_string(),
        ]);
    }
    t.push([
        "Success rate".to_string(),
        format!("{:.2} %", s.success_rate * 100.0),
    ]);
    t
}
