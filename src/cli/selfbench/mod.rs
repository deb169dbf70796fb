//! `servebench selfbench`: how accurate and how cheap is the client itself?
//!
//! Runs the client against the simulator, whose ground truth says when each chunk was
//! written, and reports: arrival − write per chunk, server receipt − `sent_at`, client CPU
//! per chunk, reported vs sent throughput, and open-loop schedule fidelity. A benchmark, not
//! a test: the numbers depend on the machine. Compare ratios within one run.

mod bare_client;
mod cpu_ratio;
mod summary_speed;

use crate::flags::{Cli, Command, SelfbenchArgs};
use crate::metrics::generator::judge;
use crate::metrics::{summarize, SummaryParams};
use crate::pipeline::resolve::resolve;
use crate::record::run::GeneratorReport;
use crate::record::run::ServerInfo;
use crate::record::RequestRecord;
use crate::runner::{self, RunOutput};
use crate::sim::{SimConfig, SimServer};
use crate::stats::Distribution;
use anyhow::{Context, Result};
use clap::Parser;
use cpu_ratio::{cpu_against_bare, CpuPerChunk};
use std::collections::HashMap;

fn config_for(
    url: &str,
    extra: &[String],
    out: &std::path::Path,
    threads: usize,
) -> Result<crate::config::RunConfig> {
    let mut argv: Vec<String> = [
        "servebench",
        "run",
        "--url",
        url,
        "--quiet",
        "--warmup",
        "none",
        "--no-fluidity",
        "--force",
        "--model",
        "sim",
        "--out",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.push(out.display().to_string());
    argv.push("--client-threads".into());
    argv.push(threads.to_string());
    argv.extend(extra.iter().cloned());
    let cli = Cli::try_parse_from(argv)?;
    let Command::Run(args) = cli.command else {
        unreachable!()
    };
    Ok(resolve(&args.run, url, false)?.config)
}

fn line(name: &str, d: Option<Distribution>, unit: &str) {
    match d {
        Some(d) => println!(
            "  {name:<34} n={:<8} p50={:>9.1} p99={:>9.1} p99.9={:>9.1} max={:>9.1} {unit}",
            d.n, d.p50, d.p99, d.p999, d.max
        ),
        None => println!("  {name:<34} (no samples)"),
    }
}

/// Runs `cfg` and judges the generator.
fn run_judged(cfg: &crate::config::RunConfig) -> Result<(RunOutput, GeneratorReport)> {
    let out = runner::run(cfg, crate::tokenizer::reference(), &ServerInfo::default())?;
    let measured: Vec<&RequestRecord> = out.records.iter().collect();
    let report = judge(&measured, &out.generator);
    Ok((out, report))
}

/// A closed-loop run of `streams` streams, two requests each, against a simulator with
/// `cfg`; returns the records, the generator's report and the simulator's ground truth.
fn closed_run(
    cfg: SimConfig,
    streams: u32,
    args: &SelfbenchArgs,
    tag: &str,
    clock: &str,
) -> Result<(RunOutput, GeneratorReport, Vec<crate::sim::TruthRecord>)> {
    closed_run_on(cfg, streams, 2, args, tag, clock, "chat")
}

/// [`closed_run`] through `endpoint`.
fn closed_run_on(
    cfg: SimConfig,
    streams: u32,
    requests_per_stream: u32,
    args: &SelfbenchArgs,
    tag: &str,
    clock: &str,
    endpoint: &str,
) -> Result<(RunOutput, GeneratorReport, Vec<crate::sim::TruthRecord>)> {
    let sim = SimServer::spawn(cfg, 0)?;
    let dir = std::env::temp_dir().join(format!("servebench-selfbench-{tag}-{streams}"));
    let url = match endpoint {
        "grpc" => sim.grpc_url(),
        _ => sim.base_url(),
    };
    let extra: Vec<String> = vec![
        "--endpoint".into(),
        endpoint.into(),
        // gRPC: the inputs that carry ignore_eos, so lengths are exact as on the others.
        "--grpc-backend".into(),
        "vllm".into(),
        "--concurrency".into(),
        streams.to_string(),
        "--requests".into(),
        (streams * requests_per_stream).to_string(),
        "--input-tokens".into(),
        "16".into(),
        "--output-tokens".into(),
        args.output_tokens.to_string(),
        "--arrival-clock".into(),
        clock.into(),
    ];
    let run_cfg = config_for(&url, &extra, &dir, args.client_threads)?;
    let (out, report) = run_judged(&run_cfg)?;
    let truth = sim
        .truth()
        .wait_for(out.records.len(), std::time::Duration::from_secs(10));
    Ok((out, report, truth))
}

/// Accuracy at `streams` concurrent streams: TTFT 100 ms, ITL 20 ms (server writes logged),
/// once with each arrival clock, side by side.
fn accuracy(streams: u32, args: &SelfbenchArgs) -> Result<()> {
    println!(
        "accuracy, {streams} streams (TTFT 100 ms, ITL 20 ms, {} tokens each):",
        args.output_tokens
    );
    for clock in ["kernel", "read"] {
        let (out, report, truth) =
            closed_run(SimConfig::fixed(100.0, 20.0), streams, args, "acc", clock)?;
        let truth: HashMap<String, _> = truth
            .into_iter()
            .map(|t| (t.response_id.clone(), t))
            .collect();
        let (mut lag_us, mut send_us) = (Vec::new(), Vec::new());
        for r in &out.records {
            let Some(t) = r.response_id.as_ref().and_then(|id| truth.get(id)) else {
                continue;
            };
            if let Some(sent) = r.sent_at {
                send_us.push((out.clock.offset_of(t.received) as f64 - sent as f64) / 1e3);
            }
            for (c, (w, _)) in r.chunks.iter().zip(&t.chunk_writes) {
                lag_us.push((c.at as f64 - out.clock.offset_of(*w) as f64) / 1e3);
            }
        }
        println!(
            "  arrival clock {clock} (run used: {}):",
            report.arrival_clock
        );
        line(
            "chunk arrival - server write",
            Distribution::of(&mut lag_us),
            "µs",
        );
        line(
            "server receipt - sent_at",
            Distribution::of(&mut send_us),
            "µs",
        );
        println!(
            "    generator: {:.2} cores, {}, kept_up={}",
            report.cpu_cores_used,
            report
                .cpu_us_per_chunk
                .map(|v| format!("{v:.1} µs CPU per chunk"))
                .unwrap_or_else(|| "no per-chunk CPU figure".into()),
            report.kept_up
        );
        client_figures(&out, &report);
    }
    Ok(())
}

/// The generator's own limits as the run report gives them: connections and reuse, chunks
/// that shared a read, socket wait, busy share, and memory per request.
fn client_figures(out: &RunOutput, report: &GeneratorReport) {
    let c = &report.connections;
    let t = &report.timestamps;
    let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.3} ms", v));
    println!(
        "    connections: {} opened while measuring ({:.1}/s), reuse {}; {} of {} chunks shared a read ({:.2} %); socket wait p50 {} p99 {}; reading threads busy {}",
        c.opened,
        c.opened_per_s,
        c.reuse_share
            .map_or("-".to_owned(), |r| format!("{:.1} %", r * 100.0)),
        t.shared_read_chunks,
        t.chunks,
        100.0 * t.shared_read_chunks as f64 / t.chunks.max(1) as f64,
        ms(t.socket_wait_p50_ms),
        ms(t.socket_wait_p99_ms),
        t.client_busy_share
            .map_or("-".to_owned(), |b| format!("{:.0} %", b * 100.0)),
    );
    if let Some(rss) = peak_rss_kib() {
        println!(
            "    memory: process peak RSS {:.1} MiB after {} requests",
            rss as f64 / 1024.0,
            out.records.len()
        );
    }
}

