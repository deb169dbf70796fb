//! The JSON Schemas of the documents servebench writes, generated from the very types they
//! are serialised from, so the committed files under `docs/` cannot drift from the code
//! unnoticed (a test compares them, and others validate real output against the committed
//! files):
//!
//! - `docs/run.schema.json`: `run.json` ([`RunReport`]);
//! - `docs/requests.schema.json`: one line of `requests.jsonl` ([`WireRecord`]);
//! - `docs/test.schema.json`: `test.json` ([`TestReport`]), its `result` the type of its
//!   `test` (the variant of `procedure::TestResult` it is read as);
//! - `docs/suite.schema.json`: `suite.json` ([`SuiteDocument`]);
//! - `docs/profiles.schema.json`: `profiles.json` of `suite --profiles`
//!   ([`ProfilesDocument`]).
//!
//! To update them after changing the types: `SERVEBENCH_UPDATE_SCHEMA=1 cargo test --lib
//! schema`, and review the diff.

use crate::artifacts::RunReport;
use crate::procedure::report::TestReport;
use crate::procedure::suite::{ProfilesDocument, SuiteDocument};
use crate::procedure::{self, TestName};
use crate::record::wire::WireRecord;
use schemars::JsonSchema;
use std::borrow::Cow;

/// One committed schema: its file under `docs/` and how to make it.
#[derive(Debug, Clone, Copy)]
pub struct CommittedSchema {
    /// The file name under `docs/`, e.g. `run.schema.json`.
    pub file: &'static str,
    /// The schema as generated from the types.
    pub generate: fn() -> serde_json::Value,
}

/// Every schema committed under `docs/`.
pub const COMMITTED: [CommittedSchema; 5] = [
    CommittedSchema {
        file: "run.schema.json",
        generate: run_schema,
    },
    CommittedSchema {
        file: "requests.schema.json",
        generate: requests_schema,
    },
    CommittedSchema {
        file: "test.schema.json",
        generate: test_schema,
    },
    CommittedSchema {
        file: "suite.schema.json",
        generate: suite_schema,
    },
    CommittedSchema {
        file: "profiles.schema.json",
        generate: profiles_schema,
    },
];

impl CommittedSchema {
    /// The schema as it is committed: pretty JSON with a final newline.
    pub fn text(&self) -> String {
        serde_json::to_string_pretty(&(self.generate)()).expect("a schema always serialises") + "\n"
    }
}

/// `schema` with its `$id` (from `file`) and `description`.
fn named(mut schema: serde_json::Value, file: &str, description: String) -> serde_json::Value {
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "$id".into(),
            format!("https://servebench.dev/schemas/{file}").into(),
        );
        obj.insert("description".into(), description.into());
    }
    schema
}

fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("a schema always serialises")
}

/// The schema of `run.json` (JSON Schema 2020-12).
pub fn run_schema() -> serde_json::Value {
    named(
        schema_of::<RunReport>(),
        "run.schema.json",
        format!(
            "run.json of servebench, schema_version {} (docs/run.md describes every field)",
            crate::artifacts::SCHEMA_VERSION
        ),
    )
}

/// The schema of `run.json` as it is committed.
pub fn run_schema_text() -> String {
    COMMITTED[0].text()
}

/// The schema of one line of `requests.jsonl` (JSON Schema 2020-12).
pub fn requests_schema() -> serde_json::Value {
    named(
        schema_of::<WireRecord>(),
        "requests.schema.json",
        format!(
            "One line of requests.jsonl of servebench, schema_version {} (docs/run.md describes every field)",
            crate::artifacts::SCHEMA_VERSION
        ),
    )
}

/// The schema of `test.json` (JSON Schema 2020-12). Its `result` is any test's result
/// (`procedure::TestResult` is untagged); one rule per test says which: the result of a document
/// whose `test` is `ttft` is a `TtftResult`, and so on.
pub fn test_schema() -> serde_json::Value {
    let mut schema = named(
        schema_of::<TestReport>(),
        "test.schema.json",
        format!(
            "test.json of servebench test, schema_version {} (docs/procedures.md describes it)",
            crate::procedure::report::TEST_SCHEMA_VERSION
        ),
    );
    let rules: Vec<serde_json::Value> = <TestName as clap::ValueEnum>::value_variants()
        .iter()
        .map(|&test| {
            serde_json::json!({
                "if": {
                    "properties": {"test": {"const": test}},
                    "required": ["test"]
                },
                "then": {
                    "properties": {"result": {"$ref": format!("#/$defs/{}", result_schema(test))}}
                }
            })
        })
        .collect();
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("allOf".into(), rules.into());
    }
    schema
}

