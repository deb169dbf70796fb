//! The output and telemetry groups of flags: what is sampled beside the run (the server's
//! metrics, GPUs), the client's threads, and the command line as the run records it, with
//! credentials redacted.

use crate::client::BaseUrl;
use crate::flags::{OutputArgs, TelemetryArgs};
use anyhow::{Context, Result};

/// What the telemetry thread samples; `url` is the target's (the server's metrics default to
/// `/metrics` at its root).
pub(crate) fn telemetry(
    tl: &TelemetryArgs,
    url: &BaseUrl,
) -> Result<crate::telemetry::TelemetryConfig> {
    let mut tc = crate::telemetry::TelemetryConfig::default_for(url);
    if tl.no_server_metrics {
        tc.metrics_url = None;
    } else if let Some(u) = &tl.metrics_url {
        BaseUrl::parse(u).context("--metrics-url")?;
        tc.metrics_url = Some(u.clone());
        tc.metrics_url_given = true;
    }
    tc.gpu = match (&tl.gpu_metrics_url, tl.no_gpu_metrics) {
        (_, true) => crate::telemetry::collector::GpuSource::Off,
        (Some(u), _) => {
            BaseUrl::parse(u).context("--gpu-metrics-url")?;
            crate::telemetry::collector::GpuSource::Dcgm { url: u.clone() }
        }
        (None, false) => crate::telemetry::collector::GpuSource::Nvml,
    };
    if let Some(u) = &tl.otlp_endpoint {
        BaseUrl::parse(u).context("--otlp-endpoint")?;
        tc.otlp_endpoint = Some(u.clone());
    }
    Ok(tc)
}

/// The client's worker threads: `--client-threads`, else every core.
pub(crate) fn client_threads(o: &OutputArgs) -> usize {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    o.client_threads.unwrap_or(cores).max(1)
}

/// The command line, with credentials redacted: URL user info, credential header values,
/// bearer tokens.
pub fn redacted_command_line() -> Vec<String> {
    redact_args(std::env::args())
}

/// Redacts credentials from command-line arguments.
pub fn redact_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut after_header = false;
    for a in args {
        let shown = if after_header || a.starts_with("--header=") {
            let (prefix, h) = a
                .split_once('=')
                .filter(|_| !after_header)
                .unwrap_or(("", &a));
            match h.split_once(':') {
                Some((k, _)) if crate::client::is_credential_header(k) => {
                    let sep = if prefix.is_empty() { "" } else { "=" };
                    format!("{prefix}{sep}{k}: <redacted>")
                }
                _ => a.clone(),
            }
        } else if a.contains("://") && a.contains('@') {
            match BaseUrl::parse(&a) {
                Ok(u) if u.basic_auth.is_some() => u.to_string(),
                _ => a.clone(),
            }
        } else {
            a.clone()
        };
        after_header = a == "--header";
        out.push(shown);
    }
    out
}
