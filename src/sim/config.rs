//! Parameters of the simulated engine, presets named for what they resemble, and TOML loading.
//!
//! Every time is in ms of simulated time; `time_scale` divides them all (10 runs ten times
//! faster) so tests keep realistic shapes at a fraction of the wall time.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Step-time model of one engine iteration (see `docs/sim.md`):
/// `step = base + prefill·P + prefill_attention·Σ(chunk·context)/1000 + decode·D + attention·KV/1000`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StepModel {
    /// Fixed cost of any step, ms.
    pub base_ms: f64,
    /// Cost per prompt token prefilled in the step, ms.
    pub prefill_ms_per_token: f64,
    /// Attention cost of prefill: per prompt token per 1,000 tokens of its context, ms
    /// (the superlinear term that makes long prompts cost more than proportionally).
    pub prefill_attention_ms_per_token_per_1k_ctx: f64,
    /// Cost per sequence decoding in the step, ms.
    pub decode_ms_per_seq: f64,
    /// Attention cost per 1,000 KV tokens read by decoding sequences, ms.
    pub attention_ms_per_1k_kv: f64,
}

impl Default for StepModel {
    fn default() -> Self {
        Self {
            base_ms: 5.0,
            prefill_ms_per_token: 0.04,
            prefill_attention_ms_per_token_per_1k_ctx: 0.002,
            decode_ms_per_seq: 0.05,
            attention_ms_per_1k_kv: 0.01,
        }
    }
}

/// How prefill and decode share a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrefillPolicy {
    /// A step with waiting prefills runs only prefills: decoding streams stall (vLLM V0).
    PrefillFirst,
    /// Every step decodes all running sequences and fills the rest of the token budget
    /// with prefill chunks (Sarathi-Serve, vLLM V1): stalls are bounded.
    Chunked,
}

/// Fixed timing instead of the engine model: every request gets the same TTFT and ITL,
/// independent of load. For client benchmarks that need exact, known delays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FixedTiming {
    pub ttft_ms: f64,
    /// Extra time to first token per prompt token, ms.
    pub prefill_ms_per_token: f64,
    pub itl_ms: f64,
    /// Uniform jitter added to each gap, ± ms.
    pub itl_jitter_ms: f64,
    pub tokens_per_chunk: u32,
}

impl Default for FixedTiming {
    fn default() -> Self {
        Self {
            ttft_ms: 50.0,
            prefill_ms_per_token: 0.0,
            itl_ms: 10.0,
            itl_jitter_ms: 0.0,
            tokens_per_chunk: 1,
        }
    }
}

/// How the simulated model counts the images and audio of a request (docs/sim.md, "Images
/// and audio"): an image is cut into `tile_px` × `tile_px` tiles, each `tokens_per_tile`
/// prompt tokens, as tiling VLMs do (InternVL, LLaVA-NeXT, Llama 3.2 Vision); the tokens join
/// the prompt, are prefilled at the engine's cost per token and reported in
/// `usage.prompt_tokens`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VisionModel {
    /// Side of a square tile, pixels.
    pub tile_px: u32,
    /// Prompt tokens each tile costs.
    pub tokens_per_tile: u32,
    /// At most this many tiles per image (a larger image is scaled down to fit); 0: no cap.
    pub max_tiles: u32,
    /// Tiles charged for an image whose size is unknown (given by URL: the simulator
    /// fetches nothing).
    pub unknown_image_tiles: u32,
    /// Prompt tokens per second of audio.
    pub audio_tokens_per_s: f64,
    /// Seconds charged for a clip whose length is unknown (a URL, an MP3).
    pub unknown_audio_s: f64,
}

impl Default for VisionModel {
    fn default() -> Self {
        Self {
            tile_px: 512,
            tokens_per_tile: 256,
            max_tiles: 12,
            unknown_image_tiles: 1,
            audio_tokens_per_s: 25.0,
            unknown_audio_s: 5.0,
        }
    }
}

impl VisionModel {
    /// Tiles of a `width` × `height` image: ⌈w / tile⌉ · ⌈h / tile⌉, at most `max_tiles`;
    /// `unknown_image_tiles` when either side is 0 (not known).
    pub fn tiles(&self, width: u32, height: u32) -> u32 {
        if width == 0 || height == 0 {
            return self.unknown_image_tiles;
        }
        let t = self.tile_px.max(1);
        let tiles = width.div_ceil(t) * height.div_ceil(t);
        match self.max_tiles {
            0 => tiles,
            cap => tiles.min(cap),
        }
    }

    /// Prompt tokens of a clip `duration_ms` long (0: not known), rounded up.
    pub fn audio_tokens(&self, duration_ms: u32) -> u32 {
        let s = if duration_ms == 0 {
            self.unknown_audio_s
        } else {
            f64::from(duration_ms) / 1e3
        };
        (s * self.audio_tokens_per_s).ceil().max(0.0) as u32
    }
}

