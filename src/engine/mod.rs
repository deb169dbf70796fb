//! Runs a benchmark: readiness check, warm-up (draft 4.5), measurement, drain.
//!
//! The engine owns the I/O of a run. It builds the client runtime, starts the request feeder
//! and the record writer, drives each phase, and returns every record with the generator's
//! own health figures. Nothing is summarised here; that is `metrics`' job.

pub mod cpu;
pub mod feeder;
pub mod generator;
pub mod phase;
pub mod progress;

use crate::client::http::{Connector, HttpError};
use crate::client::simple::call;
use crate::client::{execute, Exchange, Pool};
use crate::clock::RunClock;
use crate::config::{LoadPattern, RunConfig, Warmup};
use crate::record::{Phase, RequestRecord};
use crate::store::RecordWriter;
use crate::tokenizer::SharedTokenizer;
use crate::workload::WorkloadSpec;
use cpu::ThreadCpu;
use generator::GeneratorReport;
use phase::{run_phase, Controls, PhasePlan, Shared};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why a run could not start.
#[derive(Debug, Error)]
pub enum EngineError {
    #[error("connection refused at {0}: is the server running?")]
    Refused(String),
    #[error("could not reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url} was still not ready (HTTP 503) after {secs:.0} s: is the model still loading? (--ready-timeout)")]
    NotReady { url: String, secs: f64 },
    #[error("could not write the run folder: {0}")]
    Io(#[from] std::io::Error),
    #[error("the workload could not be generated: {0}")]
    Workload(String),
}

/// What the warm-up did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WarmupReport {
    pub policy: String,
    pub requests: u64,
    pub output_tokens: u64,
    /// E2E of each verification probe, ms.
    pub probe_e2e_ms: Vec<f64>,
    /// Two consecutive probes differed by < 10 % (draft 4.5.2).
    pub stabilized: bool,
    pub capped: bool,
}

/// Everything a run produced.
pub struct RunOutput {
    pub records: Vec<RequestRecord>,
    pub clock: RunClock,
    pub started_unix_us: u64,
    pub finished_unix_us: u64,
    pub interrupted: bool,
    pub warmup: WarmupReport,
    pub generator: GeneratorReport,
}

