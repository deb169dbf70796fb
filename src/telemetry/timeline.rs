//! One timeline per run: for each second, what the client did (sends, completions, requests
//! in flight, tokens received, the TTFT of requests started) beside what every telemetry
//! source said, on the run's one clock. Written as `timeseries.csv` and into `run.json`;
//! the reports' over-time charts and the procedures' saturation checks read it.
//!
//! Pure: records and collected samples in, rows out.

use super::client_seconds::{leading_phase, ClientSeconds, SECOND};
use super::collector::TelemetryData;
use crate::clock::Nanos;
use crate::record::{Phase, RequestRecord};
use serde::Serialize;
use std::fmt::Write;

/// One second of the run. Server, GPU and host columns are empty (`None`) when the source
/// was not measured or had no sample in that second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct TimelineRow {
    /// Start of the second, s since the run started.
    pub t_s: u64,
    /// The phase most requests in flight belonged to (`idle` when none were).
    pub phase: String,
    pub sends: u64,
    pub completions: u64,
    pub failures: u64,
    /// Requests in flight at the end of the second.
    pub in_flight: u64,
    /// Output tokens (reasoning included) received in the second.
    pub output_tokens: u64,
    /// Median TTFT of the requests sent in the second that got an answer, ms.
    pub ttft_p50_ms: Option<f64>,
    pub server_running: Option<f64>,
    pub server_waiting: Option<f64>,
    /// 0–1.
    pub server_kv_cache_usage: Option<f64>,
    /// Tokens the server says it generated per second (counter difference).
    pub server_generation_tokens_per_s: Option<f64>,
    /// Preemptions in the second (counter difference).
    pub server_preemptions: Option<f64>,
    /// Mean utilisation over GPUs, %.
    pub gpu_util_pct: Option<f64>,
    /// Sum over GPUs, W.
    pub gpu_power_w: Option<f64>,
    /// Sum over GPUs, MiB.
    pub gpu_mem_used_mib: Option<f64>,
    /// Hottest GPU, °C.
    pub gpu_temp_c: Option<f64>,
    /// Cores the generator process used over the second.
    pub host_cpu_cores: Option<f64>,
    pub host_rss_mib: Option<f64>,
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Warmup => "warmup",
        Phase::Probe => "probe",
        Phase::Profile => "profile",
        Phase::Measure => "measure",
    }
}

/// The timeline of a run from its records and telemetry; `end` is the run's last moment.
pub fn timeline(records: &[RequestRecord], data: &TelemetryData, end: Nanos) -> Vec<TimelineRow> {
    timeline_of(&ClientSeconds::of(records), data, end)
}

