//! The procedures beyond the throughput search against the engine's own truth (issue 19):
//! each [`Reading`] runs `servebench test NAME` (with `--quick`, or with its full durations)
//! on the virtual bench and reads one answer, judged on the median answer of its seeds:
//!
//! | reading | case | truth | accepted |
//! |---|---|---|---|
//! | curve saturation onset | fixed (cpu-tiny, 256 in, 128 out) | 1.169 req/s | ±10 % |
//! | curve knee | fixed | 1.169 req/s | at most 110 % |
//! | capacity | fixed, no `--slo` | 4 concurrent requests ([`capacity_truth`]) | ±1 |
//! | long-context, linear | TTFT = 10 + 0.05·L ms | exponent 1 | ±0.05 |
//! | long-context, quadratic | TTFT = 10 + 0.00015·L² ms | exponent 2 | ±0.05 |
//! | prefix hit rate | a shared 512-token context + 128 own tokens | 512 ÷ 640 = 80 % | ±10 % |
//! | guardrail | input +160 ms, output +20 ms a token | Table 14 unchanged | within 10 % |
//!
//! - **Curve.** The curve's levels are shares of the throughput search's answer, 10 % of it
//!   apart. The answer is the curve's saturation onset (`curve::saturation_onset`): the first
//!   level saturated for good (every level from it on showed one of the draft's saturation
//!   signals, or its throughput fell) gives the bracket, and the request rate the saturated
//!   levels completed places the reading in it; it must lie within 10 % of the analytic
//!   capacity. A
//!   work-conserving engine's throughput plateaus past capacity instead of falling, so on
//!   this case the signals carry the reading and the plateau places it.
//!   The knee (P99 TTFT above twice the sweep's minimum from
//!   there on) has no closed form here (it is where queueing for the four slots doubles
//!   the tail of a prefill step); it must come at or below 110 % of the capacity: latency
//!   turns before the server saturates.
//! - **Capacity.** Closed loop, fixed lengths, no `--slo`: the bound is P99 TTFT ≤ 10 × the
//!   concurrency-1 P50 TTFT ([`capacity_truth`] derives the count).
//! - **Long-context exponent.** Engines whose prefill step holds a whole prompt (a token
//!   budget of 2²⁰): at concurrency 1 a request's TTFT is exactly that step, base + its
//!   prefill cost, so the fitted k of a + b·L^k is the prefill cost's exponent.
//! - **Prefix hit rate.** The virtual bench's prefix cache (module `prefix`): the warm
//!   level's new requests find the shared context the cold level left; its hit rate from
//!   the responses' `cached_tokens` is the shared prefix's share of the prompt tokens
//!   ([`VirtualBench::prefix_share_at`]). A replay of the cold level's prompts would read
//!   639 ÷ 640 (issue 19, item 5).
//! - **Guardrail.** A filter that only delays (before the queue, or every token) moves
//!   each request's times and leaves the engine's work as it was, so each configuration's
//!   throughput search sustains what the baseline's does: the reading is the largest
//!   |reduction| of Table 14 (at a fixed concurrency, throughput is concurrency ÷ latency
//!   and the input filter would read −20 %: issue 19, item 7).
//!
//! Readings that are a statistic of the seed (Poisson arrivals: the curve, the guardrail's
//! searches) run with every seed of [`SEEDS`]; the closed loops of fixed lengths (capacity,
//! long context, prefix cache) give the same answer for every seed and run with the first.

use super::{case, flat, options_for, Case, VirtualBench, SEEDS};
use crate::procedure::curve::{first_saturated, CurvePoint, CurveResult};
use crate::procedure::guardrails::GuardrailResult;
use crate::procedure::level::Role;
use crate::procedure::long_context::LongContextResult;
use crate::procedure::prefix_cache::PrefixCacheResult;
use crate::procedure::report::Finding;
use crate::procedure::OneResult;
use crate::procedure::{Options, TestName};
use crate::sim::config::PrefillPolicy;
use crate::sim::SimConfig;
use crate::workload::lengths::LengthDist;
use crate::workload::scenario::PrefixGroups;
use crate::workload::WorkloadSpec;
use anyhow::Context;

