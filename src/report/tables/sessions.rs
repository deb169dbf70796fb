//! The tables of a run's sessions (multi-turn chat, agents): where a session's time went,
//! and TTFT step by step as the history grows.

use super::table;
use crate::metrics::sessions::SessionSummary;
use crate::metrics::RunSummary;
use crate::report::page::Table;
use crate::report::terminal::opt_ms;

/// A share as a percentage, or `-`.
fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{:.1} %", v * 100.0))
        .unwrap_or_else(|| "-".into())
}

/// What the sessions were, in words: `40 sessions (38 complete), 5.2 requests and 4.1
/// steps each; 12 fan-out steps (up to 4 branches)`.
pub fn shape_line(s: &SessionSummary) -> String {
    let fan = match s.fan_out_steps {
        0 => String::new(),
        n => format!("; {n} fan-out steps (up to {} branches)", s.max_branches),
    };
    let failed = s.sessions - s.sessions_ok - s.sessions_cut;
    let mut status = format!("{} complete", s.sessions_ok);
    if s.sessions_cut > 0 {
        status.push_str(&format!(", {} cut short by the run's end", s.sessions_cut));
    }
    if failed > 0 {
        status.push_str(&format!(", {failed} ended by a failure"));
    }
    format!(
        "{} sessions ({status}), {:.1} requests and {:.1} steps each{fan}",
        s.sessions, s.requests_per_session, s.steps_per_session
    )
}

/// Where the complete sessions' time went, in words.
pub fn time_line(s: &SessionSummary) -> String {
    format!(
        "model {} · tools {} · thinking {} · other {} of the wall time",
        pct(s.model_share),
        pct(s.tool_share),
        pct(s.think_share),
        pct(s.other_share)
    )
}

/// The prefix cache's part, in words (or why it is unknown).
pub fn cache_line(s: &SessionSummary) -> String {
    match s.cached_share {
        Some(share) => format!(
            "{} of {} prompt tokens served from the server's cache ({:.1} %)",
            s.cached_prompt_tokens,
            s.prompt_tokens_reporting,
            share * 100.0
        ),
        None => "the server's answers did not say how many prompt tokens were cached".into(),
    }
}

/// Session times and TTFT by step.
pub fn sessions(summary: &RunSummary) -> Option<Table> {
    let s = summary.sessions.as_ref()?;
    let mut t = table(&["Sessions", "P50", "P95", "P99"]).titled("Sessions: where the time went");
    for (name, d) in [
        ("Wall time (first sent → last ended)", s.wall_ms),
        ("Model time (a request in flight)", s.model_ms),
        ("Tool time (planned)", s.tool_ms),
        ("Think time (planned)", s.think_ms),
    ] {
        t.push([
            name.to_string(),
            opt_ms(d, |d| d.p50),
            opt_ms(d, |d| d.p95),
            opt_ms(d, |d| d.p99),
        ]);
    }
    for row in &s.ttft_by_step {
        let later = if row.and_later { " and later" } else { "" };
        t.push([
            format!(
                "TTFT at step {}{later} ({} requests, {:.0} input tokens)",
                row.step + 1,
                row.requests,
                row.mean_input_tokens
            ),
            opt_ms(row.ttft_ms, |d| d.p50),
            opt_ms(row.ttft_ms, |d| d.p95),
            opt_ms(row.ttft_ms, |d| d.p99),
        ]);
    }
    let calls = match s.tool_calls_answered {
        0 => String::new(),
        n => format!("; the server's answers made {n} tool calls"),
    };
    Some(
        t.note(&format!("{}{calls}", shape_line(s)))
            .note(&format!("Time: {}", time_line(s)))
            .note(&format!("Cache: {}", cache_line(s))),
    )
}
