//! The measure step: the measured phase (at a scale-out plan's common start), with the
//! generator's own figures (CPU, wall time, connections, TCP, socket wait) taken at its
//! edges.

use super::{Bench, Measured, WarmedUp};
use crate::clock::Nanos;
use crate::record::Phase;
use crate::runner::host_net;
use crate::runner::phase::{self, run_phase, LeadIn, PhaseEnd, PhasePlan};
use crate::runner::plan;
use crate::runner::progress::PhaseView;
use crate::runner::warmup::Warmed;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Bench<'_> {
    /// Runs the measured phase (taking the warm-up's lead-in when it runs); returns how it
    /// ended and what the generator observed over it.
    pub(in crate::runner) async fn measure(&self, warm: &mut WarmedUp) -> Measured {
        let config = self.config;
        let (cpu, readers, pool, stamps) = (&self.cpu, &self.readers, &self.pool, &self.stamps);
        // Measurement.
        self.show_measure(&warm.warmed, &warm.lead_in);
        let start_at = self.common_start().await;
        let cpu_before = cpu.per_thread();
        let readers_before = readers.per_thread();
        let opened_before = pool.opened();
        let closed_before = pool.closed_by_server();
        let tcp_before = host_net::tcp_segments();
        stamps.socket_wait.reset();
        let wall_before = Instant::now();
        // A sample at each edge of the measured phase, so counter differences span it exactly.
        let sampler = &self.collector;
        tokio::task::block_in_place(|| sampler.sample_now());
        let measure = if self.controls.stop_sending.load(Ordering::Acquire) {
            PhaseEnd::default()
        } else {
            run_phase(
                self.measure_plan(start_at, warm.lead_in.take()),
                self.feed.clone(),
                self.shared.clone(),
                self.controls.clone(),
                cpu.clone(),
            )
            .await
        };
        tokio::task::block_in_place(|| self.collector.sample_now());
        let cpu_seconds = cpu.cpu_seconds_since(&cpu_before);
        let client_cpu_seconds = readers.cpu_seconds_since(&readers_before);
        let wall_seconds = wall_before.elapsed().as_secs_f64();
        let connections_opened_measured = pool.opened() - opened_before;
        let connections_closed_by_server = pool.closed_by_server() - closed_before;
        let tcp_segments = match (tcp_before, host_net::tcp_segments()) {
            (Some(a), Some(b)) => Some((b.0.saturating_sub(a.0), b.1.saturating_sub(a.1))),
            _ => None,
        };
        let ephemeral_ports = host_net::ephemeral_ports(config.target.url.port);
        let socket_wait_ns = stamps
            .socket_wait
            .percentile(50.0)
            .zip(stamps.socket_wait.percentile(99.0));
        Measured {
            measure,
            cpu_seconds,
            client_cpu_seconds,
            wall_seconds,
            connections_opened_measured,
            connections_closed_by_server,
            tcp_segments,
            ephemeral_ports,
            socket_wait_ns,
        }
    }

    /// Shows the measured phase in the progress display, with its limits and planned time.
    fn show_measure(&self, warmed: &Warmed, lead_in: &Option<LeadIn>) {
        let config = self.config;
        let mut view = PhaseView::new(
            "measuring",
            Phase::Measure,
            self.shared.sent.load(Ordering::Acquire),
        );
        view.max_requests = config.limits.requests;
        view.max_duration = config.limits.duration;
        // At the rate the warm-up saw at this load (a shard's warm-up ran at its share).
        // The warm-up's pace is this load's only when it ran at it.
        let measured_rate = warmed
            .rate_per_s
            .filter(|_| self.shard.is_none() && self.config.warmup_load.is_none());
        let lead_s = lead_in
            .as_ref()
            .map_or(0.0, |l| l.cycle.min(phase::LEAD_IN_MAX).as_secs_f64());
        view.planned = plan::measure_plan(config, measured_rate)
            .seconds
            .map(|s| Duration::from_secs_f64(s + lead_s));
        self.progress.phase(view);
    }

    /// Scale-out: waits for the plan's common start, read on this machine's clock shifted by
    /// its measured offset, and records how late this shard reached it; `None` on one machine.
    async fn common_start(&self) -> Option<Nanos> {
        let config = self.config;
        let clock = self.clock;
        // Scale-out: the measured phase starts at the plan's common start, read on this
        // machine's clock shifted by its measured offset; lateness is recorded.
        let start_at = config.shard.as_ref().map(|s| {
            let local_us = s.start_unix_us as i128 + i128::from(s.clock_offset_us);
            let at = (local_us * 1000 - clock.anchor_unix_ns() as i128).max(0) as u64;
            let late = clock.now().saturating_sub(at) / 1000;
            s.late_us.store(late, Ordering::Release);
            if late > 0 {
                self.progress.println(&format!(
                    "WARNING: shard {} reached the plan's start {:.1} s late (warm-up, scheduling or a clock offset); its first requests go out late and the lag is recorded",
                    s.shard,
                    late as f64 / 1e6
                ));
            }
            at
        });
        if let (Some(at), false) = (start_at, config.quiet) {
            let wait = at.saturating_sub(clock.now());
            if wait > 0 {
                self.progress.println(&format!(
                    "Waiting {:.1} s for the plan's common start",
                    wait as f64 / 1e9
                ));
            }
        }
        if let Some(at) = start_at {
            // Waited here, not in the phase, so the generator's CPU figures cover sending only;
            // in short steps, so Ctrl-C (which stops sending) ends the wait too.
            while clock.now() < at && !self.controls.stop_sending.load(Ordering::Acquire) {
                let left = Duration::from_nanos(at - clock.now().min(at));
                tokio::time::sleep(left.min(Duration::from_millis(100))).await;
            }
        }
        start_at
    }

    /// The measured phase's plan: a shard's share of the load, requests and concurrency.
    fn measure_plan(&self, start_at: Option<Nanos>, lead_in: Option<LeadIn>) -> PhasePlan {
        let config = self.config;
        let shard = self.shard;
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
        }
    }
}
