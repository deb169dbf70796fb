//! The charts of a run report, each with a caption that says what to read from it. A
//! chart whose data the run does not have (no classes, no server metrics, no GPUs) is
//! left out rather than drawn empty; the page says why instead.

use super::data::RunData;
use crate::artifacts::RunReport;
use crate::metrics::fluidity::FluidRate;
use crate::metrics::ItlOption;
use crate::report::chart::{Bins, Chart, Marker, MarkerKind, Scale, Series, Unit};
use crate::telemetry::timeline::TimelineRow;

/// A chart and what to read from it.
pub type Fig = (Chart, String);

/// Log bins when the values are positive and span more than 50× (a tail over decades);
/// linear bins otherwise, and always when zeros are common (ITL option B's zero gaps).
fn bins_for(values: &[f64]) -> Bins {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let zeros = finite.iter().filter(|v| **v <= 0.0).count();
    let min = finite
        .iter()
        .copied()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let max = finite.iter().copied().fold(0.0, f64::max);
    if zeros * 100 <= finite.len() && min.is_finite() && max / min > 50.0 {
        Bins::Log
    } else {
        Bins::Auto
    }
}

fn percentile_markers(d: Option<crate::stats::Distribution>) -> Vec<Marker> {
    match d {
        Some(d) => vec![
            Marker::vertical(d.p50, &format!("P50 {}", Unit::Ms.format(d.p50))),
            Marker::vertical(d.p99, &format!("P99 {}", Unit::Ms.format(d.p99))),
        ],
        None => Vec::new(),
    }
}

/// TTFT as a CDF, with P50, P99 and any TTFT SLO bound marked (draft 5.1.5.4).
pub fn ttft_cdf(r: &RunReport, data: &RunData) -> Option<Fig> {
    if data.ttft_ms.is_empty() {
        return None;
    }
    let mut c = Chart::cdf("TTFT", &data.ttft_ms)
        .id("ttft-cdf")
        .title("Time to first token: cumulative distribution")
        .x_axis("time to first token", Unit::Ms);
    for m in percentile_markers(r.summary.ttft_ms) {
        c = c.marker(m);
    }
    if let Some(bound) = ttft_bound(r) {
        c = c.marker(
            Marker::vertical(bound, &format!("SLO {}", Unit::Ms.format(bound)))
                .kind(MarkerKind::Slo),
        );
    }
    Some((
        c,
        "The share of requests (y) that saw their first token within a time (x). A steep rise is \
         a consistent TTFT; a long flat stretch at the top is the tail that P99 reports."
            .into(),
    ))
}

/// The per-request TTFT bound of `--slo`, if one was given.
fn ttft_bound(r: &RunReport) -> Option<f64> {
    let spec = r.config.slo.as_ref()?.to_string();
    spec.split(',').find_map(|t| {
        t.trim()
            .strip_prefix("ttft_ms<=")
            .and_then(|v| v.parse::<f64>().ok())
    })
}

/// TTFT as a histogram.
pub fn ttft_histogram(r: &RunReport, data: &RunData) -> Option<Fig> {
    if data.ttft_ms.is_empty() {
        return None;
    }
    let mut c = Chart::histogram("TTFT", &data.ttft_ms, bins_for(&data.ttft_ms))
        .id("ttft-hist")
        .title("Time to first token: histogram")
        .x_axis("time to first token", Unit::Ms)
        .y_axis("requests", Unit::Plain);
    for m in percentile_markers(r.summary.ttft_ms) {
        c = c.marker(m);
    }
    Some((
        c,
        "How many requests (y) had each TTFT (x). One hump is one regime; a second hump to the \
         right usually means queueing or a second kind of request (long prompts)."
            .into(),
    ))
}

