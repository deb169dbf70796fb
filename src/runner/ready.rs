//! Before a run: is the server up, which models does it serve, and what is it?
//!
//! Readiness waits while the server answers 503 (still loading), on the route the API has:
//! `{base}/models` for the OpenAI and Anthropic APIs (Anthropic lists its models there too,
//! in the same `data[].id` shape), `{root}/health` for the engines' native routes.
//! Discovery asks the routes engines expose about themselves, each optional, none required:
//! `/v1/models` (every OpenAI-compatible server; vLLM adds `max_model_len`), llama.cpp's
//! `/props` (build, per-slot context, model file), vLLM's and SGLang's `/version`, SGLang's
//! `/get_model_info`, TGI's `/info`, Ollama's `/api/version`, and the `Server` response
//! header. What is found is recorded in `run.json`.

use crate::client::http::HttpError;
use crate::client::simple::{call, SimpleResponse};
use crate::client::Target;
use crate::record::run::ServerInfo;
use serde_json::Value;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why a run could not start.
#[derive(Debug, Error)]
pub enum ReadyError {
    #[error("connection refused at {0}: is the server running?")]
    Refused(String),
    #[error("{detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url} was still not ready (HTTP 503) after {secs:.0} s: is the model still loading? (--ready-timeout)")]
    NotReady { url: String, secs: f64 },
}

