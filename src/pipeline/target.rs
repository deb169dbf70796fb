//! A target ready to measure, the first stage of every run, of every test (once per
//! target) and of every shard: the flags
//! resolved (`resolve`), the built-in simulator started when no `--url` was given, the
//! server waited for and asked what it is, the model checked against what it serves, the
//! prefill set-up checked against the engine, one test request sent (a server that does not
//! speak the API as configured ends here, with exit status 2), and the tokenizer loaded.

use crate::client::BaseUrl;
use crate::config::{PrefillSetup, RunConfig};
use crate::flags::RunArgs;
use crate::pipeline::exit;
use crate::record::run::ServerInfo;
use crate::runner;
use crate::sim::SimServer;
use crate::tokenizer;
use anyhow::{Context, Result};

use crate::pipeline::resolve::{resolve, Resolved};

/// A target ready to measure: the built-in simulator when no `--url` was given (kept alive
/// here), the resolved configuration with the model discovered, the server's facts and the
/// tokenizer.
pub struct Ready {
    pub sim: Option<SimServer>,
    pub resolved: Resolved,
    pub server: ServerInfo,
    pub tokenizer: tokenizer::SharedTokenizer,
    /// Warnings found while getting ready, for the run's summary.
    pub warnings: Vec<crate::metrics::warnings::Warning>,
}

/// Validates the flags, starts the simulator if needed, waits for the server, checks the
/// model and loads the tokenizer. [`exit::EarlyExit`]: the server could not be used (the
/// message is printed).
pub fn ready(args: &RunArgs) -> Result<Ready> {
    // Everything the flags name is checked first, against a placeholder URL when the
    // simulator will supply the real one.
    let placeholder = args
        .target
        .url
        .clone()
        .unwrap_or_else(|| "http://127.0.0.1:1/v1".into());
    let mut resolved = resolve(args, &placeholder, args.target.url.is_none())?;
    let sim = start_sim(args, &mut resolved)?;
    // Readiness and discovery, on a small runtime of its own.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let server = match rt.block_on(runner::wait_until_ready(
        &resolved.config.target,
        args.target.ready_timeout,
    )) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            remove_if_empty(&resolved.config.out_dir);
            return Err(exit::EarlyExit(exit::USAGE).into());
        }
    };
    let mut warnings = Vec::new();
    if !model_served(args, &mut resolved.config.target, &server) {
        remove_if_empty(&resolved.config.out_dir);
        return Err(exit::EarlyExit(exit::USAGE).into());
    }
    check_prefill(
        &mut resolved.config.prefill,
        &resolved.config.target,
        &server,
        &mut warnings,
    );
    // One real request before any load: a server that does not speak the API as configured
    // (an HTML page, a refused key, a missing route, no streaming) ends the run now. Its
    // speed sizes the warm-up and the planned lengths printed before each phase.
    match preflight(args, &resolved.config, &rt) {
        Ok(speed) => {
            if speed.is_some_and(|s| s.closes_connections) && !args.output.quiet {
                eprintln!("warning: the server closed the connection after the test request's answer although its response announced keep-alive (llama.cpp's HTTP layer does after every streamed answer): every request of this run will open a new connection. That is the server's behaviour, not the client's; connect time is reported apart from TTFT.");
            }
            resolved.config.preflight = speed
        }
        Err(why) => {
            eprintln!("error: {why}");
            remove_if_empty(&resolved.config.out_dir);
            return Err(exit::EarlyExit(exit::USAGE).into());
        }
    }
    drop(rt);
    let tokenizer = crate::client::server_tokenizer::load_for(
        &resolved.tokenizer_name,
        &resolved.config.target,
    )?;
    Ok(Ready {
        sim,
        resolved,
        server,
        tokenizer,
        warnings,
    })
}

/// The built-in simulator's configuration the flags ask for (preset, file, fixed timing),
/// seeded with the run's seed.
pub fn sim_config_of(args: &RunArgs) -> Result<crate::sim::SimConfig> {
    let mut cfg = crate::flags::sim_config(
        &args.sim.sim_preset,
        args.sim.sim_config.as_deref(),
        args.sim.sim_ttft_ms,
        args.sim.sim_itl_ms,
    )?;
    cfg.seed = args.workload.seed;
    Ok(cfg)
}

