//! Figures that used to mislead, each checked end to end against the simulator: the
//! measurement window across a server restart, fluidity's isolated prefill deadline, reasoning
//! tokens, and the two SLO forms.

use crate::common::{config, generator, run, temp_dir};
use servebench::metrics::fluidity::FluidRate;
use servebench::record::{FailureKind, Phase};
use servebench::sim::{SimConfig, SimServer};
use std::time::{Duration, Instant};

/// Polls (with a deadline) until `f` holds.
fn wait_until(what: &str, deadline: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < deadline, "timed out waiting for {what}");
        // Poll, leaving the cores to the servers under test.
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Stop the target mid-run and start it again: requests fail to connect while it is down,
/// and every figure still matches what the servers really did. Before, a request that never
/// connected kept `sent_at` = 0 and the window started at the clock's origin, before warm-up.
#[test]
fn a_server_restart_mid_run_leaves_the_figures_true() {
    // Short answers (5 ms + 9 × 0.2 ms): at most one is in flight when the server goes down.
    let sim = SimServer::spawn(SimConfig::fixed(5.0, 0.2), 0).unwrap();
    let port = sim.addr().port();
    let url = sim.base_url();
    let out_dir = temp_dir("restart");
    let cfg = config(
        &url,
        &[
            "--rate",
            "100",
            "--arrival",
            "constant",
            "--duration",
            "2s",
            "--warmup",
            "30",
            "--input-tokens",
            "16",
            "--output-tokens",
            "10",
        ],
        &out_dir,
    );
    let runner = std::thread::spawn(move || run(&cfg));
    // Down once 100 requests (30 of warm-up) reached the first server...
    let first_log = sim.truth().clone();
    wait_until("100 requests", Duration::from_secs(30), || {
        first_log.len() >= 100
    });
    sim.shutdown();
    let first_truth = first_log.take();
    // ...until the run has recorded at least one refused connection.
    let jsonl = out_dir.join("requests.jsonl");
    wait_until("a connect failure", Duration::from_secs(30), || {
        std::fs::read_to_string(&jsonl).is_ok_and(|t| t.contains("\"connect\""))
    });
    let second = SimServer::spawn(SimConfig::fixed(5.0, 0.2), port).unwrap();
    let (out, s) = runner.join().unwrap();
    let seen_first: std::collections::HashSet<String> =
        first_truth.iter().map(|t| t.response_id.clone()).collect();
    let answered_by_second = out
        .records
        .iter()
        .filter(|r| r.outcome.is_ok())
        .filter(|r| {
            r.response_id
                .as_ref()
                .is_some_and(|id| !seen_first.contains(id))
        })
        .count();
    let truth: Vec<_> = first_truth
        .into_iter()
        .chain(
            second
                .truth()
                .wait_for(answered_by_second, Duration::from_secs(10)),
        )
        .collect();

    assert!(s.requests.never_sent >= 1, "{:?}", s.requests);
    assert!(s.failures.by_kind[&FailureKind::Connect] >= 1);
    // The truth: tokens the servers wrote to measured requests, over the span from the first
    // measured request's planned send to the last measured byte written.
    let measured: std::collections::HashSet<String> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .filter_map(|r| r.response_id.clone())
        .collect();
    let tokens: u64 = truth
        .iter()
        .filter(|t| measured.contains(&t.response_id))
        .map(|t| t.chunk_writes.iter().map(|w| w.1 as u64).sum::<u64>())
        .sum();
    let start = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .map(|r| r.scheduled_at.unwrap())
        .min()
        .unwrap();
    let end = truth
        .iter()
        .filter(|t| measured.contains(&t.response_id))
        .filter_map(|t| t.chunk_writes.last().map(|w| out.clock.offset_of(w.0)))
        .max()
        .unwrap();
    let true_rate = tokens as f64 / ((end - start) as f64 / 1e9);
    eprintln!(
        "tokens client {} truth {tokens}; window client {:.4} s truth {:.4} s",
        s.total_output_tokens,
        s.window.duration_s,
        (end - start) as f64 / 1e9
    );
    let ratio = s.output_tokens_per_s / true_rate;
    assert!(
        (ratio - 1.0).abs() < 0.02,
        "reported {} vs true {true_rate}",
        s.output_tokens_per_s
    );
    let completed = truth
        .iter()
        .filter(|t| measured.contains(&t.response_id) && !t.cut)
        .count() as f64;
    let true_rps = completed / ((end - start) as f64 / 1e9);
    assert!(
        (s.requests_per_s / true_rps - 1.0).abs() < 0.02,
        "{} vs {true_rps}",
        s.requests_per_s
    );
    drop(second);
}

