//! The comparison on hand-built runs: a real run folder from the simulator
//! (`tests/fixtures/run-sim`) with its figures, seeds and times set by each test.

use super::checklist::CheckStatus;
use super::metrics::{Metric, Normalisation};
use super::*;
use crate::export::fixture;

/// Spread of repeated runs around their level, as a share: small, symmetric, fixed.
const JITTER: [f64; 5] = [0.0, 0.01, -0.01, 0.005, -0.005];

/// A run with every key figure scaled from `level` (1.0 = the baseline's speed: latencies
/// are multiplied by it, throughputs divided), started `start_s` seconds after the first.
fn run(i: usize, seed: u64, level: f64, start_s: u64) -> RunInput {
    let mut r = fixture::report();
    let j = 1.0 + JITTER[i % JITTER.len()];
    let s = &mut r.summary;
    let lat = |d: &mut Option<crate::stats::Distribution>, p50: f64, p99: f64| {
        let d = d.as_mut().unwrap();
        d.p50 = p50 * level * j;
        d.p99 = p99 * level * j;
    };
    lat(&mut s.ttft_ms, 100.0, 250.0);
    lat(&mut s.tpot_ms, 20.0, 30.0);
    lat(&mut s.e2e_ms, 2000.0, 3000.0);
    s.output_tokens_per_s = 1000.0 / level * j;
    s.requests_per_s = 10.0 / level * j;
    s.success_rate = 1.0;
    if let Some(a) = s.slo.as_mut().and_then(|x| x.per_request.as_mut()) {
        a.goodput_requests_per_s = 9.0 / level * j;
    }
    r.config.seed = seed;
    let t0 = 1_795_000_000_000_000 + start_s * 1_000_000;
    r.started_at_us = t0;
    r.finished_at_us = t0 + 10_000_000;
    RunInput {
        path: format!("runs/{level}-{seed}"),
        report: r,
    }
}

fn system(name: &str, level: f64, seeds: &[u64], start_s: u64) -> SystemInput {
    SystemInput {
        name: name.into(),
        runs: seeds
            .iter()
            .enumerate()
            .map(|(i, s)| run(i, *s, level, start_s + 20 * i as u64))
            .collect(),
        norm: Normalisation::default(),
    }
}

fn row(r: &ComparisonReport, m: Metric) -> &MetricRow {
    r.metrics.iter().find(|x| x.metric == m).unwrap()
}

fn verdict(r: &ComparisonReport, m: Metric) -> Verdict {
    match &row(r, m).versus_baseline[0].outcome {
        Outcome::Compared(c) => c.verdict,
        other => panic!("{m:?}: {other:?}"),
    }
}

fn check(r: &ComparisonReport, id: &str) -> CheckStatus {
    r.checklist.iter().find(|c| c.id == id).unwrap().status
}

const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

#[test]
fn a_slower_system_is_worse_on_every_key_metric() {
    let a = system("a", 1.0, &SEEDS, 0);
    let b = system("b", 1.3, &SEEDS, 5);
    let r = compare(&[a, b], &Options::default());
    assert!(r.enough_runs);
    for m in [Metric::TtftP50Ms, Metric::TpotP99Ms, Metric::E2eP99Ms] {
        assert_eq!(verdict(&r, m), Verdict::Worse, "{m:?}");
    }
    for m in [
        Metric::OutputTokensPerS,
        Metric::RequestsPerS,
        Metric::GoodputRequestsPerS,
    ] {
        assert_eq!(verdict(&r, m), Verdict::Worse, "{m:?}");
    }
    assert_eq!(verdict(&r, Metric::SuccessRate), Verdict::NoDifference);
    // The effect in the metric's unit: TTFT P50 means are 100 and 130 ms (the jitter
    // averages to zero), so the difference is 30 ms, with Welch's test and Hedges' g.
    let Outcome::Compared(c) = &row(&r, Metric::TtftP50Ms).versus_baseline[0].outcome else {
        unreachable!()
    };
    assert!((c.difference - 30.0).abs() < 1e-9, "{}", c.difference);
    assert!(
        c.difference_ci.0 > 25.0 && c.difference_ci.1 < 35.0,
        "{:?}",
        c.difference_ci
    );
    assert!(c.welch.p_value < 0.001);
    assert!(c.hedges_g.unwrap() > 5.0);
    // Per system: mean with its interval over the five run-level values (the hull of the
    // bootstrap and Student's t: 100 ± 2.776 × 0.79 / √5 = 100 ± 0.98).
    let base = &row(&r, Metric::TtftP50Ms).systems[0];
    assert_eq!(base.n, 5);
    assert!((base.mean.unwrap() - 100.0).abs() < 1e-9);
    let (lo, hi) = base.ci.unwrap();
    assert!(
        lo < 100.0 && hi > 100.0 && lo > 98.0 && hi < 102.0,
        "{lo} {hi}"
    );
    assert!(row(&r, Metric::TtftP50Ms).versus_baseline[0]
        .summary
        .starts_with("worse: +30.0 ms (+30.0 %)"));
    // The other way round, the faster system is better.
    let r = compare(
        &[system("b", 1.3, &SEEDS, 0), system("a", 1.0, &SEEDS, 5)],
        &Options::default(),
    );
    assert_eq!(verdict(&r, Metric::TtftP50Ms), Verdict::Better);
    assert_eq!(verdict(&r, Metric::OutputTokensPerS), Verdict::Better);
}

