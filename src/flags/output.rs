//! The output and telemetry groups of `run`'s flags: what is sampled beside the run, where
//! results go and how the run reports itself.

use super::*;

/// Server metrics, GPUs and energy beside the run.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Telemetry")]
pub struct TelemetryArgs {
    /// The server's Prometheus endpoint, scraped once a second (default: {server root}/metrics
    /// when it answers; vLLM, SGLang, TGI, llama.cpp with --metrics, TensorRT-LLM).
    #[arg(long)]
    pub metrics_url: Option<String>,
    /// Do not scrape the server's metrics.
    #[arg(long, conflicts_with = "metrics_url")]
    pub no_server_metrics: bool,
    /// A DCGM exporter's Prometheus endpoint for GPU figures (default: NVML on this machine,
    /// when its driver is installed).
    #[arg(long)]
    pub gpu_metrics_url: Option<String>,
    /// Do not measure GPUs.
    #[arg(long, conflicts_with = "gpu_metrics_url")]
    pub no_gpu_metrics: bool,
    /// Seconds of GPU power sampled before the run to know the idle draw.
    #[arg(long, default_value_t = 3.0)]
    pub idle_power_s: f64,
    /// After the run, export one OpenTelemetry span per request (its chunks' arrivals as
    /// events) to this OTLP/HTTP collector, e.g. http://127.0.0.1:4318 (POST
    /// {url}/v1/traces, JSON). Default: none.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

/// Where results go and how the run reports itself.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Run folder (default runs/<date>-<time>-<id>, never an existing one). An existing,
    /// non-empty folder is refused unless --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the contents of an existing --out folder.
    #[arg(long)]
    pub force: bool,
    /// Print every table after the short report (they are always in run.json).
    #[arg(long)]
    pub detail: bool,
    /// After the run, also write it as Parquet files into the run folder, for pandas,
    /// Polars or DuckDB: requests.parquet (a row per request), chunks.parquet (a row per
    /// streamed chunk) and timeseries.parquet (a row per second); docs/parquet.md lists
    /// the columns. Default: off (`servebench export DIR --format parquet` writes them
    /// later).
    #[arg(long)]
    pub parquet: bool,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// In a terminal, show a one-line progress bar instead of the live view (in flight,
    /// rates, tokens/s, TTFT and ITL over the last 10 s, failures by kind, the server's
    /// queue). Outside a terminal progress is always plain lines.
    #[arg(long)]
    pub no_live_view: bool,
    /// Worker threads of the client (default: all cores).
    #[arg(long)]
    pub client_threads: Option<usize>,
    /// Which clock timestamps chunk arrivals: kernel (the kernel's receive timestamp, where
    /// the OS gives one) or read (when the read returned).
    #[arg(long, value_enum, default_value = "kernel")]
    pub arrival_clock: crate::client::ArrivalClock,
    /// Open a new TCP (and TLS) connection for every request instead of reusing kept-alive
    /// ones, as real clients do (measures a server's connection handling; at hundreds of
    /// requests per second the client's ephemeral ports may run out).
    #[arg(long)]
    pub new_connection_per_request: bool,
    /// Requests kept in memory for an exact summary. Past this many, the run keeps none:
    /// each is summarised as it is written (counts exact, percentiles within 0.4 %, charts
    /// from a seeded sample of 2,000), so memory stays flat however long the run. Test
    /// levels always keep every request.
    #[arg(long, default_value_t = crate::store::kept::DEFAULT_EXACT_SUMMARY_LIMIT, value_name = "REQUESTS")]
    pub exact_summary_limit: usize,
    /// Memory the records kept for an exact summary may take (e.g. 256MiB, 1GiB): long
    /// answers hold a few dozen bytes per streamed chunk, so 20,000 answers of 4,096
    /// tokens would hold gigabytes below --exact-summary-limit. Reached first, it switches
    /// the run to the streamed summary the same way, and the report says which limit did.
    #[arg(long, default_value = "256MiB", value_parser = parse_bytes, value_name = "SIZE")]
    pub memory_budget: u64,
    /// Two-sided confidence of the interval printed beside each percentile (default 95 %;
    /// e.g. 0.99 or 99%): "P99 870 ms (≥ 620)" reads "the true P99 is at least 620 ms, 95 %
    /// sure".
    #[arg(long, value_parser = parse_confidence, value_name = "LEVEL")]
    pub confidence: Option<f64>,
    /// Label the run in the history (repeatable), e.g. `--label baseline`.
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
    /// The history database the finished run is indexed in (default:
    /// $XDG_DATA_HOME/servebench/history.db, else ~/.local/share/servebench/history.db).
    #[arg(long, env = "SERVEBENCH_STORE", value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Do not index the run in the history database.
    #[arg(long, conflicts_with = "labels")]
    pub no_store: bool,
}

/// A confidence level: a share strictly between 0.5 and 1 (`0.95`) or a percentage (`95%`,
/// `95`), read by [`super::parse_share`]; a bare number above 1 reads as a percentage here,
/// since no confidence is above 100 %.
pub fn parse_confidence(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let bare_percent = !t.ends_with('%') && t.parse::<f64>().is_ok_and(|v| v > 1.0);
    let share = if bare_percent {
        super::parse_share(&format!("{t}%"))
    } else {
        super::parse_share(t)
    };
    match share {
        Ok(v) if v > 0.5 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a confidence level between 50 % and 100 %: give e.g. 0.95 or 99%"
        )),
    }
}

/// A size in bytes: a number with an optional unit (B, KB, MB, GB, KiB, MiB, GiB).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (number, unit) = (t[..split].trim(), t[split..].trim());
    let value: f64 = number.parse().map_err(|_| {
        format!("`{s}` is not a size: give a number and a unit, e.g. 256MiB or 1GiB")
    })?;
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "`{s}`: unknown unit `{unit}` (use B, KB, MB, GB, KiB, MiB or GiB)"
            ))
        }
    };
    let bytes = value * scale;
    if !(bytes.is_finite() && bytes >= 1.0) {
        return Err(format!("`{s}`: the size must be at least one byte"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn confidence_levels_parse_as_shares_or_percentages() {
        use super::parse_confidence;
        assert_eq!(parse_confidence("0.95"), Ok(0.95));
        assert_eq!(parse_confidence("99%"), Ok(0.99));
        assert_eq!(parse_confidence("90"), Ok(0.9));
        for bad in ["0.4", "100%", "1", "x", "-0.9"] {
            assert!(parse_confidence(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_parse_with_their_units() {
        use super::parse_bytes;
        assert_eq!(parse_bytes("256MiB"), Ok(256 << 20));
        assert_eq!(parse_bytes("1 GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("1.5KB"), Ok(1500));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("12 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_bytes("lots").is_err());
    }
}