/// Waits for the server to answer, then asks it what it is.
pub async fn wait_until_ready(
    target: &Target,
    ready_timeout: Duration,
) -> Result<ServerInfo, ReadyError> {
    let url = target.url.to_string();
    if target.endpoint == crate::client::Endpoint::Grpc {
        return grpc_ready(target, ready_timeout).await;
    }
    // The native routes and a WebSocket have no model list of their own: readiness is the
    // server's /health (any answer but 503 will do; a plain WebSocket server may have none).
    let native =
        target.endpoint.is_native() || target.endpoint == crate::client::Endpoint::Websocket;
    let path = if native {
        format!("{}/health", target.url.native_base_path())
    } else {
        target.url.path("/models")
    };
    let start = Instant::now();
    let models = loop {
        match call(
            &target.url,
            Some(target),
            "GET",
            &path,
            None,
            Duration::from_secs(10),
        )
        .await
        {
            Ok(r) if r.status == 503 => {
                if start.elapsed() >= ready_timeout {
                    return Err(ReadyError::NotReady {
                        url,
                        secs: ready_timeout.as_secs_f64(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Ok(r) => break r,
            Err(HttpError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(ReadyError::Refused(url));
            }
            Err(e) => {
                return Err(ReadyError::Unreachable {
                    detail: crate::client::exchange::connect_advice(&e, &url),
                    url,
                })
            }
        }
    };
    if !native {
        return Ok(discover(target, models).await);
    }
    // A native route: the OpenAI model list, where the engine also serves one, then the
    // engine's own description of itself.
    let base = target.url.native_base_path().to_owned();
    let listed = call(
        &target.url,
        Some(target),
        "GET",
        &format!("{base}/v1/models"),
        None,
        Duration::from_secs(5),
    )
    .await
    .ok()
    .filter(|r| r.status == 200)
    .unwrap_or(SimpleResponse {
        status: 404,
        body: Vec::new(),
        server: models.server,
        date: None,
    });
    let mut info = discover(target, listed).await;
    native_model(target, &base, &mut info).await;
    Ok(info)
}

/// gRPC: waits until `ServerReady` says ready. Triton lists no models this way that the
/// run could pick from: `--model` names the Triton model.
async fn grpc_ready(target: &Target, ready_timeout: Duration) -> Result<ServerInfo, ReadyError> {
    let url = target.url.to_string();
    let start = Instant::now();
    loop {
        match crate::client::grpc::server_ready(&target.url).await {
            Ok(true) => break,
            Ok(false) if start.elapsed() < ready_timeout => {
                tokio::time::sleep(Duration::from_millis(250)).await
            }
            Ok(false) => {
                return Err(ReadyError::NotReady {
                    url,
                    secs: ready_timeout.as_secs_f64(),
                })
            }
            Err(detail) => return Err(ReadyError::Unreachable { url, detail }),
        }
    }
    Ok(ServerInfo {
        engine: target
            .builtin_simulator
            .then(|| "servebench-sim".to_owned()),
        ..Default::default()
    })
}

/// The model a native route serves, from the engine's own route: llama.cpp `/props`
/// (`model_path`), TGI `/info` (`model_id`), SGLang `/get_model_info` (`model_path`).
/// Used when the OpenAI model list said nothing; the engine is named after the route.
async fn native_model(target: &Target, base: &str, info: &mut ServerInfo) {
    let (route, field) = match target.endpoint {
        crate::client::Endpoint::Llamacpp => ("/props", "model_path"),
        crate::client::Endpoint::Tgi => ("/info", "model_id"),
        crate::client::Endpoint::Sglang => ("/get_model_info", "model_path"),
        _ => return,
    };
    if info.models.is_empty() {
        if let Some(v) = get_json(target, &format!("{base}{route}")).await {
            if let Some(m) = v.get(field).and_then(Value::as_str) {
                info.models.push(m.to_owned());
            }
        }
    }
    if info.engine.is_none() {
        info.engine = target.endpoint.native_engine().map(str::to_owned);
    }
}

async fn get_json(target: &Target, path: &str) -> Option<Value> {
    let r = call(
        &target.url,
        Some(target),
        "GET",
        path,
        None,
        Duration::from_secs(5),
    )
    .await
    .ok()?;
    (r.status == 200)
        .then(|| serde_json::from_slice(&r.body).ok())
        .flatten()
}

/// Reads what the server says about itself from the routes that exist.
async fn discover(target: &Target, models: SimpleResponse) -> ServerInfo {
    let mut info = ServerInfo {
        server_header: models.server.clone(),
        ..Default::default()
    };
    read_model_list(&models.body, &mut info);
    if info.server_header.as_deref() == Some("llama.cpp") {
        info.engine = Some("llama.cpp".into());
    }
    // llama.cpp: build and per-slot context.
    if info.engine.as_deref() == Some("llama.cpp") || info.engine.is_none() {
        if let Some(p) = get_json(target, "/props").await {
            if p.get("default_generation_settings").is_some() || p.get("build_info").is_some() {
                info.engine = Some("llama.cpp".into());
                info.version = p
                    .get("build_info")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or(info.version);
                let n_ctx = p
                    .pointer("/default_generation_settings/n_ctx")
                    .and_then(Value::as_u64);
                if let Some(n) = n_ctx {
                    info.context_tokens = Some(n as u32);
                }
                info.slots = slots_of(&p, "total_slots");
            }
        }
    }
    if info.engine.is_none() {
        // SGLang describes itself at /get_server_info (it also answers /version).
        if let Some(v) = get_json(target, "/get_server_info").await {
            if let Some(version) = v.get("version").and_then(Value::as_str) {
                info.engine = Some("sglang".into());
                info.version = Some(version.to_owned());
                info.context_tokens = v
                    .get("context_length")
                    .and_then(Value::as_u64)
                    .map(|n| n as u32)
                    .or(info.context_tokens);
                info.slots = slots_of(&v, "max_running_requests");
            }
        }
    }
    if info.engine.is_none() || info.engine.as_deref() == Some("vllm") {
        if let Some(v) = get_json(target, "/version").await {
            if let Some(version) = v.get("version").and_then(Value::as_str) {
                info.version = Some(version.to_owned());
                info.engine.get_or_insert("vllm".into());
            }
        }
    }
    discover_others(target, &mut info).await;
    info
}

/// mistral.rs's version from its OpenAPI document (`info.title` "Mistral.rs").
fn mistralrs_version(openapi: &Value) -> Option<String> {
    let info = openapi.get("info")?;
    let title = info.get("title")?.as_str()?;
    title
        .eq_ignore_ascii_case("mistral.rs")
        .then(|| info.get("version")?.as_str().map(str::to_owned))
        .flatten()
}

/// A positive request count at `field` of an engine's self-description.
fn slots_of(v: &Value, field: &str) -> Option<u32> {
    v.get(field)
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .and_then(|n| u32::try_from(n).ok())
}

/// The engines that name themselves on routes of their own, asked in turn while none has:
/// TGI's `/info`, mistral.rs's OpenAPI document, Ollama's `/api/version`.
async fn discover_others(target: &Target, info: &mut ServerInfo) {
    if info.engine.is_none() {
        if let Some(v) = get_json(target, "/info").await {
            if v.get("model_id").is_some() {
                info.engine = Some("tgi".into());
                info.version = v.get("version").and_then(Value::as_str).map(str::to_owned);
                info.context_tokens = v
                    .get("max_input_tokens")
                    .or_else(|| v.get("max_input_length"))
                    .and_then(Value::as_u64)
                    .map(|n| n as u32);
            }
        }
    }
    if info.engine.is_none() {
        // mistral.rs names itself only in its OpenAPI document (its model list says
        // `owned_by: "local"`, and it has no /version).
        if let Some(v) = get_json(target, "/api-doc/openapi.json").await {
            if let Some(version) = mistralrs_version(&v) {
                info.engine = Some("mistral.rs".into());
                info.version = Some(version);
            }
        }
    }
    if info.engine.is_none() {
        if let Some(v) = get_json(target, "/api/version").await {
            if let Some(version) = v.get("version").and_then(Value::as_str) {
                info.engine = Some("ollama".into());
                info.version = Some(version.to_owned());
            }
        }
    }
}

/// What the OpenAI model list (`/v1/models`) says: the models, a context length, and the
/// engine when an entry's `owned_by` names it.
fn read_model_list(body: &[u8], info: &mut ServerInfo) {
    let listed: Option<Value> = serde_json::from_slice(body).ok();
    if let Some(data) = listed
        .as_ref()
        .and_then(|v| v.get("data")?.as_array().cloned())
    {
        for m in &data {
            if let Some(id) = m.get("id").and_then(Value::as_str) {
                info.models.push(id.to_owned());
            }
            if let Some(n) = m.get("max_model_len").and_then(Value::as_u64) {
                info.context_tokens.get_or_insert(n as u32);
            }
            match m.get("owned_by").and_then(Value::as_str) {
                Some("servebench-sim") => {
                    info.engine = Some("servebench-sim".into());
                    info.version = Some(env!("CARGO_PKG_VERSION").into());
                }
                Some("vllm") => {
                    info.engine.get_or_insert("vllm".into());
                }
                Some("llamacpp") => {
                    info.engine.get_or_insert("llama.cpp".into());
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mistral.rs 0.8.1's own OpenAPI document (recorded): the engine and its version.
    #[test]
    fn mistralrs_names_itself_in_its_openapi_document() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/mistralrs-0.8.1/openapi.json"
        );
        let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(mistralrs_version(&doc), Some("0.8.1".into()));
        let other = serde_json::json!({"info": {"title": "FastAPI", "version": "0.1.0"}});
        assert_eq!(mistralrs_version(&other), None);
        assert_eq!(
            slots_of(&serde_json::json!({"total_slots": 4}), "total_slots"),
            Some(4)
        );
        assert_eq!(
            slots_of(&serde_json::json!({"total_slots": 0}), "total_slots"),
            None
        );
    }
}
