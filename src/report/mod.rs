//! How results read: the terminal report (the draft's Appendix C.1 minimum report first, the
//! full tables on request); `report.md` and `report.html` (the verdict, key numbers and
//! TTFT and throughput charts, then the C.1 report, then the C.2 full report with the
//! draft's tables and charts: `run_page` builds it as a `page`, which renders to both); and
//! `run.json`, a typed document with a committed JSON Schema.
//!
//! Pure: everything renders from a [`crate::artifacts::RunReport`] (and the per-request values of
//! `run_page::RunData`) into a `String` or a serialisable value; the caller gathers the
//! facts (host, server) and decides where output goes.

pub mod chart;
pub mod json;
pub mod page;
pub mod profiles;
pub mod run_page;
pub mod schema;
pub mod tables;
pub mod terminal;
pub mod test_page;
pub mod test_tables;

#[cfg(test)]
mod pages_tests;
