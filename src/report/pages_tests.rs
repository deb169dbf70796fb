//! Every output servebench renders, pinned byte for byte in `tests/fixtures/pages/`: the
//! terminal text, `report.md` and `report.html` of a run, a test, a comparison, a suite and a
//! suite per profile, the `regress` gate's text, and the JSON documents beside them
//! (`run.json`, `test.json`, `suite.json`, `profiles.json`, `compare --json`,
//! `regress --json`), all built from fixed data in memory (hand-made records; tests run in
//! virtual time on the conformance engine, seeded; comparisons from the real `compare`).
//!
//! A change to how anything reads shows here as a diff of the fixture files. After a
//! deliberate change: `SERVEBENCH_UPDATE_PAGES=1 cargo test --lib pages`, and review the
//! diff. Everything is rendered the one way the commands render it: through the seam
//! (`report::output`), from the views of `report::views`.

use crate::artifacts::{RunReport, SystemInfo, ToolInfo};
use crate::compare::metrics::Normalisation;
use crate::compare::{self, RunInput, SystemInput};
use crate::procedure::conformance;
use crate::procedure::report::{Finding, TargetInfo, TestReport, TestStatus, TEST_SCHEMA_VERSION};
use crate::procedure::suite::{
    ProfileSuite, ProfilesDocument, RanTest, SkippedTest, SuiteDocument, SuiteTest,
};
use crate::procedure::TestName;
use crate::record::{Chunk, FailureKind, Outcome, Phase, RequestRecord};
use crate::report::output::{render, render_each, Output, Render};
use crate::report::run_page;
use crate::report::test_page::LevelReport;
use crate::report::views::{
    ComparisonView, ProfilesView, RegressView, RunView, SuiteView, TestView,
};

/// Where the pinned outputs live, under the crate.
const FIXTURES: &str = "tests/fixtures/pages";

/// The tool as every pinned document names it: fixed, so a version bump changes no page.
fn tool() -> ToolInfo {
    ToolInfo {
        name: "servebench".into(),
        version: "0.0.0-pinned".into(),
    }
}

const MS: u64 = 1_000_000;

