//! `servebench run`: flags → validated `RunConfig` → runner → one summary → report → exit
//! status.
//!
//! Everything the flags name (files, folders, numbers) is checked before anything starts,
//! the simulator included, so a typo costs a second, not a warm-up.

use super::args::{ArrivalArg, DeadlinesArg, IdleCostArg, RunArgs, SutBoundaryArg};
use super::exit;
use crate::config::{
    Arrival, BaseUrl, Limits, LoadPattern, PrefillSetup, ProfilePlan, RequestOptions, RunConfig,
    Secret, Target, Warmup,
};
use crate::metrics::experience::FluidityParams;
use crate::metrics::fluidity::{PrefillCurve, ProfiledCurve};
use crate::metrics::slo::SloSpec;
use crate::metrics::summary::failed_share;
use crate::metrics::ux::{DeadlineScheme, IdleCost, UxParams};
use crate::record::{FailureKind, Phase};
use crate::report::{terminal, SystemInfo, ToolInfo, Verdict};
use crate::runner::{self, RunError, ServerInfo};
use crate::sim::SimServer;
use crate::store::{prepare_run_dir, read_requests, write_run_json};
use crate::tokenizer;
use crate::workload::WorkloadSpec;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;

/// The configuration, plus what only the CLI needs.
pub struct Resolved {
    pub config: RunConfig,
    pub tokenizer_name: String,
    /// Isolated TTFT (P50, P99) per class, from `--baseline`.
    pub baseline: BTreeMap<String, (f64, f64)>,
    pub system: SystemInfo,
}

/// User-experience parameters from the flags.
fn ux_params(args: &RunArgs) -> Result<UxParams> {
    let u = &args.ux;
    let scheme = match u.deadlines {
        DeadlinesArg::Reading => {
            if !(u.reading_rate > 0.0 && u.reading_rate.is_finite()) {
                bail!("--reading-rate must be a positive number of tokens per second");
            }
            if u.d0_ms.is_some_and(|d0| !(d0 >= 0.0 && d0.is_finite())) {
                bail!("--d0-ms must be a number of milliseconds, 0 or more");
            }
            DeadlineScheme::Reading {
                d0_ms: u.d0_ms,
                rate_per_s: u.reading_rate,
            }
        }
        DeadlinesArg::TtftTbt => DeadlineScheme::TtftTbt {
            ttft_ms: u.deadline_ttft_ms,
            tbt_ms: u.deadline_tbt_ms,
        },
        DeadlinesArg::E2e => DeadlineScheme::E2e {
            e2e_ms: u.deadline_e2e_ms,
        },
    };
    Ok(UxParams {
        scheme,
        alpha: u.alpha,
        idle_cost: match u.idle_cost {
            IdleCostArg::Linear => IdleCost::Linear,
            IdleCostArg::Quadratic => IdleCost::Quadratic,
            IdleCostArg::Log1p => IdleCost::Log1p,
        },
        patience_s: u.patience.as_secs_f64(),
    })
}

/// Reads a prefill curve file: a `ProfiledCurve` document, or (older files) a bare curve.
pub fn read_prefill_curve(path: &std::path::Path) -> Result<ProfiledCurve> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading --prefill-curve {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if let Ok(p) = serde_json::from_value::<ProfiledCurve>(v.clone()) {
        return Ok(p);
    }
    let curve: PrefillCurve = serde_json::from_value(v.get("curve").cloned().unwrap_or(v))
        .with_context(|| {
            format!(
                "{} is not a prefill curve from `servebench profile-prefill`",
                path.display()
            )
        })?;
    Ok(ProfiledCurve {
        curve,
        target: "unknown".into(),
        model: "unknown".into(),
        engine: None,
        engine_version: None,
        created_at: String::new(),
        points: Vec::new(),
    })
}

