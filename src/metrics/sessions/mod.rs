//! Sessions as their user (or agent) lives them: how long a whole session took, how much of
//! that the model took and how much the tools and the user's thinking, how TTFT grows step
//! by step as the history grows, and how much of the prompts the server served from its
//! cache. Multi-turn chat and agent sessions alike (any measured record with a session).
//!
//! A session's times, from its records:
//! - wall time: its first request sent → its last request ended;
//! - model time: the time at least one of its requests was in flight (the union of their
//!   `sent_at` → end intervals, so a fan-out's branches count once);
//! - tool and think time: the waits the plan put before each step (one per step);
//! - other: wall − model − tool − think, what neither the server nor the plan took (the
//!   client's timer, and a step waiting on its slowest branch is model time already).
//!
//! Counted one record at a time ([`SessionTally`]); a session's few numbers are kept until
//! the summary, so memory grows with sessions, not requests' contents.

use crate::record::{Phase, RequestRecord};
use crate::stats::distribution::Distribution;
use crate::stats::sketch::Sketch;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Values each distribution keeps exactly.
const EXACT_VALUES: usize = 65_536;

/// Steps shown one by one in the TTFT-by-step table; later steps share the last row.
pub const STEPS_SHOWN: u32 = 12;

/// The sessions of a run's measured phase (present when its workload has sessions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionSummary {
    pub sessions: u64,
    /// Complete sessions: every planned step sent and every request succeeded (a failed
    /// request ends its session).
    pub sessions_ok: u64,
    /// Sessions the run's end cut short (no request failed, but steps were never sent):
    /// left out of the times, since long sessions are the likelier to be cut.
    #[serde(default)]
    pub sessions_cut: u64,
    /// Requests per session (a fan-out's branches each count).
    pub requests_per_session: f64,
    /// Steps per session (a fan-out is one step).
    pub steps_per_session: f64,
    /// Steps that sent several branches at once, and the widest.
    pub fan_out_steps: u64,
    pub max_branches: u32,
    /// Of the completed sessions: first request sent → last one ended, ms.
    pub wall_ms: Option<Distribution>,
    /// Of the completed sessions: time with a request in flight, ms.
    pub model_ms: Option<Distribution>,
    /// Of the completed sessions: the planned tool time, ms.
    pub tool_ms: Option<Distribution>,
    /// Of the completed sessions: the planned think time, ms.
    pub think_ms: Option<Distribution>,
    /// Shares of the completed sessions' summed wall time: model, tool, think, and the rest.
    pub model_share: Option<f64>,
    pub tool_share: Option<f64>,
    pub think_share: Option<f64>,
    pub other_share: Option<f64>,
    /// TTFT by step number (0-based), successful requests; the last row gathers every step
    /// from [`STEPS_SHOWN`] − 1 on.
    pub ttft_by_step: Vec<StepTtft>,
    /// Tool calls the server's answers made, over every request of the sessions.
    pub tool_calls_answered: u64,
    /// Prompt tokens and, of them, those served from the prefix cache, over the successful
    /// requests whose answer said so (usage `cached_tokens`, llama.cpp `cache_n`).
    pub prompt_tokens_reporting: u64,
    pub cached_prompt_tokens: u64,
    /// Cached ÷ prompt tokens over those requests.
    pub cached_share: Option<f64>,
}

/// TTFT of one step number across sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepTtft {
    /// 0-based step; the last row holds this step and every later one.
    pub step: u32,
    /// Whether this row gathers every step from `step` on.
    pub and_later: bool,
    pub requests: u64,
    /// Mean input tokens of those requests (the history so far).
    pub mean_input_tokens: f64,
    pub ttft_ms: Option<Distribution>,
}

/// One session's figures so far.
#[derive(Debug, Default, Clone)]
struct Acc {
    /// `sent_at` (else the attempt) → end of each request, ns.
    spans: Vec<(u64, u64)>,
    /// Per step: its branches, planned tool and think time.
    steps: BTreeMap<u32, (u32, f64, f64)>,
    failed: bool,
    /// Steps the session plans (0: not recorded, then every session seen counts as whole).
    planned: u32,
}

impl Acc {
    /// Every planned step was sent (as far as the records say).
    fn whole(&self) -> bool {
        self.planned == 0 || self.steps.contains_key(&(self.planned - 1))
    }
}

/// [`SessionSummary`] one record at a time.
#[derive(Debug, Clone)]
pub struct SessionTally {
    open: HashMap<u64, Acc>,
    by_step: Vec<(u64, f64, Sketch)>,
    tool_calls: u64,
    cache: super::cache::CacheFigures,
}

impl Default for SessionTally {
    fn default() -> Self {
        Self {
            open: HashMap::new(),
            by_step: (0..STEPS_SHOWN)
                .map(|_| (0, 0.0, Sketch::new(EXACT_VALUES)))
                .collect(),
            tool_calls: 0,
            cache: Default::default(),
        }
    }
}

