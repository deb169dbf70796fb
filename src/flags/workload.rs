//! The workload group of `run`'s flags: what to send (workload, dataset, lengths, tokenizer,
//! seed) and what every request body carries.

use super::*;

/// What to send.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Workload")]
pub struct WorkloadFlags {
    /// Workload: synthetic-uniform (default), synthetic-skewed, conversation, code-completion,
    /// long-context (draft Appendix A), fairness-mix (draft 5.6), multi-turn-chat, agentic
    /// (agent sessions with tool calls), or a scenario .toml file (docs/workloads.md).
    #[arg(long, conflicts_with_all = ["input_tokens", "output_tokens"])]
    pub workload: Option<String>,
    /// Workload profile (the workload-profiles draft): EMBED, XRANK, LOGPR, CLAS, SFQA, FUNC,
    /// CHAT, COMP, PERS, SUMM, LDQA, RAGN, CGEN, REAS, DGEN, TRNS, AGNT or PLAN. Sets the
    /// workload, the SLO when --slo is not given, and --endpoint embeddings or rerank for
    /// EMBED and XRANK (`servebench workload profiles` lists them; docs/workloads.md).
    #[arg(long, value_name = "ID", conflicts_with_all = ["workload", "input_tokens", "output_tokens", "dataset"])]
    pub profile: Option<String>,
    /// Local dataset: ShareGPT JSON, JSONL of prompts/messages, or a trace (Mooncake format).
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// Dataset format when detection is not enough.
    #[arg(long, value_enum)]
    pub dataset_format: Option<crate::workload::datasets::DatasetFormat>,
    /// Fixed prompt length in tokens (with --output-tokens: a fixed-length workload).
    #[arg(long)]
    pub input_tokens: Option<u32>,
    /// Fixed output length in tokens (max_tokens, with EOS ignored by default).
    #[arg(long)]
    pub output_tokens: Option<u32>,
    /// --endpoint embeddings and rerank: items per request, `N` or `MIN..MAX` (uniform),
    /// each of --input-tokens (or the workload's input length); rerank adds one more
    /// item-sized text as the query. Default: 1 on those endpoints (or the scenario file's
    /// `items`); refused on the generative ones (docs/workloads.md).
    #[arg(long, value_name = "N|MIN..MAX")]
    pub items_per_request: Option<String>,
    /// Tokenizer that counts input and (without server usage) output tokens: cl100k_base
    /// (the draft's reference, Option B), o200k_base, a tokenizer.json path, or `server`
    /// (the server's /tokenize with its chat template: Option A).
    #[arg(long, default_value = "cl100k_base")]
    pub tokenizer: String,
    /// Seed of every random draw (workload and arrivals).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// The words of the prompts. By default every run (and every level of a test) draws
    /// fresh ones, recorded in run.json as `config.prompt_salt`, so a server's prefix cache
    /// cannot answer it from an earlier run's identical prompts; --seed alone fixes the
    /// lengths, classes, sessions and arrivals. Give a run's salt to send its exact prompts
    /// again (0: the seed's own prompts, as `workload export` writes them).
    #[arg(long, value_name = "N")]
    pub prompt_salt: Option<u64>,
}

/// What every request body carries.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Request body")]
pub struct BodyArgs {
    /// Ask the server to ignore EOS so outputs reach max_tokens (ignore_eos, and min_tokens
    /// on chat and completions). Hosted OpenAI and Anthropic APIs reject the field: pass
    /// false there. TGI has no such option (docs/apis.md).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub ignore_eos: bool,
    /// Send cache_prompt: false (llama.cpp, on every route) so no prompt prefix is reused.
    #[arg(long)]
    pub no_prefix_cache: bool,
    /// Ask for usage in every chunk (vLLM continuous_usage_stats; chat and completions):
    /// exact tokens per chunk. The native routes always stream running counts.
    #[arg(long)]
    pub usage_per_chunk: bool,
    /// Sampling temperature sent with every request.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Extra JSON fields merged into every request body, e.g. '{"top_k": 1}'.
    #[arg(long)]
    pub extra_body: Option<String>,
}
