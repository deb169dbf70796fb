//! The simulator's engine model stepping in virtual time, and one level of requests running
//! on it: what the virtual bench runs each level the procedure asks for on.

use super::prefix::{self, PrefixCache, SharedPrefixes};
use crate::record::{Chunk, FailureKind, Outcome, Phase, RequestRecord};
use crate::schedule::ArrivalPlan;
use crate::sim::config::{PrefillPolicy, StepModel};
use crate::sim::SimConfig;
use crate::workload::WorkloadSpec;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// One request inside the engine.
pub(super) struct Seq {
    /// Index of its record.
    rec: usize,
    prompt: u32,
    output: u32,
    prefilled: u32,
    generated: u32,
    /// What the prompt is made of, when the level's workload shares prefixes: the cache
    /// serves it at admission, and the record's usage says how much it served.
    content: Option<prefix::Content>,
}

/// One step's work: prefill chunks (running index, tokens) and the decoding sequences.
type Plan = (Vec<(usize, u32)>, Vec<usize>);

/// The simulator's engine model, stepping in virtual time.
pub(super) struct Engine<'a> {
    pub(super) cfg: &'a SimConfig,
    pub(super) waiting: VecDeque<Seq>,
    pub(super) running: Vec<Seq>,
    /// The prefix cache, kept by the bench from level to level.
    pub(super) cache: PrefixCache,
}

impl Engine<'_> {
    fn idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }

    /// FCFS admission while a batch slot is free. A prompt of shared prefixes is served
    /// from the prefix cache as it is admitted (its prefill starts past what was cached, as
    /// the simulator's engine does), and its record gets the usage a response reports.
    fn admit(&mut self, records: &mut [RequestRecord]) {
        while (self.running.len() as u32) < self.cfg.max_num_seqs.max(1) {
            let Some(mut s) = self.waiting.pop_front() else {
                break;
            };
            if let Some(c) = s.content.take() {
                let cached = if c.use_cache && self.cfg.prefix_cache {
                    self.cache.serve(&c.chain, s.prompt, self.cfg.block_size)
                } else {
                    0
                };
                s.prefilled = cached;
                records[s.rec].usage = Some(serde_json::json!({
                    "prompt_tokens": s.prompt,
                    "prompt_tokens_details": {"cached_tokens": cached},
                }));
            }
            self.running.push(s);
        }
    }

    /// The next step's work, as the simulator's engine plans it.
    fn plan(&self) -> Plan {
        let target = |s: &Seq| s.prompt.max(1);
        let mut budget = self.cfg.max_batched_tokens.max(1);
        let (mut prefill, mut decode) = (Vec::new(), Vec::new());
        let prefilling: Vec<usize> = (0..self.running.len())
            .filter(|&i| self.running[i].prefilled < target(&self.running[i]))
            .collect();
        if self.cfg.prefill_policy == PrefillPolicy::PrefillFirst && !prefilling.is_empty() {
            // Whole prompts, as many as the budget holds (at least one): decodes stall.
            for (k, &i) in prefilling.iter().enumerate() {
                let left = target(&self.running[i]) - self.running[i].prefilled;
                if k > 0 && left > budget {
                    break;
                }
                prefill.push((i, left));
                budget = budget.saturating_sub(left);
            }
            return (prefill, decode);
        }
        for i in (0..self.running.len())
            .filter(|&i| self.running[i].prefilled >= target(&self.running[i]))
        {
            decode.push(i);
            budget = budget.saturating_sub(1);
        }
        for &i in &prefilling {
            if budget == 0 {
                break;
            }
            let left = target(&self.running[i]) - self.running[i].prefilled;
            let chunk = left.min(budget);
            prefill.push((i, chunk));
            budget -= chunk;
        }
        (prefill, decode)
    }

    /// The step's cost, ns of (virtual) wall time: the step-time model over `time_scale`.
    fn cost_ns(&self, plan: &Plan) -> u64 {
        let m: &StepModel = &self.cfg.step;
        let mut ms = m.base_ms;
        for &(i, chunk) in &plan.0 {
            let ctx_mid = self.running[i].prefilled as f64 + chunk as f64 / 2.0;
            ms += m.prefill_ms_per_token * chunk as f64;
            ms += m.prefill_attention_ms_per_token_per_1k_ctx * chunk as f64 * ctx_mid / 1000.0;
        }
        let kv: u64 = plan
            .1
            .iter()
            .map(|&i| {
                let s = &self.running[i];
                (s.prompt + s.generated).max(s.prompt.max(1)) as u64
            })
            .sum();
        ms += m.decode_ms_per_seq * plan.1.len() as f64;
        ms += m.attention_ms_per_1k_kv * kv as f64 / 1000.0;
        (ms / self.cfg.time_scale.max(1e-9) * 1e6).round() as u64
    }

    /// Runs a step that ends at `at`: its tokens go to the records, `shift` ns later (the
    /// output guardrail holds each token that long); returns the records of the requests
    /// it finished.
    fn apply(
        &mut self,
        plan: &Plan,
        at: u64,
        shift: u64,
        records: &mut [RequestRecord],
    ) -> Vec<usize> {
        let mut done: Vec<usize> = Vec::new();
        for &(i, chunk) in &plan.0 {
            let s = &mut self.running[i];
            s.prefilled += chunk;
            if s.prefilled >= s.prompt.max(1) && s.generated == 0 {
                // The first token is sampled from the prefill's last logits.
                s.generated = 1;
                token(&mut records[s.rec], at + shift);
                if s.generated >= s.output {
                    done.push(i);
                }
            }
        }
        for &i in &plan.1 {
            let s = &mut self.running[i];
            s.generated += 1;
            token(&mut records[s.rec], at + shift);
            if s.generated >= s.output {
                done.push(i);
            }
        }
        // Highest index first keeps the others valid.
        done.sort_unstable_by(|a, b| b.cmp(a));
        done.dedup();
        done.into_iter()
            .map(|i| self.running.swap_remove(i).rec)
            .collect()
    }
}

