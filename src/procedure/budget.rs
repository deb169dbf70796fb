//! The time budget of a test (`--budget 30m`): a level starts only if it is expected to end
//! within the budget, so a test never overruns by more than one level's misjudged length.
//!
//! And what a test will take, said before it starts ([`plan`]): its levels, how many (a
//! search stops when it has its answer, so a range), how long each measures, and the total
//! with the warm-up and the time between levels.

use super::level::Load;
use super::{Options, TestName};
use crate::runner::plan::human;
use std::time::Duration;

/// Seconds a level costs beyond its measured phase: readiness, warm-up probes, the grace
/// for the last requests, writing the folder. A guess that is refined as levels run.
pub const DEFAULT_OVERHEAD_S: f64 = 5.0;

/// A group of a test's levels, planned before it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedLevels {
    pub what: String,
    /// How many: at least, at most.
    pub count: (u32, u32),
    /// Measured seconds of each; `None`: a request count at a rate not known yet.
    pub each_s: Option<f64>,
    /// `each_s` is a minimum (a level that runs until it has enough completions).
    pub at_least: bool,
    /// Each level is this many requests (its length is their count at the expected rate).
    pub requests: Option<u64>,
}

/// What a test will run, said before it starts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestPlan {
    pub parts: Vec<PlannedLevels>,
}

impl TestPlan {
    fn add(&mut self, what: &str, count: (u32, u32), each_s: Option<f64>) {
        if count.1 > 0 {
            self.parts.push(PlannedLevels {
                what: what.into(),
                count,
                each_s,
                at_least: false,
                requests: None,
            });
        }
    }

    /// Levels of `requests` requests each, at `rate` requests per second when known.
    fn add_count(&mut self, what: &str, count: (u32, u32), requests: u64, rate: Option<f64>) {
        let each_s = rate.filter(|r| *r > 0.0).map(|r| requests as f64 / r);
        self.add(what, count, each_s);
        if let Some(last) = self.parts.last_mut() {
            last.requests = Some(requests);
        }
    }

    /// Levels, at least and at most.
    pub fn levels(&self) -> (u32, u32) {
        self.parts
            .iter()
            .fold((0, 0), |(a, b), p| (a + p.count.0, b + p.count.1))
    }

    /// Seconds, at least and at most: the measured phases, `overhead_s` per level and
    /// `warmup_s` once. Levels of unknown length count their overhead only.
    pub fn seconds(&self, overhead_s: f64, warmup_s: f64) -> (f64, f64) {
        let (lo, hi) = self.parts.iter().fold((0.0, 0.0), |(a, b), p| {
            let each = p.each_s.unwrap_or(0.0) + overhead_s;
            (
                a + each * f64::from(p.count.0),
                b + each * f64::from(p.count.1),
            )
        });
        (lo + warmup_s, hi + warmup_s)
    }

    /// `reference 30s, 7-12 search levels of 1m00s; 8-13 levels, about 9m-15m with the
    /// warm-up and ~5s between levels`.
    pub fn describe(&self, overhead_s: f64, warmup_s: f64) -> String {
        let parts: Vec<String> = self.parts.iter().map(describe_part).collect();
        let (lo, hi) = self.levels();
        let (slo, shi) = self.seconds(overhead_s, warmup_s);
        let levels = match (lo, hi) {
            (1, 1) => "1 level".to_owned(),
            (a, b) if a == b => format!("{a} levels"),
            (a, b) => format!("{a}-{b} levels"),
        };
        let about = if (shi - slo).abs() < 1.0 {
            human(shi)
        } else {
            format!("{}-{}", human(slo), human(shi))
        };
        let unknown = if self.parts.iter().any(|p| p.each_s.is_none()) {
            " plus the request-count levels"
        } else {
            ""
        };
        format!(
            "{}; {levels}, about {about}{unknown} with the warm-up (~{}) and ~{} between levels",
            parts.join(", "),
            human(warmup_s),
            human(overhead_s)
        )
    }
}

