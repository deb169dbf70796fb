//! What a run will cost, said before it starts: the warm-up sized from the draft's minimum
//! (4.5.1) and the server's measured speed, the prefill profile, and the measured phase
//! (its request count at the expected rate, or its duration). The same figures seed the
//! progress line's ETA, so it is right from the first second.
//!
//! Every figure here is an estimate from the test request's [`Speed`] (`preflight`): a
//! prompt of a few tokens, so the workload's own prefill is left out, and a parallelism
//! measured with [`super::preflight::TOGETHER`] requests sent at once. The progress line
//! replaces it with what it sees as each phase goes on.

use super::warmup::{REQUIRED_OUTPUT_TOKENS, REQUIRED_REQUESTS};
use crate::config::{PrefillSetup, RunConfig, Warmup, WarmupSizing};
use crate::record::speed::Speed;
use crate::schedule::LoadPattern;

/// Seconds a `--quick` test's warm-up aims at.
pub const QUICK_WARMUP_S: f64 = 10.0;
/// Prompt lengths the prefill profile measures unless told (`profile::lengths`).
const PROFILE_LENGTHS: f64 = 5.0;
/// Verification probes a warm-up usually needs (two in a row within 10 %, up to ten).
const TYPICAL_PROBES: f64 = 3.0;
/// Output tokens of a verification probe (`warmup::probe`).
const PROBE_OUTPUT_TOKENS: f64 = 32.0;

/// The warm-up a run is about to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WarmupPlan {
    /// Requests it will send, about.
    pub requests: u64,
    /// Seconds it should take, at most the cap; `None` when the server's speed is unknown.
    pub seconds: Option<f64>,
    /// `--warmup auto`: seconds the draft's minimum needs at the measured speed, uncapped.
    pub needed_s: Option<f64>,
    /// `--warmup auto`: the cap will stop it short of the draft's minimum (not compliant).
    pub capped: bool,
    /// `--warmup-max`, s.
    pub cap_s: f64,
    /// Who chose the count and the cap.
    pub sizing: WarmupSizing,
}

/// The measured phase a run is about to do.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MeasurePlan {
    /// Measured requests: the limit, or about what the duration holds at the expected rate.
    pub requests: Option<u64>,
    /// Seconds it should take: the duration, or the request count at the expected rate.
    pub seconds: Option<f64>,
    /// Requests completed per second expected at the run's load.
    pub rate_per_s: Option<f64>,
}

/// Requests a warm-up must send for the draft's minimum: at least 100, and enough for
/// 10,000 output tokens at the workload's mean output length (whichever is greater).
pub fn draft_minimum_requests(mean_output_tokens: f64) -> u64 {
    let for_tokens = (REQUIRED_OUTPUT_TOKENS as f64 / mean_output_tokens.max(1.0)).ceil() as u64;
    for_tokens.max(REQUIRED_REQUESTS)
}

/// Requests per second the server should complete under `load`, each of `output_tokens`:
/// a closed loop's streams at the parallelism the server showed; an open loop's rate, or
/// less when the server cannot keep up with it. `None` for a trace (its own pace).
pub fn expected_rate(load: LoadPattern, output_tokens: f64, speed: &Speed) -> Option<f64> {
    match load {
        LoadPattern::Closed { concurrency } => {
            Some(speed.rate_per_s(f64::from(concurrency.max(1)), output_tokens))
        }
        // Arrivals at their rate, or at the server's capacity when it cannot keep up (with
        // every request served at once, it always can).
        LoadPattern::Open { rate_per_s, .. } => {
            Some(rate_per_s.min(speed.rate_per_s(f64::MAX, output_tokens)))
        }
        LoadPattern::Trace { .. } => None,
    }
    .filter(|r| r.is_finite() && *r > 0.0)
}

/// The warm-up of `config` (`None`: no warm-up), at its load, from the server's speed.
pub fn warmup_plan(config: &RunConfig) -> Option<WarmupPlan> {
    let out = config.workload.output.mean();
    let cap_s = config.warmup_max.as_secs_f64();
    let requests = match config.warmup {
        Warmup::None => return None,
        Warmup::Requests(n) => n,
        Warmup::Auto => draft_minimum_requests(out),
    };
    let rate = config
        .preflight
        .as_ref()
        .and_then(|s| expected_rate(config.load, out, s));
    let probes_s = match (config.warmup, &config.preflight) {
        (Warmup::Auto, Some(s)) => TYPICAL_PROBES * s.request_ms(PROBE_OUTPUT_TOKENS) / 1000.0,
        _ => 0.0,
    };
    let needed_s = rate.map(|r| requests as f64 / r);
    let capped = config.warmup == Warmup::Auto && needed_s.is_some_and(|n| n > cap_s);
    Some(WarmupPlan {
        requests: match (capped, rate) {
            (true, Some(r)) => (r * cap_s).ceil() as u64,
            _ => requests,
        },
        seconds: needed_s.map(|n| n.min(cap_s) + probes_s),
        needed_s: needed_s.filter(|_| config.warmup == Warmup::Auto),
        capped,
        cap_s,
        sizing: config.warmup_sizing,
    })
}