/// Faults injected per request, each drawn from the request's seeded generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Share of requests answered with an error status instead of a stream.
    pub error_rate: f64,
    /// Status codes to pick from for errors (429 gets `Retry-After: 1`).
    pub error_statuses: Vec<u16>,
    /// Share of streams cut (connection closed) part-way.
    pub cut_rate: f64,
    /// Share of streams that stall once for `stall_ms` part-way.
    pub stall_rate: f64,
    pub stall_ms: f64,
    /// Share of streams that contain one malformed JSON event.
    pub malformed_rate: f64,
    /// Share of streams that end part-way with an error event in their API's form
    /// (`{"error": ...}`, Responses `error`, Anthropic `event: error`, TGI `error_type`).
    pub error_event_rate: f64,
    /// Share of streams a stand-in content filter refuses part-way, in the API's own form:
    /// a `refusal` delta with `finish_reason: content_filter` (chat), `content_filter`
    /// (completions), `response.refusal.delta` (Responses), `stop_reason: refusal`
    /// (Messages). The other APIs have no refusal form and ignore it.
    pub refusal_rate: f64,
    /// Not a fault drawn per request but a broken server: when not 0, every HTTP request
    /// (every route, `/v1/models` included) is answered with an HTML page and this status,
    /// as a web UI or another service on the port would answer (200, or 501 for a POST).
    pub html_status: u16,
    /// When set, every HTTP route but `/health` and `/metrics` wants this key
    /// (`Authorization: Bearer KEY` or `x-api-key: KEY`) and answers 401 without it, as
    /// vLLM or llama.cpp started with `--api-key` do.
    pub api_key: Option<String>,
}

/// Everything the simulator does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Model name reported in responses and `/v1/models`.
    pub model: String,
    pub step: StepModel,
    pub prefill_policy: PrefillPolicy,
    /// Most sequences in a batch (vLLM `max_num_seqs`).
    pub max_num_seqs: u32,
    /// Most tokens processed in one step (vLLM `max_num_batched_tokens`).
    pub max_batched_tokens: u32,
    /// KV cache capacity in tokens; sequences hold whole blocks.
    pub kv_capacity_tokens: u32,
    /// Tokens per KV block.
    pub block_size: u32,
    /// Reuse cached prompt prefixes (LRU over blocks).
    pub prefix_cache: bool,
    /// Speculative decoding: draft tokens per step (0 = off).
    pub spec_tokens: u32,
    /// Probability each successive draft token is accepted.
    pub spec_acceptance: f64,
    /// Extra step cost per draft token per sequence, ms.
    pub spec_ms_per_token: f64,
    /// Input guardrail: delay before a request is queued, ms.
    pub input_guardrail_ms: f64,
    /// Output guardrail: every token is released this much after it is generated, ms.
    pub output_guardrail_ms: f64,
    /// Output-delay smoothing ("Revisiting Service Level Objectives and System Level Metrics in Large Language Model Serving", §3.4): tokens are held and released no closer than
    /// this, ms (0 = off). Lowers tail TBT without making anyone wait less.
    pub smoothing_tbt_ms: f64,
    /// Output length without `max_tokens`/`ignore_eos`: log-normal median, tokens.
    pub output_median_tokens: f64,
    /// Log-normal sigma of that length.
    pub output_sigma: f64,
    /// Divides every delay.
    pub time_scale: f64,
    pub seed: u64,
    /// Report per-token emit times in `timings.token_times_ms` (ITL option C).
    pub report_token_times: bool,
    /// A reasoning model: the first this many tokens of each chat answer stream as
    /// `reasoning_content` deltas, and usage reports them in
    /// `completion_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: u32,
    pub faults: Faults,
    /// Fixed per-request timing instead of the engine model (see [`FixedTiming`]).
    pub fixed: Option<FixedTiming>,
    /// How images and audio turn into prompt tokens.
    pub vision: VisionModel,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self::preset("h100-llama3-8b").expect("the default preset exists")
    }
}

/// Presets: (name, what it resembles).
pub const PRESETS: [(&str, &str); 4] = [
    (
        "h100-llama3-8b",
        "Llama 3 8B on one H100 (vLLM-like, chunked prefill)",
    ),
    (
        "a100-llama3-70b-tp4",
        "Llama 3 70B on four A100s, tensor parallel",
    ),
    (
        "cpu-tiny",
        "a 270M model on two CPU cores (llama.cpp-like, 4 slots)",
    ),
    ("fast", "near-instant steps for tests and client benchmarks"),
];

#[derive(Debug, Error)]
pub enum SimConfigError {
    #[error("unknown simulator preset `{0}`: use one of h100-llama3-8b, a100-llama3-70b-tp4, cpu-tiny, fast")]
    Preset(String),
    #[error("invalid simulator config {path}: {detail}")]
    File { path: String, detail: String },
}

