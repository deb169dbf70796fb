//! The warnings a summary raises about its own figures, the start-up transient among them,
//! and those the caller and the warm-up add.

use super::{RunSummary, SummaryParams, Window};
use crate::clock::Nanos;
use crate::metrics::request::{ItlOption, RequestMetrics};
use crate::metrics::warnings::Warning;
use crate::record::RequestRecord;
use crate::stats::distribution::{samples_needed, Distribution};

/// The summary's warnings: from its figures, the start-up transient found (if any), then
/// the caller's and the warm-up's.
pub(crate) fn add_warnings(
    summary: &mut RunSummary,
    transient: Option<Warning>,
    params: &SummaryParams,
) {
    summary.warnings = warnings(summary);
    summary.warnings.extend(transient);
    summary
        .warnings
        .extend(params.extra_warnings.iter().cloned());
    if let Some(w) = cached_prompts(summary, params.expects_cached_prompts) {
        summary.warnings.push(w);
    }
    if let Some(w) = &params.warmup {
        if w.policy.starts_with("none") {
            summary.warnings.push(Warning::ColdStart);
        } else if w.capped {
            summary.warnings.push(Warning::WarmupCapped {
                requests: w.requests,
                output_tokens: w.output_tokens,
                cap_s: w.cap_s,
            });
        }
    }
}

fn warnings(s: &RunSummary) -> Vec<Warning> {
    let mut w = Vec::new();
    for (name, d) in [
        ("TTFT", s.ttft_ms),
        ("TPOT", s.tpot_ms),
        ("E2E", s.e2e_ms),
        ("ITL", s.itl_ms),
    ] {
        let Some(d) = d else { continue };
        if d.n < samples_needed(99.0) {
            w.push(Warning::FewSamples {
                metric: name,
                percentile: "P99",
                samples: d.n,
                needed: samples_needed(99.0),
            });
        } else if d.n < samples_needed(99.9) {
            w.push(Warning::FewSamples {
                metric: name,
                percentile: "P99.9",
                samples: d.n,
                needed: samples_needed(99.9),
            });
        }
    }
    if s.requests.total > 0 && s.requests.completed == 0 {
        w.push(Warning::NoRequestCompleted {
            total: s.requests.total,
        });
    } else if s.requests.failed > 0 {
        w.push(Warning::Failures {
            failed: s.requests.failed,
            total: s.requests.total,
            by_kind: s
                .requests
                .failed_by_kind
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    if s.requests.ended_early > 0 {
        w.push(Warning::EndedEarly {
            requests: s.requests.ended_early,
        });
    }
    if s.requests.with_reasoning > 0 {
        w.push(Warning::ReasoningBeforeAnswer {
            requests: s.requests.with_reasoning,
        });
    }
    if s.itl_method.option == ItlOption::A {
        w.push(Warning::ItlBetweenChunks {
            reason: s.itl_method.reason.clone(),
        });
    }
    if let Some(b) = s.arrival_balance.filter(|b| b.saturated) {
        w.push(Warning::ServerSaturated {
            completion_share: b.completion_share.unwrap_or(0.0),
        });
    }
    if s.experience
        .smooth_goodput
        .as_ref()
        .is_some_and(|g| !g.window.outcome_independent)
    {
        w.push(Warning::UxWindowDependsOnOutcomes);
    }
    w
}

/// Past this share of prompt tokens served from the server's cache, a workload that reuses
/// no prefixes on purpose measured a cache (exo-bench's rule: a cold cache for every
/// measurement).
pub const CACHED_PROMPT_WARN_SHARE: f64 = 0.05;

/// The warning that a measured phase's prompts came from the server's prefix cache when
/// its workload reuses none on purpose: more than 5 % of its prompt tokens cached, and more
/// than 5 % of its requests more than half cached. The second condition keeps a chat
/// template's common first tokens (16-30 a request on Llama 3 or Qwen templates, cached by
/// every engine) from reading as a replay on short prompts; a replayed prompt is cached
/// nearly whole.
fn cached_prompts(s: &RunSummary, expected: bool) -> Option<Warning> {
    let c = s.prompt_cache.as_ref()?;
    let share = c.hit_rate()?;
    let replayed =
        c.mostly_cached_requests as f64 > CACHED_PROMPT_WARN_SHARE * c.requests_reporting as f64;
    (!expected && share > CACHED_PROMPT_WARN_SHARE && replayed).then_some(
        Warning::PromptsFromCache {
            cached_share: share,
            cached_tokens: c.cached_tokens,
            prompt_tokens: c.prompt_tokens,
        },
    )
}

/// The start of a run that counts as its "first seconds": this share of the window…
const STARTUP_SHARE: f64 = 0.1;
/// …and at least this long, s.
const STARTUP_MIN_S: f64 = 1.0;
/// A start-up transient: the first seconds' TTFT P99 at least this many times the rest's…
const STARTUP_RATIO: f64 = 3.0;
/// …and at least this much above it, ms (a few ms either way is not a transient).
const STARTUP_MIN_EXCESS_MS: f64 = 20.0;

/// A start-up transient: the TTFT P99 of the requests attempted in the run's first seconds
/// ([`STARTUP_SHARE`] of the window, at least [`STARTUP_MIN_S`], at most half) far above
/// the rest's. Needs 5 early and 20 later requests with a TTFT.
pub fn startup_transient(
    measured: &[&RequestRecord],
    per_request: &[Option<RequestMetrics>],
    window: Window,
    p99_ms: Option<f64>,
) -> Option<Warning> {
    let span_s = window.duration_s;
    let early_s = (span_s * STARTUP_SHARE)
        .max(STARTUP_MIN_S)
        .min(span_s / 2.0);
    let cut = window.start + (early_s * 1e9) as Nanos;
    let (mut early, mut rest): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for (r, m) in measured.iter().zip(per_request) {
        let Some(m) = m else { continue };
        if r.attempted_at() < cut {
            early.push(m.ttft_ms);
        } else {
            rest.push(m.ttft_ms);
        }
    }
    if early.len() < 5 || rest.len() < 20 {
        return None;
    }
    let early_p99_ms = Distribution::of(&mut early)?.p99;
    let rest_p99_ms = Distribution::of(&mut rest)?.p99;
    let p99_ms = p99_ms.unwrap_or(early_p99_ms);
    (early_p99_ms >= STARTUP_RATIO * rest_p99_ms
        && early_p99_ms - rest_p99_ms >= STARTUP_MIN_EXCESS_MS)
        .then_some(Warning::StartupTransient {
            early_s,
            early_p99_ms,
            rest_p99_ms,
            p99_ms,
        })
}
