//! The server's own speed, measured before any load is sized (issue 19, item 12).
//!
//! Fixed calibration lengths fail on slow servers: a 3-second closed loop at concurrency 32
//! completes nothing on a server of 0.4 requests per second, and a 6-second level at the rate
//! it finds holds two or three requests, too few for any signal, so a level far past
//! capacity "passed". Every procedure that needs a capacity therefore starts from the
//! server's own speed, as GuideLLM's sweep does (synchronous first, then a throughput probe):
//!
//! 1. **One request alone** ([`Role::Alone`]): its end-to-end latency L1, with nothing else
//!    in flight and no warm-up before it (the warm-up is sized from it).
//! 2. **The synchronous anchor**: the concurrency-1 reference level, long enough for
//!    [`SYNC_REQUESTS`] requests one after another (10 with `--quick`, 30 otherwise; never
//!    shorter than the calibration length), after the configured warm-up, capped at 10 × L1
//!    (at least 10 s) with `--quick`. Its completion rate (1 ÷ its mean latency) is the least
//!    the server does, its P99 latency per output token the blow-up reference, its P90
//!    end-to-end latency how long a request takes.
//! 3. **The probe**: a closed loop at `--estimate-concurrency`, long enough for
//!    [`PROBE_REQUESTS`] completions at the anchor's rate (20 with `--quick`, 60 otherwise).
//!    Its completion rate ([`completion_rate`]) is the capacity the levels are sized against
//!    and the first rate the throughput search tries (`--capacity` replaces it).
//!
//! Every timed level after that is stretched ([`Pace::stretch`]) to last long enough for the
//! completions its role needs at the rate the server can have at that load
//! ([`JUDGED_COMPLETIONS`] for the search's levels, [`MEASURED_COMPLETIONS`] for sweeps), and
//! for [`LATENCIES_PER_LEVEL`] P90 request latencies when `--level-duration` is not given;
//! never longer than 300 s with `--quick` (1,800 s otherwise), never shorter than planned.

use super::level::{LevelSpec, Load, Role, Stop, WarmupChoice};
use super::session::Session;
use super::Options;
use crate::record::{Phase, RequestRecord};
use crate::workload::WorkloadSpec;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Requests of the synchronous anchor, (full, `--quick`).
pub const SYNC_REQUESTS: (u64, u64) = (30, 10);
/// Completions the closed-loop probe has room for at the anchor's rate, (full, `--quick`).
pub const PROBE_REQUESTS: (u64, u64) = (60, 20);
/// Completions a judged level (bracket, bisection, extension) has room for, (full,
/// `--quick`): the saturation signals need a few dozen arrivals to tell a queue that grows
/// from one that wanders.
pub const JUDGED_COMPLETIONS: (u64, u64) = (200, 50);
/// Completions a measured level (a sweep's point, a fairness or cache run) has room for,
/// (full, `--quick`).
pub const MEASURED_COMPLETIONS: (u64, u64) = (50, 10);
/// The shortest level, in P90 request latencies at concurrency 1 (when `--level-duration`
/// is not given): the steady span starts only once the first requests have finished.
pub const LATENCIES_PER_LEVEL: f64 = 8.0;
/// The longest a level is stretched to, s, (full, `--quick`).
pub const MAX_LEVEL_S: (f64, f64) = (1_800.0, 300.0);

/// The server's own speed and the level sizes derived from it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pace {
    /// End-to-end latency of one request alone, s.
    pub alone_s: f64,
    /// Completions per second one at a time (the synchronous anchor; 1 ÷ L1 before it).
    pub sync_rate_per_s: f64,
    /// P90 end-to-end latency one at a time, s (L1 before the anchor).
    pub latency_p90_s: f64,
    /// The closed-loop probe's completion rate, requests per second.
    pub probe_rate_per_s: Option<f64>,
    /// The capacity the levels are sized against: `--capacity`, else the probe's rate.
    pub capacity_rate_per_s: Option<f64>,
    /// Completions a judged level has room for.
    pub judged_completions: f64,
    /// Completions a measured level has room for.
    pub measured_completions: f64,
    /// The shortest level in P90 latencies (0 when `--level-duration` was given).
    pub latencies_per_level: f64,
    /// The longest a level is stretched to, s.
    pub max_level_s: f64,
}

