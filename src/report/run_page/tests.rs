//! Run pages built from hand-made records: the C.1 text exactly, every section and chart
//! present with data, fairness and compliance following the run's facts.

use super::*;
use crate::artifacts::{SystemInfo, TimingNotes, TokenizerInfo, ToolInfo, Verdict};
use crate::flags::{Cli, Command};
use crate::metrics::generator::{judge, GeneratorFacts};
use crate::metrics::{summarize, SummaryParams};
use crate::record::{Chunk, FailureKind, Outcome, Phase, RequestRecord};
use crate::telemetry::summary::ClientTotals;
use crate::telemetry::TelemetryData;
use clap::Parser;

const MS: u64 = 1_000_000;

/// A completed request sent at `sent` ms with one token per chunk at `tokens` ms.
fn ok(id: u64, sent: u64, tokens: &[u64], class: Option<&str>) -> RequestRecord {
    RequestRecord {
        id,
        phase: Phase::Measure,
        class: class.map(String::from),
        queued_at: sent * MS,
        sent_at: Some(sent * MS),
        first_byte_at: Some(tokens[0] * MS),
        first_content: Some(0),
        chunks: tokens
            .iter()
            .map(|&t| Chunk {
                at: t * MS,
                tokens: 1,
                bytes: 3,
            })
            .collect(),
        finished_at: tokens[tokens.len() - 1] * MS,
        outcome: Outcome::Ok,
        output_tokens: tokens.len() as u32,
        max_tokens: tokens.len() as u32,
        input_tokens: 100,
        derived: Some(crate::record::Derived {
            ttft_ms: Some((tokens[0] - sent) as f64),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn failed(id: u64, sent: u64, end: u64) -> RequestRecord {
    RequestRecord {
        id,
        phase: Phase::Measure,
        queued_at: sent * MS,
        sent_at: Some(sent * MS),
        finished_at: end * MS,
        outcome: Outcome::failed(FailureKind::Timeout, "no answer within 0.5 s"),
        max_tokens: 4,
        input_tokens: 100,
        ..Default::default()
    }
}

/// Flags every test report has: a fixed prompt salt among them, since a fresh one per run
/// would change every pinned run.json.
const FIXED_FLAGS: [&str; 6] = [
    "--quiet",
    "--no-fluidity",
    "--model",
    "m1",
    "--prompt-salt",
    "1",
];

/// A run report as `assemble` would make it, from `records` and `servebench run` flags.
pub(crate) fn report_of(flags: &[&str], records: &[RequestRecord]) -> RunReport {
    let mut argv = vec!["servebench", "run"];
    argv.extend(FIXED_FLAGS);
    argv.extend(flags);
    let Command::Run(args) = Cli::try_parse_from(&argv).unwrap().command else {
        unreachable!()
    };
    let resolved =
        crate::pipeline::resolve::resolve(&args.run, "http://127.0.0.1:9/v1", false).unwrap();
    let config = resolved.config;
    let summary = summarize(
        records,
        &SummaryParams {
            slo: config.slo.clone(),
            ux: config.ux,
            ..Default::default()
        },
    );
    let measured: Vec<&RequestRecord> = records.iter().collect();
    let end = records.iter().map(|r| r.finished_at).max().unwrap_or(0);
    let empty = TelemetryData::default();
    let telemetry = crate::telemetry::summary::summarize(
        &empty,
        summary.window.start,
        summary.window.end,
        summary.window.start,
        0,
        &ClientTotals {
            output_tokens: summary.total_output_tokens,
            completed: summary.requests.completed,
            ended: summary.requests.total,
            mean_ttft_ms: None,
        },
    );
    let verdict: Verdict = crate::pipeline::verdict::verdict(&summary, &config, false);
    RunReport {
        schema_version: crate::artifacts::SCHEMA_VERSION,
        tool: ToolInfo::default(),
        started_at: "2026-11-22T10:00:00.000Z".into(),
        finished_at: "2026-11-22T10:00:01.000Z".into(),
        started_at_us: 1,
        finished_at_us: 2,
        interrupted: false,
        recovered: false,
        command_line: argv.iter().map(|s| s.to_string()).collect(),
        host: Default::default(),
        system: SystemInfo {
            sut_boundary: "engine".into(),
            ..resolved.system
        },
        server: crate::record::run::ServerInfo {
            engine: Some("vllm".into()),
            version: Some("0.11.0".into()),
            ..Default::default()
        },
        tokenizer: TokenizerInfo {
            name: "cl100k_base".into(),
            source: "tiktoken".into(),
            vocab_size: 100_277,
            counting_option: "B".into(),
            special_tokens: "message texts only".into(),
        },
        warmup: Default::default(),
        prefill_profile: None,
        prefill_curve: None,
        timing: TimingNotes::new(true),
        timeseries: crate::telemetry::timeline::timeline(records, &empty, end),
        generator: judge(&measured, &GeneratorFacts::default()),
        verdict,
        summary,
        telemetry,
        config,
    }
}

/// Three completed requests (TTFT 100, 200, 300 ms; TPOT 10, 20, 30 ms) and one timeout.
fn records() -> Vec<RequestRecord> {
    vec![
        ok(0, 0, &[100, 110, 120, 130], Some("chat")),
        ok(1, 50, &[250, 270, 290, 310], Some("batch")),
        ok(2, 100, &[400, 430, 460, 490], Some("chat")),
        failed(3, 150, 650),
    ]
}

#[test]
fn the_minimum_report_follows_appendix_c1() {
    let r = report_of(
        &["--hardware", "H100 80GB x 2", "--note", "guardrails: none"],
        &records(),
    );
    let text = identity::minimum_report(&r, &compliance::deviations(&r));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "=== LLM Benchmark Report (Minimum) ===");
    for expected in [
        "- Model: m1",
        "- Hardware: H100 80GB x 2",
        "- Software: vllm 0.11.0",
        "- SUT Boundary: Model Engine",
        "- Request Count: 4 (3 completed, 1 failed)",
        // Linear interpolation: P99 of 100, 200, 300 is 200 + 0.98 × 100.
        "- TTFT P50: 200.0 ms (over the 3 of 4 measured requests that completed)",
        "- TTFT P99: 298.0 ms",
        "- TPOT P50: 20.0 ms",
        "- TPOT P99: 29.8 ms",
        "- Guardrail configuration: guardrails: none; 0 requests refused as content during the run",
        "- guardrails: none",
        "=== End Report ===",
    ] {
        assert!(lines.contains(&expected), "missing {expected:?} in\n{text}");
    }
    let thr = lines
        .iter()
        .find(|l| l.starts_with("- Throughput at P99 TTFT < 500ms: "))
        .unwrap();
    assert!(
        thr.ends_with("tok/s (P99 TTFT 298.0 ms at this load)"),
        "{thr}"
    );
    // Three samples are far below the 1000 P99 needs, and no warm-up ran: deviations.
    assert!(text.contains(
        "- Deviation: At least 1,000 samples for P99 (draft 5.1.2.1, 5.1.4.3): 3 TTFT samples"
    ));
    assert!(text.contains("- Deviation: Warm-up before measuring (draft 4.5)"));
}

#[test]
fn the_page_has_every_section_and_every_chart_has_data() {
    let recs = records();
    let r = report_of(&["--workload", "fairness-mix"], &recs);
    let data = RunData::of(&r, &recs);
    let page = page(&r, &data);
    let ids: Vec<&str> = page.sections.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "verdict",
            "minimum",
            "system",
            "configuration",
            "results",
            "detailed",
            "ttft",
            "itl",
            "over-time",
            "experience",
            "fairness",
            "telemetry",
            "generator",
            "compliance",
            "reproduction"
        ]
    );
    let charts: Vec<(&str, usize)> = page.figures().map(|f| (f.id.as_str(), f.points)).collect();
    let names: Vec<&str> = charts.iter().map(|c| c.0).collect();
    assert_eq!(
        names,
        [
            "ttft-cdf",
            "throughput-over-time",
            "ttft-hist",
            "itl-hist",
            "token-timeline",
            "latency-over-time",
            "concurrency-over-time",
            "fairness-ttft",
            "fairness-tpot"
        ]
    );
    // Three TTFTs as three CDF steps; 3 × 4 tokens on the timeline; two classes × P50, P99.
    assert_eq!(charts[0].1, 3);
    assert_eq!(charts[4].1, 12);
    assert_eq!(charts[7].1, 4);
    assert!(charts.iter().all(|c| c.1 > 0), "{charts:?}");
    let md = page.to_markdown();
    for needle in [
        "## Minimum report (draft Appendix C.1)",
        "=== LLM Benchmark Report (Minimum) ===",
        "**Time to first token (draft Table 1)**",
        "| TTFT P99 | 298 ms (too few requests for an interval) |",
        "**Latency (draft Table 4)**",
        "**Throughput (draft Table 3)**",
        "**Inter-token latency (draft Table 6)**",
        "**Fairness (draft Tables 8 and 9)",
        "## 6. Reproduction",
        "servebench run --quiet --no-fluidity --model m1 --prompt-salt 1 --workload fairness-mix",
        "**Figure: Time to first token: cumulative distribution** (chart `ttft-cdf` in report.html, 3 data points).",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in\n{md}");
    }
    let html = page.to_html();
    assert_eq!(html.matches("<svg ").count(), 9);
    assert!(html.contains("<td class=\"num\">298 ms</td>"));
}

/// Issue 23: the page leads with what matters (the verdict, the key numbers, the TTFT and
/// throughput charts); the C.1 text block and the configuration follow, in HTML and Markdown.
#[test]
fn the_page_opens_with_the_verdict_key_numbers_and_charts() {
    use crate::report::page::Block;
    let recs = records();
    let r = report_of(&[], &recs);
    let page = page(&r, &RunData::of(&r, &recs));
    let first = &page.sections[0];
    assert_eq!(first.id, "verdict");
    assert!(
        matches!(&first.blocks[0], Block::Callout(_, t) if t.starts_with("exit status ")),
        "{:?}",
        first.blocks[0]
    );
    let Block::Facts(facts) = &first.blocks[1] else {
        panic!("{:?}", first.blocks[1])
    };
    let labels: Vec<&str> = facts.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(labels, ["Load", "Requests", "TTFT", "TPOT", "Throughput"]);
    let opening: Vec<&str> = first
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Figure(f) => Some(f.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(opening, ["ttft-cdf", "throughput-over-time"]);
    // Every section is kept, each chart drawn once.
    let ids: Vec<&str> = page.figures().map(|f| f.id.as_str()).collect();
    assert_eq!(ids.iter().filter(|i| **i == "ttft-cdf").count(), 1);
    let position = |text: &str, needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("no {needle:?} in\n{text}"))
    };
    let md = page.to_markdown();
    let verdict_at = position(&md, "## Verdict and key numbers");
    let numbers_at = position(&md, "- **TTFT:** P50 ");
    let chart_at = position(&md, "(chart `throughput-over-time` in report.html");
    let c1_at = position(&md, "=== LLM Benchmark Report (Minimum) ===");
    let config_at = position(&md, "## 2. Test configuration");
    assert!(verdict_at < numbers_at && numbers_at < chart_at, "{md}");
    assert!(chart_at < c1_at && c1_at < config_at, "{md}");
    assert!(md[verdict_at..c1_at].contains("> **"), "{md}");
    let html = page.to_html();
    let chart_at = position(&html, "data-chart=\"ttft-cdf\"");
    assert!(position(&html, "<dt>TTFT</dt>") < chart_at);
    assert!(chart_at < position(&html, "=== LLM Benchmark Report (Minimum) ==="));
    assert!(
        position(&html, "<section id=\"verdict\">") < position(&html, "<section id=\"minimum\">")
    );
}

