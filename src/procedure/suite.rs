//! `suite.json` and `profiles.json`: the contracts `servebench suite` leaves (documented in
//! docs/procedures.md, with the JSON Schemas `docs/suite.schema.json` and
//! `docs/profiles.schema.json` generated from these types by `report::schema`).
//!
//! A suite folder holds one test folder per test that ran; `suite.json` lists every test,
//! ran or skipped, with its answer and compliance verdict, so a script reads the whole suite
//! from one file. `suite --profiles` runs a suite per workload profile and lists them in
//! `profiles.json`. Both are written and read through these types only.
//!
//! Both files have always been written with the keys of every object in byte order (they
//! were built as `serde_json::Value`s), so [`pretty_json`] writes them through a `Value`:
//! the files keep their bytes, and folders written before the types read back.

use super::compliance::Verdict;
use super::report::{TargetInfo, TestStatus};
use super::TestName;
use crate::artifacts::SystemInfo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The order a suite runs in: throughput first, since its capacity feeds the others.
pub const ORDER: [TestName; 10] = [
    TestName::Throughput,
    TestName::Ttft,
    TestName::Curve,
    TestName::Itl,
    TestName::Capacity,
    TestName::MemoryPressure,
    TestName::Fairness,
    TestName::PrefixCache,
    TestName::LongContext,
    TestName::Guardrails,
];

/// Everything `suite.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuiteDocument {
    /// Version of the layout: the same as `test.json`'s.
    pub schema_version: u32,
    /// Always `true`: the document is a suite's.
    pub suite: bool,
    /// ISO 8601 UTC with milliseconds.
    pub started_at: String,
    /// ISO 8601 UTC with milliseconds.
    pub finished_at: String,
    /// The exact command line, credentials redacted.
    pub command_line: Vec<String>,
    /// The system under test.
    pub target: TargetInfo,
    /// What the system is, as the user described it.
    pub system: SystemInfo,
    /// Every test of the suite, in the order run.
    pub tests: Vec<SuiteTest>,
}

/// A test's entry in `suite.json`: it ran (its folder holds its `test.json`), or the suite
/// skipped it and says why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SuiteTest {
    /// The test ran.
    Ran(RanTest),
    /// The suite skipped the test.
    Skipped(SkippedTest),
}

/// A test that ran, as `suite.json` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RanTest {
    /// The test's name (`servebench test NAME`).
    pub test: TestName,
    /// The draft's section, e.g. `5.2`.
    pub section: String,
    /// The draft's title of the test.
    pub title: String,
    /// The test's folder, relative to the suite folder.
    pub folder: String,
    /// How the test ended.
    pub status: TestStatus,
    /// The one-line answer.
    pub answer: String,
    /// The compliance verdict over the test's requirements.
    pub compliance: Verdict,
}

/// A test the suite skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SkippedTest {
    /// The test's name.
    pub test: TestName,
    /// Why it was skipped (`interrupted`, or what it needs).
    #[serde(rename = "skipped")]
    pub why: String,
}

impl SuiteTest {
    /// The test's name.
    pub fn test(&self) -> TestName {
        match self {
            Self::Ran(r) => r.test,
            Self::Skipped(s) => s.test,
        }
    }

    /// The test's folder, relative to the suite folder, when it ran.
    pub fn folder(&self) -> Option<&str> {
        match self {
            Self::Ran(r) => Some(&r.folder),
            Self::Skipped(_) => None,
        }
    }

    /// Why the suite skipped the test, when it did.
    pub fn skipped(&self) -> Option<&str> {
        match self {
            Self::Ran(_) => None,
            Self::Skipped(s) => Some(&s.why),
        }
    }
}

/// Everything `profiles.json` (`suite --profiles`) holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfilesDocument {
    /// Version of the layout: the same as `test.json`'s.
    pub schema_version: u32,
    /// One entry per profile, in the order run.
    pub profiles: Vec<ProfileSuite>,
    /// The exact command line, credentials redacted.
    pub command_line: Vec<String>,
}

/// A profile's entry in `profiles.json`: its suite's tests, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ProfileSuite {
    /// The profile's suite ran.
    Ran {
        /// The profile's id, e.g. `CHAT`.
        profile: String,
        /// Its suite folder, relative to the top folder.
        folder: String,
        /// The exit status of its suite.
        exit_status: u8,
        /// Its suite's tests, as its `suite.json` lists them.
        tests: Vec<SuiteTest>,
    },
    /// The profile's suite could not start.
    Failed {
        /// The profile's id.
        profile: String,
        /// Its suite folder, relative to the top folder.
        folder: String,
        /// The exit status of its suite (2: unusable configuration or target).
        exit_status: u8,
        /// Why it did not start.
        error: String,
    },
    /// The profile was skipped (Ctrl-C before its turn).
    Skipped {
        /// The profile's id.
        profile: String,
        /// Why.
        skipped: String,
    },
}

