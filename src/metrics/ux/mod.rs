//! User-experience deadlines ("Revisiting Service Level Objectives and System Level Metrics in
//! Large Language Model Serving"): per-token deadlines, user idle latency, smooth goodput.
//!
//! A scheme gives the k-th answer token (k = 1..N) a deadline d_k, in ms after the request's
//! commitment ([`committed_at`]: its planned time in open loop, else when it was sent). The user's idle latency is the longest the user was left waiting past a deadline,
//! l = max(0, max_k(t_k − d_k)). A request's benefit is the tokens it delivered minus
//! α·f(l); smooth goodput is the sum of benefits over the time T of serving the committed
//! requests, divided by T (the paper's equations 6 to 8).
//!
//! Two readings make the figure comparable between runs of any length (docs/metrics.md):
//! - Each request is judged on its own clock. Its user waits at most `patience` past a
//!   token's deadline: tokens later than that are not read, and a request that failed (or
//!   that its user gave up on) is charged the whole patience as idle time. The charge of a
//!   failure is therefore the same wherever in the run it happens, and giving up on a request
//!   never raises smooth goodput (proved in docs/metrics.md, and tested below).
//! - T is the span the committed requests' own service covers: in open loop, where the plan
//!   fixes the commitments, n commitments each own the mean gap between them (T = span of the
//!   planned sends × n / (n − 1)), so the same per-request pattern over 10 s and over 40 s
//!   gives the same figure and no outcome moves T; in closed loop, from the first send to
//!   the end of the last request.

use crate::clock::Nanos;
use crate::record::{FailureKind, RequestRecord};
use serde::Serialize;
use std::fmt;

/// How deadlines are set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "scheme", rename_all = "snake_case")]
pub enum DeadlineScheme {
    /// d_1 = TTFT bound, d_k = t_{k−1} + TBT bound (today's TTFT+TBT SLOs, eq. 2 of "Revisiting Service Level Objectives and System Level Metrics in Large Language Model Serving"). Its deadlines follow the previous token, so a token's deadline can move with the previous token's lateness.
    TtftTbt { ttft_ms: f64, tbt_ms: f64 },
    /// Every token by the end-to-end bound.
    E2e { e2e_ms: f64 },
    /// A reader at `rate_per_s` tokens/s. Without `d0_ms` (the default), the paper's
    /// equation 4, d_k = V·k with V = 1/R: token k is due when a reader who started at the
    /// commitment would reach it. With `d0_ms` (`--d0-ms`), the reader accepts D0 before the
    /// first token: d_k = D0 + (k − 1) / R.
    Reading {
        #[serde(default)]
        d0_ms: Option<f64>,
        rate_per_s: f64,
    },
}

impl DeadlineScheme {
    /// Deadline of token `k` (1-based), given the previous token's time (ms).
    pub fn deadline(&self, k: usize, prev_token_ms: Option<f64>) -> f64 {
        match *self {
            DeadlineScheme::TtftTbt { ttft_ms, tbt_ms } => match prev_token_ms {
                Some(p) if k > 1 => p + tbt_ms,
                _ => ttft_ms,
            },
            DeadlineScheme::E2e { e2e_ms } => e2e_ms,
            DeadlineScheme::Reading { d0_ms, rate_per_s } => {
                let per_token_ms = 1000.0 / rate_per_s.max(1e-9);
                match d0_ms {
                    None => k as f64 * per_token_ms,
                    Some(d0) => d0 + (k as f64 - 1.0) * per_token_ms,
                }
            }
        }
    }
}

impl fmt::Display for DeadlineScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeadlineScheme::TtftTbt { ttft_ms, tbt_ms } => {
                write!(f, "ttft+tbt (TTFT {ttft_ms} ms, TBT {tbt_ms} ms)")
            }
            DeadlineScheme::E2e { e2e_ms } => write!(f, "e2e ({e2e_ms} ms)"),
            DeadlineScheme::Reading {
                d0_ms: None,
                rate_per_s,
            } => write!(f, "reading ({rate_per_s} tokens/s, d_k = k/R)"),
            DeadlineScheme::Reading {
                d0_ms: Some(d0),
                rate_per_s,
            } => write!(f, "reading (D0 {d0} ms, {rate_per_s} tokens/s)"),
        }
    }
}

