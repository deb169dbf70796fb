//! `servebench merge` as a pipeline step: a plan's shard folders into one run folder, the
//! records put on the reference timeline in ordinal order and assembled as any run is.

use super::assemble::{assemble, Inputs};
use super::pages::{as_written, write_files, write_run_report};
use super::resolve::redacted_command_line;
use crate::artifacts::{RunReport, RunStart, ToolInfo};
use crate::clock::{iso8601_ms, RunClock};
use crate::config::RunConfig;
use crate::flags::MergeArgs;
use crate::metrics::experience::FluidityParams;
use crate::metrics::generator::GeneratorFacts;
use crate::metrics::warnings::Warning;
use crate::record::run::WarmupReport;
use crate::record::wire::WireRecord;
use crate::scaleout::merge::Merged;
use crate::store::{prepare_run_dir, RunFolder};
use anyhow::{Context, Result};
use std::path::PathBuf;

/// A merged run: its report, its folder and how many shards it came from.
pub struct MergedRun {
    pub report: RunReport,
    pub out: PathBuf,
    pub shards: usize,
}

/// One run folder from a plan's shard folders (`servebench merge`): the records on the
/// reference timeline, the summary, run.json, the pages and merge.json.
pub fn merge_shards(args: &MergeArgs) -> Result<MergedRun> {
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
    add_shard0_telemetry(&mut report, &merged, &folder)?;
    // report.md and report.html, as a run writes them (a failure warns, never loses the run).
    let written = as_written(&merged.records, &clock);
    if let Err(err) = write_files(&report, &written) {
        eprintln!(
            "warning: the reports were not written: {err:#}. `servebench report {} --format all` writes them again.",
            out.display()
        );
    }
    write_merge_json(&folder, &merged)?;
    Ok(MergedRun {
        report,
        out,
        shards: merged.shards.len(),
    })
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
        facts.connections_closed_by_server_measured += g.connections.closed_by_server;
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
fn add_shard0_telemetry(report: &mut RunReport, merged: &Merged, folder: &RunFolder) -> Result<()> {
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
    write_run_report(report)?;
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