/// The name in the schema's `$defs` of `test`'s result type (the variant of
/// `procedure::TestResult` that `TestResult::read` reads it as).
fn result_schema(test: TestName) -> Cow<'static, str> {
    use procedure::*;
    match test {
        TestName::Ttft => ttft::TtftResult::schema_name(),
        TestName::Throughput => throughput::ThroughputResult::schema_name(),
        TestName::Curve => curve::CurveResult::schema_name(),
        TestName::Itl => itl::ItlResult::schema_name(),
        TestName::Capacity => capacity::CapacityResult::schema_name(),
        TestName::Fairness => fairness::FairnessResult::schema_name(),
        TestName::PrefixCache => prefix_cache::PrefixCacheResult::schema_name(),
        TestName::MemoryPressure => memory::MemoryResult::schema_name(),
        TestName::LongContext => long_context::LongContextResult::schema_name(),
        TestName::Guardrails => guardrails::GuardrailResult::schema_name(),
    }
}

/// The schema of `suite.json` (JSON Schema 2020-12).
pub fn suite_schema() -> serde_json::Value {
    named(
        schema_of::<SuiteDocument>(),
        "suite.schema.json",
        format!(
            "suite.json of servebench suite, schema_version {} (docs/procedures.md describes it)",
            crate::procedure::report::TEST_SCHEMA_VERSION
        ),
    )
}

