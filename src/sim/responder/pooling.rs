//! The simulator's non-generative routes: OpenAI embeddings (`/v1/embeddings`) and rerank in
//! the Cohere/Jina shape (`/v1/rerank`, `/rerank`), with a known cost.
//!
//! Each request is one forward pass over all its texts, run in one of `max_num_seqs` slots
//! (a request waits for a free slot in arrival order), costing `step.base_ms +
//! step.prefill_ms_per_token × its input tokens` divided by `time_scale`. It does not go
//! through the generation engine: nothing is decoded, and a separate pool keeps the cost
//! analytic (`SimConfig::pooling_capacity`, docs/sim.md). The answer is one JSON document.

use super::{error_body, Responder};
use crate::sim::server::{Request, ResponseWriter};
use crate::sim::truth::TruthRecord;
use crate::tokenizer::Tokenizer;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::io;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Which non-generative API a route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolingApi {
    Embeddings,
    Rerank,
}

impl PoolingApi {
    /// The API served at `path`, if any.
    pub fn for_path(path: &str) -> Option<PoolingApi> {
        match path {
            "/v1/embeddings" => Some(PoolingApi::Embeddings),
            "/v1/rerank" | "/rerank" => Some(PoolingApi::Rerank),
            _ => None,
        }
    }
}

/// The texts of a request body: embeddings' `input` (a string or strings), or rerank's
/// `query` then `documents`. `Err`: why the body is not one.
fn texts_of(api: PoolingApi, body: &Value) -> Result<(Vec<String>, usize), String> {
    let strings = |v: Option<&Value>, what: &str| -> Result<Vec<String>, String> {
        match v {
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or(format!("`{what}` must hold strings")),
            _ => Err(format!("`{what}` is required")),
        }
    };
    match api {
        PoolingApi::Embeddings => {
            let input = strings(body.get("input"), "input")?;
            let n = input.len();
            Ok((input, n))
        }
        PoolingApi::Rerank => {
            let query = body
                .get("query")
                .and_then(Value::as_str)
                .ok_or("`query` is required")?;
            let docs = strings(body.get("documents"), "documents")?;
            let n = docs.len();
            Ok((std::iter::once(query.to_owned()).chain(docs).collect(), n))
        }
    }
}

/// Answers one embeddings or rerank request: parse, draw an injected error
/// (`faults.error_rate`), wait for a slot, hold it for the request's cost, answer.
pub async fn pooling(
    r: &Responder,
    req: &Request,
    w: &mut ResponseWriter<'_>,
    api: PoolingApi,
) -> io::Result<bool> {
    let parsed = serde_json::from_slice::<Value>(&req.body)
        .map_err(|e| e.to_string())
        .and_then(|v| texts_of(api, &v));
    let Ok((texts, items)) = parsed else {
        let msg = parsed.err().unwrap_or_default();
        let body = error_body(&msg, "invalid_request_error", 400);
        w.full(400, "application/json", &body, "").await?;
        return Ok(true);
    };
    let prompt_tokens: u32 = texts.iter().map(|t| r.tokenizer.count(t) as u32).sum();
    let seq = r.counter.fetch_add(1, Ordering::Relaxed);
    let mut rng =
        ChaCha8Rng::seed_from_u64(r.config.seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut truth = TruthRecord {
        response_id: format!("pool-sim{:08x}-{seq}", r.instance),
        received: req.received,
        prompt_tokens,
        items: items as u32,
        ..Default::default()
    };
    let f = &r.config.faults;
    if rng.random::<f64>() < f.error_rate {
        let statuses = if f.error_statuses.is_empty() {
            &[500, 503, 429][..]
        } else {
            &f.error_statuses[..]
        };
        let status = statuses[rng.random_range(0..statuses.len())];
        r.errors.fetch_add(1, Ordering::Relaxed);
        truth.status = status;
        r.truth.push(truth);
        let body = error_body("injected error", "server_error", status);
        w.full(status, "application/json", &body, "").await?;
        return Ok(true);
    }
    {
        // The slot is held for the whole pass; a closed semaphore only at shutdown.
        let _slot = r.pooling_slots.acquire().await;
        truth.scheduled = Some(Instant::now());
        let cost_ms = r.config.pooling_service_ms(prompt_tokens);
        tokio::time::sleep(r.scaled(cost_ms)).await;
    }
    let body = answer(
        api,
        &r.config.model,
        &truth.response_id,
        items,
        prompt_tokens,
    );
    r.truth.push(truth);
    w.full(200, "application/json", body.to_string().as_bytes(), "")
        .await?;
    Ok(true)
}

/// The answer: one small embedding per input, or one score per document (best first, as
/// vLLM sorts them); usage counts every input token.
fn answer(api: PoolingApi, model: &str, id: &str, items: usize, prompt_tokens: u32) -> Value {
    let usage = json!({"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens});
    match api {
        PoolingApi::Embeddings => {
            let data: Vec<Value> = (0..items)
                .map(|i| json!({"object": "embedding", "index": i, "embedding": [0.5, -0.25, 0.125, i as f64 / 1000.0]}))
                .collect();
            json!({"object": "list", "id": id, "model": model, "data": data, "usage": usage})
        }
        PoolingApi::Rerank => {
            let results: Vec<Value> = (0..items)
                .map(|i| json!({"index": i, "relevance_score": 1.0 / (1.0 + i as f64)}))
                .collect();
            json!({"id": id, "model": model, "results": results, "usage": usage})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_of_each_api() {
        let (t, n) = texts_of(PoolingApi::Embeddings, &json!({"input": ["a", "b"]})).unwrap();
        assert_eq!((t.len(), n), (2, 2));
        let (t, n) = texts_of(PoolingApi::Embeddings, &json!({"input": "a"})).unwrap();
        assert_eq!((t.len(), n), (1, 1));
        let (t, n) = texts_of(
            PoolingApi::Rerank,
            &json!({"query": "q", "documents": ["a", "b"]}),
        )
        .unwrap();
        assert_eq!((t, n), (vec!["q".into(), "a".into(), "b".into()], 2));
        assert!(texts_of(PoolingApi::Rerank, &json!({"documents": ["a"]})).is_err());
        assert!(texts_of(PoolingApi::Embeddings, &json!({"input": [1]})).is_err());
        assert_eq!(PoolingApi::for_path("/rerank"), Some(PoolingApi::Rerank));
        assert_eq!(
            PoolingApi::for_path("/v1/embeddings"),
            Some(PoolingApi::Embeddings)
        );
    }
}