impl Pace {
    /// The pace known once one request alone took `alone_s` seconds.
    pub fn new(alone_s: f64, o: &Options) -> Self {
        let alone_s = alone_s.max(1e-3);
        Self {
            alone_s,
            sync_rate_per_s: 1.0 / alone_s,
            latency_p90_s: alone_s,
            probe_rate_per_s: None,
            capacity_rate_per_s: o.capacity_rate_per_s.filter(|c| *c > 0.0 && c.is_finite()),
            judged_completions: o.count(JUDGED_COMPLETIONS.0, JUDGED_COMPLETIONS.1) as f64,
            measured_completions: o.count(MEASURED_COMPLETIONS.0, MEASURED_COMPLETIONS.1) as f64,
            latencies_per_level: if o.level_duration.is_some() {
                0.0
            } else {
                LATENCIES_PER_LEVEL
            },
            max_level_s: if o.quick {
                MAX_LEVEL_S.1
            } else {
                MAX_LEVEL_S.0
            },
        }
    }

    /// Completions per second the server can have at `load`: an open-loop rate, or c times
    /// the synchronous rate for a closed loop of c, at most the capacity when one is known.
    pub fn expected_rate_per_s(&self, load: Load) -> f64 {
        let offered = match load {
            Load::Rate { rate_per_s } => rate_per_s,
            Load::Concurrency { concurrency } => self.sync_rate_per_s * concurrency.max(1) as f64,
        };
        match self.capacity_rate_per_s {
            Some(c) => offered.min(c),
            None => offered,
        }
    }

    /// Completions a level of `role` has room for; `None` for the calibration levels, which
    /// [`calibrate`] sizes itself.
    fn completions(&self, role: Role) -> Option<f64> {
        match role {
            Role::Alone | Role::Reference | Role::Estimate => None,
            Role::Bracket | Role::Bisect | Role::Extend => Some(self.judged_completions),
            _ => Some(self.measured_completions),
        }
    }

    /// The measured length of a level of `role` at `load` planned to last `planned`: long
    /// enough for the completions its role needs at [`Pace::expected_rate_per_s`] and for
    /// [`Pace::latencies_per_level`] P90 latencies, at most [`Pace::max_level_s`] unless
    /// planned longer. Never shorter than planned.
    pub fn stretch(&self, planned: Duration, load: Load, role: Role) -> Duration {
        let Some(mut n) = self.completions(role) else {
            return planned;
        };
        // A sweep's point at 90 % of capacity or above is where saturation is read: it needs
        // the arrivals a search level has to fire a signal (issue 19's conformance case: with
        // a sweep's count the curve placed saturation 30-60 % above the truth).
        if let (Role::Sweep, Load::Rate { rate_per_s }, Some(c)) =
            (role, load, self.capacity_rate_per_s)
        {
            if rate_per_s >= 0.9 * c {
                n = n.max(self.judged_completions);
            }
        }
        let rate = self.expected_rate_per_s(load);
        if !(rate > 0.0 && rate.is_finite()) {
            return planned;
        }
        let need = (n / rate)
            .max(self.latencies_per_level * self.latency_p90_s)
            .min(self.max_level_s);
        if need > planned.as_secs_f64() {
            Duration::from_secs_f64(need)
        } else {
            planned
        }
    }
}

/// Completions per second of a closed loop, from its measured records: past the first tenth
/// of the span of its completions, the completions after the first one over the time from
/// that first to the last. A batch that finishes in one step then counts once at each end,
/// where the completions minus one over the span counted a whole batch too many (+9 % for
/// ten batches of four). `None` with fewer than three completions or no span.
pub fn completion_rate(records: &[RequestRecord]) -> Option<f64> {
    let mut ends: Vec<u64> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure && r.outcome.is_ok())
        .map(|r| r.finished_at)
        .collect();
    if ends.len() < 3 {
        return None;
    }
    ends.sort_unstable();
    let (first, last) = (ends[0], ends[ends.len() - 1]);
    let cut = first + (last - first) / 10;
    let kept: Vec<u64> = ends.into_iter().filter(|&t| t >= cut).collect();
    let (start, end) = (*kept.first()?, *kept.last()?);
    let after = kept.iter().filter(|&&t| t > start).count();
    (end > start && after > 0).then(|| after as f64 / ((end - start) as f64 / 1e9))
}

