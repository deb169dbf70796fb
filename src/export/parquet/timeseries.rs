//! `timeseries.parquet`: the run's timeline, one row per second (`timeseries.csv`'s
//! columns, from `run.json`'s `timeseries`), with the second's start as an instant so it
//! joins the requests and chunks on time.

use super::table::{nullable, required, Column, Kind, Table};
use crate::telemetry::timeline::TimelineRow;
use std::io::Write;

/// Rows per row group: a day of seconds.
pub const ROWS_PER_GROUP: usize = 86_400;

/// The columns of `timeseries.parquet`, in order.
pub const COLUMNS: &[Column] = &[
    required(
        "at_us",
        Kind::Time,
        "µs since the epoch",
        "The start of the second",
    ),
    required(
        "t_s",
        Kind::Int,
        "s",
        "The start of the second, since the run started",
    ),
    required(
        "phase",
        Kind::Text,
        "",
        "The phase most requests in flight belonged to (`idle`: none)",
    ),
    required("sends", Kind::Int, "", "Requests sent in the second"),
    required(
        "completions",
        Kind::Int,
        "",
        "Requests that ended in success in the second",
    ),
    required(
        "failures",
        Kind::Int,
        "",
        "Requests that failed in the second",
    ),
    required(
        "in_flight",
        Kind::Int,
        "",
        "Requests in flight at the end of the second",
    ),
    required(
        "output_tokens",
        Kind::Int,
        "tokens",
        "Output tokens (reasoning included) received in the second",
    ),
    nullable(
        "ttft_p50_ms",
        Kind::Float,
        "ms",
        "Median TTFT of the requests sent in the second that got an answer",
    ),
    nullable(
        "server_running",
        Kind::Float,
        "",
        "The server's running requests (its metrics)",
    ),
    nullable(
        "server_waiting",
        Kind::Float,
        "",
        "The server's queued requests",
    ),
    nullable(
        "server_kv_cache_usage",
        Kind::Float,
        "0–1",
        "The server's KV cache in use",
    ),
    nullable(
        "server_generation_tokens_per_s",
        Kind::Float,
        "tokens/s",
        "Tokens the server says it generated",
    ),
    nullable(
        "server_preemptions",
        Kind::Float,
        "",
        "Preemptions in the second",
    ),
    nullable(
        "gpu_util_pct",
        Kind::Float,
        "%",
        "Mean utilisation over GPUs",
    ),
    nullable("gpu_power_w", Kind::Float, "W", "Power, summed over GPUs"),
    nullable(
        "gpu_mem_used_mib",
        Kind::Float,
        "MiB",
        "Memory used, summed over GPUs",
    ),
    nullable("gpu_temp_c", Kind::Float, "°C", "The hottest GPU"),
    nullable(
        "host_cpu_cores",
        Kind::Float,
        "cores",
        "Cores the generator process used",
    ),
    nullable(
        "host_rss_mib",
        Kind::Float,
        "MiB",
        "The generator's resident memory",
    ),
];

/// Writes `rows` (second 0 starting at `started_at_us`) as `timeseries.parquet` to `out`;
/// the rows written and the output.
pub fn write<W: Write + Send>(
    out: W,
    rows: &[TimelineRow],
    started_at_us: u64,
) -> parquet::errors::Result<(u64, W)> {
    let mut table = Table::new(out, COLUMNS, ROWS_PER_GROUP, "timeseries")?;
    for row in rows {
        table.push(|r| {
            r.time(Some(started_at_us.saturating_add(row.t_s * 1_000_000)))
                .count(row.t_s)
                .text(Some(&row.phase))
                .count(row.sends)
                .count(row.completions)
                .count(row.failures)
                .count(row.in_flight)
                .count(row.output_tokens)
                .float(row.ttft_p50_ms)
                .float(row.server_running)
                .float(row.server_waiting)
                .float(row.server_kv_cache_usage)
                .float(row.server_generation_tokens_per_s)
                .float(row.server_preemptions)
                .float(row.gpu_util_pct)
                .float(row.gpu_power_w)
                .float(row.gpu_mem_used_mib)
                .float(row.gpu_temp_c)
                .float(row.host_cpu_cores)
                .float(row.host_rss_mib);
        })?;
    }
    table.finish()
}
