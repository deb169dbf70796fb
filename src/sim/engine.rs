//! The simulated continuous-batching engine: one scheduler loop in real time.
//!
//! Each iteration ("step") picks a batch under `max_num_seqs`, a per-step token budget and
//! the KV capacity, charges the step-time model, sleeps until the step ends, then hands every
//! decoding sequence its next token (or several, with speculative decoding). Policies follow
//! the engines they imitate: FCFS admission, prefill-first or chunked prefill, preemption by
//! recompute when KV blocks run out, and an LRU prefix cache over prompt blocks. The loop
//! keeps virtual time: each step ends `step_time` after the previous one, so the timer's
//! 1 ms granularity does not accumulate into drift. See `docs/sim.md` for the equations.

use super::config::{PrefillPolicy, SimConfig};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// A request handed to the engine.
pub struct Admission {
    /// Arrival order (seeds the request's draws).
    pub seq_no: u64,
    pub arrived: Instant,
    pub prompt_tokens: u32,
    /// Chained hashes of the prompt's full blocks (for the prefix cache).
    pub block_hashes: Vec<u64>,
    /// Tokens to generate.
    pub output_tokens: u32,
    pub rng_seed: u64,
    pub events: mpsc::UnboundedSender<Event>,
    /// Set by the connection when the client went away.
    pub aborted: Arc<AtomicBool>,
}

/// What the engine tells a request's connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// First scheduled (prefill starts), with the prompt tokens found in the prefix cache.
    Scheduled { at: Instant, cached_tokens: u32 },
    /// `n` tokens generated at `at`.
    Tokens { n: u32, at: Instant },
    /// Evicted to free KV blocks; it will be recomputed.
    Preempted { at: Instant },
    /// All tokens generated.
    Finished { at: Instant },
    /// The prompt can never fit in the KV cache.
    Rejected,
}

/// Live engine figures, exported at `/metrics`.
#[derive(Debug, Default)]
pub struct Stats {
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    pub kv_used_blocks: AtomicU64,
    pub kv_total_blocks: AtomicU64,
    pub preemptions: AtomicU64,
    pub prefix_queries: AtomicU64,
    pub prefix_hits: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    pub finished: AtomicU64,
    pub steps: AtomicU64,
    /// Set by `POST /reset_prefix_cache`: the engine empties its prefix cache before it
    /// admits anything else.
    pub reset_prefix_cache: AtomicBool,
}

/// Handle to a running engine.
#[derive(Clone)]
pub struct EngineHandle {
    tx: mpsc::UnboundedSender<Admission>,
    pub stats: Arc<Stats>,
}

impl EngineHandle {
    /// Queues a request; `false` if the engine has stopped.
    pub fn submit(&self, a: Admission) -> bool {
        self.stats.waiting.fetch_add(1, Ordering::Relaxed);
        self.tx.send(a).is_ok()
    }
}

/// Starts the engine loop on the current tokio runtime.
pub fn spawn(config: SimConfig) -> EngineHandle {
    let (tx, rx) = mpsc::unbounded_channel();
    let stats = Arc::new(Stats::default());
    let engine = Engine::new(config, stats.clone());
    tokio::spawn(engine.run(rx));
    EngineHandle { tx, stats }
}

struct Seq {
    a: Admission,
    rng: ChaCha8Rng,
    /// Tokens that must be in KV before decoding (prompt, plus generated ones after a preemption).
    target_prefill: u32,
    prefilled: u32,
    generated: u32,
    blocks: u32,
    admit_order: u64,
    scheduled_once: bool,
}

impl Seq {
    fn in_kv(&self) -> u32 {
        if self.prefilled < self.target_prefill {
            self.prefilled
        } else {
            self.target_prefill
                .max(self.a.prompt_tokens + self.generated)
        }
    }
}

/// LRU set of block hashes.
#[derive(Default)]
struct PrefixCache {
    last_use: HashMap<u64, u64>,
    by_age: BTreeMap<u64, u64>,
    tick: u64,
    capacity: usize,
}

