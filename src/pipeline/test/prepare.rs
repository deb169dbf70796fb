//! What a test or suite readies before its first level: the flags checked, every target
//! (the built-in simulators included) ready, and the procedure's options.

use super::levels::{LevelRunner, TargetSetup};
use crate::artifacts::SystemInfo;
use crate::flags::{ProcedureArgs, RunArgs};
use crate::pipeline::target::{ready, Ready};
use crate::procedure::budget::Budget;
use crate::procedure::level::Load;
use crate::procedure::{self, Options, TestName};
use crate::sim::SimServer;
use crate::store::RunFolder;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Parses `NAME=VALUE` flags.
fn named(values: &[String], flag: &str) -> Result<Vec<(String, String)>> {
    values
        .iter()
        .map(|v| match v.split_once('=') {
            Some((k, u)) if !k.trim().is_empty() && !u.trim().is_empty() => {
                Ok((k.trim().to_owned(), u.trim().to_owned()))
            }
            _ => bail!("{flag} `{v}` is not of the form NAME=VALUE"),
        })
        .collect()
}

/// Everything a test or suite needs before its first level.
pub(super) struct Setup {
    pub(super) runner: LevelRunner,
    pub(super) options: Options,
    pub(super) system: SystemInfo,
}

/// Readies every target (the built-in simulators included) and the options.
pub(super) fn setup(args: &RunArgs, p: &ProcedureArgs, tests: &[TestName]) -> Result<Setup> {
    let (targets, from) = check_flags(args, p)?;
    let mut sims = Vec::new();
    let mut setups: BTreeMap<Option<String>, TargetSetup> = BTreeMap::new();
    let guardrail_sims =
        tests.contains(&TestName::Guardrails) && targets.is_empty() && args.target.url.is_none();
    let mut main = ready(args)?;
    let dir = main.resolved.config.out_dir.clone();
    let options = options(args, p, &main, &from)?;
    let system = main.resolved.system.clone();
    if let Some(s) = main.sim.take() {
        sims.push(s);
    }
    setups.insert(None, into_setup(main));
    let mut extra: Vec<(String, String)> = targets.clone();
    if guardrail_sims {
        start_guardrail_sims(args, &mut extra, &mut sims)?;
    }
    for (name, url) in &extra {
        let mut a = args.clone();
        a.target.url = Some(url.clone());
        a.output.out = Some(dir.clone());
        a.output.force = false;
        let r = ready(&a)?;
        setups.insert(Some(name.clone()), into_setup(r));
    }
    let mut options = options;
    options.targets = extra.iter().map(|(n, _)| n.clone()).collect();
    if guardrail_sims && options.safety_systems.is_none() {
        options.safety_systems = Some(
            "the built-in simulator's stand-in filters (input +40 ms before queueing; output +20 ms per token, refusing 2 % of answers part-way)".into(),
        );
    }
    Ok(Setup {
        runner: LevelRunner {
            dir,
            targets: setups,
            budget: Budget::new(p.budget),
            count: 0,
            quiet: args.output.quiet,
            last_rps: None,
            quick: p.quick,
            reset_cache: p.reset_cache_between_levels,
            planned: None,
            levels_started: 0,
            tests_started: 0,
            _sims: sims,
        },
        options,
        system,
    })
}

/// The capacity search's first concurrency when `--start-concurrency` is not given.
const DEFAULT_START_CONCURRENCY: u32 = 8;

/// (label, value) pairs given on the command line.
type Labelled = Vec<(String, String)>;

/// Checks the test flags before anything starts; the labelled targets (`--target`) and
/// earlier runs (`--from`), parsed.
fn check_flags(args: &RunArgs, p: &ProcedureArgs) -> Result<(Labelled, Labelled)> {
    for label in &args.output.labels {
        crate::store::history::check_label(label).context("--label")?;
    }
    if args.load.max_concurrency.is_some() {
        // The levels are the procedure's loads: open-loop levels are unbounded, as the draft's
        // open loop is (4.2), and closed-loop levels set their own concurrency.
        eprintln!("warning: --max-concurrency is not used by tests: each level's load is the procedure's (open-loop levels have no in-flight cap)");
    }
    let targets = named(&p.targets, "--target")?;
    let from = named(&p.from, "--from")?;
    for (_, dir) in &from {
        if !RunFolder::new(dir).run_json().exists() {
            bail!("--from {dir}: no run.json there (give a run folder)");
        }
    }
    if p.levels < 2 {
        bail!("--levels must be at least 2");
    }
    if p.budget.is_some_and(|b| b.is_zero()) {
        bail!("--budget must be longer than zero (no level could start), e.g. --budget 30m");
    }
    if p.start_concurrency == Some(0) || p.concurrency_limit == 0 {
        bail!("--start-concurrency and --concurrency-limit must be at least 1");
    }
    if let Some(start) = p.start_concurrency.filter(|&s| s > p.concurrency_limit) {
        bail!(
            "--start-concurrency {start} is above --concurrency-limit {}: the search would start past its own limit",
            p.concurrency_limit
        );
    }
    if let Some(c) = p.capacity {
        if !(c > 0.0 && c.is_finite()) {
            bail!("--capacity must be a positive number of requests per second");
        }
    }
    if p.oversubscription
        .iter()
        .any(|s| !(*s > 0.0 && s.is_finite()))
    {
        bail!("--oversubscription shares must be positive, e.g. 1,1.1,1.25,1.5");
    }
    if let Some(shares) = &p.load_shares {
        if shares.iter().any(|s| !(*s > 0.0 && s.is_finite())) {
            bail!("--load-shares must be positive shares of capacity, e.g. 0.25,0.5,0.75");
        }
    }
    Ok((targets, from))
}

