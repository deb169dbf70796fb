//! `servebench plan`, `run --plan --shard`, `merge` and `k8s`: one load over many
//! generators (docs/scale-out.md). The work is in `crate::scaleout`; this file turns flags
//! into it and reuses the run pipeline (`run::ready`, `pipeline::execute`,
//! `pipeline::assemble`) so a shard is an ordinary run and a merged folder an ordinary run
//! folder.

use super::args::{Cli, ClockSyncArg, Command, K8sArgs, MergeArgs, PlanArgs, RunArgs, RunCommand};
use super::exit;
use super::run::{self, Ready};
use crate::clock::{iso8601_ms, RunClock};
use crate::config::RunConfig;
use crate::metrics::experience::FluidityParams;
use crate::metrics::generator::GeneratorFacts;
use crate::metrics::warnings::Warning;
use crate::pipeline::assemble::{assemble, Inputs};
use crate::pipeline::execute::{execute, Execute};
use crate::pipeline::host::host_info;
use crate::pipeline::pages::{as_written, write_files};
use crate::pipeline::resolve::{redacted_command_line, resolve};
use crate::record::run::WarmupReport;
use crate::record::wire::WireRecord;
use crate::report::{terminal, RunReport, RunStart, ToolInfo};
use crate::scaleout::clock::{probe_date, ClockOffset};
use crate::scaleout::k8s::{manifests, to_yaml, K8sOptions, Storage};
use crate::scaleout::merge::{Merged, ShardRecord, SHARD_KIND, SHARD_SCHEMA_VERSION};
use crate::scaleout::plan::{
    check_shardable, run_options, workload_hash, Plan, PlanError, PLAN_KIND, PLAN_SCHEMA_VERSION,
    SHARD_FLAGS,
};
use crate::schedule::shard::{Shard, ShardRun};
use crate::store::{prepare_run_dir, write_run_json, RunFolder};
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
    let has = |flag: &str| {
        raw.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    if !has("--seed") {
        run_args.extend(["--seed".into(), config.seed.to_string()]);
    }
    let mut notes = Vec::new();
    if args.shards > 1 && !has("--no-fluidity") && !has("--prefill-curve") {
        // Profiling prefill in every shard at once would not be isolated.
        run_args.push("--no-fluidity".into());
        notes.push("fluidity-index off (--no-fluidity): shards cannot profile prefill in isolation; give a --prefill-curve file present on every shard to keep it");
    }
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
    } = match run::ready(&args)? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
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
    let (report, _records) = match execute(Execute {
        config: resolved.config,
        system: resolved.system,
        baseline: resolved.baseline,
        server: &server,
        tokenizer,
        warnings,
        announce: !args.output.quiet,
    })? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
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
    target: &crate::config::Target,
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
    if detail {
        print!("{}", terminal::render_detail(report));
    } else {
        print!("{}", terminal::render(report));
    }
}

