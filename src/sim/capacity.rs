//! The simulator's analytic capacity: how many requests per second its engine model can
//! complete for a fixed prompt and output length, computed from the step-time model alone.
//!
//! Tests and the procedures' documentation check servebench's searches against it: a
//! throughput test on the simulator must find this rate, a capacity test its batch slots.
//! The derivation (docs/sim.md, "Analytic capacity"):
//!
//! - Batch slots B = min(`max_num_seqs`, KV blocks ÷ blocks of one finished sequence):
//!   beyond B, requests queue (or are preempted when KV runs out).
//! - **Chunked prefill**: at saturation every step decodes all running sequences and
//!   prefills newcomers. A request holds a slot for O steps (its prefill step yields the
//!   first token, then O − 1 decode steps), so r = B / O requests start (and finish) per
//!   step, unless the token budget binds first: r·I + r·(O − 1) ≤ `max_batched_tokens`.
//!   A step then costs base + decode·D + attention·D·(I + O/2)/1000 + prefill·r·I +
//!   prefill_attention·r·I²/2000 with D = r·(O − 1) decoding sequences, whose KV averages
//!   I + O/2 tokens.
//! - **Prefill-first**: a step with prompts to prefill runs only them. Under a steady
//!   stream of arrivals each request gets a prefill step of its own (base + prefill·I +
//!   prefill_attention·I²/2000), and B requests share O − 1 decode steps of B sequences
//!   (base + decode·B + attention·B·(I + O/2)/1000): B requests per B prefill steps plus
//!   O − 1 decode steps. (A closed loop that starts B requests together prefills them in one
//!   step and is faster by (B − 1) base costs per cycle, about 1 % on `cpu-tiny`.)
//!
//! Requests per second = requests per step ÷ step time × `time_scale`. Speculative decoding
//! and fixed timing are not modelled (`None`).
//!
//! The non-generative routes (embeddings, rerank) bypass the engine: a request holds one of
//! `max_num_seqs` slots for S = base + prefill·T ms (T: all its input tokens, rerank's query
//! included), so at saturation `max_num_seqs` ÷ S requests finish per ms
//! ([`SimConfig::pooling_capacity`]).

use super::config::{PrefillPolicy, SimConfig};

/// What the engine model sustains for one request shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    /// Requests completed per second at saturation (wall clock, `time_scale` applied).
    pub requests_per_s: f64,
    /// Output tokens per second at saturation.
    pub output_tokens_per_s: f64,
    /// Sequences batched at once: the most requests served without queueing.
    pub batch_slots: u32,
    /// The KV cache, not `max_num_seqs`, limits the batch (preemptions likely beyond it).
    pub kv_bound: bool,
}

impl SimConfig {
    /// The analytic capacity for prompts of `prompt_tokens` and outputs of exactly
    /// `output_tokens` (as the engine counts them). `None` for fixed timing, speculative
    /// decoding, or lengths that do not fit the KV cache.
    pub fn capacity(&self, prompt_tokens: u32, output_tokens: u32) -> Option<Capacity> {
        if self.fixed.is_some() || self.spec_tokens > 0 || output_tokens == 0 {
            return None;
        }
        let (i, o) = (prompt_tokens.max(1) as f64, output_tokens as f64);
        let block = self.block_size.max(1);
        let total_blocks = (self.kv_capacity_tokens / block).max(1);
        let per_seq = (prompt_tokens + output_tokens + 1).div_ceil(block);
        let kv_slots = total_blocks / per_seq.max(1);
        if kv_slots == 0 {
            return None;
        }
        let b = self.max_num_seqs.min(kv_slots).max(1);
        let bf = b as f64;
        let m = &self.step;
        let kv_mean = i + o / 2.0;
        let prefill_one = m.prefill_ms_per_token * i
            + m.prefill_attention_ms_per_token_per_1k_ctx * i * (i / 2.0) / 1000.0;
        let (requests_per_ms, _) = match self.prefill_policy {
            PrefillPolicy::Chunked => {
                let budget = self.max_batched_tokens.max(1) as f64;
                let r = (bf / o).min(budget / (i + o - 1.0));
                let d = r * (o - 1.0);
                let step = m.base_ms
                    + m.decode_ms_per_seq * d
                    + m.attention_ms_per_1k_kv * d * kv_mean / 1000.0
                    + r * prefill_one;
                (r / step, step)
            }
            PrefillPolicy::PrefillFirst => {
                let prefill_step = m.base_ms + prefill_one;
                let decode_step = m.base_ms
                    + m.decode_ms_per_seq * bf
                    + m.attention_ms_per_1k_kv * bf * kv_mean / 1000.0;
                let cycle = bf * prefill_step + (o - 1.0) * decode_step;
                (bf / cycle, cycle)
            }
        };
        let requests_per_s = requests_per_ms * 1000.0 * self.time_scale;
        Some(Capacity {
            requests_per_s,
            output_tokens_per_s: requests_per_s * o,
            batch_slots: b,
            kv_bound: kv_slots < self.max_num_seqs,
        })
    }
}

