//! [`LevelRunner`]: each level of a test run as a full run folder against its target, within
//! the time budget, with the plan and the time left said as it goes.

use super::between_levels::{drain, flush_prefix_cache};
use super::INTERRUPTED;
use crate::artifacts::{RunReport, SystemInfo};
use crate::config::{Limits, PrefillSetup, RunConfig, Warmup};
use crate::metrics::fluidity::ProfiledCurve;
use crate::pipeline::execute::{execute, Execute};
use crate::procedure::budget::{Budget, DEFAULT_OVERHEAD_S};
use crate::procedure::level::{Bench, LevelRun, LevelSpec, Load, Stop, WarmupChoice};
use crate::procedure::report::TargetInfo;
use crate::procedure::{self, Options, TestName};
use crate::record::run::ServerInfo;
use crate::record::RequestRecord;
use crate::runner::plan::{
    expected_rate, human, quick_warmup_requests, warmup_plan, QUICK_WARMUP_S,
};
use crate::schedule::{Arrival, LoadPattern};
use crate::sim::SimServer;
use crate::store::{prepare_run_dir, RunFolder};
use crate::tokenizer::SharedTokenizer;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// One target, ready to run levels against.
pub(super) struct TargetSetup {
    pub(super) config: RunConfig,
    pub(super) system: SystemInfo,
    pub(super) server: ServerInfo,
    pub(super) tokenizer: SharedTokenizer,
    /// The prefill curve profiled at this target's first level, reused by the others.
    pub(super) curve: Option<ProfiledCurve>,
}

/// Runs levels as run folders (the I/O side of [`Bench`]).
pub struct LevelRunner {
    /// The test folder; levels go under `levels/`.
    pub(super) dir: PathBuf,
    pub(super) targets: BTreeMap<Option<String>, TargetSetup>,
    pub(super) budget: Budget,
    pub(super) count: usize,
    pub(super) quiet: bool,
    /// Completed requests per second of the latest level, to predict request-count levels.
    pub(super) last_rps: Option<f64>,
    /// `--quick`: the first level's warm-up is a short one sized from the server's speed.
    pub(super) quick: bool,
    /// `--reset-cache-between-levels`: every level first asks the server to empty its
    /// prefix cache.
    pub(super) reset_cache: bool,
    /// The current test's plan: the budget spent when it started and its planned length
    /// (the longer end), s, for the time left shown after each level.
    pub(super) planned: Option<(f64, f64)>,
    /// Levels started since the runner began (every test of a suite), for each level's
    /// own prompt salt.
    pub(super) levels_started: u64,
    /// Tests started since the runner began, for a test's shared prompt salt.
    pub(super) tests_started: u64,
    /// Keeps the built-in simulators alive.
    pub(super) _sims: Vec<SimServer>,
}

impl LevelRunner {
    /// Starts a new test in `dir` (levels numbered from 1 again).
    pub(super) fn start_test(&mut self, dir: PathBuf) {
        self.dir = dir;
        self.count = 0;
        self.tests_started += 1;
    }

    /// The prompt salt of the next level ([`level_prompt_salt`]).
    fn level_prompt_salt(&mut self, base: u64, shared: bool) -> u64 {
        self.levels_started += 1;
        level_prompt_salt(base, shared, self.levels_started, self.tests_started)
    }

    /// The main target's configuration (the unlabelled one, else the first).
    fn main_config(&self) -> Option<&RunConfig> {
        self.targets
            .get(&None)
            .or_else(|| self.targets.values().next())
            .map(|t| &t.config)
    }

    /// Says what `test` will take before it starts, and keeps it for the time left.
    pub(super) fn announce_plan(&mut self, test: TestName, o: &Options) {
        let Some(config) = self.main_config() else {
            return;
        };
        let warm_s = planned_warmup_s(config, o.quick);
        let plan = procedure::budget::plan(test, o, &rate_at(config));
        let line = plan.describe(DEFAULT_OVERHEAD_S, warm_s);
        let total = plan.seconds(DEFAULT_OVERHEAD_S, warm_s).1;
        if !self.quiet {
            let start = crate::runner::progress::fresh_line(std::io::stderr().is_terminal());
            eprintln!("{start}Planned: {line} (estimated from the test request's speed)");
        }
        self.planned = Some((self.budget.spent_s(), total));
    }