impl SessionTally {
    /// The tally of the measured session records among `records`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a RequestRecord>) -> Self {
        let mut t = Self::default();
        for r in records {
            t.add(r);
        }
        t
    }

    /// Counts one record (a measured one of a session; others are skipped).
    pub fn add(&mut self, r: &RequestRecord) {
        let Some((session, step)) = r.session.filter(|_| r.phase == Phase::Measure) else {
            return;
        };
        let acc = self.open.entry(session).or_default();
        acc.spans
            .push((r.sent_at.unwrap_or(r.queued_at), r.finished_at));
        let entry = acc.steps.entry(step).or_insert((0, 0.0, 0.0));
        entry.0 += 1;
        entry.1 = entry.1.max(r.planned_tool_ms);
        entry.2 = entry.2.max(r.planned_think_ms);
        acc.failed |= !r.outcome.is_ok();
        acc.planned = acc.planned.max(r.session_steps);
        self.tool_calls += u64::from(r.tool_calls);
        if r.outcome.is_ok() {
            self.cache.add(r);
            let row = &mut self.by_step[step.min(STEPS_SHOWN - 1) as usize];
            row.0 += 1;
            row.1 += f64::from(r.input_tokens);
            if let Some(ttft) = ttft_ms(r) {
                row.2.add(ttft);
            }
        }
    }

    /// The summary, or `None` when no measured request belonged to a session.
    pub fn finish(&self) -> Option<SessionSummary> {
        if self.open.is_empty() {
            return None;
        }
        let n = self.open.len() as f64;
        let sketch = || Sketch::new(EXACT_VALUES);
        let (mut wall, mut model, mut tool, mut think) = (sketch(), sketch(), sketch(), sketch());
        let mut sums = [0.0f64; 4];
        let (mut requests, mut steps, mut fan_out, mut widest, mut ok) = (0usize, 0usize, 0, 0, 0);
        let mut cut = 0;
        for acc in self.open.values() {
            requests += acc.spans.len();
            steps += acc.steps.len();
            for (branches, ..) in acc.steps.values() {
                fan_out += u64::from(*branches > 1);
                widest = widest.max(*branches);
            }
            if acc.failed {
                continue;
            }
            if !acc.whole() {
                cut += 1;
                continue;
            }
            ok += 1;
            let f = Figures::of(acc);
            for (i, (s, v)) in [
                (&mut wall, f.wall),
                (&mut model, f.model),
                (&mut tool, f.tool),
                (&mut think, f.think),
            ]
            .into_iter()
            .enumerate()
            {
                s.add(v);
                sums[i] += v;
            }
        }
        let share = |i: usize| (sums[0] > 0.0).then(|| sums[i] / sums[0]);
        Some(SessionSummary {
            sessions: self.open.len() as u64,
            sessions_ok: ok,
            sessions_cut: cut,
            requests_per_session: requests as f64 / n,
            steps_per_session: steps as f64 / n,
            fan_out_steps: fan_out,
            max_branches: widest,
            wall_ms: wall.distribution(),
            model_ms: model.distribution(),
            tool_ms: tool.distribution(),
            think_ms: think.distribution(),
            model_share: share(1),
            tool_share: share(2),
            think_share: share(3),
            other_share: share(0).map(|_| 1.0 - (sums[1] + sums[2] + sums[3]) / sums[0]),
            ttft_by_step: self.steps_table(),
            tool_calls_answered: self.tool_calls,
            prompt_tokens_reporting: self.cache.prompt_tokens,
            cached_prompt_tokens: self.cache.cached_tokens,
            cached_share: self.cache.hit_rate(),
        })
    }

    fn steps_table(&self) -> Vec<StepTtft> {
        let last = self.by_step.iter().rposition(|r| r.0 > 0).unwrap_or(0);
        self.by_step[..=last]
            .iter()
            .enumerate()
            .map(|(i, (count, input, ttft))| StepTtft {
                step: i as u32,
                and_later: i as u32 == STEPS_SHOWN - 1,
                requests: *count,
                mean_input_tokens: if *count > 0 {
                    input / *count as f64
                } else {
                    0.0
                },
                ttft_ms: ttft.distribution(),
            })
            .collect()
    }
}

/// One completed session's times, ms.
struct Figures {
    wall: f64,
    model: f64,
    tool: f64,
    think: f64,
}

impl Figures {
    fn of(acc: &Acc) -> Self {
        let mut spans = acc.spans.clone();
        spans.sort_unstable();
        let start = spans.first().map_or(0, |s| s.0);
        let end = spans.iter().map(|s| s.1).max().unwrap_or(start);
        // The union of the spans: sorted by start, merged where they overlap.
        let (mut busy, mut cur): (u64, Option<(u64, u64)>) = (0, None);
        for (a, b) in spans {
            cur = match cur {
                Some((s, e)) if a <= e => Some((s, e.max(b))),
                Some((s, e)) => {
                    busy += e - s;
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        busy += cur.map_or(0, |(s, e)| e - s);
        let ms = |ns: u64| ns as f64 / 1e6;
        // Step 0 waits for nothing: its planned waits are those of the session's start.
        let waits = acc.steps.iter().filter(|(step, _)| **step > 0);
        Figures {
            wall: ms(end.saturating_sub(start)),
            model: ms(busy),
            tool: waits.clone().map(|(_, w)| w.1).sum(),
            think: waits.map(|(_, w)| w.2).sum(),
        }
    }
}

/// First token − T_submit (the last byte written), ms (the generative APIs' TTFT).
fn ttft_ms(r: &RequestRecord) -> Option<f64> {
    let (first, sent) = (r.first_token_at()?, r.submitted_at()?);
    Some((first as f64 - sent as f64) / 1e6)
}

#[cfg(test)]
mod tests;