impl PrefixCache {
    fn touch(&mut self, h: u64) {
        self.tick += 1;
        if let Some(old) = self.last_use.insert(h, self.tick) {
            self.by_age.remove(&old);
        }
        self.by_age.insert(self.tick, h);
        while self.last_use.len() > self.capacity {
            let Some((&age, &victim)) = self.by_age.iter().next() else {
                break;
            };
            self.by_age.remove(&age);
            self.last_use.remove(&victim);
        }
    }

    /// Leading blocks of `hashes` present in the cache.
    fn hits(&self, hashes: &[u64]) -> usize {
        hashes
            .iter()
            .take_while(|h| self.last_use.contains_key(h))
            .count()
    }
}

struct Engine {
    cfg: SimConfig,
    stats: Arc<Stats>,
    waiting: VecDeque<Seq>,
    running: Vec<Seq>,
    free_blocks: u32,
    total_blocks: u32,
    cache: PrefixCache,
    admitted: u64,
}

/// One step's work: prefill chunks and decoding sequences (indices into `running`).
#[derive(Default)]
struct StepPlan {
    prefill: Vec<(usize, u32)>,
    decode: Vec<usize>,
}

impl Engine {
    fn new(cfg: SimConfig, stats: Arc<Stats>) -> Self {
        let total_blocks = (cfg.kv_capacity_tokens / cfg.block_size.max(1)).max(1);
        stats
            .kv_total_blocks
            .store(total_blocks as u64, Ordering::Relaxed);
        let cache = PrefixCache {
            capacity: if cfg.prefix_cache {
                total_blocks as usize
            } else {
                0
            },
            ..Default::default()
        };
        Self {
            cfg,
            stats,
            waiting: VecDeque::new(),
            running: Vec::new(),
            free_blocks: total_blocks,
            total_blocks,
            cache,
            admitted: 0,
        }
    }

    fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.cfg.block_size.max(1))
    }

    fn scaled(&self, ms: f64) -> Duration {
        Duration::from_secs_f64((ms / self.cfg.time_scale.max(1e-9)).max(0.0) / 1e3)
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Admission>) {
        let mut prev_end: Option<Instant> = None;
        loop {
            while let Ok(a) = rx.try_recv() {
                self.enqueue(a);
            }
            self.drop_aborted();
            if self.stats.reset_prefix_cache.swap(false, Ordering::AcqRel) {
                let capacity = self.cache.capacity;
                self.cache = PrefixCache {
                    capacity,
                    ..Default::default()
                };
            }
            if self.waiting.is_empty() && self.running.is_empty() {
                match rx.recv().await {
                    Some(a) => self.enqueue(a),
                    None => return,
                }
                prev_end = None;
                continue;
            }
            self.admit();
            let plan = self.plan();
            if plan.prefill.is_empty() && plan.decode.is_empty() {
                // Nothing can run: the head of the queue can never fit. Reject it.
                if let Some(s) = self.waiting.pop_front() {
                    self.stats.waiting.fetch_sub(1, Ordering::Relaxed);
                    let _ = s.a.events.send(Event::Rejected);
                }
                continue;
            }
            let cost_ms = self.cost_ms(&plan);
            // Virtual time: the step starts when the previous one ended, unless the loop fell
            // more than 5 ms behind real time (then it does not try to catch up in a burst).
            let now = Instant::now();
            let start = match prev_end {
                Some(t) if t + Duration::from_millis(5) >= now => t,
                _ => now,
            };
            let end = start + self.scaled(cost_ms);
            tokio::time::sleep_until(end.into()).await;
            self.apply(plan, end);
            prev_end = Some(end);
            self.stats.steps.fetch_add(1, Ordering::Relaxed);
            self.publish();
        }
    }

    fn enqueue(&mut self, a: Admission) {
        let target = a.prompt_tokens.max(1);
        let rng = ChaCha8Rng::seed_from_u64(a.rng_seed);
        self.waiting.push_back(Seq {
            a,
            rng,
            target_prefill: target,
            prefilled: 0,
            generated: 0,
            blocks: 0,
            admit_order: 0,
            scheduled_once: false,
        });
    }

    fn drop_aborted(&mut self) {
        let mut freed = 0;
        self.running.retain(|s| {
            let keep = !s.a.aborted.load(Ordering::Relaxed);
            if !keep {
                freed += s.blocks;
            }
            keep
        });
        self.free_blocks += freed;
        let before = self.waiting.len();
        self.waiting
            .retain(|s| !s.a.aborted.load(Ordering::Relaxed));
        self.stats
            .waiting
            .fetch_sub((before - self.waiting.len()) as u64, Ordering::Relaxed);
    }

    /// FCFS admission while a batch slot and the prompt's KV blocks are free.
    fn admit(&mut self) {
        while (self.running.len() as u32) < self.cfg.max_num_seqs {
            let Some(head) = self.waiting.front() else {
                break;
            };
            let need = self.blocks_for(head.target_prefill + 1);
            if need > self.total_blocks {
                break; // rejected by plan() when nothing else can run
            }
            if need > self.free_blocks {
                break; // head-of-line: wait for blocks
            }
            let mut s = self.waiting.pop_front().expect("head exists");
            self.stats.waiting.fetch_sub(1, Ordering::Relaxed);
            self.free_blocks -= need;
            s.blocks = need;
            self.admitted += 1;
            s.admit_order = self.admitted;
            let hashes = &s.a.block_hashes;
            let hit_blocks = if self.cfg.prefix_cache {
                self.cache.hits(hashes)
            } else {
                0
            };
            let cached =
                ((hit_blocks as u32) * self.cfg.block_size).min(s.target_prefill.saturating_sub(1));
            if !s.scheduled_once {
                self.stats
                    .prefix_queries
                    .fetch_add(s.a.prompt_tokens as u64, Ordering::Relaxed);
                self.stats
                    .prefix_hits
                    .fetch_add(cached as u64, Ordering::Relaxed);
                self.stats
                    .prompt_tokens
                    .fetch_add(s.a.prompt_tokens as u64, Ordering::Relaxed);
                let _ = s.a.events.send(Event::Scheduled {
                    at: Instant::now(),
                    cached_tokens: cached,
                });
                s.scheduled_once = true;
            }
            for h in s.a.block_hashes.iter().take(hit_blocks) {
                self.cache.touch(*h);
            }
            s.prefilled = cached;
            self.running.push(s);
        }
    }

    fn plan(&self) -> StepPlan {
        let mut plan = StepPlan::default();
        let mut budget = self.cfg.max_batched_tokens.max(1);
        let prefilling: Vec<usize> = (0..self.running.len())
            .filter(|&i| self.running[i].prefilled < self.running[i].target_prefill)
            .collect();
        let decoding: Vec<usize> = (0..self.running.len())
            .filter(|&i| self.running[i].prefilled >= self.running[i].target_prefill)
            .collect();
        match self.cfg.prefill_policy {
            PrefillPolicy::PrefillFirst if !prefilling.is_empty() => {
                // Whole prompts, as many as the budget holds (at least one): decodes stall.
                for (k, &i) in prefilling.iter().enumerate() {
                    let left = self.running[i].target_prefill - self.running[i].prefilled;
                    if k > 0 && left > budget {
                        break;
                    }
                    plan.prefill.push((i, left));
                    budget = budget.saturating_sub(left);
                }
            }
            _ => {
                let per_decode = 1 + self.cfg.spec_tokens;
                for &i in &decoding {
                    plan.decode.push(i);
                    budget = budget.saturating_sub(per_decode);
                }
                for &i in &prefilling {
                    if budget == 0 {
                        break;
                    }
                    let left = self.running[i].target_prefill - self.running[i].prefilled;
                    let chunk = left.min(budget);
                    plan.prefill.push((i, chunk));
                    budget -= chunk;
                }
            }
        }
        plan
    }

    fn cost_ms(&self, plan: &StepPlan) -> f64 {
        let m = &self.cfg.step;
        let mut cost = m.base_ms;
        for &(i, chunk) in &plan.prefill {
            let ctx_mid = self.running[i].prefilled as f64 + chunk as f64 / 2.0;
            cost += m.prefill_ms_per_token * chunk as f64;
            cost += m.prefill_attention_ms_per_token_per_1k_ctx * chunk as f64 * ctx_mid / 1000.0;
        }
        let kv: u64 = plan
            .decode
            .iter()
            .map(|&i| self.running[i].in_kv() as u64)
            .sum();
        cost += m.decode_ms_per_seq * plan.decode.len() as f64;
        cost += m.attention_ms_per_1k_kv * kv as f64 / 1000.0;
        cost +=
            self.cfg.spec_ms_per_token * (self.cfg.spec_tokens as usize * plan.decode.len()) as f64;
        cost
    }

    fn apply(&mut self, plan: StepPlan, at: Instant) {
        let mut done: Vec<usize> = Vec::new();
        self.apply_prefill(&plan.prefill, at, &mut done);
        let preempt = self.apply_decode(&plan.decode, at, &mut done);
        self.retire(&done, &preempt, at);
    }

    /// The step's prefill chunks. A sequence whose prompt is now all in its KV cache caches
    /// its blocks and samples its first token; `done` gets those that one token finished.
    fn apply_prefill(&mut self, prefill: &[(usize, u32)], at: Instant, done: &mut Vec<usize>) {
        for &(i, chunk) in prefill {
            let s = &mut self.running[i];
            s.prefilled += chunk;
            if s.prefilled >= s.target_prefill {
                for h in s.a.block_hashes.clone() {
                    self.cache.touch(h);
                }
                let s = &mut self.running[i];
                if s.generated == 0 {
                    // The first token is sampled from the prefill's last logits.
                    s.generated = 1;
                    let _ = s.a.events.send(Event::Tokens { n: 1, at });
                    self.stats.generation_tokens.fetch_add(1, Ordering::Relaxed);
                    if s.generated >= s.a.output_tokens {
                        done.push(i);
                    }
                }
            }
        }
    }

    /// The step's decodes: each sequence's accepted tokens, its KV cache grown for them
    /// (preempting the latest admitted when blocks run out). `done` gets the sequences that
    /// finished; returns those preempted.
    fn apply_decode(&mut self, decode: &[usize], at: Instant, done: &mut Vec<usize>) -> Vec<usize> {
        let mut preempt: Vec<usize> = Vec::new();
        for &i in decode {
            if preempt.contains(&i) {
                continue;
            }
            let n = self.accepted_tokens(i);
            if !self.grow_kv(i, n, &mut preempt) {
                continue;
            }
            let s = &mut self.running[i];
            s.generated += n;
            let _ = s.a.events.send(Event::Tokens { n, at });
            self.stats
                .generation_tokens
                .fetch_add(n as u64, Ordering::Relaxed);
            if s.generated >= s.a.output_tokens {
                done.push(i);
            }
        }
        preempt
    }

    /// The tokens sequence `i` gets this step: one, plus each speculative token accepted
    /// until the first rejected, no more than it has left to generate.
    fn accepted_tokens(&mut self, i: usize) -> u32 {
        let spec = self.cfg.spec_tokens;
        let accept = self.cfg.spec_acceptance;
        let s = &mut self.running[i];
        let mut n = 1;
        for _ in 0..spec {
            if s.rng.random::<f64>() < accept {
                n += 1;
            } else {
                break;
            }
        }
        n.min(s.a.output_tokens.saturating_sub(s.generated)).max(1)
    }

    /// KV growth for `n` more tokens of sequence `i`: a new block when the sequence crosses a
    /// block boundary, preempting (into `preempt`) the latest admitted sequences while blocks
    /// are short. `false` when `i` itself was preempted.
    fn grow_kv(&mut self, i: usize, n: u32, preempt: &mut Vec<usize>) -> bool {
        let s = &self.running[i];
        let (tokens_after, held) = (s.a.prompt_tokens + s.generated + n + 1, s.blocks);
        let need = self.blocks_for(tokens_after);
        if need > held {
            let extra = need - held;
            while self.free_blocks < extra {
                let Some(victim) = self.pick_victim(preempt) else {
                    break;
                };
                self.free_blocks += self.running[victim].blocks;
                self.running[victim].blocks = 0;
                preempt.push(victim);
                if victim == i {
                    break;
                }
            }
            if preempt.contains(&i) || self.free_blocks < extra {
                if !preempt.contains(&i) {
                    self.free_blocks += self.running[i].blocks;
                    self.running[i].blocks = 0;
                    preempt.push(i);
                }
                return false;
            }
            self.free_blocks -= extra;
            self.running[i].blocks = need;
        }
        true
    }

    /// Removes finished and preempted sequences (highest index first keeps indices valid):
    /// a finished one ends, a preempted one waits at the queue's front to be recomputed.
    fn retire(&mut self, done: &[usize], preempt: &[usize], at: Instant) {
        let mut remove: Vec<(usize, bool)> = done.iter().map(|&i| (i, true)).collect();
        remove.extend(
            preempt
                .iter()
                .filter(|i| !done.contains(i))
                .map(|&i| (i, false)),
        );
        remove.sort_by_key(|r| std::cmp::Reverse(r.0));
        remove.dedup_by_key(|r| r.0);
        for (i, finished) in remove {
            let mut s = self.running.swap_remove(i);
            self.free_blocks += s.blocks;
            s.blocks = 0;
            if finished {
                self.stats.finished.fetch_add(1, Ordering::Relaxed);
                let _ = s.a.events.send(Event::Finished { at });
            } else {
                // Recompute: prompt and generated tokens are prefilled again later.
                self.stats.preemptions.fetch_add(1, Ordering::Relaxed);
                let _ = s.a.events.send(Event::Preempted { at });
                s.target_prefill = s.a.prompt_tokens + s.generated;
                s.prefilled = 0;
                self.stats.waiting.fetch_add(1, Ordering::Relaxed);
                self.waiting.push_front(s);
            }
        }
    }

    /// The most recently admitted running sequence not already chosen (vLLM's victim).
    fn pick_victim(&self, chosen: &[usize]) -> Option<usize> {
        (0..self.running.len())
            .filter(|i| !chosen.contains(i) && self.running[*i].blocks > 0)
            .max_by_key(|&i| self.running[i].admit_order)
    }

    fn publish(&self) {
        self.stats
            .running
            .store(self.running.len() as u64, Ordering::Relaxed);
        self.stats.kv_used_blocks.store(
            (self.total_blocks - self.free_blocks) as u64,
            Ordering::Relaxed,
        );
    }
}

/// Chained FNV-1a hashes of each full block of `tokens` (block i's hash covers blocks 0..=i).
pub fn block_hashes(tokens: &[u32], block_size: u32) -> Vec<u64> {
    let bs = block_size.max(1) as usize;
    let mut out = Vec::with_capacity(tokens.len() / bs);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for block in tokens.chunks_exact(bs) {
        for t in block {
            for b in t.to_le_bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        out.push(h);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_hashes_chain_and_share_prefixes() {
        let a = block_hashes(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 4);
        let b = block_hashes(&[1, 2, 3, 4, 9, 9, 9, 9], 4);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0], b[0]);
        assert_ne!(a[1], b[1]);
    }

    #[test]
    fn lru_evicts_the_oldest() {
        let mut c = PrefixCache {
            capacity: 2,
            ..Default::default()
        };
        c.touch(1);
        c.touch(2);
        c.touch(1);
        c.touch(3);
        assert_eq!(c.hits(&[1]), 1);
        assert_eq!(c.hits(&[2]), 0);
        assert_eq!(c.hits(&[3, 1]), 2);
    }
}