/// Isolated TTFT (P50, P99) per class from a baseline run folder.
fn baseline_by_class(dir: &std::path::Path) -> Result<BTreeMap<String, (f64, f64)>> {
    let records = read_requests(&dir.join("requests.jsonl"), 0)
        .with_context(|| format!("reading the --baseline run {}", dir.display()))?;
    let mut by_class: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.phase == Phase::Measure && r.outcome.is_ok())
    {
        // The TTFT written with the record (exact); else from its µs timestamps.
        let ttft = r.derived.as_ref().and_then(|d| d.ttft_ms).or_else(|| {
            let (t, s) = (r.first_token_at()?, r.sent_at?);
            Some((t - s) as f64 / 1e6)
        });
        if let Some(ttft) = ttft {
            let class = r.class.clone().unwrap_or_else(|| "default".into());
            by_class.entry(class).or_default().push(ttft);
        }
    }
    if by_class.is_empty() {
        bail!(
            "the --baseline run {} has no completed measured requests",
            dir.display()
        );
    }
    Ok(by_class
        .into_iter()
        .filter_map(|(c, mut v)| {
            let d = crate::metrics::Distribution::of(&mut v)?;
            Some((c, (d.p50, d.p99)))
        })
        .collect())
}

/// The command line, with credentials redacted: URL user info, credential header values,
/// bearer tokens.
pub fn redacted_command_line() -> Vec<String> {
    redact_args(std::env::args())
}

/// Redacts credentials from command-line arguments.
pub fn redact_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut after_header = false;
    for a in args {
        let shown = if after_header || a.starts_with("--header=") {
            let (prefix, h) = a
                .split_once('=')
                .filter(|_| !after_header)
                .unwrap_or(("", &a));
            match h.split_once(':') {
                Some((k, _)) if crate::config::is_credential_header(k) => {
                    let sep = if prefix.is_empty() { "" } else { "=" };
                    format!("{prefix}{sep}{k}: <redacted>")
                }
                _ => a.clone(),
            }
        } else if a.contains("://") && a.contains('@') {
            match BaseUrl::parse(&a) {
                Ok(u) if u.basic_auth.is_some() => u.to_string(),
                _ => a.clone(),
            }
        } else {
            a.clone()
        };
        after_header = a == "--header";
        out.push(shown);
    }
    out
}