#[test]
fn without_classes_fairness_says_why_and_draws_nothing() {
    let recs: Vec<RequestRecord> = records()
        .into_iter()
        .map(|mut r| {
            r.class = None;
            r
        })
        .collect();
    let r = report_of(&[], &recs);
    let page = page(&r, &RunData::of(&r, &recs));
    let fair = page.sections.iter().find(|s| s.id == "fairness").unwrap();
    assert!(
        matches!(&fair.blocks[..], [crate::report::page::Block::Paragraph(p)] if p.contains("no request classes"))
    );
    assert!(!page.figures().any(|f| f.id.starts_with("fairness")));
}

#[test]
fn compliance_follows_the_run() {
    let r = report_of(&[], &records());
    let checks = compliance::checks(&r);
    let get = |name: &str| {
        checks
            .iter()
            .find(|c| c.requirement.starts_with(name))
            .unwrap()
    };
    assert_eq!(get("At least 1,000 samples for P99").met, Some(false));
    assert_eq!(get("Guardrail configuration").met, Some(false));
    assert_eq!(get("Timer resolution").met, Some(true));
    assert_eq!(get("Run completed").met, Some(true));
    let mut interrupted = r.clone();
    interrupted.interrupted = true;
    assert_eq!(
        compliance::checks(&interrupted)
            .iter()
            .find(|c| c.requirement.starts_with("Run completed"))
            .unwrap()
            .met,
        Some(false)
    );
}

