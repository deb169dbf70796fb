//! User-experience deadlines ("Revisiting Service Level Objectives and System Level Metrics in
//! Large Language Model Serving"): per-token deadlines, user idle latency, smooth goodput.
//!
//! A scheme gives the k-th answer token (k = 1..N) a deadline d_k, in ms after the request was
//! sent. The user's idle latency is the longest the user was left waiting past a deadline,
//! l = max(0, max_k(t_k − d_k)). A request's benefit is the tokens it delivered minus
//! α·f(l); smooth goodput is the sum of benefits over a window of length T, divided by T.
//!
//! The window must not depend on how requests turned out, or dropping a slow request would
//! shorten T and raise the figure. It is therefore fixed by commitments alone (see
//! [`UxWindow`]): it ends when every committed answer was due in full. Within it, a request
//! counts the tokens it delivered by the window's end; one that had not delivered all of them
//! by then (it failed, was abandoned, or ran late) is charged as still waiting at the
//! window's end for its next token. Giving up on a request can then never raise smooth
//! goodput (proved in docs/metrics.md, and tested below).

use crate::clock::Nanos;
use crate::record::RequestRecord;
use serde::Serialize;
use std::fmt;

/// How deadlines are set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "scheme", rename_all = "snake_case")]
pub enum DeadlineScheme {
    /// d_1 = TTFT bound, d_k = t_{k−1} + TBT bound (today's TTFT+TBT SLOs, eq. 2 of "Revisiting Service Level Objectives and System Level Metrics in Large Language Model Serving"). Its deadlines follow the previous token, so unlike the others the "dropping never helps" property does not hold under it.
    TtftTbt { ttft_ms: f64, tbt_ms: f64 },
    /// Every token by the end-to-end bound.
    E2e { e2e_ms: f64 },
    /// A reader at `rate_per_s` tokens/s who accepts `d0_ms` before the first token:
    /// d_k = D0 + (k − 1) / R (the first token's deadline is D0).
    Reading { d0_ms: f64, rate_per_s: f64 },
}

impl DeadlineScheme {
    /// Deadline of token `k` when every earlier token came on time (ms after sending): when
    /// an answer of `k` tokens was due in full.
    pub fn nominal_deadline(&self, k: usize) -> f64 {
        match *self {
            DeadlineScheme::TtftTbt { ttft_ms, tbt_ms } => {
                ttft_ms + (k.max(1) as f64 - 1.0) * tbt_ms
            }
            DeadlineScheme::E2e { e2e_ms } => e2e_ms,
            DeadlineScheme::Reading { .. } => self.deadline(k, None),
        }
    }

    /// Deadline of token `k` (1-based), given the previous token's time (ms).
    pub fn deadline(&self, k: usize, prev_token_ms: Option<f64>) -> f64 {
        match *self {
            DeadlineScheme::TtftTbt { ttft_ms, tbt_ms } => match prev_token_ms {
                Some(p) if k > 1 => p + tbt_ms,
                _ => ttft_ms,
            },
            DeadlineScheme::E2e { e2e_ms } => e2e_ms,
            DeadlineScheme::Reading { d0_ms, rate_per_s } => {
                d0_ms + (k as f64 - 1.0) * 1000.0 / rate_per_s.max(1e-9)
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
            DeadlineScheme::Reading { d0_ms, rate_per_s } => {
                write!(f, "reading (D0 {d0_ms} ms, {rate_per_s} tokens/s)")
            }
        }
    }
}

/// The cost f(l) of idle latency l (seconds), in tokens per unit α.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum IdleCost {
    /// f(l) = l: every second of waiting costs α tokens.
    Linear,
    /// f(l) = l²: long waits cost disproportionately.
    Quadratic,
    /// f(l) = ln(1 + l): the first second hurts most.
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

/// Parameters of the deadline framework.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct UxParams {
    pub scheme: DeadlineScheme,
    /// Weight α of idle cost, tokens per unit of f.
    pub alpha: f64,
    pub idle_cost: IdleCost,
}