/// `servebench merge`: one run folder from a plan's shard folders.
pub fn merge(args: MergeArgs) -> Result<u8> {
    for label in &args.labels {
        crate::store::history::check_label(label).context("--label")?;
    }
    let merged = crate::scaleout::merge::merge(&args.dirs)?;
    let out = prepare_run_dir(Some(&args.out), args.force)?;
    let first = &merged.shards[0].report;
    let mut config = first.config.clone();
    config.out_dir = out.clone();
    config.command_line = redacted_command_line();
    // Records, in ordinal order, on the reference timeline.
    let clock = RunClock::with_anchor(std::time::Instant::now(), merged.base_unix_us * 1000);
    let folder = RunFolder::new(&out);
    write_merged_requests(&folder, &merged, &clock)?;
    let (facts, finished_us, interrupted) = merged_generator(&merged);
    let end = merged
        .records
        .iter()
        .map(|r| r.finished_at)
        .max()
        .unwrap_or_default();
    let fluidity = merged_fluidity(&config.fluidity, first);
    let warmup = merged_warmup(&merged);
    let extra = merge_warnings(&merged);
    let start = merged_start(&merged, config);
    let telemetry = crate::telemetry::TelemetryData {
        server_source: "shard 0's (see its run folder)".into(),
        gpu_source: "shard 0's (see its run folder)".into(),
        rapl_source: "per shard (see their run folders)".into(),
        ..Default::default()
    };
    let mut report = assemble(Inputs {
        start,
        records: &merged.records,
        streamed: None,
        telemetry: &telemetry,
        idle_until: 0,
        end,
        generator: facts,
        fluidity,
        warmup,
        prefill_profile: None,
        prefill_curve: first.prefill_curve.clone(),
        started_unix_us: merged.base_unix_us,
        finished_unix_us: finished_us,
        interrupted,
        recovered: false,
        extra_warnings: extra,
    })?;
    add_shard0_telemetry(&mut report, &merged, &folder, &out)?;
    // report.md and report.html, as a run writes them (a failure warns, never loses the run).
    let written = as_written(&merged.records, &clock);
    if let Err(err) = write_files(&report, &written) {
        eprintln!(
            "warning: the reports were not written: {err:#}. `servebench report {} --format all` writes them again.",
            out.display()
        );
    }
    write_merge_json(&folder, &merged)?;
    print_report(&report, args.detail);
    println!(
        "\nMerged run folder: {} ({} shards)",
        out.display(),
        merged.shards.len()
    );
    if !args.no_store {
        super::history::record_run(args.store.as_deref(), &out, &args.labels, false);
    }
    Ok(report.verdict.exit_status)
}

/// Writes the merged records, in ordinal order on the reference timeline, to
/// `requests.jsonl`.
fn write_merged_requests(folder: &RunFolder, merged: &Merged, clock: &RunClock) -> Result<()> {
    let mut jsonl = Vec::new();
    for r in &merged.records {
        serde_json::to_writer(&mut jsonl, &WireRecord::from_record(r, clock))?;
        jsonl.push(b'\n');
    }
    let jsonl_path = folder.requests_jsonl();
    std::fs::write(&jsonl_path, jsonl)
        .with_context(|| format!("writing {}", jsonl_path.display()))?;
    Ok(())
}

/// The generators, together: their facts, the last shard's end on the reference clock
/// (Unix µs), and whether any was interrupted.
fn merged_generator(merged: &Merged) -> (GeneratorFacts, u64, bool) {
    let mut facts = GeneratorFacts {
        kernel_timestamps: true,
        ..Default::default()
    };
    let mut finished_us = merged.base_unix_us;
    let mut interrupted = false;
    for s in &merged.shards {
        let g = &s.report.generator;
        facts.cpu_seconds += g.cpu_seconds;
        let wall = if g.cpu_cores_used > 0.0 {
            g.cpu_seconds / g.cpu_cores_used
        } else {
            0.0
        };
        facts.wall_seconds = facts.wall_seconds.max(wall);
        facts.cores_available += g.cpu_cores_available;
        facts.connections_opened += g.connections_opened;
        facts.connections_opened_measured += g.connections.opened;
        facts.kernel_timestamps &= g.arrival_clock == "kernel_rx";
        let off = s.info.clock.applied_us();
        finished_us = finished_us.max((s.report.finished_at_us as i64 - off).max(0) as u64);
        interrupted |= s.report.interrupted;
    }
    (facts, finished_us, interrupted)
}

/// The fluidity parameters: the prefill curve the shards were given, if any (sharded runs
/// cannot profile one).
fn merged_fluidity(fluidity: &FluidityParams, first: &RunReport) -> FluidityParams {
    let mut fluidity = fluidity.clone();
    fluidity.curve = first.prefill_curve.as_ref().map(|c| c.curve);
    fluidity.curve_source = match &first.prefill_curve {
        Some(c) => format!(
            "given to the shards: profiled on {} at {}",
            c.target, c.created_at
        ),
        None => "off (sharded runs cannot profile prefill in isolation)".into(),
    };
    fluidity
}