/// A completed request sent at `sent` ms with one token per chunk at `tokens` ms.
fn ok(id: u64, sent: u64, tokens: &[u64], class: &str) -> RequestRecord {
    RequestRecord {
        id,
        phase: Phase::Measure,
        class: Some(class.into()),
        queued_at: sent * MS,
        sent_at: Some(sent * MS),
        first_byte_at: Some(tokens[0] * MS),
        first_content: Some(0),
        chunks: tokens
            .iter()
            .map(|&t| Chunk {
                at: t * MS,
                tokens: 1,
                bytes: 3,
            })
            .collect(),
        finished_at: tokens[tokens.len() - 1] * MS,
        outcome: Outcome::Ok,
        output_tokens: tokens.len() as u32,
        max_tokens: tokens.len() as u32,
        input_tokens: 100 + id as u32,
        derived: Some(crate::record::Derived {
            ttft_ms: Some((tokens[0] - sent) as f64),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The run's records: twelve completed requests of two classes and two failures.
fn run_records() -> Vec<RequestRecord> {
    let mut out: Vec<RequestRecord> = (0..12u64)
        .map(|i| {
            let sent = i * 80;
            let first = sent + 90 + 17 * (i % 5);
            let tokens: Vec<u64> = (0..4 + i % 3).map(|k| first + k * (9 + i % 4)).collect();
            ok(i, sent, &tokens, if i % 3 == 0 { "batch" } else { "chat" })
        })
        .collect();
    for (id, sent, end, kind) in [
        (12, 300, 800, FailureKind::Timeout),
        (13, 700, 710, FailureKind::Connect),
    ] {
        out.push(RequestRecord {
            id,
            phase: Phase::Measure,
            queued_at: sent * MS,
            sent_at: Some(sent * MS),
            finished_at: end * MS,
            outcome: Outcome::failed(kind, "pinned failure"),
            max_tokens: 4,
            input_tokens: 100,
            ..Default::default()
        });
    }
    out
}

/// The pinned run: its report (as `assemble` makes it) and its records.
fn run() -> (RunReport, Vec<RequestRecord>) {
    let recs = run_records();
    // A folder of its own per call: the tests of this file run at the same time.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("sb-pages-{}-{call}", std::process::id()));
    let out_flag = out.to_string_lossy().to_string();
    let mut r = run_page::tests::report_of(
        &[
            "--workload",
            "fairness-mix",
            "--hardware",
            "H100 80GB x 2",
            "--note",
            "guardrails: none",
            "--client-threads",
            "4",
            "--trace-id-prefix",
            "3f9c0a17d2b4e861",
            "--out",
            &out_flag,
        ],
        &recs,
    );
    let _ = std::fs::remove_dir_all(&out);
    // What depends on where and how the tests run, fixed.
    let command: Vec<String> = [
        "servebench",
        "run",
        "--model",
        "m1",
        "--workload",
        "fairness-mix",
    ]
    .map(String::from)
    .into();
    r.config.out_dir = "runs/pinned".into();
    r.config.command_line = command.clone();
    r.command_line = command;
    r.tool = tool();
    (r, recs)
}

/// A level's `run.json`, as the test page reads it: the simulator run's, with the level's
/// summary.
fn level_report(summary: &crate::metrics::RunSummary) -> RunReport {
    let mut r: RunReport =
        serde_json::from_str(include_str!("../../tests/fixtures/run-sim/run.json")).unwrap();
    r.summary = summary.clone();
    r.tool = tool();
    r
}

/// `servebench test TEST --quick` on a conformance case, as `test.json` holds it.
fn test_report(test: TestName, case: &str, seed: u64) -> TestReport {
    let case = conformance::case(case).unwrap();
    let (f, _) = conformance::run_test(&case, test, seed).unwrap();
    test_document(test, f)
}

/// What a procedure found, as `servebench test` puts it in `test.json` (its times, tool,
/// command line, target and system fixed).
pub(super) fn test_document(test: TestName, f: Finding) -> TestReport {
    let mut parameters = f.parameters;
    if let Some(obj) = parameters.as_object_mut() {
        obj.insert("budget_s".into(), serde_json::json!(None::<f64>));
    }
    TestReport {
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
        started_at: "2026-11-26T10:00:00.000Z".into(),
        finished_at: "2026-11-26T10:20:00.000Z".into(),
        started_at_us: 1_795_000_000_000_000,
        finished_at_us: 1_795_001_200_000_000,
        duration_s: 1200.0,
        exit_status: if f.answered { 0 } else { 1 },
        interrupted: false,
        tool: tool(),
        command_line: ["servebench", "test", test.slug(), "--quick"]
            .map(String::from)
            .into(),
        target: TargetInfo {
            url: "http://127.0.0.1:8000/v1".into(),
            model: "m1".into(),
            engine: Some("vllm".into()),
            engine_version: Some("0.11.0".into()),
            targets: Default::default(),
        },
        system: SystemInfo {
            hardware: Some("H100 80GB x 2".into()),
            sut_boundary: "engine".into(),
            ..Default::default()
        },
        parameters,
        levels: f.levels,
        result: f.result,
        compliance: f.compliance,
    }
}

/// The levels' `run.json`s of a test, with their folders.
fn levels(r: &TestReport) -> Vec<(String, RunReport)> {
    r.levels
        .iter()
        .map(|l| (l.run.clone(), level_report(&l.summary)))
        .collect()
}

/// A test's entry in `suite.json`, as `servebench suite` writes it.
fn ran(r: &TestReport) -> SuiteTest {
    SuiteTest::Ran(RanTest {
        test: r.test,
        section: r.section.clone(),
        title: r.title.clone(),
        folder: r.test.slug().into(),
        status: r.status,
        answer: r.answer.clone(),
        compliance: r.compliance.verdict,
    })
}

/// A suite of two tests that ran, one skipped and one whose `test.json` is missing.
fn suite(tests: &[TestReport]) -> SuiteDocument {
    let mut entries: Vec<SuiteTest> = tests.iter().map(ran).collect();
    entries.push(SuiteTest::Skipped(SkippedTest {
        test: TestName::Guardrails,
        why: "needs two or more --target configurations (baseline=URL, full=URL, ...)".into(),
    }));
    entries.push(SuiteTest::Ran(RanTest {
        folder: "itl".into(),
        test: TestName::Itl,
        section: TestName::Itl.section().into(),
        title: TestName::Itl.title().into(),
        ..match ran(&tests[0]) {
            SuiteTest::Ran(r) => r,
            SuiteTest::Skipped(_) => unreachable!(),
        }
    }));
    SuiteDocument {
        schema_version: TEST_SCHEMA_VERSION,
        suite: true,
        started_at: "2026-11-26T10:00:00.000Z".into(),
        finished_at: "2026-11-26T11:00:00.000Z".into(),
        command_line: ["servebench", "suite", "--quick"].map(String::from).into(),
        target: tests[0].target.clone(),
        system: tests[0].system.clone(),
        tests: entries,
    }
}

/// The suite per profile's document: one profile ran, one failed, one was skipped.
fn profiles(suite: &SuiteDocument) -> ProfilesDocument {
    ProfilesDocument {
        schema_version: TEST_SCHEMA_VERSION,
        profiles: vec![
            ProfileSuite::Ran {
                profile: "CHAT".into(),
                folder: "chat".into(),
                exit_status: 0,
                tests: suite.tests.clone(),
            },
            ProfileSuite::Failed {
                profile: "EMBED".into(),
                folder: "embed".into(),
                exit_status: 2,
                error: "the suite did not start: the server could not be used for this profile"
                    .into(),
            },
            ProfileSuite::Skipped {
                profile: "SUMM".into(),
                skipped: "interrupted".into(),
            },
        ],
        command_line: ["servebench", "suite", "--profiles", "CHAT,EMBED,SUMM"]
            .map(String::from)
            .into(),
    }
}

/// Repeated runs of one system: the simulator's run with its key figures scaled by `level`
/// (latencies multiplied, throughputs divided), one per seed.
fn system(name: &str, level: f64, seeds: &[u64], norm: Normalisation) -> SystemInput {
    const JITTER: [f64; 5] = [0.0, 0.012, -0.009, 0.004, -0.006];
    let runs = seeds
        .iter()
        .enumerate()
        .map(|(i, &seed)| {
            let mut r = crate::export::fixture::report();
            let j = 1.0 + JITTER[i % JITTER.len()];
            let s = &mut r.summary;
            for (d, p50, p99) in [
                (&mut s.ttft_ms, 100.0, 250.0),
                (&mut s.tpot_ms, 20.0, 30.0),
                (&mut s.e2e_ms, 2000.0, 3000.0),
            ] {
                let d = d.as_mut().unwrap();
                d.p50 = p50 * level * j;
                d.p99 = p99 * level * j;
            }
            s.output_tokens_per_s = 1000.0 / level * j;
            s.requests_per_s = 10.0 / level * j;
            r.config.seed = seed;
            r.tool = tool();
            let t0 = 1_795_000_000_000_000 + (i as u64) * 20_000_000;
            r.started_at_us = t0;
            r.finished_at_us = t0 + 10_000_000;
            RunInput {
                path: format!("runs/{name}-{seed}"),
                report: r,
            }
        })
        .collect();
    SystemInput {
        name: name.into(),
        runs,
        norm,
    }
}

/// Three systems: the baseline, a slower one (five runs each) and one of two runs.
fn systems() -> Vec<SystemInput> {
    let norm = |gpus, cost| Normalisation {
        gpus: Some(gpus),
        cost_per_hour: Some(cost),
    };
    vec![
        system("main", 1.0, &[1, 2, 3, 4, 5], norm(2.0, 8.0)),
        system("pr", 1.2, &[1, 2, 3, 4, 5], norm(2.0, 8.0)),
        system("spot", 0.9, &[1, 2], norm(1.0, 3.5)),
    ]
}

/// Every output of `view`, named `{name}.terminal.txt`, `{name}.json`, `{name}.md` and
/// `{name}.html` (those it has), rendered through the seam.
fn through_the_seam(name: &str, view: &dyn Render) -> Vec<(String, String)> {
    let all = [
        Output::Terminal,
        Output::Json,
        Output::Markdown,
        Output::Html,
    ];
    render_each(view, &all)
        .into_iter()
        .map(|(o, text)| {
            let ext = match o {
                Output::Terminal => "terminal.txt",
                Output::Json => "json",
                Output::Markdown => "md",
                Output::Html => "html",
            };
            (format!("{name}.{ext}"), text)
        })
        .collect()
}

/// Every pinned output, by its fixture file's name.
fn outputs() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (run, records) = run();
    let view = RunView {
        report: &run,
        records: &records,
        detail: false,
    };
    out.extend(through_the_seam("run", &view));
    let detail = RunView {
        detail: true,
        ..view
    };
    out.push(("run.detail.txt".into(), detail.terminal()));
    let curve = test_report(TestName::Curve, "fixed", 1);
    let throughput = test_report(TestName::Throughput, "fixed", 1);
    let reports = levels(&curve);
    let levels: Vec<LevelReport> = reports
        .iter()
        .map(|(folder, report)| LevelReport { folder, report })
        .collect();
    let view = TestView {
        report: &curve,
        levels: &levels,
    };
    out.extend(through_the_seam("test", &view));
    let suite = suite(&[throughput.clone(), curve.clone()]);
    let tests = [Some(throughput), Some(curve), None, None];
    let view = SuiteView {
        suite: &suite,
        tests: &tests,
    };
    out.extend(through_the_seam("suite", &view));
    let doc = profiles(&suite);
    out.extend(through_the_seam("profiles", &ProfilesView { doc: &doc }));
    out.extend(comparison_outputs());
    out
}

/// `compare` (its text, `--json`, `--md` with and without `--html`, `--html`) and `regress`
/// (its text, `--json`).
fn comparison_outputs() -> Vec<(String, String)> {
    let systems = systems();
    let mut report = compare::compare(&systems, &compare::Options::default());
    report.tool = tool();
    let command: Vec<String> = ["servebench", "compare", "main", "pr", "spot"]
        .map(String::from)
        .into();
    let view = ComparisonView {
        report: &report,
        command: &command,
        html_file: "compare.html",
    };
    let mut out = through_the_seam("compare", &view);
    let alone = ComparisonView {
        html_file: "the HTML page (compare --html)",
        ..view
    };
    let md = render(&alone, Output::Markdown).unwrap();
    out.push(("compare.no-html.md".into(), md));
    let gate = compare::regress::gate(&systems[0].runs, &systems[1].runs, 0.05);
    out.extend(through_the_seam("regress", &RegressView { report: &gate }));
    out
}

#[test]
fn every_page_is_the_pinned_one_byte_for_byte() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURES);
    let update = std::env::var_os("SERVEBENCH_UPDATE_PAGES").is_some();
    if update {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let outputs = outputs();
    let mut names: Vec<String> = outputs.iter().map(|o| o.0.clone()).collect();
    names.sort();
    let mut pinned: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pinned.sort();
    assert_eq!(
        names, pinned,
        "every pinned file is rendered, and only those"
    );
    let mut differ = Vec::new();
    for (name, now) in outputs {
        let path = dir.join(&name);
        if update {
            std::fs::write(&path, &now).unwrap();
        }
        let pinned = std::fs::read_to_string(&path).unwrap_or_default();
        if pinned != now {
            let first = pinned
                .lines()
                .zip(now.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b)
                .map(|(i, (a, b))| format!("line {}:\n  pinned: {a}\n  now:    {b}", i + 1))
                .unwrap_or_else(|| "one is a prefix of the other".into());
            differ.push(format!("{name}, {first}"));
        }
    }
    assert!(
        differ.is_empty(),
        "outputs differ from {FIXTURES}:\n{}\n(after a deliberate change: SERVEBENCH_UPDATE_PAGES=1 cargo test --lib pages, and review the diff)",
        differ.join("\n")
    );
}

#[test]
fn the_pinned_outputs_are_the_same_twice() {
    // Nothing in them depends on the clock, the machine or the order tests run in.
    let a = outputs();
    let b = outputs();
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        let first = x
            .lines()
            .zip(y.lines())
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("{a}\n{b}"));
        assert!(x == y, "{name} differs between two renderings: {first:?}");
    }
}
