//! What a non-generative API's whole answer says (embeddings, rerank): the items it
//! answered and the input tokens it counted. These APIs answer once, so the exchange reads
//! their body whole and parses it once, instead of an event stream.

use serde_json::Value;

/// A checked non-generative answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Items answered (embeddings, or scored documents), equal to those sent.
    pub items: u32,
    /// Input tokens the server counted (`usage.prompt_tokens`, else `usage.total_tokens`:
    /// nothing is generated, so the two agree where both are given).
    pub prompt_tokens: Option<u64>,
    /// The answer's `id` (vLLM and the simulator send one; OpenAI's embeddings do not).
    pub response_id: Option<String>,
}

/// `usage.prompt_tokens`, else `usage.total_tokens`, of an answer.
pub fn usage_prompt_tokens(v: &Value) -> Option<u64> {
    let usage = v.get("usage")?;
    usage
        .get("prompt_tokens")
        .and_then(Value::as_u64)
        .or_else(|| usage.get("total_tokens").and_then(Value::as_u64))
}

/// The answer's top-level `id`, when it has one.
pub fn response_id(v: &Value) -> Option<String> {
    v.get("id").and_then(Value::as_str).map(str::to_owned)
}

/// Parses the answer of `endpoint` for `items` items; `Err` says why it is not one.
pub fn parse(endpoint: crate::client::Endpoint, body: &[u8], items: u32) -> Result<Answer, String> {
    match endpoint {
        crate::client::Endpoint::Rerank => super::rerank::parse_answer(body, items),
        _ => super::embeddings::parse_answer(body, items),
    }
}