/// Requests of a `--quick` test's warm-up: about [`QUICK_WARMUP_S`] of the level's load at
/// the measured speed, at least one per stream (five in open loop), at most the draft's 100.
pub fn quick_warmup_requests(load: LoadPattern, output_tokens: f64, speed: Option<&Speed>) -> u64 {
    let floor = match load {
        LoadPattern::Closed { concurrency } => u64::from(concurrency.max(1)),
        _ => 5,
    }
    .min(REQUIRED_REQUESTS);
    speed
        .and_then(|s| expected_rate(load, output_tokens, s))
        .map(|r| (r * QUICK_WARMUP_S).ceil() as u64)
        .unwrap_or(floor)
        .clamp(floor, REQUIRED_REQUESTS)
}

/// The prefill profile's expected length, s (`None`: it does not run), and its cap.
pub fn profile_plan(config: &RunConfig) -> Option<(Option<f64>, f64)> {
    let PrefillSetup::Profile(plan) = &config.prefill else {
        return None;
    };
    let cap = plan.budget.as_secs_f64();
    let lengths = plan
        .lengths
        .as_ref()
        .map_or(PROFILE_LENGTHS, |l| l.len() as f64);
    let requests = lengths * f64::from(plan.repeats + 1);
    let expected = config
        .preflight
        .as_ref()
        .map(|s| (requests * s.request_ms(1.0) / 1000.0).min(cap));
    Some((expected, cap))
}

/// The measured phase of `config`, at the rate expected from the server's speed (or
/// `rate_per_s` when one was measured, e.g. in the warm-up).
pub fn measure_plan(config: &RunConfig, rate_per_s: Option<f64>) -> MeasurePlan {
    let rate = rate_per_s.filter(|r| *r > 0.0).or_else(|| {
        let out = config.workload.output.mean();
        config
            .preflight
            .as_ref()
            .and_then(|s| expected_rate(config.load, out, s))
    });
    let duration = config.limits.duration.map(|d| d.as_secs_f64());
    let by_count = config.limits.requests.zip(rate).map(|(n, r)| n as f64 / r);
    MeasurePlan {
        requests: config
            .limits
            .requests
            .or_else(|| duration.zip(rate).map(|(d, r)| (d * r).round() as u64)),
        seconds: match (duration, by_count) {
            (Some(d), Some(c)) => Some(d.min(c)),
            (d, c) => d.or(c),
        },
        rate_per_s: rate,
    }
}

