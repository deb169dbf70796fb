//! Runs a benchmark: warm-up (draft 4.5), isolated prefill profiling, measurement, drain.
//! (Before it, `preflight` checks with one request that the server speaks the API.)
//!
//! The runner owns the I/O of a run. It builds the client runtime, starts the request feeder
//! and the record writer, drives each phase, and returns every record with the facts only it
//! can observe (its own CPU, the warm-up, the prefill profile). Nothing is summarised here;
//! that is `metrics`' job.

pub mod cpu;
pub mod dashboard;
pub mod feeder;
pub mod host_net;
pub mod phase;
pub mod plan;
pub mod preflight;
pub mod profile;
pub mod progress;
pub mod ready;
pub mod warmup;

use crate::client::http::{Connector, HttpError};
use crate::client::Pool;
use crate::clock::RunClock;
use crate::config::{ArrivalClock, LoadPattern, PrefillSetup, RunConfig};
use crate::metrics::derive::DeriveParams;
use crate::metrics::experience::FluidityParams;
use crate::metrics::fluidity::ProfiledCurve;
use crate::metrics::generator::GeneratorFacts;
use crate::record::run::{ProfileReport, WarmupReport};
use crate::record::{Phase, RequestRecord};
use crate::store::RecordWriter;
use crate::tokenizer::SharedTokenizer;
use cpu::ThreadCpu;
use phase::{run_phase, Controls, LeadIn, PhaseEnd, PhasePlan, Shared};
use progress::{PhaseView, Progress};
pub use ready::{wait_until_ready, ReadyError, ServerInfo};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why a run could not be carried out.
#[derive(Debug, Error)]
pub enum RunError {
    #[error(transparent)]
    Ready(#[from] ReadyError),
    #[error("could not write the run folder: {0}")]
    Io(#[from] std::io::Error),
    #[error("the workload could not be generated: {0}")]
    Workload(String),
}

/// Everything a run produced.
pub struct RunOutput {
    /// Every record; or, when `streamed` is there, a seeded sample of the measured ones.
    pub records: Vec<RequestRecord>,
    /// The run's figures, streamed past `exact_summary_limit` requests.
    pub streamed: Option<Box<crate::store::kept::StreamedRun>>,
    pub clock: RunClock,
    pub started_unix_us: u64,
    pub finished_unix_us: u64,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    pub warmup: WarmupReport,
    pub generator: GeneratorFacts,
    /// The prefill curve used for fluidity (profiled now, or given), with its provenance.
    pub prefill_curve: Option<ProfiledCurve>,
    /// What the isolated prefill profile did, when one ran.
    pub profile: Option<ProfileReport>,
    /// The fluidity parameters the per-request figures used (curve included).
    pub fluidity: FluidityParams,
    /// How the measured phase ended.
    pub measure: PhaseEnd,
    /// Server metrics, GPUs and host samples collected beside the run.
    pub telemetry: crate::telemetry::TelemetryData,
    /// The end of the idle period before any load (for GPU idle power).
    pub idle_until: crate::clock::Nanos,
}

/// Runs the benchmark described by `config` against a server described by `server`,
/// writing `requests.jsonl` into the run folder.
pub fn run(
    config: &RunConfig,
    tokenizer: SharedTokenizer,
    server: &ServerInfo,
) -> Result<RunOutput, RunError> {
    let cpu = ThreadCpu::default();
    let readers = ThreadCpu::default();
    let (cpu_for_threads, readers_for_threads) = (cpu.clone(), readers.clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.client_threads.max(1))
        .thread_name("client")
        .on_thread_start(move || {
            cpu_for_threads.register_current();
            readers_for_threads.register_current();
        })
        .enable_all()
        .build()?;
    runtime.block_on(run_async(config, tokenizer, server, cpu, readers))
}

/// Mixed into the seed of the warm-up's request stream ("WARMUP" in ASCII), so it differs
/// from the measured stream of the same seed.
pub const WARMUP_SEED_SALT: u64 = 0x5741_524D_5550;

/// Connections to open before the first request, so early requests do not pay set-up.
fn prewarm_count(load: LoadPattern) -> usize {
    match load {
        LoadPattern::Closed { concurrency } => concurrency as usize,
        LoadPattern::Open { rate_per_s, .. } => (rate_per_s.ceil() as usize).clamp(1, 64),
        LoadPattern::Trace { .. } => 16,
    }
    .min(1024)
}

async fn run_async(
    config: &RunConfig,
    tokenizer: SharedTokenizer,
    server: &ServerInfo,
    cpu: ThreadCpu,
    readers: ThreadCpu,
) -> Result<RunOutput, RunError> {
    std::fs::create_dir_all(&config.out_dir)?;
    let clock = RunClock::start();
    let started_unix_us = clock.unix_us(0);
    let writer_cpu = cpu.clone();
    let controls = Controls::new();
    let writer = RecordWriter::start(
        &config.out_dir.join("requests.jsonl"),
        config.exact_summary_limit,
        clock,
        tokenizer.clone(),
        move || {
            writer_cpu.register_current();
            cpu::lower_current_thread_priority();
        },
        controls.stop_sending.clone(),
    )?;
    let counters = writer.counters.clone();
    let url = config.target.url.to_string();
    let connector =
        Connector::for_target(&config.target, config.arrival_clock == ArrivalClock::Kernel)
            .map_err(|e| ReadyError::Unreachable {
                url: url.clone(),
                detail: e.to_string(),
            })?;
    let stamps = connector.stamps.clone();
    let pool = Arc::new(Pool::with_reuse(
        connector,
        !config.new_connection_per_request,
    ));
    if let Err(e) = pool.prewarm(prewarm_count(config.load)).await {
        return Err(match e {
            HttpError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                ReadyError::Refused(url).into()
            }
            other => ReadyError::Unreachable {
                url,
                detail: other.to_string(),
            }
            .into(),
        });
    }

    // Telemetry from before the first request, so the idle draw is known.
    let collector = tokio::task::block_in_place(|| {
        crate::telemetry::Collector::start(&config.telemetry, &config.target, clock)
    });
    if collector.gpu_live() && config.idle_power_s > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(config.idle_power_s)).await;
        collector.sample_now();
    }
    let idle_until = clock.now();

    let shared = Shared {
        pool: pool.clone(),
        clock,
        timeout: config.request_timeout,
        limits: config.exchange_limits,
        retry: config.retry.clone(),
        url: config.target.url.to_string().into(),
        sink: writer.sender(),
        sent: Arc::new(AtomicU64::new(0)),
        in_flight: Arc::new(AtomicU64::new(0)),
        open_sessions: Arc::new(AtomicU64::new(0)),
    };
    let progress = Progress::start(
        config.quiet,
        config.live_view,
        progress::Sources {
            counters: counters.clone(),
            sent: shared.sent.clone(),
            in_flight: shared.in_flight.clone(),
            queue_waiting: Some(collector.waiting()),
            clock,
        },
    );
    let ctrl_c = tokio::spawn(watch_ctrl_c(
        controls.clone(),
        config.grace,
        shared.in_flight.clone(),
    ));
    let shard = config.shard.as_ref().map(|s| s.shard);
    let feed = feeder::start(
        &config.workload,
        config.dataset.clone(),
        config.seed,
        &config.target,
        &config.request,
        tokenizer.clone(),
        cpu.clone(),
        shard,
        feeder::lookahead_for(config.load),
    )?;
    // Scale-out: each shard warms up its own connections at its share of the load (its
    // streams; an N-th of the rate), from the warm-up stream, outside the plan's ordinals.
    let warm_config;
    let warm_cfg = match shard {
        Some(s) => {
            let mut c = config.clone();
            c.load = match config.load {
                LoadPattern::Open {
                    rate_per_s,
                    arrival,
                } => LoadPattern::Open {
                    rate_per_s: rate_per_s / f64::from(s.count),
                    arrival,
                },
                // A trace replayed in every shard's warm-up: slowed to an N-th of its pace.
                LoadPattern::Trace { speed } => LoadPattern::Trace {
                    speed: speed / f64::from(s.count),
                },
                other => s.load_of(other),
            };
            warm_config = c;
            &warm_config
        }
        None => config,
    };

    // Warm-up (draft 4.5), from a stream of its own: the measured requests are then the
    // same sequence whatever the warm-up took (an auto warm-up's length varies), so two
    // runs with one seed measure identical requests in the same order (draft 6.1). What it
    // will cost is said before it starts.
    let warm_plan = plan::warmup_plan(warm_cfg);
    let mut view = PhaseView::new("warming up", Phase::Warmup, 0);
    view.max_duration = Some(config.warmup_max);
    view.max_requests = warm_plan.map(|p| p.requests);
    view.planned = warm_plan
        .and_then(|p| p.seconds)
        .map(Duration::from_secs_f64);
    if let (Some(p), false) = (&warm_plan, config.quiet) {
        progress.println(&plan::describe_warmup(p, config.warmup));
    }
    progress.phase(view);
    let (warmed, warm_feed) = if config.warmup == crate::config::Warmup::None {
        let warmed = warmup::warm_up(
            warm_cfg, &feed, &shared, &controls, &counters, &cpu, &tokenizer,
        )
        .await;
        (warmed, None)
    } else {
        let warm_feed = feeder::start(
            &config.workload,
            config.dataset.clone(),
            config.seed ^ WARMUP_SEED_SALT,
            &config.target,
            &config.request,
            tokenizer.clone(),
            cpu.clone(),
            None,
            feeder::lookahead_for(config.load),
        )?;
        let warmed = warmup::warm_up(
            warm_cfg, &warm_feed, &shared, &controls, &counters, &cpu, &tokenizer,
        )
        .await;
        if let Some(e) = warm_feed
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            return Err(RunError::Workload(e));
        }
        (warmed, Some(warm_feed))
    };
    // Closed loop, one machine: the measured phase carries the warm-up's load on (a
    // lead-in) instead of starting every stream at once on an empty server.
    let lead_in = match (config.load, shard, warm_feed, warmed.cycle) {
        (LoadPattern::Closed { .. }, None, Some(feed), Some(cycle)) => Some(LeadIn { feed, cycle }),
        _ => None,
    };
    let warmup = warmed.report.clone();

    // The prefill deadline of the fluidity-index, from isolated requests.
    let mut fluidity = config.fluidity.clone();
    let (prefill_curve, profile_report) = match &config.prefill {
        PrefillSetup::Off => {
            fluidity.curve_source = "off (--no-fluidity)".into();
            (None, None)
        }
        PrefillSetup::Curve(c) => {
            fluidity.curve_source = format!(
                "given (--prefill-curve): profiled on {} ({}) at {}",
                c.target, c.model, c.created_at
            );
            (Some(c.clone()), None)
        }
        PrefillSetup::Profile(plan) if !controls.stop_sending.load(Ordering::Acquire) => {
            let lengths = profile::lengths(config, plan, &tokenizer);
            let mut view = PhaseView::new(
                &format!("profiling prefill at {} lengths", lengths.len()),
                Phase::Profile,
                shared.sent.load(Ordering::Acquire),
            );
            view.max_duration = Some(plan.budget);
            view.planned = self::plan::profile_plan(config)
                .and_then(|(expected, _)| expected)
                .map(Duration::from_secs_f64);
            progress.phase(view);
            let (curve, report, points) =
                profile::profile(config, plan, &lengths, &shared, &tokenizer).await;
            fluidity.curve_source = report.source.clone();
            let profiled = curve.map(|curve| ProfiledCurve {
                curve,
                target: config.target.url.to_string(),
                model: config.target.model.clone(),
                engine: server.engine.clone(),
                engine_version: server.version.clone(),
                created_at: crate::clock::iso8601_ms(clock.unix_us(clock.now())),
                points,
            });
            (profiled, Some(report))
        }
        PrefillSetup::Profile(_) => (None, None),
    };
    fluidity.curve = prefill_curve.as_ref().map(|c| c.curve);
    let _ = writer.derive_params.set(DeriveParams {
        ux: config.ux,
        fluidity: fluidity.clone(),
        slo: config.slo.clone(),
    });

    // Measurement.
    let mut view = PhaseView::new(
        "measuring",
        Phase::Measure,
        shared.sent.load(Ordering::Acquire),
    );
    view.max_requests = config.limits.requests;
    view.max_duration = config.limits.duration;
    // At the rate the warm-up saw at this load (a shard's warm-up ran at its share).
    let measured_rate = warmed.rate_per_s.filter(|_| shard.is_none());
    let lead_s = lead_in
        .as_ref()
        .map_or(0.0, |l| l.cycle.min(phase::LEAD_IN_MAX).as_secs_f64());
    view.planned = plan::measure_plan(config, measured_rate)
        .seconds
        .map(|s| Duration::from_secs_f64(s + lead_s));
    progress.phase(view);
    // Scale-out: the measured phase starts at the plan's common start, read on this
    // machine's clock shifted by its measured offset; lateness is recorded.
    let start_at = config.shard.as_ref().map(|s| {
        let local_us = s.start_unix_us as i128 + i128::from(s.clock_offset_us);
        let at = (local_us * 1000 - clock.anchor_unix_ns() as i128).max(0) as u64;
        let late = clock.now().saturating_sub(at) / 1000;
        s.late_us.store(late, Ordering::Release);
        if late > 0 {
            eprintln!(
                "WARNING: shard {} reached the plan's start {:.1} s late (warm-up, scheduling or a clock offset); its first requests go out late and the lag is recorded",
                s.shard,
                late as f64 / 1e6
            );
        }
        at
    });
    if let (Some(at), false) = (start_at, config.quiet) {
        let wait = at.saturating_sub(clock.now());
        if wait > 0 {
            eprintln!(
                "Waiting {:.1} s for the plan's common start",
                wait as f64 / 1e9
            );
        }
    }
    if let Some(at) = start_at {
        // Waited here, not in the phase, so the generator's CPU figures cover sending only;
        // in short steps, so Ctrl-C (which stops sending) ends the wait too.
        while clock.now() < at && !controls.stop_sending.load(Ordering::Acquire) {
            let left = Duration::from_nanos(at - clock.now().min(at));
            tokio::time::sleep(left.min(Duration::from_millis(100))).await;
        }
    }
    let cpu_before = cpu.cpu_seconds();
    let readers_before = readers.cpu_seconds();
    let opened_before = pool.opened();
    let tcp_before = host_net::tcp_segments();
    stamps.socket_wait.reset();
    let wall_before = Instant::now();
    // A sample at each edge of the measured phase, so counter differences span it exactly.
    let sampler = &collector;
    tokio::task::block_in_place(|| sampler.sample_now());
    let measure = if controls.stop_sending.load(Ordering::Acquire) {
        PhaseEnd::default()
    } else {
        run_phase(
            PhasePlan {
                phase: Phase::Measure,
                load: shard.map_or(config.load, |s| s.load_of(config.load)),
                max_requests: match shard {
                    Some(s) => config.limits.requests.map(|r| s.share_of_count(r)),
                    None => config.limits.requests,
                },
                max_duration: config.limits.duration,
                done_when: None,
                seed: config.seed.wrapping_add(1),
                grace: config.grace,
                // Scale-out: each shard caps its share of the in-flight limit.
                max_concurrency: match shard {
                    Some(s) => config
                        .max_concurrency
                        .map(|c| s.share_of_count(u64::from(c)).max(1) as u32),
                    None => config.max_concurrency,
                },
                start_at,
                shard,
                lead_in,
            },
            feed.clone(),
            shared.clone(),
            controls.clone(),
            cpu.clone(),
        )
        .await
    };
    tokio::task::block_in_place(|| collector.sample_now());
    let cpu_seconds = cpu.cpu_seconds() - cpu_before;
    let client_cpu_seconds = readers.cpu_seconds() - readers_before;
    let wall_seconds = wall_before.elapsed().as_secs_f64();
    let connections_opened_measured = pool.opened() - opened_before;
    let tcp_segments = match (tcp_before, host_net::tcp_segments()) {
        (Some(a), Some(b)) => Some((b.0.saturating_sub(a.0), b.1.saturating_sub(a.1))),
        _ => None,
    };
    let ephemeral_ports = host_net::ephemeral_ports(config.target.url.port);
    let socket_wait_ns = stamps
        .socket_wait
        .percentile(50.0)
        .zip(stamps.socket_wait.percentile(99.0));
    drop(progress);
    ctrl_c.abort();
    let workload_error = feed.error.lock().unwrap_or_else(|p| p.into_inner()).take();
    drop(feed);
    let interrupted = controls.interrupted.load(Ordering::Acquire);
    let finished_unix_us = clock.unix_us(clock.now());
    drop(shared);
    let telemetry = tokio::task::spawn_blocking(move || collector.stop())
        .await
        .unwrap_or_default();
    let kept = tokio::task::spawn_blocking(move || writer.finish())
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    if let Some(e) = workload_error {
        return Err(RunError::Workload(e));
    }
    let cores = (config.client_threads as f64).min(
        std::thread::available_parallelism()
            .map(|n| n.get() as f64)
            .unwrap_or(1.0),
    );
    let kernel_reads = stamps.kernel.load(Ordering::Relaxed);
    let total_reads = stamps.total.load(Ordering::Relaxed);
    Ok(RunOutput {
        records: kept.records,
        streamed: kept.streamed,
        clock,
        started_unix_us,
        finished_unix_us,
        interrupted,
        warmup,
        generator: GeneratorFacts {
            cpu_seconds,
            wall_seconds,
            cores_available: cores,
            connections_opened: pool.opened(),
            // Most reads stamped: the kernel clock is in use (a read of bytes that came with
            // an earlier one may carry no stamp of its own).
            kernel_timestamps: total_reads > 0 && kernel_reads * 2 >= total_reads,
            connections_opened_measured,
            new_connection_per_request: config.new_connection_per_request,
            ephemeral_ports,
            tcp_segments,
            client_cpu_seconds,
            client_threads: config.client_threads.max(1),
            socket_wait_ns,
        },
        prefill_curve,
        profile: profile_report,
        fluidity,
        measure,
        telemetry,
        idle_until,
    })
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