/// ITL (or time between chunks) as a histogram (draft 5.4).
pub fn itl_histogram(r: &RunReport, data: &RunData) -> Option<Fig> {
    if data.itl_ms.is_empty() {
        return None;
    }
    let option_a = r.summary.itl_method.option == ItlOption::A;
    let (name, title) = if option_a {
        (
            "time between chunks",
            "Time between chunks: histogram (ITL option A)",
        )
    } else {
        ("inter-token latency", "Inter-token latency: histogram")
    };
    let mut c = Chart::histogram("ITL", &data.itl_ms, bins_for(&data.itl_ms))
        .id("itl-hist")
        .title(title)
        .x_axis(name, Unit::Ms)
        .y_axis(if option_a { "gaps" } else { "tokens" }, Unit::Plain);
    for m in percentile_markers(r.summary.itl_ms) {
        c = c.marker(m);
    }
    Some((
        c,
        format!(
            "How often each gap between tokens (x) occurred. A narrow peak is smooth streaming; \
             bars far to the right are stalls a reader notices. {}",
            r.summary.itl_shape.statement
        ),
    ))
}

/// The gap above which a timeline highlights a pause: the decode deadline D_d, or three
/// times the median ITL when the server is slower than that anyway.
pub fn pause_threshold_ms(r: &RunReport) -> f64 {
    let dd = r.config.fluidity.tbt_deadline_ms;
    let median = r.summary.itl_ms.map(|d| d.p50).unwrap_or(0.0);
    dd.max(3.0 * median)
}

/// A sample of requests' token arrivals, pauses highlighted.
pub fn token_timelines(r: &RunReport, data: &RunData) -> Option<Fig> {
    if data.timelines.is_empty() {
        return None;
    }
    let rows: Vec<Vec<f64>> = data.timelines.iter().map(|t| t.token_ms.clone()).collect();
    let pause = pause_threshold_ms(r);
    let c = Chart::timeline(&rows, pause)
        .id("token-timeline")
        .title("Token arrivals per request (a sample)")
        .y_axis("request (in send order)", Unit::Plain);
    Some((
        c,
        format!(
            "Each row is one request, from its send time (0) to its last token; every tick is \
             a token. Orange stretches are pauses longer than {} (the larger of the decode deadline \
             D_d and 3× the median ITL). Shown: {} of {} streams, the {} with the longest pauses \
             and the rest spread over the run.",
            Unit::Ms.format(pause),
            data.timelines.len(),
            data.streams,
            super::data::TIMELINE_WORST.min(data.timelines.len()),
        ),
    ))
}

/// Seconds of the run where the measured phase starts and ends, for markers.
fn measure_span(rows: &[TimelineRow]) -> Option<(f64, f64)> {
    let first = rows.iter().find(|r| r.phase == "measure")?;
    let last = rows.iter().rev().find(|r| r.phase == "measure")?;
    Some((first.t_s as f64, last.t_s as f64 + 1.0))
}

/// Marks the measured phase, and spans the whole run on x so that every chart over time
/// shares one time axis.
fn with_phase_markers(mut c: Chart, rows: &[TimelineRow]) -> Chart {
    if let Some(last) = rows.last() {
        c = c.x_range(0.0, last.t_s as f64 + 1.0);
    }
    if let Some((a, b)) = measure_span(rows) {
        if a > 0.0 {
            c = c.marker(Marker::vertical(a, "measuring"));
        }
        c = c.marker(Marker::vertical(b, "end"));
    }
    c
}

fn series(rows: &[TimelineRow], f: impl Fn(&TimelineRow) -> Option<f64>) -> Vec<(f64, f64)> {
    rows.iter()
        .filter_map(|r| f(r).map(|v| (r.t_s as f64, v)))
        .collect()
}

/// How far back the server's token rate is averaged in the throughput chart, s.
pub const SERVER_RATE_WINDOW_S: f64 = 10.0;