/// `1h02m`, `4m10s`, `12s`, `300ms`.
pub fn human(s: f64) -> String {
    if s > 0.0 && s < 0.5 {
        return format!("{:.0}ms", s * 1000.0);
    }
    let s = s.max(0.0).round() as u64;
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// The warm-up cap of a run whose `--warmup-max` was not given: half its measured phase's
/// planned length (at least [`QUICK_WARMUP_S`]) when that is below the default cap and the
/// draft's warm-up would outlast the default cap anyway (it is not compliant either way), so
/// a "10 s" run against a slow server does not warm up for two minutes; a warm-up the
/// default cap lets comply is left alone. `None`: keep the cap
/// (given, or the measured phase's length is unknown or long).
pub fn proportionate_warmup_max(config: &RunConfig) -> Option<std::time::Duration> {
    if config.warmup != Warmup::Auto || config.warmup_sizing != WarmupSizing::Flags {
        return None;
    }
    // A warm-up the default cap lets meet the draft keeps it: the run stays compliant.
    let needed_s = warmup_plan(config)?.needed_s?;
    if needed_s <= config.warmup_max.as_secs_f64() {
        return None;
    }
    let measured_s = measure_plan(config, None).seconds?;
    let cap_s = (measured_s / 2.0).max(QUICK_WARMUP_S);
    (cap_s < config.warmup_max.as_secs_f64()).then(|| std::time::Duration::from_secs_f64(cap_s))
}

/// The line printed before a warm-up starts: what it will cost, against the draft's minimum.
pub fn describe_warmup(p: &WarmupPlan, warmup: Warmup) -> String {
    let cost = match p.seconds {
        Some(s) => format!("~{}", human(s)),
        None => format!("at most {}", human(p.cap_s)),
    };
    let draft = format!(
        "draft 4.5: >= {REQUIRED_REQUESTS} requests and >= {} output tokens",
        thousands(REQUIRED_OUTPUT_TOKENS)
    );
    let why = match (warmup, p.needed_s) {
        (Warmup::Requests(_), _) if p.sizing == WarmupSizing::QuickTest => {
            format!("{draft}; a --quick test warms each level with ~{} of its load instead", human(QUICK_WARMUP_S))
        }
        (Warmup::Requests(n), _) if n < REQUIRED_REQUESTS => {
            format!("{draft}; --warmup {n} is short of it: not compliant")
        }
        (_, Some(needed)) if p.capped && p.sizing == WarmupSizing::RunLength => format!(
            "{draft} would take ~{} here; this run allows its warm-up half its measured phase, {}: it stops there, NOT compliant; --warmup-max {} would meet it",
            human(needed),
            human(p.cap_s),
            human((needed * 1.2 / 10.0).ceil() * 10.0)
        ),
        (Warmup::Requests(_), _) => format!("{draft}; --warmup-max {} caps it", human(p.cap_s)),
        (_, Some(needed)) if p.capped => format!(
            "{draft} would take ~{} here, more than --warmup-max {}: it stops there, NOT compliant; --warmup-max {} would meet it",
            human(needed),
            human(p.cap_s),
            human((needed * 1.2 / 10.0).ceil() * 10.0)
        ),
        (_, Some(_)) => format!(
            "{draft}, then probes until stable; at most --warmup-max {}",
            human(p.cap_s)
        ),
        (_, None) => format!(
            "{draft}, then probes until stable; the server's speed is unknown, at most --warmup-max {}",
            human(p.cap_s)
        ),
    };
    format!("warming up: ~{} requests, {cost} ({why})", p.requests)
}

/// The line printed before a run starts: each phase's expected length and the total.
pub fn describe_run(config: &RunConfig) -> String {
    let mut parts = Vec::new();
    let mut total = 0.0;
    let mut known = true;
    if let Some(w) = warmup_plan(config) {
        match w.seconds {
            Some(s) => {
                total += s;
                parts.push(format!("warm-up ~{}", human(s)));
            }
            None => {
                known = false;
                parts.push(format!("warm-up up to {}", human(w.cap_s)));
            }
        }
    }
    if let Some((expected, cap)) = profile_plan(config) {
        let e = expected.unwrap_or(cap);
        total += e;
        parts.push(format!(
            "prefill profile ~{} (at most {})",
            human(e),
            human(cap)
        ));
    }
    let m = measure_plan(config, None);
    let what = match (config.limits.requests, m.rate_per_s) {
        (Some(n), Some(r)) => format!("{n} measured requests at ~{} req/s", rate(r)),
        (Some(n), None) => format!("{n} measured requests"),
        (None, _) => "measurement".to_owned(),
    };
    match m.seconds {
        Some(s) => {
            total += s;
            parts.push(format!("{what} ~{}", human(s)));
        }
        None => {
            known = false;
            parts.push(format!(
                "{what} (length known once the warm-up has measured the rate)"
            ));
        }
    }
    let basis = if config.preflight.is_some() {
        "estimated from the test request's speed; the progress line corrects it"
    } else {
        "the server's speed is unknown"
    };
    format!(
        "Planned: {}{} ({basis})",
        parts.join(", "),
        if known {
            format!("; about {} in all", human(total))
        } else {
            String::new()
        }
    )
}

/// A request rate with the decimals it needs.
fn rate(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}")
    } else if r >= 1.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.2}")
    }
}

