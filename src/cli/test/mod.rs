//! `servebench test NAME` and `servebench suite`: the draft's section 5 tests against real
//! servers (or the simulator).
//!
//! The procedures (`crate::procedure`) decide which levels to run and what they mean; this
//! file runs them: [`LevelRunner`] turns a level spec into a full run folder under
//! `levels/`, keeps the time budget, empties the prefix cache when asked, lets the server
//! drain between levels, and stops on Ctrl-C. `test.json` is rewritten at the end with
//! everything measured, also when the test stopped early.

use super::args::{ProcedureArgs, RunArgs, SuiteArgs, TestArgs};
use super::exit;
use super::run::{execute, ready, redacted_command_line, Execute, Ready};
use crate::config::{
    Arrival, BaseUrl, Limits, LoadPattern, PrefillSetup, RunConfig, Target, Warmup,
};
use crate::metrics::fluidity::ProfiledCurve;
use crate::procedure::budget::{Budget, DEFAULT_OVERHEAD_S};
use crate::procedure::level::{Bench, LevelRun, LevelSpec, Load, Stop, WarmupChoice};
use crate::procedure::report::{Finding, TargetInfo, TestReport, TestStatus, TEST_SCHEMA_VERSION};
use crate::procedure::{self, Options, TestName};
use crate::report::{RunReport, SystemInfo, ToolInfo};
use crate::runner::plan::{
    expected_rate, human, quick_warmup_requests, warmup_plan, QUICK_WARMUP_S,
};
use crate::runner::ServerInfo;
use crate::sim::SimServer;
use crate::store::prepare_run_dir;
use crate::tokenizer::SharedTokenizer;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set by Ctrl-C anywhere in a test (also between levels, when no run is listening).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Watches Ctrl-C for the whole test on a thread of its own. The runner's own watcher
/// handles the level in progress (grace, then cancel); this one stops the levels after it.
fn watch_interrupts() {
    let _ = std::thread::Builder::new()
        .name("interrupts".into())
        .spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                while tokio::signal::ctrl_c().await.is_ok() {
                    INTERRUPTED.store(true, Ordering::Release);
                }
            });
        });
}

/// One target, ready to run levels against.
struct TargetSetup {
    config: RunConfig,
    system: SystemInfo,
    server: ServerInfo,
    tokenizer: SharedTokenizer,
    /// The prefill curve profiled at this target's first level, reused by the others.
    curve: Option<ProfiledCurve>,
}

/// Runs levels as run folders (the I/O side of [`Bench`]).
pub struct LevelRunner {
    /// The test folder; levels go under `levels/`.
    dir: PathBuf,
    targets: BTreeMap<Option<String>, TargetSetup>,
    budget: Budget,
    count: usize,
    quiet: bool,
    /// Completed requests per second of the latest level, to predict request-count levels.
    last_rps: Option<f64>,
    /// `--quick`: the first level's warm-up is a short one sized from the server's speed.
    quick: bool,
    /// The current test's plan: the budget spent when it started and its planned length
    /// (the longer end), s, for the time left shown after each level.
    planned: Option<(f64, f64)>,
    /// Keeps the built-in simulators alive.
    _sims: Vec<SimServer>,
}

impl LevelRunner {
    /// Starts a new test in `dir` (levels numbered from 1 again).
    fn start_test(&mut self, dir: PathBuf) {
        self.dir = dir;
        self.count = 0;
    }

    /// The main target's configuration (the unlabelled one, else the first).
    fn main_config(&self) -> Option<&RunConfig> {
        self.targets
            .get(&None)
            .or_else(|| self.targets.values().next())
            .map(|t| &t.config)
    }

    /// Says what `test` will take before it starts, and keeps it for the time left.
    fn announce_plan(&mut self, test: TestName, o: &Options) {
        let Some(config) = self.main_config() else {
            return;
        };
        let warm_s = planned_warmup_s(config, o.quick);
        let plan = procedure::budget::plan(test, o, &rate_at(config));
        let line = plan.describe(DEFAULT_OVERHEAD_S, warm_s);
        let total = plan.seconds(DEFAULT_OVERHEAD_S, warm_s).1;
        if !self.quiet {
            eprintln!("Planned: {line} (estimated from the test request's speed)");
        }
        self.planned = Some((self.budget.spent_s(), total));
    }