/// The prefill deadline comes from isolated requests, so the same server at a low and at a
/// saturating load is judged against the same D_p, and the saturated run's queued requests
/// miss it. Before, D_p was fitted from each run's own TTFTs and queueing moved it.
#[test]
fn fluidity_judges_two_loads_against_the_same_isolated_deadline() {
    let _cpu = crate::common::exclusive_cpu();
    let sim = SimServer::spawn(
        SimConfig {
            time_scale: 5.0,
            ..SimConfig::preset("cpu-tiny").unwrap()
        },
        0,
    )
    .unwrap();
    let run_at = |concurrency: &str, name: &str| {
        run(&config(
            &sim.base_url(),
            &[
                "--fluidity",
                "--concurrency",
                concurrency,
                "--requests",
                "24",
                "--warmup",
                "none",
                "--input-tokens",
                "256",
                "--output-tokens",
                "16",
                "--fluidity-slack-ms",
                "10",
                // Decode steps take ~4 ms here: a 10 ms decode deadline makes a queued first
                // token cost many missed deadlines, as Algorithm 1 counts them.
                "--fluidity-tbt-ms",
                "10",
            ],
            &temp_dir(name),
        ))
    };
    let (low_out, low) = run_at("1", "fluid-low");
    sim.truth().take();
    let (high_out, high) = run_at("24", "fluid-high");
    // The saturated run's queueing as the engine saw it (its median wait for a slot over the
    // 24 measured requests; the profile's one-token requests are left out), so a busy
    // machine's late wake-ups cannot shrink it.
    let mut waits: Vec<f64> = sim
        .truth()
        .wait_for(24, std::time::Duration::from_secs(10))
        .iter()
        .filter(|t| t.completion_tokens == 16)
        .filter_map(|t| t.queue_wait_ms())
        .collect();
    waits.sort_by(f64::total_cmp);
    assert_eq!(waits.len(), 24, "every measured request reached the engine");
    let queueing_ms = waits[waits.len() / 2];
    let dp = |out: &servebench::runner::RunOutput| {
        out.prefill_curve
            .as_ref()
            .expect("an isolated prefill profile ran")
            .curve
            .predict_ms(256.0)
    };
    let (dp_low, dp_high) = (dp(&low_out), dp(&high_out));
    // Queueing moves the saturated run's TTFT by far more than it moves D_p: a deadline
    // fitted from each run's own TTFTs would move with it. (Each profile is a handful of
    // isolated requests, so the two D_p differ by timing noise, not by the load.)
    assert!(
        queueing_ms > 0.0 && (dp_low - dp_high).abs() < 0.25 * queueing_ms,
        "same server, same isolated D_p: {dp_low} vs {dp_high}, queueing {queueing_ms} ms"
    );
    // Profile records are kept, apart from the measured ones.
    assert!(high_out.records.iter().any(|r| r.phase == Phase::Profile));
    let f_low = low.experience.fluidity.unwrap();
    let f_high = high.experience.fluidity.unwrap();
    assert!(f_low.share_meeting >= 0.9, "{f_low:?}");
    // With 4 slots and 24 requests at once, most wait for a slot: their first token misses D_p.
    assert!(
        f_high.share_meeting < 0.5,
        "queued requests miss the isolated deadline: {f_high:?}"
    );
    let queued = high_out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .filter(|r| r.derived.as_ref().unwrap().ttft_ms.unwrap() > dp_high + 5.0)
        .collect::<Vec<_>>();
    assert!(!queued.is_empty());
    for r in queued {
        assert!(r.derived.as_ref().unwrap().fluidity.unwrap() < 1.0);
    }
}