/// The schema of `profiles.json` (JSON Schema 2020-12).
pub fn profiles_schema() -> serde_json::Value {
    named(
        schema_of::<ProfilesDocument>(),
        "profiles.schema.json",
        format!(
            "profiles.json of servebench suite --profiles, schema_version {} (docs/procedures.md describes it)",
            crate::procedure::report::TEST_SCHEMA_VERSION
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every committed schema under `docs/` is the schema of the current types. To update
    /// them after changing the types: `SERVEBENCH_UPDATE_SCHEMA=1 cargo test --lib schema`.
    #[test]
    fn the_committed_schema_matches_the_types() {
        let update = std::env::var_os("SERVEBENCH_UPDATE_SCHEMA").is_some();
        let mut stale = Vec::new();
        for schema in COMMITTED {
            let path = format!("{}/docs/{}", env!("CARGO_MANIFEST_DIR"), schema.file);
            let generated = schema.text();
            if update {
                std::fs::write(&path, &generated).unwrap();
            }
            if std::fs::read_to_string(&path).unwrap_or_default() != generated {
                stale.push(schema.file);
            }
        }
        assert!(
            stale.is_empty(),
            "docs/{stale:?} out of date: run SERVEBENCH_UPDATE_SCHEMA=1 cargo test --lib schema, and review the diff"
        );
    }

    /// The records of a real simulator run (`tests/fixtures/run-sim`) and records built
    /// with every optional part (failure, reasoning, media, server timings, sessions)
    /// validate against the committed `docs/requests.schema.json`; a line missing a
    /// required field or with a mistyped one does not.
    #[test]
    fn records_validate_against_the_committed_requests_schema() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/requests.schema.json"
        ))
        .unwrap();
        let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
        let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
        let fixture = include_str!("../../tests/fixtures/run-sim/requests.jsonl");
        let mut lines: Vec<serde_json::Value> = fixture
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(lines.len() > 10);
        lines.extend(
            every_part()
                .iter()
                .map(|r| serde_json::to_value(WireRecord::from_record(r, &clock())).unwrap()),
        );
        for line in &lines {
            let errors: Vec<String> = validator
                .iter_errors(line)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{errors:#?}\n{line}");
        }
        let mut broken = lines[0].clone();
        broken.as_object_mut().unwrap().remove("finished_at_us");
        assert!(!validator.is_valid(&broken), "a required field");
        let mut broken = lines[0].clone();
        broken["outcome"] = serde_json::json!({"kind": "no_such_kind", "detail": ""});
        assert!(!validator.is_valid(&broken), "an unknown failure kind");
    }

    fn committed(file: &str) -> jsonschema::Validator {
        let path = format!("{}/docs/{file}", env!("CARGO_MANIFEST_DIR"));
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).expect("a valid JSON Schema")
    }

    /// What each of the ten procedures finds, run as `servebench test NAME --quick` in
    /// virtual time on the conformance engine (`procedure::conformance`): fairness and
    /// memory pressure too, on an engine that has no request classes and no KV cache to
    /// read (their results' empty parts are documents too).
    fn every_finding() -> Vec<(TestName, procedure::report::Finding)> {
        use crate::procedure::conformance::{self, options_for, readings, VirtualBench};
        use procedure::{fairness, guardrails, memory};
        let fixed = conformance::case("fixed").unwrap();
        let mut out = Vec::new();
        let cases = [
            (TestName::Ttft, fixed.clone()),
            (TestName::Throughput, fixed.clone()),
            (TestName::Curve, fixed.clone()),
            (TestName::Itl, fixed.clone()),
            (TestName::Capacity, fixed.clone()),
            (TestName::LongContext, readings::exponent_case(false)),
            (TestName::PrefixCache, readings::prefix_case()),
        ];
        for (test, case) in cases {
            out.push((test, conformance::run_test(&case, test, 1).unwrap().0));
        }
        let (case, targets) = readings::guardrail_case();
        let mut o = options_for(true, None, case.workload.clone(), 1);
        o.targets = targets.iter().map(|(n, _)| n.to_string()).collect();
        let mut bench = VirtualBench::new(case.sim.clone(), &o).unwrap();
        for (name, sim) in &targets {
            bench = bench.with_target(name, sim.clone());
        }
        out.push((TestName::Guardrails, guardrails::run(&mut bench, &o)));
        let o = options_for(true, None, fixed.workload.clone(), 1);
        let mut bench = VirtualBench::new(fixed.sim.clone(), &o).unwrap();
        out.push((TestName::Fairness, fairness::run(&mut bench, &o)));
        out.push((TestName::MemoryPressure, memory::run(&mut bench, &o)));
        out
    }

    /// `test.json` as `servebench test` writes it, from every test's result, validates
    /// against the committed `docs/test.schema.json` and reads back typed; another test's
    /// result, an unknown status or a missing field do not validate.
    #[test]
    fn test_json_of_every_test_validates_against_the_committed_test_schema() {
        use crate::report::output::{render, Output};
        use crate::report::views::TestView;
        let validator = committed("test.schema.json");
        let mut docs = Vec::new();
        for (test, finding) in every_finding() {
            let report = crate::report::pages_tests::test_document(test, finding);
            let view = TestView {
                report: &report,
                levels: &[],
            };
            let text = render(&view, Output::Json).unwrap();
            let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&doc)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{test}: {errors:#?}");
            let back = crate::procedure::report::read_test_json(&text).unwrap();
            assert_eq!(back.result, report.result, "{test}");
            docs.push(doc);
        }
        assert_eq!(docs.len(), 10);
        let by = |slug: &str| docs.iter().find(|d| d["test"] == slug).unwrap().clone();
        let mut broken = by("ttft");
        broken["result"] = by("curve")["result"].clone();
        assert!(
            !validator.is_valid(&broken),
            "a curve's result in a ttft test"
        );
        let mut broken = by("throughput");
        broken["status"] = serde_json::json!("finished");
        assert!(!validator.is_valid(&broken), "an unknown status");
        let mut broken = by("capacity");
        broken.as_object_mut().unwrap().remove("levels");
        assert!(!validator.is_valid(&broken), "a required field");
    }

    fn clock() -> crate::clock::RunClock {
        crate::clock::RunClock::with_anchor(std::time::Instant::now(), 1_795_000_000_000_000)
    }

    /// Records with each optional part of a line set.
    fn every_part() -> Vec<crate::record::RequestRecord> {
        use crate::record::*;
        let chunk = |at, tokens| Chunk {
            at,
            tokens,
            bytes: 4,
        };
        let full = RequestRecord {
            class: Some("chat".into()),
            session: Some((3, 1)),
            session_steps: 4,
            branch: 1,
            planned_tool_ms: 120.0,
            planned_think_ms: 800.0,
            response_id: Some("chatcmpl-1".into()),
            scheduled_at: Some(1_000),
            sent_at: Some(2_000),
            body_sent_at: Some(2_500),
            body_bytes: 4_096,
            first_byte_at: Some(3_000_000),
            chunks: vec![chunk(4_000_000, 0), chunk(5_000_000, 2)],
            first_content: Some(1),
            reasoning_chunks: vec![chunk(3_500_000, 3)],
            finished_at: 6_000_000,
            http_status: Some(200),
            input_tokens: 300,
            input_tokens_source: InputTokenSource::ServerUsage,
            text_input_tokens: Some(40),
            media: MediaCounts {
                images: 1,
                image_bytes: 2_000,
                audio: 1,
                audio_bytes: 9_000,
            },
            output_tokens: 5,
            reasoning_tokens: 3,
            max_tokens: 64,
            items: 2,
            finish_reason: Some("tool_calls".into()),
            tool_calls: 1,
            usage: Some(serde_json::json!({"prompt_tokens": 300, "completion_tokens": 5})),
            server_timing: Some(ServerTiming {
                prompt_n: Some(300),
                prompt_ms: Some(12.5),
                token_times_ms: Some(vec![1.0, 2.0]),
                ..Default::default()
            }),
            derived: Some(Derived {
                ttft_ms: Some(4.0),
                tpot_ms: Some(1.0),
                e2e_ms: Some(5.0),
                user_idle_ms: 0.5,
                deadline_misses: 1,
                fluidity: Some(0.9),
            }),
            retries: 1,
            ..Default::default()
        };
        let failed = RequestRecord {
            outcome: Outcome::failed(FailureKind::Connect, "connection refused"),
            phase: Phase::Warmup,
            ..Default::default()
        };
        let blank = RequestRecord {
            chunks: vec![chunk(1_000, 1)],
            first_content: None,
            ..Default::default()
        };
        vec![full, failed, blank]
    }
}