/// `3-8 search levels of 1m00s`, `reference 30s`, `3 cache levels of 40 requests (~20s)`.
fn describe_part(p: &PlannedLevels) -> String {
    let each = match (p.requests, p.each_s) {
        (Some(n), Some(s)) => format!("{n} requests (~{})", human(s)),
        (Some(n), None) => format!("{n} requests"),
        (None, Some(s)) if p.at_least => format!(">= {}", human(s)),
        (None, Some(s)) => human(s),
        (None, None) => "unknown length".into(),
    };
    match p.count {
        (1, 1) => format!("{} {each}", p.what),
        (a, b) if a == b => format!("{a} {} levels of {each}", p.what),
        (a, b) => format!("{a}-{b} {} levels of {each}", p.what),
    }
}

/// What is spent and what is left.
#[derive(Debug, Clone)]
pub struct Budget {
    /// `None`: unlimited.
    pub limit: Option<Duration>,
    spent_s: f64,
    /// Observed overhead per level (mean), s.
    overhead_s: f64,
    levels: u32,
}

impl Budget {
    pub fn new(limit: Option<Duration>) -> Self {
        Self {
            limit,
            spent_s: 0.0,
            overhead_s: DEFAULT_OVERHEAD_S,
            levels: 0,
        }
    }

    /// Seconds left (`None`: unlimited).
    pub fn left_s(&self) -> Option<f64> {
        self.limit
            .map(|l| (l.as_secs_f64() - self.spent_s).max(0.0))
    }

    pub fn spent_s(&self) -> f64 {
        self.spent_s
    }

    /// Expected length of a level whose measured phase lasts `measure_s`.
    pub fn expected_s(&self, measure_s: f64) -> f64 {
        measure_s + self.overhead_s
    }

    /// Whether a level expected to take `expected_s` fits: `Err((needed, left))` when not.
    pub fn admit(&self, expected_s: f64) -> Result<(), (f64, f64)> {
        match self.left_s() {
            Some(left) if expected_s > left => Err((expected_s, left)),
            _ => Ok(()),
        }
    }

    /// Records time spent outside levels (server start, readiness).
    pub fn spend(&mut self, seconds: f64) {
        self.spent_s += seconds.max(0.0);
    }

    /// Records a level that took `took_s` for a measured phase of `measure_s`.
    pub fn level_done(&mut self, took_s: f64, measure_s: f64) {
        self.spent_s += took_s.max(0.0);
        self.levels += 1;
        let overhead = (took_s - measure_s).max(0.0);
        self.overhead_s += (overhead - self.overhead_s) / self.levels as f64;
    }
}

