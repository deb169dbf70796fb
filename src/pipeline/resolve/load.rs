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

/// The closed loop's default streams sized to the server, when neither `--concurrency` nor
/// `--rate` was given: the server's own slot count when it says one below the default
/// (llama.cpp's `/props`, SGLang's `/get_server_info`), since 32 streams on 4 slots measure
/// 28 requests waiting in its queue (a 10 s run against such a server once sent 6 measured
/// requests and completed none). Where the server does not say but its test request showed
/// it serves fewer than half the default at once, the load stays and a loud hint says so.
/// Returns the line to print, if any.
pub fn size_to_server(
    load: &mut LoadPattern,
    given: bool,
    slots: Option<u32>,
    speed: Option<&crate::record::speed::Speed>,
) -> Option<String> {
    let LoadPattern::Closed { concurrency } = load else {
        return None;
    };
    if given {
        return None;
    }
    match slots {
        Some(n) if n < *concurrency => {
            let line = format!(
                "concurrency {n}: the server serves {n} requests at once (its own report), so the default {concurrency} streams would mostly measure its queue; --concurrency N chooses"
            );
            *concurrency = n;
            Some(line)
        }
        Some(_) => None,
        None => {
            let s = speed?;
            let together = s.served_together;
            let all_at_once = together >= 0.75 * f64::from(s.sent_together.max(1));
            (!all_at_once && s.sent_together > 1 && together < 0.5 * f64::from(*concurrency)).then(|| format!(
                "warning: the server served about {together:.0} of {} test requests at once; {concurrency} streams will mostly wait in its queue (TTFT will be queueing). --concurrency {} measures it at its own parallelism",
                s.sent_together,
                together.round().max(1.0)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::speed::Speed;

    /// Issue 36, item 4: the default 32 streams against llama.cpp's 4 slots.
    #[test]
    fn the_default_load_follows_the_servers_slots() {
        let mut load = LoadPattern::Closed { concurrency: 32 };
        let line = size_to_server(&mut load, false, Some(4), None).unwrap();
        assert_eq!(load, LoadPattern::Closed { concurrency: 4 });
        assert!(
            line.starts_with("concurrency 4: the server serves 4"),
            "{line}"
        );
        // Given by the user, or a server of more slots: left alone.
        let mut given = LoadPattern::Closed { concurrency: 32 };
        assert_eq!(size_to_server(&mut given, true, Some(4), None), None);
        assert_eq!(given, LoadPattern::Closed { concurrency: 32 });
        let mut big = LoadPattern::Closed { concurrency: 32 };
        assert_eq!(size_to_server(&mut big, false, Some(256), None), None);
        assert_eq!(big, LoadPattern::Closed { concurrency: 32 });
        // No slot count, but 3.2 of 8 test requests served at once: a hint, load kept.
        let speed = Speed {
            ttft_ms: 100.0,
            ms_per_token: 20.0,
            served_together: 3.2,
            sent_together: 8,
            closes_connections: false,
        };
        let mut hinted = LoadPattern::Closed { concurrency: 32 };
        let line = size_to_server(&mut hinted, false, None, Some(&speed)).unwrap();
        assert_eq!(hinted, LoadPattern::Closed { concurrency: 32 });
        assert!(
            line.contains("about 3 of 8") && line.contains("--concurrency 3"),
            "{line}"
        );
        let batching = Speed {
            served_together: 7.9,
            ..speed
        };
        assert_eq!(
            size_to_server(&mut hinted, false, None, Some(&batching)),
            None
        );
    }
}