    /// The suite's planned length: its tests' plans added up.
    fn suite_plan(&self, tests: &[TestName], o: &Options) -> Option<String> {
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

    fn target_info(&self) -> TargetInfo {
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
        // A request count lasts as long as the latest completion rate says; a duration with
        // it is a cap (the first limit reached ends the level).
        let by_count = spec
            .requests
            .and_then(|n| self.last_rps.filter(|r| *r > 0.0).map(|r| n as f64 / r));
        let measure_s = match (spec.duration, by_count) {
            (Some(d), Some(c)) => d.as_secs_f64().min(c),
            (Some(d), None) => d.as_secs_f64(),
            (None, Some(c)) => c,
            (None, None) => 0.0,
        };
        let expected = self.budget.expected_s(measure_s);
        self.budget
            .admit(expected)
            .map_err(|(needed_s, left_s)| Stop::Budget { needed_s, left_s })?;
        let count = self.count;
        let dir = self.dir.clone();
        let quiet = self.quiet;
        let quick = self.quick;
        let Some(t) = self.targets.get_mut(&spec.target) else {
            return Err(Stop::Failed(anyhow::anyhow!(
                "the level needs the target `{}`: give it with --target {}=URL",
                spec.target.as_deref().unwrap_or("default"),
                spec.target.as_deref().unwrap_or("NAME")
            )));
        };
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
        }
        if let Some(cap) = spec.warmup_max {
            config.warmup_max = config.warmup_max.min(cap);
        }
        if let Some(c) = &t.curve {
            config.prefill = PrefillSetup::Curve(c.clone());
        }
        config.quiet = quiet;
        let name = format!(
            "{:02}-{}{}",
            count + 1,
            spec.target
                .as_deref()
                .map(|t| format!("{t}-"))
                .unwrap_or_default(),
            spec.load.folder_part()
        );
        let rel = format!("levels/{name}");
        config.out_dir = prepare_run_dir(Some(&dir.join(&rel)), false)
            .map_err(|e| Stop::Failed(anyhow::anyhow!(e)))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Stop::Failed(e.into()))?;
        if count > 0 {
            rt.block_on(drain(&config));
        }
        let note = spec.flush_cache.then(|| {
            rt.block_on(flush_prefix_cache(
                &config.target,
                t.server.engine.as_deref(),
            ))
        });
        drop(rt);
        let started = Instant::now();
        let ran = execute(Execute {
            config,
            system: t.system.clone(),
            baseline: spec.baseline.clone(),
            server: &t.server,
            tokenizer: t.tokenizer.clone(),
            warnings: Vec::new(),
            announce: false,
        });
        let (report, records) = match ran {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => {
                return Err(Stop::Failed(anyhow::anyhow!(
                    "the server could not be used for level {} (see the message above)",
                    count + 1
                )))
            }
            Err(e) => return Err(Stop::Failed(e)),
        };
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
        eprintln!("[test] {line}{budget}{planned}");
    }

    fn load_run(&mut self, dir: &Path) -> Result<LevelRun, Stop> {
        let read = || -> Result<LevelRun> {
            let text = std::fs::read_to_string(dir.join("run.json"))
                .with_context(|| format!("reading {}/run.json", dir.display()))?;
            let report: RunReport = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{}/run.json is not a finished run's report (run `servebench report {}` first)",
                    dir.display(),
                    dir.display()
                )
            })?;
            let records =
                crate::store::read_requests(&dir.join("requests.jsonl"), report.started_at_us)?;
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