/// The built-in simulator when no `--url` was given, started, with the configuration
/// pointed at it (and at its `/metrics` unless `--metrics-url` was given).
fn start_sim(args: &RunArgs, resolved: &mut Resolved) -> Result<Option<SimServer>> {
    if args.target.url.is_some() {
        return Ok(None);
    }
    let cfg = sim_config_of(args)?;
    let what = match &cfg.fixed {
        Some(f) => format!("fixed timing: TTFT {} ms, ITL {} ms", f.ttft_ms, f.itl_ms),
        None => format!(
            "engine model, preset {}",
            args.sim
                .sim_config
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| args.sim.sim_preset.clone())
        ),
    };
    let server = SimServer::spawn(cfg, 0).context("starting the built-in simulator")?;
    // Nothing here reads the simulator's truth: keeping it would grow with the run.
    server.truth().keep_at_most(0);
    let url = match resolved.config.target.endpoint {
        crate::client::Endpoint::Grpc => server.grpc_url(),
        _ => server.base_url(),
    };
    eprintln!(
        "No --url given: using the built-in simulator at {url} ({what}). Pass --url to test a real server.",
    );
    resolved.config.target.url = BaseUrl::parse(&url)?;
    let tc = &mut resolved.config.telemetry;
    if tc.metrics_url.is_some() && !tc.metrics_url_given {
        // The simulator's HTTP port serves /metrics (also when gRPC is driven).
        let http = BaseUrl::parse(&server.base_url())?;
        tc.metrics_url = Some(format!("{}/metrics", http.root()));
    }
    Ok(Some(server))
}

/// The model: the server's first when none was given; else whether the server lists it
/// (`false`: it does not, and the message is printed).
fn model_served(args: &RunArgs, target: &mut crate::client::Target, server: &ServerInfo) -> bool {
    if target.model.is_empty() {
        target.model = server
            .models
            .first()
            .cloned()
            .unwrap_or_else(|| "default".into());
    } else if !args.target.no_model_check
        // The native routes name no model: the engine serves the one it loaded.
        && !target.endpoint.is_native()
        && !server.models.is_empty()
        && !server.models.contains(&target.model)
    {
        eprintln!(
            "error: the server does not list model `{}`; it serves: {}\n(pass one of those to --model, or --no-model-check for servers that ignore the field)",
            target.model,
            server.models.join(", ")
        );
        return false;
    }
    true
}

/// The prefill setup against the server: the profile capped at its context, a curve
/// profiled on another system warned about.
fn check_prefill(
    prefill: &mut PrefillSetup,
    target: &crate::client::Target,
    server: &ServerInfo,
    warnings: &mut Vec<crate::metrics::warnings::Warning>,
) {
    match prefill {
        PrefillSetup::Profile(plan) => plan.max_prompt_tokens = server.context_tokens,
        PrefillSetup::Curve(c) => {
            let found = c.mismatches(
                &target.url.to_string(),
                &target.model,
                server.engine.as_deref(),
                server.version.as_deref(),
            );
            if !found.is_empty() {
                eprintln!(
                    "WARNING: the --prefill-curve was profiled elsewhere: {}. Fluidity deadlines would be another system's; profile this one (omit --prefill-curve) for figures you can compare.",
                    found.join("; ")
                );
                warnings.push(crate::metrics::warnings::Warning::PrefillCurveElsewhere {
                    differences: found.join("; "),
                });
            }
        }
        PrefillSetup::Off => {}
    }
}

/// Sends the one test request of `runner::preflight` and measures the server's speed with
/// it; `Err`: why the server cannot be used as configured, and the fix.
fn preflight(
    args: &RunArgs,
    config: &RunConfig,
    rt: &tokio::runtime::Runtime,
) -> std::result::Result<Option<crate::record::speed::Speed>, String> {
    let t = &config.target;
    let key_env = args
        .target
        .api_key_env
        .clone()
        .unwrap_or_else(|| crate::client::apis::default_key_env(t.endpoint).to_owned());
    let key_sent = if t.api_key.is_some() {
        Some(match &args.target.api_key_file {
            Some(path) => format!("--api-key-file {}", path.display()),
            None => format!("the variable {key_env}"),
        })
    } else if t.url.basic_auth.is_some() {
        Some("the credentials in --url".to_owned())
    } else {
        t.headers
            .iter()
            .find(|(k, _)| crate::client::is_credential_header(k))
            .map(|(k, _)| format!("--header '{k}: ...'"))
    };
    let route = runner::preflight::Route::of(t, &key_env, key_sent);
    rt.block_on(runner::preflight::check(
        t,
        &config.request,
        &config.exchange_limits,
        config.request_timeout,
        &route,
    ))
}

/// Removes a run folder that nothing was written to (the run could not start).
pub fn remove_if_empty(dir: &std::path::Path) {
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) {
        let _ = std::fs::remove_dir(dir);
    }
}