/// What the non-generative routes sustain for one request shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolingCapacity {
    /// One request's service time, ms (wall clock, `time_scale` applied): its least latency.
    pub service_ms: f64,
    /// Requests completed per second at saturation.
    pub requests_per_s: f64,
    /// Items (embeddings inputs, rerank documents) answered per second at saturation.
    pub items_per_s: f64,
    /// Input tokens per second at saturation (rerank's query included).
    pub input_tokens_per_s: f64,
    /// Requests served at once: the most served without queueing.
    pub slots: u32,
}

impl SimConfig {
    /// A non-generative request's cost on the simulator's clock, ms: one forward pass over
    /// `prompt_tokens`, plus the fixed cost of a step (before `time_scale`).
    pub fn pooling_service_ms(&self, prompt_tokens: u32) -> f64 {
        self.step.base_ms + self.step.prefill_ms_per_token * prompt_tokens as f64
    }

    /// The analytic capacity of the embeddings (`query: false`) or rerank (`query: true`)
    /// route for `items` items of `item_tokens` tokens each; rerank's query is one more
    /// text of `item_tokens`.
    pub fn pooling_capacity(&self, items: u32, item_tokens: u32, query: bool) -> PoolingCapacity {
        let texts = items + u32::from(query);
        let tokens = texts * item_tokens;
        let service_ms = self.pooling_service_ms(tokens) / self.time_scale.max(1e-9);
        let slots = self.max_num_seqs.max(1);
        let requests_per_s = slots as f64 / service_ms * 1000.0;
        PoolingCapacity {
            service_ms,
            requests_per_s,
            items_per_s: requests_per_s * items as f64,
            input_tokens_per_s: requests_per_s * tokens as f64,
            slots,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_by_hand() {
        // cpu-tiny: base 10, prefill 1.2/token, 4 slots. Rerank of 3 documents of 20 tokens
        // and a 20-token query: T = 80, S = 10 + 96 = 106 ms → 4 / 0.106 = 37.736 req/s.
        let c = SimConfig::preset("cpu-tiny")
            .unwrap()
            .pooling_capacity(3, 20, true);
        assert!((c.service_ms - 106.0).abs() < 1e-9);
        assert!((c.requests_per_s - 4000.0 / 106.0).abs() < 1e-9);
        assert!((c.items_per_s - 3.0 * 4000.0 / 106.0).abs() < 1e-9);
        assert!((c.input_tokens_per_s - 80.0 * 4000.0 / 106.0).abs() < 1e-9);
        assert_eq!(c.slots, 4);
    }

    #[test]
    fn cpu_tiny_by_hand() {
        // cpu-tiny: base 10, prefill 1.2/token, prefill attention 0.3, decode 1.5/seq,
        // attention 0.5 per 1K KV; 4 slots, prefill-first. I = 256, O = 128:
        // prefill step = 10 + 1.2·256 + 0.3·256·128/1000 = 10 + 307.2 + 9.8304 = 327.0304
        // decode step  = 10 + 1.5·4 + 0.5·4·(256 + 64)/1000 = 16.64
        // cycle = 4·327.0304 + 127·16.64 = 1308.1216 + 2113.28 = 3421.4016 ms
        // → 4 / 3.4214016 s = 1.169111 req/s.
        let c = SimConfig::preset("cpu-tiny")
            .unwrap()
            .capacity(256, 128)
            .unwrap();
        assert!((c.requests_per_s - 4.0 / 3.421_401_6).abs() < 1e-6, "{c:?}");
        assert_eq!(c.batch_slots, 4);
        assert!(!c.kv_bound);
        let mut fast = SimConfig::preset("cpu-tiny").unwrap();
        fast.time_scale = 20.0;
        let f = fast.capacity(256, 128).unwrap();
        assert!((f.requests_per_s / c.requests_per_s - 20.0).abs() < 1e-9);
    }

    #[test]
    fn chunked_by_hand() {
        // h100-llama3-8b: base 5, prefill 0.04, prefill attention 0.002, decode 0.05,
        // attention 0.01; 256 slots, chunked, budget 8192. I = 512, O = 256:
        // r = min(256/256, 8192/767) = 1 per step; D = 255;
        // step = 5 + 0.05·255 + 0.01·255·640/1000 + 0.04·512 + 0.002·512·256/1000
        //      = 5 + 12.75 + 1.632 + 20.48 + 0.262144 = 40.124144 ms → 24.9227 req/s.
        let c = SimConfig::preset("h100-llama3-8b")
            .unwrap()
            .capacity(512, 256)
            .unwrap();
        assert!(
            (c.requests_per_s - 1000.0 / 40.124_144).abs() < 1e-6,
            "{c:?}"
        );
        assert_eq!(c.batch_slots, 256);
    }

    #[test]
    fn kv_limits_the_batch() {
        let mut cfg = SimConfig::preset("cpu-tiny").unwrap();
        cfg.kv_capacity_tokens = 1024; // 64 blocks; a 256 + 128 + 1 sequence needs 25
        let c = cfg.capacity(256, 128).unwrap();
        assert_eq!(c.batch_slots, 2);
        assert!(c.kv_bound);
        cfg.kv_capacity_tokens = 100;
        assert!(cfg.capacity(256, 128).is_none());
        assert!(SimConfig::fixed(10.0, 1.0).capacity(10, 10).is_none());
    }
}