/// A rate per scrape (`(t_s, per_s)`, each over the time since the scrape before) as the
/// rate over the last [`SERVER_RATE_WINDOW_S`] seconds at each scrape: each rate weighted
/// by the time it covers, so the value is the window's count over its length. Some servers
/// move their counters in bursts (llama.cpp: 500-1,800 tok/s for a second, then nothing,
/// while ~50 tok/s came out): per scrape, their line spikes and flattens the client's.
pub fn trailing_rate(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    // The first scrape's rate covers one scrape interval (1 s), as far as the rows say.
    let spans: Vec<f64> = points
        .iter()
        .enumerate()
        .map(|(i, p)| i.checked_sub(1).map_or(1.0, |j| p.0 - points[j].0))
        .collect();
    let mut from = 0;
    points
        .iter()
        .enumerate()
        .map(|(i, &(t, _))| {
            while points[from].0 <= t - SERVER_RATE_WINDOW_S {
                from += 1;
            }
            let (count, time) = (from..=i).fold((0.0, 0.0), |(c, s), j| {
                (c + points[j].1 * spans[j], s + spans[j])
            });
            (t, if time > 0.0 { count / time } else { 0.0 })
        })
        .collect()
}

/// Output tokens per second over the run, the client's count beside the server's.
pub fn throughput_over_time(r: &RunReport) -> Option<Fig> {
    let rows = &r.timeseries;
    if rows.is_empty() {
        return None;
    }
    let mut lines = vec![(
        "received by the client".to_string(),
        series(rows, |r| Some(r.output_tokens as f64)),
    )];
    let server = series(rows, |r| r.server_generation_tokens_per_s);
    if !server.is_empty() {
        lines.push((
            format!("generated (server metrics, last {SERVER_RATE_WINDOW_S:.0} s)"),
            trailing_rate(&server),
        ));
    }
    let c = Chart::time_series(&lines)
        .id("throughput-over-time")
        .title("Output throughput over time")
        .x_axis("time since the run started", Unit::S)
        .y_axis("output tokens per second", Unit::TokPerS);
    Some((
        with_phase_markers(c, rows),
        format!(
            "Tokens per second, second by second, over the whole run (warm-up included; the \
             measured phase between the markers). The server's own count, where it has metrics, \
             is averaged over the last {SERVER_RATE_WINDOW_S:.0} s at each scrape (some servers \
             move their counters in bursts). A flat line is steady state; a ramp at the start \
             is warm-up or batch fill; a sag later is the server falling behind."
        ),
    ))
}

/// Median TTFT of the requests sent in each second.
pub fn latency_over_time(r: &RunReport) -> Option<Fig> {
    let rows = &r.timeseries;
    let pts = series(rows, |r| r.ttft_p50_ms);
    if pts.is_empty() {
        return None;
    }
    let c = Chart::time_series(&[("median TTFT of requests sent that second", pts)])
        .id("latency-over-time")
        .title("Latency over time")
        .x_axis("time since the run started", Unit::S)
        .y_axis("TTFT", Unit::Ms);
    Some((
        with_phase_markers(c, rows),
        "The median TTFT of the requests sent in each second. A rising line means requests wait \
         longer and longer: a queue is building (draft 5.2.3.1)."
            .into(),
    ))
}

/// Requests in flight (client) beside the server's running and waiting counts.
pub fn concurrency_over_time(r: &RunReport) -> Option<Fig> {
    let rows = &r.timeseries;
    if rows.is_empty() {
        return None;
    }
    let mut lines = vec![(
        "in flight (client)".to_string(),
        series(rows, |r| Some(r.in_flight as f64)),
    )];
    for (name, f) in [
        (
            "running (server)",
            (|r: &TimelineRow| r.server_running) as Column,
        ),
        ("waiting (server)", |r: &TimelineRow| r.server_waiting),
    ] {
        let s = series(rows, f);
        if !s.is_empty() {
            lines.push((name.to_string(), s));
        }
    }
    let c = Chart::time_series(&lines)
        .id("concurrency-over-time")
        .title("Requests in flight over time")
        .x_axis("time since the run started", Unit::S)
        .y_axis("requests", Unit::Plain);
    Some((
        with_phase_markers(c, rows),
        "Requests the client had open at the end of each second, and, when the server exposes \
         them, the requests it was running and the ones waiting in its queue. A waiting count \
         that keeps growing is saturation."
            .into(),
    ))
}

/// A column of the per-second timeline.
type Column = fn(&TimelineRow) -> Option<f64>;