/// Waits (up to 60 s) until the server's `/metrics` shows nothing running or waiting, so a
/// level does not start with the previous level's requests still being served. Without
/// readable metrics there is nothing to wait on.
async fn drain(config: &RunConfig) {
    let Some(url) = config.telemetry.metrics_url.as_deref() else {
        return;
    };
    let Ok(base) = BaseUrl::parse(url) else {
        return;
    };
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned()))
        .unwrap_or_else(|| "/metrics".into());
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let resp = crate::client::simple::call(
            &base,
            Some(&config.target),
            "GET",
            &path,
            None,
            Duration::from_secs(5),
        )
        .await;
        let Ok(resp) = resp else { return };
        let Ok(text) = std::str::from_utf8(&resp.body) else {
            return;
        };
        let Ok(scrape) = crate::telemetry::prometheus::parse(text) else {
            return;
        };
        let (_, s) = crate::telemetry::engines::read(&scrape);
        match (s.running, s.waiting) {
            (None, None) => return,
            (r, w) if r.unwrap_or(0.0) + w.unwrap_or(0.0) < 0.5 => return,
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Asks the server to drop its prefix cache: vLLM (and the simulator)
/// `POST /reset_prefix_cache`, SGLang `POST /flush_cache`, llama.cpp erases each slot.
/// Returns what happened, for the level's record.
async fn flush_prefix_cache(target: &Target, engine: Option<&str>) -> String {
    let url = &target.url;
    let root = match BaseUrl::parse(&url.root()) {
        Ok(r) => r,
        Err(e) => return format!("could not empty the cache: {e}"),
    };
    let call = |method: &'static str, path: String| {
        let root = root.clone();
        async move {
            crate::client::simple::call(
                &root,
                Some(target),
                method,
                &path,
                None,
                Duration::from_secs(10),
            )
            .await
            .map(|r| r.status)
        }
    };
    if engine == Some("llama.cpp") {
        let slots = crate::client::simple::call(
            &root,
            Some(target),
            "GET",
            "/slots",
            None,
            Duration::from_secs(10),
        )
        .await;
        if let Some(resp) = slots.as_ref().ok().filter(|r| r.status == 200) {
            let ids: Vec<u64> = serde_json::from_slice::<serde_json::Value>(&resp.body)
                .ok()
                .and_then(|v| {
                    v.as_array()
                        .map(|a| a.iter().filter_map(|s| s.get("id")?.as_u64()).collect())
                })
                .unwrap_or_default();
            let mut ok = 0;
            for id in &ids {
                if call("POST", format!("/slots/{id}?action=erase")).await.ok() == Some(200) {
                    ok += 1;
                }
            }
            if ok > 0 && ok == ids.len() {
                return format!("cache emptied: llama.cpp erased {ok} slots");
            }
        }
        return "could not empty the cache (llama.cpp /slots erase refused; start the server with --slots): the cold level may start warm".into();
    }
    for path in ["/reset_prefix_cache", "/flush_cache"] {
        if call("POST", path.into()).await.ok() == Some(200) {
            return format!("cache emptied: POST {path}");
        }
    }
    "could not empty the cache (tried POST /reset_prefix_cache and /flush_cache; vLLM needs VLLM_SERVER_DEV_MODE=1): the cold level may start warm".into()
}

/// Parses `NAME=VALUE` flags.
fn named(values: &[String], flag: &str) -> Result<Vec<(String, String)>> {
    values
        .iter()
        .map(|v| match v.split_once('=') {
            Some((k, u)) if !k.trim().is_empty() && !u.trim().is_empty() => {
                Ok((k.trim().to_owned(), u.trim().to_owned()))
            }
            _ => bail!("{flag} `{v}` is not of the form NAME=VALUE"),
        })
        .collect()
}

/// Everything a test or suite needs before its first level.
struct Setup {
    runner: LevelRunner,
    options: Options,
    system: SystemInfo,
}

