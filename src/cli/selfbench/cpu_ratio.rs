//! servebench's CPU per chunk against a bare reference client's on the same load, measured
//! in alternating pairs on the same machine so both meet the same neighbours.

use super::bare_client;
use super::closed_run_on;
use crate::flags::SelfbenchArgs;
use crate::record::run::GeneratorReport;
use crate::sim::{SimConfig, SimServer};
use anyhow::Result;

/// servebench's CPU per chunk against the bare reference client's, on the same load:
/// `bare_pairs` pairs of runs of `bare_requests_per_stream` requests a stream, one right
/// after the other so both meet the same machine (servebench first in the 1st, 3rd, …
/// pair as printed, the bare client first in the others); the median of the pairs'
/// ratios. Two ratios: the whole generator (request preparation on the feeder
/// thread and the record writer included), and its runtime threads alone, which do what
/// the bare client does (send, read, frame) plus what measuring adds (timestamps, parsing,
/// records).
pub(super) fn cpu_against_bare(streams: u32, args: &SelfbenchArgs) {
    let (mut whole, mut runtime) = (Vec::new(), Vec::new());
    let per_stream = args.bare_requests_per_stream.max(1);
    println!(
        "  CPU against a bare client: {} pairs of runs of {} requests each",
        args.bare_pairs,
        streams * per_stream
    );
    let mut helpers = Vec::new();
    for pair in 0..args.bare_pairs {
        let ours = || {
            closed_run_on(
                SimConfig::fixed(0.0, 1.0),
                streams,
                per_stream,
                args,
                "tput-pair",
                "kernel",
                "chat",
            )
            .map(|(_, report, truth)| CpuPerChunk::of(&report, &truth, args.client_threads))
        };
        let theirs = || bare_cpu_per_chunk(SimConfig::fixed(0.0, 1.0), streams, per_stream, args);
        // Every other pair runs the bare client first, so a machine that drifts during
        // the benchmark does not always favour the same client.
        let bare = if pair % 2 == 0 {
            ours().and_then(|o| theirs().map(|b| (o, b)))
        } else {
            theirs().and_then(|b| ours().map(|o| (o, b)))
        };
        match bare {
            Ok((ours, bare)) => {
                println!(
                    "  pair {}: bare tokio + hyper client {bare:.1} µs CPU per chunk; servebench {:.1} µs in all ({:.2}x), {:.1} µs on its runtime threads ({:.2}x)",
                    pair + 1,
                    ours.whole_us,
                    ours.whole_us / bare,
                    ours.runtime_us,
                    ours.runtime_us / bare,
                );
                whole.push(ours.whole_us / bare);
                runtime.push(ours.runtime_us / bare);
                helpers.push(1.0 - ours.runtime_us / ours.whole_us);
            }
            Err(e) => println!("  bare client comparison failed: {e:#}"),
        }
    }
    if let (Some(w), Some(r)) = (median_and_range(&mut whole), median_and_range(&mut runtime)) {
        println!(
            "  servebench costs {:.2}x the bare client in all, {:.2}x on its runtime threads (medians of {} pairs; ranges {:.2}-{:.2}, {:.2}-{:.2})",
            w.0,
            r.0,
            whole.len(),
            w.1,
            w.2,
            r.1,
            r.2
        );
    }
    // Measured inside each servebench run, so the machine's drift between runs cancels.
    if let Some(h) = median_and_range(&mut helpers) {
        println!(
            "  the feeder and the record writer take {:.1} % of servebench's CPU (median; range {:.1}-{:.1} %)",
            h.0 * 100.0,
            h.1 * 100.0,
            h.2 * 100.0
        );
    }
}

/// The median, least and greatest of `v` (sorted in place); None when empty.
fn median_and_range(v: &mut [f64]) -> Option<(f64, f64, f64)> {
    v.sort_by(f64::total_cmp);
    Some((*v.get(v.len() / 2)?, v[0], v[v.len() - 1]))
}

/// A run's client CPU per chunk the server wrote, µs.
#[derive(Debug, Clone, Copy)]
pub(super) struct CpuPerChunk {
    /// Every generator thread: runtime, feeder, record writer.
    pub whole_us: f64,
    /// The runtime threads that send and read.
    pub runtime_us: f64,
}

impl CpuPerChunk {
    pub fn of(report: &GeneratorReport, truth: &[crate::sim::TruthRecord], threads: usize) -> Self {
        let written_chunks = truth
            .iter()
            .map(|t| t.chunk_writes.len())
            .sum::<usize>()
            .max(1);
        // The report gives the runtime threads as a busy share of their wall time.
        let wall_seconds = report.cpu_seconds / report.cpu_cores_used.max(1e-12);
        let runtime_seconds = report.timestamps.client_busy_share.unwrap_or(f64::NAN)
            * wall_seconds
            * threads.max(1) as f64;
        Self {
            whole_us: report.cpu_seconds * 1e6 / written_chunks as f64,
            runtime_us: runtime_seconds * 1e6 / written_chunks as f64,
        }
    }
}

/// The same closed-loop load as [`throughput`] sent by the bare reference client against a
/// fresh simulator; returns its CPU per chunk written by the server, µs.
fn bare_cpu_per_chunk(
    cfg: SimConfig,
    streams: u32,
    requests_per_stream: u32,
    args: &SelfbenchArgs,
) -> Result<f64> {
    let sim = SimServer::spawn(cfg, 0)?;
    let addr = sim.addr().to_string();
    let body = serde_json::json!({
        "model": "sim",
        "messages": [{"role": "user", "content": "selfbench reference request"}],
        "max_tokens": args.output_tokens,
        "ignore_eos": true,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let load = bare_client::BareLoad {
        addr: &addr,
        path: "/v1/chat/completions",
        body: serde_json::to_vec(&body)?,
        streams,
        requests_per_stream,
        threads: args.client_threads,
    };
    let result = bare_client::run(&load)?;
    let truth = sim.truth().wait_for(
        (streams * load.requests_per_stream) as usize,
        std::time::Duration::from_secs(10),
    );
    let chunks: usize = truth.iter().map(|t| t.chunk_writes.len()).sum();
    anyhow::ensure!(
        chunks > 0 && result.events > 0,
        "the bare client received nothing"
    );
    println!(
        "  bare client drove {:.0} chunks/s",
        chunks as f64 / result.wall_seconds.max(1e-9)
    );
    Ok(result.cpu_seconds * 1e6 / chunks as f64)
}