impl ProfileSuite {
    /// The profile's id.
    pub fn profile(&self) -> &str {
        match self {
            Self::Ran { profile, .. } | Self::Failed { profile, .. } => profile,
            Self::Skipped { profile, .. } => profile,
        }
    }
}

/// A document as its file holds it: pretty JSON with the keys of every object in byte
/// order (see the module documentation).
pub fn pretty_json(doc: &impl Serialize) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec_pretty(&serde_json::to_value(doc)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `suite.json` as `servebench suite` wrote it before the types (with
    /// `serde_json::json!`): it reads, and writes back byte for byte.
    const SUITE_JSON: &str = r#"{
  "command_line": [
    "servebench",
    "suite",
    "--sim-preset",
    "fast"
  ],
  "finished_at": "2026-11-26T10:00:09.000Z",
  "schema_version": 1,
  "started_at": "2026-11-26T10:00:00.000Z",
  "suite": true,
  "system": {
    "gpus": null,
    "hardware": null,
    "notes": [],
    "sut_boundary": "engine"
  },
  "target": {
    "engine": "servebench-sim",
    "engine_version": "0.1.0",
    "model": "sim-fast",
    "url": "http://127.0.0.1:40117/v1"
  },
  "tests": [
    {
      "answer": "sustainable: 120 req/s",
      "compliance": "conditionally compliant",
      "folder": "throughput",
      "section": "5.2",
      "status": "complete",
      "test": "throughput",
      "title": "Output Token Throughput"
    },
    {
      "skipped": "needs two or more --target configurations (baseline=URL, full=URL, ...)",
      "test": "guardrails"
    }
  ]
}"#;

    #[test]
    fn a_suite_json_reads_and_writes_back_byte_for_byte() {
        let doc: SuiteDocument = serde_json::from_str(SUITE_JSON).unwrap();
        assert_eq!(doc.tests.len(), 2);
        assert_eq!(doc.tests[0].test(), TestName::Throughput);
        assert_eq!(doc.tests[0].folder(), Some("throughput"));
        assert_eq!(doc.tests[1].test(), TestName::Guardrails);
        assert!(doc.tests[1].skipped().unwrap().starts_with("needs two"));
        let SuiteTest::Ran(ran) = &doc.tests[0] else {
            panic!("the first test ran")
        };
        assert_eq!(
            (ran.status, ran.compliance),
            (TestStatus::Complete, Verdict::ConditionallyCompliant)
        );
        assert_eq!(
            String::from_utf8(pretty_json(&doc).unwrap()).unwrap(),
            SUITE_JSON
        );
    }

    #[test]
    fn a_profiles_json_reads_every_kind_of_entry_and_writes_back_byte_for_byte() {
        let text = r#"{
  "command_line": [
    "servebench",
    "suite",
    "--profiles",
    "chat,embed,logpr"
  ],
  "profiles": [
    {
      "exit_status": 0,
      "folder": "chat",
      "profile": "CHAT",
      "tests": [
        {
          "skipped": "interrupted",
          "test": "ttft"
        }
      ]
    },
    {
      "error": "the suite did not start",
      "exit_status": 2,
      "folder": "embed",
      "profile": "EMBED"
    },
    {
      "profile": "LOGPR",
      "skipped": "interrupted"
    }
  ],
  "schema_version": 1
}"#;
        let doc: ProfilesDocument = serde_json::from_str(text).unwrap();
        assert!(matches!(&doc.profiles[0], ProfileSuite::Ran { tests, .. } if tests.len() == 1));
        assert!(matches!(
            &doc.profiles[1],
            ProfileSuite::Failed { exit_status: 2, .. }
        ));
        assert!(matches!(&doc.profiles[2], ProfileSuite::Skipped { .. }));
        let ids: Vec<&str> = doc.profiles.iter().map(ProfileSuite::profile).collect();
        assert_eq!(ids, ["CHAT", "EMBED", "LOGPR"]);
        assert_eq!(String::from_utf8(pretty_json(&doc).unwrap()).unwrap(), text);
    }
}