/// Readies every target (the built-in simulators included) and the options.
fn setup(
    args: &RunArgs,
    p: &ProcedureArgs,
    tests: &[TestName],
) -> Result<std::result::Result<Setup, u8>> {
    for label in &args.output.labels {
        crate::store::history::check_label(label).context("--label")?;
    }
    if args.load.max_concurrency.is_some() {
        // The levels are the procedure's loads: open-loop levels are unbounded, as the draft's
        // open loop is (4.2), and closed-loop levels set their own concurrency.
        eprintln!("warning: --max-concurrency is not used by tests: each level's load is the procedure's (open-loop levels have no in-flight cap)");
    }
    let targets = named(&p.targets, "--target")?;
    let from = named(&p.from, "--from")?;
    for (_, dir) in &from {
        if !Path::new(dir).join("run.json").exists() {
            bail!("--from {dir}: no run.json there (give a run folder)");
        }
    }
    if p.levels < 2 {
        bail!("--levels must be at least 2");
    }
    if let Some(c) = p.capacity {
        if !(c > 0.0 && c.is_finite()) {
            bail!("--capacity must be a positive number of requests per second");
        }
    }
    if p.oversubscription
        .iter()
        .any(|s| !(*s > 0.0 && s.is_finite()))
    {
        bail!("--oversubscription shares must be positive, e.g. 1,1.1,1.25,1.5");
    }
    if let Some(shares) = &p.load_shares {
        if shares.iter().any(|s| !(*s > 0.0 && s.is_finite())) {
            bail!("--load-shares must be positive shares of capacity, e.g. 0.25,0.5,0.75");
        }
    }
    let mut sims = Vec::new();
    let mut setups: BTreeMap<Option<String>, TargetSetup> = BTreeMap::new();
    let guardrail_sims =
        tests.contains(&TestName::Guardrails) && targets.is_empty() && args.target.url.is_none();
    let mut main = match ready(args)? {
        Ok(r) => r,
        Err(code) => return Ok(Err(code)),
    };
    let dir = main.resolved.config.out_dir.clone();
    let options = options(args, p, &main, &from)?;
    let system = main.resolved.system.clone();
    if let Some(s) = main.sim.take() {
        sims.push(s);
    }
    let into_setup = |r: Ready| TargetSetup {
        config: r.resolved.config,
        system: r.resolved.system,
        server: r.server,
        tokenizer: r.tokenizer,
        curve: None,
    };
    setups.insert(None, into_setup(main));
    let mut extra: Vec<(String, String)> = targets.clone();
    if guardrail_sims {
        // The simulator with each configuration of guardrails: the input filter delays
        // queueing, the output filter holds every token (docs/procedures.md).
        // The output filter also refuses 2 % of answers part-way, as a real one would now
        // and then, so the disclosure's refusal counts have something to count.
        for (name, input_ms, output_ms, refusal_rate) in [
            ("baseline", 0.0, 0.0, 0.0),
            ("input", 40.0, 0.0, 0.0),
            ("output", 0.0, 20.0, 0.02),
            ("full", 40.0, 20.0, 0.02),
        ] {
            let mut cfg = super::args::sim_config(
                &args.sim.sim_preset,
                args.sim.sim_config.as_deref(),
                args.sim.sim_ttft_ms,
                args.sim.sim_itl_ms,
            )?;
            cfg.seed = args.workload.seed;
            cfg.input_guardrail_ms = input_ms;
            cfg.output_guardrail_ms = output_ms;
            cfg.faults.refusal_rate = refusal_rate;
            let server = SimServer::spawn(cfg, 0).context("starting a simulator")?;
            server.truth().keep_at_most(0);
            extra.push((name.into(), server.base_url()));
            sims.push(server);
        }
        eprintln!("No --target given: the guardrail test compares four built-in simulators (baseline; input filter +40 ms; output filter +20 ms per token, refusing 2 % of answers; full).");
    }
    for (name, url) in &extra {
        let mut a = args.clone();
        a.target.url = Some(url.clone());
        a.output.out = Some(dir.clone());
        a.output.force = false;
        let r = match ready(&a)? {
            Ok(r) => r,
            Err(code) => return Ok(Err(code)),
        };
        setups.insert(Some(name.clone()), into_setup(r));
    }
    let mut options = options;
    options.targets = extra.iter().map(|(n, _)| n.clone()).collect();
    if guardrail_sims && options.safety_systems.is_none() {
        options.safety_systems = Some(
            "the built-in simulator's stand-in filters (input +40 ms before queueing; output +20 ms per token, refusing 2 % of answers part-way)".into(),
        );
    }
    Ok(Ok(Setup {
        runner: LevelRunner {
            dir,
            targets: setups,
            budget: Budget::new(p.budget),
            count: 0,
            quiet: args.output.quiet,
            last_rps: None,
            quick: p.quick,
            planned: None,
            _sims: sims,
        },
        options,
        system,
    }))
}

