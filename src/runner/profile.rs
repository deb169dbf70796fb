//! Isolated prefill profiling: the prefill deadline D_p of Etalon's fluidity-index.
//!
//! Before the measured phase, requests are sent one at a time (nothing else in flight), one
//! output token each, with prefix reuse off, at a few prompt lengths spread over the
//! workload's own input lengths. The first request at each length is discarded (it pays cold
//! caches and allocations); the others' TTFTs are fitted to a + bP + cP². This is what the
//! Etalon paper prescribes ("profiling the request in isolation, in the absence of any other
//! variables like scheduling delays"), so the deadline does not move with the load under
//! test. The records are kept in `requests.jsonl` as phase `profile`.

use super::phase::Shared;
use super::probe::{one_request, prepared, Solo};
use crate::client::PreparedRequest;
use crate::client::RequestOptions;
use crate::config::{ProfilePlan, RunConfig};
use crate::metrics::experience::prompt_tokens;
use crate::metrics::fluidity::PrefillCurve;
use crate::record::run::ProfileReport;
use crate::record::Phase;
use crate::tokenizer::SharedTokenizer;
use crate::workload::{Content, Generator, RequestSpec, WorkloadSpec};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// Smallest prompt profiled, tokens (below it a chat template alone may not fit).
const MIN_LENGTH: u32 = 16;
/// Tokens left free under the server's context for the output (and, counted by the server's
/// own tokenizer, nothing else).
const CONTEXT_MARGIN: u32 = 16;
/// With a reference tokenizer the server's count differs: the chat template adds tokens
/// (24 for Gemma's) and tokenizers split text differently. Keep this share of the context.
const FOREIGN_TOKENIZER_SHARE: f64 = 0.9;
const TEMPLATE_MARGIN: u32 = 32;

/// The prompt lengths to profile: those given, or five quantiles (5, 25, 50, 75, 95 %) of
/// the workload's input lengths; capped to what the server accepts.
pub fn lengths(config: &RunConfig, plan: &ProfilePlan, tokenizer: &SharedTokenizer) -> Vec<u32> {
    let mut lens: Vec<u32> = match &plan.lengths {
        Some(l) => l.clone(),
        None => {
            let mut drawn = sample_input_lengths(config, tokenizer);
            drawn.sort_unstable();
            if drawn.is_empty() {
                vec![256]
            } else {
                [0.05, 0.25, 0.5, 0.75, 0.95]
                    .iter()
                    .map(|q| drawn[((drawn.len() - 1) as f64 * q).round() as usize])
                    .collect()
            }
        }
    };
    let cap = plan
        .max_prompt_tokens
        .map(|c| {
            let usable = if tokenizer.enumerable() {
                ((c as f64 * FOREIGN_TOKENIZER_SHARE) as u32).saturating_sub(TEMPLATE_MARGIN)
            } else {
                c.saturating_sub(CONTEXT_MARGIN)
            };
            usable.max(MIN_LENGTH)
        })
        .unwrap_or(u32::MAX);
    for l in &mut lens {
        *l = (*l).clamp(MIN_LENGTH, cap);
    }
    lens.sort_unstable();
    lens.dedup();
    lens
}

/// Input lengths the workload would draw: from its length distributions, or for a dataset,
/// from its first 64 requests.
fn sample_input_lengths(config: &RunConfig, tokenizer: &SharedTokenizer) -> Vec<u32> {
    let w = &config.workload;
    if w.content == Content::Dataset {
        let Ok(mut g) = Generator::new(w, config.seed, tokenizer.as_ref(), config.dataset.clone())
        else {
            return Vec::new();
        };
        return (0..64)
            .filter_map(|_| g.next_request(tokenizer.as_ref()).ok())
            .map(|r| r.input_tokens)
            .collect();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed ^ 0x9F0F);
    let mut out = Vec::with_capacity(1000);
    let dists: Vec<_> = std::iter::once(&w.input)
        .chain(w.classes.iter().filter_map(|c| c.input.as_ref()))
        .collect();
    for i in 0..1000 {
        out.push(dists[i % dists.len()].sample(&mut rng));
    }
    out
}

/// Profiles prefill at `lengths`; returns the fitted curve (if any request succeeded) and
/// what was done.
pub async fn profile(
    config: &RunConfig,
    plan: &ProfilePlan,
    lengths: &[u32],
    shared: &Shared,
    tokenizer: &SharedTokenizer,
) -> (Option<PrefillCurve>, ProfileReport, Vec<(f64, f64)>) {
    let started = Instant::now();
    let mut opts = config.request.clone();
    opts.prefix_cache = false;
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut per_length = Vec::new();
    let mut budget_hit = false;
    let run_salt = shared.clock.anchor_unix_ns();
    'lengths: for (li, &len) in lengths.iter().enumerate() {
        let mut kept = Vec::new();
        for rep in 0..=plan.repeats {
            if started.elapsed() >= plan.budget {
                budget_hit = true;
                break 'lengths;
            }
            // Prompts unique to this run: a server's prefix cache must not answer the profile
            // from an earlier run's identical prompts (vLLM caches them automatically).
            let seed = config.seed ^ run_salt ^ ((li as u64) << 16) ^ rep as u64;
            let fixed = WorkloadSpec::fixed(len, 1);
            let Some(spec) = one_request(fixed, seed, tokenizer).await else {
                break;
            };
            let req = profile_request(config, &opts, &spec, li, rep);
            let (ttft, prompt) = send_alone(shared, &req).await;
            // The first request at each length pays cold caches: discarded.
            if let (Some(t), true) = (ttft, rep > 0) {
                points.push((prompt, t));
                kept.push(t);
            }
        }
        per_length.push((len, kept));
    }
    let duration_s = started.elapsed().as_secs_f64();
    let curve = PrefillCurve::fit(&points);
    let source = match &curve {
        Some(c) => format!(
            "profiled in isolation before the run: {} requests at {} prompt lengths (first per length discarded), R² {:.3}{}",
            points.len(),
            per_length.iter().filter(|(_, k)| !k.is_empty()).count(),
            c.r2,
            if budget_hit { "; stopped at the profile's time budget" } else { "" }
        ),
        None => "profiling failed: no isolated request completed".into(),
    };
    (
        curve,
        ProfileReport {
            source,
            points: per_length,
            duration_s,
        },
        points,
    )
}

/// The profile's request `rep` at length index `li`: one output token, asked with `opts`
/// (no prefix reuse), an id outside the run's.
fn profile_request(
    config: &RunConfig,
    opts: &RequestOptions,
    spec: &RequestSpec,
    li: usize,
    rep: u32,
) -> PreparedRequest {
    let id = u64::MAX - 1_000 - (li as u64 * 100 + rep as u64);
    prepared(
        &config.target,
        opts,
        &spec.messages,
        1,
        spec.input_tokens,
        id,
    )
}

/// Sends `req` with nothing else in flight (bounded by the run's timeout) and passes its
/// record on: its TTFT in ms when it succeeded, and its prompt's length.
async fn send_alone(shared: &Shared, req: &PreparedRequest) -> (Option<f64>, f64) {
    let ex = Solo::of(shared).send(req, Phase::Profile).await;
    let r = ex.record();
    // The same first-token rule as the run: the first non-blank answer chunk.
    let ttft = r
        .first_token_at()
        .zip(r.submitted_at())
        .filter(|_| r.outcome.is_ok())
        .map(|(t, s)| t.saturating_sub(s) as f64 / 1e6);
    let prompt = prompt_tokens(r);
    let _ = shared.sink.send(ex.into_draft());
    (ttft, prompt)
}
