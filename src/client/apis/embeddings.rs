//! OpenAI embeddings (`POST {base}/embeddings`; vLLM, TEI, llama.cpp with `--embeddings`):
//! a non-generative API. The request carries the workload's items as `input`, and the answer
//! is one JSON document, read whole ([`super::answer`]), not a stream.

use super::answer::{response_id, usage_prompt_tokens, Answer};
use super::Prompt;
use serde_json::{json, Map, Value};

/// The body: `{"model", "input": [item, ...]}`, one string per workload item.
pub fn request_body(model: &str, prompt: &Prompt<'_>) -> Map<String, Value> {
    let input: Vec<&str> = prompt.messages.iter().map(|(_, c)| c.as_str()).collect();
    let Value::Object(m) = json!({"model": model, "input": input}) else {
        unreachable!("a JSON object literal")
    };
    m
}

/// Reads an embeddings answer for `expected` inputs: `data` must hold one embedding per
/// input, each index once (servers may answer them in any order); `usage.prompt_tokens`
/// (else `total_tokens`) is the input the server counted.
pub fn parse_answer(body: &[u8], expected: u32) -> Result<Answer, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the embeddings answer is not JSON: {e}"))?;
    if let Some(err) = v.get("error") {
        return Err(format!("server sent an error: {err}"));
    }
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or("the embeddings answer has no `data` array")?;
    let mut seen = vec![false; expected as usize];
    for (i, d) in data.iter().enumerate() {
        let index = d.get("index").and_then(Value::as_u64).unwrap_or(i as u64) as usize;
        let vector = d
            .get("embedding")
            .ok_or("an embedding without `embedding`")?;
        // OpenAI's `encoding_format: base64` answers a string; both are an embedding.
        if !(vector.is_array() || vector.is_string()) {
            return Err(format!("embedding {index} is neither an array nor base64"));
        }
        match seen.get_mut(index) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(format!(
                    "embedding index {index} is out of range or repeated"
                ))
            }
        }
    }
    if data.len() != expected as usize {
        return Err(format!("{} embeddings for {expected} inputs", data.len()));
    }
    Ok(Answer {
        items: expected,
        prompt_tokens: usage_prompt_tokens(&v),
        response_id: response_id(&v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_sends_every_item_as_input() {
        let messages = vec![("item".into(), "a b".into()), ("item".into(), "c".into())];
        let p = Prompt {
            messages: &messages,
            max_tokens: 0,
            overrides: &[],
            agent: None,
        };
        let b = Value::Object(request_body("m", &p));
        assert_eq!(b, json!({"model": "m", "input": ["a b", "c"]}));
    }

    #[test]
    fn answers_are_checked_against_the_inputs() {
        let ok = br#"{"object":"list","data":[{"object":"embedding","embedding":[0.1,0.2],"index":1},{"object":"embedding","embedding":[0.3],"index":0}],"usage":{"prompt_tokens":12,"total_tokens":12}}"#;
        assert_eq!(
            parse_answer(ok, 2),
            Ok(Answer {
                items: 2,
                prompt_tokens: Some(12),
                response_id: None,
            })
        );
        // Only total_tokens (TEI's OpenAI route answers both; some servers only this).
        let total = br#"{"data":[{"embedding":"AAAA","index":0}],"usage":{"total_tokens":5}}"#;
        assert_eq!(parse_answer(total, 1).unwrap().prompt_tokens, Some(5));
        let fewer = br#"{"data":[{"embedding":[0.1],"index":0}],"usage":{"prompt_tokens":3}}"#;
        assert!(parse_answer(fewer, 2)
            .unwrap_err()
            .contains("1 embeddings for 2"));
        let repeated = br#"{"data":[{"embedding":[1],"index":0},{"embedding":[1],"index":0}]}"#;
        assert!(parse_answer(repeated, 2).unwrap_err().contains("repeated"));
        let error = br#"{"error":{"message":"too long","type":"invalid_request_error"}}"#;
        assert!(parse_answer(error, 1).unwrap_err().contains("too long"));
        assert!(parse_answer(b"<html>", 1).unwrap_err().contains("not JSON"));
        assert!(parse_answer(br#"{"data":{}}"#, 1).is_err());
    }
}
