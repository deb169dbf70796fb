//! `servebench report RUN_DIR`: a run's report from its folder, rendered again, or rebuilt
//! from `requests.jsonl` when the run died before writing its summary (its `run.json` then
//! still says `"status": "running"`). Prints the terminal report, writes `report.md` and
//! `report.html`; `run` writes the two files through `pipeline::pages::write_files` as it ends.

use crate::artifacts::{RunReport, RunStart};
use crate::config::PrefillSetup;
use crate::flags::{ReportArgs, ReportFormat};
use crate::metrics::fluidity::ProfiledCurve;
use crate::metrics::generator::GeneratorFacts;
use crate::pipeline::assemble::{assemble, Inputs};
use crate::pipeline::exit;
use crate::pipeline::pages::{run_page, write_atomic, write_files};
use crate::procedure::report::TestReport;
use crate::procedure::suite::SuiteDocument;
use crate::record::run::WarmupReport;
use crate::record::RequestRecord;
use crate::report::page::Page;
use crate::report::terminal;
use crate::report::test_page::{self, LevelReport, SuiteEntry};
use crate::store::folder::{RunFolder, SuiteFolder, TestFolder};
use crate::store::kept::Keeper;
use crate::store::run_dir::{earliest_us, for_each_request};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// A run folder's report: as written, or recovered. The flag says which.
pub fn load_or_recover(dir: &Path) -> Result<(RunReport, bool)> {
    let path = RunFolder::new(dir).run_json();
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
    let folder = RunFolder::new(dir);
    let jsonl = folder.requests_jsonl();
    if !jsonl.exists() {
        bail!(
            "{} holds no requests.jsonl: the run died before its first request",
            dir.display()
        );
    }
    // The run folder may have moved since: write where it is now.
    start.config.out_dir = dir.to_path_buf();
    let anchor = earliest_us(&jsonl)?.min(start.started_at_us);
    // Read as the run kept them: every record up to its limit, streamed past it.
    let mut keeper = Keeper::for_run(&start.config);
    let mut last = 0;
    for_each_request(&jsonl, anchor, |r| {
        last = last.max(r.finished_at);
        keeper.add(r);
    })?;
    let kept = keeper.finish();
    let curve: Option<ProfiledCurve> = match &start.config.prefill {
        PrefillSetup::Curve(c) => Some(c.clone()),
        _ => std::fs::read(folder.prefill_curve_json())
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
        records: &kept.records,
        streamed: kept.streamed.as_deref(),
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

/// The records of a run folder its page draws (read back relative to the earliest time in
/// them): every one, or past the run's exact-summary limit the summary's seeded sample of
/// the measured ones, read in the memory of the sample.
fn records_of(dir: &Path, report: &RunReport) -> Result<Vec<RequestRecord>> {
    let jsonl = RunFolder::new(dir).requests_jsonl();
    if !jsonl.exists() {
        return Ok(Vec::new());
    }
    let anchor = earliest_us(&jsonl)?.min(report.started_at_us);
    let mut keeper = Keeper::for_run(&report.config);
    for_each_request(&jsonl, anchor, |r| keeper.add(r))?;
    Ok(keeper.finish().records)
}

/// The page of a test folder: its `test.json` and the `run.json` of each level (a level
/// whose folder cannot be read is left out of the per-level summaries, not of the tables,
/// which come from `test.json`).
fn test_page(dir: &Path, r: &TestReport) -> Page {
    let reports: Vec<(String, RunReport)> = r
        .levels
        .iter()
        .filter_map(|l| {
            load_or_recover(&dir.join(&l.run))
                .ok()
                .map(|(rep, _)| (l.run.clone(), rep))
        })
        .collect();
    let levels: Vec<LevelReport> = reports
        .iter()
        .map(|(folder, report)| LevelReport { folder, report })
        .collect();
    test_page::page(r, &levels)
}

/// Reads a test folder's `test.json`.
pub fn load_test(dir: &Path) -> Result<TestReport> {
    let path = TestFolder::new(dir).test_json();
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    crate::procedure::report::read_test_json(&text).with_context(|| {
        format!(
            "{} is not a test.json this version of servebench reads",
            path.display()
        )
    })
}

/// Writes `report.md` and `report.html` into a test folder; returns their paths.
pub fn write_test_files(dir: &Path, r: &TestReport) -> Result<[PathBuf; 2]> {
    let folder = TestFolder::new(dir);
    write_page(folder.report_md(), folder.report_html(), &test_page(dir, r))
}

/// Reads a suite folder's `suite.json`.
pub fn load_suite(dir: &Path) -> Result<SuiteDocument> {
    let path = SuiteFolder::new(dir).suite_json();
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a suite.json this version of servebench reads",
            path.display()
        )
    })
}

/// The page of a suite folder: `suite.json` and each test's `test.json`.
fn suite_page(dir: &Path) -> Result<Page> {
    let suite = load_suite(dir)?;
    let folder = SuiteFolder::new(dir);
    // Per test: its test.json, when it ran and the file reads.
    let reports: Vec<Option<TestReport>> = suite
        .tests
        .iter()
        .map(|e| {
            e.folder()
                .and_then(|f| load_test(folder.test(f).dir()).ok())
        })
        .collect();
    let entries: Vec<SuiteEntry> = suite
        .tests
        .iter()
        .zip(&reports)
        .map(|(e, report)| SuiteEntry {
            test: e.test().slug(),
            folder: e.folder(),
            report: report.as_ref(),
            skipped: e.skipped(),
        })
        .collect();
    let target = format!("{} on {}", suite.target.model, suite.target.url);
    Ok(test_page::suite_page(&target, &suite.started_at, &entries))
}

