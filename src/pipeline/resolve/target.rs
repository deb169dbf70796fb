//! The target group of flags: the server's URL, TLS, proxy, credentials, API and headers,
//! the WebSocket and gRPC options, and the system under test as the report names it. Every
//! certificate, key and template file is read here, before anything starts.

use crate::artifacts::SystemInfo;
use crate::client::{BaseUrl, Secret, Target};
use crate::flags::{RunArgs, SutBoundaryArg, TargetArgs};
use anyhow::{bail, Context, Result};

/// The server under test from the flags (`t`: the target group, its endpoint as a workload
/// profile may have set it). `url` is the target (the simulator's when built
/// in, which is reached without a proxy).
pub(crate) fn target_of(
    args: &RunArgs,
    t: &TargetArgs,
    url: &str,
    builtin: bool,
) -> Result<Target> {
    let url = BaseUrl::parse(url)?;
    let tls = crate::client::network::TlsOptions {
        ca_cert: t.ca_cert.clone(),
        client_cert: t.client_cert.clone(),
        client_key: t.client_key.clone(),
        insecure: t.insecure,
    };
    if url.tls {
        // Read every certificate file now: a bad one is a configuration error, not a run
        // of connection failures.
        crate::client::network::client_config(&tls)?;
    }
    if t.insecure {
        eprintln!("WARNING: --insecure: the server's TLS certificate is NOT verified; anyone between you and it could read or change the traffic. For testing only.");
    }
    let proxy = if builtin {
        None
    } else {
        crate::client::network::proxy_from_env(&url)?
    };
    if let Some(p) = &proxy {
        eprintln!(
            "Reaching {url} through the proxy {} ({}{})",
            p.url,
            p.from,
            if p.tunnel { ", CONNECT tunnel" } else { "" }
        );
    }
    let api_key = api_key(t, &url)?;
    let websocket = match t.endpoint {
        crate::client::Endpoint::Websocket => Some(websocket_options(args)?),
        _ => None,
    };
    if t.endpoint == crate::client::Endpoint::Grpc && url.tls {
        bail!("--endpoint grpc speaks plain HTTP/2 (h2c) only: use an http:// URL (e.g. http://127.0.0.1:8001 for Triton)");
    }
    let headers = headers(t)?;
    Ok(Target {
        url,
        model: t.model.clone().unwrap_or_default(),
        endpoint: t.endpoint,
        headers,
        api_key,
        builtin_simulator: builtin,
        tls: tls.clone(),
        proxy,
        websocket,
        grpc_backend: (t.endpoint == crate::client::Endpoint::Grpc)
            .then_some(args.websocket.grpc_backend),
        trace_id_prefix: trace_id_prefix(t)?,
    })
}

/// The run's trace id prefix: `--trace-id-prefix`, checked, else a fresh one; none with
/// `--no-trace-context`.
fn trace_id_prefix(t: &TargetArgs) -> Result<Option<String>> {
    use crate::client::trace::{new_prefix, valid_prefix};
    match &t.trace_id_prefix {
        _ if t.no_trace_context => Ok(None),
        Some(p) if valid_prefix(p) => Ok(Some(p.clone())),
        Some(p) => bail!(
            "--trace-id-prefix {p}: give 16 lowercase hex digits, not all zero (e.g. 3f9c0a17d2b4e861)"
        ),
        None => Ok(Some(new_prefix())),
    }
}

/// The API key: read from `--api-key-file`, else from the environment variable; none when
/// `--url` carries credentials.
fn api_key(t: &TargetArgs, url: &BaseUrl) -> Result<Option<Secret>> {
    Ok(match &t.api_key_file {
        // Credentials written into --url are the user's explicit choice for this server.
        None if url.basic_auth.is_some() => None,
        Some(path) => Some(Secret::new(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the API key file {}", path.display()))?
                .trim()
                .to_owned(),
        )),
        None => std::env::var(
            t.api_key_env
                .as_deref()
                .unwrap_or(crate::client::apis::default_key_env(t.endpoint)),
        )
        .ok()
        .filter(|k| !k.is_empty())
        .map(Secret::new),
    })
}

/// The `--header` flags as (name, value), trimmed.
fn headers(t: &TargetArgs) -> Result<Vec<(String, String)>> {
    let mut headers = Vec::new();
    for h in &t.headers {
        let Some((k, v)) = h.split_once(':') else {
            bail!("--header `{h}` is not of the form 'Name: value'");
        };
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Ok(headers)
}

/// The WebSocket mode's options from the flags, checked: the template fills into a JSON
/// object and every pointer is well formed.
fn websocket_options(args: &RunArgs) -> Result<crate::client::WebSocketOptions> {
    let w = &args.websocket;
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let mut ws = crate::client::WebSocketOptions {
        path: w.ws_path.clone(),
        text_path: w.ws_text_path.clone(),
        reasoning_path: opt(&w.ws_reasoning_path),
        end: w.ws_end.clone(),
        usage_path: opt(&w.ws_usage_path),
        error_path: opt(&w.ws_error_path),
        finish_path: opt(&w.ws_finish_path),
        id_path: opt(&w.ws_id_path),
        ..Default::default()
    };
    if let Some(t) = &w.ws_template {
        ws.template = match t.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("reading the --ws-template file {path}"))?,
            None => t.clone(),
        };
    }
    crate::client::apis::websocket::WsPaths::new(&ws)
        .map_err(|e| anyhow::anyhow!("--ws-*-path / --ws-end: {e}"))?;
    let probe = [("user".to_owned(), "hello".to_owned())];
    crate::client::apis::websocket::request_message(
        &ws,
        "model",
        &crate::client::apis::Prompt {
            messages: &probe,
            max_tokens: 1,
            overrides: &[],
            agent: None,
        },
        &crate::client::RequestOptions::default(),
    )?;
    Ok(ws)
}

/// The system under test as the report names it: hardware, GPUs, boundary, notes.
pub(crate) fn system_info(t: &TargetArgs) -> SystemInfo {
    SystemInfo {
        hardware: t.hardware.clone(),
        gpus: t.gpus,
        sut_boundary: match t.sut_boundary {
            SutBoundaryArg::Engine => "engine",
            SutBoundaryArg::Gateway => "gateway",
            SutBoundaryArg::Compound => "compound",
            SutBoundaryArg::Firewall => "firewall",
        }
        .into(),
        notes: t.notes.clone(),
    }
}