/// Measures the server's pace (module documentation) and keeps it in the session, so every
/// later level is sized from it. `workload`: the levels' workload when the test replaces the
/// run's (capacity's fixed output). `probe`: also run the closed-loop probe, unless
/// `--capacity` gave the capacity. Steps this session already ran are not repeated.
pub fn calibrate(
    s: &mut Session,
    o: &Options,
    workload: Option<&WorkloadSpec>,
    probe: bool,
) -> Result<Pace, Stop> {
    let mut pace = match s.pace {
        Some(p) => p,
        None => alone(s, o, workload)?,
    };
    s.pace = Some(pace);
    if s.reference_e2e_p50_ms.is_none() {
        pace = anchor(s, o, workload, pace)?;
        s.pace = Some(pace);
    }
    if probe && pace.capacity_rate_per_s.is_none() {
        pace = probe_capacity(s, o, workload, pace)?;
        s.pace = Some(pace);
    }
    Ok(pace)
}

/// Step 1: one request alone, no warm-up before it.
fn alone(s: &mut Session, o: &Options, workload: Option<&WorkloadSpec>) -> Result<Pace, Stop> {
    let mut spec = LevelSpec::new(
        "one request alone",
        Role::Alone,
        Load::Concurrency { concurrency: 1 },
        Duration::ZERO,
    );
    spec.duration = None;
    spec.requests = Some(1);
    spec.warmup = WarmupChoice::Cold;
    spec.workload = workload.cloned();
    let level = s.measure(spec)?;
    match level.summary.e2e_ms.map(|d| d.p50 / 1e3) {
        Some(l) if l > 0.0 && l.is_finite() => Ok(Pace::new(l, o)),
        _ => Err(Stop::Failed(anyhow::anyhow!(
            "one request sent alone did not complete ({}): nothing can be sized from the server's speed",
            level.run
        ))),
    }
}

/// Step 2: the synchronous anchor, which is also the procedure's reference level.
fn anchor(
    s: &mut Session,
    o: &Options,
    workload: Option<&WorkloadSpec>,
    mut pace: Pace,
) -> Result<Pace, Stop> {
    let k = o.count(SYNC_REQUESTS.0, SYNC_REQUESTS.1) as f64;
    let secs = (k * pace.alone_s)
        .max(o.calibration().as_secs_f64())
        .min(pace.max_level_s);
    let mut spec = LevelSpec::new(
        "reference: one request at a time",
        Role::Reference,
        Load::Concurrency { concurrency: 1 },
        Duration::from_secs_f64(secs),
    );
    spec.workload = workload.cloned();
    if o.quick {
        spec.warmup_max = Some(Duration::from_secs_f64((10.0 * pace.alone_s).max(10.0)));
    }
    s.reference_spec(spec)?;
    let e2e = s.levels.last().and_then(|l| l.summary.e2e_ms);
    if let Some(d) = e2e.filter(|d| d.mean > 0.0 && d.mean.is_finite()) {
        pace.sync_rate_per_s = 1e3 / d.mean;
        pace.latency_p90_s = (d.p90 / 1e3).max(1e-3);
    }
    Ok(pace)
}

