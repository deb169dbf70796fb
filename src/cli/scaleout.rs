//! `servebench plan`, `run --plan --shard`, `merge` and `k8s`: one load over many
//! generators (docs/scale-out.md). The work is in `crate::scaleout`; this file turns flags
//! into it and reuses the run pipeline (`pipeline::target::ready`, `pipeline::execute`,
//! `pipeline::assemble`) so a shard is an ordinary run and a merged folder an ordinary run
//! folder.

use crate::artifacts::RunReport;
use crate::clock::iso8601_ms;
use crate::config::RunConfig;
use crate::flags::{Cli, ClockSyncArg, Command, K8sArgs, MergeArgs, PlanArgs, RunArgs, RunCommand};
use crate::metrics::warnings::Warning;
use crate::pipeline::execute::{execute, Execute};
use crate::pipeline::exit;
use crate::pipeline::host::host_info;
use crate::pipeline::resolve::resolve;
use crate::pipeline::target::{self, Ready};
use crate::report::output::Render;
use crate::report::views::RunView;
use crate::scaleout::clock::{probe_date, ClockOffset};
use crate::scaleout::k8s::{manifests, to_yaml, K8sOptions, Storage};
use crate::scaleout::merge::{ShardRecord, SHARD_KIND, SHARD_SCHEMA_VERSION};
use crate::scaleout::plan::{
    check_shardable, run_options, workload_hash, Plan, PlanError, PLAN_KIND, PLAN_SCHEMA_VERSION,
    SHARD_FLAGS,
};
use crate::schedule::shard::{Shard, ShardRun};
use crate::store::RunFolder;
use anyhow::{bail, Context, Result};
use clap::Parser;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros() as u64
}

fn dataset_bytes(path: Option<&Path>) -> Result<Option<Vec<u8>>> {
    path.map(|p| std::fs::read(p).with_context(|| format!("reading --dataset {}", p.display())))
        .transpose()
}

/// Options every shard must resolve alike, added to the plan's `run_args` when not typed:
/// the seed and prompt salt (every shard draws the same requests, each sending its share),
/// one trace id prefix, and no prefill profile when shards would profile at once.
/// Returns what the plan notes about them.
fn make_explicit(
    run_args: &mut Vec<String>,
    raw: &[String],
    config: &crate::config::RunConfig,
    shards: u32,
) -> Vec<&'static str> {
    let has = |flag: &str| {
        raw.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    if !has("--seed") {
        run_args.extend(["--seed".into(), config.seed.to_string()]);
    }
    if !has("--prompt-salt") {
        run_args.extend(["--prompt-salt".into(), config.prompt_salt.to_string()]);
    }
    // One trace id prefix for every shard, so the merged run's records name their traces.
    if let (false, Some(prefix)) = (has("--trace-id-prefix"), &config.target.trace_id_prefix) {
        run_args.extend(["--trace-id-prefix".into(), prefix.clone()]);
    }
    let mut notes = Vec::new();
    if shards > 1 && !has("--no-fluidity") && !has("--prefill-curve") {
        // Profiling prefill in every shard at once would not be isolated.
        run_args.push("--no-fluidity".into());
        notes.push("fluidity-index off (--no-fluidity): shards cannot profile prefill in isolation; give a --prefill-curve file present on every shard to keep it");
    }
    notes
}

