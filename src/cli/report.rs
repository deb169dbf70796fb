//! `servebench report DIR`: a run's report from its folder, rendered again, or rebuilt
//! from `requests.jsonl` when the run died before writing its summary (its `run.json` then
//! still says `"status": "running"`); a test's or a suite's from its `test.json` or
//! `suite.json`. Reads what the folder's view needs (`report::views`), prints the terminal
//! output and writes the pages `--format` asks for through `pipeline::pages`, as `run`,
//! `test` and `suite` do as they end.

use crate::flags::ReportArgs;
use crate::pipeline::exit;
use crate::pipeline::pages::write_all;
use crate::pipeline::recover::{
    as_levels, level_reports, load_or_recover, load_suite, load_test, records_of, suite_tests,
};
use crate::report::output::{render, Output, Render, PAGES};
use crate::report::views::{RunView, SuiteView, TestView};
use crate::store::folder::{SuiteFolder, TestFolder};
use anyhow::{bail, Context, Result};
use std::path::Path;

/// `--output` goes with one page.
fn check_output(args: &ReportArgs) -> Result<()> {
    if args.output.is_some() && args.format.single_page().is_none() {
        bail!("--output goes with --format md or --format html (one file)");
    }
    Ok(())
}

/// The pages `--format` asks for: both into the folder (`all`; `unwritable` says what to
/// do when the folder is not writable), or one into the folder or to `--output` (`-`:
/// stdout). Nothing for `terminal`.
fn pages(args: &ReportArgs, view: &dyn Render, unwritable: Option<String>) -> Result<u8> {
    let files = view.files(&args.dir);
    if args.format.outputs() == [Output::Terminal] {
        return Ok(exit::OK);
    }
    let Some(one) = args.format.single_page() else {
        let written = write_all(view, &PAGES, &files);
        let written = match unwritable {
            Some(why) => written.context(why)?,
            None => written?,
        };
        for p in written {
            eprintln!("Wrote {}", p.display());
        }
        return Ok(exit::OK);
    };
    match args.output.as_deref() {
        Some(p) if p == Path::new("-") => print!("{}", render(view, one).unwrap_or_default()),
        Some(p) => {
            write_all(view, &[one], &files.with(one, p.to_path_buf()))?;
            eprintln!("Wrote {}", p.display());
        }
        None => {
            for p in write_all(view, &[one], &files).with_context(|| {
                format!("{} is not writable: use --output PATH", args.dir.display())
            })? {
                eprintln!("Wrote {}", p.display());
            }
        }
    }
    Ok(exit::OK)
}

/// Whether `--format` prints the terminal output.
fn prints(args: &ReportArgs) -> bool {
    args.format.outputs().contains(&Output::Terminal)
}

/// `servebench report DIR` for a test folder: its tables, and its page.
fn report_test(args: &ReportArgs) -> Result<u8> {
    let test = load_test(&args.dir)?;
    check_output(args)?;
    if prints(args) {
        // The tables come from test.json alone: printed before the levels are read.
        let tables = TestView {
            report: &test,
            levels: &[],
        };
        print!("{}", tables.terminal());
    }
    let reports = level_reports(&args.dir, &test);
    let levels = as_levels(&reports);
    let view = TestView {
        report: &test,
        levels: &levels,
    };
    pages(args, &view, None)
}

/// `servebench report DIR` for a suite folder: where each test's tables are, and its page.
fn report_suite(args: &ReportArgs) -> Result<u8> {
    check_output(args)?;
    if prints(args) {
        eprintln!(
            "{} is a suite folder: each test's tables are in its own report (servebench report {}/TEST).",
            args.dir.display(),
            args.dir.display()
        );
    }
    let suite = load_suite(&args.dir)?;
    let tests = suite_tests(&args.dir, &suite);
    let view = SuiteView {
        suite: &suite,
        tests: &tests,
    };
    pages(args, &view, None)
}

pub fn report(args: ReportArgs) -> Result<u8> {
    if TestFolder::new(&args.dir).holds_test() {
        return report_test(&args);
    }
    if SuiteFolder::new(&args.dir).holds_suite() {
        return report_suite(&args);
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
    check_output(&args)?;
    let terminal = RunView {
        report: &report,
        records: &[],
        detail: args.detail,
    };
    if prints(&args) {
        print!("{}", terminal.terminal());
    }
    if args.format.outputs() == [Output::Terminal] {
        return Ok(exit::OK);
    }
    let records = records_of(&args.dir, &report)?;
    let view = RunView {
        records: &records,
        ..terminal
    };
    let unwritable = format!(
        "{} is not writable: write one report elsewhere with --format md|html --output PATH",
        args.dir.display()
    );
    pages(&args, &view, Some(unwritable))
}
