//! How results read. Every document servebench shows renders here, through one seam
//! (`output`): the [`output::Render`] trait gives each document's outputs ([`output::Output`]:
//! the terminal's text, its JSON, its page as Markdown and HTML), and `views` holds one
//! implementation per document: a run (`run.json`, the terminal report, `report.md` and
//! `report.html` from `run_page`), a test and a suite (`test_tables`, `test_page`), a suite
//! per profile (`profiles`), a comparison and the regression gate (`comparison`).
//!
//! Pure: everything renders from the documents (a [`crate::artifacts::RunReport`], a
//! `procedure::report::TestReport`, a `compare::ComparisonReport`, …) and what a view
//! carries beside them into a `String`; the caller gathers the facts (host, server) and
//! `pipeline::pages::write` decides nothing but where the text goes.

pub mod bounded;
pub mod chart;
pub mod comparison;
pub mod json;
pub mod output;
pub mod page;
pub mod profiles;
pub mod run_page;
pub mod schema;
pub mod tables;
pub mod terminal;
pub mod test_page;
pub mod test_tables;
pub mod views;

#[cfg(test)]
mod pages_tests;