/// One token streamed to a record at `at`.
fn token(r: &mut RequestRecord, at: u64) {
    if r.chunks.is_empty() {
        r.first_content = Some(0);
        r.first_byte_at = Some(at);
    }
    r.chunks.push(Chunk {
        at,
        tokens: 1,
        bytes: 4,
    });
    r.output_tokens += 1;
}

/// One level running in virtual time (ns from its start).
pub(super) struct Level<'a> {
    pub(super) engine: Engine<'a>,
    pub(super) workload: &'a WorkloadSpec,
    pub(super) lengths: ChaCha8Rng,
    /// The workload's shared prefixes, when it has any.
    pub(super) prefixes: Option<SharedPrefixes>,
    pub(super) records: Vec<RequestRecord>,
    pub(super) ended: Vec<bool>,
    /// Prompt tokens of shared prefixes, by record.
    pub(super) shared: Vec<u32>,
    pub(super) arrivals: Option<std::iter::Peekable<ArrivalPlan>>,
    /// Requests sent and not yet queued in the engine, with when they enter its queue (the
    /// input guardrail holds each `in_delay`), in that order.
    pub(super) pending: VecDeque<(u64, Seq)>,
    /// ns the input guardrail holds a request before it is queued.
    pub(super) in_delay: u64,
    /// ns each token, and so each request's end, reaches the client after the engine made
    /// it (the output guardrail).
    pub(super) out_delay: u64,
    pub(super) now: u64,
    /// Sending stops here (the level's duration).
    pub(super) send_until: u64,
    /// What is still running here (duration + grace) is cancelled.
    pub(super) stop_at: u64,
    /// Requests still to send (`u64::MAX` without a count).
    pub(super) left: u64,
}