/// Warm-up: every shard warmed its own connections; the counts add up, and the warm-up
/// was compliant only if every shard's was.
fn merged_warmup(merged: &Merged) -> WarmupReport {
    let mut warmup = merged.shards[0].report.warmup.clone();
    warmup.policy = format!(
        "each of {} shards, at its share of the load: {}",
        merged.shards.len(),
        warmup.policy
    );
    for s in &merged.shards[1..] {
        let w = &s.report.warmup;
        warmup.requests += w.requests;
        warmup.output_tokens += w.output_tokens;
        warmup.stabilized &= w.stabilized;
        warmup.capped |= w.capped;
        warmup.compliant &= w.compliant;
    }
    warmup
}

/// The merged run's warnings: what was merged, then the merge's notes.
fn merge_warnings(merged: &Merged) -> Vec<Warning> {
    let mut extra: Vec<Warning> = merged
        .notes
        .iter()
        .map(|n| Warning::Recorded {
            kind: "scale_out".into(),
            message: n.clone(),
        })
        .collect();
    extra.insert(
        0,
        Warning::Recorded {
            kind: "scale_out".into(),
            message: format!(
                "merged from {} shards ({} measured records); server and GPU metrics are shard 0's",
                merged.shards.len(),
                merged.records.len()
            ),
        },
    );
    extra
}

/// The merged run's start: shard 0's facts, at the merged timeline's origin.
fn merged_start(merged: &Merged, config: RunConfig) -> RunStart {
    let first = &merged.shards[0].report;
    RunStart {
        schema_version: crate::artifacts::SCHEMA_VERSION,
        status: "running".into(),
        tool: ToolInfo::default(),
        started_at: iso8601_ms(merged.base_unix_us),
        started_at_us: merged.base_unix_us,
        command_line: config.command_line.clone(),
        host: first.host.clone(),
        system: first.system.clone(),
        server: first.server.clone(),
        tokenizer: first.tokenizer.clone(),
        baseline: Default::default(),
        config,
    }
}

/// Server and GPU metrics over the measurement are shard 0's (it scraped them for the
/// whole load): its summary, and its per-second columns on the merged timeline, written
/// again to `timeseries.csv` and `run.json`.
fn add_shard0_telemetry(
    report: &mut RunReport,
    merged: &Merged,
    folder: &RunFolder,
    out: &Path,
) -> Result<()> {
    let shard0 = &merged.shards[0];
    report.telemetry = shard0.report.telemetry.clone();
    // Shard 0's second 0 is its start on the reference clock (to the nearest second).
    let shift_us = shard0.report.started_at_us as i64
        - shard0.info.clock.applied_us()
        - merged.base_unix_us as i64;
    crate::telemetry::timeline::splice_server_and_gpu(
        &mut report.timeseries,
        &shard0.report.timeseries,
        (shift_us as f64 / 1e6).round() as i64,
    );
    let csv = folder.timeseries_csv();
    std::fs::write(&csv, crate::telemetry::timeline::to_csv(&report.timeseries))
        .with_context(|| format!("writing {}", csv.display()))?;
    write_run_json(out, &crate::report::json::run_json(report))?;
    Ok(())
}

/// Writes `merge.json`: the shards merged, where from, and the merge's notes.
fn write_merge_json(folder: &RunFolder, merged: &Merged) -> Result<()> {
    let shards: Vec<serde_json::Value> = merged
        .shards
        .iter()
        .map(|s| {
            serde_json::json!({
                "index": s.info.index,
                "dir": s.dir.display().to_string(),
                "host": s.info.host.hostname,
                "clock": s.info.clock,
                "late_ms": s.info.late_ms,
                "measured_requests": s.report.summary.requests.total,
                "generator_kept_up": s.report.generator.kept_up,
            })
        })
        .collect();
    let merge_json = serde_json::json!({
        "kind": "servebench-merge",
        "schema_version": 1,
        "plan_id": merged.shards[0].info.plan_id,
        "shards": shards,
        "base_unix_us": merged.base_unix_us,
        "notes": merged.notes,
    });
    let merge_path = folder.merge_json();
    std::fs::write(&merge_path, serde_json::to_vec_pretty(&merge_json)?)
        .with_context(|| format!("writing {}", merge_path.display()))?;
    Ok(())
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