/// The seeds, as a place a slice can borrow from for the program's life.
static SEED_LIST: [u64; SEEDS.len()] = SEEDS;

/// An answer of a procedure checked against the engine's truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// `test curve`: the saturation point, in req/s.
    CurveSaturation,
    /// `test curve`: the knee, in req/s.
    CurveKnee,
    /// `test capacity`: the largest concurrency meeting the criteria.
    Capacity,
    /// `test long-context` on an engine of linear prefill: the exponent.
    LinearExponent,
    /// `test long-context` on an engine of quadratic prefill: the exponent.
    QuadraticExponent,
    /// `test prefix-cache`: the warm level's hit rate.
    PrefixHitRate,
    /// `test guardrails`: Table 14's largest change of maximum throughput.
    GuardrailThroughput,
}

/// Every reading, in the draft's order.
pub const READINGS: [Reading; 7] = [
    Reading::CurveSaturation,
    Reading::CurveKnee,
    Reading::Capacity,
    Reading::PrefixHitRate,
    Reading::LinearExponent,
    Reading::QuadraticExponent,
    Reading::GuardrailThroughput,
];

impl Reading {
    /// A short name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::CurveSaturation => "curve saturation",
            Self::CurveKnee => "curve knee",
            Self::Capacity => "capacity",
            Self::LinearExponent => "linear prefill",
            Self::QuadraticExponent => "quadratic prefill",
            Self::PrefixHitRate => "prefix hit rate",
            Self::GuardrailThroughput => "guardrail",
        }
    }

    /// The test it runs.
    pub fn test(self) -> TestName {
        match self {
            Self::CurveSaturation | Self::CurveKnee => TestName::Curve,
            Self::Capacity => TestName::Capacity,
            Self::LinearExponent | Self::QuadraticExponent => TestName::LongContext,
            Self::PrefixHitRate => TestName::PrefixCache,
            Self::GuardrailThroughput => TestName::Guardrails,
        }
    }

    /// The case, the reading and its truth, in words.
    pub fn what(self) -> &'static str {
        match self {
            Self::CurveSaturation => "test curve on the fixed case (cpu-tiny, 256 in, 128 out: 1.169 req/s): the saturation onset (the request rate the levels saturated for good completed, at least what a lower level sustained and at most the first saturated level's offer), within 10 % of the capacity",
            Self::CurveKnee => "test curve on the fixed case (1.169 req/s): the knee, where P99 TTFT passes twice the sweep's minimum for good, at or below 110 % of the capacity",
            Self::Capacity => "test capacity on the fixed case, no --slo: 4 concurrent requests, ±1 (4 prompts prefilled in one 1,278 ms step, within 10 × the 327 ms of one alone; a fifth waits a 3,391 ms cycle first, 4,670 ms)",
            Self::LinearExponent => "test long-context, a prefill step of 10 ms + 0.05 ms a prompt token: TTFT = 10 + 0.05·L ms, exponent 1, ±0.05",
            Self::QuadraticExponent => "test long-context, prefill attention alone (0.3 ms a token per 1K of context): TTFT = 10 + 0.00015·L² ms, exponent 2, ±0.05",
            Self::PrefixHitRate => "test prefix-cache, every prompt one shared 512-token context and 128 tokens of its own: warm hit rate 512 ÷ 640 = 80 %, ±10 %",
            Self::GuardrailThroughput => "test guardrails, 8 slots of 10 ms steps, 128 in, 64 out (640 ms a request, 12.5 req/s), filters adding 160 ms before the queue, 20 ms to every token, or both: Table 14 within 10 % of the baseline (a fixed concurrency of 8 would read −20 %)",
        }
    }

    /// How the median answer is judged against the truth.
    pub fn accept(self) -> Accept {
        match self {
            Self::CurveSaturation => Accept::Ratio { lo: 0.9, hi: 1.1 },
            Self::CurveKnee => Accept::Ratio { lo: 0.0, hi: 1.1 },
            Self::Capacity => Accept::Within(1.0),
            Self::LinearExponent | Self::QuadraticExponent => Accept::Within(0.05),
            Self::PrefixHitRate => Accept::Ratio { lo: 0.9, hi: 1.1 },
            Self::GuardrailThroughput => Accept::Within(0.1),
        }
    }

    /// Whether the answer is a statistic of the seed (the Poisson arrivals of open-loop
    /// levels): judged on the median of [`SEEDS`]. The others are closed loops of fixed
    /// lengths, the same for every seed.
    pub fn seeded(self) -> bool {
        matches!(
            self,
            Self::CurveSaturation | Self::CurveKnee | Self::GuardrailThroughput
        )
    }

    /// The seeds it runs with: every seed of [`SEEDS`] when [`Reading::seeded`], else the
    /// first.
    pub fn seeds(self) -> &'static [u64] {
        if self.seeded() {
            &SEED_LIST
        } else {
            &SEED_LIST[..1]
        }
    }
}

