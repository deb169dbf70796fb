//! Finding the most load that passes: bracket by doubling (or halving) from an estimate,
//! then bisect (draft 5.2.3 step 4 and 5.5.3 step 4).
//!
//! The searches only see a probe that says pass or fail for a load; what passing means
//! (no saturation signal, SLO met with confidence) is the procedure's business. They
//! assume passing is monotone in load (more load never turns a fail into a pass), which is
//! what the draft's binary search assumes too; a noisy level that breaks it can only make
//! the answer conservative, never report a failing load as sustainable, because the
//! reported load is always one that was measured and passed.

use super::level::{Role, Stop};
use serde::{Deserialize, Serialize};

/// A probe's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Pass,
    Fail,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult<T> {
    /// The highest load that passed (`None`: nothing passed).
    pub sustainable: Option<T>,
    /// The lowest load above it that failed (`None`: nothing failed up to the limit).
    pub failing: Option<T>,
    /// The bracket was narrowed to the tolerance.
    pub converged: bool,
    /// How the search ended, in words.
    pub note: String,
}

/// A rate search (open loop), requests per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatePlan {
    /// First rate tried.
    pub start_per_s: f64,
    /// Stop bisecting when (failing − passing) ≤ tolerance × passing.
    pub tolerance: f64,
    /// Give up doubling after this many steps (the server never saturated).
    pub max_doublings: u32,
    /// Give up halving below this rate.
    pub min_rate_per_s: f64,
}

/// Brackets then bisects a rate. Stops early (returning what it knows) when the probe
/// stops; the stop is handed back.
pub fn search_rate(
    plan: &RatePlan,
    probe: impl FnMut(f64, Role) -> Result<Probe, Stop>,
) -> (SearchResult<f64>, Option<Stop>) {
    search_load(plan, probe)
}

/// A concurrency search (closed loop).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConcurrencyPlan {
    /// First concurrency tried (the draft's example: 8).
    pub start: u32,
    /// Upper bound of the search (the draft's example: 512).
    pub max: u32,
    /// Stop when (failing − passing) ≤ max(1, tolerance × passing); 0 finds the exact value.
    pub tolerance: f64,
}

/// Brackets then bisects a concurrency.
pub fn search_concurrency(
    plan: &ConcurrencyPlan,
    probe: impl FnMut(u32, Role) -> Result<Probe, Stop>,
) -> (SearchResult<u32>, Option<Stop>) {
    search_load(plan, probe)
}

/// The load a search turns (a rate, a concurrency): where it starts, how it steps up and
/// down while bracketing, and when a bracket is narrow enough.
pub trait Knob {
    type Load: Copy;
    /// The first load tried.
    fn first(&self) -> Self::Load;
    /// The next load up from `at` (which passed) after `steps` steps up, or why the search
    /// ends there (nothing above it failed).
    fn up(&self, at: Self::Load, steps: u32) -> Result<Self::Load, String>;
    /// The next load down from `at` (which failed), or how the search ends there (nothing
    /// passed): whether that counts as converged, and why.
    fn down(&self, at: Self::Load) -> Result<Self::Load, (bool, String)>;
    /// The bracket (`l` passed, `h` failed) is still wider than the tolerance.
    fn wide(&self, l: Self::Load, h: Self::Load) -> bool;
    /// The load bisection tries between `l` and `h`.
    fn mid(&self, l: Self::Load, h: Self::Load) -> Self::Load;
    /// The note of a converged search.
    fn converged_note(&self, l: Self::Load, h: Self::Load) -> String;
}

impl Knob for RatePlan {
    type Load = f64;
    fn first(&self) -> f64 {
        self.start_per_s
    }
    fn up(&self, at: f64, steps: u32) -> Result<f64, String> {
        if steps == self.max_doublings {
            return Err(format!(
                "never saturated: every rate up to {} req/s passed",
                super::level::rate(at)
            ));
        }
        Ok(at * 2.0)
    }
    fn down(&self, at: f64) -> Result<f64, (bool, String)> {
        let r = at / 2.0;
        if r < self.min_rate_per_s {
            return Err((
                false,
                format!(
                    "no rate passed down to {} req/s",
                    super::level::rate(r * 2.0)
                ),
            ));
        }
        Ok(r)
    }
    fn wide(&self, l: f64, h: f64) -> bool {
        h - l > self.tolerance * l
    }
    fn mid(&self, l: f64, h: f64) -> f64 {
        (l + h) / 2.0
    }
    fn converged_note(&self, l: f64, h: f64) -> String {
        format!(
            "between {} (passed) and {} req/s (failed), within {:.0} %",
            super::level::rate(l),
            super::level::rate(h),
            self.tolerance * 100.0
        )
    }
}

impl ConcurrencyPlan {
    /// The search's upper bound, at least 1.
    fn limit(&self) -> u32 {
        self.max.max(1)
    }
}

