//! From a run's flags to its validated configuration. Everything the flags name (files,
//! folders, numbers) is checked before anything starts, the simulator included, so a typo
//! costs a second, not a warm-up. One file per group of flags: `target`, `workload` (with
//! the request body), `load`, `limits` (with the SLO), `ux` (user experience) and `output`
//! (with telemetry); `resolve` calls them in the order the checks always ran and creates the
//! run folder last.

mod limits;
mod load;
mod media;
mod output;
mod target;
mod ux;
mod workload;

pub use load::size_to_server;
pub(crate) use media::media;
pub use output::{redact_args, redacted_command_line};
pub use ux::read_prefill_curve;
pub use workload::workload_of;
pub(crate) use workload::{items, profile_endpoint};

use crate::artifacts::SystemInfo;
use crate::config::RunConfig;
use crate::flags::RunArgs;
use crate::store::prepare_run_dir;
use anyhow::Result;

/// `--warmup-max` when not given and the run is long enough to allow it.
pub const DEFAULT_WARMUP_MAX: std::time::Duration = std::time::Duration::from_secs(120);
use std::collections::BTreeMap;

/// The configuration, plus what only the CLI needs.
pub struct Resolved {
    pub config: RunConfig,
    pub tokenizer_name: String,
    /// Isolated TTFT (P50, P99) per class, from `--baseline`.
    pub baseline: BTreeMap<String, (f64, f64)>,
    pub system: SystemInfo,
}

/// The target and what is sent to it: the dataset, the workload (of a profile, a name, a
/// file or fixed lengths) and the endpoint, its items and its media.
struct Sent {
    target: crate::client::Target,
    workload: crate::workload::WorkloadSpec,
    dataset: Option<std::sync::Arc<crate::workload::datasets::Dataset>>,
    dataset_info: Option<crate::workload::datasets::DatasetInfo>,
}

/// [`Sent`] from the target and workload flags. A profile of embeddings or rerank answers
/// turns the default chat endpoint into theirs before the target is resolved.
fn what_is_sent(args: &RunArgs, url: &str, builtin: bool) -> Result<Sent> {
    let w = &args.workload;
    let (dataset, dataset_info) = workload::dataset(w)?;
    let mut workload = workload_of(
        w.profile.as_deref(),
        w.workload.as_deref(),
        w.input_tokens,
        w.output_tokens,
        dataset.as_deref(),
    )?;
    let endpoint = workload::profile_endpoint(&workload, args.target.endpoint)?;
    let mut t = args.target.clone();
    t.endpoint = endpoint;
    let target = target::target_of(args, &t, url, builtin)?;
    workload::items(
        &mut workload,
        w.items_per_request.as_deref(),
        target.endpoint,
    )?;
    workload::agent_endpoint(&workload, dataset.as_deref(), target.endpoint)?;
    media::media(
        &mut workload,
        &args.media,
        dataset.as_deref(),
        Some(target.endpoint),
    )?;
    Ok(Sent {
        target,
        workload,
        dataset,
        dataset_info,
    })
}

/// Validates flags into a configuration. `url` is the target (the simulator's when built in).
/// Reads every file the flags name, so nothing starts on a configuration that cannot run.
pub fn resolve(args: &RunArgs, url: &str, builtin: bool) -> Result<Resolved> {
    let Sent {
        target,
        workload,
        dataset,
        dataset_info,
    } = what_is_sent(args, url, builtin)?;
    let l = &args.load;
    let load = load::load(l, dataset.as_deref(), builtin)?;
    let lim = &args.limits;
    let (limits, warmup) = limits::limits(lim)?;
    let profile_slo = workload.profile.as_ref().and_then(|p| p.slo.as_deref());
    let slo = limits::slo(&args.slo, profile_slo)?;
    limits::slo_fits(slo.as_ref(), target.endpoint)?;
    let request = workload::request_options(&args.body)?;
    // Fluidity is per token: a non-generative endpoint has no prefill curve to profile.
    let prefill = match target.endpoint.is_generative() {
        true => ux::prefill(&args.ux)?,
        false => crate::config::PrefillSetup::Off,
    };
    let baseline = ux::baseline(&args.ux)?;
    let ux_params = ux::ux_params(args)?;
    let telemetry = output::telemetry(&args.telemetry, &target.url)?;
    let config = RunConfig {
        target,
        request,
        workload,
        dataset_info,
        dataset,
        load,
        limits,
        warmup,
        warmup_max: lim.warmup_max.unwrap_or(DEFAULT_WARMUP_MAX),
        warmup_sizing: crate::config::WarmupSizing::Flags,
        warmup_load: None,
        seed: args.workload.seed,
        prompt_salt: args
            .workload
            .prompt_salt
            .unwrap_or_else(workload::fresh_prompt_salt),
        slo,
        max_failure_share: lim.max_failures,
        max_concurrency: l.max_concurrency,
        arrival_clock: args.output.arrival_clock,
        new_connection_per_request: args.output.new_connection_per_request,
        exact_summary_limit: Some(args.output.exact_summary_limit),
        memory_budget_bytes: Some(args.output.memory_budget),
        confidence: args.output.confidence,
        prefill,
        ux: ux_params,
        fluidity: ux::fluidity(&args.ux),
        telemetry,
        idle_power_s: args.telemetry.idle_power_s.max(0.0),
        request_timeout: lim.timeout,
        exchange_limits: limits::exchange_limits(lim),
        retry: limits::retry(lim),
        grace: lim.grace,
        client_threads: output::client_threads(&args.output),
        out_dir: std::path::PathBuf::new(),
        command_line: redacted_command_line(),
        quiet: args.output.quiet,
        live_view: !args.output.no_live_view,
        parquet: args.output.parquet,
        shard: None,
        preflight: None,
    };
    // Last: the folder is created only once everything else is known to be valid.
    let mut config = config;
    config.out_dir = prepare_run_dir(args.output.out.as_deref(), args.output.force)?;
    Ok(Resolved {
        config,
        tokenizer_name: args.workload.tokenizer.clone(),
        baseline,
        system: target::system_info(&args.target),
    })
}