#[test]
fn a_system_against_itself_shows_no_difference() {
    let r = compare(
        &[
            system("a", 1.0, &SEEDS, 0),
            system("a again", 1.0, &SEEDS, 5),
        ],
        &Options::default(),
    );
    for m in &r.metrics {
        let Outcome::Compared(c) = &m.versus_baseline[0].outcome else {
            panic!("{:?}", m.metric)
        };
        assert_eq!(c.verdict, Verdict::NoDifference, "{:?}", m.metric);
    }
    // Nothing in the records makes it unfair; only the manual item is left.
    for c in &r.checklist {
        let want = match c.id.as_str() {
            "production" => CheckStatus::Manual,
            _ => CheckStatus::Pass,
        };
        assert_eq!(c.status, want, "{}: {}", c.id, c.detail);
    }
    assert!(r.differences.is_empty(), "{:?}", r.differences);
}

#[test]
fn fewer_than_three_runs_give_values_and_no_claim() {
    let r = compare(
        &[system("a", 1.0, &[1, 2], 0), system("b", 2.0, &[1], 5)],
        &Options::default(),
    );
    assert!(!r.enough_runs);
    assert!(r.note.contains("at least 3 runs"), "{}", r.note);
    let t = row(&r, Metric::TtftP50Ms);
    assert_eq!(t.systems[0].values.len(), 2);
    assert_eq!(t.systems[0].ci, None);
    let v = &t.versus_baseline[0];
    assert!(matches!(
        v.outcome,
        Outcome::NotEnoughRuns { required: 3, .. }
    ));
    // The values are shown: mean of 100 and 101 against 200.
    assert!((v.difference_of_means.unwrap() - 99.5).abs() < 1e-9);
    assert!(v.summary.contains("no claim"), "{}", v.summary);
    assert_eq!(check(&r, "runs"), CheckStatus::Fail);
    let text = crate::report::comparison::text::render(&r);
    assert!(text.contains("no claim (< 3 runs per system)"), "{text}");
    assert!(text.contains("+99.5 ms"), "{text}");
    assert!(text.contains("100.0, 101.0"), "{text}");
}