/// Validates flags into a configuration. `url` is the target (the simulator's when built in).
/// Reads every file the flags name, so nothing starts on a configuration that cannot run.
pub fn resolve(args: &RunArgs, url: &str, builtin: bool) -> Result<Resolved> {
    let t = &args.target;
    let url = BaseUrl::parse(url)?;
    let url_for_metrics = url.clone();
    let tls = crate::client::network::TlsOptions {
        ca_cert: t.ca_cert.clone(),
        client_cert: t.client_cert.clone(),
        client_key: t.client_key.clone(),
        insecure: t.insecure,
    };
    if url.tls {
        // Read every certificate file now: a bad one is a configuration error, not a run
        // of connection failures.
        crate::client::network::client_config(&tls)?;
    }
    if t.insecure {
        eprintln!("WARNING: --insecure: the server's TLS certificate is NOT verified; anyone between you and it could read or change the traffic. For testing only.");
    }
    let proxy = if builtin {
        None
    } else {
        crate::client::network::proxy_from_env(&url)?
    };
    if let Some(p) = &proxy {
        eprintln!(
            "Reaching {url} through the proxy {} ({}{})",
            p.url,
            p.from,
            if p.tunnel { ", CONNECT tunnel" } else { "" }
        );
    }
    let api_key = match &t.api_key_file {
        // Credentials written into --url are the user's explicit choice for this server.
        None if url.basic_auth.is_some() => None,
        Some(path) => Some(Secret::new(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the API key file {}", path.display()))?
                .trim()
                .to_owned(),
        )),
        None => std::env::var(
            t.api_key_env
                .as_deref()
                .unwrap_or(crate::client::apis::default_key_env(t.endpoint.endpoint())),
        )
        .ok()
        .filter(|k| !k.is_empty())
        .map(Secret::new),
    };
    let websocket = match t.endpoint.endpoint() {
        crate::config::Endpoint::Websocket => Some(websocket_options(args)?),
        _ => None,
    };
    if t.endpoint.endpoint() == crate::config::Endpoint::Grpc && url.tls {
        bail!("--endpoint grpc speaks plain HTTP/2 (h2c) only: use an http:// URL (e.g. http://127.0.0.1:8001 for Triton)");
    }
    let mut headers = Vec::new();
    for h in &t.headers {
        let Some((k, v)) = h.split_once(':') else {
            bail!("--header `{h}` is not of the form 'Name: value'");
        };
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let w = &args.workload;
    let (dataset, dataset_info) = match &w.dataset {
        Some(path) => {
            let (d, info) =
                crate::workload::datasets::load(path, w.dataset_format.map(|f| f.as_str()))?;
            if info.truncated {
                eprintln!(
                    "note: {} ends mid-record (truncated file): using its {} complete records",
                    path.display(),
                    info.records
                );
            }
            (Some(std::sync::Arc::new(d)), Some(info))
        }
        None => (None, None),
    };
    let workload = workload_of(
        w.workload.as_deref(),
        w.input_tokens,
        w.output_tokens,
        dataset.as_deref(),
    )?;
    let l = &args.load;
    let load = match (l.concurrency, l.rate) {
        _ if l.arrival == ArrivalArg::Trace => {
            if !matches!(
                dataset.as_deref(),
                Some(crate::workload::datasets::Dataset::Trace(_))
            ) {
                bail!("--arrival trace replays a trace's timestamps: pass --dataset FILE in trace format (one {{\"timestamp\", \"input_length\", \"output_length\"}} per line)");
            }
            if !(l.speed > 0.0 && l.speed.is_finite()) {
                bail!("--speed must be a positive factor");
            }
            LoadPattern::Trace { speed: l.speed }
        }
        (_, Some(rate)) => {
            if !(rate > 0.0 && rate.is_finite()) {
                bail!(
                    "--rate must be a positive number of requests per second (0.5 = one every 2 s)"
                );
            }
            let arrival = match l.arrival {
                ArrivalArg::Poisson => Arrival::Poisson,
                ArrivalArg::Constant => Arrival::Constant,
                ArrivalArg::Trace => unreachable!("handled above"),
                ArrivalArg::Gamma => {
                    if !(l.burstiness > 0.0 && l.burstiness.is_finite()) {
                        bail!("--burstiness must be positive (1 = Poisson-like)");
                    }
                    Arrival::Gamma { cv: l.burstiness }
                }
            };
            LoadPattern::Open {
                rate_per_s: rate,
                arrival,
            }
        }
        (Some(0), None) => bail!("--concurrency must be at least 1"),
        // The built-in simulator's demo uses 64 streams so the default run ends within a minute.
        (c, None) => LoadPattern::Closed {
            concurrency: c.unwrap_or(if builtin { 64 } else { 32 }),
        },
    };
    if l.max_concurrency == Some(0) {
        bail!("--max-concurrency must be at least 1");
    }
    let lim = &args.limits;
    let limits = Limits {
        requests: lim.requests.or(if lim.duration.is_none() {
            Some(1000)
        } else {
            None
        }),
        duration: lim.duration,
    };
    if limits.duration.is_some_and(|d| d.is_zero()) {
        bail!("--duration must be longer than zero");
    }
    let warmup =
        match lim.warmup.as_str() {
            "auto" => Warmup::Auto,
            "none" | "0" => Warmup::None,
            n => Warmup::Requests(n.parse().with_context(|| {
                format!("--warmup `{n}`: use auto, none, or a number of requests")
            })?),
        };
    if !(0.0..=1.0).contains(&lim.max_failures) {
        bail!("--max-failures must be a share between 0 and 1 (0.05 = 5 %)");
    }
    let s = &args.slo;
    if !(0.0..=1.0).contains(&s.slo_target) {
        bail!("--slo-target must be between 0 and 1 (0.99 = 99 % of requests)");
    }
    let slo = s
        .slo
        .as_deref()
        .map(|v| SloSpec::parse(v, s.slo_target))
        .transpose()?;
    let b = &args.body;
    let mut extra_body = Vec::new();
    if let Some(extra) = &b.extra_body {
        let v: serde_json::Value =
            serde_json::from_str(extra).context("--extra-body is not valid JSON")?;
        let serde_json::Value::Object(map) = v else {
            bail!("--extra-body must be a JSON object, e.g. '{{\"top_k\": 1}}'");
        };
        extra_body.extend(map);
    }
    let u = &args.ux;
    if !(0.0..=1.0).contains(&u.fluidity_threshold) || !(0.0..=1.0).contains(&u.fluidity_quantile) {
        bail!("--fluidity-threshold and --fluidity-quantile are shares between 0 and 1");
    }
    let prefill = if u.no_fluidity {
        PrefillSetup::Off
    } else if let Some(path) = &u.prefill_curve {
        PrefillSetup::Curve(read_prefill_curve(path)?)
    } else {
        PrefillSetup::Profile(ProfilePlan {
            lengths: None,
            repeats: u.profile_repeats.max(1),
            budget: u.profile_budget,
            max_prompt_tokens: None,
        })
    };
    let baseline = match &u.baseline {
        Some(dir) => baseline_by_class(dir)?,
        None => BTreeMap::new(),
    };
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let config = RunConfig {
        target: Target {
            url,
            model: t.model.clone().unwrap_or_default(),
            endpoint: t.endpoint.endpoint(),
            headers,
            api_key,
            builtin_simulator: builtin,
            tls: tls.clone(),
            proxy,
            websocket,
            grpc_backend: (t.endpoint.endpoint() == crate::config::Endpoint::Grpc)
                .then_some(args.websocket.grpc_backend),
        },
        request: RequestOptions {
            ignore_eos: b.ignore_eos,
            prefix_cache: !b.no_prefix_cache,
            usage_per_chunk: b.usage_per_chunk,
            temperature: Some(b.temperature),
            extra_body,
        },
        workload,
        dataset_info,
        dataset,
        load,
        limits,
        warmup,
        warmup_max: lim.warmup_max,
        seed: w.seed,
        slo,
        max_failure_share: lim.max_failures,
        max_concurrency: l.max_concurrency,
        arrival_clock: args.output.arrival_clock,
        new_connection_per_request: args.output.new_connection_per_request,
        exact_summary_limit: Some(args.output.exact_summary_limit),
        prefill,
        ux: ux_params(args)?,
        fluidity: FluidityParams {
            tbt_deadline_ms: u.fluidity_tbt_ms,
            slack_ms: u.fluidity_slack_ms,
            threshold: u.fluidity_threshold,
            quantile: u.fluidity_quantile,
            curve: None,
            curve_source: String::new(),
        },
        telemetry: {
            let tl = &args.telemetry;
            let mut tc = crate::telemetry::TelemetryConfig::default_for(&url_for_metrics);
            if tl.no_server_metrics {
                tc.metrics_url = None;
            } else if let Some(u) = &tl.metrics_url {
                BaseUrl::parse(u).context("--metrics-url")?;
                tc.metrics_url = Some(u.clone());
                tc.metrics_url_given = true;
            }
            tc.gpu = match (&tl.gpu_metrics_url, tl.no_gpu_metrics) {
                (_, true) => crate::telemetry::collector::GpuSource::Off,
                (Some(u), _) => {
                    BaseUrl::parse(u).context("--gpu-metrics-url")?;
                    crate::telemetry::collector::GpuSource::Dcgm { url: u.clone() }
                }
                (None, false) => crate::telemetry::collector::GpuSource::Nvml,
            };
            tc
        },
        idle_power_s: args.telemetry.idle_power_s.max(0.0),
        request_timeout: lim.timeout,
        exchange_limits: crate::client::exchange::ExchangeLimits {
            first_byte: lim.first_byte_timeout,
            first_token: lim.first_token_timeout,
            max_response_bytes: lim.max_response_mib.max(1) << 20,
            max_line_bytes: (lim.max_line_mib.max(1) << 20) as usize,
        },
        retry: crate::config::RetryPolicy {
            max_retries: lim.retry,
            connect_errors: lim.retry_connect,
            max_wait_s: lim.retry_max_wait.as_secs_f64(),
            ..Default::default()
        },
        grace: lim.grace,
        client_threads: args.output.client_threads.unwrap_or(cores).max(1),
        out_dir: std::path::PathBuf::new(),
        command_line: redacted_command_line(),
        quiet: args.output.quiet,
        live_view: !args.output.no_live_view,
        shard: None,
        preflight: None,
    };
    // Last: the folder is created only once everything else is known to be valid.
    let mut config = config;
    config.out_dir = prepare_run_dir(args.output.out.as_deref(), args.output.force)?;
    Ok(Resolved {
        config,
        tokenizer_name: w.tokenizer.clone(),
        baseline,
        system: SystemInfo {
            hardware: t.hardware.clone(),
            gpus: t.gpus,
            sut_boundary: match t.sut_boundary {
                SutBoundaryArg::Engine => "engine",
                SutBoundaryArg::Gateway => "gateway",
                SutBoundaryArg::Compound => "compound",
            }
            .into(),
            notes: t.notes.clone(),
        },
    })
}

/// The WebSocket mode's options from the flags, checked: the template fills into a JSON
/// object and every pointer is well formed.
fn websocket_options(args: &RunArgs) -> Result<crate::config::WebSocketOptions> {
    let w = &args.websocket;
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let mut ws = crate::config::WebSocketOptions {
        path: w.ws_path.clone(),
        text_path: w.ws_text_path.clone(),
        reasoning_path: opt(&w.ws_reasoning_path),
        end: w.ws_end.clone(),
        usage_path: opt(&w.ws_usage_path),
        error_path: opt(&w.ws_error_path),
        finish_path: opt(&w.ws_finish_path),
        id_path: opt(&w.ws_id_path),
        ..Default::default()
    };
    if let Some(t) = &w.ws_template {
        ws.template = match t.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("reading the --ws-template file {path}"))?,
            None => t.clone(),
        };
    }
    crate::client::apis::websocket::WsPaths::new(&ws)
        .map_err(|e| anyhow::anyhow!("--ws-*-path / --ws-end: {e}"))?;
    let probe = [("user".to_owned(), "hello".to_owned())];
    crate::client::apis::websocket::request_message(
        &ws,
        "model",
        &crate::client::apis::Prompt {
            messages: &probe,
            max_tokens: 1,
            overrides: &[],
        },
        &crate::config::RequestOptions::default(),
    )?;
    Ok(ws)
}