#[test]
fn the_workload_hash_changes_with_what_is_sent_only() {
    let a = report_of(&["--seed", "1"], &records());
    let b = report_of(&["--seed", "1", "--concurrency", "9"], &records());
    let c = report_of(&["--seed", "2"], &records());
    let h = reproduce::workload_hash(&a);
    assert!(h.starts_with("sha256:") && h.len() == 7 + 16, "{h}");
    // The load is not the workload; the seed is.
    assert_eq!(h, reproduce::workload_hash(&b));
    assert_ne!(h, reproduce::workload_hash(&c));
}

/// Issue 23's run: 4 of 30 requests completed, 26 still in flight when the run ended and
/// cancelled.
fn overloaded() -> Vec<RequestRecord> {
    let mut recs: Vec<RequestRecord> = (0..4)
        .map(|i| ok(i, i * 2000, &[i * 2000 + 900, i * 2000 + 950], None))
        .collect();
    recs.extend((4..30).map(|i| RequestRecord {
        id: i,
        phase: Phase::Measure,
        queued_at: i * 2000 * MS,
        sent_at: Some(i * 2000 * MS),
        finished_at: 70_000 * MS,
        outcome: Outcome::failed(
            FailureKind::Cancelled,
            "still in flight when the run stopped (duration limit plus --grace, or Ctrl-C)",
        ),
        max_tokens: 2,
        input_tokens: 100,
        ..Default::default()
    }));
    recs
}