/// How an answer is judged against its truth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Accept {
    /// The answer ÷ the truth within [lo, hi].
    Ratio { lo: f64, hi: f64 },
    /// The answer − the truth within ± this.
    Within(f64),
}

impl Accept {
    /// The figure judged: answer ÷ truth, or answer − truth.
    pub fn score(self, value: f64, truth: f64) -> Option<f64> {
        match self {
            Self::Ratio { .. } => (truth > 0.0).then(|| value / truth),
            Self::Within(_) => Some(value - truth),
        }
    }

    /// Whether a score is accepted.
    pub fn holds(self, score: f64) -> bool {
        match self {
            Self::Ratio { lo, hi } => (lo - 1e-9..=hi + 1e-9).contains(&score),
            Self::Within(d) => score.abs() <= d + 1e-9,
        }
    }

    /// What is accepted, in words.
    pub fn describe(self) -> String {
        match self {
            Self::Ratio { lo, hi } => {
                format!("{:.0} % to {:.0} % of the truth", lo * 100.0, hi * 100.0)
            }
            Self::Within(d) => format!("within ±{d} of the truth"),
        }
    }

    /// A score in words.
    fn show(self, score: f64) -> String {
        match self {
            Self::Ratio { .. } => format!("{:.1} % of the truth", score * 100.0),
            Self::Within(_) => format!("{score:+.3} from the truth"),
        }
    }
}

/// One run of a reading.
#[derive(Debug, Clone)]
pub struct ReadingRun {
    pub seed: u64,
    /// The procedure's answer (req/s, a concurrency, an exponent, a share).
    pub value: Option<f64>,
    /// The engine's truth in the same unit.
    pub truth: Option<f64>,
    /// How long the test would have taken, s.
    pub test_s: f64,
    /// The test's one-line answer.
    pub answer: String,
}

/// A reading run with every seed it runs with.
#[derive(Debug, Clone)]
pub struct ReadingCheck {
    pub reading: Reading,
    /// `--quick`, else the full durations.
    pub quick: bool,
    pub runs: Vec<ReadingRun>,
}

impl ReadingCheck {
    fn score(&self, r: &ReadingRun) -> Option<f64> {
        self.reading.accept().score(r.value?, r.truth?)
    }