/// The workload named by `--workload` (a name or a .toml file), fixed lengths, or a dataset.
pub fn workload_of(
    workload: Option<&str>,
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
    dataset: Option<&crate::workload::datasets::Dataset>,
) -> Result<WorkloadSpec> {
    use crate::workload::{Content, Scenario};
    if output_tokens == Some(0) || input_tokens == Some(0) {
        bail!("--input-tokens and --output-tokens must be at least 1");
    }
    let mut w = match (workload, input_tokens, output_tokens) {
        (Some(name), _, _) if name.ends_with(".toml") => {
            let text = std::fs::read_to_string(name)
                .with_context(|| format!("reading the scenario file {name}"))?;
            Scenario::from_toml(&text, name)?
        }
        (Some(name), _, _) => Scenario::named(name)?,
        (None, None, None) if dataset.is_some() => Scenario {
            name: "dataset".into(),
            description: "prompts (and output lengths, where recorded) from --dataset".into(),
            content: Content::Dataset,
            ..Scenario::fixed(1, 256)
        },
        (None, None, None) => Scenario::named("synthetic-uniform")?,
        (None, i, o) => Scenario::fixed(i.unwrap_or(256), o.unwrap_or(128)),
    };
    if dataset.is_some() && w.content != Content::Dataset {
        w.content = Content::Dataset;
    }
    Ok(w)
}

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
/// model and loads the tokenizer. `Ok(Err(code))`: the server could not be used (the
/// message is printed).
pub fn ready(args: &RunArgs) -> Result<std::result::Result<Ready, u8>> {
    // Everything the flags name is checked first, against a placeholder URL when the
    // simulator will supply the real one.
    let placeholder = args
        .target
        .url
        .clone()
        .unwrap_or_else(|| "http://127.0.0.1:1/v1".into());
    let mut resolved = resolve(args, &placeholder, args.target.url.is_none())?;
    let sim = match &args.target.url {
        Some(_) => None,
        None => {
            let mut cfg = super::args::sim_config(
                &args.sim.sim_preset,
                args.sim.sim_config.as_deref(),
                args.sim.sim_ttft_ms,
                args.sim.sim_itl_ms,
            )?;
            cfg.seed = args.workload.seed;
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
                crate::config::Endpoint::Grpc => server.grpc_url(),
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
            Some(server)
        }
    };
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
            return Ok(Err(exit::USAGE));
        }
    };
    let mut warnings = Vec::new();
    let target = &mut resolved.config.target;
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
        remove_if_empty(&resolved.config.out_dir);
        return Ok(Err(exit::USAGE));
    }
    match &mut resolved.config.prefill {
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
    // One real request before any load: a server that does not speak the API as configured
    // (an HTML page, a refused key, a missing route, no streaming) ends the run now. Its
    // speed sizes the warm-up and the planned lengths printed before each phase.
    match preflight(args, &resolved.config, &rt) {
        Ok(speed) => resolved.config.preflight = speed,
        Err(why) => {
            eprintln!("error: {why}");
            remove_if_empty(&resolved.config.out_dir);
            return Ok(Err(exit::USAGE));
        }
    }
    drop(rt);
    let tokenizer = tokenizer::load_for(&resolved.tokenizer_name, &resolved.config.target)?;
    Ok(Ok(Ready {
        sim,
        resolved,
        server,
        tokenizer,
        warnings,
    }))
}

