//! The load group of flags: a closed loop of N streams, an open loop (Poisson, constant or
//! gamma arrivals at a rate), or a trace's own timestamps; and the open loop's cap on
//! requests in flight.

use crate::flags::{ArrivalArg, LoadArgs};
use crate::schedule::{Arrival, LoadPattern};
use crate::workload::datasets::Dataset;
use anyhow::{bail, Result};

/// How load is offered. `dataset`: the trace `--arrival trace` replays; `builtin`: the
/// built-in simulator's default number of streams.
pub(crate) fn load(l: &LoadArgs, dataset: Option<&Dataset>, builtin: bool) -> Result<LoadPattern> {
    let load = match (l.concurrency, l.rate) {
        _ if l.arrival == ArrivalArg::Trace => {
            if !matches!(dataset, Some(Dataset::Trace(_))) {
                bail!("--arrival trace replays a trace's timestamps: pass --dataset FILE in trace format (one {{\"timestamp\", \"input_length\", \"output_length\"}} per line)");
            }
            if !(l.speed > 0.0 && l.speed.is_finite()) {
                bail!("--speed must be a positive factor");
            }
            LoadPattern::Trace { speed: l.speed }
        }
        (_, Some(rate)) => {
            if !(rate > 0.0 && rate.is_finite()) {
                bail!(
                    "--rate must be a positive number of requests per second (0.5 = one every 2 s)"
                );
            }
            let arrival = match l.arrival {
                ArrivalArg::Poisson => Arrival::Poisson,
                ArrivalArg::Constant => Arrival::Constant,
                ArrivalArg::Trace => unreachable!("handled above"),
                ArrivalArg::Gamma => {
                    if !(l.burstiness > 0.0 && l.burstiness.is_finite()) {
                        bail!("--burstiness must be positive (1 = Poisson-like)");
                    }
                    Arrival::Gamma { cv: l.burstiness }
                }
            };
            LoadPattern::Open {
                rate_per_s: rate,
                arrival,
            }
        }
        (Some(0), None) => bail!("--concurrency must be at least 1"),
        // The built-in simulator's demo uses 64 streams so the default run ends within a minute.
        (c, None) => LoadPattern::Closed {
            concurrency: c.unwrap_or(if builtin { 64 } else { 32 }),
        },
    };
    if l.max_concurrency == Some(0) {
        bail!("--max-concurrency must be at least 1");
    }
    Ok(load)
}