    /// The suite's planned length: its tests' plans added up.
    pub(super) fn suite_plan(&self, tests: &[TestName], o: &Options) -> Option<String> {
        let config = self.main_config()?;
        let warm_s = planned_warmup_s(config, o.quick);
        let rate = rate_at(config);
        let runs: Vec<TestName> = tests
            .iter()
            .copied()
            .filter(|t| *t != TestName::Guardrails || o.targets.len() >= 2)
            .collect();
        let (mut lo, mut hi) = (0.0, 0.0);
        for t in &runs {
            let plan = procedure::budget::plan(*t, o, &rate);
            let (x, y) = plan.seconds(DEFAULT_OVERHEAD_S, warm_s);
            lo += x;
            hi += y;
        }
        let names: Vec<&str> = runs.iter().map(|t| t.slug()).collect();
        Some(format!(
            "Planned suite: {} tests ({}), about {}-{} in all (estimated from the test request's speed; each test's plan is printed as it starts)",
            runs.len(),
            names.join(", "),
            human(lo),
            human(hi)
        ))
    }

    /// How long a level's measurement should last, s: a request count lasts as long as
    /// the latest completion rate says; a duration with it is a cap (the first limit
    /// reached ends the level).
    fn measure_s(&self, spec: &LevelSpec) -> f64 {
        let by_count = spec
            .requests
            .and_then(|n| self.last_rps.filter(|r| *r > 0.0).map(|r| n as f64 / r));
        match (spec.duration, by_count) {
            (Some(d), Some(c)) => d.as_secs_f64().min(c),
            (Some(d), None) => d.as_secs_f64(),
            (None, Some(c)) => c,
            (None, None) => 0.0,
        }
    }

    pub(super) fn target_info(&self) -> TargetInfo {
        let main = self
            .targets
            .get(&None)
            .or_else(|| self.targets.values().next());
        TargetInfo {
            url: main
                .map(|t| t.config.target.url.to_string())
                .unwrap_or_default(),
            model: main
                .map(|t| t.config.target.model.clone())
                .unwrap_or_default(),
            engine: main.and_then(|t| t.server.engine.clone()),
            engine_version: main.and_then(|t| t.server.version.clone()),
            targets: self
                .targets
                .iter()
                .filter_map(|(k, t)| Some((k.clone()?, t.config.target.url.to_string())))
                .collect(),
        }
    }
}

impl Bench for LevelRunner {
    fn run_level(&mut self, spec: &LevelSpec) -> Result<LevelRun, Stop> {
        if INTERRUPTED.load(Ordering::Acquire) {
            return Err(Stop::Interrupted);
        }
        let expected = self.budget.expected_s(self.measure_s(spec));
        self.budget
            .admit(expected)
            .map_err(|(needed_s, left_s)| Stop::Budget { needed_s, left_s })?;
        let count = self.count;
        let dir = self.dir.clone();
        let quiet = self.quiet;
        let quick = self.quick;
        // One base for every target, so labelled targets' sharing levels send the same prompts.
        let base = self.main_config().map_or(0, |c| c.prompt_salt);
        let salt = self.level_prompt_salt(base, spec.shared_prompts);
        let Some(t) = self.targets.get_mut(&spec.target) else {
            return Err(Stop::Failed(anyhow::anyhow!(
                "the level needs the target `{}`: give it with --target {}=URL",
                spec.target.as_deref().unwrap_or("default"),
                spec.target.as_deref().unwrap_or("NAME")
            )));
        };
        let mut config = level_config(t, spec, quick, quiet);
        config.prompt_salt = salt;
        let rel = format!("levels/{}", level_name(count, spec));
        config.out_dir = prepare_run_dir(Some(&dir.join(&rel)), false)
            .map_err(|e| Stop::Failed(anyhow::anyhow!(e)))?;
        // A level sharing its test's prompts (the prefix-cache test's warm level) must find
        // what the level before it cached: the reset is for levels of their own.
        let flush = spec.flush_cache || (self.reset_cache && !spec.shared_prompts);
        let note = settle_server(&config, count, flush, &t.server)?;
        let started = Instant::now();
        let (report, records) = execute_level(config, t, spec, count)?;
        self.count += 1;
        self.budget.level_done(
            started.elapsed().as_secs_f64(),
            report.summary.window.duration_s,
        );
        let rps = report.summary.requests_per_s;
        if rps > 0.0 {
            self.last_rps = Some(rps);
        }
        if t.curve.is_none() {
            t.curve = report.prefill_curve.clone();
        }
        if report.interrupted {
            INTERRUPTED.store(true, Ordering::Release);
            return Err(Stop::Interrupted);
        }
        Ok(LevelRun {
            run: rel,
            report,
            records,
            note,
        })
    }