/// The levels `test` will run with options `o`. `rate_at` is the server's expected
/// completion rate at a load (requests per second), from its measured speed: it sets the
/// capacity estimate's outcome and the length of the request-count levels.
pub fn plan(test: TestName, o: &Options, rate_at: &dyn Fn(Load) -> Option<f64>) -> TestPlan {
    let mut p = TestPlan::default();
    let cal = Some(o.calibration().as_secs_f64());
    let main = |full: f64, quick: f64| Some(o.duration(full, quick).as_secs_f64());
    let capacity = o.capacity_rate_per_s.or_else(|| {
        rate_at(Load::Concurrency {
            concurrency: o.estimate_concurrency,
        })
    });
    // The capacity estimate runs unless --capacity gave it.
    let est = if o.capacity_rate_per_s.is_none() {
        (1, 1)
    } else {
        (0, 0)
    };
    match test {
        TestName::Ttft => ttft(&mut p, o, est, capacity, rate_at),
        TestName::Throughput => {
            p.add("reference", (1, 1), cal);
            p.add("capacity estimate", est, cal);
            // Bracketing, then bisecting to --tolerance; SLO levels may be extended.
            let bisect = (1.0 / o.tolerance.max(1e-3)).log2().ceil() as u32;
            p.add("search", (2 + bisect, 5 + bisect), main(60.0, 6.0));
        }
        TestName::Curve => {
            p.add("capacity estimate", est, cal);
            p.add("curve", (o.curve_levels, o.curve_levels), main(60.0, 6.0));
        }
        TestName::Itl => {
            let n = o
                .load_shares
                .as_ref()
                .map_or(super::itl::SHARES.len(), Vec::len) as u32;
            p.add("capacity estimate", est, cal);
            p.add("ITL", (n, n), main(60.0, 6.0));
        }
        TestName::Capacity => capacity_search(&mut p, o),
        TestName::Fairness => fairness(&mut p, o, est),
        TestName::PrefixCache => {
            let requests = o.requests.unwrap_or(o.count(500, 40));
            let load = o.load.unwrap_or(Load::Concurrency { concurrency: 4 });
            p.add_count("cache", (3, 3), requests, rate_at(load));
        }
        TestName::MemoryPressure => {
            if o.capacity_concurrency.is_none() {
                capacity_search(&mut p, o);
            }
            let n = o.oversubscription.len() as u32;
            p.add("oversubscription", (n, n), main(120.0, 5.0));
        }
        TestName::LongContext => {
            let output = super::long_context::output_tokens(o);
            let n = super::long_context::lengths(o, output).0.len() as u32;
            let requests = o.requests_per_length.unwrap_or(o.count(20, 5));
            let load = Load::Concurrency {
                concurrency: o.length_concurrency.max(1),
            };
            p.add_count("prompt length", (n, n), requests, rate_at(load));
        }
        TestName::Guardrails => {
            let t = o.targets.len().max(2) as u32;
            let shares = o
                .load_shares
                .as_ref()
                .map_or(super::guardrails::SHARES.len(), Vec::len) as u32;
            p.add("capacity estimate", (t, t), cal);
            p.add("guardrail", (t * shares, t * shares), main(60.0, 4.0));
        }
    }
    p
}

/// TTFT (5.1): the estimate unless the load is given, then one level of requests at half
/// the capacity (or the load given).
fn ttft(
    p: &mut TestPlan,
    o: &Options,
    est: (u32, u32),
    capacity: Option<f64>,
    rate_at: &dyn Fn(Load) -> Option<f64>,
) {
    let requests = o.requests.unwrap_or(o.count(10_000, 50));
    let load = o.load.or_else(|| {
        capacity.map(|c| Load::Rate {
            rate_per_s: c * 0.5,
        })
    });
    let est = if o.load.is_none() { est } else { (0, 0) };
    p.add(
        "capacity estimate",
        est,
        Some(o.calibration().as_secs_f64()),
    );
    p.add_count("TTFT", (1, 1), requests, load.and_then(rate_at));
}

/// The capacity search (5.5, and the start of 5.8): the reference, then levels doubling from
/// `--start-concurrency` and bisecting, each long enough for its completions per slot.
fn capacity_search(p: &mut TestPlan, o: &Options) {
    p.add("reference", (1, 1), Some(o.calibration().as_secs_f64()));
    let span = f64::from(o.concurrency_limit.max(1)) / f64::from(o.start_concurrency.max(1));
    let doublings = span.max(1.0).log2().ceil() as u32;
    p.add(
        "capacity search",
        (2, 2 * doublings.max(1) + 1),
        Some(o.duration(60.0, 3.0).as_secs_f64()),
    );
    if let Some(last) = p.parts.last_mut() {
        last.at_least = true;
    }
}

