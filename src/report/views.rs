//! One view per document servebench shows, each a [`Render`]: the document (its type owned
//! by the stage that makes it: `artifacts`, `procedure`, `compare`) and what its rendering
//! needs beyond it (a run's records for its charts, a test's level reports, the command
//! line of a comparison). Adding an output means one arm in each `impl` here.
//!
//! Pure: the callers read whatever a view needs from disk and write what it renders
//! (`pipeline::pages::write`).

use super::comparison;
use super::output::{Files, Render};
use super::page::{Page, Section};
use super::run_page::{self, RunData};
use super::test_page::{self, LevelReport, SuiteEntry};
use super::{json, profiles, tables, terminal, test_tables};
use crate::artifacts::RunReport;
use crate::compare::regress::RegressionReport;
use crate::compare::ComparisonReport;
use crate::procedure::report::TestReport;
use crate::procedure::suite::{pretty_json, ProfilesDocument, SuiteDocument, SuiteTest};
use crate::record::RequestRecord;
use crate::store::folder::{RunFolder, SuiteFolder, TestFolder, PROFILES_JSON};
use crate::store::folder::{REPORT_HTML, REPORT_MD};
use serde::Serialize;
use std::path::Path;

/// `serde_json`'s pretty form of a document.
fn pretty(doc: &impl Serialize) -> String {
    serde_json::to_string_pretty(doc).expect("a document always serialises")
}

/// A document through a `serde_json::Value`, keys in byte order (`suite.json`,
/// `profiles.json`: see `procedure::suite`).
fn sorted(doc: &impl Serialize) -> String {
    let bytes = pretty_json(doc).expect("a document always serialises");
    String::from_utf8(bytes).expect("JSON is UTF-8")
}

/// A run (`servebench run`, `report RUN_DIR`, a merged run): `run.json` and the records
/// its page charts (none needed for the terminal or the JSON).
pub struct RunView<'a> {
    pub report: &'a RunReport,
    pub records: &'a [RequestRecord],
    /// The terminal shows every table (`--detail`), not only the minimum report.
    pub detail: bool,
}

impl Render for RunView<'_> {
    fn terminal(&self) -> String {
        match self.detail {
            true => terminal::render_detail(self.report),
            false => terminal::render(self.report),
        }
    }

    fn json(&self) -> String {
        pretty(&json::run_json(self.report))
    }

    fn page(&self) -> Option<Page> {
        let data = RunData::of(self.report, self.records);
        Some(run_page::page(self.report, &data))
    }

    fn files(&self, dir: &Path) -> Files {
        let f = RunFolder::new(dir);
        Files::of(f.run_json(), f.report_md(), f.report_html())
    }
}

/// A test (`servebench test NAME`, `report TEST_DIR`): `test.json` and the `run.json` of
/// each level whose folder could be read.
pub struct TestView<'a> {
    pub report: &'a TestReport,
    pub levels: &'a [LevelReport<'a>],
}

impl Render for TestView<'_> {
    fn terminal(&self) -> String {
        test_tables::render(self.report)
    }

    fn json(&self) -> String {
        pretty(self.report)
    }

    fn page(&self) -> Option<Page> {
        Some(test_page::page(self.report, self.levels))
    }

    fn files(&self, dir: &Path) -> Files {
        let f = TestFolder::new(dir);
        Files::of(f.test_json(), f.report_md(), f.report_html())
    }
}

/// A suite (`servebench suite`, `report SUITE_DIR`): `suite.json` and, per test in its
/// order, its `test.json` when it ran and could be read (the page shows a test without one
/// as such; the terminal and the JSON need none).
pub struct SuiteView<'a> {
    pub suite: &'a SuiteDocument,
    pub tests: &'a [Option<TestReport>],
}

impl Render for SuiteView<'_> {
    /// Each test's answer and compliance, or why it was skipped, a line each.
    fn terminal(&self) -> String {
        let mut out = String::from("\nSuite\n");
        for e in &self.suite.tests {
            out.push_str(&match e {
                SuiteTest::Skipped(s) => format!("  {:<16} skipped: {}\n", s.test.slug(), s.why),
                SuiteTest::Ran(r) => format!(
                    "  {:<16} {} [{}]\n",
                    r.test.slug(),
                    r.answer,
                    r.compliance.words()
                ),
            });
        }
        out
    }

    fn json(&self) -> String {
        sorted(self.suite)
    }

    fn page(&self) -> Option<Page> {
        let entries: Vec<SuiteEntry> = self
            .suite
            .tests
            .iter()
            .enumerate()
            .map(|(i, e)| SuiteEntry {
                test: e.test().slug(),
                folder: e.folder(),
                report: self.tests.get(i).and_then(Option::as_ref),
                skipped: e.skipped(),
            })
            .collect();
        let s = self.suite;
        let target = format!("{} on {}", s.target.model, s.target.url);
        Some(test_page::suite_page(&target, &s.started_at, &entries))
    }

    fn files(&self, dir: &Path) -> Files {
        let f = SuiteFolder::new(dir);
        Files::of(f.suite_json(), f.report_md(), f.report_html())
    }
}

/// The suite per workload profile (`suite --profiles`): `profiles.json`, each profile's
/// answers side by side.
pub struct ProfilesView<'a> {
    pub doc: &'a ProfilesDocument,
}

impl Render for ProfilesView<'_> {
    fn terminal(&self) -> String {
        let table = profiles::suites_table(&self.doc.profiles);
        format!("\n{}\n", tables::to_terminal(&table))
    }

    fn json(&self) -> String {
        sorted(self.doc)
    }

    fn page(&self) -> Option<Page> {
        let table = profiles::suites_table(&self.doc.profiles);
        Some(
            Page::new("Suite per workload profile")
                .section(Section::new("profiles", "Answers per profile").table(table)),
        )
    }

    fn files(&self, dir: &Path) -> Files {
        Files::of(
            dir.join(PROFILES_JSON),
            dir.join(REPORT_MD),
            dir.join(REPORT_HTML),
        )
    }
}

/// A comparison (`servebench compare`): its report, the command line as typed (shown under
/// "How to reproduce") and what the Markdown calls the HTML page beside it.
pub struct ComparisonView<'a> {
    pub report: &'a ComparisonReport,
    pub command: &'a [String],
    pub html_file: &'a str,
}

impl Render for ComparisonView<'_> {
    fn terminal(&self) -> String {
        comparison::text::render(self.report)
    }

    /// As `compare --json` prints it, with a final newline.
    fn json(&self) -> String {
        pretty(self.report) + "\n"
    }

    fn page(&self) -> Option<Page> {
        let page = comparison::page::page(self.report, self.command);
        Some(page.html_file(self.html_file))
    }

    /// None: a comparison has no folder; `--md` and `--html` name its pages.
    fn files(&self, _dir: &Path) -> Files {
        Files::default()
    }
}

/// The regression gate (`servebench regress`): lines and JSON, no page.
pub struct RegressView<'a> {
    pub report: &'a RegressionReport,
}

impl Render for RegressView<'_> {
    fn terminal(&self) -> String {
        comparison::regress::render(self.report)
    }

    /// As `regress --json` prints it, with a final newline.
    fn json(&self) -> String {
        pretty(self.report) + "\n"
    }

    fn page(&self) -> Option<Page> {
        None
    }

    fn files(&self, _dir: &Path) -> Files {
        Files::default()
    }
}