    /// The median score over the runs, a run without an answer counting past every other
    /// (a curve that showed no saturation saturates above its top level); `None` when the
    /// median run has no answer.
    pub fn median_score(&self) -> Option<f64> {
        let mut s: Vec<Option<f64>> = self.runs.iter().map(|r| self.score(r)).collect();
        s.sort_by(|a, b| match (a, b) {
            (Some(x), Some(y)) => x.total_cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
        s.get(s.len() / 2).copied().flatten()
    }

    /// Whether the median answer is accepted.
    pub fn conforms(&self) -> bool {
        self.median_score()
            .is_some_and(|m| self.reading.accept().holds(m))
    }

    /// The median in words.
    pub fn median_text(&self) -> String {
        self.median_score()
            .map(|m| self.reading.accept().show(m))
            .unwrap_or_else(|| "(no answer)".into())
    }

    /// The longest run, s.
    pub fn longest_s(&self) -> f64 {
        self.runs.iter().map(|r| r.test_s).fold(0.0, f64::max)
    }

    /// `seed 1: 1.286 against 1.169 (110.0 % of the truth) in 12.0 min (…)` per run.
    pub fn describe(&self) -> String {
        let num = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
        self.runs
            .iter()
            .map(|r| {
                format!(
                    "seed {}: {} against {}{} in {:.1} min ({})",
                    r.seed,
                    num(r.value),
                    num(r.truth),
                    self.score(r)
                        .map(|s| format!(" ({})", self.reading.accept().show(s)))
                        .unwrap_or_default(),
                    r.test_s / 60.0,
                    r.answer
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Runs a reading with every seed of `seeds`.
pub fn check_reading(reading: Reading, seeds: &[u64], quick: bool) -> anyhow::Result<ReadingCheck> {
    let runs = seeds
        .iter()
        .map(|&s| run_reading(reading, s, quick))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(ReadingCheck {
        reading,
        quick,
        runs,
    })
}

/// Runs a reading's test once (`--quick` when `quick`) and reads its answer and truth.
pub fn run_reading(reading: Reading, seed: u64, quick: bool) -> anyhow::Result<ReadingRun> {
    let (value, truth, finding, bench) = match reading {
        Reading::CurveSaturation | Reading::CurveKnee => {
            let c = case("fixed").context("the fixed case")?;
            let (finding, bench) = run_on(&c, reading.test(), seed, quick, &[], |_| {})?;
            let r = CurveResult::of(&finding.result)
                .context("the curve result")?
                .clone();
            let (point, value) = if reading == Reading::CurveSaturation {
                (first_saturated(&r), r.saturation_onset_rate_per_s)
            } else {
                let knee = knee_point(&r);
                (knee, knee.map(|p| p.offered_rate_per_s))
            };
            let truth = point
                .and_then(|p| bench.truth_at(p.level))
                .or_else(|| fixed_truth(&c));
            (value, truth, finding, bench)
        }
        Reading::Capacity => {
            let c = case("fixed").context("the fixed case")?;
            let (prompt, output) = fixed_lengths(&c).context("fixed lengths")?;
            // `test capacity --output-tokens 128`: the case's answers, not the default 64.
            let (finding, bench) = run_on(&c, reading.test(), seed, quick, &[], |o| {
                o.output_tokens = Some(output)
            })?;
            let value = finding.result.max_concurrency().map(f64::from);
            let truth = capacity_truth(&c.sim, prompt, output).map(f64::from);
            (value, truth, finding, bench)
        }
        Reading::LinearExponent | Reading::QuadraticExponent => {
            let quadratic = reading == Reading::QuadraticExponent;
            let c = exponent_case(quadratic);
            let (finding, bench) = run_on(&c, reading.test(), seed, quick, &[], |_| {})?;
            let value = LongContextResult::of(&finding.result)
                .context("the long-context result")?
                .scaling_exponent;
            (
                value,
                Some(if quadratic { 2.0 } else { 1.0 }),
                finding,
                bench,
            )
        }
        Reading::PrefixHitRate => {
            let c = prefix_case();
            let (finding, bench) = run_on(&c, reading.test(), seed, quick, &[], |_| {})?;
            let r = PrefixCacheResult::of(&finding.result)
                .context("the prefix-cache result")?
                .clone();
            let truth = finding
                .levels
                .iter()
                .find(|l| l.role == Role::CacheWarm)
                .and_then(|l| bench.prefix_share_at(l.index));
            (r.hit_rate, truth, finding, bench)
        }
        Reading::GuardrailThroughput => {
            let (c, configurations) = guardrail_case();
            let names: Vec<String> = configurations.iter().map(|(n, _)| n.to_string()).collect();
            let (finding, bench) = run_on(&c, reading.test(), seed, quick, &configurations, |o| {
                o.targets = names
            })?;
            let r = GuardrailResult::of(&finding.result)
                .context("the guardrail result")?
                .clone();
            (largest_reduction(&r), Some(0.0), finding, bench)
        }
    };
    Ok(ReadingRun {
        seed,
        value,
        truth,
        test_s: bench.elapsed_s,
        answer: finding.answer,
    })
}

/// Runs `test` on a case with a seed, `--quick` when `quick`, its options adjusted by
/// `adjust`, on a bench with the labelled `targets`.
fn run_on(
    c: &Case,
    test: TestName,
    seed: u64,
    quick: bool,
    targets: &[(&'static str, SimConfig)],
    adjust: impl FnOnce(&mut Options),
) -> anyhow::Result<(Finding, VirtualBench)> {
    let mut o = options_for(quick, c.level_duration, c.workload.clone(), seed);
    adjust(&mut o);
    let mut bench = VirtualBench::new(c.sim.clone(), &o)?;
    for (name, sim) in targets {
        bench = bench.with_target(name, sim.clone());
    }
    let finding = super::procedure(test)?(&mut bench, &o);
    Ok((finding, bench))
}

/// A case's fixed (prompt, output) lengths.
fn fixed_lengths(c: &Case) -> Option<(u32, u32)> {
    match (&c.workload.input, &c.workload.output) {
        (LengthDist::Fixed { value: i }, LengthDist::Fixed { value: o }) => Some((*i, *o)),
        _ => None,
    }
}

/// A fixed-length case's analytic capacity, req/s.
fn fixed_truth(c: &Case) -> Option<f64> {
    let (i, o) = fixed_lengths(c)?;
    Some(c.sim.capacity(i, o)?.requests_per_s)
}

/// The curve's knee as a level.
pub fn knee_point(r: &CurveResult) -> Option<&CurvePoint> {
    let k = r.knee_rate_per_s?;
    r.points.iter().find(|p| p.offered_rate_per_s == k)
}

/// The largest |change| of maximum throughput among the filtered configurations of Table
/// 14; `None` when one of them has none (its search sustained nothing) or there is none.
fn largest_reduction(r: &GuardrailResult) -> Option<f64> {
    let changes: Option<Vec<f64>> = r
        .capacity
        .iter()
        .filter(|x| x.configuration != r.baseline)
        .map(|x| x.reduction)
        .collect();
    let changes = changes.filter(|c| !c.is_empty())?;
    Some(changes.into_iter().map(f64::abs).fold(0.0, f64::max))
}

/// The largest closed-loop concurrency meeting `test capacity`'s default criteria (P99 TTFT
/// within 10 × the P50 TTFT of one request at a time) on a prefill-first engine, prompts of
/// `prompt` and answers of exactly `output` tokens; `None` where this derivation does not
/// hold (chunked prefill, fixed timing, speculative decoding, a batch of prompts beyond the
/// token budget, or a queued request within the bound).
///
/// A closed loop of c ≤ B requests (B batch slots) starts them together, prefills them in
/// one step (prefill-first takes whole prompts while the token budget holds them) and
/// finishes them together, so every request's TTFT is that step: base + c·p, with p =
/// prefill·I + prefill_attention·I·(I/2)/1000 the cost of one prompt. One request alone
/// takes base + p, so the bound is 10·(base + p). With c = B + 1 one request per cycle finds
/// the slots full and waits for the whole cycle, the batch's prefill step and its O − 1
/// decode steps (base + decode·B + attention·B·(I + O/2)/1000 each), before its own prefill
/// step: its TTFT is the cycle plus that step, and with it one in B + 1 requests misses the
/// bound (beyond the 1 % the P99 allows), as every larger concurrency misses it for more.
/// The count is the largest c ≤ B with base + c·p within the bound.
///
/// On `cpu-tiny` (base 10, prefill 1.2, prefill attention 0.3, decode 1.5, attention 0.5;
/// 4 slots), I = 256, O = 128: p = 307.2 + 9.8304 = 317.0304 ms; alone 327.0304 ms, bound
/// 3,270.304 ms; four together 10 + 4·317.0304 = 1,278.1216 ms, within it; decode step
/// 10 + 6 + 0.5·4·320/1000 = 16.64 ms, cycle 1,278.1216 + 127·16.64 = 3,391.4016 ms; a
/// fifth request's TTFT 3,391.4016 + 1,278.1216 = 4,669.5232 ms, past it: 4.
pub fn capacity_truth(sim: &SimConfig, prompt: u32, output: u32) -> Option<u32> {
    if sim.prefill_policy != PrefillPolicy::PrefillFirst {
        return None;
    }
    let slots = sim.capacity(prompt, output)?.batch_slots;
    if slots as u64 * prompt.max(1) as u64 > sim.max_batched_tokens.max(1) as u64 {
        return None;
    }
    let m = &sim.step;
    let (i, o, b) = (prompt.max(1) as f64, output.max(1) as f64, slots as f64);
    let p = m.prefill_ms_per_token * i
        + m.prefill_attention_ms_per_token_per_1k_ctx * i * (i / 2.0) / 1000.0;
    let prefill_step = |c: f64| m.base_ms + c * p;
    let bound = 10.0 * prefill_step(1.0);
    let decode_step =
        m.base_ms + m.decode_ms_per_seq * b + m.attention_ms_per_1k_kv * b * (i + o / 2.0) / 1000.0;
    let cycle = prefill_step(b) + (o - 1.0) * decode_step;
    if cycle + prefill_step(b) <= bound {
        return None;
    }
    (1..=slots)
        .filter(|&c| prefill_step(c as f64) <= bound)
        .max()
}

/// The long-context engines: a token budget of 2²⁰, so one step prefills a whole prompt
/// and TTFT at concurrency 1 is that step; decoding costs the 10 ms base. Linear: 0.05 ms a
/// prompt token. Quadratic: no per-token cost, prefill attention 0.3 ms a token per 1K of
/// context (a prompt of L tokens costs 0.3·L·(L/2)/1000 ms).
pub fn exponent_case(quadratic: bool) -> Case {
    let mut sim = flat(4, 10.0, if quadratic { 0.0 } else { 0.05 });
    sim.max_batched_tokens = 1 << 20;
    if quadratic {
        sim.step.prefill_attention_ms_per_token_per_1k_ctx = 0.3;
    }
    Case {
        name: if quadratic { "quadratic" } else { "linear" },
        what: if quadratic {
            "prefill attention alone: TTFT = 10 + 0.00015·L² ms"
        } else {
            "a linear prefill: TTFT = 10 + 0.05·L ms"
        },
        sim,
        workload: WorkloadSpec::fixed(1024, 32),
        level_duration: None,
    }
}

/// The prefix-cache case: 16 slots of 5 ms steps and 0.05 ms a prefilled token, the cache
/// on (16-token blocks), every prompt one shared 512-token context and 128 tokens of its
/// own, 64-token answers.
pub fn prefix_case() -> Case {
    let mut sim = flat(16, 5.0, 0.05);
    sim.prefix_cache = true;
    Case {
        name: "prefix",
        what: "one shared 512-token context and 128 tokens of each request's own: 80 % of the prompt shared",
        sim,
        workload: WorkloadSpec {
            name: "shared-context".into(),
            description: "one shared 512-token context, then 128 tokens of the request's own; 64-token answers".into(),
            prefix_groups: Some(PrefixGroups {
                count: 1,
                tokens: LengthDist::fixed(512),
                share: 1.0,
                zipf_s: 1.0,
            }),
            ..WorkloadSpec::fixed(128, 64)
        },
        level_duration: None,
    }
}

/// The guardrail case and its configurations: 8 slots of 10 ms steps (no cost per token),
/// 128 in, 64 out: 640 ms a request, 12.5 req/s. `input` holds each request 160 ms before
/// the queue, `output` every token 20 ms, `full` both.
pub fn guardrail_case() -> (Case, Vec<(&'static str, SimConfig)>) {
    let base = flat(8, 10.0, 0.0);
    let with = |input_ms: f64, output_ms: f64| SimConfig {
        input_guardrail_ms: input_ms,
        output_guardrail_ms: output_ms,
        ..base.clone()
    };
    let configurations = vec![
        ("baseline", base.clone()),
        ("input", with(160.0, 0.0)),
        ("output", with(0.0, 20.0)),
        ("full", with(160.0, 20.0)),
    ];
    let c = Case {
        name: "guardrail",
        what: "filters that only delay: 160 ms before the queue, 20 ms on every token",
        sim: base,
        workload: WorkloadSpec::fixed(128, 64),
        level_duration: None,
    };
    (c, configurations)
}

#[cfg(test)]
mod tests;
