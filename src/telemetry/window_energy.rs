//! The GPUs' readings cut to exactly a span of time, so that energy per token divides the
//! energy of the same span the tokens were counted over.
//!
//! GPUs are read about once a second, and those readings rarely fall on the window's edges.
//! Keeping only the readings inside the window integrates over a shorter span than the
//! window's tokens (up to a reading period short at each end: −5 % on a 20 s window). So,
//! as the server's counters and the CPU's energy do, the readings that bracket the span are
//! used, and each GPU's energy counter and power are interpolated linearly to the span's
//! edges: the counter's difference and the trapezoid of the power then cover exactly the
//! span ([`super::gpu::energy_over_window`] does the arithmetic on the cut readings).

use super::collector::GpuPoint;
use super::gpu::GpuSample;
use super::window::bracketing_indices;
use crate::clock::Nanos;

/// Each GPU's readings over exactly `[start, end]` (ns on the run's clock), as
/// `(time in s, reading)`: the readings strictly inside, plus one at each edge whose energy
/// counter and power are interpolated from the readings on either side of it. An edge with
/// no reading on one side (telemetry began after the span did) keeps no value there, and
/// the figure then starts at the first reading, as `GpuEnergy::duration_s` says.
pub fn readings_over_span(points: &[GpuPoint], start: Nanos, end: Nanos) -> Vec<(f64, GpuSample)> {
    let times: Vec<Nanos> = points.iter().map(|p| p.at).collect();
    let Some((first, last)) = bracketing_indices(&times, start, end) else {
        return Vec::new();
    };
    let near: Vec<(f64, &GpuSample)> = points[first..=last]
        .iter()
        .flat_map(|p| p.gpus.iter().map(move |g| (seconds(p.at), g)))
        .collect();
    let mut indices: Vec<u32> = near.iter().map(|(_, g)| g.index).collect();
    indices.sort_unstable();
    indices.dedup();
    let (start_s, end_s) = (seconds(start), seconds(end));
    let mut out = Vec::new();
    for index in indices {
        let series: Vec<(f64, &GpuSample)> = near
            .iter()
            .filter(|(_, g)| g.index == index)
            .copied()
            .collect();
        out.push((start_s, edge(index, &series, start_s)));
        out.extend(
            series
                .iter()
                .filter(|(t, _)| *t > start_s && *t < end_s)
                .map(|(t, g)| (*t, (*g).clone())),
        );
        out.push((end_s, edge(index, &series, end_s)));
    }
    out
}

fn seconds(at: Nanos) -> f64 {
    at as f64 / 1e9
}

/// A reading of GPU `index` at `t` s made from its neighbours: energy counter and power
/// each interpolated from the nearest readings that have it on either side (`None` when one
/// side has none). The other fields are left out: the edges count for energy only.
fn edge(index: u32, series: &[(f64, &GpuSample)], t: f64) -> GpuSample {
    GpuSample {
        index,
        energy_mj: interpolate(series, t, |g| g.energy_mj),
        power_w: interpolate(series, t, |g| g.power_w),
        ..GpuSample::default()
    }
}

/// The value of `field` at `t` on the straight line between the last reading at or before
/// `t` and the first at or after it that have a finite value (`series` sorted by time).
fn interpolate(
    series: &[(f64, &GpuSample)],
    t: f64,
    field: fn(&GpuSample) -> Option<f64>,
) -> Option<f64> {
    let values: Vec<(f64, f64)> = series
        .iter()
        .filter_map(|(at, g)| field(g).filter(|v| v.is_finite()).map(|v| (*at, v)))
        .collect();
    let &(t0, v0) = values.iter().rev().find(|(at, _)| *at <= t)?;
    let &(t1, v1) = values.iter().find(|(at, _)| *at >= t)?;
    if t1 <= t0 {
        return Some(v0);
    }
    Some(v0 + (v1 - v0) * (t - t0) / (t1 - t0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::gpu::{energy_over_window, EnergyMethod};
    use crate::telemetry::summary::{summarize, ClientTotals};
    use crate::telemetry::TelemetryData;

    const S: u64 = 1_000_000_000;

    /// GPU 0 reports power only (trapezoid), GPU 1 its energy counter only.
    fn point(at_s: u64, power_w: f64, energy_mj: f64) -> GpuPoint {
        let reading = |index: u32, power_w: Option<f64>, energy_mj: Option<f64>| GpuSample {
            index,
            power_w,
            energy_mj,
            ..GpuSample::default()
        };
        GpuPoint {
            at: at_s * S,
            gpus: vec![
                reading(0, Some(power_w), None),
                reading(1, None, Some(energy_mj)),
            ],
            error: None,
        }
    }

    /// Readings at 8, 12, 16 and 22 s around the window [10 s, 20 s].
    fn data() -> TelemetryData {
        TelemetryData {
            gpu: vec![
                point(8, 100.0, 0.0),
                point(12, 300.0, 2_000_000.0),
                point(16, 300.0, 4_000_000.0),
                point(22, 600.0, 7_000_000.0),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn energy_per_token_covers_exactly_the_window() {
        // GPU 0, power: 200 W at 10 s (halfway from 100 W at 8 s to 300 W at 12 s), 500 W
        // at 20 s (4/6 of the way from 300 W at 16 s to 600 W at 22 s). Trapezoids:
        // (200 + 300)/2 × 2 s + 300 × 4 s + (300 + 500)/2 × 4 s = 500 + 1200 + 1600 = 3300 J.
        // GPU 1, counter: 1,000,000 mJ at 10 s, 6,000,000 mJ at 20 s: 5000 J.
        // The readings inside the window alone (12 s and 16 s) gave 1200 J and 2000 J.
        let client = ClientTotals {
            output_tokens: 8300,
            completed: 83,
            ended: 83,
            mean_ttft_ms: None,
        };
        let t = summarize(&data(), 10 * S, 20 * S, 11 * S, 0, &client);
        let g = t.gpu.unwrap();
        let e = g.energy.as_ref().unwrap();
        assert_eq!(e.method, EnergyMethod::Mixed);
        assert!((e.gpus[0].joules - 3300.0).abs() < 1e-6, "{:?}", e.gpus[0]);
        assert!((e.gpus[1].joules - 5000.0).abs() < 1e-6, "{:?}", e.gpus[1]);
        assert!(e.gpus.iter().all(|g| (g.duration_s - 10.0).abs() < 1e-9));
        assert!((g.joules_per_output_token.unwrap() - 1.0).abs() < 1e-9);
        assert!((g.joules_per_request.unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn edges_on_a_reading_and_a_span_past_the_readings() {
        // A window starting on a reading takes it as it is; one ending after the last
        // reading stops at that reading (nothing to interpolate towards).
        let cut = readings_over_span(&data().gpu, 12 * S, 30 * S);
        let e = energy_over_window(&cut, None).unwrap();
        // GPU 0: 300 × 4 s + (300 + 600)/2 × 6 s = 1200 + 2700; GPU 1: 5000 J over 10 s.
        assert!((e.gpus[0].joules - 3900.0).abs() < 1e-6);
        assert!((e.gpus[1].joules - 5000.0).abs() < 1e-6);
        assert!((e.gpus[0].duration_s - 10.0).abs() < 1e-9);
        assert!(readings_over_span(&[], 0, S).is_empty());
    }
}