/// A reasoning model: output throughput counts every generated token, the answer-only rate
/// is beside it, and a request that spent tokens reasoning did not "end early".
#[test]
fn reasoning_tokens_count_as_output() {
    let sim = SimServer::spawn(
        SimConfig {
            reasoning_tokens: 12,
            ..SimConfig::fixed(5.0, 1.0)
        },
        0,
    )
    .unwrap();
    let (out, s) = run(&config(
        &sim.base_url(),
        &[
            "--concurrency",
            "2",
            "--requests",
            "10",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "20",
        ],
        &temp_dir("reasoning"),
    ));
    assert_eq!(s.requests.completed, 10);
    assert_eq!(s.total_output_tokens, 200, "every generated token");
    assert_eq!(s.total_reasoning_tokens, 120);
    assert_eq!(s.requests.ended_early, 0);
    assert_eq!(s.requests.with_reasoning, 10);
    assert!((s.answer_tokens_per_s / s.output_tokens_per_s - 8.0 / 20.0).abs() < 1e-9);
    for r in out.records.iter().filter(|r| r.phase == Phase::Measure) {
        assert_eq!((r.output_tokens, r.reasoning_tokens), (20, 12));
        assert_eq!(r.chunks.len(), 8, "8 answer chunks");
        assert_eq!(r.reasoning_chunks.len(), 12);
        // TTFT is the first answer token; reasoning came first.
        // (Equal when a late simulator sent both in one read: one kernel stamp.)
        assert!(r.first_reasoning_at().unwrap() <= r.first_token_at().unwrap());
        // TPOT spans the answer only: (last answer − first answer) over its 7 gaps, not over
        // the 19 gaps of every generated token. Exact from the record's own stamps (no
        // assertion on how fast the simulator paced them).
        let answer_span_ms =
            (r.last_token_at().unwrap() - r.first_token_at().unwrap()) as f64 / 1e6;
        let tpot_ms = r.derived.as_ref().unwrap().tpot_ms.unwrap();
        assert!(
            (tpot_ms - answer_span_ms / 7.0).abs() < 1e-6,
            "{tpot_ms} vs {answer_span_ms}/7"
        );
    }
}

/// Both SLO forms on one run, against the numbers the report prints; exit status 1 from the
/// binary when one fails.
#[test]
fn slo_verdicts_use_the_runs_own_figures() {
    let sim = SimServer::spawn(SimConfig::fixed(30.0, 1.0), 0).unwrap();
    let (_, s) = run(&config(
        &sim.base_url(),
        &[
            "--concurrency",
            "2",
            "--requests",
            "20",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "4",
            "--slo",
            "ttft_ms<=10000,p99(ttft_ms)<=20,output_tokens_per_s>=1",
        ],
        &temp_dir("slo-forms"),
    ));
    let slo = s.slo.unwrap();
    let per_request = slo.per_request.unwrap();
    assert_eq!(per_request.attainment, 1.0);
    assert!(per_request.passed);
    // Every TTFT is at least the simulated 30 ms: the run's P99 breaks `<= 20`.
    let p99 = &slo.run_checks[0];
    assert_eq!(p99.term, "p99(ttft_ms)<=20");
    assert_eq!(p99.observed, Some(s.ttft_ms.unwrap().p99));
    assert!(!p99.passed);
    assert!(slo.run_checks[1].passed);
    assert!(!slo.passed);
}

/// The generator judges only itself: at a modest open-loop rate it keeps up, and which clock
/// timed arrivals is recorded.
#[test]
fn generator_report_names_its_clock() {
    let sim = SimServer::spawn(SimConfig::fixed(2.0, 1.0), 0).unwrap();
    for (clock, expect) in [("kernel", "kernel_rx"), ("read", "read_return")] {
        let (out, _) = run(&config(
            &sim.base_url(),
            &[
                "--rate",
                "100",
                "--requests",
                "40",
                "--warmup",
                "none",
                "--input-tokens",
                "16",
                "--output-tokens",
                "8",
                "--arrival-clock",
                clock,
            ],
            &temp_dir(&format!("clock-{clock}")),
        ));
        let g = generator(&out);
        if cfg!(target_os = "linux") || clock == "read" {
            assert_eq!(g.arrival_clock, expect);
        }
        assert_eq!(g.send_lag_ms.unwrap().n, 40);
    }
}

#[test]
fn fluid_rate_is_never_an_unbounded_number() {
    // Prefill deadline far above the TTFT: the slack covers every token, at any D_d.
    let sim = SimServer::spawn(SimConfig::fixed(1.0, 1.0), 0).unwrap();
    let curve = temp_dir("curve").join("curve.json");
    std::fs::write(
        &curve,
        r#"{"curve": {"a_ms": 5000.0, "b_ms_per_token": 0.0, "c_ms_per_token2": 0.0, "r2": 1.0, "n": 3}, "target": "x", "model": "test-model"}"#,
    )
    .unwrap();
    let (_, s) = run(&config(
        &sim.base_url(),
        &[
            "--prefill-curve",
            curve.to_str().unwrap(),
            "--concurrency",
            "2",
            "--requests",
            "10",
            "--warmup",
            "none",
            "--input-tokens",
            "16",
            "--output-tokens",
            "8",
        ],
        &temp_dir("unbounded"),
    ));
    assert!(
        matches!(
            s.experience.fluid_token_rate,
            Some(FluidRate::Unbounded { .. })
        ),
        "{:?}",
        s.experience.fluid_token_rate
    );
    assert_eq!(s.experience.token_rates.fluid_tokens_per_s, None);
}

