//! What the telemetry says about the measurement window: the server's own counters and
//! queue, set against what the client measured; the GPUs' utilisation, power and energy per
//! token; the CPU package's energy; the generator host's load. Pure.

use super::collector::TelemetryData;
use super::engines::{Engine, ServerSample};
use super::gpu::{energy_over_window, joules_per_request, joules_per_token, tokens_per_joule};
use super::gpu::{throttle_reason_names, EnergyEstimate, GpuSample};
use super::host::Rapl;
use super::window::{bracketing_indices, window_delta, ServerDelta};
use super::window_energy::readings_over_span;
use crate::clock::Nanos;
use crate::stats::trend::ols_slope;
use serde::Serialize;

/// What the client measured over the window, to set against the server's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientTotals {
    /// Output tokens delivered (reasoning included).
    pub output_tokens: u64,
    /// Requests completed.
    pub completed: u64,
    /// Requests that ended (completed or failed) after reaching the server.
    pub ended: u64,
    /// Mean TTFT of completed requests, ms.
    pub mean_ttft_ms: Option<f64>,
}

/// Where each source came from, or why it was not measured.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Sources {
    pub server_metrics: String,
    pub gpu: String,
    pub cpu_energy: String,
}

/// The server's queue over the steady part of the window (draft 5.2.3.1 and 5.2.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct QueueTrend {
    pub samples: usize,
    pub waiting_mean: f64,
    pub waiting_max: f64,
    /// Least-squares slope of the waiting gauge, requests per second.
    pub slope_per_s: f64,
    /// Two-sided p-value of the slope (t-test).
    pub p_value: f64,
    /// Slope > 0 and p < 0.01: the queue kept growing.
    pub growing: bool,
}

/// The server's counters over the window next to the client's figures.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct ServerWindow {
    /// The engine recognised from the metric names.
    pub engine: String,
    pub scrapes_ok: usize,
    pub scrapes_failed: usize,
    /// Why the last failing scrape failed.
    pub last_error: Option<String>,
    #[schemars(with = "serde_json::Value")]
    pub delta: ServerDelta,
    pub queue: Option<QueueTrend>,
    /// Largest KV-cache usage seen, 0–1.
    pub kv_cache_usage_max: Option<f64>,
    pub comparison: Comparison,
}

/// The same quantity from both sides; `difference_pct` = (server − client) / client.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Pair {
    pub client: f64,
    pub server: Option<f64>,
    pub difference_pct: Option<f64>,
}

impl Pair {
    fn of(client: f64, server: Option<f64>) -> Self {
        Self {
            client,
            server,
            difference_pct: server
                .filter(|_| client > 0.0)
                .map(|s| (s - client) / client * 100.0),
        }
    }
}

/// Client against server over the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct Comparison {
    pub output_tokens: Pair,
    pub requests_finished: Pair,
    /// Mean TTFT from the server's histogram (observations in the window), ms.
    pub mean_ttft_ms: Option<Pair>,
}

/// One GPU over the window.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct GpuStats {
    pub index: u32,
    pub name: Option<String>,
    pub util_mean_pct: Option<f64>,
    pub power_mean_w: Option<f64>,
    pub mem_used_max_mib: Option<f64>,
    pub temp_max_c: Option<f64>,
    /// Throttle reasons seen in any sample.
    pub throttle_reasons: Vec<String>,
}

/// GPUs and their energy over the window.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct GpuWindow {
    pub gpus: Vec<GpuStats>,
    /// Energy over the window (counter difference preferred to integrating sampled power;
    /// `method` says which).
    #[schemars(with = "Option<serde_json::Value>")]
    pub energy: Option<EnergyEstimate>,
    /// Mean power of one GPU before the run started (idle), W.
    pub idle_power_w: Option<f64>,
    pub joules_per_output_token: Option<f64>,
    pub joules_per_request: Option<f64>,
    pub output_tokens_per_joule: Option<f64>,
    /// Energy above idle per output token, J.
    pub active_joules_per_output_token: Option<f64>,
}

/// CPU package energy over the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct CpuEnergy {
    pub joules: f64,
    pub joules_per_output_token: Option<f64>,
}

/// The generator's host over the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct HostWindow {
    pub cpu_cores_mean: Option<f64>,
    pub rss_max_mib: Option<f64>,
}

