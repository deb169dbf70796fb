//! A procedure's running state: the levels so far, the reference latency, the SLO, and the
//! rules that turn a level's run into a verdict.
//!
//! A level passes when no saturation signal fires and, with an SLO, its attainment passes
//! with confidence. A level whose SLO interval straddles the target is run again, twice as
//! long, up to [`MAX_EXTENSIONS`] times; if it is still undecided it counts as not
//! sustained (the search stays on the side it can defend) and says so.

use super::level::{
    outcome, Bench, LevelOutcome, LevelRun, LevelSpec, LevelVerdict, Load, Role, Stop, WarmupChoice,
};
use super::saturation::{signals, Signals};
use super::slo_check;
use crate::metrics::slo::SloSpec;
use crate::record::run::WarmupReport;
use crate::stats::interval::SloVerdict;
use std::collections::BTreeSet;
use std::time::Duration;

/// How many times an undecided level is re-run, each twice as long.
pub const MAX_EXTENSIONS: u32 = 2;

/// What a probe checks besides saturation and the SLO.
#[derive(Debug, Clone, Copy, Default)]
pub struct Criteria {
    /// Judge the saturation signals (off for the capacity test, whose criteria are the SLO
    /// and the completion rate).
    pub saturation: bool,
    /// The share of measured requests that must succeed (5.5: 99 %).
    pub min_success: Option<f64>,
    /// Fail a level on any out-of-memory failure (5.5.2: "no out-of-memory errors"), even
    /// when the completion share is met.
    pub no_out_of_memory: bool,
}

/// Measured requests that failed because the server ran out of memory, as its error says
/// (CUDA's "out of memory", PyTorch's `OutOfMemoryError`, an engine's "OOM").
pub fn out_of_memory_failures(records: &[crate::record::RequestRecord]) -> usize {
    records
        .iter()
        .filter(|r| r.phase == crate::record::Phase::Measure)
        .filter(|r| match &r.outcome {
            crate::record::Outcome::Failed { detail, .. } => {
                let d = detail.to_ascii_lowercase();
                d.contains("out of memory")
                    || d.contains("outofmemory")
                    || d.split(|c: char| !c.is_ascii_alphanumeric())
                        .any(|w| w == "oom")
            }
            _ => false,
        })
        .count()
}

/// Levels run so far and the rules to judge the next.
pub struct Session<'a> {
    pub bench: &'a mut dyn Bench,
    pub levels: Vec<LevelOutcome>,
    /// P50 end-to-end latency at concurrency 1, ms: the draft's "P50 latency at lower load".
    pub reference_e2e_p50_ms: Option<f64>,
    pub slo: Option<SloSpec>,
    /// The warm-up of the first level (4.5), for compliance.
    pub warmup: Option<WarmupReport>,
    warmed: BTreeSet<Option<String>>,
}

impl<'a> Session<'a> {
    pub fn new(bench: &'a mut dyn Bench, slo: Option<SloSpec>) -> Self {
        Self {
            bench,
            levels: Vec::new(),
            reference_e2e_p50_ms: None,
            slo,
            warmup: None,
            warmed: BTreeSet::new(),
        }
    }

    /// Runs a level; the first level on each target gets the configured warm-up.
    fn run(&mut self, mut spec: LevelSpec) -> Result<(LevelSpec, LevelRun), Stop> {
        // A cold-cache level measures from an empty cache: no warm-up may fill it.
        if !self.warmed.contains(&spec.target) && !spec.flush_cache {
            spec.warmup = WarmupChoice::AsConfigured;
        }
        let run = self.bench.run_level(&spec)?;
        if spec.warmup == WarmupChoice::AsConfigured {
            self.warmed.insert(spec.target.clone());
            if self.warmup.is_none() {
                self.warmup = Some(run.report.warmup.clone());
            }
        }
        Ok((spec, run))
    }

    fn signals_of(&self, spec: &LevelSpec, run: &LevelRun) -> Signals {
        signals(
            &run.report,
            &run.records,
            self.reference_e2e_p50_ms,
            matches!(spec.load, Load::Rate { .. }),
        )
    }

    /// Runs a level and records it without judging (verdict `measured`); the signals are
    /// still evaluated for the queue indicator of the tables.
    pub fn measure(&mut self, spec: LevelSpec) -> Result<&LevelOutcome, Stop> {
        self.measure_with(spec, |_| ()).map(|(o, ())| o)
    }

    /// [`Session::measure`], also handing the level's records to `f` (for figures the
    /// summary does not hold, such as the mean prompt length of the completed requests).
    pub fn measure_with<T>(
        &mut self,
        spec: LevelSpec,
        f: impl FnOnce(&[crate::record::RequestRecord]) -> T,
    ) -> Result<(&LevelOutcome, T), Stop> {
        let (spec, run) = self.run(spec)?;
        let extra = f(&run.records);
        let sig = self.signals_of(&spec, &run);
        let slo = self
            .slo
            .as_ref()
            .map(|s| slo_check::check(s, &run.records, &run.report.summary));
        let reason = slo.as_ref().map(|c| c.describe()).unwrap_or_default();
        let o = outcome(
            self.levels.len(),
            &spec,
            &run,
            sig,
            slo,
            LevelVerdict::Measured,
            reason,
        );
        self.push(o);
        Ok((self.levels.last().expect("just pushed"), extra))
    }

