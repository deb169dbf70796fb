//! The drain-and-finish step: stops the progress display, the Ctrl-C watch, the feed and
//! the telemetry, waits for the record writer, and gathers the run's output with the
//! generator's facts.

use super::{Bench, Measured, Prefill, WarmedUp};
use crate::client::http::ReadStamps;
use crate::client::Pool;
use crate::config::RunConfig;
use crate::metrics::generator::GeneratorFacts;
use crate::runner::{RunError, RunOutput};
use std::sync::atomic::Ordering;

impl Bench<'_> {
    /// Ends the run: everything the set-up started is stopped or waited for, in order; a
    /// workload that failed to generate is the run's error.
    pub(in crate::runner) async fn finish(
        self,
        warm: WarmedUp,
        prefill: Prefill,
        measured: Measured,
    ) -> Result<RunOutput, RunError> {
        let clock = self.clock;
        drop(self.progress);
        self.ctrl_c.abort();
        let workload_error = self
            .feed
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        drop(self.feed);
        let interrupted = self.controls.interrupted.load(Ordering::Acquire);
        let finished_unix_us = clock.unix_us(clock.now());
        drop(self.shared);
        let collector = self.collector;
        let telemetry = tokio::task::spawn_blocking(move || collector.stop())
            .await
            .unwrap_or_default();
        let writer = self.writer;
        let kept = tokio::task::spawn_blocking(move || writer.finish())
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))??;
        if let Some(e) = workload_error {
            return Err(RunError::Workload(e));
        }
        let generator = generator_facts(self.config, &self.pool, &self.stamps, &measured);
        Ok(RunOutput {
            records: kept.records,
            streamed: kept.streamed,
            clock,
            started_unix_us: self.started_unix_us,
            finished_unix_us,
            interrupted,
            warmup: warm.warmup,
            generator,
            prefill_curve: prefill.prefill_curve,
            profile: prefill.profile_report,
            fluidity: prefill.fluidity,
            measure: measured.measure,
            telemetry,
            idle_until: self.idle_until,
        })
    }
}

/// The generator's facts at the end of the run: the measured phase's figures, the cores
/// it had, the connections it opened, whether the kernel clock timed the reads.
fn generator_facts(
    config: &RunConfig,
    pool: &Pool,
    stamps: &ReadStamps,
    m: &Measured,
) -> GeneratorFacts {
    let cores = (config.client_threads as f64).min(
        std::thread::available_parallelism()
            .map(|n| n.get() as f64)
            .unwrap_or(1.0),
    );
    let kernel_reads = stamps.kernel.load(Ordering::Relaxed);
    let total_reads = stamps.total.load(Ordering::Relaxed);
    GeneratorFacts {
        cpu_seconds: m.cpu_seconds,
        wall_seconds: m.wall_seconds,
        cores_available: cores,
        connections_opened: pool.opened(),
        // Most reads stamped: the kernel clock is in use (a read of bytes that came with
        // an earlier one may carry no stamp of its own).
        kernel_timestamps: total_reads > 0 && kernel_reads * 2 >= total_reads,
        connections_opened_measured: m.connections_opened_measured,
        connections_closed_by_server_measured: m.connections_closed_by_server,
        new_connection_per_request: config.new_connection_per_request,
        ephemeral_ports: m.ephemeral_ports,
        tcp_segments: m.tcp_segments,
        client_cpu_seconds: m.client_cpu_seconds,
        client_threads: config.client_threads.max(1),
        socket_wait_ns: m.socket_wait_ns,
    }
}