/// Telemetry of a run's measurement window.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct TelemetrySummary {
    pub sources: Sources,
    pub server: Option<ServerWindow>,
    pub gpu: Option<GpuWindow>,
    pub cpu_energy: Option<CpuEnergy>,
    pub host: HostWindow,
}

fn engine_name(e: Engine) -> String {
    format!("{e:?}").to_lowercase()
}

/// The scrapes that bracket the window ([`bracketing_indices`]).
fn bracketing<T>(points: &[(Nanos, T)], start: Nanos, end: Nanos) -> Option<(&T, &T)> {
    let times: Vec<Nanos> = points.iter().map(|(t, _)| *t).collect();
    let (a, b) = bracketing_indices(&times, start, end)?;
    Some((&points[a].1, &points[b].1))
}

/// Summarises `data` over the measurement window `[start, end]`; `steady_from` is where the
/// steady part begins (the first 10 % excluded) and `idle_until` where the run's load began.
pub fn summarize(
    data: &TelemetryData,
    start: Nanos,
    end: Nanos,
    steady_from: Nanos,
    idle_until: Nanos,
    client: &ClientTotals,
) -> TelemetrySummary {
    let server =
        (!data.server.is_empty()).then(|| server_window(data, start, end, steady_from, client));
    let gpu = gpu_window(data, start, end, idle_until, client);
    let cpu_energy = cpu_energy_window(data, start, end, client);
    TelemetrySummary {
        sources: Sources {
            server_metrics: data.server_source.clone(),
            gpu: data.gpu_source.clone(),
            cpu_energy: data.rapl_source.clone(),
        },
        server,
        gpu,
        cpu_energy,
        host: host_window(data, start, end),
    }
}

/// The server's counters over the window (between the scrapes that bracket it), its queue
/// over the steady part, set against what the client measured.
fn server_window(
    data: &TelemetryData,
    start: Nanos,
    end: Nanos,
    steady_from: Nanos,
    client: &ClientTotals,
) -> ServerWindow {
    let server_points: Vec<(Nanos, &ServerSample)> = data
        .server
        .iter()
        .filter_map(|p| Some((p.at, p.sample.as_ref()?)))
        .collect();
    let failed: Vec<&super::collector::ServerPoint> =
        data.server.iter().filter(|p| p.error.is_some()).collect();
    let engine = data
        .server
        .iter()
        .find_map(|p| p.engine)
        .map(engine_name)
        .unwrap_or_else(|| "unknown".into());
    let delta = bracketing(&server_points, start, end)
        .map(|(a, b)| window_delta(a, b))
        .unwrap_or_default();
    let queue = queue_trend(&server_points, steady_from, end);
    let kv = server_points
        .iter()
        .filter(|(t, _)| *t >= start && *t <= end)
        .filter_map(|(_, s)| s.kv_cache_usage)
        .reduce(f64::max);
    let comparison = Comparison {
        output_tokens: Pair::of(client.output_tokens as f64, delta.generation_tokens),
        requests_finished: Pair::of(client.ended as f64, delta.requests_finished),
        mean_ttft_ms: client
            .mean_ttft_ms
            .zip(delta.mean_ttft_s)
            .map(|(c, s)| Pair::of(c, Some(s * 1000.0))),
    };
    ServerWindow {
        engine,
        scrapes_ok: data.server.len() - failed.len(),
        scrapes_failed: failed.len(),
        last_error: failed.last().and_then(|p| p.error.clone()),
        delta,
        queue,
        kv_cache_usage_max: kv,
        comparison,
    }
}

/// The server's waiting queue over `[steady_from, end]`, and whether it kept growing.
fn queue_trend(
    server_points: &[(Nanos, &ServerSample)],
    steady_from: Nanos,
    end: Nanos,
) -> Option<QueueTrend> {
    let steady: Vec<(f64, f64)> = server_points
        .iter()
        .filter(|(t, _)| *t >= steady_from && *t <= end)
        .filter_map(|(t, s)| Some((*t as f64 / 1e9, s.waiting?)))
        .collect();
    let (xs, ys): (Vec<f64>, Vec<f64>) = steady.iter().copied().unzip();
    ols_slope(&xs, &ys).map(|fit| QueueTrend {
        samples: ys.len(),
        waiting_mean: ys.iter().sum::<f64>() / ys.len() as f64,
        waiting_max: ys.iter().copied().fold(f64::MIN, f64::max),
        slope_per_s: fit.slope,
        p_value: fit.p_value,
        growing: fit.slope > 0.0 && fit.p_value < 0.01,
    })
}