/// The cost f(l) of idle latency l (seconds), in tokens per unit α.
// `--idle-cost`: the doc comments describe run.json's schema; `--help` lists the bare
// values.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    schemars::JsonSchema,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum IdleCost {
    /// f(l) = l: every second of waiting costs α tokens.
    #[value(help = None::<&'static str>)]
    Linear,
    /// f(l) = l²: long waits cost disproportionately.
    #[value(help = None::<&'static str>)]
    Quadratic,
    /// f(l) = ln(1 + l): the first second hurts most.
    #[value(help = None::<&'static str>)]
    Log1p,
}

impl IdleCost {
    pub fn apply(self, idle_s: f64) -> f64 {
        match self {
            IdleCost::Linear => idle_s,
            IdleCost::Quadratic => idle_s * idle_s,
            IdleCost::Log1p => idle_s.ln_1p(),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "linear" => IdleCost::Linear,
            "quadratic" => IdleCost::Quadratic,
            "log1p" => IdleCost::Log1p,
            _ => return None,
        })
    }
}

/// How long a user waits past a token's deadline before giving up, unless told (s).
pub const DEFAULT_PATIENCE_S: f64 = 30.0;

fn default_patience_s() -> f64 {
    DEFAULT_PATIENCE_S
}

/// Parameters of the deadline framework.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct UxParams {
    pub scheme: DeadlineScheme,
    /// Weight α of idle cost, tokens per unit of f.
    pub alpha: f64,
    pub idle_cost: IdleCost,
    /// How long past a token's deadline its user waits before giving up on the request, s
    /// (`--patience`): later tokens are not read, and a request that failed or was given up
    /// on is charged this wait. Bounds every request's idle latency.
    #[serde(default = "default_patience_s")]
    pub patience_s: f64,
}

impl Default for UxParams {
    /// Seed 003's evaluation defaults: a reader at 20 tokens/s with the paper's deadlines
    /// d_k = k / R (equation 4), α = 5, linear cost; a patience of 30 s.
    fn default() -> Self {
        Self {
            scheme: DeadlineScheme::Reading {
                d0_ms: None,
                rate_per_s: 20.0,
            },
            alpha: 5.0,
            idle_cost: IdleCost::Linear,
            patience_s: DEFAULT_PATIENCE_S,
        }
    }
}

/// Deadline results of one request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct DeadlineOutcome {
    /// Tokens that arrived after their deadline.
    pub deadline_misses: u32,
    /// max(0, max_k(t_k − d_k)), ms.
    pub user_idle_ms: f64,
    /// Tokens delivered.
    pub delivered_tokens: u32,
    /// The request met every deadline and completed.
    pub met: bool,
}

/// When the user committed the request (the paper's deadlines run from it): its planned
/// time in open loop and trace replay, so a wait for a slot or a late dispatch counts as
/// the user's idle time; otherwise `sent_at`, or for a request never sent, its attempt.
pub fn committed_at(r: &RequestRecord) -> Nanos {
    r.scheduled_at.or(r.sent_at).unwrap_or(r.queued_at)
}

/// Answer-token arrival times in ms after the commitment: a chunk of n tokens gives n tokens
/// at its time.
pub fn token_times_ms(r: &RequestRecord) -> Vec<f64> {
    let start = committed_at(r);
    let mut out = Vec::with_capacity(r.answer_tokens() as usize);
    for c in r.token_chunks() {
        let t = c.at.saturating_sub(start) as f64 / 1e6;
        out.extend(std::iter::repeat_n(t, c.tokens as usize));
    }
    out
}

