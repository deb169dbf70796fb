//! Tests of `--slo`: parsing every form, goodput, and per-request attainment kept apart
//! from the run-level percentile bounds.

use super::*;
use crate::stats::distribution::Distribution;

fn m(ttft: f64, tpot: f64, n: u32) -> RequestMetrics {
    RequestMetrics {
        ttft_ms: ttft,
        e2e_ms: ttft + tpot * (n - 1) as f64,
        tpot_ms: Some(tpot),
        itl_ms: vec![tpot; n as usize - 1],
        jitter_ms: Some(0.0),
        max_pause_ms: Some(tpot),
        normalized_ms_per_token: None,
        decode_tokens_per_s: None,
        ttfb_ms: None,
        time_to_first_reasoning_ms: None,
        ttft_from_schedule_ms: None,
        e2e_from_schedule_ms: None,
        output_tokens: n,
        answer_tokens: n,
    }
}

fn no_figures() -> RunFigures<'static> {
    RunFigures {
        distribution: &|_| None,
        output_tokens_per_s: 0.0,
        requests_per_s: 0.0,
        success_rate: 0.0,
    }
}

#[test]
fn parses_every_form_and_rejects_bad_terms() {
    let s = SloSpec::parse(
        "ttft_ms<=500, p99(tpot_ms)<=50, mean(e2e_ms)<=2000, output_tokens_per_s>=100",
        0.99,
    )
    .unwrap();
    assert_eq!(s.terms.len(), 4);
    assert_eq!(
        s.to_string(),
        "ttft_ms<=500,p99(tpot_ms)<=50,mean(e2e_ms)<=2000,output_tokens_per_s>=100"
    );
    assert_eq!(
        SloSpec::parse("foo<=1", 0.99),
        Err(SloParseError::Metric("foo".into()))
    );
    assert_eq!(
        SloSpec::parse("p42(ttft_ms)<=1", 0.99),
        Err(SloParseError::Stat("p42".into()))
    );
    assert_eq!(
        SloSpec::parse("p99(bar)<=1", 0.99),
        Err(SloParseError::RunMetric("bar".into()))
    );
    assert_eq!(
        SloSpec::parse("ttft_ms<=-1", 0.99),
        Err(SloParseError::Number("-1".into()))
    );
    assert!(matches!(
        SloSpec::parse("ttft_ms", 0.99),
        Err(SloParseError::Form(_))
    ));
}

#[test]
fn goodput_counts_only_requests_meeting_every_bound() {
    let spec = SloSpec::parse("ttft_ms<=500,tpot_ms<=50", 0.75).unwrap();
    let a = m(100.0, 20.0, 11); // meets
    let b = m(600.0, 20.0, 11); // ttft too slow
    let c = m(100.0, 60.0, 11); // tpot too slow
    let d = m(400.0, 50.0, 5); // meets (bounds inclusive)
    let reqs = vec![Some(&a), Some(&b), Some(&c), Some(&d), None];
    let r = evaluate(&spec, &reqs, 2.0, &no_figures());
    let a = r.per_request.unwrap();
    assert_eq!(a.attainment, 0.4);
    assert_eq!((a.met, a.total), (2, 5));
    assert_eq!(a.goodput_requests_per_s, 1.0);
    assert_eq!(a.goodput_tokens_per_s, 8.0);
    assert_eq!(a.attainment_by_threshold[0].1, 0.6);
    assert!(!a.passed && !r.passed);
}

/// 99 of 100 requests at 500 ms and one at 10 s: 99 % attainment passes a 99 % target,
/// yet the interpolated P99 is 500 + 0.01·(10,000 − 500) = 595 ms, so `p99(ttft_ms)<=500`
/// must fail. The two forms answer different questions and must never be conflated.
#[test]
fn attainment_and_percentile_bounds_are_separate_verdicts() {
    let mut metrics: Vec<RequestMetrics> = (0..99).map(|_| m(500.0, 10.0, 2)).collect();
    metrics.push(m(10_000.0, 10.0, 2));
    let reqs: Vec<Option<&RequestMetrics>> = metrics.iter().map(Some).collect();
    let ttft = Distribution::of(&mut metrics.iter().map(|m| m.ttft_ms).collect()).unwrap();
    assert!((ttft.p99 - 595.0).abs() < 1e-9, "{}", ttft.p99);
    let dist = move |metric: RunMetric| (metric == RunMetric::TtftMs).then_some(ttft);
    let figures = RunFigures {
        distribution: &dist,
        output_tokens_per_s: 0.0,
        requests_per_s: 0.0,
        success_rate: 1.0,
    };
    let per_request = SloSpec::parse("ttft_ms<=500", 0.99).unwrap();
    let r = evaluate(&per_request, &reqs, 1.0, &figures);
    assert!(r.passed, "99 % of requests met the bound");
    let run_level = SloSpec::parse("p99(ttft_ms)<=500", 0.99).unwrap();
    let r = evaluate(&run_level, &reqs, 1.0, &figures);
    assert!(!r.passed, "the printed P99 is 595 ms");
    assert_eq!(r.run_checks[0].observed, Some(ttft.p99));
    assert_eq!(r.run_checks[0].samples, 100);
    // No samples of a bounded figure fails rather than passes.
    let r = evaluate(
        &SloSpec::parse("p99(itl_ms)<=5", 0.99).unwrap(),
        &reqs,
        1.0,
        &figures,
    );
    assert!(!r.passed);
    // Floors.
    let r = evaluate(
        &SloSpec::parse("success_rate>=0.99", 0.99).unwrap(),
        &reqs,
        1.0,
        &figures,
    );
    assert!(r.passed);
}