/// The timeline from the client's activity counted per second and the telemetry.
pub fn timeline_of(client: &ClientSeconds, data: &TelemetryData, end: Nanos) -> Vec<TimelineRow> {
    let seconds = end / SECOND + 1;
    let mut rows: Vec<TimelineRow> = client
        .seconds(seconds as usize)
        .into_iter()
        .enumerate()
        .map(|(s, c)| TimelineRow {
            t_s: s as u64,
            phase: leading_phase(c.phase_votes)
                .map_or("idle", phase_name)
                .into(),
            sends: c.sends,
            completions: c.completions,
            failures: c.failures,
            in_flight: c.in_flight,
            output_tokens: c.output_tokens,
            ttft_p50_ms: (c.ttft_ms.count() > 0).then(|| c.ttft_ms.percentile(50.0)),
            ..Default::default()
        })
        .collect();
    let last = rows.len().saturating_sub(1);
    let bucket = |t: Nanos| ((t / SECOND) as usize).min(last);
    // Server: the last scrape in each second; counters as differences from the previous one.
    let mut prev: Option<(Nanos, Option<f64>, Option<f64>)> = None;
    for p in data.server.iter().filter(|p| p.sample.is_some()) {
        let s = p.sample.as_ref().expect("filtered");
        let row = &mut rows[bucket(p.at)];
        row.server_running = s.running;
        row.server_waiting = s.waiting;
        row.server_kv_cache_usage = s.kv_cache_usage;
        if let Some((t0, gen0, pre0)) = prev {
            let dt = (p.at - t0) as f64 / 1e9;
            if dt > 0.0 {
                if let (Some(a), Some(b)) = (gen0, s.generation_tokens_total) {
                    if b >= a {
                        row.server_generation_tokens_per_s = Some((b - a) / dt);
                    }
                }
                if let (Some(a), Some(b)) = (pre0, s.preemptions_total) {
                    if b >= a {
                        row.server_preemptions =
                            Some(row.server_preemptions.unwrap_or(0.0) + b - a);
                    }
                }
            }
        }
        prev = Some((p.at, s.generation_tokens_total, s.preemptions_total));
    }
    for p in data.gpu.iter().filter(|p| !p.gpus.is_empty()) {
        let row = &mut rows[bucket(p.at)];
        let vals = |f: fn(&super::gpu::GpuSample) -> Option<f64>| -> Vec<f64> {
            p.gpus.iter().filter_map(f).collect()
        };
        let util = vals(|g| g.util_pct);
        row.gpu_util_pct = (!util.is_empty()).then(|| util.iter().sum::<f64>() / util.len() as f64);
        let power = vals(|g| g.power_w);
        row.gpu_power_w = (!power.is_empty()).then(|| power.iter().sum());
        let mem = vals(|g| g.mem_used_mib);
        row.gpu_mem_used_mib = (!mem.is_empty()).then(|| mem.iter().sum());
        row.gpu_temp_c = vals(|g| g.temp_c).into_iter().reduce(f64::max);
    }
    let mut prev_cpu: Option<(Nanos, f64)> = None;
    for h in &data.host {
        let row = &mut rows[bucket(h.at)];
        row.host_rss_mib = h.rss_bytes.map(|b| b as f64 / (1024.0 * 1024.0));
        if let (Some((t0, c0)), Some(c)) = (prev_cpu, h.cpu_seconds) {
            let dt = (h.at - t0) as f64 / 1e9;
            if dt > 0.0 {
                row.host_cpu_cores = Some((c - c0).max(0.0) / dt);
            }
        }
        if let Some(c) = h.cpu_seconds {
            prev_cpu = Some((h.at, c));
        }
    }
    rows
}

/// The timeline as CSV (a header, one line per second, empty cells where nothing was measured).
pub fn to_csv(rows: &[TimelineRow]) -> String {
    let mut out = String::from(
        "t_s,phase,sends,completions,failures,in_flight,output_tokens,ttft_p50_ms,server_running,server_waiting,server_kv_cache_usage,server_generation_tokens_per_s,server_preemptions,gpu_util_pct,gpu_power_w,gpu_mem_used_mib,gpu_temp_c,host_cpu_cores,host_rss_mib\n",
    );
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.t_s,
            r.phase,
            r.sends,
            r.completions,
            r.failures,
            r.in_flight,
            r.output_tokens,
            opt(r.ttft_p50_ms),
            opt(r.server_running),
            opt(r.server_waiting),
            opt(r.server_kv_cache_usage),
            opt(r.server_generation_tokens_per_s),
            opt(r.server_preemptions),
            opt(r.gpu_util_pct),
            opt(r.gpu_power_w),
            opt(r.gpu_mem_used_mib),
            opt(r.gpu_temp_c),
            opt(r.host_cpu_cores),
            opt(r.host_rss_mib),
        );
    }
    out
}

