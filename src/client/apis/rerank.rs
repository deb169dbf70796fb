//! Rerank in the Cohere/Jina shape (`POST {base}/rerank`; vLLM's `/v1/rerank` and `/rerank`,
//! TEI's `/v1/rerank` with the same body): a non-generative API. The first workload item is
//! the query, the others the documents; the answer is one JSON document, read whole
//! ([`super::answer`]). TEI's native `/rerank` (`{"query","texts"}`, a bare array back) is
//! not this shape.

use super::answer::{response_id, usage_prompt_tokens, Answer};
use super::Prompt;
use serde_json::{json, Map, Value};

/// The body: `{"model", "query", "documents": [...]}`: the first item is the query.
pub fn request_body(model: &str, prompt: &Prompt<'_>) -> Map<String, Value> {
    let mut texts = prompt.messages.iter().map(|(_, c)| c.as_str());
    let query = texts.next().unwrap_or_default();
    let documents: Vec<&str> = texts.collect();
    let Value::Object(m) = json!({"model": model, "query": query, "documents": documents}) else {
        unreachable!("a JSON object literal")
    };
    m
}

/// Reads a rerank answer for `expected` documents: `results` must score each document
/// once (`relevance_score` a number; a server may return fewer only when asked with
/// `top_n`, which servebench does not send); `usage.prompt_tokens` (else `total_tokens`,
/// which vLLM answers) is the input the server counted.
pub fn parse_answer(body: &[u8], expected: u32) -> Result<Answer, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the rerank answer is not JSON: {e}"))?;
    if let Some(err) = v.get("error") {
        return Err(format!("server sent an error: {err}"));
    }
    let results = v
        .get("results")
        .and_then(Value::as_array)
        .ok_or("the rerank answer has no `results` array")?;
    let mut seen = vec![false; expected as usize];
    for r in results {
        let index = r
            .get("index")
            .and_then(Value::as_u64)
            .ok_or("a rerank result without `index`")? as usize;
        if !r.get("relevance_score").is_some_and(Value::is_number) {
            return Err(format!(
                "rerank result {index} has no numeric relevance_score"
            ));
        }
        match seen.get_mut(index) {
            Some(s) if !*s => *s = true,
            _ => return Err(format!("rerank index {index} is out of range or repeated")),
        }
    }
    if results.len() != expected as usize {
        return Err(format!(
            "{} rerank results for {expected} documents",
            results.len()
        ));
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
    fn body_sends_the_first_item_as_the_query() {
        let messages = vec![
            ("item".into(), "q".into()),
            ("item".into(), "d1".into()),
            ("item".into(), "d2".into()),
        ];
        let p = Prompt {
            messages: &messages,
            max_tokens: 0,
            overrides: &[],
            agent: None,
        };
        let b = Value::Object(request_body("m", &p));
        assert_eq!(
            b,
            json!({"model": "m", "query": "q", "documents": ["d1", "d2"]})
        );
    }

    #[test]
    fn answers_are_checked_against_the_documents() {
        // vLLM's shape: results sorted by score, usage.total_tokens only.
        let ok = br#"{"id":"rerank-1","model":"m","usage":{"total_tokens":30},"results":[{"index":1,"document":{"text":"d2"},"relevance_score":0.9},{"index":0,"document":{"text":"d1"},"relevance_score":0.1}]}"#;
        assert_eq!(
            parse_answer(ok, 2),
            Ok(Answer {
                items: 2,
                prompt_tokens: Some(30),
                response_id: Some("rerank-1".into()),
            })
        );
        let fewer = br#"{"results":[{"index":0,"relevance_score":0.5}]}"#;
        assert!(parse_answer(fewer, 2)
            .unwrap_err()
            .contains("1 rerank results for 2"));
        let out_of_range = br#"{"results":[{"index":5,"relevance_score":0.5}]}"#;
        assert!(parse_answer(out_of_range, 1)
            .unwrap_err()
            .contains("out of range"));
        let no_score = br#"{"results":[{"index":0}]}"#;
        assert!(parse_answer(no_score, 1)
            .unwrap_err()
            .contains("relevance_score"));
        // TEI's native /rerank answers a bare array: not this shape.
        assert!(parse_answer(br#"[{"index":0,"score":0.5}]"#, 1).is_err());
        let error = br#"{"error":{"message":"bad","type":"BadRequestError","code":400}}"#;
        assert!(parse_answer(error, 1).unwrap_err().contains("bad"));
    }
}