/// The CPU package's energy over the window, from the RAPL readings that bracket it.
fn cpu_energy_window(
    data: &TelemetryData,
    start: Nanos,
    end: Nanos,
    client: &ClientTotals,
) -> Option<CpuEnergy> {
    data.rapl_max_uj.and_then(|max| {
        let pts: Vec<(Nanos, u64)> = data
            .host
            .iter()
            .filter_map(|h| Some((h.at, h.rapl_uj?)))
            .collect();
        let (a, b) = bracketing(&pts, start, end)?;
        let joules = crate::telemetry::gpu::rapl_delta_uj(*a, *b, max) as f64 / 1e6;
        let _ = Rapl::open_at; // the reader lives in `host`; arithmetic here
        Some(CpuEnergy {
            joules,
            joules_per_output_token: joules_per_token(joules, client.output_tokens),
        })
    })
}

/// The generator's host over the window: CPU cores busy on average, largest memory.
fn host_window(data: &TelemetryData, start: Nanos, end: Nanos) -> HostWindow {
    let host_in: Vec<&super::collector::HostPoint> = data
        .host
        .iter()
        .filter(|h| h.at >= start && h.at <= end)
        .collect();
    let cpu_cores_mean = match (host_in.first(), host_in.last()) {
        (Some(a), Some(b)) if b.at > a.at => b
            .cpu_seconds
            .zip(a.cpu_seconds)
            .map(|(cb, ca)| (cb - ca) / ((b.at - a.at) as f64 / 1e9)),
        _ => None,
    };
    HostWindow {
        cpu_cores_mean,
        rss_max_mib: host_in
            .iter()
            .filter_map(|h| h.rss_bytes)
            .max()
            .map(|b| b as f64 / (1024.0 * 1024.0)),
    }
}

/// Mean power of one GPU before `idle_until` (the run's load), W.
fn idle_power_w(data: &TelemetryData, idle_until: Nanos) -> Option<f64> {
    let idle: Vec<f64> = data
        .gpu
        .iter()
        .filter(|p| p.at < idle_until)
        .flat_map(|p| p.gpus.iter().filter_map(|g| g.power_w))
        .collect();
    (!idle.is_empty()).then(|| idle.iter().sum::<f64>() / idle.len() as f64)
}

fn gpu_window(
    data: &TelemetryData,
    start: Nanos,
    end: Nanos,
    idle_until: Nanos,
    client: &ClientTotals,
) -> Option<GpuWindow> {
    let in_window: Vec<(f64, GpuSample)> = data
        .gpu
        .iter()
        .filter(|p| p.at >= start && p.at <= end)
        .flat_map(|p| p.gpus.iter().map(move |g| (p.at as f64 / 1e9, g.clone())))
        .collect();
    let idle_power_w = idle_power_w(data, idle_until);
    // The energy covers the span the output tokens are counted over (the window, or the
    // server scrapes around it: `client_counts_in_window`), readings interpolated to its edges.
    let span = sampled_span(data, start, end);
    let energy = energy_over_window(
        &readings_over_span(&data.gpu, *span.start(), *span.end()),
        idle_power_w,
    );
    if in_window.is_empty() && energy.is_none() {
        return None;
    }
    let mut indices: Vec<u32> = in_window.iter().map(|(_, g)| g.index).collect();
    indices.sort_unstable();
    indices.dedup();
    let gpus = indices
        .iter()
        .map(|&i| {
            let mine: Vec<&GpuSample> = in_window
                .iter()
                .filter(|(_, g)| g.index == i)
                .map(|(_, g)| g)
                .collect();
            let mean = |f: fn(&GpuSample) -> Option<f64>| {
                let v: Vec<f64> = mine.iter().filter_map(|g| f(g)).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            let max = |f: fn(&GpuSample) -> Option<f64>| {
                mine.iter().filter_map(|g| f(g)).reduce(f64::max)
            };
            let mut reasons: Vec<String> = mine
                .iter()
                .filter_map(|g| g.throttle_reasons)
                .flat_map(throttle_reason_names)
                .map(str::to_owned)
                .collect();
            reasons.sort();
            reasons.dedup();
            GpuStats {
                index: i,
                name: mine.iter().find_map(|g| g.name.clone()),
                util_mean_pct: mean(|g| g.util_pct),
                power_mean_w: mean(|g| g.power_w),
                mem_used_max_mib: max(|g| g.mem_used_mib),
                temp_max_c: max(|g| g.temp_c),
                throttle_reasons: reasons,
            }
        })
        .collect();
    let joules = energy.as_ref().map(|e| e.joules);
    Some(GpuWindow {
        gpus,
        idle_power_w,
        joules_per_output_token: joules.and_then(|j| joules_per_token(j, client.output_tokens)),
        joules_per_request: joules.and_then(|j| joules_per_request(j, client.completed)),
        output_tokens_per_joule: joules.and_then(|j| tokens_per_joule(client.output_tokens, j)),
        active_joules_per_output_token: energy
            .as_ref()
            .and_then(|e| e.active_joules)
            .and_then(|j| joules_per_token(j, client.output_tokens)),
        energy,
    })
}

/// What the client saw between the server samples bracketing the measured window
/// `start..=end` (the window itself without samples): the span the server's counters are
/// read over. Every request counts, whatever its phase: a closed loop's warm-up requests
/// still running into the window (the lead-in that spares the measurement a start-up burst)
/// are generated and finished there too, so counting only the measured requests would
/// read as the server over-counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowCounts {
    /// Tokens (answer and reasoning) whose chunks arrived in the span.
    pub output_tokens: u64,
    /// Requests that reached the server (an HTTP status) and ended in the span.
    pub ended: u64,
}