/// `servebench plan`: validates the run options exactly as `run` would, then freezes them.
pub fn plan(mut args: PlanArgs) -> Result<u8> {
    // The options as typed, after `plan`: what every shard will parse again.
    let raw: Vec<String> = std::env::args().skip(2).collect();
    let mut run_args = run_options(&raw)?;
    let url = args.run.target.url.clone().ok_or(PlanError::NoUrl)?;
    // Resolve into a scratch folder (resolve creates the run folder), removed at once.
    let scratch = std::env::temp_dir().join(format!("servebench-plan-{}", std::process::id()));
    args.run.output.out = Some(scratch.clone());
    args.run.output.force = true;
    let resolved = resolve(&args.run, &url, false);
    let _ = std::fs::remove_dir_all(&scratch);
    let config = resolved?.config;
    check_shardable(&config, args.shards)?;
    let notes = make_explicit(&mut run_args, &raw, &config, args.shards);
    let bytes = dataset_bytes(args.run.workload.dataset.as_deref())?;
    let now_us = now_unix_us();
    let start_unix_ms = match args.start_at {
        Some(s) if s.is_finite() && s > 0.0 => (s * 1000.0) as u64,
        Some(_) => bail!("--start-at must be Unix seconds"),
        None => (now_us + args.start_in.as_micros() as u64) / 1000,
    };
    if start_unix_ms * 1000 < now_us {
        bail!(
            "--start-at {} is in the past: the shards would all start late",
            iso8601_ms(start_unix_ms * 1000)
        );
    }
    let plan = Plan {
        kind: PLAN_KIND.into(),
        schema_version: PLAN_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        created_at: iso8601_ms(now_us),
        shards: args.shards,
        start_unix_ms,
        start_at: iso8601_ms(start_unix_ms * 1000),
        run_args,
        url,
        seed: config.seed,
        load: config.load,
        limits: config.limits,
        warmup: config.warmup,
        workload: serde_json::to_value(&config.workload)?,
        workload_hash: workload_hash(&config, bytes.as_deref()),
    };
    let text = serde_json::to_string_pretty(&plan)? + "\n";
    std::fs::write(&args.output, &text)
        .with_context(|| format!("writing {}", args.output.display()))?;
    let n = args.shards;
    eprintln!(
        "Plan {} ({}): {} over {n} shard{}, common start {} (in {:.0} s).",
        args.output.display(),
        plan.id(),
        crate::report::tables::describe_load(&config),
        if n == 1 { "" } else { "s" },
        plan.start_at,
        (start_unix_ms as f64 - now_us as f64 / 1000.0) / 1000.0,
    );
    for n in notes {
        eprintln!("note: {n}");
    }
    eprintln!(
        "Run each shard: servebench run --plan {} --shard i/{n} --out DIR_i   (i = 0..{})\nthen: servebench merge DIR_0 … DIR_{} -o RUN_DIR",
        args.output.display(),
        n - 1,
        n - 1
    );
    Ok(exit::OK)
}

/// Whether a command-line token is a flag (not a value such as `-1500`).
fn flag_name(a: &str) -> Option<&str> {
    if !a.starts_with('-') || a.parse::<f64>().is_ok() {
        return None;
    }
    Some(a.split_once('=').map_or(a, |(n, _)| n))
}

/// `servebench run --plan FILE --shard i/N`: the plan's run, sending this shard's share.
pub fn run_planned(cmd: RunCommand) -> Result<u8> {
    let RunCommand {
        run: mine,
        scaleout,
    } = cmd;
    let path = scaleout.plan.clone().expect("called with --plan");
    let plan = read_plan(&path)?;
    let shard = Shard::resolve(scaleout.shard.as_deref(), plan.shards, |k| {
        std::env::var(k).ok()
    })?;
    let raw: Vec<String> = std::env::args().skip(2).collect();
    check_shard_flags(&raw)?;
    let mut args = planned_run_args(&plan)?;
    add_shard_options(&mut args, mine, &raw, shard);
    let detail = args.output.detail;
    let Ready {
        sim,
        mut resolved,
        server,
        tokenizer,
        mut warnings,
    } = target::ready(&args)?;
    check_planned_workload(&args, &resolved.config, &plan)?;
    let clock = shard_clock(
        scaleout.clock_offset_ms,
        scaleout.clock_sync,
        &resolved.config.target,
    )?;
    if !args.output.quiet {
        eprintln!(
            "Shard {shard} of plan {}: clock offset {:+.1} ms ± {:.1} ({}), {:+.1} ms applied",
            path.display(),
            clock.offset_ms,
            clock.uncertainty_ms,
            clock.method,
            clock.applied_ms
        );
    }
    warnings.push(shard_warning(&plan, shard));
    let late_us = Arc::new(AtomicU64::new(0));
    resolved.config.shard = Some(ShardRun {
        shard,
        start_unix_us: plan.start_unix_ms * 1000,
        clock_offset_us: clock.applied_us(),
        late_us: late_us.clone(),
    });
    let out_dir = resolved.config.out_dir.clone();
    let (report, _records) = execute(Execute {
        config: resolved.config,
        system: resolved.system,
        baseline: resolved.baseline,
        server: &server,
        tokenizer,
        warnings,
        announce: !args.output.quiet,
    })?;
    let late_ms = late_us.load(Ordering::Acquire) as f64 / 1000.0;
    write_shard_record(&out_dir, &shard_record(&plan, shard, clock, late_ms))?;
    print_report(&report, detail);
    println!(
        "\nShard {shard} folder: {} (merge all {} with `servebench merge`)",
        out_dir.display(),
        shard.count
    );
    drop(sim);
    Ok(report.verdict.exit_status)
}

/// The plan file at `path`, read and parsed.
fn read_plan(path: &Path) -> Result<Plan> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the plan {}", path.display()))?;
    Plan::from_json(&text).with_context(|| format!("{}", path.display()))
}