/// Sends the one test request of `runner::preflight` and measures the server's speed with
/// it; `Err`: why the server cannot be used as configured, and the fix.
fn preflight(
    args: &RunArgs,
    config: &RunConfig,
    rt: &tokio::runtime::Runtime,
) -> std::result::Result<Option<runner::preflight::Speed>, String> {
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
            .find(|(k, _)| crate::config::is_credential_header(k))
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
fn remove_if_empty(dir: &std::path::Path) {
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) {
        let _ = std::fs::remove_dir(dir);
    }
}

/// Host facts recorded with every run.
pub fn host_info() -> crate::report::HostInfo {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    crate::report::HostInfo {
        hostname,
        os: std::env::consts::OS.into(),
        arch: std::env::consts::ARCH.into(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        cpu_model,
    }
}

/// The least share of a run's measured requests that must have finished (answered, or
/// failed) before the run ended. Below it, the rest were still unanswered at the end and
/// were cancelled after `--grace`: the offered load mostly never completed, so the run is
/// overloaded and does not pass (exit status 1), whatever its failure rate says (cancelled
/// requests stay out of the server's failure rate, not out of the verdict).
pub const MIN_FINISHED_SHARE: f64 = 0.9;

/// Why a run whose measured requests mostly never finished does not pass; `None` when at
/// least [`MIN_FINISHED_SHARE`] of the `total` finished (`cancelled` did not).
pub fn unfinished_reason(
    total: u64,
    completed: u64,
    cancelled: u64,
    load: LoadPattern,
) -> Option<String> {
    let finished = total.saturating_sub(cancelled);
    if total == 0 || finished as f64 >= MIN_FINISHED_SHARE * total as f64 {
        return None;
    }
    let what = format!(
        "overloaded: {cancelled} of {total} measured requests ({:.0} %) were still unanswered when the run ended and were cancelled; {completed} completed, and at least {:.0} % must finish",
        cancelled as f64 / total as f64 * 100.0,
        MIN_FINISHED_SHARE * 100.0
    );
    let fix = match load {
        LoadPattern::Closed { .. } => {
            "the server cannot answer this many concurrent requests within --duration: lower --concurrency, or lengthen --duration or --grace"
        }
        _ => "the server does not keep up with the offered load: lower --rate, or lengthen --duration or --grace",
    };
    Some(format!("{what}. {fix}"))
}

/// The exit status of a finished run and why.
pub fn verdict(r: &crate::metrics::RunSummary, config: &RunConfig, interrupted: bool) -> Verdict {
    let cancelled = r
        .failures
        .by_kind
        .get(&FailureKind::Cancelled)
        .copied()
        .unwrap_or(0);
    let counted = r.requests.total.saturating_sub(cancelled);
    let mut failed = Vec::new();
    // Requests the run itself cancelled at its end are not the server's failures: a run
    // whose requests were all still unanswered is overloaded (below), not failed.
    if r.requests.total > 0 && r.requests.completed == 0 && counted > 0 {
        failed.push(format!(
            "no request succeeded ({} failed{})",
            r.requests.failed.saturating_sub(cancelled),
            if cancelled > 0 {
                format!(", {cancelled} still unanswered at the end")
            } else {
                String::new()
            }
        ));
    } else if counted > 0 {
        let share = r.requests.failed.saturating_sub(cancelled) as f64 / counted as f64;
        if share > config.max_failure_share {
            failed.push(format!(
                "{:.1} % of requests failed, above --max-failures {:.1} %",
                share * 100.0,
                config.max_failure_share * 100.0
            ));
        }
    }
    if !interrupted && (r.requests.completed > 0 || cancelled > 0) {
        failed.extend(unfinished_reason(
            r.requests.total,
            r.requests.completed,
            cancelled,
            config.load,
        ));
    }
    if let Some(slo) = r.slo.as_ref().filter(|slo| !slo.passed) {
        failed.push(format!("SLO not met ({})", slo.spec));
    }
    let (exit_status, mut reasons) = if interrupted {
        let why = "interrupted (Ctrl-C); everything measured was written";
        (exit::INTERRUPTED, vec![why.to_owned()])
    } else if failed.is_empty() {
        (exit::OK, Vec::new())
    } else {
        (exit::FAILED, Vec::new())
    };
    reasons.extend(failed);
    if reasons.is_empty() {
        reasons.push(format!(
            "{:.1} % of requests succeeded{}{}",
            (1.0 - failed_share(r)) * 100.0,
            if cancelled > 0 {
                format!(" ({cancelled} cancelled at the end)")
            } else {
                String::new()
            },
            if r.slo.is_some() { "; SLO met" } else { "" }
        ));
    }
    Verdict {
        exit_status,
        reasons,
    }
}

/// Which tokenizer counted what, for the report.
pub fn tokenizer_info(tok: &dyn tokenizer::Tokenizer) -> crate::report::TokenizerInfo {
    crate::report::TokenizerInfo {
        name: tok.name().to_owned(),
        source: tok.source().to_owned(),
        vocab_size: tok.vocab_size(),
        counting_option: tokenizer::counting_option(tok).into(),
        special_tokens: if tok.enumerable() {
            "input: message texts only (no BOS/EOS, no chat-template tokens; system prompt included); throughput uses the server's usage.prompt_tokens when present, which counts them; output: server usage.completion_tokens when present, else this tokenizer on the whole text".into()
        } else {
            "input: the prompt after the server's chat template, BOS and template tokens included, as the server's /tokenize counts them; output: server usage.completion_tokens".into()
        },
    }
}

/// Runs the whole pipeline; returns the exit status.
pub fn run(args: RunArgs) -> Result<u8> {
    let detail = args.output.detail;
    for label in &args.output.labels {
        crate::store::history::check_label(label).context("--label")?;
    }
    let Ready {
        sim,
        resolved,
        server,
        tokenizer: tok,
        warnings,
    } = match ready(&args)? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let (report, _records) = match execute(Execute {
        config: resolved.config,
        system: resolved.system,
        baseline: resolved.baseline,
        server: &server,
        tokenizer: tok,
        warnings,
        announce: true,
    })? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    if detail {
        print!("{}", terminal::render_detail(&report));
    } else {
        print!("{}", terminal::render(&report));
    }
    let dir = &report.config.out_dir;
    println!("\nRun folder: {}", dir.display());
    let tables = if detail {
        ""
    } else {
        " · every table: --detail"
    };
    if dir.join("report.html").exists() {
        println!("  report.html (charts) · report.md · run.json · requests.jsonl{tables}");
    } else {
        println!("  run.json · requests.jsonl{tables}");
    }
    drop(sim);
    if !args.output.no_store {
        super::history::record_run(
            args.output.store.as_deref(),
            dir,
            &args.output.labels,
            args.output.quiet,
        );
    }
    Ok(report.verdict.exit_status)
}

/// What one run needs once the target is ready.
pub struct Execute<'a> {
    pub config: RunConfig,
    pub system: SystemInfo,
    /// Isolated TTFT (P50, P99) per class, ms.
    pub baseline: BTreeMap<String, (f64, f64)>,
    pub server: &'a ServerInfo,
    pub tokenizer: tokenizer::SharedTokenizer,
    pub warnings: Vec<crate::metrics::warnings::Warning>,
    /// Say what is about to run, on stderr.
    pub announce: bool,
}