/// [`WindowCounts`] of `records` over the span of `data`'s server samples around the window.
pub fn client_counts_in_window(
    records: &[crate::record::RequestRecord],
    data: &TelemetryData,
    start: Nanos,
    end: Nanos,
) -> WindowCounts {
    let span = sampled_span(data, start, end);
    WindowCounts {
        output_tokens: records
            .iter()
            .flat_map(|r| r.chunks.iter().chain(&r.reasoning_chunks))
            .filter(|c| span.contains(&c.at))
            .map(|c| u64::from(c.tokens))
            .sum(),
        ended: records
            .iter()
            .filter(|r| r.http_status.is_some() && span.contains(&r.finished_at))
            .count() as u64,
    }
}

/// The span between the server samples around `start..=end` (the window itself when the
/// server was not sampled).
fn sampled_span(data: &TelemetryData, start: Nanos, end: Nanos) -> std::ops::RangeInclusive<Nanos> {
    let times: Vec<Nanos> = data
        .server
        .iter()
        .filter(|p| p.sample.is_some())
        .map(|p| p.at)
        .collect();
    match bracketing_indices(&times, start, end) {
        Some((a, b)) => times[a]..=times[b],
        None => start..=end,
    }
}

/// What [`client_counts_in_window`] counts, kept in time bins as records stream past (a
/// long run keeps no records); a span's counts are then within one bin's amount at each
/// end.
#[derive(Debug, Clone, Default)]
pub struct SeenTimes {
    tokens: crate::stats::time_bins::TimeBins,
    ended: crate::stats::time_bins::TimeBins,
}

impl SeenTimes {
    pub fn add(&mut self, r: &crate::record::RequestRecord) {
        for c in r.chunks.iter().chain(&r.reasoning_chunks) {
            self.tokens.add(c.at, f64::from(c.tokens));
        }
        if r.http_status.is_some() {
            self.ended.add(r.finished_at, 1.0);
        }
    }