#[test]
fn the_checklist_finds_what_makes_a_comparison_unfair() {
    let a = system("a", 1.0, &SEEDS, 0);
    // Other seeds, another load, another SLO, days later on the same machine.
    let mut b = system("b", 1.0, &[6, 7, 8, 9, 10], 3 * 86_400);
    for r in &mut b.runs {
        r.report.config.load = crate::schedule::LoadPattern::Closed { concurrency: 64 };
        r.report.config.max_failure_share = 0.1;
        r.report.config.limits.requests = Some(2000);
        r.report.system.hardware = Some("H100 x 8".into());
    }
    let r = compare(&[a, b], &Options::default());
    for id in [
        "seeds",
        "load",
        "success_criteria",
        "duration",
        "same_time",
        "hardware",
    ] {
        assert_eq!(check(&r, id), CheckStatus::Fail, "{id}");
    }
    assert_eq!(check(&r, "workload"), CheckStatus::Pass);
    assert_eq!(check(&r, "repeats"), CheckStatus::Pass);
    let same_time = r.checklist.iter().find(|c| c.id == "same_time").unwrap();
    assert!(
        same_time.detail.contains("3.0 days apart"),
        "{}",
        same_time.detail
    );
    // Every differing setting is listed with both values.
    let diff = |k: &str| r.differences.iter().find(|d| d.setting == k);
    let load = diff("/config/load/concurrency").expect("the load differs");
    assert_eq!(load.values, ["4", "64"]);
    assert_eq!(
        diff("/system/hardware").unwrap().values,
        ["null", "\"H100 x 8\""]
    );
    assert!(diff("/config/seed").is_none(), "seeds have their own check");
    // Normalising per GPU makes differing hardware comparable.
    let mut a = system("a", 1.0, &SEEDS, 0);
    let mut b = system("b", 0.5, &SEEDS, 5);
    a.norm.gpus = Some(1.0);
    b.norm.gpus = Some(8.0);
    for r in &mut b.runs {
        r.report.system.hardware = Some("H100 x 8".into());
    }
    a.norm.cost_per_hour = Some(2.0);
    b.norm.cost_per_hour = Some(16.0);
    let r = compare(&[a, b], &Options::default());
    assert_eq!(check(&r, "hardware"), CheckStatus::Pass);
    let per_gpu = row(&r, Metric::OutputTokensPerGpuS);
    // b is twice as fast on eight GPUs: 2000 tok/s ÷ 8 = 250 per GPU against 1000.
    assert!((per_gpu.systems[0].mean.unwrap() - 1000.0).abs() < 1e-9);
    assert!((per_gpu.systems[1].mean.unwrap() - 250.0).abs() < 1e-9);
    let per_dollar = row(&r, Metric::OutputTokensPerDollar);
    // 1000 tok/s × 3600 s/h ÷ 2 $/h = 1.8 M tokens per dollar.
    assert!((per_dollar.systems[0].mean.unwrap() - 1_800_000.0).abs() < 1e-6);
    assert_eq!(r.normalisation.len(), 2);
    assert_eq!(verdict(&r, Metric::OutputTokensPerS), Verdict::Better);
    assert_eq!(verdict(&r, Metric::OutputTokensPerGpuS), Verdict::Worse);
}

/// Issue 36: `compare` called a 60-s interrupted run "same test duration (120 s)" beside
/// 120-s runs. The check reads what each run measured and says which was interrupted.
#[test]
fn an_interrupted_run_is_not_the_same_test_duration() {
    let two_minutes = |s: &mut SystemInput| {
        for r in &mut s.runs {
            r.report.config.limits.requests = None;
            r.report.config.limits.duration = Some(std::time::Duration::from_secs(120));
            r.report.summary.window.duration_s = 121.0;
        }
    };
    let mut a = system("a", 1.0, &SEEDS, 0);
    let mut b = system("b", 1.0, &SEEDS, 5);
    two_minutes(&mut a);
    two_minutes(&mut b);
    let r = compare(&[a.clone(), b.clone()], &Options::default());
    let duration = |r: &ComparisonReport| {
        r.checklist
            .iter()
            .find(|c| c.id == "duration")
            .unwrap()
            .clone()
    };
    assert_eq!(duration(&r).status, CheckStatus::Pass);
    assert_eq!(duration(&r).detail, "every run: 120 s; measured 121 s");
    b.runs[2].report.interrupted = true;
    b.runs[2].report.summary.window.duration_s = 60.0;
    let r = compare(&[a.clone(), b], &Options::default());
    let d = duration(&r);
    assert_eq!(d.status, CheckStatus::Fail, "{}", d.detail);
    assert!(
        d.detail
            .contains("b (runs/1-3) was interrupted after 60 s of its 120 s"),
        "{}",
        d.detail
    );
    // Stopped early without an interruption (sending gave up): short all the same.
    let mut c = system("c", 1.0, &SEEDS, 5);
    two_minutes(&mut c);
    c.runs[0].report.summary.window.duration_s = 30.0;
    let d = duration(&compare(&[a, c], &Options::default()));
    assert_eq!(d.status, CheckStatus::Fail, "{}", d.detail);
    assert!(
        d.detail.contains("measured 30 s of its 120 s"),
        "{}",
        d.detail
    );
}

#[test]
fn runs_within_a_system_must_repeat_one_configuration() {
    let mut a = system("a", 1.0, &SEEDS, 0);
    a.runs[2].report.config.load = crate::schedule::LoadPattern::Closed { concurrency: 8 };
    let r = compare(&[a, system("b", 1.0, &SEEDS, 5)], &Options::default());
    assert_eq!(check(&r, "repeats"), CheckStatus::Fail);
    let d = r
        .differences
        .iter()
        .find(|d| d.setting == "/config/load/concurrency")
        .unwrap();
    assert_eq!(d.values, ["varies: 4 | 8", "4"]);
}