impl Level<'_> {
    /// Sends the next request of the workload at `at`; `open`: it was planned (open loop).
    /// It enters the engine's queue `in_delay` later.
    fn send(&mut self, at: u64, open: bool) {
        let own = self.workload.input.sample(&mut self.lengths).max(1);
        let output = self.workload.output.sample(&mut self.lengths).max(1);
        let rec = self.records.len();
        // Shared prefixes are added to the drawn length, as the workload generator adds them.
        let lengths = &mut self.lengths;
        let drawn = self
            .prefixes
            .as_mut()
            .map(|p| p.draw(lengths, rec as u64, own));
        let prompt = drawn.as_ref().map_or(own, |d| d.tokens);
        self.shared.push(drawn.as_ref().map_or(0, |d| d.shared));
        self.records.push(RequestRecord {
            id: rec as u64,
            phase: Phase::Measure,
            scheduled_at: open.then_some(at),
            queued_at: at,
            sent_at: Some(at),
            input_tokens: prompt,
            max_tokens: output,
            http_status: Some(200),
            ..Default::default()
        });
        self.ended.push(false);
        let seq = Seq {
            rec,
            prompt,
            output,
            prefilled: 0,
            generated: 0,
            content: drawn.map(|d| d.content),
        };
        let enter = at + self.in_delay;
        let i = self.pending.partition_point(|p| p.0 <= enter);
        self.pending.insert(i, (enter, seq));
        self.left = self.left.saturating_sub(1);
    }

    /// Queues in the engine every sent request whose input guardrail has let it through.
    fn enter(&mut self) {
        while self.pending.front().is_some_and(|p| p.0 <= self.now) {
            if let Some((_, s)) = self.pending.pop_front() {
                self.engine.waiting.push_back(s);
            }
        }
    }

    /// The next planned arrival still to send.
    fn next_arrival(&mut self) -> Option<u64> {
        let at = *self.arrivals.as_mut()?.peek()?;
        (at < self.send_until && self.left > 0).then_some(at)
    }

    /// Sends every planned arrival due by now.
    fn arrive(&mut self) {
        while let Some(at) = self.next_arrival().filter(|&at| at <= self.now) {
            if let Some(plan) = self.arrivals.as_mut() {
                plan.next();
            }
            self.send(at, true);
        }
    }

    /// Runs the level (a closed loop of `concurrency`, else its arrival plan) until nothing
    /// is left to run or its stop; returns when it ended.
    pub(super) fn run(&mut self, concurrency: Option<u32>) -> u64 {
        for _ in 0..concurrency.map_or(0, |c| c.max(1)) {
            if self.left > 0 {
                self.send(0, false);
            }
        }
        loop {
            self.arrive();
            self.enter();
            if self.engine.idle() {
                let entering = self.pending.front().map(|p| p.0);
                match self.next_arrival().into_iter().chain(entering).min() {
                    Some(at) => {
                        self.now = self.now.max(at);
                        continue;
                    }
                    None => return self.now,
                }
            }
            self.engine.admit(&mut self.records);
            let plan = self.engine.plan();
            let end = self.now + self.engine.cost_ns(&plan).max(1);
            if end > self.stop_at {
                return self.stop_at;
            }
            let done = self
                .engine
                .apply(&plan, end, self.out_delay, &mut self.records);
            self.now = end;
            for rec in done {
                // The client sees the end when the output guardrail lets the last token go.
                let seen = end + self.out_delay;
                self.records[rec].finished_at = seen;
                self.ended[rec] = true;
                if concurrency.is_some() && seen < self.send_until && self.left > 0 {
                    self.send(seen, false);
                }
            }
        }
    }

    /// Cancels what had not ended at `end`, as the runner does after the grace.
    pub(super) fn finish(&mut self, end: u64) {
        for (r, ended) in self.records.iter_mut().zip(&self.ended) {
            if !ended {
                r.outcome = Outcome::failed(
                    FailureKind::Cancelled,
                    "still in flight when the level ended",
                );
                r.finished_at = end;
            }
        }
    }
}