/// Copies the server and GPU columns of `source`, another run's timeline whose second 0 is
/// `shift_s` seconds into `rows`' timeline, into `rows` second by second (a merged
/// scale-out run takes them from shard 0, the one shard that scraped). Client and host
/// columns stay as they are; seconds outside `rows` are dropped.
pub fn splice_server_and_gpu(rows: &mut [TimelineRow], source: &[TimelineRow], shift_s: i64) {
    for src in source {
        let Ok(t) = u64::try_from(src.t_s as i64 + shift_s) else {
            continue;
        };
        let Ok(i) = rows.binary_search_by_key(&t, |r| r.t_s) else {
            continue;
        };
        let r = &mut rows[i];
        r.server_running = src.server_running;
        r.server_waiting = src.server_waiting;
        r.server_kv_cache_usage = src.server_kv_cache_usage;
        r.server_generation_tokens_per_s = src.server_generation_tokens_per_s;
        r.server_preemptions = src.server_preemptions;
        r.gpu_util_pct = src.gpu_util_pct;
        r.gpu_power_w = src.gpu_power_w;
        r.gpu_mem_used_mib = src.gpu_mem_used_mib;
        r.gpu_temp_c = src.gpu_temp_c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::collector::{HostPoint, ServerPoint};
    use crate::telemetry::engines::{Engine, ServerSample};

    const MS: u64 = 1_000_000;

    #[test]
    fn hand_built_run_on_one_clock() {
        // Two requests: one sent at 0.5 s answering at 0.6 and 1.2 s, one sent at 1.1 s
        // answering at 2.5 s.
        let mut a = RequestRecord::completed_for_tests(0, 500, &[600, 1200], 10);
        a.derived = Some(crate::record::Derived {
            ttft_ms: Some(100.0),
            ..Default::default()
        });
        let b = RequestRecord::completed_for_tests(1, 1100, &[2500], 10);
        let server = |at_ms: u64, waiting: f64, gen: f64| ServerPoint {
            at: at_ms * MS,
            engine: Some(Engine::Vllm),
            sample: Some(ServerSample {
                waiting: Some(waiting),
                generation_tokens_total: Some(gen),
                ..Default::default()
            }),
            error: None,
        };
        let data = TelemetryData {
            server: vec![server(900, 1.0, 100.0), server(1900, 3.0, 150.0)],
            host: vec![
                HostPoint {
                    at: 900 * MS,
                    cpu_seconds: Some(1.0),
                    rss_bytes: Some(10 << 20),
                    rapl_uj: None,
                },
                HostPoint {
                    at: 1900 * MS,
                    cpu_seconds: Some(1.5),
                    rss_bytes: Some(20 << 20),
                    rapl_uj: None,
                },
            ],
            ..Default::default()
        };
        let rows = timeline(&[a, b], &data, 2600 * MS);
        assert_eq!(rows.len(), 3);
        assert_eq!((rows[0].sends, rows[1].sends, rows[2].sends), (1, 1, 0));
        assert_eq!(
            (
                rows[0].completions,
                rows[1].completions,
                rows[2].completions
            ),
            (0, 1, 1)
        );
        // Tokens: 0.6 s in second 0; 1.2 s in second 1; 2.5 s in second 2.
        assert_eq!(
            (
                rows[0].output_tokens,
                rows[1].output_tokens,
                rows[2].output_tokens
            ),
            (1, 1, 1)
        );
        // In flight at 1 s: a (0.5–1.2); at 2 s: b (1.1–2.5).
        assert_eq!((rows[0].in_flight, rows[1].in_flight), (1, 1));
        assert_eq!(rows[0].ttft_p50_ms, Some(100.0));
        assert_eq!(rows[0].server_waiting, Some(1.0));
        // 50 tokens over the 1 s between scrapes.
        assert_eq!(rows[1].server_generation_tokens_per_s, Some(50.0));
        assert_eq!(rows[1].host_cpu_cores, Some(0.5));
        assert_eq!(rows[1].host_rss_mib, Some(20.0));
        assert_eq!(rows[0].phase, "measure");
        let csv = to_csv(&rows);
        assert_eq!(csv.lines().count(), 4);
        assert!(csv
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("1,measure,1,1,0,1,1,,,3.0000,,50.0000,"));
    }

    #[test]
    fn splicing_shifts_the_source_seconds() {
        let row = |t: u64| TimelineRow {
            t_s: t,
            sends: 10 + t,
            host_cpu_cores: Some(0.5),
            ..Default::default()
        };
        let mut rows: Vec<TimelineRow> = (0..4).map(row).collect();
        // Shard 0 started 2 s after the merged origin: its second 0 is the merged second 2,
        // its second 2 falls past the merged end and is dropped.
        let source: Vec<TimelineRow> = (0..3)
            .map(|t| TimelineRow {
                t_s: t,
                server_waiting: Some(t as f64),
                gpu_power_w: Some(100.0 + t as f64),
                host_cpu_cores: Some(9.0),
                ..Default::default()
            })
            .collect();
        splice_server_and_gpu(&mut rows, &source, 2);
        let waiting: Vec<Option<f64>> = rows.iter().map(|r| r.server_waiting).collect();
        assert_eq!(waiting, [None, None, Some(0.0), Some(1.0)]);
        assert_eq!(rows[3].gpu_power_w, Some(101.0));
        // Client and host columns are the merged run's own.
        assert_eq!(rows[3].sends, 13);
        assert_eq!(rows[3].host_cpu_cores, Some(0.5));
        // A negative shift drops the source's first seconds.
        let mut rows: Vec<TimelineRow> = (0..2).map(row).collect();
        splice_server_and_gpu(&mut rows, &source, -1);
        let waiting: Vec<Option<f64>> = rows.iter().map(|r| r.server_waiting).collect();
        assert_eq!(waiting, [Some(1.0), Some(2.0)]);
    }
}
