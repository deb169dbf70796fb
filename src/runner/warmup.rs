//! Warm-up before measuring (draft 4.5): requests at the run's own load until the draft's
//! targets are met, a drain, then sequential probes until latency is stable.
//!
//! The warm-up never runs longer than `--warmup-max`. When it stops at that cap short of its
//! targets, the report says what was achieved against what the draft requires and marks the
//! run non-compliant; nothing is claimed that did not happen. Nor does it spin on failures:
//! once `phase::GIVE_UP_AFTER` requests in a row have failed with none succeeding, it stops
//! and says so.
//!
//! What it will cost is said before it starts (`plan::describe_warmup`), and what it saw of
//! the server under the run's load ([`Warmed`]) carries into the measured phase: its rate
//! seeds the ETA, and in closed loop its request time spreads the first measured requests
//! (`phase::LeadIn`) so the measurement does not open with every stream at once.

use super::cpu::ThreadCpu;
use super::feeder::Feed;
use super::phase::{run_phase, Controls, DoneWhen, PhasePlan, Shared};
use super::probe::{one_request, prepared, Solo};
use crate::client::PreparedRequest;
use crate::config::{RunConfig, Warmup};
use crate::record::run::WarmupReport;
use crate::record::Phase;
use crate::schedule::LoadPattern;
use crate::store::writer::Counters;
use crate::tokenizer::SharedTokenizer;
use crate::workload::WorkloadSpec;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The draft's warm-up targets (4.5.1).
pub const REQUIRED_REQUESTS: u64 = 100;
pub const REQUIRED_OUTPUT_TOKENS: u64 = 10_000;

/// What the warm-up achieved, and what the measured phase carries on from it.
#[derive(Debug, Clone, Default)]
pub struct Warmed {
    pub report: WarmupReport,
    /// Requests completed per second over the warm-up's load phase (drain included).
    pub rate_per_s: Option<f64>,
    /// Closed loop: how long one request took under the warm-up's load, by Little's law
    /// (requests in flight ÷ requests completed per second).
    pub cycle: Option<std::time::Duration>,
    /// The warm-up stopped sending after this many failures in a row ([`gave_up_warning`]).
    pub gave_up_after: Option<u64>,
}

impl Warmed {
    /// From a warm-up load phase of `seconds` that completed `completed` requests under
    /// `load`; nothing when it completed none or gave up.
    pub fn pace(load: LoadPattern, completed: u64, seconds: f64) -> (Option<f64>, Option<f64>) {
        if completed == 0 || seconds <= 0.0 {
            return (None, None);
        }
        let rate = completed as f64 / seconds;
        // In flight: every stream, or every request of a warm-up shorter than the streams.
        let cycle = match load {
            LoadPattern::Closed { concurrency } => {
                Some(u64::from(concurrency.max(1)).min(completed) as f64 / rate)
            }
            _ => None,
        };
        (Some(rate), cycle)
    }
}

/// Runs the warm-up of `config`; returns what it achieved.
pub async fn warm_up(
    config: &RunConfig,
    feed: &Feed,
    shared: &Shared,
    controls: &Controls,
    counters: &Arc<Counters>,
    cpu: &ThreadCpu,
    tokenizer: &SharedTokenizer,
) -> Warmed {
    let mut report = WarmupReport {
        policy: policy(config.warmup),
        cap_s: config.warmup_max.as_secs_f64(),
        cap_source: match config.warmup_sizing {
            crate::config::WarmupSizing::Flags => None,
            crate::config::WarmupSizing::RunLength => Some("half the measured phase".into()),
            crate::config::WarmupSizing::QuickTest => Some("a --quick test's level".into()),
        },
        ..Default::default()
    };
    if config.warmup == Warmup::None {
        return Warmed {
            report,
            ..Default::default()
        };
    }
    let tokens_needed = required_output_tokens(config);
    let (max_requests, done_when) = limits(config.warmup, tokens_needed, counters, &mut report);
    let end = run_phase(
        warmup_plan(config, max_requests, done_when),
        feed.clone(),
        shared.clone(),
        controls.clone(),
        cpu.clone(),
    )
    .await;
    let phase_s = shared.clock.now().saturating_sub(end.started_at) as f64 / 1e9;
    let w = &counters.warmup;
    let (rate_per_s, cycle) = match end.gave_up_after {
        Some(_) => (None, None),
        None => Warmed::pace(config.load, w.completed.load(Ordering::Relaxed), phase_s),
    };
    report.requests = w.completed.load(Ordering::Relaxed) + w.failed.load(Ordering::Relaxed);
    report.output_tokens = w.output_tokens.load(Ordering::Relaxed);
    report.capped = end.timed_stop && !controls.interrupted.load(Ordering::Acquire);
    let targets_met = match config.warmup {
        Warmup::Auto => {
            report.requests >= REQUIRED_REQUESTS && report.output_tokens >= tokens_needed
        }
        _ => !report.capped,
    };
    if config.warmup == Warmup::Auto
        && end.gave_up_after.is_none()
        && !controls.stop_sending.load(Ordering::Acquire)
    {
        let (probes, stable) = probe(config, shared, tokenizer).await;
        report.probe_e2e_ms = probes;
        report.stabilized = stable;
    }
    report.compliant = match config.warmup {
        Warmup::Auto => targets_met && report.stabilized,
        Warmup::Requests(n) => targets_met && n >= REQUIRED_REQUESTS,
        Warmup::None => false,
    };
    Warmed {
        report,
        rate_per_s,
        cycle: cycle.map(std::time::Duration::from_secs_f64),
        gave_up_after: end.gave_up_after,
    }
}

