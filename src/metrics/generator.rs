//! The load generator judges itself: did it send on time, and was its own CPU the limit?
//!
//! Only the generator's own figures count against it: how late its dispatcher started each
//! request, and its CPU. The time to get a connection (pool, TCP and TLS set-up, the
//! server's accept queue) is reported beside them but belongs to the server side; an
//! overloaded server that is slow to accept must not read as a slow generator.

use crate::metrics::Distribution;
use crate::record::run::GeneratorReport;
use crate::record::RequestRecord;

/// Dispatch lag P99 above this means the generator's own scheduling was late, ms.
const DISPATCH_LAG_P99_MS: f64 = 5.0;
/// Below this CPU time the kernel's 10 ms accounting ticks make per-chunk figures noise, s.
const MIN_CPU_S: f64 = 0.5;
/// Below this chunk rate fixed costs (timers, the progress thread) dominate, chunks/s.
const MIN_CHUNKS_PER_S: f64 = 1000.0;

/// What the runner measured about itself during the measured phase.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GeneratorFacts {
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    pub cores_available: f64,
    pub connections_opened: u64,
    /// Chunk arrivals carry the kernel's receive timestamps.
    pub kernel_timestamps: bool,
}

/// Judges the generator from the measured records and its own facts.
pub fn judge(measured: &[&RequestRecord], facts: &GeneratorFacts) -> GeneratorReport {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut lags: Vec<(u64, f64)> = measured
        .iter()
        .filter_map(|r| {
            let s = r.scheduled_at?;
            Some((s, ms(r.queued_at.saturating_sub(s))))
        })
        .collect();
    lags.sort_by_key(|l| l.0);
    let dispatch_lag_ms = Distribution::of(&mut lags.iter().map(|l| l.1).collect());
    let connection_wait_ms = Distribution::of(
        &mut measured
            .iter()
            .filter_map(|r| Some(ms(r.sent_at?.saturating_sub(r.queued_at))))
            .collect(),
    );
    let send_lag_ms = Distribution::of(
        &mut measured
            .iter()
            .filter_map(|r| Some(ms(r.sent_at?.saturating_sub(r.scheduled_at?))))
            .collect(),
    );
    let chunks: usize = measured
        .iter()
        .map(|r| r.chunks.len() + r.reasoning_chunks.len())
        .sum();
    let wall = facts.wall_seconds;
    let cores_used = if wall > 0.0 {
        facts.cpu_seconds / wall
    } else {
        0.0
    };
    let mut notes = Vec::new();
    let mut kept_up = true;
    if let Some(lag) = dispatch_lag_ms {
        if lag.p99 > DISPATCH_LAG_P99_MS {
            kept_up = false;
            notes.push(format!(
                "dispatch lag P99 {:.2} ms exceeds {DISPATCH_LAG_P99_MS} ms: the generator started requests later than planned",
                lag.p99
            ));
        }
        // Lag that grows across the run means the generator fell steadily behind.
        let tenth = lags.len() / 10;
        if tenth >= 10 {
            let head: f64 = lags[..tenth].iter().map(|l| l.1).sum::<f64>() / tenth as f64;
            let tail: f64 =
                lags[lags.len() - tenth..].iter().map(|l| l.1).sum::<f64>() / tenth as f64;
            if tail > head + 10.0 {
                kept_up = false;
                notes.push(format!(
                    "dispatch lag grew from {head:.1} ms to {tail:.1} ms over the run: the generator fell behind the schedule"
                ));
            }
        }
    }
    if facts.cores_available > 0.0 && cores_used > 0.9 * facts.cores_available {
        kept_up = false;
        notes.push(format!(
            "the generator used {cores_used:.2} of {:.0} available cores: its own CPU may be the bottleneck (raise --client-threads or use another machine)",
            facts.cores_available
        ));
    }
    if let Some(w) = connection_wait_ms {
        if w.p99 > 50.0 {
            notes.push(format!(
                "getting a connection took up to {:.0} ms (P99): the server was slow to accept, or connections were opened mid-run; this is the server's side, not the generator's",
                w.p99
            ));
        }
    }
    let chunk_rate = if wall > 0.0 {
        chunks as f64 / wall
    } else {
        0.0
    };
    let (cpu_us_per_chunk, cpu_per_chunk_note) = if chunks == 0 {
        (None, Some("no chunks received".to_owned()))
    } else if facts.cpu_seconds < MIN_CPU_S {
        (
            None,
            Some(format!(
                "the generator used {:.2} s of CPU: too little for the kernel's 10 ms accounting to give a per-chunk figure",
                facts.cpu_seconds
            )),
        )
    } else if chunk_rate < MIN_CHUNKS_PER_S {
        (
            None,
            Some(format!(
                "{chunk_rate:.0} chunks/s is too few for per-chunk work to stand out from fixed costs (timers, progress)"
            )),
        )
    } else {
        (Some(facts.cpu_seconds * 1e6 / chunks as f64), None)
    };
    GeneratorReport {
        dispatch_lag_ms,
        connection_wait_ms,
        send_lag_ms,
        cpu_seconds: facts.cpu_seconds,
        cpu_cores_used: cores_used,
        cpu_cores_available: facts.cores_available,
        cpu_us_per_chunk,
        cpu_per_chunk_note,
        connections_opened: facts.connections_opened,
        arrival_clock: if facts.kernel_timestamps {
            "kernel_rx".into()
        } else {
            "read_return".into()
        },
        kept_up,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A request planned at `scheduled_ms`, started `lag_ms` late, connected `wait_ms` later.
    fn rec(scheduled_ms: u64, lag_ms: f64, wait_ms: f64) -> RequestRecord {
        let queued = scheduled_ms * MS + (lag_ms * 1e6) as u64;
        RequestRecord {
            scheduled_at: Some(scheduled_ms * MS),
            queued_at: queued,
            sent_at: Some(queued + (wait_ms * 1e6) as u64),
            ..Default::default()
        }
    }

    fn facts(cpu_seconds: f64) -> GeneratorFacts {
        GeneratorFacts {
            cpu_seconds,
            wall_seconds: 2.0,
            cores_available: 2.0,
            connections_opened: 4,
            kernel_timestamps: true,
        }
    }

    #[test]
    fn on_time_generator_keeps_up() {
        let recs: Vec<_> = (0..200).map(|i| rec(i * 10, 0.1, 0.2)).collect();
        let refs: Vec<&RequestRecord> = recs.iter().collect();
        let g = judge(&refs, &facts(0.5));
        assert!(g.kept_up, "{:?}", g.notes);
        assert!((g.dispatch_lag_ms.unwrap().p99 - 0.1).abs() < 1e-9);
        assert!((g.send_lag_ms.unwrap().p50 - 0.3).abs() < 1e-9);
        assert_eq!(g.arrival_clock, "kernel_rx");
    }

    #[test]
    fn growing_lag_and_saturated_cpu_are_called_out() {
        let recs: Vec<_> = (0..200).map(|i| rec(i * 10, i as f64 * 0.5, 0.0)).collect();
        let refs: Vec<&RequestRecord> = recs.iter().collect();
        let g = judge(&refs, &facts(3.9));
        assert!(!g.kept_up);
        assert_eq!(g.notes.len(), 3, "{:?}", g.notes);
    }

    /// An overloaded server that is slow to accept connections is the server's problem: the
    /// generator, which started every request on time, still kept up.
    #[test]
    fn slow_accepts_are_the_servers_not_the_generators() {
        let recs: Vec<_> = (0..200).map(|i| rec(i * 10, 0.1, 900.0)).collect();
        let refs: Vec<&RequestRecord> = recs.iter().collect();
        let g = judge(&refs, &facts(0.2));
        assert!(g.kept_up, "{:?}", g.notes);
        assert!(g.send_lag_ms.unwrap().p99 > 900.0);
        assert!(g.notes[0].contains("server's side"), "{:?}", g.notes);
        // 0.2 s of CPU is too little for a per-chunk figure.
        assert!(g.cpu_us_per_chunk.is_none());
        assert!(g.cpu_per_chunk_note.is_some());
    }
}