/// The process's peak resident set (`VmHWM`), KiB (Linux).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Throughput: `streams` streams of one token per ms against a one-thread server, either with
/// fixed timing or through the engine model (`fast` preset: 1 ms steps).
fn throughput(streams: u32, args: &SelfbenchArgs, engine_model: bool) -> Result<()> {
    let cfg = if engine_model {
        SimConfig::preset("fast")?
    } else {
        SimConfig::fixed(0.0, 1.0)
    };
    let (out, report, truth) = closed_run(cfg, streams, args, "tput", "kernel")?;
    let summary = summarize(&out.records, &SummaryParams::default());
    let sent_rate = written_tokens_per_s(&truth)?;
    println!(
        "throughput, {streams} streams of 1 token/ms, one-thread server ({}):",
        if engine_model {
            "engine model, preset fast"
        } else {
            "fixed timing"
        }
    );
    // Per chunk the server wrote, whatever the report's own thresholds for quoting it.
    let cpu = CpuPerChunk::of(&report, &truth, args.client_threads);
    let cpu_per_chunk = cpu.whole_us;
    println!(
        "  server wrote {:.0} chunks/s; servebench reported {:.0} tok/s ({:+.2} %); client {:.1} µs CPU per chunk on {:.2} cores; kept_up={}",
        sent_rate,
        summary.output_tokens_per_s,
        (summary.output_tokens_per_s / sent_rate - 1.0) * 100.0,
        cpu_per_chunk,
        report.cpu_cores_used,
        report.kept_up
    );
    client_figures(&out, &report);
    if !engine_model && args.bare_pairs > 0 {
        cpu_against_bare(streams, args);
    }
    Ok(())
}