/// A target ready to run levels against.
fn into_setup(r: Ready) -> TargetSetup {
    TargetSetup {
        config: r.resolved.config,
        system: r.resolved.system,
        server: r.server,
        tokenizer: r.tokenizer,
        curve: None,
    }
}

/// The simulator with each configuration of guardrails, for a guardrail test given no
/// targets: each added to `extra` (name, URL) and kept alive in `sims`.
fn start_guardrail_sims(
    args: &RunArgs,
    extra: &mut Vec<(String, String)>,
    sims: &mut Vec<SimServer>,
) -> Result<()> {
    // The input filter delays queueing, the output filter holds every token
    // (docs/procedures.md). The output filter also refuses 2 % of answers part-way, as a
    // real one would now and then, so the disclosure's refusal counts have something to
    // count.
    for (name, input_ms, output_ms, refusal_rate) in [
        ("baseline", 0.0, 0.0, 0.0),
        ("input", 40.0, 0.0, 0.0),
        ("output", 0.0, 20.0, 0.02),
        ("full", 40.0, 20.0, 0.02),
    ] {
        let mut cfg = crate::pipeline::target::sim_config_of(args)?;
        cfg.input_guardrail_ms = input_ms;
        cfg.output_guardrail_ms = output_ms;
        cfg.faults.refusal_rate = refusal_rate;
        let server = SimServer::spawn(cfg, 0).context("starting a simulator")?;
        server.truth().keep_at_most(0);
        extra.push((name.into(), server.base_url()));
        sims.push(server);
    }
    eprintln!("No --target given: the guardrail test compares four built-in simulators (baseline; input filter +40 ms; output filter +20 ms per token, refusing 2 % of answers; full).");
    Ok(())
}

/// The procedure options from the flags and the main target.
fn options(
    args: &RunArgs,
    p: &ProcedureArgs,
    main: &Ready,
    from: &[(String, String)],
) -> Result<Options> {
    let config = &main.resolved.config;
    let w = &args.workload;
    let engine = main.server.engine.as_deref();
    let cache_switch = matches!(engine, Some("llama.cpp") | Some("servebench-sim"));
    // What the report must state and no record shows (5.1.5.1, 4.8.1): the tester's words,
    // else what the built-in simulator knows of itself.
    let builtin = match &args.target.url {
        Some(_) => procedure::Disclosure::default(),
        None => procedure::Disclosure::of_simulator(
            &crate::flags::sim_config(
                &args.sim.sim_preset,
                args.sim.sim_config.as_deref(),
                args.sim.sim_ttft_ms,
                args.sim.sim_itl_ms,
            )?,
            config.request.prefix_cache,
        ),
    };
    let skipped_per_request = (cache_switch && !config.request.prefix_cache).then(|| {
        "disabled per request (cache_prompt: false); the server's own setting not stated".to_owned()
    });
    Ok(Options {
        quick: p.quick,
        level_duration: p.level_duration.or(args.limits.duration),
        tolerance: p.tolerance,
        slo: config.slo.clone(),
        seed: w.seed,
        workload: config.workload.clone(),
        workload_given: workload_given(w, &config.workload),
        load: match (args.load.rate, args.load.concurrency) {
            (Some(r), _) => Some(Load::Rate { rate_per_s: r }),
            (None, Some(c)) => Some(Load::Concurrency { concurrency: c }),
            _ => None,
        },
        closed_loop: p.closed_loop,
        capacity_rate_per_s: p.capacity,
        capacity_concurrency: p.capacity_concurrency,
        estimate_concurrency: p.estimate_concurrency.max(1),
        // The default start, 8, within a lower limit (a server of 4 slots: --concurrency-limit 4).
        start_concurrency: p
            .start_concurrency
            .unwrap_or(DEFAULT_START_CONCURRENCY.min(p.concurrency_limit))
            .max(1),
        concurrency_limit: p.concurrency_limit.max(1),
        curve_levels: p.levels,
        load_shares: p.load_shares.clone(),
        oversubscription: p.oversubscription.clone(),
        lengths: p.lengths.clone(),
        requests_per_length: p.requests_per_length,
        length_concurrency: p.length_concurrency.max(1),
        requests: args.limits.requests,
        output_tokens: w.output_tokens,
        context_tokens: p.context_tokens.or(main.server.context_tokens),
        gpus: args.target.gpus,
        targets: Vec::new(),
        from_runs: from
            .iter()
            .map(|(k, v)| (k.clone(), PathBuf::from(v)))
            .collect(),
        cache_switch,
        arrival: format!("{:?}", args.load.arrival).to_lowercase(),
        safety_systems: p.safety_systems.clone(),
        disclosure: procedure::Disclosure {
            prefix_caching: p
                .prefix_caching
                .clone()
                .or(builtin.prefix_caching)
                .or(skipped_per_request),
            guardrails: p.guardrails.clone().or(builtin.guardrails),
        },
    })
}

/// Whether the flags chose the workload (a name, a profile, a dataset, lengths, or images or
/// audio): the tests that would pick the draft's recommended workload keep it instead.
fn workload_given(
    w: &crate::flags::WorkloadFlags,
    workload: &crate::workload::WorkloadSpec,
) -> bool {
    w.workload.is_some()
        || w.profile.is_some()
        || w.dataset.is_some()
        || w.input_tokens.is_some()
        || w.output_tokens.is_some()
        || workload.images.is_some()
        || workload.audio.is_some()
}