impl Knob for ConcurrencyPlan {
    type Load = u32;
    fn first(&self) -> u32 {
        self.start.clamp(1, self.limit())
    }
    fn up(&self, at: u32, _steps: u32) -> Result<u32, String> {
        let max = self.limit();
        if at == max {
            return Err(format!(
                "every concurrency up to the search limit {max} passed (raise --concurrency-limit)"
            ));
        }
        Ok((at * 2).min(max))
    }
    fn down(&self, at: u32) -> Result<u32, (bool, String)> {
        if at == 1 {
            return Err((
                true,
                "even one request at a time failed the criteria".into(),
            ));
        }
        Ok(at / 2)
    }
    fn wide(&self, l: u32, h: u32) -> bool {
        // Not within max(1, tolerance × passing).
        h - l > ((self.tolerance * l as f64).floor() as u32).max(1)
    }
    fn mid(&self, l: u32, h: u32) -> u32 {
        l + (h - l) / 2
    }
    fn converged_note(&self, l: u32, h: u32) -> String {
        format!("{l} passed, {h} failed")
    }
}

/// How a search ended: what it found, and the probe's stop when it stopped early.
type Ended<T> = (SearchResult<T>, Option<Stop>);

/// Brackets the load `knob` turns by stepping up (or down) from its first load, then
/// bisects to its tolerance. Stops early (returning what it knows) when the probe stops;
/// the stop is handed back.
pub fn search_load<K: Knob>(
    knob: &K,
    mut probe: impl FnMut(K::Load, Role) -> Result<Probe, Stop>,
) -> (SearchResult<K::Load>, Option<Stop>) {
    let (mut l, mut h) = match bracket(knob, &mut probe) {
        Ok(bracket) => bracket,
        Err(ended) => return ended,
    };
    while knob.wide(l, h) {
        let mid = knob.mid(l, h);
        match probe(mid, Role::Bisect) {
            Err(s) => return stopped(Some(l), Some(h), s),
            Ok(Probe::Pass) => l = mid,
            Ok(Probe::Fail) => h = mid,
        }
    }
    (
        SearchResult {
            sustainable: Some(l),
            failing: Some(h),
            converged: true,
            note: knob.converged_note(l, h),
        },
        None,
    )
}

/// A load that passed and one above it that failed, or how the search ended without them.
type Bracketed<L> = Result<(L, L), Ended<L>>;

/// A load that passed and one above it that failed, or how the search ended without them.
fn bracket<K: Knob>(
    knob: &K,
    probe: &mut impl FnMut(K::Load, Role) -> Result<Probe, Stop>,
) -> Bracketed<K::Load> {
    let first = knob.first();
    match probe(first, Role::Bracket) {
        Err(s) => Err(stopped(None, None, s)),
        Ok(Probe::Pass) => bracket_up(knob, probe, first),
        Ok(Probe::Fail) => bracket_down(knob, probe, first),
    }
}

/// Steps up from `passed` until a load fails.
fn bracket_up<K: Knob>(
    knob: &K,
    probe: &mut impl FnMut(K::Load, Role) -> Result<Probe, Stop>,
    passed: K::Load,
) -> Bracketed<K::Load> {
    let mut lo = passed;
    let mut steps = 0;
    loop {
        let next = match knob.up(lo, steps) {
            Ok(next) => next,
            Err(note) => {
                return Err((
                    SearchResult {
                        sustainable: Some(lo),
                        failing: None,
                        converged: false,
                        note,
                    },
                    None,
                ))
            }
        };
        steps += 1;
        match probe(next, Role::Bracket) {
            Err(s) => return Err(stopped(Some(lo), None, s)),
            Ok(Probe::Pass) => lo = next,
            Ok(Probe::Fail) => return Ok((lo, next)),
        }
    }
}

/// Steps down from `failed` until a load passes.
fn bracket_down<K: Knob>(
    knob: &K,
    probe: &mut impl FnMut(K::Load, Role) -> Result<Probe, Stop>,
    failed: K::Load,
) -> Bracketed<K::Load> {
    let mut hi = failed;
    loop {
        let next = match knob.down(hi) {
            Ok(next) => next,
            Err((converged, note)) => {
                return Err((
                    SearchResult {
                        sustainable: None,
                        failing: Some(hi),
                        converged,
                        note,
                    },
                    None,
                ))
            }
        };
        match probe(next, Role::Bracket) {
            Err(s) => return Err(stopped(None, Some(hi), s)),
            Ok(Probe::Pass) => return Ok((next, hi)),
            Ok(Probe::Fail) => hi = next,
        }
    }
}

