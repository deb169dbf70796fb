//! The driver of `servebench test NAME` and `servebench suite`: the draft's section 5
//! tests against real servers (or the simulator), in the pipeline beside the run's stages
//! it calls: `target` once per target, `execute` for every level, `recover` to write a
//! test's and a suite's pages, `index` once per test.
//!
//! The procedures (`crate::procedure`) decide which levels to run and what they mean
//! (`procedure::run` dispatches); this driver runs them: `levels::LevelRunner` turns a
//! level spec into a full run folder under
//! `levels/`, keeps the time budget, empties the prefix cache when asked, lets the server
//! drain between levels, and stops on Ctrl-C. `test.json` is rewritten at the end with
//! everything measured, also when the test stopped early.
//!
//! `prepare` readies the targets and the options, `levels` runs each level,
//! `between_levels` lets the server drain and empties its prefix cache, and `profiles` runs
//! a suite once per workload profile.

mod between_levels;
mod levels;
mod prepare;
mod profiles;

use crate::artifacts::{SystemInfo, ToolInfo};
use crate::flags::{RunArgs, SuiteArgs, TestArgs};
use crate::pipeline::exit;
use crate::pipeline::pages::write_all;
use crate::pipeline::resolve::redacted_command_line;
use crate::procedure::report::{TestReport, TestStatus, TEST_SCHEMA_VERSION};
use crate::procedure::suite::{RanTest, SkippedTest, SuiteDocument, SuiteTest};
use crate::procedure::{self, Options, TestName};
use crate::report::output::{Output, Render};
use crate::report::views::{SuiteView, TestView};
use anyhow::{Context, Result};
pub use levels::LevelRunner;
use prepare::{setup, Setup};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Set by Ctrl-C anywhere in a test (also between levels, when no run is listening).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Watches Ctrl-C for the whole test on a thread of its own. The runner's own watcher
/// handles the level in progress (grace, then cancel); this one stops the levels after it.
fn watch_interrupts() {
    let _ = std::thread::Builder::new()
        .name("interrupts".into())
        .spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                while tokio::signal::ctrl_c().await.is_ok() {
                    INTERRUPTED.store(true, Ordering::Release);
                }
            });
        });
}

/// Runs `test` into the runner's current folder and writes `test.json`.
fn one_test(
    test: TestName,
    runner: &mut LevelRunner,
    o: &Options,
    system: &SystemInfo,
) -> Result<TestReport> {
    let started = crate::clock::RunClock::start().unix_us(0);
    let t0 = Instant::now();
    if !runner.quiet {
        eprintln!(
            "servebench test {} (draft {} {}): levels go to {}",
            test.slug(),
            test.section(),
            test.title(),
            runner.dir.join("levels").display()
        );
    }
    runner.announce_plan(test, o);
    let f = procedure::run(test, runner, o);
    let mut parameters = f.parameters;
    if let Some(obj) = parameters.as_object_mut() {
        obj.insert(
            "budget_s".into(),
            serde_json::json!(runner.budget.limit.map(|d| d.as_secs_f64())),
        );
    }
    let finished = crate::clock::RunClock::start().unix_us(0);
    let mut report = TestReport {
        schema_version: TEST_SCHEMA_VERSION,
        test,
        section: test.section().into(),
        title: test.title().into(),
        status: if f.stopped.is_some() {
            TestStatus::Incomplete
        } else {
            TestStatus::Complete
        },
        stopped: f.stopped,
        answer: f.answer,
        started_at: crate::clock::iso8601_ms(started),
        finished_at: crate::clock::iso8601_ms(finished),
        started_at_us: started,
        finished_at_us: finished,
        duration_s: t0.elapsed().as_secs_f64(),
        exit_status: exit::OK,
        interrupted: INTERRUPTED.load(Ordering::Acquire),
        tool: ToolInfo::default(),
        command_line: redacted_command_line(),
        target: runner.target_info(),
        system: system.clone(),
        parameters,
        levels: f.levels,
        result: f.result,
        compliance: f.compliance,
    };
    report.exit_status = status(&report);
    let view = TestView {
        report: &report,
        levels: &[],
    };
    write_all(&view, &[Output::Json], &view.files(&runner.dir))?;
    // The pages are a view of test.json and the level folders: failing to write them
    // never loses the test (`servebench report DIR --format all` writes them again).
    if let Err(err) = crate::pipeline::recover::write_test_files(&runner.dir, &report) {
        eprintln!(
            "warning: the test's reports were not written: {err:#}. `servebench report {} --format all` writes them again.",
            runner.dir.display()
        );
    }
    Ok(report)
}

/// `servebench test NAME`.
pub fn test(args: TestArgs) -> Result<u8> {
    watch_interrupts();
    let Setup {
        mut runner,
        options,
        system,
    } = setup(&args.run, &args.procedure, &[args.test])?;
    let report = one_test(args.test, &mut runner, &options, &system)?;
    print_test(&report);
    println!(
        "\nTest folder: {} (report.html, report.md, test.json; a run folder per level)",
        runner.dir.display()
    );
    index_test(&args.run, &runner.dir);
    Ok(report.exit_status)
}