    /// [`client_counts_in_window`] from the bins.
    pub fn counts(&self, data: &TelemetryData, start: Nanos, end: Nanos) -> WindowCounts {
        let span = sampled_span(data, start, end);
        let (a, b) = (*span.start(), span.end().saturating_add(1));
        WindowCounts {
            output_tokens: self.tokens.sum_between(a, b).round() as u64,
            ended: self.ended.sum_between(a, b).round() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::collector::{GpuPoint, ServerPoint};

    const S: u64 = 1_000_000_000;

    fn gpu(index: u32, power_w: f64, energy_mj: f64) -> GpuSample {
        GpuSample {
            index,
            uuid: None,
            name: Some("H100".into()),
            util_pct: Some(90.0),
            mem_used_mib: Some(70_000.0),
            mem_total_mib: Some(81_559.0),
            power_w: Some(power_w),
            energy_mj: Some(energy_mj),
            sm_clock_mhz: None,
            temp_c: Some(60.0),
            throttle_reasons: None,
        }
    }

    #[test]
    fn energy_per_token_from_a_recorded_counter_and_idle_power() {
        // Two GPUs idle at 70 W before the run (t < 10 s), then 10 s of load: each energy
        // counter advances 5,000,000 mJ (5 kJ) over the window.
        let data = TelemetryData {
            gpu: vec![
                GpuPoint {
                    at: 5 * S,
                    gpus: vec![gpu(0, 70.0, 0.0), gpu(1, 70.0, 0.0)],
                    error: None,
                },
                GpuPoint {
                    at: 10 * S,
                    gpus: vec![gpu(0, 500.0, 1_000_000.0), gpu(1, 500.0, 1_000_000.0)],
                    error: None,
                },
                GpuPoint {
                    at: 20 * S,
                    gpus: vec![gpu(0, 500.0, 6_000_000.0), gpu(1, 500.0, 6_000_000.0)],
                    error: None,
                },
            ],
            ..Default::default()
        };
        let client = ClientTotals {
            output_tokens: 20_000,
            completed: 100,
            ended: 100,
            mean_ttft_ms: None,
        };
        let t = summarize(&data, 10 * S, 20 * S, 11 * S, 10 * S, &client);
        let g = t.gpu.unwrap();
        // 2 × 5,000 J = 10,000 J; idle 70 W × 10 s × 2 = 1,400 J; active 8,600 J.
        let e = g.energy.as_ref().unwrap();
        assert!((e.joules - 10_000.0).abs() < 1e-9);
        assert_eq!(g.idle_power_w, Some(70.0));
        assert!((e.active_joules.unwrap() - 8_600.0).abs() < 1e-9);
        assert_eq!(g.joules_per_output_token, Some(0.5));
        assert_eq!(g.joules_per_request, Some(100.0));
        assert_eq!(g.output_tokens_per_joule, Some(2.0));
        assert!((g.active_joules_per_output_token.unwrap() - 0.43).abs() < 1e-12);
        assert_eq!(g.gpus.len(), 2);
        assert_eq!(g.gpus[0].power_mean_w, Some(500.0));
    }

    #[test]
    fn server_counters_against_the_client_and_a_growing_queue() {
        let point = |t: u64, waiting: f64, gen: f64, fin: f64| ServerPoint {
            at: t * S,
            engine: Some(Engine::Vllm),
            sample: Some(ServerSample {
                waiting: Some(waiting),
                generation_tokens_total: Some(gen),
                requests_finished_total: Some(fin),
                ..Default::default()
            }),
            error: None,
        };
        // Window 0–10 s; the queue grows by 2 per second over the steady part.
        let data = TelemetryData {
            server: (0..=10)
                .map(|t| point(t, 2.0 * t as f64, 1000.0 + 99.0 * t as f64, 10.0 * t as f64))
                .chain(std::iter::once(ServerPoint {
                    at: 11 * S,
                    engine: None,
                    sample: None,
                    error: Some("HTTP 500".into()),
                }))
                .collect(),
            ..Default::default()
        };
        let client = ClientTotals {
            output_tokens: 1000,
            completed: 100,
            ended: 100,
            mean_ttft_ms: None,
        };
        let t = summarize(&data, 0, 10 * S, S, 0, &client);
        let s = t.server.unwrap();
        assert_eq!((s.scrapes_ok, s.scrapes_failed), (11, 1));
        assert_eq!(s.engine, "vllm");
        // 990 tokens by the server against 1,000 by the client: −1 %.
        let tokens = s.comparison.output_tokens;
        assert_eq!(tokens.server, Some(990.0));
        assert!((tokens.difference_pct.unwrap() + 1.0).abs() < 1e-9);
        assert_eq!(s.comparison.requests_finished.server, Some(100.0));
        let q = s.queue.unwrap();
        assert!(q.growing && (q.slope_per_s - 2.0).abs() < 1e-9, "{q:?}");
        assert!(t.gpu.is_none());
    }
}