    fn progress(&mut self, line: &str) {
        if self.quiet {
            return;
        }
        let budget = match self.budget.left_s() {
            Some(left) => format!(" | {} left of the budget", human(left)),
            None => format!(" | {} so far", human(self.budget.spent_s())),
        };
        let planned = self
            .planned
            .map(|(at, total)| {
                let left = (at + total - self.budget.spent_s()).max(0.0);
                format!(" | ~{} left of the plan", human(left))
            })
            .unwrap_or_default();
        let start = crate::runner::progress::fresh_line(std::io::stderr().is_terminal());
        eprintln!("{start}[test] {line}{budget}{planned}");
    }

    fn load_run(&mut self, dir: &Path) -> Result<LevelRun, Stop> {
        let read = || -> Result<LevelRun> {
            let folder = RunFolder::new(dir);
            let text = std::fs::read_to_string(folder.run_json())
                .with_context(|| format!("reading {}/run.json", dir.display()))?;
            let report: RunReport = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{}/run.json is not a finished run's report (run `servebench report {}` first)",
                    dir.display(),
                    dir.display()
                )
            })?;
            let records =
                crate::store::read_requests(&folder.requests_jsonl(), report.started_at_us)?;
            Ok(LevelRun {
                run: dir.display().to_string(),
                report,
                records,
                note: Some(format!("composed from {}", dir.display())),
            })
        };
        read().map_err(Stop::Failed)
    }
}

/// A level's run configuration: the target's, with the level's load, limits, workload,
/// cache switch and warm-up, and the target's prefill curve once profiled.
fn level_config(t: &TargetSetup, spec: &LevelSpec, quick: bool, quiet: bool) -> RunConfig {
    let mut config = t.config.clone();
    config.load = load_pattern(spec.load, t.config.load);
    config.max_concurrency = None;
    config.limits = Limits {
        requests: spec.requests,
        duration: spec.duration,
    };
    if let Some(w) = &spec.workload {
        config.workload = w.clone();
    }
    if let Some(on) = spec.prefix_cache {
        config.request.prefix_cache = on;
    }
    if spec.warmup != WarmupChoice::AsConfigured {
        config.warmup = Warmup::None;
    } else if quick && config.warmup == Warmup::Auto {
        // A --quick test is never compliant: rather than the draft's warm-up (up to
        // --warmup-max), about ten seconds of the level's load at the server's speed.
        let out = config.workload.output.mean();
        let n = quick_warmup_requests(config.load, out, config.preflight.as_ref());
        config.warmup = Warmup::Requests(n);
        config.warmup_sizing = crate::config::WarmupSizing::QuickTest;
    }
    if let Some(cap) = spec.warmup_max {
        config.warmup_max = config.warmup_max.min(cap);
    }
    config.warmup_load = warmup_load(&config);
    if let Some(c) = &t.curve {
        config.prefill = PrefillSetup::Curve(c.clone());
    }
    config.quiet = quiet;
    // A level's analysis reads each of its records (arrivals followed to their end,
    // levels compared request by request): a level always keeps every one.
    config.exact_summary_limit = None;
    config.memory_budget_bytes = None;
    config
}