/// Step 3: the closed-loop probe at `--estimate-concurrency`.
fn probe_capacity(
    s: &mut Session,
    o: &Options,
    workload: Option<&WorkloadSpec>,
    mut pace: Pace,
) -> Result<Pace, Stop> {
    let c = o.estimate_concurrency.max(1);
    let n = o.count(PROBE_REQUESTS.0, PROBE_REQUESTS.1) as f64;
    let secs = (n / pace.sync_rate_per_s)
        .max(o.calibration().as_secs_f64())
        .min(pace.max_level_s);
    // A calibration level: it never takes the test's warm-up at its own concurrency (the
    // anchor before it took it, at concurrency 1).
    let mut spec = LevelSpec::calibration(
        format!("estimate: concurrency {c}"),
        Role::Estimate,
        Load::Concurrency { concurrency: c },
        Duration::from_secs_f64(secs),
    );
    spec.workload = workload.cloned();
    let (level, between) = s.measure_with(spec, completion_rate)?;
    let steady = level.summary.steady_state.requests_per_s;
    match between
        .or(Some(steady))
        .filter(|r| *r > 0.0 && r.is_finite())
    {
        Some(r) => {
            pace.probe_rate_per_s = Some(r);
            pace.capacity_rate_per_s = Some(r);
            Ok(pace)
        }
        None => Err(Stop::Failed(anyhow::anyhow!(
            "the capacity probe (concurrency {c} for {secs:.0} s, sized for {n:.0} completions at the server's own pace) completed no request; give --capacity RATE"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(quick: bool) -> Options {
        crate::procedure::conformance::options_for(
            quick,
            None,
            crate::workload::WorkloadSpec::fixed(256, 640),
            1,
        )
    }

    /// Issue 19, item 12: on a server of 0.3 requests per second whose request alone takes
    /// 8 s, the old `--quick` level lasted its fixed 6 s: about two arrivals at the capacity,
    /// nothing a signal can read. Stretched, a judged level has room for 50 completions at
    /// the rate the server can have (50 ÷ 0.3 = 166.7 s), a sweep's point for 10 (at 10 % of
    /// capacity, 10 ÷ 0.03 = 333 s, capped at 300 s).
    #[test]
    fn levels_are_sized_from_the_servers_own_pace() {
        let o = options(true);
        let planned = o.duration(60.0, 6.0);
        assert_eq!(planned, Duration::from_secs(6), "the old fixed length");
        let mut p = Pace::new(8.0, &o);
        p.capacity_rate_per_s = Some(0.3);
        let at = |r: f64| Load::Rate { rate_per_s: r };
        let judged = p.stretch(planned, at(0.6), Role::Bracket).as_secs_f64();
        assert!((judged - 50.0 / 0.3).abs() < 1e-6, "{judged}");
        assert!(judged * 0.3 >= 50.0 - 1e-9 && planned.as_secs_f64() * 0.3 < 2.0);
        assert_eq!(
            p.stretch(planned, at(0.03), Role::Sweep).as_secs_f64(),
            300.0
        );
        // Eight P90 latencies at least: 8 × 8 s = 64 s for a fast sweep point below 90 % of
        // capacity (10 ÷ 0.25 = 40 s)…
        assert_eq!(
            p.stretch(planned, at(0.25), Role::Sweep).as_secs_f64(),
            64.0
        );
        // …and from 90 % of capacity a sweep's point has a judged level's room: 50 ÷ 0.3.
        let near = p.stretch(planned, at(0.3), Role::Sweep).as_secs_f64();
        assert!((near - 50.0 / 0.3).abs() < 1e-6, "{near}");
        // Calibration levels are sized by `calibrate`, never stretched; nothing shortens.
        assert_eq!(p.stretch(planned, at(0.6), Role::Estimate), planned);
        let long = Duration::from_secs(900);
        assert_eq!(p.stretch(long, at(0.6), Role::Bisect), long);
        // A closed loop of 4 can complete at most 4 × the synchronous rate (1 ÷ 8 s), and at
        // most the capacity: 0.3 per second.
        assert!((p.expected_rate_per_s(Load::Concurrency { concurrency: 4 }) - 0.3).abs() < 1e-12);
        assert!((p.expected_rate_per_s(Load::Concurrency { concurrency: 2 }) - 0.25).abs() < 1e-12);
        // A fast server keeps the planned length: 50 completions at 100 per second fit in 6 s.
        let mut fast = Pace::new(0.05, &o);
        fast.capacity_rate_per_s = Some(100.0);
        assert_eq!(fast.stretch(planned, at(100.0), Role::Bracket), planned);
        // `--level-duration` given: no latency floor; full runs ask for 200 completions.
        let mut given = o.clone();
        given.level_duration = Some(Duration::from_secs(6));
        assert_eq!(Pace::new(8.0, &given).latencies_per_level, 0.0);
        assert_eq!(Pace::new(8.0, &options(false)).judged_completions, 200.0);
    }

    fn done_at(id: u64, at_ms: u64) -> RequestRecord {
        RequestRecord::completed_for_tests(id, 0, &[at_ms], 10)
    }

    /// A closed loop of four slots finishing a batch of four every second, 1-10 s: 4 per
    /// second. Counting completions minus one over their span read 39 ÷ 9 s = 4.33 per
    /// second (past the first tenth: 35 ÷ 8 s = 4.375); counting the completions after the
    /// first instant reads 32 ÷ 8 s = 4.
    #[test]
    fn batches_finishing_together_do_not_inflate_the_probe() {
        let recs: Vec<RequestRecord> = (0..40u64)
            .map(|i| done_at(i, 1_000 * (i / 4 + 1)))
            .collect();
        let r = completion_rate(&recs).unwrap();
        assert!((r - 4.0).abs() < 1e-9, "{r}");
        let old = 35.0 / 8.0;
        assert!((old - 4.0) / 4.0 > 0.09);
        // One completion a second, 1-20 s: 1 per second either way.
        let smooth: Vec<RequestRecord> = (0..20u64).map(|i| done_at(i, 1_000 * (i + 1))).collect();
        assert!((completion_rate(&smooth).unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(completion_rate(&recs[..2]), None);
    }
}
