//! CSV for spreadsheets: one row per request (every phase, with its phase named), and one
//! row per run for a summary table. Units are in the column names (`_us`: Unix-epoch
//! microseconds; `_ms`: milliseconds; `_per_s`: per second), fields are quoted as RFC 4180
//! says (only when they hold a comma, a quote or a line break). Pure.

use crate::artifacts::RunReport;
use crate::record::wire::{WireOutcome, WireRecord};
use std::fmt::Write;

/// Columns of the requests CSV, in order.
pub const REQUEST_COLUMNS: [&str; 32] = [
    "id",
    "phase",
    "class",
    "session",
    "turn",
    "outcome",
    "failure_kind",
    "failure_detail",
    "http_status",
    "scheduled_at_us",
    "queued_at_us",
    "sent_at_us",
    "first_byte_at_us",
    "first_token_at_us",
    "last_token_at_us",
    "finished_at_us",
    "connect_ms",
    "ttfb_ms",
    "ttft_ms",
    "tpot_ms",
    "e2e_ms",
    "user_idle_ms",
    "deadline_misses",
    "fluidity",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "max_tokens",
    "chunks",
    "finish_reason",
    "retries",
    "reused_connection",
];

/// Columns of the summary CSV, in order.
pub const SUMMARY_COLUMNS: [&str; 34] = [
    "run",
    "started_at",
    "target",
    "model",
    "engine",
    "engine_version",
    "workload",
    "seed",
    "load",
    "requests_total",
    "requests_completed",
    "requests_failed",
    "success_rate",
    "window_s",
    "output_tokens_per_s",
    "input_tokens_per_s",
    "requests_per_s",
    "goodput_requests_per_s",
    "slo_attainment",
    "ttft_p50_ms",
    "ttft_p90_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p90_ms",
    "tpot_p99_ms",
    "itl_p50_ms",
    "itl_p99_ms",
    "e2e_p50_ms",
    "e2e_p90_ms",
    "e2e_p99_ms",
    "total_input_tokens",
    "total_output_tokens",
    "gpus",
    "exit_status",
];

/// One field, quoted when it must be.
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn line(out: &mut String, fields: &[String]) {
    let row: Vec<String> = fields.iter().map(|f| field(f)).collect();
    let _ = writeln!(out, "{}", row.join(","));
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn ms(a: Option<u64>, b: Option<u64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{}", a.saturating_sub(b) as f64 / 1000.0),
        _ => String::new(),
    }
}

/// The requests of a run, one row each, in file order.
pub fn requests(records: &[WireRecord]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", REQUEST_COLUMNS.join(","));
    for w in records {
        let (outcome, kind, detail) = match &w.outcome {
            WireOutcome::Ok(_) => ("ok".to_owned(), String::new(), String::new()),
            WireOutcome::Failed { kind, detail } => (
                "failed".to_owned(),
                serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                detail.clone(),
            ),
        };
        let d = w.derived.as_ref();
        let phase = serde_json::to_value(w.phase)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        line(
            &mut out,
            &[
                w.id.to_string(),
                phase,
                w.class.clone().unwrap_or_default(),
                opt(w.session),
                opt(w.turn),
                outcome,
                kind,
                detail,
                opt(w.http_status),
                opt(w.scheduled_at_us),
                w.queued_at_us.to_string(),
                opt(w.sent_at_us),
                opt(w.first_byte_at_us),
                opt(w.first_token_at_us),
                opt(w.chunks.last().map(|c| c.0)),
                w.finished_at_us.to_string(),
                w.connect_ms.to_string(),
                ms(w.first_byte_at_us, w.submitted_at_us()),
                opt(d.and_then(|d| d.ttft_ms)),
                opt(d.and_then(|d| d.tpot_ms)),
                opt(d.and_then(|d| d.e2e_ms)),
                opt(d.map(|d| d.user_idle_ms)),
                opt(d.map(|d| d.deadline_misses)),
                opt(d.and_then(|d| d.fluidity)),
                w.input_tokens.to_string(),
                w.output_tokens.to_string(),
                w.reasoning_tokens.to_string(),
                w.max_tokens.to_string(),
                w.chunks.len().to_string(),
                w.finish_reason.clone().unwrap_or_default(),
                w.retries.to_string(),
                w.reused_connection.to_string(),
            ],
        );
    }
    out
}