/// Indexes a finished test folder (the test and its levels) in the history, unless
/// `--no-store`; a failure warns and keeps the folder.
fn index_test(run: &RunArgs, dir: &Path) {
    if !run.output.no_store {
        crate::pipeline::index::record_run(
            run.output.store.as_deref(),
            dir,
            &run.output.labels,
            run.output.quiet,
        );
    }
}

/// The exit status of a test: 130 when interrupted, 1 when it found no answer, else 0.
fn status(r: &TestReport) -> u8 {
    if INTERRUPTED.load(Ordering::Acquire) {
        exit::INTERRUPTED
    } else if r.levels.is_empty() || r.answer.starts_with("no ") {
        exit::FAILED
    } else {
        exit::OK
    }
}

/// `servebench suite`: once, or once per workload profile (`--profiles`).
pub fn suite(args: SuiteArgs) -> Result<u8> {
    watch_interrupts();
    match args.profiles.is_empty() {
        true => suite_once(args).map(|(code, _)| code),
        false => profiles::suite_per_profile(args),
    }
}

/// One suite in one folder; its exit status and its `suite.json`.
fn suite_once(args: SuiteArgs) -> Result<(u8, Option<SuiteDocument>)> {
    let wanted: Vec<TestName> = procedure::suite::ORDER
        .iter()
        .copied()
        .filter(|t| !args.skip.contains(t))
        .collect();
    let Setup {
        mut runner,
        mut options,
        system,
    } = setup(&args.run, &args.procedure, &wanted)?;
    if let (Some(line), false) = (runner.suite_plan(&wanted, &options), runner.quiet) {
        eprintln!("{line}");
    }
    let suite_dir = runner.dir.clone();
    let started = crate::clock::RunClock::start().unix_us(0);
    let mut entries = Vec::new();
    let mut worst = exit::OK;
    for test in wanted {
        if let Some(why) = skipped(test, &options) {
            entries.push(SuiteTest::Skipped(SkippedTest {
                test,
                why: why.into(),
            }));
            continue;
        }
        let dir = suite_dir.join(test.slug());
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        runner.start_test(dir.clone());
        let report = one_test(test, &mut runner, &options, &system)?;
        print_test(&report);
        index_test(&args.run, &dir);
        feed_capacities(&mut options, &report);
        worst = worst.max(report.exit_status);
        entries.push(suite_entry(test, &report));
    }
    let summary = SuiteDocument {
        schema_version: TEST_SCHEMA_VERSION,
        suite: true,
        started_at: crate::clock::iso8601_ms(started),
        finished_at: crate::clock::iso8601_ms(crate::clock::RunClock::start().unix_us(0)),
        command_line: redacted_command_line(),
        target: runner.target_info(),
        system,
        tests: entries,
    };
    let view = SuiteView {
        suite: &summary,
        tests: &[],
    };
    write_all(&view, &[Output::Json], &view.files(&suite_dir))?;
    if let Err(err) = crate::pipeline::recover::write_suite_files(&suite_dir) {
        eprintln!(
            "warning: the suite's reports were not written: {err:#}. `servebench report {} --format all` writes them again.",
            suite_dir.display()
        );
    }
    print_suite(&summary, &suite_dir);
    Ok((worst, Some(summary)))
}

/// Why the suite skips `test`, if it does: Ctrl-C was pressed, or the guardrail test has
/// fewer than two configurations to compare.
fn skipped(test: TestName, options: &Options) -> Option<&'static str> {
    if INTERRUPTED.load(Ordering::Acquire) {
        return Some("interrupted");
    }
    if test == TestName::Guardrails && options.targets.len() < 2 {
        return Some("needs two or more --target configurations (baseline=URL, full=URL, ...)");
    }
    None
}

/// Capacities found feed the tests after (the first found is kept).
fn feed_capacities(options: &mut Options, report: &TestReport) {
    if let Some(r) = report.result.sustainable_rate_per_s() {
        options.capacity_rate_per_s.get_or_insert(r);
    }
    if let Some(c) = report.result.max_concurrency() {
        options.capacity_concurrency.get_or_insert(c);
    }
}

/// A test's entry in `suite.json`.
fn suite_entry(test: TestName, report: &TestReport) -> SuiteTest {
    SuiteTest::Ran(RanTest {
        test,
        section: report.section.clone(),
        title: report.title.clone(),
        folder: test.slug().into(),
        status: report.status,
        answer: report.answer.clone(),
        compliance: report.compliance.verdict,
    })
}

/// A test's tables on the terminal.
fn print_test(report: &TestReport) {
    let view = TestView {
        report,
        levels: &[],
    };
    print!("{}", view.terminal());
}

/// The suite's tests, one line each, and its folder, on the terminal.
fn print_suite(summary: &SuiteDocument, suite_dir: &Path) {
    let view = SuiteView {
        suite: summary,
        tests: &[],
    };
    print!("{}", view.terminal());
    println!(
        "\nSuite folder: {} (report.html, report.md, suite.json; a folder per test)",
        suite_dir.display()
    );
}
