//! The terminal report's Notes section (generator, client, server, telemetry, warm-up,
//! warnings), in a file of its own so that `render` reads as its sections and no function
//! runs past 80 lines.

use super::{client_line, fmt_rate, row};
use crate::artifacts::RunReport;
use crate::report::tables;
use std::fmt::Write;

/// Notes: how the generator and the server fared, telemetry, the warm-up and the warnings.
pub(super) fn notes(out: &mut String, r: &RunReport) {
    let _ = writeln!(out, "Notes");
    generator(out, r);
    server_metrics(out, r);
    gpus(out, r);
    warnings(out, r);
}

/// The Generator and Client lines, and the server's completion share of the arrivals.
fn generator(out: &mut String, r: &RunReport) {
    let s = &r.summary;
    let g = &r.generator;
    let gen = if g.kept_up {
        "kept up".to_owned()
    } else {
        format!("DID NOT KEEP UP ({})", g.notes.join("; "))
    };
    row(
        out,
        "Generator",
        &format!(
            "{gen}; {:.2} of {:.0} cores; arrivals timed by {}",
            g.cpu_cores_used,
            g.cpu_cores_available,
            if g.arrival_clock == "kernel_rx" {
                "the kernel's receive timestamps"
            } else {
                "read returns"
            }
        ),
    );
    row(out, "Client", &client_line(g));
    if let Some(b) = s.arrival_balance {
        if let Some(share) = b.completion_share {
            row(
                out,
                "Server",
                &format!(
                    "completed {:.0} % of the arrival rate ({} of {} req/s){}",
                    share * 100.0,
                    fmt_rate(b.completion_rate_per_s),
                    fmt_rate(b.arrival_rate_per_s),
                    if b.saturated {
                        ": SATURATED (draft 5.2.3.1)"
                    } else {
                        ""
                    }
                ),
            );
        }
    }
}

/// The Metrics line: what the server's `/metrics` said, or why there is nothing.
fn server_metrics(out: &mut String, r: &RunReport) {
    let t = &r.telemetry;
    match &t.server {
        Some(sv) if sv.scrapes_ok > 0 => {
            let mut line = format!("/metrics ({}): ", sv.engine);
            match sv.comparison.output_tokens.difference_pct {
                Some(d) => {
                    let _ = write!(line, "generated tokens {d:+.1} % vs the client");
                }
                None => line.push_str("no token counter"),
            }
            if let Some(q) = &sv.queue {
                let _ = write!(
                    line,
                    "; queue {} (mean {:.1}, {:+.2}/s)",
                    if q.growing { "GROWING" } else { "stable" },
                    q.waiting_mean,
                    q.slope_per_s
                );
            }
            if let Some(p) = sv.delta.preemptions.filter(|p| *p > 0.0) {
                let _ = write!(line, "; {p:.0} preemptions");
            }
            row(out, "Metrics", &line);
        }
        _ => row(out, "Metrics", &t.sources.server_metrics),
    }
}

/// The GPUs line: utilisation and energy per token, or why there is nothing.
fn gpus(out: &mut String, r: &RunReport) {
    let t = &r.telemetry;
    match &t.gpu {
        Some(g) => {
            let util: Vec<f64> = g.gpus.iter().filter_map(|x| x.util_mean_pct).collect();
            let mut line = format!(
                "{} GPUs, mean utilisation {:.0} %",
                g.gpus.len(),
                util.iter().sum::<f64>() / util.len().max(1) as f64
            );
            if let (Some(j), Some(tpj)) = (g.joules_per_output_token, g.output_tokens_per_joule) {
                let _ = write!(line, "; {j:.3} J per output token ({tpj:.2} tokens/J)");
            }
            row(out, "GPUs", &line);
        }
        // The reason in brief; the whole of it is in the detailed report.
        None => row(
            out,
            "GPUs",
            t.sources.gpu.split(" (").next().unwrap_or(&t.sources.gpu),
        ),
    }
}

/// The Warm-up line, then the warnings and the user's notes, one `-` line each.
fn warnings(out: &mut String, r: &RunReport) {
    let s = &r.summary;
    row(out, "Warm-up", &tables::warmup_line(&r.warmup));
    // Few-sample warnings share one line: they say the same thing about several figures.
    let few: Vec<String> = s
        .warnings
        .iter()
        .filter_map(|w| match w {
            crate::metrics::warnings::Warning::FewSamples {
                metric, percentile, ..
            } => Some(format!("{metric} {percentile}")),
            _ => None,
        })
        .collect();
    if !few.is_empty() {
        row(
            out,
            "-",
            &format!(
                "{} from fewer samples than the draft requires (5.1.4.3): indicative",
                few.join(", ")
            ),
        );
    }
    for w in s
        .warnings
        .iter()
        .filter(|w| !matches!(w, crate::metrics::warnings::Warning::FewSamples { .. }))
    {
        row(out, "-", &w.short());
    }
    for n in &r.system.notes {
        row(out, "-", n);
    }
}