impl Default for UxParams {
    /// Seed 003's evaluation defaults: a reader at 20 tokens/s, α = 5, linear cost; D0 = 1 s.
    fn default() -> Self {
        Self {
            scheme: DeadlineScheme::Reading {
                d0_ms: 1000.0,
                rate_per_s: 20.0,
            },
            alpha: 5.0,
            idle_cost: IdleCost::Linear,
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

/// When the user committed the request: `sent_at`, or for a request that was never sent,
/// when it was attempted.
pub fn committed_at(r: &RequestRecord) -> Nanos {
    r.sent_at.unwrap_or(r.queued_at)
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

/// Deadline outcome from token times (ms after send). `cut_off_ms`: for a request that did not
/// complete, when the window ended (its next token is charged as arriving then).
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

/// The window smooth goodput is computed over, fixed by commitments only.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct UxWindow {
    #[serde(skip)]
    pub start: Nanos,
    #[serde(skip)]
    pub end: Nanos,
    /// T, s.
    pub duration_s: f64,
    /// True when the commitments themselves were planned (open loop, trace): then nothing
    /// about the window depends on outcomes. In closed loop each send waits for an earlier
    /// answer, so commitments (and the window) depend on outcomes; reports say so.
    pub outcome_independent: bool,
}

impl UxWindow {
    /// From each measured request's commitment time (planned send time in open loop) and
    /// the deadline of its last requested token: the window runs from the first commitment
    /// to the moment the last committed answer was due in full.
    pub fn of(records: &[&RequestRecord], scheme: &DeadlineScheme) -> Option<Self> {
        let commit = |r: &RequestRecord| r.scheduled_at.unwrap_or_else(|| committed_at(r));
        let start = records.iter().map(|r| commit(r)).min()?;
        let end = records
            .iter()
            .map(|r| {
                let due_ms = scheme.nominal_deadline(r.max_tokens.max(1) as usize);
                commit(r) + (due_ms.max(0.0) * 1e6) as Nanos
            })
            .max()?;
        Some(Self {
            start,
            end,
            duration_s: end.saturating_sub(start) as f64 / 1e9,
            outcome_independent: records.iter().all(|r| r.scheduled_at.is_some()),
        })
    }

    /// Deadline outcome of `r` inside the window: tokens after the window's end do not
    /// count, and a request that had not delivered every token by then is charged as still
    /// waiting for its next one at the window's end.
    pub fn evaluate(&self, r: &RequestRecord, scheme: &DeadlineScheme) -> DeadlineOutcome {
        let start = committed_at(r);
        let end_ms = self.end.saturating_sub(start) as f64 / 1e6;
        let mut times = token_times_ms(r);
        let all = times.len();
        times.retain(|&t| t <= end_ms);
        let complete = r.outcome.is_ok() && r.first_content.is_some() && times.len() == all;
        evaluate_times(&times, scheme, (!complete).then_some(end_ms))
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
    pub d0_ms: Option<f64>,
    pub f: IdleCost,
    pub scheme: String,
    /// Answer tokens delivered inside the window per second of it, for comparison.
    pub throughput_tokens_per_s: f64,
    /// The window T.
    pub window: UxWindow,
}

/// Σ (delivered − α·f(idle)) / T, over outcomes evaluated inside `window`.
pub fn smooth_goodput(
    outcomes: &[DeadlineOutcome],
    params: &UxParams,
    window: &UxWindow,
) -> SmoothGoodput {
    let window_s = window.duration_s;
    let benefit: f64 = outcomes
        .iter()
        .map(|o| {
            o.delivered_tokens as f64
                - params.alpha * params.idle_cost.apply(o.user_idle_ms / 1000.0)
        })
        .sum();
    let tokens: u64 = outcomes.iter().map(|o| o.delivered_tokens as u64).sum();
    let per_s = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
    let (rate, d0) = match params.scheme {
        DeadlineScheme::Reading { d0_ms, rate_per_s } => (Some(rate_per_s), Some(d0_ms)),
        _ => (None, None),
    };
    SmoothGoodput {
        value: per_s(benefit),
        alpha: params.alpha,
        reading_rate_per_s: rate,
        d0_ms: d0,
        f: params.idle_cost,
        scheme: params.scheme.to_string(),
        throughput_tokens_per_s: per_s(tokens as f64),
        window: *window,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A reader at 4 tokens/s who gets the first token on time at 100 ms.
    const READER: DeadlineScheme = DeadlineScheme::Reading {
        d0_ms: 100.0,
        rate_per_s: 4.0,
    };

    #[test]
    fn seed_003_ten_tokens_then_a_stall_versus_two() {
        // 10 tokens in the first second, then a 1 s stall: a 4 tokens/s reader never waits.
        let mut a: Vec<f64> = (1..=10).map(|k| k as f64 * 100.0).collect();
        a.push(2000.0);
        let oa = evaluate_times(&a, &READER, None);
        assert_eq!(oa.user_idle_ms, 0.0);
        assert_eq!(oa.deadline_misses, 0);
        // 2 tokens, then a 1 s stall: the reader is left waiting.
        let b = vec![100.0, 200.0, 1200.0];
        let ob = evaluate_times(&b, &READER, None);
        // Token 3 is due at 100 + 2 / 4 s = 600 ms and arrives at 1200 ms: 600 ms idle.
        assert_eq!(ob.user_idle_ms, 600.0);
        assert_eq!(ob.deadline_misses, 1);
        // TPOT says the opposite: b's mean gap is smaller than a's largest.
        assert!(ob.user_idle_ms > oa.user_idle_ms);
    }

    #[test]
    fn ttft_tbt_and_e2e_schemes() {
        let s = DeadlineScheme::TtftTbt {
            ttft_ms: 100.0,
            tbt_ms: 50.0,
        };
        let o = evaluate_times(&[90.0, 130.0, 250.0], &s, None);
        assert_eq!((o.deadline_misses, o.user_idle_ms), (1, 70.0));
        let e = DeadlineScheme::E2e { e2e_ms: 200.0 };
        let o = evaluate_times(&[90.0, 130.0, 250.0], &e, None);
        assert_eq!((o.deadline_misses, o.user_idle_ms), (1, 50.0));
    }

    #[test]
    fn output_delay_trick_lowers_tail_tbt_but_not_idle_latency() {
        // Bursty delivery: 5 tokens at once, a pause, 5 more at once.
        let raw: Vec<f64> = vec![
            300.0, 300.0, 300.0, 300.0, 300.0, 900.0, 900.0, 900.0, 900.0, 900.0,
        ];
        // The trick: hold tokens and release them at a steady pace of 150 ms.
        let mut smoothed = Vec::new();
        let mut last = f64::MIN;
        for &t in &raw {
            let r = t.max(last + 150.0);
            smoothed.push(r);
            last = r;
        }
        let max_gap = |v: &[f64]| v.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
        assert!(
            max_gap(&smoothed) < max_gap(&raw),
            "the trick lowers tail TBT"
        );
        let reader = DeadlineScheme::Reading {
            d0_ms: 200.0,
            rate_per_s: 20.0,
        };
        let before = evaluate_times(&raw, &reader, None).user_idle_ms;
        let after = evaluate_times(&smoothed, &reader, None).user_idle_ms;
        assert!(
            after >= before,
            "idle latency is not lowered: {before} -> {after}"
        );
        // Under TTFT+TBT deadlines the trick does game the metric: fewer misses.
        let tbt = DeadlineScheme::TtftTbt {
            ttft_ms: 400.0,
            tbt_ms: 150.0,
        };
        assert!(
            evaluate_times(&smoothed, &tbt, None).deadline_misses
                < evaluate_times(&raw, &tbt, None).deadline_misses
        );
    }

    fn times_strategy() -> impl Strategy<Value = Vec<f64>> {
        proptest::collection::vec(0.0f64..500.0, 1..60).prop_map(|gaps| {
            let mut t = 0.0;
            gaps.into_iter()
                .map(|g| {
                    t += g;
                    t
                })
                .collect()
        })
    }

    proptest! {
        /// Abandoning a request (it stops delivering; the rest of the window is charged as
        /// idle) never raises smooth goodput.
        #[test]
        fn abandoning_never_increases_smooth_goodput(times in times_strategy(), cut in 0usize..60, extra in 0.0f64..1000.0, alpha in 0.0f64..20.0) {
            let params = UxParams { alpha, ..UxParams::default() };
            let window_end = times.last().copied().unwrap_or(0.0) + extra;
            let window = UxWindow { start: 0, end: (window_end * 1e6) as Nanos, duration_s: window_end / 1000.0 + 1.0, outcome_independent: true };
            let full = evaluate_times(&times, &params.scheme, None);
            let cut = cut.min(times.len());
            let abandoned = evaluate_times(&times[..cut], &params.scheme, Some(window_end));
            for cost in [IdleCost::Linear, IdleCost::Quadratic, IdleCost::Log1p] {
                let p = UxParams { idle_cost: cost, ..params };
                let g_full = smooth_goodput(&[full], &p, &window).value;
                let g_cut = smooth_goodput(&[abandoned], &p, &window).value;
                prop_assert!(g_cut <= g_full + 1e-9, "{g_cut} > {g_full}");
            }
        }

        /// Delaying a token never lowers a request's idle latency (reading and e2e deadlines).
        #[test]
        fn delaying_a_token_never_decreases_idle_latency(times in times_strategy(), which in 0usize..60, delay in 0.0f64..2000.0) {
            let which = which % times.len();
            let mut delayed = times.clone();
            for t in delayed.iter_mut().skip(which) {
                *t = t.max(times[which] + delay);
            }
            for scheme in [READER, DeadlineScheme::E2e { e2e_ms: 1000.0 }, UxParams::default().scheme] {
                let a = evaluate_times(&times, &scheme, None).user_idle_ms;
                let b = evaluate_times(&delayed, &scheme, None).user_idle_ms;
                prop_assert!(b >= a - 1e-9, "{scheme}: {a} -> {b}");
            }
        }
    }
}