/// `10,000`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Arrival;
    use std::time::Duration;

    /// One request alone: 100 ms to the first token, 20 ms per token after it; eight sent
    /// together were served about four at a time (a server of four slots).
    fn four_slots() -> Speed {
        Speed {
            ttft_ms: 100.0,
            ms_per_token: 20.0,
            served_together: 4.0,
            sent_together: 8,
            closes_connections: false,
        }
    }

    /// A run's configuration from `servebench run --output-tokens 101 --no-fluidity`, with
    /// `load`, `warmup` and `speed`. (The flags are checked as the CLI checks them; the run
    /// folder they create, empty, is removed at once.)
    fn config(load: LoadPattern, warmup: Warmup, speed: Option<Speed>) -> RunConfig {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let out = std::env::temp_dir().join(format!("servebench-plan-{}-{n}", std::process::id()));
        let out = out.to_str().unwrap().to_owned();
        let args = [
            "servebench",
            "run",
            "--output-tokens",
            "101",
            "--no-fluidity",
            "--out",
            out.as_str(),
        ];
        let cli = <crate::flags::Cli as clap::Parser>::try_parse_from(args).unwrap();
        let crate::flags::Command::Run(a) = cli.command else {
            unreachable!()
        };
        let mut c = crate::pipeline::resolve::resolve(&a.run, "http://127.0.0.1:1/v1", true)
            .unwrap()
            .config;
        let _ = std::fs::remove_dir(&c.out_dir);
        c.load = load;
        c.warmup = warmup;
        c.preflight = speed;
        c
    }

    /// Issue 36, items 4 and 5: a "10 s" run against a slow server warmed up for two
    /// minutes; now its cap is half its measured phase (at least 10 s) unless given, and the
    /// warm-up line says whose choice the cap or the count was.
    #[test]
    fn a_short_runs_warm_up_is_in_proportion_and_says_whose_choice_it_is() {
        let slow = Speed {
            served_together: 1.0,
            ..four_slots()
        };
        let mut c = config(
            LoadPattern::Closed { concurrency: 4 },
            Warmup::Auto,
            Some(slow),
        );
        c.limits.requests = None;
        c.limits.duration = Some(std::time::Duration::from_secs(10));
        assert_eq!(
            proportionate_warmup_max(&c),
            Some(std::time::Duration::from_secs(10))
        );
        c.limits.duration = Some(std::time::Duration::from_secs(120));
        assert_eq!(
            proportionate_warmup_max(&c),
            Some(std::time::Duration::from_secs(60))
        );
        c.warmup_max = std::time::Duration::from_secs(60);
        c.warmup_sizing = WarmupSizing::RunLength;
        let p = warmup_plan(&c).unwrap();
        let line = describe_warmup(&p, Warmup::Auto);
        assert!(
            line.contains("this run allows its warm-up half its measured phase, 1m00s"),
            "{line}"
        );
        assert!(line.contains("--warmup-max 4m20s would meet it"), "{line}");
        // A warm-up the default cap lets meet the draft (52.5 s at four slots) keeps it.
        let mut quick = config(
            LoadPattern::Closed { concurrency: 32 },
            Warmup::Auto,
            Some(four_slots()),
        );
        quick.limits.requests = None;
        quick.limits.duration = Some(std::time::Duration::from_secs(10));
        assert_eq!(proportionate_warmup_max(&quick), None);
        // A long run keeps the default cap; a given one is never touched.
        c.warmup_sizing = WarmupSizing::Flags;
        c.warmup_max = std::time::Duration::from_secs(120);
        c.limits.duration = Some(std::time::Duration::from_secs(600));
        assert_eq!(proportionate_warmup_max(&c), None);
        // A --quick test's count is the test's, not a --warmup the user gave.
        c.warmup = Warmup::Requests(3);
        c.warmup_sizing = WarmupSizing::QuickTest;
        let line = describe_warmup(&warmup_plan(&c).unwrap(), c.warmup);
        assert!(!line.contains("--warmup 3"), "{line}");
        assert!(line.contains("a --quick test warms each level"), "{line}");
    }

    #[test]
    fn the_draft_minimum_in_requests_is_the_greater_of_its_two_targets() {
        assert_eq!(draft_minimum_requests(256.0), 100);
        assert_eq!(draft_minimum_requests(100.0), 100);
        assert_eq!(draft_minimum_requests(64.0), 157);
        assert_eq!(draft_minimum_requests(0.0), 10_000);
    }

    #[test]
    fn rates_follow_the_parallelism_the_server_showed() {
        let s = four_slots();
        // 101 tokens: 100 + 100 × 20 = 2.1 s a request; 32 streams on four slots.
        let closed = expected_rate(LoadPattern::Closed { concurrency: 32 }, 101.0, &s).unwrap();
        assert!((closed - 4.0 / 2.1).abs() < 1e-9, "{closed}");
        // An open loop below capacity runs at its rate, above it at capacity.
        let open = |r| LoadPattern::Open {
            rate_per_s: r,
            arrival: Arrival::Poisson,
        };
        assert_eq!(expected_rate(open(0.5), 101.0, &s), Some(0.5));
        let over = expected_rate(open(40.0), 101.0, &s).unwrap();
        assert!((over - 4.0 / 2.1).abs() < 1e-9, "{over}");
        assert_eq!(
            expected_rate(LoadPattern::Trace { speed: 1.0 }, 101.0, &s),
            None
        );
    }

    /// Issue 23: the default warm-up against a four-slot server at concurrency 32 is stopped
    /// by its cap and not compliant. That is now said before it starts, with the cap that
    /// would meet the draft.
    #[test]
    fn a_warm_up_the_cap_will_stop_says_so_before_it_starts() {
        let c = config(
            LoadPattern::Closed { concurrency: 32 },
            Warmup::Auto,
            Some(four_slots()),
        );
        let p = warmup_plan(&c).unwrap();
        // 101-token answers: 100 requests reach 10,000 tokens; at 4 / 2.1 s that is 52.5 s.
        assert!(!p.capped);
        assert!((p.needed_s.unwrap() - 52.5).abs() < 1e-6, "{p:?}");
        assert_eq!(p.requests, 100);
        let line = describe_warmup(&p, Warmup::Auto);
        assert!(line.starts_with("warming up: ~100 requests, ~"), "{line}");
        assert!(
            line.contains("draft 4.5: >= 100 requests and >= 10,000 output tokens"),
            "{line}"
        );
        // A slower server: one request at a time.
        let slow = Speed {
            served_together: 1.0,
            ..four_slots()
        };
        let c = config(
            LoadPattern::Closed { concurrency: 32 },
            Warmup::Auto,
            Some(slow),
        );
        let p = warmup_plan(&c).unwrap();
        assert!(p.capped, "{p:?}");
        assert!((p.needed_s.unwrap() - 210.0).abs() < 1e-6);
        // What fits in the 120-s cap at 1 / 2.1 s.
        assert_eq!(p.requests, 58);
        let line = describe_warmup(&p, Warmup::Auto);
        assert!(line.contains("NOT compliant"), "{line}");
        assert!(line.contains("--warmup-max 4m20s would meet it"), "{line}");
        // Without a speed, the cap is what is known.
        let c = config(LoadPattern::Closed { concurrency: 32 }, Warmup::Auto, None);
        let p = warmup_plan(&c).unwrap();
        assert_eq!((p.seconds, p.requests), (None, 100));
        assert!(describe_warmup(&p, Warmup::Auto).contains("at most 2m00s"));
        assert_eq!(
            warmup_plan(&config(
                LoadPattern::Closed { concurrency: 1 },
                Warmup::None,
                None
            )),
            None
        );
    }

    #[test]
    fn a_quick_warm_up_is_about_ten_seconds_of_the_load() {
        let closed = LoadPattern::Closed { concurrency: 32 };
        // 4 / 2.1 req/s × 10 s = 19.05 → 20, below one request per stream: 32.
        assert_eq!(
            quick_warmup_requests(closed, 101.0, Some(&four_slots())),
            32
        );
        let open = LoadPattern::Open {
            rate_per_s: 5.0,
            arrival: Arrival::Poisson,
        };
        let all = Speed {
            served_together: 8.0,
            ..four_slots()
        };
        assert_eq!(quick_warmup_requests(open, 101.0, Some(&all)), 50);
        assert_eq!(quick_warmup_requests(open, 101.0, None), 5);
        let fast = LoadPattern::Open {
            rate_per_s: 500.0,
            arrival: Arrival::Poisson,
        };
        assert_eq!(quick_warmup_requests(fast, 101.0, Some(&all)), 100);
    }

    #[test]
    fn the_run_plan_gives_each_phase_and_the_total() {
        let mut c = config(
            LoadPattern::Closed { concurrency: 4 },
            Warmup::Requests(10),
            Some(four_slots()),
        );
        c.limits.requests = Some(100);
        c.limits.duration = None;
        let m = measure_plan(&c, None);
        // 4 / 2.1 req/s: 100 requests in 52.5 s.
        assert!((m.seconds.unwrap() - 52.5).abs() < 1e-6, "{m:?}");
        let line = describe_run(&c);
        assert!(line.starts_with("Planned: warm-up ~5s, "), "{line}");
        assert!(
            line.contains("100 measured requests at ~1.9 req/s ~53s"),
            "{line}"
        );
        assert!(line.contains("about 58s in all"), "{line}");
        // A duration bounds it; with a measured rate, the count follows.
        c.limits.duration = Some(Duration::from_secs(30));
        let m = measure_plan(&c, Some(2.0));
        assert_eq!((m.seconds, m.requests), (Some(30.0), Some(100)));
        c.limits.requests = None;
        assert_eq!(measure_plan(&c, Some(2.0)).requests, Some(60));
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human(12.4), "12s");
        assert_eq!(human(250.0), "4m10s");
        assert_eq!(human(3720.0), "1h02m");
        assert_eq!(human(0.2), "200ms");
        assert_eq!(human(0.0), "0s");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(100), "100");
    }
}