/// The prompt salt of a level: its own, drawn from the run's salt `base` and its ordinal
/// among the levels started (every test of a suite counts), or the current test's shared
/// one (`shared`: the prefix-cache test's levels). No two levels send the same prompts
/// unless they share on purpose, and the same base gives the same salts again.
fn level_prompt_salt(base: u64, shared: bool, levels_started: u64, tests_started: u64) -> u64 {
    let ordinal = match shared {
        true => (1 << 40) + tests_started,
        false => levels_started,
    };
    crate::workload::splitmix64(base ^ crate::workload::splitmix64(ordinal))
}

/// The level's folder name under `levels/`: its number (`count` levels ran before it),
/// target and load.
fn level_name(count: usize, spec: &LevelSpec) -> String {
    format!(
        "{:02}-{}{}",
        count + 1,
        spec.target
            .as_deref()
            .map(|t| format!("{t}-"))
            .unwrap_or_default(),
        spec.load.folder_part()
    )
}

/// Before a level: the server drained of the previous level's requests (after the first),
/// and its prefix cache emptied when the level asks (how that went, in words).
fn settle_server(
    config: &RunConfig,
    count: usize,
    flush_cache: bool,
    server: &ServerInfo,
) -> Result<Option<String>, Stop> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Stop::Failed(e.into()))?;
    if count > 0 {
        rt.block_on(drain(config));
    }
    let note = flush_cache
        .then(|| rt.block_on(flush_prefix_cache(&config.target, server.engine.as_deref())));
    drop(rt);
    Ok(note)
}

/// Runs the level (`count` levels ran before it) on its target with `config`.
fn execute_level(
    config: RunConfig,
    t: &TargetSetup,
    spec: &LevelSpec,
    count: usize,
) -> Result<(RunReport, Vec<RequestRecord>), Stop> {
    let ran = execute(Execute {
        config,
        system: t.system.clone(),
        baseline: spec.baseline.clone(),
        server: &t.server,
        tokenizer: t.tokenizer.clone(),
        warnings: Vec::new(),
        announce: false,
    });
    match ran {
        Ok(r) => Ok(r),
        Err(e)
            if e.downcast_ref::<crate::pipeline::exit::EarlyExit>()
                .is_some() =>
        {
            Err(Stop::Failed(anyhow::anyhow!(
                "the server could not be used for level {} (see the message above)",
                count + 1
            )))
        }
        Err(e) => Err(Stop::Failed(e)),
    }
}

/// The load a level's draft warm-up runs at: a closed loop below the server's parallelism
/// (the one-at-a-time reference, above all) warms up at that parallelism, as many streams
/// as the test request showed the server serves at once (up to 32), then drains and
/// measures at its own. At one at a time the draft's 100 requests outlast the warm-up's
/// cap on any server slower than 1.2 s a request, and a full test announced "NOT
/// compliant" on the simulator. `None`: the level's own load (an open loop, a `--quick`
/// warm-up of the level's own load, or no speed measured).
fn warmup_load(config: &RunConfig) -> Option<LoadPattern> {
    let LoadPattern::Closed { concurrency } = config.load else {
        return None;
    };
    if config.warmup != Warmup::Auto {
        return None;
    }
    let parallel = config.preflight.as_ref()?.parallel(32.0).round() as u32;
    (parallel > concurrency).then_some(LoadPattern::Closed {
        concurrency: parallel,
    })
}

/// A level's load as the run options' load pattern (open-loop levels keep the arrival
/// process given, Poisson by default).
fn load_pattern(load: Load, configured: LoadPattern) -> LoadPattern {
    match load {
        Load::Rate { rate_per_s } => LoadPattern::Open {
            rate_per_s,
            arrival: match configured {
                LoadPattern::Open { arrival, .. } => arrival,
                _ => Arrival::Poisson,
            },
        },
        Load::Concurrency { concurrency } => LoadPattern::Closed { concurrency },
    }
}