/// Fairness (5.6): the estimate, each class alone, then the mix.
fn fairness(p: &mut TestPlan, o: &Options, est: (u32, u32)) {
    let classes = if o.workload.classes.len() >= 2 {
        o.workload.classes.len() as u32
    } else {
        2
    };
    let isolated = o.duration(120.0, 4.0);
    let mixed = o
        .level_duration
        .map(|d| d.max(isolated))
        .unwrap_or_else(|| o.duration(300.0, 8.0));
    p.add(
        "capacity estimate",
        est,
        Some(o.calibration().as_secs_f64()),
    );
    p.add(
        "isolated class",
        (classes, classes),
        Some(isolated.as_secs_f64()),
    );
    p.add("mixed", (1, 1), Some(mixed.as_secs_f64()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(quick: bool) -> Options {
        Options {
            workload_given: false,
            context_tokens: Some(2048),
            ..crate::procedure::conformance::options_for(
                quick,
                None,
                crate::workload::Scenario::fixed(256, 128),
                42,
            )
        }
    }

    /// Half a request per second per stream: 16 req/s at the estimate's 32 streams.
    fn rate_at(load: Load) -> Option<f64> {
        Some(match load {
            Load::Rate { rate_per_s } => rate_per_s,
            Load::Concurrency { concurrency } => f64::from(concurrency) * 0.5,
        })
    }

    #[test]
    fn a_test_plan_gives_its_levels_and_their_lengths() {
        // --quick throughput: 3-s calibration levels, 6-s search levels, 7 to 10 of them
        // (bracketing, then log2(1 / 5 %) ≈ 5 bisections).
        let p = plan(TestName::Throughput, &options(true), &rate_at);
        assert_eq!(p.levels(), (9, 12));
        // 5 s between levels, a 10-s warm-up: 8 + 8 + 7 × 11 + 10, to 8 + 8 + 10 × 11 + 10.
        assert_eq!(p.seconds(5.0, 10.0), (103.0, 136.0));
        assert_eq!(
            p.describe(5.0, 10.0),
            "reference 3s, capacity estimate 3s, 7-10 search levels of 6s; 9-12 levels, about 1m43s-2m16s with the warm-up (~10s) and ~5s between levels"
        );
        // --quick TTFT: the estimate, then 50 requests at half of 16 req/s.
        let p = plan(TestName::Ttft, &options(true), &rate_at);
        assert_eq!(p.levels(), (2, 2));
        let line = p.describe(5.0, 0.0);
        assert!(line.contains("TTFT 50 requests (~6s)"), "{line}");
        // A known capacity skips the estimate.
        let mut o = options(false);
        o.capacity_rate_per_s = Some(4.0);
        let p = plan(TestName::Curve, &o, &rate_at);
        assert_eq!(p.levels(), (12, 12));
        assert_eq!(p.seconds(0.0, 0.0), (720.0, 720.0));
        // Long context on a 2,048-token slot: five lengths, five requests each at 0.5 req/s.
        let p = plan(TestName::LongContext, &options(true), &rate_at);
        assert_eq!(p.levels(), (5, 5));
        assert_eq!(p.seconds(0.0, 0.0), (50.0, 50.0));
        // Without a rate the request-count levels are of unknown length, and said so.
        let p = plan(TestName::PrefixCache, &options(true), &|_| None);
        let line = p.describe(5.0, 0.0);
        assert!(line.contains("3 cache levels of 40 requests;"), "{line}");
        assert!(line.contains("plus the request-count levels"), "{line}");
    }

    #[test]
    fn levels_start_only_when_they_fit() {
        let mut b = Budget::new(Some(Duration::from_secs(100)));
        assert_eq!(b.expected_s(60.0), 65.0);
        assert!(b.admit(65.0).is_ok());
        b.level_done(70.0, 60.0);
        // Overhead learned: 10 s. 30 s left; a 60 s level needs 70.
        assert_eq!(b.left_s(), Some(30.0));
        assert_eq!(b.expected_s(60.0), 70.0);
        assert_eq!(b.admit(70.0), Err((70.0, 30.0)));
        assert!(b.admit(25.0).is_ok());
        let unlimited = Budget::new(None);
        assert!(unlimited.admit(1e9).is_ok());
    }
}