/// With `--plan` the load comes from the plan: only the shard's own flags may be given.
fn check_shard_flags(raw: &[String]) -> Result<()> {
    for name in raw.iter().filter_map(|a| flag_name(a)) {
        if !SHARD_FLAGS.contains(&name) {
            bail!(
                "with --plan the load comes from the plan, so `{name}` cannot be given here (make a new plan with it instead); a shard may add only {}",
                SHARD_FLAGS.join(", ")
            );
        }
    }
    Ok(())
}

/// The plan's run options, parsed exactly as `servebench run` parses them.
fn planned_run_args(plan: &Plan) -> Result<RunArgs> {
    let mut argv = vec!["servebench".to_string(), "run".into()];
    argv.extend(plan.run_args.iter().cloned());
    let cli = Cli::try_parse_from(argv).with_context(|| {
        format!(
            "the plan's run options do not parse with this servebench ({}): make the plan again",
            env!("CARGO_PKG_VERSION")
        )
    })?;
    let Command::Run(planned) = cli.command else {
        bail!("the plan's run options are not a run");
    };
    Ok(planned.run)
}

/// Adds what the shard's command line may add to the plan's options (`mine`: this
/// command line's options; `raw`: its tokens): output, credentials, certificates, and
/// server and GPU scraping on shard 0 only.
fn add_shard_options(args: &mut RunArgs, mine: RunArgs, raw: &[String], shard: Shard) {
    let given = |flag: &str| raw.iter().any(|a| flag_name(a) == Some(flag));
    args.output.out = mine.output.out;
    args.output.force = mine.output.force;
    args.output.detail |= mine.output.detail;
    args.output.quiet |= mine.output.quiet;
    args.output.parquet |= mine.output.parquet;
    args.output.client_threads = mine.output.client_threads.or(args.output.client_threads);
    args.target.headers.extend(mine.target.headers);
    if given("--api-key-env") {
        args.target.api_key_env = mine.target.api_key_env;
    }
    if given("--ready-timeout") {
        args.target.ready_timeout = mine.target.ready_timeout;
    }
    args.target.api_key_file = mine.target.api_key_file.or(args.target.api_key_file.take());
    args.target.ca_cert = mine.target.ca_cert.or(args.target.ca_cert.take());
    args.target.client_cert = mine.target.client_cert.or(args.target.client_cert.take());
    args.target.client_key = mine.target.client_key.or(args.target.client_key.take());
    if shard.index != 0 {
        // Only shard 0 scrapes the server and GPUs: N scrapers would load the server and
        // report the same counters N times.
        args.telemetry.no_server_metrics = true;
        args.telemetry.no_gpu_metrics = true;
    }
}

/// The shard's workload (its dataset or scenario file included) is the one planned.
fn check_planned_workload(args: &RunArgs, config: &RunConfig, plan: &Plan) -> Result<()> {
    let bytes = dataset_bytes(args.workload.dataset.as_deref())?;
    let hash = workload_hash(config, bytes.as_deref());
    if hash != plan.workload_hash {
        bail!(
            "this shard's workload differs from the plan's (hash {hash}, plan {}): the dataset or scenario file on this machine is not the one planned with",
            plan.workload_hash
        );
    }
    Ok(())
}

/// This machine's clock offset: `--clock-offset-ms`, else measured as `--clock-sync` says
/// (a failed measurement is noted and taken as no offset).
fn shard_clock(
    offset_ms: Option<f64>,
    sync: ClockSyncArg,
    target: &crate::client::Target,
) -> Result<ClockOffset> {
    Ok(match (offset_ms, sync) {
        (Some(ms), _) => {
            if !ms.is_finite() {
                bail!("--clock-offset-ms must be a number of milliseconds");
            }
            ClockOffset::given(ms)
        }
        (None, ClockSyncArg::None) => ClockOffset::none("--clock-sync none"),
        (None, ClockSyncArg::Date) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            match rt.block_on(probe_date(target, Duration::from_millis(1500), 10.0)) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("note: clock offset not measured ({e}); this machine's clock is taken as right: keep the generators' clocks in sync (NTP), or pass --clock-offset-ms");
                    ClockOffset::none(&e)
                }
            }
        }
    })
}