/// One telemetry column over time, when any second has it.
fn telemetry_chart(
    r: &RunReport,
    id: &str,
    title: &str,
    y: (&str, Unit),
    lines: &[(&str, Column)],
    caption: &str,
) -> Option<Fig> {
    let rows = &r.timeseries;
    let data: Vec<(String, Vec<(f64, f64)>)> = lines
        .iter()
        .map(|(n, f)| (n.to_string(), series(rows, f)))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    // A series that stayed at zero (no preemption at all) says nothing a table does not.
    if data.iter().all(|(_, s)| s.iter().all(|&(_, v)| v == 0.0)) {
        return None;
    }
    let c = Chart::time_series(&data)
        .id(id)
        .title(title)
        .x_axis("time since the run started", Unit::S)
        .y_axis(y.0, y.1);
    Some((with_phase_markers(c, rows), caption.to_string()))
}

/// The telemetry series the run has: KV cache, preemptions, GPUs, the generator's CPU.
pub fn telemetry(r: &RunReport) -> Vec<Fig> {
    let pct = |f: Column| f;
    [
        telemetry_chart(
            r,
            "kv-cache-over-time",
            "KV cache usage over time (server metrics)",
            ("KV cache in use", Unit::Percent),
            &[(
                "KV cache usage",
                pct(|r| r.server_kv_cache_usage.map(|v| v * 100.0)),
            )],
            "How full the server's KV cache was. Near 100 % the server must queue or preempt \
             requests (draft 5.8).",
        ),
        telemetry_chart(
            r,
            "preemptions-over-time",
            "Preemptions over time (server metrics)",
            ("preemptions per second", Unit::Plain),
            &[("preemptions", |r| r.server_preemptions)],
            "Requests the server evicted and had to recompute, per second; any at all cost the \
             affected users a pause.",
        ),
        telemetry_chart(
            r,
            "gpu-util-over-time",
            "GPU utilisation over time",
            ("utilisation, mean over GPUs", Unit::Percent),
            &[("GPU utilisation", |r| r.gpu_util_pct)],
            "How busy the GPUs were. Low utilisation with high latency points at the host, the \
             network or the scheduler rather than the GPUs.",
        ),
        telemetry_chart(
            r,
            "gpu-power-over-time",
            "GPU power over time",
            ("power, sum over GPUs (W)", Unit::Plain),
            &[("GPU power", |r| r.gpu_power_w)],
            "The GPUs' electrical power; its integral over the measured phase is the energy per \
             token in the telemetry table.",
        ),
        telemetry_chart(
            r,
            "gpu-memory-over-time",
            "GPU memory over time",
            ("memory used, sum over GPUs (MiB)", Unit::Plain),
            &[("GPU memory used", |r| r.gpu_mem_used_mib)],
            "Memory in use on the GPUs.",
        ),
        telemetry_chart(
            r,
            "gpu-temperature-over-time",
            "GPU temperature over time",
            ("hottest GPU (°C)", Unit::Plain),
            &[("GPU temperature", |r| r.gpu_temp_c)],
            "A temperature that climbs to the throttling point explains throughput that sags \
             over a long run.",
        ),
        telemetry_chart(
            r,
            "generator-cpu-over-time",
            "servebench's CPU over time",
            ("cores used by servebench", Unit::Plain),
            &[("servebench process", |r| r.host_cpu_cores)],
            if r.config.target.builtin_simulator {
                "Cores the servebench process used: the load generator and, in this run, the \
                 built-in simulator with it. The generator's own share is in the Load \
                 generator table."
            } else {
                "Cores the load generator used. Near the cores it has, the generator may be \
                 the bottleneck (see Load generator)."
            },
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Share of fluid requests against the decode deadline (Etalon's fluidity-index), on the
/// dense grid of [`RunData`] (the summary's seven deadlines when it has none).
pub fn fluidity_vs_tbt(r: &RunReport, data: &RunData) -> Option<Fig> {
    let f = r.summary.experience.fluidity.as_ref()?;
    let dense = !data.fluid_curve.is_empty();
    let curve = if dense {
        &data.fluid_curve
    } else {
        &f.curve_vs_tbt
    };
    if curve.is_empty() {
        return None;
    }
    let pts: Vec<(f64, f64)> = curve.iter().map(|&(d, s)| (d, s * 100.0)).collect();
    let (lo, hi) = (pts[0].0, pts[pts.len() - 1].0);
    let mut c = Chart::new(
        "fluidity-vs-tbt",
        "Fluid requests against the target time between tokens",
    )
    .series(Series::line(
        &format!("requests with fluidity ≥ {}", f.threshold),
        pts,
    ))
    .x_axis("target time between tokens D_d", Unit::Ms)
    .y_axis("requests fluid", Unit::Percent)
    .y_range(0.0, 100.0)
    .marker(
        Marker::horizontal(
            f.quantile * 100.0,
            &format!("q = {}", Unit::Percent.format(f.quantile * 100.0)),
        )
        .kind(MarkerKind::Slo),
    )
    .marker(Marker::vertical(
        f.tbt_deadline_ms,
        &format!("reported D_d {}", Unit::Ms.format(f.tbt_deadline_ms)),
    ));
    if lo > 0.0 && hi / lo > 20.0 {
        c = c.x_scale(Scale::Log);
    }
    if let Some(FluidRate::Bounded {
        decode_deadline_ms,
        tokens_per_s,
    }) = &r.summary.experience.fluid_token_rate
    {
        c = c.marker(
            Marker::vertical(
                *decode_deadline_ms,
                &format!("fluid rate {}", Unit::TokPerS.format(*tokens_per_s)),
            )
            .kind(MarkerKind::Knee),
        );
    }
    let (used, of) = data.fluid_requests;
    let basis = if !dense {
        "at the summary's seven deadlines".to_string()
    } else if used < of {
        format!("from {used} of the {of} measured requests, evenly spaced")
    } else {
        format!("from all {of} measured requests")
    };
    Some((
        c,
        format!(
            "For each target time between tokens (x), the share of requests that kept up with \
             it (fluidity-index ≥ {}, Etalon), {basis}. Where the curve reaches q, the target is \
             the tightest that most users get: its inverse is the fluid token generation rate \
             (marked when the data bound it).",
            f.threshold
        ),
    ))
}

/// Per-class TTFT and TPOT (draft 5.6, Tables 8–9).
pub fn fairness(r: &RunReport) -> Vec<Fig> {
    let Some(fair) = r.summary.experience.fairness.as_ref() else {
        return Vec::new();
    };
    let names: Vec<&String> = fair.classes.keys().collect();
    let get = |f: fn(&crate::metrics::fairness::ClassStats) -> Option<f64>| -> Vec<f64> {
        fair.classes
            .values()
            .map(|c| f(c).unwrap_or(f64::NAN))
            .collect()
    };
    let ttft = Chart::grouped_bars(
        "TTFT",
        &names,
        &[
            ("P50", get(|c| c.ttft_p50_ms)),
            ("P99", get(|c| c.ttft_p99_ms)),
        ],
    )
    .id("fairness-ttft")
    .title(&format!(
        "TTFT per request class (Jain's index {:.3})",
        fair.jain_index
    ))
    .y_axis("time to first token", Unit::Ms);
    let tpot = Chart::grouped_bars(
        "TPOT",
        &names,
        &[
            ("P50", get(|c| c.tpot_p50_ms)),
            ("P99", get(|c| c.tpot_p99_ms)),
        ],
    )
    .id("fairness-tpot")
    .title("Time per output token per request class")
    .y_axis("time per output token", Unit::Ms);
    vec![
        (
            ttft,
            "Each class's median and P99 TTFT side by side. Classes served alike have bars of \
             about equal height; a class whose P99 towers over the others is starved under \
             this mix (Jain's index below 0.9 is significant unfairness, draft 5.6)."
                .into(),
        ),
        (
            tpot,
            "Each class's median and P99 time per output token: whether some classes stream \
             more slowly once started."
                .into(),
        ),
    ]
}