/// Tokens the simulator wrote per second, from the first request's receipt to the last
/// chunk's write (its own truth, not the client's view).
fn written_tokens_per_s(truth: &[crate::sim::TruthRecord]) -> Result<f64> {
    let tokens: u64 = truth
        .iter()
        .map(|t| t.chunk_writes.iter().map(|w| w.1 as u64).sum::<u64>())
        .sum();
    let first = truth.iter().map(|t| t.received).min().context("no truth")?;
    let last = truth
        .iter()
        .filter_map(|t| t.chunk_writes.last().map(|w| w.0))
        .max()
        .context("no truth")?;
    Ok(tokens as f64 / (last - first).as_secs_f64())
}

/// Chunk arrival − server write, µs, for every chunk matched to the simulator's truth.
fn arrival_lag_us(out: &RunOutput, truth: Vec<crate::sim::TruthRecord>) -> Vec<f64> {
    let truth: HashMap<String, _> = truth
        .into_iter()
        .map(|t| (t.response_id.clone(), t))
        .collect();
    let mut lag_us = Vec::new();
    for r in &out.records {
        let Some(t) = r.response_id.as_ref().and_then(|id| truth.get(id)) else {
            continue;
        };
        for (c, (w, _)) in r.chunks.iter().zip(&t.chunk_writes) {
            lag_us.push((c.at as f64 - out.clock.offset_of(*w) as f64) / 1e3);
        }
    }
    lag_us
}