/// A search the probe stopped: what it knew, and the stop.
fn stopped<T>(lo: Option<T>, hi: Option<T>, stop: Stop) -> Ended<T> {
    (
        SearchResult {
            sustainable: lo,
            failing: hi,
            converged: false,
            note: format!("search stopped early: {stop}"),
        },
        Some(stop),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate_plan(start: f64) -> RatePlan {
        RatePlan {
            start_per_s: start,
            tolerance: 0.05,
            max_doublings: 10,
            min_rate_per_s: 0.01,
        }
    }

    #[test]
    fn rate_search_brackets_up_then_bisects() {
        // Passing means rate ≤ 10.3. From 4: 4 ✓, 8 ✓, 16 ✗; bisect 12 ✗, 10 ✓, 11 ✗,
        // 10.5 ✗; (10.5 − 10) = 0.5 ≤ 0.05 × 10 → stop at 10.
        let mut tried = Vec::new();
        let (r, stop) = search_rate(&rate_plan(4.0), |x, role| {
            tried.push((x, role));
            Ok(if x <= 10.3 { Probe::Pass } else { Probe::Fail })
        });
        assert!(stop.is_none());
        let rates: Vec<f64> = tried.iter().map(|t| t.0).collect();
        assert_eq!(rates, vec![4.0, 8.0, 16.0, 12.0, 10.0, 11.0, 10.5]);
        assert_eq!(tried[3].1, Role::Bisect);
        assert_eq!(r.sustainable, Some(10.0));
        assert_eq!(r.failing, Some(10.5));
        assert!(r.converged);
    }

    #[test]
    fn rate_search_brackets_down_below_one_request_per_second() {
        // Capacity 0.3 req/s: 2 ✗, 1 ✗, 0.5 ✗, 0.25 ✓; bisect 0.375 ✗, 0.3125 ✗, 0.28125 ✓;
        // (0.3125 − 0.28125) = 0.03125 > 0.014 → 0.296875 ✓; 0.015625 > 0.0148 → 0.3046875 ✗;
        // 0.0078125 ≤ 0.0148 → stop at 0.296875.
        let (r, _) = search_rate(&rate_plan(2.0), |x, _| {
            Ok(if x <= 0.3 { Probe::Pass } else { Probe::Fail })
        });
        assert_eq!(r.sustainable, Some(0.296875));
        assert_eq!(r.failing, Some(0.3046875));
    }

    #[test]
    fn rate_search_reports_never_saturating_and_nothing_passing() {
        let plan = RatePlan {
            max_doublings: 3,
            ..rate_plan(1.0)
        };
        let (r, _) = search_rate(&plan, |_, _| Ok(Probe::Pass));
        assert_eq!(r.sustainable, Some(8.0));
        assert_eq!(r.failing, None);
        assert!(!r.converged);
        assert!(r.note.contains("never saturated"), "{}", r.note);
        let plan = RatePlan {
            min_rate_per_s: 0.2,
            ..rate_plan(1.0)
        };
        let mut n = 0;
        let (r, _) = search_rate(&plan, |_, _| {
            n += 1;
            Ok(Probe::Fail)
        });
        assert_eq!(r.sustainable, None);
        assert_eq!(n, 3, "1, 0.5, 0.25 tried; 0.125 is below the floor");
    }

    #[test]
    fn a_stop_keeps_what_was_learned() {
        let mut n = 0;
        let (r, stop) = search_rate(&rate_plan(4.0), |x, _| {
            n += 1;
            if n == 4 {
                return Err(Stop::Interrupted);
            }
            Ok(if x <= 10.3 { Probe::Pass } else { Probe::Fail })
        });
        assert!(matches!(stop, Some(Stop::Interrupted)));
        assert_eq!(r.sustainable, Some(8.0));
        assert_eq!(r.failing, Some(16.0));
        assert!(!r.converged);
    }

    #[test]
    fn concurrency_search_finds_the_exact_capacity() {
        // Capacity 4 from 8: 8 ✗, 4 ✓; bisect 6 ✗, 5 ✗ → 4.
        let mut tried = Vec::new();
        let plan = ConcurrencyPlan {
            start: 8,
            max: 512,
            tolerance: 0.0,
        };
        let (r, _) = search_concurrency(&plan, |c, _| {
            tried.push(c);
            Ok(if c <= 4 { Probe::Pass } else { Probe::Fail })
        });
        assert_eq!(tried, vec![8, 4, 6, 5]);
        assert_eq!(r.sustainable, Some(4));
        assert_eq!(r.failing, Some(5));
        // Capacity 100 from 8: 8, 16, 32, 64 ✓, 128 ✗; 96 ✓, 112 ✗, 104 ✗, 100 ✓, 102 ✗, 101 ✗.
        let mut tried = Vec::new();
        let (r, _) = search_concurrency(&plan, |c, _| {
            tried.push(c);
            Ok(if c <= 100 { Probe::Pass } else { Probe::Fail })
        });
        assert_eq!(tried, vec![8, 16, 32, 64, 128, 96, 112, 104, 100, 102, 101]);
        assert_eq!(r.sustainable, Some(100));
    }

    #[test]
    fn concurrency_search_limits() {
        let plan = ConcurrencyPlan {
            start: 8,
            max: 20,
            tolerance: 0.0,
        };
        let mut tried = Vec::new();
        let (r, _) = search_concurrency(&plan, |c, _| {
            tried.push(c);
            Ok(Probe::Pass)
        });
        assert_eq!(tried, vec![8, 16, 20]);
        assert_eq!(r.sustainable, Some(20));
        assert!(r.note.contains("search limit"));
        let (r, _) = search_concurrency(&plan, |_, _| Ok(Probe::Fail));
        assert_eq!(r.sustainable, None);
    }
}