/// The procedure options from the flags and the main target.
fn options(
    args: &RunArgs,
    p: &ProcedureArgs,
    main: &Ready,
    from: &[(String, String)],
) -> Result<Options> {
    let config = &main.resolved.config;
    let w = &args.workload;
    let engine = main.server.engine.as_deref();
    let cache_switch = matches!(engine, Some("llama.cpp") | Some("servebench-sim"));
    // What the report must state and no record shows (5.1.5.1, 4.8.1): the tester's words,
    // else what the built-in simulator knows of itself.
    let builtin = match &args.target.url {
        Some(_) => procedure::Disclosure::default(),
        None => procedure::Disclosure::of_simulator(
            &super::args::sim_config(
                &args.sim.sim_preset,
                args.sim.sim_config.as_deref(),
                args.sim.sim_ttft_ms,
                args.sim.sim_itl_ms,
            )?,
            config.request.prefix_cache,
        ),
    };
    let skipped_per_request = (cache_switch && !config.request.prefix_cache).then(|| {
        "disabled per request (cache_prompt: false); the server's own setting not stated".to_owned()
    });
    Ok(Options {
        quick: p.quick,
        level_duration: p.level_duration.or(args.limits.duration),
        tolerance: p.tolerance,
        slo: config.slo.clone(),
        seed: w.seed,
        workload: config.workload.clone(),
        workload_given: w.workload.is_some()
            || w.dataset.is_some()
            || w.input_tokens.is_some()
            || w.output_tokens.is_some(),
        load: match (args.load.rate, args.load.concurrency) {
            (Some(r), _) => Some(Load::Rate { rate_per_s: r }),
            (None, Some(c)) => Some(Load::Concurrency { concurrency: c }),
            _ => None,
        },
        closed_loop: p.closed_loop,
        capacity_rate_per_s: p.capacity,
        capacity_concurrency: p.capacity_concurrency,
        estimate_concurrency: p.estimate_concurrency.max(1),
        start_concurrency: p.start_concurrency.max(1),
        concurrency_limit: p.concurrency_limit.max(1),
        curve_levels: p.levels,
        load_shares: p.load_shares.clone(),
        oversubscription: p.oversubscription.clone(),
        lengths: p.lengths.clone(),
        requests_per_length: p.requests_per_length,
        length_concurrency: p.length_concurrency.max(1),
        requests: args.limits.requests,
        output_tokens: w.output_tokens,
        context_tokens: p.context_tokens.or(main.server.context_tokens),
        gpus: args.target.gpus,
        targets: Vec::new(),
        from_runs: from
            .iter()
            .map(|(k, v)| (k.clone(), PathBuf::from(v)))
            .collect(),
        cache_switch,
        arrival: format!("{:?}", args.load.arrival).to_lowercase(),
        safety_systems: p.safety_systems.clone(),
        disclosure: procedure::Disclosure {
            prefix_caching: p
                .prefix_caching
                .clone()
                .or(builtin.prefix_caching)
                .or(skipped_per_request),
            guardrails: p.guardrails.clone().or(builtin.guardrails),
        },
    })
}