/// One run into its folder: `run.json` marked running (for recovery), the runner, the
/// prefill curve it profiled, then the report (`run.json`, `timeseries.csv`). Returns the
/// report and every record; `Ok(Err(code))` when the server could not be used.
pub fn execute(
    e: Execute<'_>,
) -> Result<std::result::Result<(crate::report::RunReport, Vec<crate::record::RequestRecord>), u8>>
{
    let config = e.config;
    let host = host_info();
    let tokenizer_info = tokenizer_info(e.tokenizer.as_ref());
    // While the run goes on, run.json says so, with everything needed to recover it from
    // requests.jsonl if the process dies (`servebench report` does it).
    let start = crate::report::RunStart {
        schema_version: crate::report::SCHEMA_VERSION,
        status: "running".into(),
        tool: ToolInfo::default(),
        started_at: crate::clock::iso8601_ms(crate::clock::RunClock::start().unix_us(0)),
        started_at_us: crate::clock::RunClock::start().unix_us(0),
        command_line: config.command_line.clone(),
        host: host.clone(),
        system: e.system.clone(),
        server: e.server.clone(),
        tokenizer: tokenizer_info.clone(),
        baseline: e.baseline.clone(),
        config: config.clone(),
    };
    write_run_json(&config.out_dir, &serde_json::to_value(&start)?)?;
    if e.announce {
        eprintln!(
            "Running {} against {} (model {}); records stream to {}",
            crate::report::tables::describe_load(&config),
            config.target.url,
            config.target.model,
            config.out_dir.join("requests.jsonl").display()
        );
        if !config.quiet {
            eprintln!("{}", runner::plan::describe_run(&config));
        }
    }
    let output = match runner::run(&config, e.tokenizer.clone(), e.server) {
        Ok(o) => o,
        Err(RunError::Ready(err)) => {
            eprintln!("error: {err}");
            return Ok(Err(exit::USAGE));
        }
        Err(err) => return Err(err.into()),
    };
    if let Some(curve) = &output.prefill_curve {
        if matches!(config.prefill, PrefillSetup::Profile(_)) {
            let path = config.out_dir.join("prefill-curve.json");
            std::fs::write(&path, serde_json::to_vec_pretty(curve)?)
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    let end = output.clock.offset_of(std::time::Instant::now());
    let mut warnings = e.warnings;
    if let Some(failures) = output.measure.gave_up_after {
        eprintln!(
            "WARNING: measurement stopped: {failures} requests in a row failed and none succeeded (the failures, with their usual causes, are in the report)"
        );
        warnings.push(crate::metrics::warnings::Warning::GaveUpOnFailures { failures });
    }
    let report = super::assemble::assemble(super::assemble::Inputs {
        start,
        records: &output.records,
        streamed: output.streamed.as_deref(),
        telemetry: &output.telemetry,
        idle_until: output.idle_until,
        end,
        generator: output.generator,
        fluidity: output.fluidity.clone(),
        warmup: output.warmup.clone(),
        prefill_profile: output.profile.clone(),
        prefill_curve: output.prefill_curve.clone(),
        started_unix_us: output.started_unix_us,
        finished_unix_us: output.finished_unix_us,
        interrupted: output.interrupted,
        recovered: false,
        extra_warnings: warnings,
    })?;
    // The reports are a view of what is already on disk (the records as requests.jsonl
    // holds them, so `servebench report` rebuilds the same files): failing to write them
    // never loses the run or changes its exit status.
    let written = super::report::as_written(&output.records, &output.clock);
    if let Err(err) = super::report::write_files(&report, &written) {
        eprintln!(
            "warning: the reports were not written: {err:#}. The run itself is complete; `servebench report {} --format all` writes them again.",
            report.config.out_dir.display()
        );
    }
    Ok(Ok((report, output.records)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: LoadPattern = LoadPattern::Open {
        rate_per_s: 0.5,
        arrival: Arrival::Poisson,
    };

    /// Issue 23's run: `--rate 0.5 --duration 60s` against a 4-slot server, 4 of 30
    /// completed, 26 cancelled at the end.
    #[test]
    fn a_run_that_mostly_never_finished_is_overloaded() {
        let why = unfinished_reason(30, 4, 26, OPEN).expect("does not pass");
        assert!(
            why.starts_with("overloaded: 26 of 30 measured requests (87 %)"),
            "{why}"
        );
        assert!(
            why.contains("4 completed") && why.contains("lower --rate"),
            "{why}"
        );
        let closed = unfinished_reason(30, 4, 26, LoadPattern::Closed { concurrency: 26 });
        assert!(closed.unwrap().contains("lower --concurrency"));
    }

    #[test]
    fn a_few_cancelled_at_the_end_still_pass() {
        // Exactly 90 % finished: the threshold is met.
        assert_eq!(unfinished_reason(10, 9, 1, OPEN), None);
        assert_eq!(unfinished_reason(1000, 990, 10, OPEN), None);
        assert_eq!(unfinished_reason(0, 0, 0, OPEN), None);
        // Failed requests finished: only cancelled ones count against the threshold.
        assert_eq!(unfinished_reason(100, 50, 0, OPEN), None);
        assert!(unfinished_reason(10, 8, 2, OPEN).is_some());
    }

    #[test]
    fn rate_accepts_a_negative_number_so_the_check_can_name_it() {
        use clap::Parser;
        let cli = crate::cli::args::Cli::try_parse_from(["servebench", "run", "--rate", "-1"])
            .expect("-1 is read as the value of --rate, not as a flag");
        let crate::cli::args::Command::Run(args) = cli.command else {
            unreachable!()
        };
        assert_eq!(args.run.load.rate, Some(-1.0));
    }
}
