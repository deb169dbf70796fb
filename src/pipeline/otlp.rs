//! `--otlp-endpoint`: after a run, its requests go to an OTLP/HTTP collector as spans
//! (`export::otlp`), read back from `requests.jsonl` one line at a time and posted in
//! batches, so the export never touches the measured path and a run of any length fits in
//! the memory of one batch.

use crate::client::{BaseUrl, Endpoint};
use crate::config::RunConfig;
use crate::export::otlp::{document, span, SpanContext};
use crate::store::folder::RunFolder;
use anyhow::{bail, Context, Result};
use std::time::Duration;

/// Spans per POST (collectors accept a few MB per request by default).
const BATCH: usize = 256;
/// Longest one POST may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Exports the run in `config.out_dir` to `endpoint`; returns how many spans went.
pub fn export(config: &RunConfig, endpoint: &str) -> Result<u64> {
    let Some(prefix) = config.target.trace_id_prefix.as_deref() else {
        bail!("--otlp-endpoint needs the requests' trace context: drop --no-trace-context");
    };
    let url = BaseUrl::parse(endpoint).context("--otlp-endpoint")?;
    let context = SpanContext {
        trace_id_prefix: prefix,
        operation: operation(config.target.endpoint),
        model: &config.target.model,
        server_address: &config.target.url.host,
        server_port: config.target.url.port,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut batch = Vec::with_capacity(BATCH);
    let mut sent = 0u64;
    let mut failure: Option<anyhow::Error> = None;
    let requests = RunFolder::new(&config.out_dir).requests_jsonl();
    crate::store::run_dir::for_each_wire(&requests, |w| {
        if failure.is_some() {
            return;
        }
        batch.push(span(&w, &context));
        if batch.len() == BATCH {
            match runtime.block_on(post(&url, std::mem::take(&mut batch))) {
                Ok(n) => sent += n,
                Err(e) => failure = Some(e),
            }
        }
    })?;
    if let Some(e) = failure {
        return Err(e.context(format!("after {sent} spans")));
    }
    if !batch.is_empty() {
        sent += runtime.block_on(post(&url, batch))?;
    }
    Ok(sent)
}

/// `gen_ai.operation.name` of an API.
fn operation(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Completions | Endpoint::Llamacpp | Endpoint::Tgi | Endpoint::Sglang => {
            "text_completion"
        }
        _ => "chat",
    }
}

/// POSTs one batch to `{url}/v1/traces`; the number of spans it held.
async fn post(url: &BaseUrl, spans: Vec<serde_json::Value>) -> Result<u64> {
    let n = spans.len() as u64;
    let body = serde_json::to_vec(&document(spans, env!("CARGO_PKG_VERSION")))?;
    let path = url.path("/v1/traces");
    let response = crate::client::simple::call(url, None, "POST", &path, Some(&body), TIMEOUT)
        .await
        .with_context(|| format!("sending spans to {}{path}", url.root()))?;
    if !(200..300).contains(&response.status) {
        bail!(
            "the collector at {}{path} answered HTTP {}: {}",
            url.root(),
            response.status,
            String::from_utf8_lossy(&response.body[..response.body.len().min(200)])
        );
    }
    Ok(n)
}

/// After a run: exports its spans when `--otlp-endpoint` asked for it, saying how it went
/// on stderr. A collector that cannot take them is a warning: the run itself is complete.
pub fn export_after_run(config: &RunConfig) {
    let Some(endpoint) = &config.telemetry.otlp_endpoint else {
        return;
    };
    match export(config, endpoint) {
        Ok(n) if !config.quiet => eprintln!("Exported {n} spans to {endpoint} (OTLP/HTTP)."),
        Ok(_) => {}
        Err(err) => eprintln!(
            "warning: the spans were not exported: {err:#}. The run itself is complete; its requests.jsonl has every span's data."
        ),
    }
}
