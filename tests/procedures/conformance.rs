//! The conformance suite (issue 19): `servebench test throughput`, `--quick` and full, against engine
//! models whose capacity is known exactly, and every `--quick` test that sizes its levels
//! from a capacity against the time `servebench test --help` states on a slow server.
//!
//! The levels run on the simulator's engine model in virtual time
//! (`servebench::procedure::conformance`, docs/procedures.md "Conformance"), not on the
//! simulator's HTTP server in real time: a server of 0.33 requests per second cannot be run
//! faster than it is (`time_scale` makes it a fast server, which the fixed lengths always
//! handled), and a busy machine would slow the real-time engine under the procedure's feet.
//! Here the truth is the engine's own analytic capacity and no wall clock is read, so these
//! tests hold on a loaded two-core machine and take seconds of CPU. The same checks run for
//! users as `servebench selfbench --procedures`.
//!
//! What is checked against the truth is the answer's rate, what the sustainable level
//! sustained: the median over five seeds within 10 % (one seed's few dozen Poisson arrivals
//! per `--quick` level can land further off; each run is shown in the message).
//!
//! The other procedures are read against truths of their own
//! (`servebench::procedure::conformance::readings`), with `--quick` and with their full
//! durations (cheap in virtual time): the curve's saturation onset and knee against the
//! analytic capacity, the capacity test's concurrency against the count derived from the
//! step model, the long-context exponent on engines of linear and quadratic prefill, the
//! prefix-cache hit rate against the shared prefix's share, and a latency-only guardrail's
//! Table 14 against the baseline's. Seeded answers (Poisson arrivals) are judged on the
//! median of five seeds; closed loops of fixed lengths give every seed the same answer and
//! run with one.

use servebench::procedure::conformance::{
    capacity_truth, case, check, check_reading, check_with, run_test, Reading, SEEDS,
    SLOW_SERVER_MINUTES, TOLERANCE,
};
use servebench::procedure::TestName;

/// One test of this binary at a time: the others time a real-time simulator, which this
/// one's CPU would slow.
fn turn() -> std::sync::MutexGuard<'static, ()> {
    crate::ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// The median `--quick` answer of a case lies within 10 % of the engine's analytic capacity.
fn conforms(name: &str) {
    conforms_with(name, true)
}

/// The median answer of a case, `--quick` when `quick`, else with the full durations, lies
/// within 10 % of the engine's analytic capacity.
fn conforms_with(name: &str, quick: bool) {
    let _turn = turn();
    let c = case(name).expect("a conformance case");
    let checked = check_with(&c, &SEEDS, quick).expect("the virtual bench runs");
    let median = checked.median_ratio();
    assert!(
        checked.conforms(),
        "{} ({}, {}): median answer {:?} of the truth, outside {:.0} %\n{}",
        c.name,
        c.what,
        if quick { "--quick" } else { "full durations" },
        median,
        TOLERANCE * 100.0,
        checked.describe()
    );
}

#[test]
fn throughput_on_fixed_lengths_is_the_analytic_capacity() {
    conforms("fixed");
}

/// The same four cases with the full durations (60 s levels, the full search).
#[test]
fn throughput_in_full_is_the_analytic_capacity_on_every_case() {
    for name in ["fixed", "skewed", "long", "slow"] {
        conforms_with(name, false);
    }
}

#[test]
fn throughput_on_skewed_lengths_is_the_analytic_capacity() {
    conforms("skewed");
}

#[test]
fn throughput_with_requests_longer_than_a_fifth_of_the_level_is_the_analytic_capacity() {
    let c = case("long").unwrap();
    // The case is what it says: one request alone lasts more than 0.2 × the level.
    let level_s = c.level_duration.unwrap().as_secs_f64();
    let alone_s =
        (c.sim.step.base_ms + c.sim.step.prefill_ms_per_token * 128.0 + 255.0 * c.sim.step.base_ms)
            / 1e3;
    assert!(
        alone_s > 0.2 * level_s,
        "{alone_s} s of a {level_s} s level"
    );
    conforms("long");
}

#[test]
fn throughput_on_a_server_of_a_third_of_a_request_per_second_is_its_capacity() {
    let c = case("slow").unwrap();
    let truth = c.sim.capacity(256, 640).unwrap().requests_per_s;
    assert!(truth < 0.5, "a slow server: {truth} req/s");
    conforms("slow");
    let _turn = turn();
    let checked = check(&c, &SEEDS[..1]).unwrap();
    let stated = SLOW_SERVER_MINUTES
        .iter()
        .find(|(t, _)| *t == TestName::Throughput)
        .unwrap()
        .1;
    assert!(
        checked.longest_s() <= stated * 60.0,
        "{:.1} min, stated {stated} min\n{}",
        checked.longest_s() / 60.0,
        checked.describe()
    );
}