/// The run's note that it is one shard of a plan.
fn shard_warning(plan: &Plan, shard: Shard) -> Warning {
    let share = match plan.limits.requests {
        Some(r) => format!("{} of {r} requests", shard.share_of_count(r)),
        None => "its share of the requests".into(),
    };
    Warning::Recorded {
        kind: "scale_out".into(),
        message: format!(
            "shard {shard} of plan {}: sent the ordinals k mod {} = {} ({share}); the load shown is the whole plan's, merge the shards for its figures",
            plan.id(),
            shard.count,
            shard.index
        ),
    }
}

/// What `shard.json` says of the shard's run.
fn shard_record(plan: &Plan, shard: Shard, clock: ClockOffset, late_ms: f64) -> ShardRecord {
    ShardRecord {
        kind: SHARD_KIND.into(),
        schema_version: SHARD_SCHEMA_VERSION,
        plan_id: plan.id(),
        index: shard.index,
        shards: shard.count,
        host: host_info(),
        clock,
        planned_start_unix_us: plan.start_unix_ms * 1000,
        late_ms,
        server_metrics: shard.index == 0,
    }
}

/// Writes `shard.json`, last and by rename: its presence means the shard is done (the
/// Kubernetes merge Job waits for it; `run.json` exists from the start, saying `running`).
fn write_shard_record(out_dir: &Path, record: &ShardRecord) -> Result<()> {
    let folder = RunFolder::new(out_dir);
    let (tmp, path) = (folder.shard_json_tmp(), folder.shard_json());
    std::fs::write(&tmp, serde_json::to_vec_pretty(record)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The report on the terminal, in detail with `--detail`.
fn print_report(report: &RunReport, detail: bool) {
    let view = RunView {
        report,
        records: &[],
        detail,
    };
    print!("{}", view.terminal());
}

/// `servebench merge`: one run folder from a plan's shard folders.
pub fn merge(args: MergeArgs) -> Result<u8> {
    for label in &args.labels {
        crate::store::history::check_label(label).context("--label")?;
    }
    let merged = crate::pipeline::merge::merge_shards(&args)?;
    print_report(&merged.report, args.detail);
    println!(
        "\nMerged run folder: {} ({} shards)",
        merged.out.display(),
        merged.shards
    );
    if !args.no_store {
        crate::pipeline::index::record_run(args.store.as_deref(), &merged.out, &args.labels, false);
    }
    Ok(merged.report.verdict.exit_status)
}

fn pair<'a>(what: &str, s: &'a str, sep: char) -> Result<(&'a str, &'a str)> {
    s.split_once(sep)
        .with_context(|| format!("{what} `{s}`: expected two parts separated by `{sep}`"))
}

/// `servebench k8s`: the manifests of a plan, as YAML.
pub fn k8s(args: K8sArgs) -> Result<u8> {
    let text = std::fs::read_to_string(&args.plan)
        .with_context(|| format!("reading the plan {}", args.plan.display()))?;
    let plan = Plan::from_json(&text).with_context(|| format!("{}", args.plan.display()))?;
    let mut o = K8sOptions::new(&args.name, &args.image, plan.shards, &text);
    o.namespace = args.namespace;
    o.wait_image = args.wait_image;
    o.storage = match (args.upload_url, args.claim) {
        (Some(_), Some(_)) => bail!("--upload-url and --claim exclude each other"),
        (Some(upload_url), None) => Storage::EmptyDirWithUpload { upload_url },
        (None, claim_name) => Storage::Pvc {
            claim_name,
            size: args.volume_size,
            storage_class: args.storage_class,
        },
    };
    o.cpu_request = args.cpu_request;
    o.memory_request = args.memory_request;
    o.cpu_limit = args.cpu_limit;
    o.memory_limit = args.memory_limit;
    for e in &args.env {
        let (k, v) = pair("--env", e, '=')?;
        o.env.push((k.into(), v.into()));
    }
    for e in &args.secret_env {
        let (k, rest) = pair("--secret-env", e, '=')?;
        let (secret, key) = pair("--secret-env", rest, ':')?;
        o.secret_env.push((k.into(), secret.into(), key.into()));
    }
    for e in &args.node_selector {
        let (k, v) = pair("--node-selector", e, '=')?;
        o.node_selector.push((k.into(), v.into()));
    }
    o.extra_run_args = args.run_args;
    o.active_deadline_s = args.active_deadline_s;
    let docs = manifests(&o)?;
    let text = if args.json {
        serde_json::to_string_pretty(&docs)? + "\n"
    } else {
        to_yaml(&docs)
    };
    match &args.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    eprintln!(
        "{} objects for {} shards: apply with `kubectl apply -f`, follow with `kubectl wait --for=condition=complete job/{} --timeout=…`",
        docs.len(),
        plan.shards,
        o.merge_job_name()
    );
    Ok(exit::OK)
}