/// The warning a warm-up that stopped after `n` failures in a row gives.
pub fn gave_up_warning(n: u64) -> String {
    format!(
        "WARNING: warm-up stopped: {n} requests in a row failed and none succeeded, so the server is not answering this API as configured; the measured phase stops the same way, and the report lists the failures with their usual causes"
    )
}

/// How the warm-up is run, in words.
fn policy(warmup: Warmup) -> String {
    match warmup {
        Warmup::None => "none (cold start: measured without warm-up)".into(),
        Warmup::Requests(n) => format!("{n} requests at the run's load, then drain"),
        Warmup::Auto => format!(
            "auto (draft 4.5): >= {REQUIRED_REQUESTS} requests and >= {REQUIRED_OUTPUT_TOKENS} output tokens at the run's load, drain, probe until two consecutive probes differ < 10 %"
        ),
    }
}

/// The output tokens the draft's warm-up asks for: none on a non-generative endpoint
/// (embeddings, rerank), which generates none; there the requests alone count.
fn required_output_tokens(config: &RunConfig) -> u64 {
    if config.target.endpoint.is_generative() {
        REQUIRED_OUTPUT_TOKENS
    } else {
        0
    }
}

/// When the warm-up's load phase stops sending: after the requests asked for, or once the
/// draft's targets are met (which `report` then notes as required).
fn limits(
    warmup: Warmup,
    tokens_needed: u64,
    counters: &Arc<Counters>,
    report: &mut WarmupReport,
) -> (Option<u64>, Option<DoneWhen>) {
    let c = counters.clone();
    match warmup {
        Warmup::Requests(n) => (Some(n), None),
        _ => {
            report.required_requests = Some(REQUIRED_REQUESTS);
            report.required_output_tokens = Some(tokens_needed);
            (
                None,
                Some(Arc::new(move || {
                    let w = &c.warmup;
                    w.completed.load(Ordering::Relaxed) + w.failed.load(Ordering::Relaxed)
                        >= REQUIRED_REQUESTS
                        && w.output_tokens.load(Ordering::Relaxed) >= tokens_needed
                })),
            )
        }
    }
}

/// The warm-up's load phase: the run's own load, at most `--warmup-max`.
fn warmup_plan(
    config: &RunConfig,
    max_requests: Option<u64>,
    done_when: Option<DoneWhen>,
) -> PhasePlan {
    PhasePlan {
        phase: Phase::Warmup,
        load: config.load,
        max_requests,
        max_duration: Some(config.warmup_max),
        done_when,
        seed: config.seed,
        grace: config.grace,
        max_concurrency: config.max_concurrency,
        start_at: None,
        shard: None,
        lead_in: None,
    }
}

/// Sequential probes with a fixed request until two consecutive E2E differ by < 10 %.
async fn probe(
    config: &RunConfig,
    shared: &Shared,
    tokenizer: &SharedTokenizer,
) -> (Vec<f64>, bool) {
    let Some(req_spec) = one_request(
        WorkloadSpec::fixed(128, 32),
        config.seed ^ 0xF00D,
        tokenizer,
    )
    .await
    else {
        return (Vec::new(), false);
    };
    let req = prepared(
        &config.target,
        &config.request,
        &req_spec.messages,
        req_spec.max_tokens,
        req_spec.input_tokens,
        u64::MAX,
    );
    let solo = Solo::of(shared);
    let mut probes: Vec<f64> = Vec::new();
    for i in 0..10u64 {
        let req = PreparedRequest {
            id: u64::MAX - i,
            ..req.clone()
        };
        let ex = solo.send(&req, Phase::Probe).await;
        let r = ex.record();
        let e2e = r
            .answer_end_at()
            .zip(r.submitted_at())
            .filter(|_| r.outcome.is_ok())
            .map(|(t, s)| t.saturating_sub(s) as f64 / 1e6);
        let _ = shared.sink.send(ex.into_draft());
        let Some(e2e) = e2e else {
            return (probes, false);
        };
        let stable = probes
            .last()
            .is_some_and(|&prev| (e2e - prev).abs() / prev.max(1e-9) < 0.10);
        probes.push(e2e);
        if stable {
            return (probes, true);
        }
    }
    (probes, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_of_a_closed_loop_warm_up_is_littles_law() {
        // 32 streams, 160 requests completed in 40 s: 4 req/s, 8 s a request.
        let (rate, cycle) = Warmed::pace(LoadPattern::Closed { concurrency: 32 }, 160, 40.0);
        assert_eq!(rate, Some(4.0));
        assert_eq!(cycle, Some(8.0));
        let open = LoadPattern::Open {
            rate_per_s: 4.0,
            arrival: crate::schedule::Arrival::Poisson,
        };
        assert_eq!(Warmed::pace(open, 160, 40.0), (Some(4.0), None));
        assert_eq!(
            Warmed::pace(LoadPattern::Closed { concurrency: 4 }, 0, 40.0),
            (None, None)
        );
        // `--warmup 3` at 64 streams: three requests in flight for the whole 2 s.
        let (_, cycle) = Warmed::pace(LoadPattern::Closed { concurrency: 64 }, 3, 2.0);
        assert_eq!(cycle, Some(2.0));
    }
}