/// The summaries of `runs` (`(folder, report)`), one row each, under one header.
pub fn summaries(runs: &[(String, &RunReport)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", SUMMARY_COLUMNS.join(","));
    for (path, r) in runs {
        let s = &r.summary;
        let p = |d: &Option<crate::stats::Distribution>,
                 f: fn(&crate::stats::Distribution) -> f64| {
            opt(d.as_ref().map(f))
        };
        let per_request = s.slo.as_ref().and_then(|slo| slo.per_request.as_ref());
        line(
            &mut out,
            &[
                path.clone(),
                r.started_at.clone(),
                r.config.target.url.to_string(),
                r.config.target.model.clone(),
                r.server.engine.clone().unwrap_or_default(),
                r.server.version.clone().unwrap_or_default(),
                r.config.workload.name.clone(),
                r.config.seed.to_string(),
                crate::report::tables::describe_load(&r.config),
                s.requests.total.to_string(),
                s.requests.completed.to_string(),
                s.requests.failed.to_string(),
                s.success_rate.to_string(),
                s.window.duration_s.to_string(),
                s.output_tokens_per_s.to_string(),
                s.input_tokens_per_s.to_string(),
                s.requests_per_s.to_string(),
                opt(per_request.map(|a| a.goodput_requests_per_s)),
                opt(per_request.map(|a| a.attainment)),
                p(&s.ttft_ms, |d| d.p50),
                p(&s.ttft_ms, |d| d.p90),
                p(&s.ttft_ms, |d| d.p99),
                p(&s.tpot_ms, |d| d.p50),
                p(&s.tpot_ms, |d| d.p90),
                p(&s.tpot_ms, |d| d.p99),
                p(&s.itl_ms, |d| d.p50),
                p(&s.itl_ms, |d| d.p99),
                p(&s.e2e_ms, |d| d.p50),
                p(&s.e2e_ms, |d| d.p90),
                p(&s.e2e_ms, |d| d.p99),
                s.total_input_tokens.to_string(),
                s.total_output_tokens.to_string(),
                opt(r.system.gpus),
                r.verdict.exit_status.to_string(),
            ],
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    /// Splits one CSV line into fields (quotes as RFC 4180), for the checks below.
    fn split(line: &str) -> Vec<String> {
        let mut fields = vec![String::new()];
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    chars.next();
                    fields.last_mut().unwrap().push('"');
                }
                ('"', _) => quoted = !quoted,
                (',', false) => fields.push(String::new()),
                (c, _) => fields.last_mut().unwrap().push(c),
            }
        }
        fields
    }

    #[test]
    fn quoting() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(split("a,\"b,c\",\"d\"\"e\""), ["a", "b,c", "d\"e"]);
    }

    #[test]
    fn one_row_per_request_with_the_files_values() {
        let records = fixture::records();
        let text = requests(&records);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], REQUEST_COLUMNS.join(","));
        assert_eq!(lines.len(), records.len() + 1);
        // Every header names its unit or is a count, a name or a flag.
        for c in REQUEST_COLUMNS {
            let unitless = [
                "id",
                "phase",
                "class",
                "session",
                "turn",
                "outcome",
                "failure_kind",
                "failure_detail",
                "http_status",
                "deadline_misses",
                "fluidity",
                "chunks",
                "finish_reason",
                "retries",
                "reused_connection",
            ];
            assert!(
                unitless.contains(&c)
                    || c.ends_with("_us")
                    || c.ends_with("_ms")
                    || c.ends_with("_tokens"),
                "{c} names no unit"
            );
        }
        let col = |name: &str| REQUEST_COLUMNS.iter().position(|c| *c == name).unwrap();
        for (w, l) in records.iter().zip(&lines[1..]) {
            let f = split(l);
            assert_eq!(f.len(), REQUEST_COLUMNS.len(), "{l}");
            assert_eq!(f[col("id")], w.id.to_string());
            assert_eq!(f[col("output_tokens")], w.output_tokens.to_string());
            assert_eq!(f[col("sent_at_us")], opt(w.sent_at_us));
            let ttft = w.derived.as_ref().and_then(|d| d.ttft_ms);
            assert_eq!(f[col("ttft_ms")], opt(ttft));
            match &w.outcome {
                WireOutcome::Ok(_) => assert_eq!(f[col("outcome")], "ok"),
                WireOutcome::Failed { detail, .. } => {
                    assert_eq!(f[col("outcome")], "failed");
                    assert_eq!(&f[col("failure_detail")], detail);
                    assert!(!f[col("failure_kind")].is_empty());
                }
            }
            if let (Some(b), Some(s)) = (w.first_byte_at_us, w.submitted_at_us()) {
                let ttfb: f64 = f[col("ttfb_ms")].parse().unwrap();
                assert!((ttfb - (b - s) as f64 / 1000.0).abs() < 1e-9);
            }
        }
        // The fixture has failures, and one carries quotes and a comma in its detail.
        assert!(text.contains(",failed,http_status,\"HTTP 500: {\"\"error\"\""));
    }

    #[test]
    fn one_row_per_run() {
        let r = fixture::report();
        let text = summaries(&[("runs/a".into(), &r), ("runs/b".into(), &r)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], SUMMARY_COLUMNS.join(","));
        let f = split(lines[1]);
        assert_eq!(f.len(), SUMMARY_COLUMNS.len());
        let col = |name: &str| SUMMARY_COLUMNS.iter().position(|c| *c == name).unwrap();
        assert_eq!(f[col("run")], "runs/a");
        assert_eq!(split(lines[2])[col("run")], "runs/b");
        assert_eq!(
            f[col("requests_total")],
            r.summary.requests.total.to_string()
        );
        let tps: f64 = f[col("output_tokens_per_s")].parse().unwrap();
        assert_eq!(tps, r.summary.output_tokens_per_s);
        let p99: f64 = f[col("ttft_p99_ms")].parse().unwrap();
        assert_eq!(p99, r.summary.ttft_ms.as_ref().unwrap().p99);
        let goodput: f64 = f[col("goodput_requests_per_s")].parse().unwrap();
        let a = r
            .summary
            .slo
            .as_ref()
            .unwrap()
            .per_request
            .as_ref()
            .unwrap();
        assert_eq!(goodput, a.goodput_requests_per_s);
        assert_eq!(f[col("exit_status")], "1");
        assert_eq!(f[col("load")], "closed loop, concurrency 4; 24 requests");
    }
}
