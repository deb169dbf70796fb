//! From what a run produced (or what survived of it) to its report: one summary, the
//! generator's verdict, telemetry on one timeline, the exit status; `run.json` and
//! `timeseries.csv` written. Shared by `run` and by `report`, which rebuilds a run that died.

use super::host::host_info;
use super::verdict::verdict;
use crate::artifacts::{RunReport, RunStart, TimingNotes};
use crate::clock::Nanos;
use crate::config::RunConfig;
use crate::metrics::experience::FluidityParams;
use crate::metrics::fluidity::ProfiledCurve;
use crate::metrics::generator::{judge, judge_counts, GeneratorFacts};
use crate::metrics::warnings::Warning;
use crate::metrics::{summarize, RunSummary, SummaryParams};
use crate::record::run::{GeneratorReport, ProfileReport, WarmupReport};
use crate::record::{Phase, RequestRecord};
use crate::store::kept::StreamedRun;
use crate::store::RunFolder;
use crate::telemetry::timeline::TimelineRow;
use crate::telemetry::{TelemetryData, TelemetrySummary};
use anyhow::{Context, Result};
use std::path::Path;

/// Everything a report is made of.
pub struct Inputs<'a> {
    pub start: RunStart,
    /// Every record, or a sample of the measured ones when `streamed` is there.
    pub records: &'a [RequestRecord],
    /// The figures of a run that kept no records past `--exact-summary-limit`.
    pub streamed: Option<&'a StreamedRun>,
    pub telemetry: &'a TelemetryData,
    pub idle_until: Nanos,
    /// The run's last moment on its clock.
    pub end: Nanos,
    pub generator: GeneratorFacts,
    pub fluidity: FluidityParams,
    pub warmup: WarmupReport,
    pub prefill_profile: Option<ProfileReport>,
    pub prefill_curve: Option<ProfiledCurve>,
    pub started_unix_us: u64,
    pub finished_unix_us: u64,
    pub interrupted: bool,
    pub recovered: bool,
    pub extra_warnings: Vec<Warning>,
}

/// Builds the report, writes `run.json` and `timeseries.csv` into the run folder.
pub fn assemble(i: Inputs<'_>) -> Result<RunReport> {
    let config = i.start.config;
    let mut extra_warnings = i.extra_warnings;
    if let Some(s) = i.streamed {
        extra_warnings.push(Warning::SummaryStreamed { why: s.why.clone() });
    }
    let params = SummaryParams {
        slo: config.slo.clone(),
        ux: config.ux,
        fluidity: i.fluidity,
        baseline: i.start.baseline,
        warmup: Some(i.warmup.clone()),
        extra_warnings,
        expects_cached_prompts: config.workload.expects_cached_prompts()
            || shares_trace_blocks(&config),
        confidence: config.confidence,
    };
    let summary = match i.streamed {
        Some(s) => s.summary.clone().finish_with(params),
        None => summarize(i.records, &params),
    };
    let generator = judge_generator(i.records, i.streamed, &i.generator, i.recovered);
    let rows = write_timeline(i.records, i.streamed, i.telemetry, i.end, &config.out_dir)?;
    let telemetry = summarize_telemetry(i.records, i.streamed, i.telemetry, i.idle_until, &summary);
    let mut verdict = verdict(&summary, &config, i.interrupted);
    if i.recovered {
        verdict.reasons.insert(
            0,
            "recovered from requests.jsonl: the run was killed before it finished".into(),
        );
    }
    let report = RunReport {
        schema_version: crate::artifacts::SCHEMA_VERSION,
        tool: i.start.tool,
        started_at: crate::clock::iso8601_ms(i.started_unix_us),
        finished_at: crate::clock::iso8601_ms(i.finished_unix_us),
        started_at_us: i.started_unix_us,
        finished_at_us: i.finished_unix_us,
        interrupted: i.interrupted,
        recovered: i.recovered,
        command_line: i.start.command_line,
        host: if i.recovered {
            i.start.host
        } else {
            host_info()
        },
        system: i.start.system,
        server: i.start.server,
        tokenizer: i.start.tokenizer,
        warmup: i.warmup,
        prefill_profile: i.prefill_profile,
        prefill_curve: i.prefill_curve,
        timing: TimingNotes::new(generator.arrival_clock == "kernel_rx"),
        summary,
        telemetry,
        timeseries: rows,
        generator,
        verdict,
        config,
    };
    super::pages::write_run_report(&report)?;
    Ok(report)
}

/// The generator's verdict over the measured records (a sample of them, with the streamed
/// counts, when the run kept no records past `--exact-summary-limit`).
fn judge_generator(
    records: &[RequestRecord],
    streamed: Option<&StreamedRun>,
    facts: &GeneratorFacts,
    recovered: bool,
) -> GeneratorReport {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    let mut generator = match streamed {
        Some(s) => judge_counts(&measured, &s.generator, facts),
        None => judge(&measured, facts),
    };
    if recovered {
        generator.notes.push(
            "recovered from an interrupted run: the generator's CPU figures were not recorded"
                .into(),
        );
    }
    generator
}

/// The per-second timeline up to `end`, also written to `timeseries.csv` in `out_dir`.
fn write_timeline(
    records: &[RequestRecord],
    streamed: Option<&StreamedRun>,
    telemetry: &TelemetryData,
    end: Nanos,
    out_dir: &Path,
) -> Result<Vec<TimelineRow>> {
    let rows = match streamed {
        Some(s) => crate::telemetry::timeline::timeline_of(&s.timeline, telemetry, end),
        None => crate::telemetry::timeline::timeline(records, telemetry, end),
    };
    let csv = RunFolder::new(out_dir).timeseries_csv();
    std::fs::write(&csv, crate::telemetry::timeline::to_csv(&rows))
        .with_context(|| format!("writing {}", csv.display()))?;
    Ok(rows)
}

/// The server and GPU telemetry over the summary's measurement window, beside what the
/// client saw in it.
fn summarize_telemetry(
    records: &[RequestRecord],
    streamed: Option<&StreamedRun>,
    telemetry: &TelemetryData,
    idle_until: Nanos,
    summary: &RunSummary,
) -> TelemetrySummary {
    let w = summary.window;
    let seen = match streamed {
        Some(s) => s.seen.counts(telemetry, w.start, w.end),
        None => {
            crate::telemetry::summary::client_counts_in_window(records, telemetry, w.start, w.end)
        }
    };
    crate::telemetry::summary::summarize(
        telemetry,
        w.start,
        w.end,
        w.start + (w.end.saturating_sub(w.start)) / 10,
        idle_until,
        &crate::telemetry::summary::ClientTotals {
            output_tokens: seen.output_tokens,
            completed: summary.requests.completed,
            ended: seen.ended,
            mean_ttft_ms: summary.ttft_ms.map(|d| d.mean),
        },
    )
}

/// Whether the run replays a dataset whose requests reuse prompts on purpose: a trace whose
/// requests share hashed prompt blocks (Mooncake's `hash_ids`), or agent sessions, each step
/// carrying the session's history.
fn shares_trace_blocks(config: &RunConfig) -> bool {
    use crate::workload::datasets::Dataset;
    match config.dataset.as_deref() {
        Some(Dataset::Trace(t)) => t.iter().any(|r| !r.hash_ids.is_empty()),
        Some(Dataset::Agent(_)) => true,
        _ => false,
    }
}