/// A validator of the committed schema `docs/NAME`.
fn committed_schema(name: &str) -> jsonschema::Validator {
    let path = format!("{}/docs/{name}", env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

/// Every line of a run folder's `requests.jsonl` validates against
/// `docs/requests.schema.json`; how many lines there were.
fn requests_validate(dir: &std::path::Path, validator: &jsonschema::Validator) -> usize {
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
    for line in text.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&record)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}\n{line}", dir.display());
        // And it reads back into the typed record, which writes it out identically.
        let typed: servebench::record::wire::WireRecord =
            serde_json::from_value(record.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), record);
    }
    text.lines().count()
}

/// `run.json` and `requests.jsonl` are typed: real output validates against the committed
/// schemas (`docs/run.schema.json`, `docs/requests.schema.json`, themselves checked against
/// the types by a unit test).
#[test]
fn run_json_validates_against_the_committed_schema() {
    let validator = committed_schema("run.schema.json");
    let requests = committed_schema("requests.schema.json");
    for (name, extra) in [
        (
            "schema-closed",
            vec!["--concurrency", "4", "--requests", "20"],
        ),
        (
            "schema-open",
            vec![
                "--rate",
                "50",
                "--requests",
                "20",
                "--slo",
                "ttft_ms<=500,p99(tpot_ms)<=50,success_rate>=0.5",
                "--workload",
                "fairness-mix",
            ],
        ),
    ] {
        let dir = temp_dir(name);
        let mut args = vec![
            "run",
            "--warmup",
            "3",
            "--sim-preset",
            "fast",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ];
        args.extend(extra);
        let o = crate::common::servebench(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        // The document reads back into the typed report and writes out identically: reports,
        // comparisons and merges work from run folders alone.
        let typed: servebench::artifacts::RunReport = serde_json::from_value(doc.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), doc, "{name}");
        // And the schema is not vacuous: a document missing `summary` fails it.
        let mut broken = doc.clone();
        broken.as_object_mut().unwrap().remove("summary");
        assert!(!validator.is_valid(&broken));
        // Warm-up and measured requests, every line.
        assert!(requests_validate(&dir, &requests) >= 20, "{name}");
    }
}

/// `suite.json` is typed: a real suite's validates against the committed
/// `docs/suite.schema.json` (and its test's `test.json` against `docs/test.schema.json`),
/// reads back into `SuiteDocument` (a test that ran, one the suite
/// skipped) and writes out byte for byte; `servebench report` reads it for the suite's page.
#[test]
fn suite_json_validates_against_the_committed_schema() {
    use servebench::procedure::suite::{pretty_json, SuiteDocument, SuiteTest};
    let dir = temp_dir("schema-suite");
    let out = dir.join("suite");
    // One target (guardrails needs two: skipped), every test but ttft skipped, ttft short.
    let sim = SimServer::spawn(SimConfig::preset("fast").unwrap(), 0).unwrap();
    let url = sim.base_url();
    let mut args = vec!["suite", "--url", &url, "--skip"];
    args.push("throughput,curve,itl,capacity,fairness,prefix-cache,memory-pressure,long-context");
    args.extend([
        "--concurrency",
        "2",
        "--requests",
        "12",
        "--warmup",
        "none",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let o = crate::common::servebench(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("suite.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let validator = committed_schema("suite.schema.json");
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{text}");
    let typed: SuiteDocument = serde_json::from_str(&text).unwrap();
    assert_eq!(
        String::from_utf8(pretty_json(&typed).unwrap()).unwrap(),
        text
    );
    let [SuiteTest::Ran(ttft), SuiteTest::Skipped(guardrails)] = typed.tests.as_slice() else {
        panic!("ttft ran and guardrails was skipped: {text}")
    };
    // The test's own test.json, as `servebench test` wrote it, validates too.
    let test_text = std::fs::read_to_string(out.join(&ttft.folder).join("test.json")).unwrap();
    let test_doc: serde_json::Value = serde_json::from_str(&test_text).unwrap();
    let errors: Vec<String> = committed_schema("test.schema.json")
        .iter_errors(&test_doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{test_text}");
    assert!(guardrails.why.contains("--target"), "{}", guardrails.why);
    let mut broken = doc.clone();
    broken["tests"][0]["status"] = serde_json::json!("finished");
    assert!(!validator.is_valid(&broken), "an unknown status");
    let o = crate::common::servebench(&[
        "report",
        out.to_str().unwrap(),
        "--format",
        "md",
        "--output",
        "-",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(
        page.contains("guardrails") && page.contains("ttft"),
        "{page}"
    );
}