/// Per API: the same closed-loop load (`--protocol-streams` streams of 1 token every 2 ms,
/// TTFT 20 ms) through each `--endpoint`, so the parsers' cost is compared on equal terms:
/// accuracy (chunk arrival − server write), client CPU per chunk, and reported against
/// written throughput.
fn protocols(args: &SelfbenchArgs) -> Result<()> {
    let streams = args.protocol_streams;
    println!(
        "per API, {streams} streams (TTFT 20 ms, one token every 2 ms, {} tokens each):",
        args.output_tokens
    );
    println!(
        "  {:<12} {:>14} {:>14} {:>16} {:>12} {:>9}",
        "endpoint", "lag p50 µs", "lag p99 µs", "CPU µs/chunk", "tok/s err %", "kept_up"
    );
    for endpoint in &args.protocols {
        // Eight requests per stream: enough CPU time for the kernel's accounting to give a
        // per-chunk figure.
        let (out, report, truth) = closed_run_on(
            SimConfig::fixed(20.0, 2.0),
            streams,
            8,
            args,
            "api",
            "kernel",
            endpoint,
        )?;
        let failed = out.records.iter().filter(|r| !r.outcome.is_ok()).count();
        let summary = summarize(&out.records, &SummaryParams::default());
        let written_rate = written_tokens_per_s(&truth)?;
        let lag = Distribution::of(&mut arrival_lag_us(&out, truth));
        println!(
            "  {:<12} {:>14.1} {:>14.1} {:>16.1} {:>+12.2} {:>9}{}",
            endpoint,
            lag.map_or(f64::NAN, |d| d.p50),
            lag.map_or(f64::NAN, |d| d.p99),
            report.cpu_us_per_chunk.unwrap_or(f64::NAN),
            (summary.output_tokens_per_s / written_rate - 1.0) * 100.0,
            report.kept_up,
            if failed > 0 {
                format!("  ({failed} failed!)")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// The rate (per s) and the coefficient of variation of the gaps between `times` (s).
fn rate_and_cv(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    if gaps.is_empty() {
        return (0.0, 0.0);
    }
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    (1.0 / mean, sd / mean)
}

/// Open loop: Poisson arrivals at `rate` req/s.
fn open_loop(rate: f64, args: &SelfbenchArgs) -> Result<()> {
    let sim = SimServer::spawn(SimConfig::fixed(2.0, 1.0), 0)?;
    let n = (rate * args.open_loop_seconds).round() as u64;
    let dir = std::env::temp_dir().join("servebench-selfbench-open");
    let extra: Vec<String> = [
        "--rate",
        &rate.to_string(),
        "--requests",
        &n.to_string(),
        "--input-tokens",
        "16",
        "--output-tokens",
        "4",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cfg = config_for(&sim.base_url(), &extra, &dir, args.client_threads)?;
    let (out, report) = run_judged(&cfg)?;
    let seconds = |v: Vec<u64>| v.into_iter().map(|t| t as f64 / 1e9).collect::<Vec<f64>>();
    let (achieved, sent_cv) = rate_and_cv(seconds(
        out.records.iter().filter_map(|r| r.sent_at).collect(),
    ));
    let planned = seconds(out.records.iter().filter_map(|r| r.scheduled_at).collect());
    let (plan_rate, planned_cv) = rate_and_cv(planned);
    println!("open loop, Poisson {rate} req/s, {n} requests:");
    println!(
        "  achieved {achieved:.1} req/s ({:+.2} % vs nominal; {:+.3} % vs the seeded plan's own {plan_rate:.1}), inter-arrival CV {sent_cv:.3}",
        (achieved / rate - 1.0) * 100.0,
        (achieved / plan_rate - 1.0) * 100.0,
    );
    // What the server saw (issue 31, item 10): the gaps between the requests' receipts
    // against the planned gaps; a client that bunches its sends reads as a CV above the
    // plan's whatever its own send lag says.
    let received: Vec<f64> = sim
        .truth()
        .wait_for(out.records.len(), std::time::Duration::from_secs(10))
        .iter()
        .map(|t| out.clock.offset_of(t.received) as f64 / 1e9)
        .collect();
    let (server_rate, server_cv) = rate_and_cv(received);
    println!(
        "  the server received {server_rate:.1} req/s, inter-arrival CV {server_cv:.3} (planned {planned_cv:.3})"
    );
    let us = |d: Option<Distribution>| {
        d.map(|d| Distribution {
            p50: d.p50 * 1e3,
            p99: d.p99 * 1e3,
            p999: d.p999 * 1e3,
            max: d.max * 1e3,
            ..d
        })
    };
    line(
        "dispatch lag (started - scheduled)",
        us(report.dispatch_lag_ms),
        "µs",
    );
    line(
        "send lag (sent_at - scheduled)",
        report.send_lag_ms.map(|d| Distribution {
            p50: d.p50 * 1e3,
            p99: d.p99 * 1e3,
            p999: d.p999 * 1e3,
            max: d.max * 1e3,
            ..d
        }),
        "µs",
    );
    Ok(())
}

pub fn selfbench(args: SelfbenchArgs) -> Result<u8> {
    if args.procedures {
        return procedures();
    }
    if args.summary_requests > 0 {
        summary_speed::summary_speed(args.summary_requests, args.summary_tokens)?;
    }
    for &s in args.accuracy_streams.iter().filter(|&&s| s > 0) {
        accuracy(s, &args)?;
    }
    if args.protocol_streams > 0 && !args.protocols.is_empty() {
        protocols(&args)?;
    }
    for &s in args.throughput_streams.iter().filter(|&&s| s > 0) {
        throughput(s, &args, false)?;
        throughput(s, &args, true)?;
    }
    if args.open_loop_rate > 0.0 {
        open_loop(args.open_loop_rate, &args)?;
    }
    Ok(crate::pipeline::exit::OK)
}

/// `--procedures`: the conformance cases, answer against truth, then the slow server's
/// `--quick` tests against their stated times, then the other procedures' readings against
/// their truths, `--quick` and full (`crate::procedure::conformance`).
fn procedures() -> Result<u8> {
    use crate::procedure::conformance::{self as c, SEEDS, TOLERANCE};
    println!(
        "procedure conformance: test throughput, --quick and full durations, on engine models of known capacity, in virtual time; the median of {} seeds within {:.0} % of the analytic capacity",
        SEEDS.len(),
        TOLERANCE * 100.0
    );
    let mut ok = true;
    for (quick, case) in [true, false]
        .into_iter()
        .flat_map(|q| c::cases().into_iter().map(move |c| (q, c)))
    {
        let check = c::check_with(&case, &SEEDS, quick)?;
        let median = check.median_ratio();
        let met = check.conforms();
        ok &= met;
        println!(
            "  {:<7} {:<5} {}: median {} of the truth, the answer's 95 % interval held it in {} of {}, longest test {:.1} min  {}",
            case.name,
            if quick { "quick" } else { "full" },
            case.what,
            median
                .map(|m| format!("{:.1} %", m * 100.0))
                .unwrap_or_else(|| "(no answer)".into()),
            check.intervals_held().0,
            check.intervals_held().1,
            check.longest_s() / 60.0,
            if met { "ok" } else { "MISSED" }
        );
        for line in check.describe().lines() {
            println!("      {line}");
        }
    }
    let slow = c::case("slow").context("the slow case")?;
    println!("the --quick tests on the slow server ({}):", slow.what);
    for (test, minutes) in c::SLOW_SERVER_MINUTES {
        let (finding, bench) = c::run_test(&slow, test, SEEDS[0])?;
        let took = bench.elapsed_s / 60.0;
        let met = finding.answered && took <= minutes;
        ok &= met;
        println!(
            "  {:<10} {:>5.1} min (stated: up to {minutes:.0})  {}  {}",
            test.slug(),
            took,
            if met { "ok" } else { "MISSED" },
            finding.answer
        );
    }
    println!(
        "the other procedures against the engine's own truth, --quick and full durations (seeded answers: the median of {} seeds):",
        SEEDS.len()
    );
    for quick in [true, false] {
        for reading in c::READINGS {
            let check = c::check_reading(reading, reading.seeds(), quick)?;
            let met = check.conforms();
            ok &= met;
            println!(
                "  {:<18} {:<5} {}: median {} (accepted: {}), longest test {:.1} min  {}",
                reading.name(),
                if quick { "quick" } else { "full" },
                reading.what(),
                check.median_text(),
                reading.accept().describe(),
                check.longest_s() / 60.0,
                if met { "ok" } else { "MISSED" }
            );
            for line in check.describe().lines() {
                println!("      {line}");
            }
        }
    }
    ok &= percentile_coverage()?;
    Ok(if ok {
        crate::pipeline::exit::OK
    } else {
        crate::pipeline::exit::FAILED
    })
}

/// The percentiles' intervals against the engine's true percentiles: 1,000 seeded runs of
/// 200 requests in virtual time (`crate::procedure::conformance::coverage`).
fn percentile_coverage() -> Result<bool> {
    use crate::procedure::conformance::coverage;
    let c = coverage::measure(1000, 200, 0.95)?;
    println!(
        "percentile intervals ({:.0} % asked) over {} seeded runs of {} requests at half the skewed case's capacity, against the truth pooled from {} more:",
        c.confidence * 100.0,
        c.runs,
        c.requests_per_run,
        c.runs
    );
    let mut ok = true;
    for (i, (name, truth, rate)) in c.rates.iter().enumerate() {
        // Three standard errors of the nominal rate over this many runs.
        let allowance = 3.0 * (c.confidence * (1.0 - c.confidence) / c.runs as f64).sqrt();
        let met = *rate >= c.confidence - allowance;
        ok &= met;
        println!(
            "  {name:<10} truth {truth:>7.2} ms: covered {:.1} % (open on a side in {:.1} %)  {}",
            rate * 100.0,
            c.open[i] * 100.0,
            if met { "ok" } else { "MISSED" }
        );
    }
    Ok(ok)
}
