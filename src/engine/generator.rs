//! The load generator judges itself: did it send on time, and was its own CPU the limit?

use crate::metrics::Distribution;
use crate::record::{Phase, RequestRecord};
use serde::Serialize;

/// How well the generator kept up, reported with every run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeneratorReport {
    /// Open loop: `sent_at − scheduled_at`, ms.
    pub send_lag_ms: Option<Distribution>,
    /// CPU seconds used by the generator's own threads during the measurement.
    pub cpu_seconds: f64,
    /// Average cores the generator used (CPU seconds / wall seconds).
    pub cpu_cores_used: f64,
    /// Cores the generator could use (its runtime threads, capped by the machine).
    pub cpu_cores_available: f64,
    /// Generator CPU per received chunk, µs (absent when the run used too little CPU to say).
    pub cpu_us_per_chunk: Option<f64>,
    /// Connections opened (TCP and TLS set-ups).
    pub connections_opened: u64,
    /// Verdict: the generator did not distort the measurement.
    pub kept_up: bool,
    /// Why not, when it did not (or what to watch).
    pub notes: Vec<String>,
}

/// Judges the generator from the measured records and its CPU use.
pub fn judge(
    records: &[RequestRecord],
    cpu_seconds: f64,
    wall_seconds: f64,
    cores_available: f64,
    connections_opened: u64,
) -> GeneratorReport {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measure)
        .collect();
    let mut lags: Vec<(u64, f64)> = measured
        .iter()
        .filter_map(|r| {
            Some((
                r.scheduled_at?,
                r.sent_at.saturating_sub(r.scheduled_at?) as f64 / 1e6,
            ))
        })
        .collect();
    lags.sort_by_key(|l| l.0);
    let send_lag_ms = Distribution::of(&mut lags.iter().map(|l| l.1).collect());
    let chunks: usize = measured
        .iter()
        .map(|r| r.chunks.len() + r.reasoning_chunks.len())
        .sum();
    let cores_used = if wall_seconds > 0.0 {
        cpu_seconds / wall_seconds
    } else {
        0.0
    };
    let mut notes = Vec::new();
    let mut kept_up = true;
    if let Some(lag) = send_lag_ms {
        if lag.p99 > 5.0 {
            kept_up = false;
            notes.push(format!(
                "send lag P99 {:.2} ms exceeds 5 ms: requests left later than planned (see connect_ms: new connections count here)",
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
                    "send lag grew from {head:.1} ms to {tail:.1} ms over the run: the generator fell behind the schedule"
                ));
            }
        }
    }
    if cores_available > 0.0 && cores_used > 0.9 * cores_available {
        kept_up = false;
        notes.push(format!(
            "the generator used {cores_used:.2} of {cores_available:.0} available cores: its own CPU may be the bottleneck (raise --client-threads or use another machine)"
        ));
    }
    GeneratorReport {
        send_lag_ms,
        cpu_seconds,
        cpu_cores_used: cores_used,
        cpu_cores_available: cores_available,
        // The kernel counts thread CPU in 10 ms ticks: below 50 ms the ratio means nothing.
        cpu_us_per_chunk: (chunks > 0 && cpu_seconds >= 0.05)
            .then(|| cpu_seconds * 1e6 / chunks as f64),
        connections_opened,
        kept_up,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(scheduled_ms: u64, lag_ms: f64) -> RequestRecord {
        RequestRecord {
            scheduled_at: Some(scheduled_ms * 1_000_000),
            sent_at: scheduled_ms * 1_000_000 + (lag_ms * 1e6) as u64,
            ..Default::default()
        }
    }

    #[test]
    fn on_time_generator_keeps_up() {
        let recs: Vec<_> = (0..200).map(|i| rec(i * 10, 0.1)).collect();
        let g = judge(&recs, 0.5, 2.0, 2.0, 4);
        assert!(g.kept_up, "{:?}", g.notes);
        assert!((g.send_lag_ms.unwrap().p99 - 0.1).abs() < 1e-9);
    }

    #[test]
    fn growing_lag_and_saturated_cpu_are_called_out() {
        let recs: Vec<_> = (0..200).map(|i| rec(i * 10, i as f64 * 0.5)).collect();
        let g = judge(&recs, 3.9, 2.0, 2.0, 4);
        assert!(!g.kept_up);
        assert_eq!(g.notes.len(), 3, "{:?}", g.notes);
    }
}