impl SimConfig {
    /// Fixed timing (no engine model): TTFT and ITL as given, for every request.
    pub fn fixed(ttft_ms: f64, itl_ms: f64) -> Self {
        SimConfig {
            fixed: Some(FixedTiming {
                ttft_ms,
                itl_ms,
                ..FixedTiming::default()
            }),
            ..Self::preset("fast").expect("the fast preset exists")
        }
    }

    /// A named preset (parameters in `docs/sim.md`).
    pub fn preset(name: &str) -> Result<Self, SimConfigError> {
        let base = SimConfig {
            model: "sim-llama3-8b".into(),
            step: StepModel::default(),
            prefill_policy: PrefillPolicy::Chunked,
            max_num_seqs: 256,
            max_batched_tokens: 8192,
            kv_capacity_tokens: 400_000,
            block_size: 16,
            prefix_cache: true,
            spec_tokens: 0,
            spec_acceptance: 0.7,
            spec_ms_per_token: 0.02,
            input_guardrail_ms: 0.0,
            output_guardrail_ms: 0.0,
            smoothing_tbt_ms: 0.0,
            output_median_tokens: 200.0,
            output_sigma: 0.8,
            time_scale: 1.0,
            seed: 0,
            report_token_times: false,
            reasoning_tokens: 0,
            faults: Faults::default(),
            fixed: None,
            vision: VisionModel::default(),
        };
        Ok(match name {
            "h100-llama3-8b" => base,
            "a100-llama3-70b-tp4" => SimConfig {
                model: "sim-llama3-70b".into(),
                step: StepModel {
                    base_ms: 14.0,
                    prefill_ms_per_token: 0.09,
                    prefill_attention_ms_per_token_per_1k_ctx: 0.004,
                    decode_ms_per_seq: 0.08,
                    attention_ms_per_1k_kv: 0.02,
                },
                max_num_seqs: 256,
                kv_capacity_tokens: 600_000,
                ..base
            },
            "cpu-tiny" => SimConfig {
                model: "sim-tiny-270m".into(),
                step: StepModel {
                    base_ms: 10.0,
                    prefill_ms_per_token: 1.2,
                    prefill_attention_ms_per_token_per_1k_ctx: 0.3,
                    decode_ms_per_seq: 1.5,
                    attention_ms_per_1k_kv: 0.5,
                },
                prefill_policy: PrefillPolicy::PrefillFirst,
                max_num_seqs: 4,
                max_batched_tokens: 2048,
                kv_capacity_tokens: 16_384,
                ..base
            },
            "fast" => SimConfig {
                model: "sim-fast".into(),
                step: StepModel {
                    base_ms: 1.0,
                    prefill_ms_per_token: 0.0005,
                    prefill_attention_ms_per_token_per_1k_ctx: 0.0,
                    decode_ms_per_seq: 0.0,
                    attention_ms_per_1k_kv: 0.0,
                },
                max_num_seqs: 4096,
                max_batched_tokens: 1 << 20,
                kv_capacity_tokens: 1 << 30,
                prefix_cache: false,
                ..base
            },
            other => return Err(SimConfigError::Preset(other.into())),
        })
    }

    /// A preset (or the default) overridden by the fields of a TOML file.
    pub fn from_toml(text: &str, path: &str) -> Result<Self, SimConfigError> {
        let value: toml::Table = toml::from_str(text).map_err(|e| SimConfigError::File {
            path: path.into(),
            detail: e.to_string(),
        })?;
        let preset = value
            .get("preset")
            .and_then(|p| p.as_str())
            .unwrap_or("h100-llama3-8b");
        let base = Self::preset(preset)?;
        let mut merged = toml::Table::try_from(&base).map_err(|e| SimConfigError::File {
            path: path.into(),
            detail: e.to_string(),
        })?;
        for (k, v) in value {
            if k == "preset" {
                continue;
            }
            match (merged.get_mut(&k), v) {
                (Some(toml::Value::Table(dst)), toml::Value::Table(src)) => dst.extend(src),
                (_, v) => {
                    merged.insert(k, v);
                }
            }
        }
        toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| SimConfigError::File {
                path: path.into(),
                detail: e.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_toml_overrides() {
        for (name, _) in PRESETS {
            SimConfig::preset(name).unwrap();
        }
        let c = SimConfig::from_toml("preset = \"cpu-tiny\"\nmax_num_seqs = 2\n[step]\nbase_ms = 3.0\n[faults]\nerror_rate = 0.5\n", "x.toml").unwrap();
        assert_eq!(c.max_num_seqs, 2);
        assert_eq!(c.step.base_ms, 3.0);
        assert_eq!(
            c.step.decode_ms_per_seq, 1.5,
            "unset fields keep the preset's values"
        );
        assert_eq!(c.faults.error_rate, 0.5);
        assert!(
            SimConfig::from_toml("max_num_seq = 2", "x.toml").is_err(),
            "typos are errors"
        );
        assert!(matches!(
            SimConfig::preset("nope"),
            Err(SimConfigError::Preset(_))
        ));
    }
}
