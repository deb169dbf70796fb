//! The flags of `servebench test` and `suite` (the draft's section 5 procedures).

use super::*;
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The test: ttft (5.1), throughput (5.2), curve (5.3), itl (5.4), capacity (5.5),
    /// fairness (5.6), prefix-cache (5.7), memory-pressure (5.8), long-context (5.9),
    /// guardrails (5.10).
    #[arg(value_enum)]
    pub test: crate::procedure::TestName,
    #[command(flatten)]
    pub procedure: ProcedureArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Tests to leave out, e.g. --skip fairness,guardrails.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub skip: Vec<crate::procedure::TestName>,
    /// Run the suite once per workload profile, e.g. --profiles CHAT,SUMM,EMBED or
    /// --profiles all: a folder per profile, each a whole suite judged by the profile's
    /// SLO default (unless --slo), and a table of every profile's answers
    /// (`servebench workload profiles` lists them). --capacity and --from describe one
    /// workload, so they are refused here.
    #[arg(long, value_name = "IDS", value_delimiter = ',', conflicts_with_all = ["workload", "profile", "dataset", "input_tokens", "output_tokens", "capacity", "capacity_concurrency", "from"])]
    pub profiles: Vec<String>,
    #[command(flatten)]
    pub procedure: ProcedureArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

/// How a test procedure runs (the run options below set each level's target, workload,
/// request options and SLO).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Test procedure")]
pub struct ProcedureArgs {
    /// Shortened levels and counts for smoke tests and CI, and a short warm-up (about 10 s
    /// of the first level's load, with --warmup auto); the test is then always reported
    /// "not compliant". Levels are still sized from the server's own speed (one
    /// request alone, then one at a time, then a closed-loop probe): each level of a search
    /// lasts long enough for 50 completions at the rate the server can have (200 without
    /// --quick), so a slow server gets longer levels, not wrong answers. On a server of
    /// 0.3 req/s (llama.cpp on two CPU cores) --quick takes up to about: throughput 35 min,
    /// curve 60 (a throughput search first; --capacity skips it), ttft 15, itl 35 (also a
    /// search first), capacity 15; on a GPU server
    /// serving tens of requests per second, a few minutes each.
    #[arg(long)]
    pub quick: bool,
    /// Empty the server's prefix cache before every level (vLLM `POST /reset_prefix_cache`,
    /// SGLang `POST /flush_cache`, llama.cpp's slot erase), as a cold cache for every
    /// measurement asks; each level's line says whether the server did. Levels already send
    /// prompts of their own, so this matters for caches that outlive a test (and for the
    /// shared prefixes of a workload that has them).
    #[arg(long)]
    pub reset_cache_between_levels: bool,
    /// Time budget for the whole test, e.g. 30m: a level starts only if it should end in
    /// time; the test then reports what it learned and why it stopped.
    #[arg(long, value_parser = parse_duration)]
    pub budget: Option<Duration>,
    /// Measured length of each main level (default: the draft's minimum for the test, e.g.
    /// 60 s for throughput and curve, 120 s for memory pressure; --duration is the same).
    #[arg(long, value_parser = parse_duration)]
    pub level_duration: Option<Duration>,
    /// Relative tolerance of the throughput search: stop bisecting when the failing rate is
    /// within this of the passing one (5% or 0.05).
    #[arg(long, default_value = "5%", value_parser = parse_tolerance)]
    pub tolerance: f64,
    /// Throughput (5.2) in closed loop: search concurrency instead of rate.
    #[arg(long)]
    pub closed_loop: bool,
    /// Known capacity, requests per second: the closed-loop probe is skipped (throughput:
    /// the first rate tried; curve, ITL, fairness, TTFT: the base of their load shares). One
    /// request alone and the one-at-a-time reference still run: they size the levels.
    #[arg(long)]
    pub capacity: Option<f64>,
    /// Known concurrent capacity (memory pressure then skips the 5.5 search).
    #[arg(long)]
    pub capacity_concurrency: Option<u32>,
    /// Concurrency of the closed-loop probe that estimates capacity (it lasts long enough
    /// for 20 completions at the server's one-at-a-time rate, 60 without --quick).
    #[arg(long, default_value_t = 32)]
    pub estimate_concurrency: u32,
    /// First concurrency of the capacity search (5.5); default 8, or --concurrency-limit
    /// when that is lower.
    #[arg(long)]
    pub start_concurrency: Option<u32>,
    /// Upper bound of the capacity search (5.5).
    #[arg(long, default_value_t = 512)]
    pub concurrency_limit: u32,
    /// Levels of the curve (5.3), spread from 10 % to 120 % of capacity (12: 10 % steps).
    #[arg(long, default_value_t = 12)]
    pub levels: u32,
    /// Shares of capacity for the ITL (5.4), guardrail (5.10) and fairness (5.6, first
    /// value) levels, e.g. 0.25,0.5,0.75.
    #[arg(long, value_delimiter = ',')]
    pub load_shares: Option<Vec<f64>>,
    /// Memory pressure (5.8): shares of the concurrent capacity.
    #[arg(long, value_delimiter = ',', default_value = "1,1.1,1.25,1.5")]
    pub oversubscription: Vec<f64>,
    /// Long context (5.9): prompt lengths, tokens (default: powers of two up to the
    /// server's context limit).
    #[arg(long, value_delimiter = ',')]
    pub lengths: Option<Vec<u32>>,
    /// Long context (5.9): requests per length (default 20).
    #[arg(long)]
    pub requests_per_length: Option<u64>,
    /// Long context (5.9): concurrency (the draft: 1-4).
    #[arg(long, default_value_t = 1)]
    pub length_concurrency: u32,
    /// The server's context limit, tokens, when it does not say it.
    #[arg(long)]
    pub context_tokens: Option<u32>,
    /// A labelled target, NAME=URL (repeatable): prefix cache `off`/`on`, guardrail
    /// configurations `baseline`, `input`, `output`, `full`.
    #[arg(long = "target", value_name = "NAME=URL")]
    pub targets: Vec<String>,
    /// Guardrails (5.10): the safety systems of the filtered configurations, e.g.
    /// 'Llama Guard 3 (input and output)', or 'unknown'; the report must name them
    /// (draft 4.8.1).
    #[arg(long, value_name = "TEXT")]
    pub safety_systems: Option<String>,
    /// The target's prefix caching state, which every report states (draft 5.1.5.1), e.g.
    /// 'enabled' or 'disabled'; the built-in simulator states its own.
    #[arg(long, value_name = "TEXT")]
    pub prefix_caching: Option<String>,
    /// The target's guardrails, which every report discloses (draft 4.8.1): input and
    /// output content filtering and the safety systems, e.g. 'none' or 'input and output:
    /// Llama Guard 3'; the built-in simulator states its own.
    #[arg(long, value_name = "TEXT")]
    pub guardrails: Option<String>,
    /// Prefix cache (5.7): compose earlier runs instead of running, off=RUN_DIR and
    /// on=RUN_DIR.
    #[arg(long = "from", value_name = "NAME=RUN_DIR")]
    pub from: Vec<String>,
}

/// A tolerance strictly between 0 and 100 %: `5%` or `0.05` (a bisection needs room to stop).
pub fn parse_tolerance(s: &str) -> Result<f64, String> {
    let v = parse_share(s)?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("`{s}` must be above 0 and below 100 %"))
    }
}