/// Deadline outcome from token times (ms after the commitment, [`committed_at`]). `cut_off_ms`: for a request that did not
/// complete, when its next token is charged as arriving.
pub fn evaluate_times(
    times: &[f64],
    scheme: &DeadlineScheme,
    cut_off_ms: Option<f64>,
) -> DeadlineOutcome {
    let mut misses = 0u32;
    let mut idle = 0.0f64;
    let mut prev = None;
    for (i, &t) in times.iter().enumerate() {
        let d = scheme.deadline(i + 1, prev);
        if t > d {
            misses += 1;
        }
        idle = idle.max(t - d);
        prev = Some(t);
    }
    if let Some(end) = cut_off_ms {
        let d = scheme.deadline(times.len() + 1, prev);
        if end > d {
            misses += 1;
        }
        idle = idle.max(end - d);
    }
    DeadlineOutcome {
        deadline_misses: misses,
        user_idle_ms: idle.max(0.0),
        delivered_tokens: times.len() as u32,
        met: misses == 0 && cut_off_ms.is_none(),
    }
}

/// Deadline outcome of one record on its own: a request that failed (or delivered no answer)
/// is charged for the next token up to the moment it ended. This is the per-request figure
/// written to `requests.jsonl`.
pub fn evaluate(r: &RequestRecord, scheme: &DeadlineScheme) -> DeadlineOutcome {
    let times = token_times_ms(r);
    let cut_off = (!r.outcome.is_ok() || r.first_content.is_none())
        .then(|| r.finished_at.saturating_sub(committed_at(r)) as f64 / 1e6);
    evaluate_times(&times, scheme, cut_off)
}

/// How a request ended, for [`judge_times`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ending {
    /// It delivered its whole answer.
    Complete,
    /// It failed, or completed without an answer: its user never got the rest.
    Failed,
    /// The benchmark itself stopped it (the run or level ended), this many ms after the
    /// commitment: its user is charged up to then, not for the server.
    CancelledAt(f64),
}

/// The smooth-goodput judgement of one request from its token times (ms after its
/// commitment): its user reads every token that comes within the patience of its deadline
/// and gives up at the first that does not. A request given up on, or one that failed, is
/// charged as a user who waited the whole patience for its next token; one the benchmark
/// cancelled, as waiting until the cancellation (at most the patience). Nothing here
/// depends on the rest of the run.
pub fn judge_times(times: &[f64], params: &UxParams, ending: Ending) -> DeadlineOutcome {
    let scheme = &params.scheme;
    let patience_ms = params.patience_s.max(0.0) * 1000.0;
    let mut prev = None;
    let mut read = times.len();
    for (i, &t) in times.iter().enumerate() {
        if t - scheme.deadline(i + 1, prev) > patience_ms {
            read = i;
            break;
        }
        prev = Some(t);
    }
    let gave_up = read < times.len();
    let give_up_at = scheme.deadline(read + 1, prev) + patience_ms;
    let cut_off = match ending {
        Ending::Complete if !gave_up => None,
        Ending::CancelledAt(ms) if !gave_up => Some(ms.min(give_up_at)),
        _ => Some(give_up_at),
    };
    evaluate_times(&times[..read], scheme, cut_off)
}

/// [`judge_times`] of a record.
pub fn judge(r: &RequestRecord, params: &UxParams) -> DeadlineOutcome {
    let ending = if r.outcome.is_ok() && r.first_content.is_some() {
        Ending::Complete
    } else if r.outcome.failure_kind() == Some(FailureKind::Cancelled) {
        Ending::CancelledAt(r.finished_at.saturating_sub(committed_at(r)) as f64 / 1e6)
    } else {
        Ending::Failed
    };
    judge_times(&token_times_ms(r), params, ending)
}

/// The time T smooth goodput divides by: the span of the committed requests' own service.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct UxWindow {
    #[serde(skip)]
    pub start: Nanos,
    /// `start` + T.
    #[serde(skip)]
    pub end: Nanos,
    /// T, s.
    pub duration_s: f64,
    /// True when the commitments themselves were planned (open loop, trace): then nothing
    /// about T depends on outcomes. In closed loop each send waits for an earlier answer,
    /// and T ends with the last request, so it depends on outcomes; reports say so.
    pub outcome_independent: bool,
}