/// Runs one procedure.
fn run_procedure(test: TestName, bench: &mut LevelRunner, o: &Options) -> Finding {
    use procedure::*;
    match test {
        TestName::Ttft => ttft::run(bench, o),
        TestName::Throughput => throughput::run(bench, o),
        TestName::Curve => curve::run(bench, o),
        TestName::Itl => itl::run(bench, o),
        TestName::Capacity => capacity::run(bench, o),
        TestName::Fairness => fairness::run(bench, o),
        TestName::PrefixCache => prefix_cache::run(bench, o),
        TestName::MemoryPressure => memory::run(bench, o),
        TestName::LongContext => long_context::run(bench, o),
        TestName::Guardrails => guardrails::run(bench, o),
    }
}

/// Runs `test` into the runner's current folder and writes `test.json`.
fn one_test(
    test: TestName,
    runner: &mut LevelRunner,
    o: &Options,
    system: &SystemInfo,
) -> Result<TestReport> {
    let started = crate::clock::RunClock::start().unix_us(0);
    let t0 = Instant::now();
    if !runner.quiet {
        eprintln!(
            "servebench test {} (draft {} {}): levels go to {}",
            test.slug(),
            test.section(),
            test.title(),
            runner.dir.join("levels").display()
        );
    }
    runner.announce_plan(test, o);
    let f = run_procedure(test, runner, o);
    let mut parameters = f.parameters;
    if let Some(obj) = parameters.as_object_mut() {
        obj.insert(
            "budget_s".into(),
            serde_json::json!(runner.budget.limit.map(|d| d.as_secs_f64())),
        );
    }
    let finished = crate::clock::RunClock::start().unix_us(0);
    let mut report = TestReport {
        schema_version: TEST_SCHEMA_VERSION,
        test,
        section: test.section().into(),
        title: test.title().into(),
        status: if f.stopped.is_some() {
            TestStatus::Incomplete
        } else {
            TestStatus::Complete
        },
        stopped: f.stopped,
        answer: f.answer,
        started_at: crate::clock::iso8601_ms(started),
        finished_at: crate::clock::iso8601_ms(finished),
        started_at_us: started,
        finished_at_us: finished,
        duration_s: t0.elapsed().as_secs_f64(),
        exit_status: exit::OK,
        interrupted: INTERRUPTED.load(Ordering::Acquire),
        tool: ToolInfo::default(),
        command_line: redacted_command_line(),
        target: runner.target_info(),
        system: system.clone(),
        parameters,
        levels: f.levels,
        result: f.result,
        compliance: f.compliance,
    };
    report.exit_status = status(&report);
    let path = runner.dir.join("test.json");
    let tmp = runner.dir.join("test.json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&report)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    // The pages are a view of test.json and the level folders: failing to write them
    // never loses the test (`servebench report DIR --format all` writes them again).
    if let Err(err) = super::report::write_test_files(&runner.dir, &report) {
        eprintln!(
            "warning: the test's reports were not written: {err:#}. `servebench report {} --format all` writes them again.",
            runner.dir.display()
        );
    }
    Ok(report)
}

/// `servebench test NAME`.
pub fn test(args: TestArgs) -> Result<u8> {
    watch_interrupts();
    let Setup {
        mut runner,
        options,
        system,
    } = match setup(&args.run, &args.procedure, &[args.test])? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let report = one_test(args.test, &mut runner, &options, &system)?;
    print!("{}", procedure::tables::render(&report));
    println!(
        "\nTest folder: {} (report.html, report.md, test.json; a run folder per level)",
        runner.dir.display()
    );
    index_test(&args.run, &runner.dir);
    Ok(report.exit_status)
}

/// Indexes a finished test folder (the test and its levels) in the history, unless
/// `--no-store`; a failure warns and keeps the folder.
fn index_test(run: &RunArgs, dir: &Path) {
    if !run.output.no_store {
        super::history::record_run(
            run.output.store.as_deref(),
            dir,
            &run.output.labels,
            run.output.quiet,
        );
    }
}

/// The exit status of a test: 130 when interrupted, 1 when it found no answer, else 0.
fn status(r: &TestReport) -> u8 {
    if INTERRUPTED.load(Ordering::Acquire) {
        exit::INTERRUPTED
    } else if r.levels.is_empty() || r.answer.starts_with("no ") {
        exit::FAILED
    } else {
        exit::OK
    }
}

/// The order a suite runs in: throughput first, since its capacity feeds the others.
const SUITE_ORDER: [TestName; 10] = [
    TestName::Throughput,
    TestName::Ttft,
    TestName::Curve,
    TestName::Itl,
    TestName::Capacity,
    TestName::MemoryPressure,
    TestName::Fairness,
    TestName::PrefixCache,
    TestName::LongContext,
    TestName::Guardrails,
];

/// `servebench suite`.
pub fn suite(args: SuiteArgs) -> Result<u8> {
    watch_interrupts();
    let wanted: Vec<TestName> = SUITE_ORDER
        .iter()
        .copied()
        .filter(|t| !args.skip.contains(t))
        .collect();
    let Setup {
        mut runner,
        mut options,
        system,
    } = match setup(&args.run, &args.procedure, &wanted)? {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    if let (Some(line), false) = (runner.suite_plan(&wanted, &options), runner.quiet) {
        eprintln!("{line}");
    }
    let suite_dir = runner.dir.clone();
    let started = crate::clock::RunClock::start().unix_us(0);
    let mut entries = Vec::new();
    let mut worst = exit::OK;
    for test in wanted {
        if INTERRUPTED.load(Ordering::Acquire) {
            entries.push(serde_json::json!({"test": test, "skipped": "interrupted"}));
            continue;
        }
        if test == TestName::Guardrails && options.targets.len() < 2 {
            entries.push(serde_json::json!({"test": test, "skipped": "needs two or more --target configurations (baseline=URL, full=URL, ...)"}));
            continue;
        }
        let dir = suite_dir.join(test.slug());
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        runner.start_test(dir.clone());
        let report = one_test(test, &mut runner, &options, &system)?;
        print!("{}", procedure::tables::render(&report));
        index_test(&args.run, &dir);
        // Capacities found feed the tests after.
        if let Some(r) = report
            .result
            .get("sustainable_rate_per_s")
            .and_then(|v| v.as_f64())
        {
            options.capacity_rate_per_s.get_or_insert(r);
        }
        if let Some(c) = report
            .result
            .get("max_concurrency")
            .and_then(|v| v.as_u64())
        {
            options.capacity_concurrency.get_or_insert(c as u32);
        }
        worst = worst.max(report.exit_status);
        entries.push(serde_json::json!({
            "test": test,
            "section": report.section,
            "title": report.title,
            "folder": test.slug(),
            "status": report.status,
            "answer": report.answer,
            "compliance": report.compliance.verdict,
        }));
    }
    let summary = serde_json::json!({
        "schema_version": TEST_SCHEMA_VERSION,
        "suite": true,
        "started_at": crate::clock::iso8601_ms(started),
        "finished_at": crate::clock::iso8601_ms(crate::clock::RunClock::start().unix_us(0)),
        "command_line": redacted_command_line(),
        "target": runner.target_info(),
        "system": system,
        "tests": entries,
    });
    std::fs::write(
        suite_dir.join("suite.json"),
        serde_json::to_vec_pretty(&summary)?,
    )
    .context("writing suite.json")?;
    if let Err(err) = super::report::write_suite_files(&suite_dir) {
        eprintln!(
            "warning: the suite's reports were not written: {err:#}. `servebench report {} --format all` writes them again.",
            suite_dir.display()
        );
    }
    println!("\nSuite");
    for e in summary["tests"].as_array().into_iter().flatten() {
        match e.get("skipped") {
            Some(why) => println!(
                "  {:<16} skipped: {}",
                e["test"].as_str().unwrap_or(""),
                why.as_str().unwrap_or("")
            ),
            None => println!(
                "  {:<16} {} [{}]",
                e["test"].as_str().unwrap_or(""),
                e["answer"].as_str().unwrap_or(""),
                e["compliance"].as_str().unwrap_or("")
            ),
        }
    }
    println!(
        "\nSuite folder: {} (report.html, report.md, suite.json; a folder per test)",
        suite_dir.display()
    );
    Ok(worst)
}