/// Issue 23: 4 of 30 requests completed, 26 cancelled at the end. The verdict is one, and
/// every place that shows it says it: the terminal, the report page, run.json.
#[test]
fn a_run_that_mostly_never_finished_fails_with_one_verdict_everywhere() {
    let r = report_of(&["--rate", "0.5", "--duration", "60s"], &overloaded());
    assert_eq!(r.verdict.exit_status, 1, "{:?}", r.verdict);
    let reason = r.verdict.reasons.join("; ");
    assert!(
        reason.starts_with("overloaded: 26 of 30 measured requests"),
        "{reason}"
    );
    // Cancelled requests stay out of the server's failure rate: no --max-failures reason.
    assert!(!reason.contains("--max-failures"), "{reason}");
    let terminal = crate::report::terminal::render(&r);
    let flat = terminal.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("exit status 1: overloaded: 26 of 30"),
        "{terminal}"
    );
    let (tone, text) = verdict(&r);
    assert_eq!(tone, Tone::Fail);
    assert!(
        text.starts_with("exit status 1: overloaded: 26 of 30"),
        "{text}"
    );
    let json = crate::report::json::run_json(&r);
    assert_eq!(json["verdict"]["exit_status"], 1);
    assert_eq!(
        json["verdict"]["reasons"][0].as_str(),
        Some(r.verdict.reasons[0].as_str())
    );
}