impl UxWindow {
    /// Open loop (every request planned, at two or more distinct times): n commitments
    /// each own the mean gap between planned sends, T = (last − first) × n / (n − 1), from
    /// the plan alone. Otherwise (closed loop, a single request, or all planned at one
    /// instant): from the first commitment to the end of the last request.
    pub fn of(records: &[&RequestRecord]) -> Option<Self> {
        let planned: Option<Vec<Nanos>> = records.iter().map(|r| r.scheduled_at).collect();
        if let Some(p) = planned {
            let first = p.iter().copied().min()?;
            let last = p.iter().copied().max()?;
            if let Some(w) = Self::planned(first, last, p.len() as u64) {
                return Some(w);
            }
        }
        let commit = |r: &RequestRecord| r.scheduled_at.unwrap_or_else(|| committed_at(r));
        let start = records.iter().map(|r| commit(r)).min()?;
        let end = records.iter().map(|r| r.finished_at.max(commit(r))).max()?;
        Some(Self::served(start, end))
    }

    /// Open loop: `n` commitments planned from `first` to `last` each own the mean gap,
    /// T = (last − first) × n / (n − 1); `None` for fewer than two or a single instant.
    pub fn planned(first: Nanos, last: Nanos, n: u64) -> Option<Self> {
        if n < 2 || last <= first {
            return None;
        }
        let n = n as f64;
        let duration_s = (last - first) as f64 / 1e9 * n / (n - 1.0);
        Some(Self {
            start: first,
            end: first + (duration_s * 1e9) as Nanos,
            duration_s,
            outcome_independent: true,
        })
    }

    /// From the first commitment to the end of the last request (closed loop).
    pub fn served(start: Nanos, end: Nanos) -> Self {
        Self {
            start,
            end,
            duration_s: end.saturating_sub(start) as f64 / 1e9,
            outcome_independent: false,
        }
    }
}

/// Smooth goodput of a run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct SmoothGoodput {
    /// Σ benefit / T, tokens/s.
    pub value: f64,
    pub alpha: f64,
    /// Reading scheme only.
    pub reading_rate_per_s: Option<f64>,
    /// Reading scheme with `--d0-ms` only (`null`: the paper's d_k = k / R).
    pub d0_ms: Option<f64>,
    pub f: IdleCost,
    /// The users' patience, s: the idle time a failed request is charged.
    #[serde(default = "default_patience_s")]
    pub patience_s: f64,
    pub scheme: String,
    /// Answer tokens its users read (delivered within their patience) per second of T.
    pub throughput_tokens_per_s: f64,
    /// T.
    pub window: UxWindow,
}

/// Σ (delivered − α·f(idle)) / T, over outcomes from [`judge`].
pub fn smooth_goodput(
    outcomes: &[DeadlineOutcome],
    params: &UxParams,
    window: &UxWindow,
) -> SmoothGoodput {
    let mut sums = GoodputSums::default();
    for o in outcomes {
        sums.add(o, params);
    }
    smooth_goodput_of(&sums, params, window)
}

/// The sums smooth goodput divides by T, built one outcome at a time.
#[derive(Debug, Clone, Copy, Default)]
pub struct GoodputSums {
    /// Σ (delivered − α·f(idle)), tokens.
    pub benefit: f64,
    /// Σ delivered, tokens.
    pub tokens: u64,
}

impl GoodputSums {
    pub fn add(&mut self, o: &DeadlineOutcome, params: &UxParams) {
        self.benefit += o.delivered_tokens as f64
            - params.alpha * params.idle_cost.apply(o.user_idle_ms / 1000.0);
        self.tokens += o.delivered_tokens as u64;
    }
}

/// [`smooth_goodput`] from sums already made.
pub fn smooth_goodput_of(
    sums: &GoodputSums,
    params: &UxParams,
    window: &UxWindow,
) -> SmoothGoodput {
    let window_s = window.duration_s;
    let (benefit, tokens) = (sums.benefit, sums.tokens);
    let per_s = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
    let (rate, d0) = match params.scheme {
        DeadlineScheme::Reading { d0_ms, rate_per_s } => (Some(rate_per_s), d0_ms),
        _ => (None, None),
    };
    SmoothGoodput {
        value: per_s(benefit),
        alpha: params.alpha,
        reading_rate_per_s: rate,
        d0_ms: d0,
        f: params.idle_cost,
        patience_s: params.patience_s,
        scheme: params.scheme.to_string(),
        throughput_tokens_per_s: per_s(tokens as f64),
        window: *window,
    }
}

#[cfg(test)]
mod tests;