/// Issue 19, item 12: on a slow server every `--quick` test that takes a capacity answers
/// (ttft, throughput and curve exited 1 after minutes: the capacity estimate, concurrency 32
/// for 3 s, completed nothing), within the time its help states, and with the right
/// figures: the capacity the curve and ttft take shares of within 10 % of the truth, and the
/// capacity test's concurrency the engine's four batch slots (every level undecided before).
#[test]
fn every_quick_procedure_answers_a_slow_server_in_its_stated_time() {
    let _turn = turn();
    let c = case("slow").unwrap();
    let truth = c.sim.capacity(256, 640).unwrap();
    for (test, minutes) in SLOW_SERVER_MINUTES {
        let (finding, bench) = run_test(&c, test, SEEDS[0]).unwrap();
        let took = bench.elapsed_s / 60.0;
        eprintln!(
            "{test}: {took:.1} min (stated {minutes} min): {}",
            finding.answer
        );
        if std::env::var_os("SERVEBENCH_MEASURE_ONLY").is_some() {
            continue;
        }
        assert!(
            finding.answered && finding.stopped.is_none(),
            "{test}: {} ({:?})",
            finding.answer,
            finding.stopped
        );
        assert!(
            took <= minutes || std::env::var_os("SERVEBENCH_MEASURE_ONLY").is_some(),
            "{test}: {took:.1} min, stated {minutes} min: {}",
            finding.answer
        );
        // As test.json stores it, under the keys docs/procedures.md lists.
        let r = serde_json::to_value(&finding.result).unwrap();
        match test {
            TestName::Curve | TestName::Itl => {
                let cap = r["capacity_rate_per_s"].as_f64().unwrap();
                // One seed: the search's answer on a 0.3 req/s server is checked on the
                // median of five seeds within 10 % above; a single seed is within 15 %.
                assert!(
                    (cap / truth.requests_per_s - 1.0).abs() <= 0.15,
                    "{test}: capacity {cap} vs {}",
                    truth.requests_per_s
                );
            }
            TestName::Ttft => {
                let load = r["load"]["rate_per_s"].as_f64().unwrap();
                assert!(
                    (2.0 * load / truth.requests_per_s - 1.0).abs() <= TOLERANCE,
                    "ttft at {load} req/s, half the capacity is {}",
                    truth.requests_per_s / 2.0
                );
                assert_eq!(r["samples"].as_u64(), Some(50));
            }
            TestName::Capacity => {
                assert_eq!(
                    r["max_concurrency"].as_u64(),
                    Some(truth.batch_slots as u64),
                    "{}",
                    finding.answer
                );
            }
            _ => {}
        }
    }
}

/// A reading's median answer is accepted against its truth (`--quick` when `quick`, else
/// the test's full durations).
fn reads(reading: Reading, quick: bool) {
    let _turn = turn();
    let checked = check_reading(reading, reading.seeds(), quick).expect("the virtual bench runs");
    assert!(
        checked.conforms(),
        "{} ({}; {}): median {}, accepted {}\n{}",
        reading.name(),
        if quick { "--quick" } else { "full durations" },
        reading.what(),
        checked.median_text(),
        reading.accept().describe(),
        checked.describe()
    );
}

/// 5.3 on the fixed case (1.169 req/s): the first level from which every level shows a
/// saturation signal lies at 90-125 % of the analytic capacity.
#[test]
fn curve_saturation_point_is_the_analytic_capacity() {
    reads(Reading::CurveSaturation, true);
}

#[test]
fn curve_saturation_point_is_the_analytic_capacity_in_full() {
    reads(Reading::CurveSaturation, false);
}

/// 5.3 on the fixed case: P99 TTFT doubles for good at or below 110 % of the capacity.
#[test]
fn curve_knee_comes_at_or_below_the_analytic_capacity() {
    reads(Reading::CurveKnee, true);
}

#[test]
fn curve_knee_comes_at_or_below_the_analytic_capacity_in_full() {
    reads(Reading::CurveKnee, false);
}

/// 5.5 on the fixed case without `--slo`: the engine's 4 batch slots, derived from its step
/// model (`capacity_truth`: four prompts prefilled together in 1,278 ms, within 10 × the
/// 327 ms of one alone; a fifth request waits a 3,391 ms cycle first), ±1.
#[test]
fn capacity_is_the_concurrency_the_step_model_gives() {
    let c = case("fixed").unwrap();
    assert_eq!(capacity_truth(&c.sim, 256, 128), Some(4));
    reads(Reading::Capacity, true);
}

#[test]
fn capacity_is_the_concurrency_the_step_model_gives_in_full() {
    reads(Reading::Capacity, false);
}

/// 5.9: TTFT = 10 + 0.05·L ms (one prefill step a prompt) gives an exponent of 1 ± 0.05.
#[test]
fn long_context_exponent_of_a_linear_prefill_is_one() {
    reads(Reading::LinearExponent, true);
}

#[test]
fn long_context_exponent_of_a_linear_prefill_is_one_in_full() {
    reads(Reading::LinearExponent, false);
}

/// 5.9: TTFT = 10 + 0.00015·L² ms (prefill attention alone) gives an exponent of 2 ± 0.05.
#[test]
fn long_context_exponent_of_a_quadratic_prefill_is_two() {
    reads(Reading::QuadraticExponent, true);
}

#[test]
fn long_context_exponent_of_a_quadratic_prefill_is_two_in_full() {
    reads(Reading::QuadraticExponent, false);
}

/// 5.7: every prompt a shared 512-token context and 128 tokens of its own: the warm level's
/// hit rate is 512 ÷ 640 = 80 %, within 10 % (a replay of the cold level's prompts would
/// read 639 ÷ 640).
#[test]
fn prefix_cache_hit_rate_is_the_shared_prefix_share() {
    reads(Reading::PrefixHitRate, true);
}

#[test]
fn prefix_cache_hit_rate_is_the_shared_prefix_share_in_full() {
    reads(Reading::PrefixHitRate, false);
}

/// 5.10: filters that only add latency (160 ms before the queue, 20 ms on every token)
/// leave Table 14's maximum throughput within 10 % of the baseline's (at a fixed
/// concurrency of 8 the input filter would read −20 %).
#[test]
fn a_latency_only_guardrail_keeps_its_max_throughput() {
    reads(Reading::GuardrailThroughput, true);
}

#[test]
fn a_latency_only_guardrail_keeps_its_max_throughput_in_full() {
    reads(Reading::GuardrailThroughput, false);
}