/// Writes `report.md` and `report.html` into a suite folder; returns their paths.
pub fn write_suite_files(dir: &Path) -> Result<[PathBuf; 2]> {
    let folder = SuiteFolder::new(dir);
    write_page(folder.report_md(), folder.report_html(), &suite_page(dir)?)
}

/// Writes a page as `md` and `html`; returns the two paths.
fn write_page(md: PathBuf, html: PathBuf, page: &Page) -> Result<[PathBuf; 2]> {
    write_atomic(&md, &page.to_markdown())?;
    write_atomic(&html, &page.to_html())?;
    Ok([md, html])
}

/// `servebench report DIR` for a test or suite folder: the terminal tables, and the page.
fn report_test_or_suite(args: &ReportArgs, test: Option<TestReport>) -> Result<u8> {
    if args.output.is_some() && !matches!(args.format, ReportFormat::Md | ReportFormat::Html) {
        bail!("--output goes with --format md or --format html (one file)");
    }
    let (page, md, html) = match &test {
        Some(r) => {
            if matches!(args.format, ReportFormat::Terminal | ReportFormat::All) {
                print!("{}", crate::report::test_tables::render(r));
            }
            let folder = TestFolder::new(&args.dir);
            (
                test_page(&args.dir, r),
                folder.report_md(),
                folder.report_html(),
            )
        }
        None => {
            if matches!(args.format, ReportFormat::Terminal | ReportFormat::All) {
                eprintln!(
                    "{} is a suite folder: each test's tables are in its own report (servebench report {}/TEST).",
                    args.dir.display(),
                    args.dir.display()
                );
            }
            let folder = SuiteFolder::new(&args.dir);
            (
                suite_page(&args.dir)?,
                folder.report_md(),
                folder.report_html(),
            )
        }
    };
    match args.format {
        ReportFormat::Terminal => Ok(exit::OK),
        ReportFormat::All => {
            for p in write_page(md, html, &page)? {
                eprintln!("Wrote {}", p.display());
            }
            Ok(exit::OK)
        }
        ReportFormat::Md | ReportFormat::Html => {
            let (text, path) = if args.format == ReportFormat::Md {
                (page.to_markdown(), md)
            } else {
                (page.to_html(), html)
            };
            emit(args, &text, &path)
        }
    }
}

/// Writes one rendered page to `--output` (`-`: stdout), or else to `in_folder`, its path
/// in the folder.
fn emit(args: &ReportArgs, text: &str, in_folder: &Path) -> Result<u8> {
    match args.output.as_deref() {
        Some(p) if p == Path::new("-") => print!("{text}"),
        Some(p) => {
            write_atomic(p, text)?;
            eprintln!("Wrote {}", p.display());
        }
        None => {
            write_atomic(in_folder, text).with_context(|| {
                format!("{} is not writable: use --output PATH", args.dir.display())
            })?;
            eprintln!("Wrote {}", in_folder.display());
        }
    }
    Ok(exit::OK)
}

pub fn report(args: ReportArgs) -> Result<u8> {
    if TestFolder::new(&args.dir).holds_test() {
        let test = load_test(&args.dir)?;
        return report_test_or_suite(&args, Some(test));
    }
    if SuiteFolder::new(&args.dir).holds_suite() {
        return report_test_or_suite(&args, None);
    }
    let (mut report, recovered) = load_or_recover(&args.dir)?;
    if recovered {
        eprintln!(
            "Recovered {} from requests.jsonl (the run was killed before it finished); run.json now holds its summary.",
            args.dir.display()
        );
    }
    // The folder may have moved since the run: reports describe where it is now.
    report.config.out_dir = args.dir.clone();
    if args.output.is_some() && !matches!(args.format, ReportFormat::Md | ReportFormat::Html) {
        bail!("--output goes with --format md or --format html (one file)");
    }
    if matches!(args.format, ReportFormat::Terminal | ReportFormat::All) {
        if args.detail {
            print!("{}", terminal::render_detail(&report));
        } else {
            print!("{}", terminal::render(&report));
        }
    }
    if args.format == ReportFormat::Terminal {
        return Ok(exit::OK);
    }
    let records = records_of(&args.dir, &report)?;
    if args.format == ReportFormat::All {
        let paths = write_files(&report, &records).with_context(|| {
            format!(
                "{} is not writable: write one report elsewhere with --format md|html --output PATH",
                args.dir.display()
            )
        })?;
        for p in paths {
            eprintln!("Wrote {}", p.display());
        }
        return Ok(exit::OK);
    }
    let page = run_page(&report, &records);
    let folder = RunFolder::new(&args.dir);
    let (text, path) = if args.format == ReportFormat::Md {
        (page.to_markdown(), folder.report_md())
    } else {
        (page.to_html(), folder.report_html())
    };
    emit(&args, &text, &path)
}