/// Issue 36, item 8: an overloaded run's TTFT covered 9 of 149 requests without saying
/// so, and its summary called the requests cancelled at the end "failed" while the
/// verdict said they were cancelled. Every summary says how many requests the TTFT covers
/// and counts the cancelled apart, in the verdict's words.
#[test]
fn an_overloaded_run_says_what_its_figures_cover_and_calls_cancelled_cancelled() {
    let r = report_of(&["--rate", "0.5", "--duration", "60s"], &overloaded());
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let terminal = flat(&crate::report::terminal::render(&r));
    for expected in [
        "30 measured: 4 completed, 26 cancelled at the end, over",
        "(over the 4 of 30 measured requests that completed)",
        "Cancelled 26 still unanswered when the run ended, cancelled by servebench",
    ] {
        assert!(terminal.contains(expected), "`{expected}` in {terminal}");
    }
    assert!(!terminal.contains("failed"), "{terminal}");
    assert!(!terminal.contains("Failures"), "{terminal}");
    let numbers = key_numbers(&r);
    let fact = |k: &str| numbers.iter().find(|(l, _)| *l == k).unwrap().1.clone();
    assert!(
        fact("Requests").starts_with("30 measured, 4 completed, 26 cancelled at the end, over"),
        "{}",
        fact("Requests")
    );
    assert!(
        fact("TTFT").ends_with("(over the 4 of 30 measured requests that completed)"),
        "{}",
        fact("TTFT")
    );
    let c1 = identity::minimum_report(&r, &[]);
    assert!(
        c1.contains("- Request Count: 30 (4 completed, 26 cancelled at the end)"),
        "{c1}"
    );
    let rows = identity::outcomes(&r).rows;
    assert!(
        rows.contains(&vec!["Failed".to_string(), "0".to_string()]),
        "{rows:?}"
    );
    assert!(
        rows.contains(&vec![
            "Cancelled at the end (unanswered when the run ended)".to_string(),
            "26".to_string()
        ]),
        "{rows:?}"
    );
    // A run whose every request completed says nothing of coverage.
    let all = report_of(&[], &records()[..3]);
    assert_eq!(crate::report::tables::ttft_coverage(&all.summary), "");
    assert_eq!(
        crate::report::tables::outcome_counts(&all.summary),
        "3 completed, 0 failed"
    );
}

/// Issue 36, item 8: a tokenizer whose vocabulary size is not known (0) is not said to
/// have "0 tokens in its vocabulary".
#[test]
fn an_unknown_vocabulary_size_is_not_printed() {
    let mut t = report_of(&[], &records()).tokenizer;
    assert_eq!(
        identity::tokenizer_line(&t),
        "cl100k_base from tiktoken, 100,277 tokens in its vocabulary, counting option B"
    );
    t.vocab_size = 0;
    assert_eq!(
        identity::tokenizer_line(&t),
        "cl100k_base from tiktoken, counting option B"
    );
}

/// Issue 36, item 8: llama.cpp's counters move in bursts, so its per-scrape token rate
/// spiked to 500-1,800 tok/s while ~40 tok/s came out, and flattened the client's line.
/// Averaged over the last seconds at each scrape, it reads the rate it averages.
#[test]
fn the_server_token_rate_is_averaged_over_the_last_seconds() {
    // A scrape a second for 60 s; the counter moves by 400 tokens every 10th second
    // (40 tok/s on average): per scrape, 400 then nine zeros.
    let raw: Vec<(f64, f64)> = (0..60)
        .map(|t| (f64::from(t), if t % 10 == 9 { 400.0 } else { 0.0 }))
        .collect();
    let smooth = figures::trailing_rate(&raw);
    assert_eq!(smooth.len(), raw.len());
    for (t, v) in smooth.iter().skip(10) {
        assert!((v - 40.0).abs() < 1e-9, "at {t} s: {v} tok/s");
    }
    // Scrapes 2 s apart: each rate covers 2 s.
    let sparse = [(0.0, 10.0), (2.0, 30.0), (4.0, 30.0)];
    let s = figures::trailing_rate(&sparse);
    assert!((s[2].1 - (10.0 + 60.0 + 60.0) / 5.0).abs() < 1e-9, "{s:?}");
}
