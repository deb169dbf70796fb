//! The built-in simulator's flags: `run`'s when no `--url` is given, `servebench sim`'s, and
//! the simulator configuration they name.

use super::*;

/// The built-in simulator, when no --url is given.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Built-in simulator")]
pub struct SimFlags {
    /// Engine preset (h100-llama3-8b, a100-llama3-70b-tp4, cpu-tiny, fast).
    #[arg(long, default_value = "h100-llama3-8b")]
    pub sim_preset: String,
    /// TOML file of engine parameters (see docs/sim.md).
    #[arg(long)]
    pub sim_config: Option<PathBuf>,
    /// Fixed time to first token, ms (fixed timing instead of the engine model).
    #[arg(long)]
    pub sim_ttft_ms: Option<f64>,
    /// Fixed time between tokens, ms (fixed timing instead of the engine model).
    #[arg(long)]
    pub sim_itl_ms: Option<f64>,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Address to bind. Anything but loopback needs --allow-remote.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Allow binding a non-loopback address.
    #[arg(long)]
    pub allow_remote: bool,
    /// Engine preset: h100-llama3-8b, a100-llama3-70b-tp4, cpu-tiny, fast (docs/sim.md).
    #[arg(long, default_value = "h100-llama3-8b")]
    pub preset: String,
    /// TOML file of engine parameters; `preset = "..."` inside picks the base.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Fixed timing instead of the engine model: time to first token, ms.
    #[arg(long)]
    pub ttft_ms: Option<f64>,
    /// Fixed timing instead of the engine model: time between tokens, ms.
    #[arg(long)]
    pub itl_ms: Option<f64>,
    /// Fixed timing: uniform jitter on each gap, ± ms.
    #[arg(long, default_value_t = 0.0)]
    pub itl_jitter_ms: f64,
    /// Fixed timing: tokens per streamed chunk.
    #[arg(long, default_value_t = 1)]
    pub tokens_per_chunk: u32,
    /// Divide every delay by this factor (10 = ten times faster).
    #[arg(long)]
    pub time_scale: Option<f64>,
    /// Write the ground truth of every request as JSON lines to this file.
    #[arg(long)]
    pub truth_log: Option<PathBuf>,
    /// Server threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Seed of the simulator's draws.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// The simulator configuration named by a preset, a TOML file and fixed-timing flags.
pub fn sim_config(
    preset: &str,
    file: Option<&std::path::Path>,
    ttft_ms: Option<f64>,
    itl_ms: Option<f64>,
) -> anyhow::Result<crate::sim::SimConfig> {
    use anyhow::Context;
    let mut cfg = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            crate::sim::SimConfig::from_toml(&text, &path.display().to_string())?
        }
        None => crate::sim::SimConfig::preset(preset)?,
    };
    if ttft_ms.is_some() || itl_ms.is_some() {
        let mut fixed = cfg.fixed.clone().unwrap_or_default();
        fixed.ttft_ms = ttft_ms.unwrap_or(fixed.ttft_ms);
        fixed.itl_ms = itl_ms.unwrap_or(fixed.itl_ms);
        cfg.fixed = Some(fixed);
    }
    Ok(cfg)
}
