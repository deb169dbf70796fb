//! One run into its folder once the target is ready: `run.json` marked running (so a run
//! that dies can be recovered), the runner, the prefill curve it profiled, then the report
//! (`assemble`) and its pages. Shared by `run`, each level of a test and each shard of a
//! scale-out plan.

use super::exit;
use super::host::host_info;
use crate::artifacts::{SystemInfo, ToolInfo};
use crate::config::{PrefillSetup, RunConfig};
use crate::metrics::fluidity::ProfiledCurve;
use crate::record::run::ServerInfo;
use crate::runner::{self, RunError};
use crate::store::{write_run_json, RunFolder};
use crate::tokenizer;
use anyhow::{Context, Result};
use std::collections::BTreeMap;

/// Which tokenizer counted what, for the report.
pub fn tokenizer_info(tok: &dyn tokenizer::Tokenizer) -> crate::artifacts::TokenizerInfo {
    crate::artifacts::TokenizerInfo {
        name: tok.name().to_owned(),
        source: tok.source().to_owned(),
        vocab_size: tok.vocab_size(),
        counting_option: tokenizer::counting_option(tok).into(),
        special_tokens: if tok.enumerable() {
            "input: message texts only (no BOS/EOS, no chat-template tokens; system prompt included); throughput uses the server's usage.prompt_tokens when present, which counts them; output: server usage.completion_tokens when present, else this tokenizer on the whole text".into()
        } else {
            "input: the prompt after the server's chat template, BOS and template tokens included, as the server's /tokenize counts them; output: server usage.completion_tokens".into()
        },
    }
}

/// What one run needs once the target is ready.
pub struct Execute<'a> {
    pub config: RunConfig,
    pub system: SystemInfo,
    /// Isolated TTFT (P50, P99) per class, ms.
    pub baseline: BTreeMap<String, (f64, f64)>,
    pub server: &'a ServerInfo,
    pub tokenizer: tokenizer::SharedTokenizer,
    pub warnings: Vec<crate::metrics::warnings::Warning>,
    /// Say what is about to run, on stderr.
    pub announce: bool,
}

/// One run into its folder: `run.json` marked running (for recovery), the runner, the
/// prefill curve it profiled, then the report (`run.json`, `timeseries.csv`). Returns the
/// report and every record; [`exit::EarlyExit`] when the server could not be used.
pub fn execute(
    e: Execute<'_>,
) -> Result<(
    crate::artifacts::RunReport,
    Vec<crate::record::RequestRecord>,
)> {
    let config = e.config;
    let start = mark_running(
        &config,
        &e.system,
        e.server,
        e.tokenizer.as_ref(),
        &e.baseline,
    )?;
    if e.announce {
        announce(&config);
    }
    let output = match runner::run(&config, e.tokenizer.clone(), e.server) {
        Ok(o) => o,
        Err(RunError::Ready(err)) => {
            eprintln!("error: {err}");
            return Err(exit::EarlyExit(exit::USAGE).into());
        }
        Err(err) => return Err(err.into()),
    };
    if let Some(curve) = &output.prefill_curve {
        keep_prefill_curve(curve, &config)?;
    }
    let end = output.clock.offset_of(std::time::Instant::now());
    let mut warnings = e.warnings;
    if let Some(failures) = output.measure.gave_up_after {
        eprintln!(
            "WARNING: measurement stopped: {failures} requests in a row failed and none succeeded (the failures, with their usual causes, are in the report)"
        );
        warnings.push(crate::metrics::warnings::Warning::GaveUpOnFailures { failures });
    }
    let report = super::assemble::assemble(super::assemble::Inputs {
        start,
        records: &output.records,
        streamed: output.streamed.as_deref(),
        telemetry: &output.telemetry,
        idle_until: output.idle_until,
        end,
        generator: output.generator,
        fluidity: output.fluidity.clone(),
        warmup: output.warmup.clone(),
        prefill_profile: output.profile.clone(),
        prefill_curve: output.prefill_curve.clone(),
        started_unix_us: output.started_unix_us,
        finished_unix_us: output.finished_unix_us,
        interrupted: output.interrupted,
        recovered: false,
        extra_warnings: warnings,
    })?;
    // The reports are a view of what is already on disk (the records as requests.jsonl
    // holds them, so `servebench report` rebuilds the same files): failing to write them
    // never loses the run or changes its exit status.
    let written = super::pages::as_written(&output.records, &output.clock);
    if let Err(err) = super::pages::write_files(&report, &written) {
        eprintln!(
            "warning: the reports were not written: {err:#}. The run itself is complete; `servebench report {} --format all` writes them again.",
            report.config.out_dir.display()
        );
    }
    super::otlp::export_after_run(&config);
    super::parquet::write_after_run(&config, &report);
    Ok((report, output.records))
}

/// While the run goes on, run.json says so, with everything needed to recover it from
/// requests.jsonl if the process dies (`servebench report` does it). The start written.
fn mark_running(
    config: &RunConfig,
    system: &SystemInfo,
    server: &ServerInfo,
    tokenizer: &dyn tokenizer::Tokenizer,
    baseline: &BTreeMap<String, (f64, f64)>,
) -> Result<crate::artifacts::RunStart> {
    let host = host_info();
    let tokenizer_info = tokenizer_info(tokenizer);
    let start = crate::artifacts::RunStart {
        schema_version: crate::artifacts::SCHEMA_VERSION,
        status: "running".into(),
        tool: ToolInfo::default(),
        started_at: crate::clock::iso8601_ms(crate::clock::RunClock::start().unix_us(0)),
        started_at_us: crate::clock::RunClock::start().unix_us(0),
        command_line: config.command_line.clone(),
        host: host.clone(),
        system: system.clone(),
        server: server.clone(),
        tokenizer: tokenizer_info.clone(),
        baseline: baseline.clone(),
        config: config.clone(),
    };
    write_run_json(&config.out_dir, &serde_json::to_value(&start)?)?;
    Ok(start)
}

/// Says what is about to run, on stderr.
fn announce(config: &RunConfig) {
    eprintln!(
        "Running {} against {} (model {}); records stream to {}",
        crate::report::tables::describe_load(config),
        config.target.url,
        config.target.model,
        RunFolder::new(&config.out_dir).requests_jsonl().display()
    );
    if !config.quiet {
        eprintln!("{}", runner::plan::describe_run(config));
    }
}

/// Writes the prefill curve the run profiled (`--prefill-curve` reuses it) into its folder.
fn keep_prefill_curve(curve: &ProfiledCurve, config: &RunConfig) -> Result<()> {
    if matches!(config.prefill, PrefillSetup::Profile(_)) {
        let path = RunFolder::new(&config.out_dir).prefill_curve_json();
        std::fs::write(&path, serde_json::to_vec_pretty(curve)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