/// Checks the server answers, waiting while it says 503 (loading); returns its model ids.
pub async fn wait_until_ready(
    config: &RunConfig,
    ready_timeout: Duration,
) -> Result<Vec<String>, EngineError> {
    let target = &config.target;
    let url = target.url.to_string();
    let path = target.url.path("/models");
    let start = Instant::now();
    loop {
        match call(
            &target.url,
            Some(target),
            "GET",
            &path,
            None,
            Duration::from_secs(10),
        )
        .await
        {
            Ok(r) if r.status == 503 => {
                if start.elapsed() >= ready_timeout {
                    return Err(EngineError::NotReady {
                        url,
                        secs: ready_timeout.as_secs_f64(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Ok(r) => {
                let models = serde_json::from_slice::<serde_json::Value>(&r.body)
                    .ok()
                    .and_then(|v| {
                        v.get("data")?.as_array().map(|a| {
                            a.iter()
                                .filter_map(|m| m.get("id")?.as_str().map(str::to_owned))
                                .collect()
                        })
                    })
                    .unwrap_or_default();
                return Ok(models);
            }
            Err(HttpError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(EngineError::Refused(url));
            }
            Err(e) => {
                return Err(EngineError::Unreachable {
                    url,
                    detail: e.to_string(),
                })
            }
        }
    }
}

/// Runs the benchmark described by `config`, writing `requests.jsonl` into its folder.
pub fn run(config: &RunConfig, tokenizer: SharedTokenizer) -> Result<RunOutput, EngineError> {
    let cpu = ThreadCpu::default();
    let cpu_for_threads = cpu.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.client_threads.max(1))
        .thread_name("client")
        .on_thread_start(move || cpu_for_threads.register_current())
        .enable_all()
        .build()?;
    runtime.block_on(run_async(config, tokenizer, cpu))
}

async fn run_async(
    config: &RunConfig,
    tokenizer: SharedTokenizer,
    cpu: ThreadCpu,
) -> Result<RunOutput, EngineError> {
    std::fs::create_dir_all(&config.out_dir)?;
    let clock = RunClock::start();
    let started_unix_us = clock.unix_us(0);
    let writer = RecordWriter::start(
        &config.out_dir.join("requests.jsonl"),
        clock,
        tokenizer.clone(),
        cpu.clone(),
    )?;
    let counters = writer.counters.clone();
    let connector = Connector::new(&config.target.url).map_err(|e| EngineError::Unreachable {
        url: config.target.url.to_string(),
        detail: e.to_string(),
    })?;
    let pool = Arc::new(Pool::new(connector));
    // Open connections up front so the first measured requests do not pay for set-up.
    let prewarm = match config.load {
        LoadPattern::Closed { concurrency } => concurrency as usize,
        LoadPattern::Open { rate_per_s, .. } => (rate_per_s.ceil() as usize).clamp(1, 64),
        LoadPattern::Trace { .. } => 16,
    };
    if let Err(e) = pool.prewarm(prewarm.min(1024)).await {
        return Err(match e {
            HttpError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                EngineError::Refused(config.target.url.to_string())
            }
            other => EngineError::Unreachable {
                url: config.target.url.to_string(),
                detail: other.to_string(),
            },
        });
    }

    let controls = Controls::new();
    let shared = Shared {
        pool: pool.clone(),
        clock,
        timeout: config.request_timeout,
        url: config.target.url.to_string().into(),
        sink: writer.sender(),
        sent: Arc::new(AtomicU64::new(0)),
        in_flight: Arc::new(AtomicU64::new(0)),
        open_sessions: Arc::new(AtomicU64::new(0)),
    };
    let label = Arc::new(Mutex::new(String::from("starting")));
    let progress = progress::Progress::start(
        config.quiet,
        counters.clone(),
        shared.sent.clone(),
        shared.in_flight.clone(),
        label.clone(),
    );
    let ctrl_c = tokio::spawn(watch_ctrl_c(
        controls.clone(),
        config.grace,
        shared.in_flight.clone(),
    ));
    let feed = feeder::start(
        &config.workload,
        config.dataset.clone(),
        config.seed,
        &config.target,
        &config.request,
        tokenizer.clone(),
        cpu.clone(),
    )?;

    // Warm-up (draft 4.5).
    let mut warmup = WarmupReport {
        policy: match config.warmup {
            Warmup::None => "none (cold start: measured without warm-up)".into(),
            Warmup::Requests(n) => format!("{n} requests at the run's load, then drain"),
            Warmup::Auto => "auto: >= 100 requests and >= 10,000 output tokens at the run's load, drain, probe until two consecutive probes differ < 10 %".into(),
        },
        ..Default::default()
    };
    let warm_cap = Duration::from_secs(120);
    if config.warmup != Warmup::None {
        set_label(&label, "warming up");
        let c = counters.clone();
        let (max_requests, done_when): (Option<u64>, Option<phase::DoneWhen>) = match config.warmup
        {
            Warmup::Requests(n) => (Some(n), None),
            _ => (
                None,
                Some(Arc::new(move || {
                    let w = &c.warmup;
                    w.completed.load(Ordering::Relaxed) + w.failed.load(Ordering::Relaxed) >= 100
                        && w.output_tokens.load(Ordering::Relaxed) >= 10_000
                })),
            ),
        };
        let t0 = Instant::now();
        run_phase(
            PhasePlan {
                phase: Phase::Warmup,
                load: config.load,
                max_requests,
                max_duration: Some(warm_cap),
                done_when,
                seed: config.seed,
                grace: config.grace,
            },
            feed.clone(),
            shared.clone(),
            controls.clone(),
            cpu.clone(),
        )
        .await;
        warmup.capped = t0.elapsed() >= warm_cap;
        warmup.requests = shared.sent.load(Ordering::Acquire);
        warmup.output_tokens = counters.warmup.output_tokens.load(Ordering::Relaxed);
        if config.warmup == Warmup::Auto && !controls.stop_sending.load(Ordering::Acquire) {
            set_label(&label, "probing");
            let (probes, stable) = probe(config, &shared, &tokenizer).await;
            warmup.probe_e2e_ms = probes;
            warmup.stabilized = stable;
        }
    }

    // Measurement.
    set_label(&label, "measuring");
    let cpu_before = cpu.cpu_seconds();
    let wall_before = Instant::now();
    if !controls.stop_sending.load(Ordering::Acquire) {
        run_phase(
            PhasePlan {
                phase: Phase::Measure,
                load: config.load,
                max_requests: config.limits.requests,
                max_duration: config.limits.duration,
                done_when: None,
                seed: config.seed.wrapping_add(1),
                grace: config.grace,
            },
            feed.clone(),
            shared.clone(),
            controls.clone(),
            cpu.clone(),
        )
        .await;
    }
    let cpu_seconds = cpu.cpu_seconds() - cpu_before;
    let wall_seconds = wall_before.elapsed().as_secs_f64();
    drop(progress);
    ctrl_c.abort();
    let workload_error = feed.error.lock().unwrap_or_else(|p| p.into_inner()).take();
    drop(feed);
    let interrupted = controls.interrupted.load(Ordering::Acquire);
    let finished_unix_us = clock.unix_us(clock.now());
    drop(shared);
    let records = tokio::task::spawn_blocking(move || writer.finish())
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    let cores = (config.client_threads as f64).min(
        std::thread::available_parallelism()
            .map(|n| n.get() as f64)
            .unwrap_or(1.0),
    );
    let generator = generator::judge(&records, cpu_seconds, wall_seconds, cores, pool.opened());
    if let Some(e) = workload_error {
        return Err(EngineError::Workload(e));
    }
    Ok(RunOutput {
        records,
        clock,
        started_unix_us,
        finished_unix_us,
        interrupted,
        warmup,
        generator,
    })
}

fn set_label(label: &Mutex<String>, s: &str) {
    if let Ok(mut l) = label.lock() {
        *l = s.to_owned();
    }
}

/// Sequential probes with a fixed request until two consecutive E2E differ by < 10 %.
async fn probe(
    config: &RunConfig,
    shared: &Shared,
    tokenizer: &SharedTokenizer,
) -> (Vec<f64>, bool) {
    let spec = WorkloadSpec::fixed(128, 32);
    let (seed, tok) = (config.seed ^ 0xF00D, tokenizer.clone());
    // Built off the runtime: a server tokenizer makes blocking calls.
    let built = tokio::task::spawn_blocking(move || {
        crate::workload::Generator::new(&spec, seed, tok.as_ref(), None)
            .and_then(|mut g| g.next_request(tok.as_ref()))
    })
    .await;
    let Ok(Ok(req_spec)) = built else {
        return (Vec::new(), false);
    };
    let body = crate::client::openai::request_body(
        config.target.endpoint,
        &config.target.model,
        &crate::client::openai::Prompt {
            messages: &req_spec.messages,
            max_tokens: req_spec.max_tokens,
            overrides: &[],
        },
        &config.request,
    );
    let mut probes: Vec<f64> = Vec::new();
    for i in 0..10u64 {
        let req = crate::client::PreparedRequest {
            id: u64::MAX - i,
            class: None,
            input_tokens: req_spec.input_tokens,
            max_tokens: req_spec.max_tokens,
            arrival_ms: None,
            session: None,
            think_ms: 0.0,
            http_bytes: crate::client::exchange::http_request(&config.target, &body),
        };
        let mut ex = Exchange::new(&req, Phase::Probe, None);
        if tokio::time::timeout(
            shared.timeout,
            execute(&mut ex, &shared.pool, &shared.clock, &req, &shared.url),
        )
        .await
        .is_err()
        {
            ex.fail_if_unfinished(
                crate::record::FailureKind::Timeout,
                "probe timed out",
                shared.clock.now(),
            );
        }
        let e2e = ex
            .record
            .last_token_at()
            .filter(|_| ex.record.outcome.is_ok())
            .map(|t| (t - ex.record.sent_at) as f64 / 1e6);
        let _ = shared.sink.send(ex);
        let Some(e2e) = e2e else {
            return (probes, false);
        };
        if let Some(&prev) = probes.last() {
            probes.push(e2e);
            if (e2e - prev).abs() / prev.max(1e-9) < 0.10 {
                return (probes, true);
            }
        } else {
            probes.push(e2e);
        }
    }
    (probes, false)
}

/// First Ctrl-C: stop sending and let in-flight requests finish for `grace`; after that, or
/// on a second Ctrl-C, cancel them. What was measured is kept either way.
async fn watch_ctrl_c(controls: Controls, grace: Duration, in_flight: Arc<AtomicU64>) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    controls.interrupted.store(true, Ordering::Release);
    controls.stop_sending.store(true, Ordering::Release);
    eprintln!(
        "\ninterrupted: no new requests; waiting up to {:.0} s for {} in flight (Ctrl-C again to stop now)",
        grace.as_secs_f64(),
        in_flight.load(Ordering::Relaxed)
    );
    tokio::select! {
        _ = tokio::time::sleep(grace) => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    controls.cancel.send_replace(true);
}