    /// Runs the concurrency-1 reference level and keeps its P50 end-to-end latency.
    pub fn reference(&mut self, duration: Duration) -> Result<(), Stop> {
        let spec = LevelSpec::new(
            "reference: one request at a time",
            Role::Reference,
            Load::Concurrency { concurrency: 1 },
            duration,
        );
        let o = self.measure(spec)?;
        self.reference_e2e_p50_ms = o.summary.e2e_ms.map(|d| d.p50);
        Ok(())
    }

    /// Runs a level and judges it; extends it while its SLO is undecided.
    pub fn probe(&mut self, spec: LevelSpec, criteria: Criteria) -> Result<LevelVerdict, Stop> {
        let mut spec = spec;
        let mut extensions = 0;
        loop {
            let (ran, run) = self.run(spec.clone())?;
            let sig = self.signals_of(&ran, &run);
            let slo = self
                .slo
                .as_ref()
                .map(|s| slo_check::check(s, &run.records, &run.report.summary));
            let mut reasons: Vec<String> = Vec::new();
            let mut fail = false;
            if criteria.saturation && sig.any() {
                fail = true;
                reasons.push(format!("saturated: {}", sig.fired.join("; ")));
            }
            if let Some(min) = criteria.min_success {
                let s = &run.report.summary;
                if s.requests.total == 0 || s.success_rate + 1e-12 < min {
                    fail = true;
                    reasons.push(format!(
                        "{:.1} % of requests completed (< {:.0} %)",
                        s.success_rate * 100.0,
                        min * 100.0
                    ));
                }
            }
            if criteria.no_out_of_memory {
                let oom = out_of_memory_failures(&run.records);
                if oom > 0 {
                    fail = true;
                    reasons.push(format!("{oom} requests failed out of memory"));
                }
            }
            if run.report.summary.requests.completed == 0 {
                fail = true;
                reasons.push("no request completed".into());
            }
            let slo_verdict = slo.as_ref().map(|c| c.verdict);
            if let Some(c) = &slo {
                reasons.push(c.describe());
            }
            let verdict = match slo_verdict {
                _ if fail => LevelVerdict::Fail,
                Some(SloVerdict::Fail) => LevelVerdict::Fail,
                Some(SloVerdict::Undecided) => LevelVerdict::Undecided,
                _ => LevelVerdict::Pass,
            };
            if verdict == LevelVerdict::Pass && reasons.is_empty() {
                reasons.push("no saturation signal".into());
            }
            let o = outcome(
                self.levels.len(),
                &ran,
                &run,
                sig,
                slo,
                verdict,
                reasons.join("; "),
            );
            self.push(o);
            if verdict != LevelVerdict::Undecided || extensions == MAX_EXTENSIONS {
                return Ok(verdict);
            }
            extensions += 1;
            spec = ran;
            spec.role = Role::Extend;
            spec.duration = spec.duration.map(|d| d * 2);
            spec.requests = spec.requests.map(|n| n * 2);
            spec.label = format!(
                "{} (extended ×{})",
                base_label(&spec.label),
                1 << extensions
            );
        }
    }

    fn push(&mut self, o: LevelOutcome) {
        let line = format!(
            "level {} · {} → {}: {}",
            o.index + 1,
            o.label,
            o.verdict.word(),
            if o.reason.is_empty() {
                summary_line(&o)
            } else {
                format!("{}; {}", summary_line(&o), o.reason)
            }
        );
        self.bench.progress(&line);
        self.levels.push(o);
    }

    /// The last level judged at `load` (the extended run when there was one).
    pub fn last_at(&self, load: Load) -> Option<&LevelOutcome> {
        self.levels.iter().rev().find(|l| l.load == load)
    }
}

fn base_label(label: &str) -> &str {
    label.split(" (extended").next().unwrap_or(label)
}

/// `412 tok/s, 3.1 req/s, P99 TTFT 840 ms`.
pub fn summary_line(o: &LevelOutcome) -> String {
    let s = &o.summary;
    format!(
        "{:.0} tok/s, {} req/s, P99 TTFT {}",
        s.steady_state.output_tokens_per_s,
        super::level::rate(s.steady_state.requests_per_s),
        s.ttft_ms
            .map(|d| format!("{:.0} ms", d.p99))
            .unwrap_or_else(|| "-".into())
    )
}

#[cfg(test)]
mod tests {
    use super::out_of_memory_failures;
    use crate::record::{FailureKind, Outcome, Phase, RequestRecord};

    fn failed(detail: &str, phase: Phase) -> RequestRecord {
        RequestRecord {
            phase,
            outcome: Outcome::Failed {
                kind: FailureKind::HttpStatus,
                detail: detail.into(),
            },
            ..Default::default()
        }
    }

    #[test]
    fn out_of_memory_failures_are_recognised_by_their_error() {
        let records = [
            failed(
                "HTTP 500: CUDA out of memory. Tried to allocate 2.00 GiB",
                Phase::Measure,
            ),
            failed("torch.OutOfMemoryError: ...", Phase::Measure),
            failed("engine: OOM while scheduling", Phase::Measure),
            // Not out of memory: a room name, a timeout, and an OOM during warm-up.
            failed("HTTP 404: no model named zoom", Phase::Measure),
            failed("no complete response within 60 s", Phase::Measure),
            failed("CUDA out of memory", Phase::Warmup),
            RequestRecord {
                phase: Phase::Measure,
                ..Default::default()
            },
        ];
        assert_eq!(out_of_memory_failures(&records), 3);
    }
}
