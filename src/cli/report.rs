//! `servebench report RUN_DIR`: a run's report from its folder, rendered again, or rebuilt
//! from `requests.jsonl` when the run died before writing its summary (its `run.json` then
//! still says `"status": "running"`).

use super::args::ReportArgs;
use super::assemble::{assemble, Inputs};
use super::exit;
use crate::config::PrefillSetup;
use crate::metrics::fluidity::ProfiledCurve;
use crate::metrics::generator::GeneratorFacts;
use crate::record::run::WarmupReport;
use crate::report::{terminal, RunReport, RunStart};
use crate::store::read_requests;
use crate::store::run_dir::earliest_us;
use anyhow::{bail, Context, Result};
use std::path::Path;

/// A run folder's report: as written, or recovered. The flag says which.
pub fn load_or_recover(dir: &Path) -> Result<(RunReport, bool)> {
    let path = dir.join("run.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} has no run.json: is it a run folder (the --out of `servebench run`)?",
            dir.display()
        )
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if value.get("status").and_then(|s| s.as_str()) == Some("running") {
        let start: RunStart = serde_json::from_value(value)
            .with_context(|| format!("{} is not a servebench run start", path.display()))?;
        return Ok((recover(dir, start)?, true));
    }
    let report: RunReport = serde_json::from_value(value).with_context(|| {
        format!(
            "{} is not a run.json this version of servebench reads",
            path.display()
        )
    })?;
    Ok((report, false))
}

/// Rebuilds the report of a run that died, from its records.
fn recover(dir: &Path, mut start: RunStart) -> Result<RunReport> {
    let jsonl = dir.join("requests.jsonl");
    if !jsonl.exists() {
        bail!(
            "{} holds no requests.jsonl: the run died before its first request",
            dir.display()
        );
    }
    // The run folder may have moved since: write where it is now.
    start.config.out_dir = dir.to_path_buf();
    let anchor = earliest_us(&jsonl)?.min(start.started_at_us);
    let records = read_requests(&jsonl, anchor)?;
    let last = records
        .iter()
        .map(|r| r.finished_at)
        .max()
        .unwrap_or_default();
    let curve: Option<ProfiledCurve> = match &start.config.prefill {
        PrefillSetup::Curve(c) => Some(c.clone()),
        _ => std::fs::read(dir.join("prefill-curve.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok()),
    };
    let mut fluidity = start.config.fluidity.clone();
    fluidity.curve = curve.as_ref().map(|c| c.curve);
    fluidity.curve_source = match &curve {
        Some(c) => format!("recovered: profiled on {} at {}", c.target, c.created_at),
        None => "none recovered".into(),
    };
    let telemetry = crate::telemetry::TelemetryData {
        server_source: "not recorded: the run was interrupted".into(),
        gpu_source: "not recorded: the run was interrupted".into(),
        rapl_source: "not recorded: the run was interrupted".into(),
        ..Default::default()
    };
    let started = anchor;
    assemble(Inputs {
        start,
        records: &records,
        telemetry: &telemetry,
        idle_until: 0,
        end: last,
        generator: GeneratorFacts::default(),
        fluidity,
        warmup: WarmupReport {
            policy: "unknown (recovered from an interrupted run)".into(),
            ..Default::default()
        },
        prefill_profile: None,
        prefill_curve: curve,
        started_unix_us: started,
        finished_unix_us: started + last / 1_000,
        interrupted: true,
        recovered: true,
        extra_warnings: Vec::new(),
    })
}

pub fn report(args: ReportArgs) -> Result<u8> {
    let (report, recovered) = load_or_recover(&args.dir)?;
    if recovered {
        eprintln!(
            "Recovered {} from requests.jsonl (the run was killed before it finished); run.json now holds its summary.",
            args.dir.display()
        );
    }
    if args.detail {
        print!("{}", terminal::render_detail(&report));
    } else {
        print!("{}", terminal::render(&report));
    }
    Ok(exit::OK)
}