#[test]
fn separate_machines_need_no_shared_time() {
    let a = system("a", 1.0, &SEEDS, 0);
    let mut b = system("b", 1.0, &SEEDS, 30 * 86_400);
    for r in &mut b.runs {
        r.report.config.target.builtin_simulator = false;
        r.report.config.target.url =
            crate::client::BaseUrl::parse("http://gpu-box:8000/v1").unwrap();
    }
    let r = compare(&[a, b], &Options::default());
    assert_eq!(check(&r, "same_time"), CheckStatus::NotApplicable);
}

#[test]
fn renders_within_100_columns_and_reads_back_from_json() {
    let r = compare(
        &[
            system("baseline", 1.0, &SEEDS, 0),
            system("candidate", 1.2, &SEEDS, 5),
            system("third", 0.9, &SEEDS, 9),
        ],
        &Options::default(),
    );
    let text = crate::report::comparison::text::render(&r);
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
    assert!(text.contains("candidate against baseline"));
    assert!(text.contains("third against baseline"));
    assert!(text.contains("Fair-comparison checklist"));
    let json = serde_json::to_string(&r).unwrap();
    let back: ComparisonReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
}

#[test]
fn the_regression_gate() {
    let base = system("main", 1.0, &SEEDS, 0).runs;
    let slower = system("pr", 1.2, &SEEDS, 5).runs;
    let g = regress::gate(&base, &slower, 0.05);
    assert!(g.decided && g.regressed);
    let ttft = g
        .metrics
        .iter()
        .find(|m| m.metric == Metric::TtftP50Ms)
        .unwrap();
    assert_eq!(ttft.regressed, Some(true));
    assert!((ttft.difference - 20.0).abs() < 1e-9);
    assert!((ttft.relative_difference.unwrap() - 0.2).abs() < 1e-9);
    let success = g
        .metrics
        .iter()
        .find(|m| m.metric == Metric::SuccessRate)
        .unwrap();
    assert_eq!(success.regressed, Some(false));
    let text = crate::report::comparison::regress::render(&g);
    assert!(text.contains("REGRESSION in Output throughput"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
    // 3 % slower is within the 5 % tolerance; 3 % faster is no regression at all.
    for level in [1.03, 0.97] {
        let g = regress::gate(&base, &system("pr", level, &SEEDS, 5).runs, 0.05);
        assert!(g.decided && !g.regressed, "{level}");
    }
    // With no tolerance the 3 % slowdown fails the gate.
    let g = regress::gate(&base, &system("pr", 1.03, &SEEDS, 5).runs, 0.0);
    assert!(g.regressed);
    // Two runs decide nothing; a 10 % slowdown is within what noise can do to so few.
    let g = regress::gate(&base, &system("pr", 1.1, &SEEDS, 5).runs[..2], 0.05);
    assert!(!g.decided && !g.regressed && !g.likely_regression);
    assert!(g.metrics.iter().all(|m| m.regressed.is_none()));
    assert!(crate::report::comparison::regress::render(&g).contains("NOT DECIDED"));
}

/// Issue 23: an 84 % throughput drop with one run per side read "not decided". Beyond a
/// gross change (20 %, or the tolerance if larger) in the bad direction it is a likely
/// regression, with no statistical claim.
#[test]
fn one_run_per_side_still_flags_a_gross_change() {
    let base = system("main", 1.0, &[1], 0).runs;
    let one = |level: f64| system("pr", level, &[1], 5).runs;
    let g = regress::gate(&base, &one(1.0 / 0.16), 0.05);
    assert!(!g.decided && !g.regressed && g.likely_regression);
    assert!((g.gross_change - 0.2).abs() < 1e-12);
    let tput = g
        .metrics
        .iter()
        .find(|m| m.metric == Metric::OutputTokensPerS)
        .unwrap();
    assert!(tput.likely_regression && tput.regressed.is_none());
    assert!((tput.relative_difference.unwrap() + 0.84).abs() < 1e-9);
    let success = g
        .metrics
        .iter()
        .find(|m| m.metric == Metric::SuccessRate)
        .unwrap();
    assert!(!success.likely_regression);
    let text = crate::report::comparison::regress::render(&g);
    assert!(text.contains("LIKELY REGRESSION in "), "{text}");
    assert!(text.contains("Output throughput"), "{text}");
    assert!(text.contains("no statistical claim"), "{text}");
    assert!(!text.contains("NOT DECIDED"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
    // A faster candidate is no regression, however large the change.
    let g = regress::gate(&base, &one(0.5), 0.05);
    assert!(!g.likely_regression);
    assert!(crate::report::comparison::regress::render(&g).contains("NOT DECIDED"));
    // The threshold: 25 % slower is flagged, 15 % is not, and a larger tolerance raises it.
    assert!(regress::gate(&base, &one(1.25), 0.05).likely_regression);
    assert!(!regress::gate(&base, &one(1.15), 0.05).likely_regression);
    let g = regress::gate(&base, &one(1.25), 0.30);
    assert!(!g.likely_regression && (g.gross_change - 0.3).abs() < 1e-12);
    // With enough runs the statistics decide, and nothing is merely "likely".
    let g = regress::gate(
        &system("main", 1.0, &SEEDS, 0).runs,
        &system("pr", 2.0, &SEEDS, 5).runs,
        0.05,
    );
    assert!(g.decided && g.regressed && !g.likely_regression);
    // The JSON carries the flag; a report without it (an older servebench) still reads.
    let json = serde_json::to_value(&g).unwrap();
    assert_eq!(json["likely_regression"], false);
    let mut old = json.clone();
    old.as_object_mut().unwrap().remove("likely_regression");
    old.as_object_mut().unwrap().remove("gross_change");
    let back: regress::RegressionReport = serde_json::from_value(old).unwrap();
    assert!(!back.likely_regression);
}

/// The interval beside each system's mean (terminal table, page chart and JSON alike) is
/// the hull the docs promise, not the bare bootstrap.
#[test]
fn per_system_intervals_are_the_hull_of_bootstrap_and_t() {
    // Runs of 10, 11 and 12 ms: mean 11, s = 1, t(0.975, df 2) = 4.302653, so the t
    // interval is 11 ± 4.302653 / √3 = [8.515862, 13.484138]. A bootstrap of three values
    // stays inside [10, 12], so the hull is the t interval. (Before: the bare bootstrap,
    // inside the runs' own range.)
    let runs = vec![Some(10.0), Some(11.0), Some(12.0)];
    let row = metric_row(
        Metric::TtftP50Ms,
        vec![runs.clone(), runs],
        &Options::default(),
    );
    for s in &row.systems {
        let (lo, hi) = s.ci.unwrap();
        assert!((lo - 8.515_862).abs() < 1e-5, "{lo}");
        assert!((hi - 13.484_138).abs() < 1e-5, "{hi}");
    }
    let Outcome::Compared(c) = &row.versus_baseline[0].outcome else {
        panic!("{:?}", row.versus_baseline[0].outcome)
    };
    assert_eq!(Some(c.baseline.ci), row.systems[0].ci);
    // Equal means: Welch's part of the difference stays (±2.266958 at df 4).
    assert!(
        (c.difference_ci.1 - 2.266_958).abs() < 1e-5,
        "{:?}",
        c.difference_ci
    );
}

/// A run's session summary: two one-request sessions of `wall_ms`, half their prompt cached.
fn sessions(wall_ms: f64) -> crate::metrics::sessions::SessionSummary {
    let record = |id: u64| crate::record::RequestRecord {
        phase: crate::record::Phase::Measure,
        session: Some((id, 0)),
        sent_at: Some(0),
        finished_at: (wall_ms * 1e6) as u64,
        usage: Some(
            serde_json::json!({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 50}}),
        ),
        ..Default::default()
    };
    crate::metrics::sessions::SessionTally::of(&[record(1), record(2)])
        .finish()
        .unwrap()
}

#[test]
fn session_figures_are_compared_where_the_runs_had_sessions() {
    let plain = compare(
        &[system("a", 1.0, &SEEDS, 0), system("b", 1.3, &SEEDS, 5)],
        &Options::default(),
    );
    assert!(plain
        .metrics
        .iter()
        .all(|m| m.metric != Metric::SessionWallP50Ms));
    let with_sessions = |name: &str, level: f64, start: u64| {
        let mut s = system(name, level, &SEEDS, start);
        for (i, r) in s.runs.iter_mut().enumerate() {
            let wall = 4000.0 * level * (1.0 + JITTER[i % JITTER.len()]);
            r.report.summary.sessions = Some(sessions(wall));
        }
        s
    };
    let r = compare(
        &[with_sessions("a", 1.0, 0), with_sessions("b", 1.3, 5)],
        &Options::default(),
    );
    assert_eq!(verdict(&r, Metric::SessionWallP50Ms), Verdict::Worse);
    assert_eq!(verdict(&r, Metric::SessionWallP99Ms), Verdict::Worse);
    assert_eq!(
        verdict(&r, Metric::SessionCachedShare),
        Verdict::NoDifference
    );
    assert_eq!(
        row(&r, Metric::SessionCachedShare).label,
        "Prompt from cache"
    );
}
