//! The set-up step of a run, before its first request: the run folder and clock, the record
//! writer, the connection pool (pre-opened), telemetry from before any load (the idle draw),
//! the progress display, the Ctrl-C watch and the request feed.

use super::Bench;
use crate::client::http::{Connector, HttpError, ReadStamps};
use crate::client::ArrivalClock;
use crate::client::Pool;
use crate::clock::{Nanos, RunClock};
use crate::config::RunConfig;
use crate::record::run::ServerInfo;
use crate::runner::cpu::{self, ThreadCpu};
use crate::runner::phase::{Controls, Shared};
use crate::runner::progress::{self, Progress};
use crate::runner::{feeder, ReadyError, RunError};
use crate::schedule::LoadPattern;
use crate::store::{RecordWriter, RunFolder};
use crate::telemetry::Collector;
use crate::tokenizer::SharedTokenizer;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

impl<'a> Bench<'a> {
    /// Starts everything the later steps share, in the order a run needs it.
    pub(in crate::runner) async fn set_up(
        config: &'a RunConfig,
        tokenizer: SharedTokenizer,
        server: &'a ServerInfo,
        cpu: ThreadCpu,
        readers: ThreadCpu,
    ) -> Result<Bench<'a>, RunError> {
        std::fs::create_dir_all(&config.out_dir)?;
        let clock = RunClock::start();
        let started_unix_us = clock.unix_us(0);
        let writer_cpu = cpu.clone();
        let controls = Controls::new();
        let writer = start_writer(config, clock, &tokenizer, writer_cpu, &controls)?;
        let counters = writer.counters.clone();
        let (stamps, pool) = open_pool(config).await?;

        // Telemetry from before the first request, so the idle draw is known.
        let (collector, idle_until) = start_telemetry(config, clock).await;

        let shared = shared_for(config, clock, &pool, &writer);
        let progress = Progress::start(
            config.quiet,
            config.live_view,
            progress::Sources {
                counters: counters.clone(),
                sent: shared.sent.clone(),
                in_flight: shared.in_flight.clone(),
                chunks_received: shared.chunks_received.clone(),
                queue_waiting: Some(collector.waiting()),
                clock,
            },
        );
        let ctrl_c = tokio::spawn(watch_ctrl_c(
            controls.clone(),
            config.grace,
            shared.in_flight.clone(),
            progress.printer(),
        ));
        let shard = config.shard.as_ref().map(|s| s.shard);
        let feed = feeder::start(
            &config.workload,
            config.dataset.clone(),
            config.seed,
            config.prompt_salt,
            &config.target,
            &config.request,
            tokenizer.clone(),
            cpu.clone(),
            shard,
            feeder::lookahead_for(config.load),
        )?;
        Ok(Bench {
            feed,
            shard,
            ctrl_c,
            progress,
            shared,
            idle_until,
            collector,
            pool,
            stamps,
            counters,
            writer,
            controls,
            started_unix_us,
            clock,
            readers,
            cpu,
            server,
            tokenizer,
            config,
        })
    }
}

/// Starts the record writer on the run folder's `requests.jsonl`; its thread's CPU counts
/// as the generator's, at a lower priority than the client's threads.
fn start_writer(
    config: &RunConfig,
    clock: RunClock,
    tokenizer: &SharedTokenizer,
    writer_cpu: ThreadCpu,
    controls: &Controls,
) -> std::io::Result<RecordWriter> {
    RecordWriter::start(
        &RunFolder::new(&config.out_dir).requests_jsonl(),
        crate::store::kept::KeepLimits::of(config),
        clock,
        tokenizer.clone(),
        move || {
            writer_cpu.register_current();
            cpu::lower_current_thread_priority();
        },
        controls.stop_sending.clone(),
    )
}

/// Opens the connection pool to the target and pre-opens its first connections; a refused
/// or failed connection is the target's readiness error.
async fn open_pool(config: &RunConfig) -> Result<(Arc<ReadStamps>, Arc<Pool>), RunError> {
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
    Ok((stamps, pool))
}

/// Connections to open before the first request, so early requests do not pay set-up.
fn prewarm_count(load: LoadPattern) -> usize {
    match load {
        LoadPattern::Closed { concurrency } => concurrency as usize,
        LoadPattern::Open { rate_per_s, .. } => (rate_per_s.ceil() as usize).clamp(1, 64),
        LoadPattern::Trace { .. } => 16,
    }
    .min(1024)
}

/// Starts the telemetry collector and, with a GPU to read, samples it after the idle
/// period; returns the collector and the end of the idle period (for GPU idle power).
async fn start_telemetry(config: &RunConfig, clock: RunClock) -> (Collector, Nanos) {
    let collector = tokio::task::block_in_place(|| {
        crate::telemetry::Collector::start(&config.telemetry, &config.target, clock)
    });
    if collector.gpu_live() && config.idle_power_s > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(config.idle_power_s)).await;
        collector.sample_now();
    }
    let idle_until = clock.now();
    (collector, idle_until)
}

/// The things every request needs: the pool, the clock, the limits, the record sink and
/// the shared counts.
fn shared_for(
    config: &RunConfig,
    clock: RunClock,
    pool: &Arc<Pool>,
    writer: &RecordWriter,
) -> Shared {
    Shared {
        pool: pool.clone(),
        clock,
        timeout: config.request_timeout,
        limits: config.exchange_limits,
        retry: config.retry.clone(),
        url: config.target.url.to_string().into(),
        sink: writer.sender(),
        sent: Arc::new(AtomicU64::new(0)),
        in_flight: Arc::new(AtomicU64::new(0)),
        chunks_received: Arc::new(AtomicU64::new(0)),
        open_sessions: Arc::new(AtomicU64::new(0)),
    }
}

/// First Ctrl-C: stop sending and let in-flight requests finish for `grace`; after that, or
/// on a second Ctrl-C, cancel them. What was measured is kept either way.
async fn watch_ctrl_c(
    controls: Controls,
    grace: Duration,
    in_flight: Arc<AtomicU64>,
    printer: progress::Printer,
) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    controls.interrupted.store(true, Ordering::Release);
    controls.stop_sending.store(true, Ordering::Release);
    printer.println(&format!(
        "interrupted: no new requests; waiting up to {:.0} s for {} in flight (Ctrl-C again to stop now)",
        grace.as_secs_f64(),
        in_flight.load(Ordering::Relaxed)
    ));
    tokio::select! {
        _ = tokio::time::sleep(grace) => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    controls.cancel.send_replace(true);
}