/// The server's expected completion rate at a level's load, from the speed the test request
/// measured on `config`'s target (`None` without one).
fn rate_at(config: &RunConfig) -> impl Fn(Load) -> Option<f64> + '_ {
    move |load| {
        let speed = config.preflight.as_ref()?;
        let out = config.workload.output.mean();
        expected_rate(load_pattern(load, config.load), out, speed)
    }
}

/// What a test's warm-up should take: a `--quick` test's short one, else the configured
/// one at the run options' load (its cap when the server's speed is unknown).
fn planned_warmup_s(config: &RunConfig, quick: bool) -> f64 {
    match config.warmup {
        Warmup::None => 0.0,
        Warmup::Auto if quick => QUICK_WARMUP_S,
        _ => warmup_plan(config)
            .and_then(|p| p.seconds)
            .unwrap_or(config.warmup_max.as_secs_f64()),
    }
}

#[cfg(test)]
mod tests {
    use super::{level_prompt_salt, warmup_load};
    use crate::config::Warmup;
    use crate::record::speed::Speed;
    use crate::schedule::LoadPattern;

    /// Issue 36, item 5: the one-at-a-time reference of a full test warms up at the
    /// server's parallelism (the draft's 100 requests one at a time outlast the cap), then
    /// measures at its own; a level already at or above it, an open loop, a warm-up by
    /// count and a server of unknown speed keep their own load.
    #[test]
    fn a_one_at_a_time_level_warms_up_at_the_servers_parallelism() {
        let args = [
            "servebench",
            "run",
            "--out",
            "/nonexistent/servebench-levels-test",
        ];
        let cli = <crate::flags::Cli as clap::Parser>::try_parse_from(args).unwrap();
        let crate::flags::Command::Run(a) = cli.command else {
            unreachable!()
        };
        let resolved = crate::pipeline::resolve::resolve(&a.run, "http://127.0.0.1:1/v1", true);
        let mut c = resolved.unwrap().config;
        let _ = std::fs::remove_dir(&c.out_dir);
        let speed = |served_together| Speed {
            ttft_ms: 100.0,
            ms_per_token: 20.0,
            served_together,
            sent_together: 8,
            closes_connections: false,
        };
        c.load = LoadPattern::Closed { concurrency: 1 };
        c.warmup = Warmup::Auto;
        c.preflight = Some(speed(3.6));
        assert_eq!(
            warmup_load(&c),
            Some(LoadPattern::Closed { concurrency: 4 })
        );
        c.preflight = Some(speed(8.0));
        assert_eq!(
            warmup_load(&c),
            Some(LoadPattern::Closed { concurrency: 32 })
        );
        c.load = LoadPattern::Closed { concurrency: 64 };
        assert_eq!(warmup_load(&c), None);
        c.load = LoadPattern::Closed { concurrency: 1 };
        c.warmup = Warmup::Requests(5);
        assert_eq!(warmup_load(&c), None);
        c.warmup = Warmup::Auto;
        c.preflight = None;
        assert_eq!(warmup_load(&c), None);
    }

    /// Issue 31, item 1: every level of a suite draws its own prompts (a cache that holds
    /// the previous level's cannot answer the next), the levels of a test that share do,
    /// tests do not share with each other, and the run's salt makes them reproducible.
    #[test]
    fn every_level_has_its_own_prompts_unless_it_shares() {
        let own: Vec<u64> = (1..=40)
            .map(|n| level_prompt_salt(7, false, n, 1 + n / 10))
            .collect();
        let distinct: std::collections::HashSet<_> = own.iter().collect();
        assert_eq!(distinct.len(), own.len());
        let shared = |level, test| level_prompt_salt(7, true, level, test);
        assert_eq!(shared(3, 2), shared(4, 2), "one test's sharing levels");
        assert_ne!(shared(3, 2), shared(3, 3), "another test's");
        assert!(!own.contains(&shared(3, 2)));
        assert_eq!(level_prompt_salt(7, false, 5, 1), own[4]);
        assert_ne!(
            level_prompt_salt(8, false, 5, 1),
            own[4],
            "another run's salt"
        );
    }
}
