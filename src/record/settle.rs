//! Settles how many output tokens a response had, and how many each chunk carried.
//!
//! Order of trust (declared per record): the server's own counts first (`usage`, or usage
//! streamed with every chunk), then the reference tokenizer run once over the concatenated
//! text, never per chunk (per-chunk tokenizing overcounts at chunk boundaries). When the
//! tokenizer's split and the server's total disagree, the tokenizer only decides the shape
//! (which chunks carried more) and the server's total is apportioned to it.
//!
//! Output tokens count everything the model generated, reasoning included (that is what the
//! server spent its time on, and what `usage.completion_tokens` counts); the reasoning share
//! is kept beside it so answer-only figures can be shown too.

use super::draft::Draft;
use super::{ChunkTokenSource, RequestRecord, TokenSource};
use crate::tokenizer::Tokenizer;

/// Settles a draft: token counts of the record and of every chunk. Returns the record.
pub fn settle(mut draft: Draft, tokenizer: &dyn Tokenizer) -> RequestRecord {
    settle_tokens(&mut draft, tokenizer);
    draft.record
}

/// Fills `tokens` of every chunk and the record's `output_tokens` and `reasoning_tokens`.
pub fn settle_tokens(ex: &mut Draft, tokenizer: &dyn Tokenizer) {
    ex.take_usage();
    settle_input_tokens(&mut ex.record);
    let reasoning_total = settle_reasoning(ex, tokenizer);
    let rec = &mut ex.record;
    let usage_total = rec.usage_completion_tokens();
    let content_total: u64 = match usage_total {
        Some(total) => {
            rec.output_tokens_source = TokenSource::ServerUsage;
            total.saturating_sub(reasoning_total)
        }
        None if !ex.content_text.is_empty() || reasoning_total > 0 => {
            rec.output_tokens_source = TokenSource::Tokenizer;
            tokenizer.count(&ex.content_text) as u64
        }
        None => {
            rec.output_tokens_source = TokenSource::None;
            0
        }
    };
    let reasoning_total = match usage_total {
        Some(total) => reasoning_total.min(total),
        None => reasoning_total,
    };
    let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
    rec.reasoning_tokens = clamp(reasoning_total);
    rec.output_tokens = clamp(content_total + reasoning_total);
    let n_chunks = rec.chunks.len();
    if n_chunks == 0 {
        return;
    }

    // 1. Cumulative usage streamed with every content chunk (and no reasoning to untangle).
    if rec.reasoning_chunks.is_empty() {
        if let Some(counts) = streamed_counts(&ex.cumulative_usage, content_total) {
            for (chunk, n) in rec.chunks.iter_mut().zip(counts) {
                chunk.tokens = n;
            }
            rec.chunk_tokens_source = ChunkTokenSource::StreamedUsage;
            return;
        }
    }
    // 2. One chunk per token: the common case for llama.cpp and vLLM without speculation.
    if content_total == n_chunks as u64 {
        for chunk in &mut rec.chunks {
            chunk.tokens = 1;
        }
        rec.chunk_tokens_source = ChunkTokenSource::OnePerChunk;
        return;
    }
    // 3. Tokenizer over the whole text, apportioned to the known total.
    let byte_lens: Vec<u32> = rec.chunks.iter().map(|c| c.bytes).collect();
    let shape = split_by_tokens(tokenizer, &ex.content_text, &byte_lens);
    let counts = if usage_total.is_some() {
        apportion(&shape, content_total)
    } else {
        shape
    };
    if usage_total.is_none() {
        rec.output_tokens = counts.iter().sum::<u32>() + rec.reasoning_tokens;
    }
    for (chunk, n) in rec.chunks.iter_mut().zip(counts) {
        chunk.tokens = n;
    }
    rec.chunk_tokens_source = ChunkTokenSource::Tokenizer;
}

/// Input tokens of a request with images or audio: only the server's model knows how many
/// tokens an image makes, so its `usage.prompt_tokens` is the count when it gave one; the
/// text's count stays beside it. Text-only requests keep the workload's count.
fn settle_input_tokens(rec: &mut super::RequestRecord) {
    use super::InputTokenSource;
    if !rec.media.any() || rec.text_input_tokens.is_some() {
        return;
    }
    rec.text_input_tokens = Some(rec.input_tokens);
    match rec.usage_prompt_tokens() {
        Some(n) => {
            rec.input_tokens = n.min(u64::from(u32::MAX)) as u32;
            rec.input_tokens_source = InputTokenSource::ServerUsage;
        }
        None => rec.input_tokens_source = InputTokenSource::TextOnly,
    }
}

/// Reasoning chunks: counted by the tokenizer, shape only. Returns the reasoning total: the
/// server's (`reasoning_tokens` in its usage) when it said, else the tokenizer's.
fn settle_reasoning(ex: &mut Draft, tokenizer: &dyn Tokenizer) -> u64 {
    let rec = &mut ex.record;
    let reasoning_counts = split_by_tokens(
        tokenizer,
        &ex.reasoning_text,
        &rec.reasoning_chunks
            .iter()
            .map(|c| c.bytes)
            .collect::<Vec<_>>(),
    );
    for (c, n) in rec.reasoning_chunks.iter_mut().zip(&reasoning_counts) {
        c.tokens = *n;
    }
    rec.usage
        .as_ref()
        .and_then(|u| {
            u.get("completion_tokens_details")?
                .get("reasoning_tokens")?
                .as_u64()
        })
        .unwrap_or_else(|| reasoning_counts.iter().map(|&n| n as u64).sum())
}

/// Tokens per content chunk from the cumulative usage streamed with every one of them:
/// `None` unless every chunk had one, they never decrease, and they add up to no more than
/// the total.
fn streamed_counts(cumulative: &[Option<u32>], content_total: u64) -> Option<Vec<u32>> {
    if !cumulative.iter().all(Option::is_some) {
        return None;
    }
    let mut prev = 0u32;
    let mut counts = Vec::with_capacity(cumulative.len());
    for c in cumulative {
        let c = c.unwrap_or(0);
        if c < prev {
            return None;
        }
        counts.push(c - prev);
        prev = c;
    }
    let fits = counts.iter().map(|&n| n as u64).sum::<u64>() <= content_total.max(prev as u64);
    fits.then_some(counts)
}

/// Tokens per chunk: each token of `text` goes to the chunk that holds its last byte.
/// `chunk_bytes` are the chunks' byte lengths, in order; bytes of `text` before the first
/// chunk's range (none in practice) go to the first chunk.
pub fn split_by_tokens(tokenizer: &dyn Tokenizer, text: &str, chunk_bytes: &[u32]) -> Vec<u32> {
    let mut counts = vec![0u32; chunk_bytes.len()];
    if chunk_bytes.is_empty() || text.is_empty() {
        return counts;
    }
    // End offset (exclusive) of each chunk within `text`, aligned to the text's end.
    let total: u64 = chunk_bytes.iter().map(|&b| b as u64).sum();
    let lead = (text.len() as u64).saturating_sub(total);
    let mut ends = Vec::with_capacity(chunk_bytes.len());
    let mut acc = lead;
    for &b in chunk_bytes {
        acc += b as u64;
        ends.push(acc);
    }
    let mut chunk = 0usize;
    let mut pos = 0u64;
    for len in tokenizer.token_byte_lengths(text) {
        pos += len as u64;
        let last_byte = pos.saturating_sub(1);
        while chunk + 1 < ends.len() && last_byte >= ends[chunk] {
            chunk += 1;
        }
        counts[chunk] += 1;
    }
    counts
}

/// Scales `shape` to sum to `total` (largest-remainder rounding; ties go to earlier chunks).
/// An all-zero shape is spread evenly.
pub fn apportion(shape: &[u32], total: u64) -> Vec<u32> {
    if shape.is_empty() {
        return Vec::new();
    }
    let sum: u64 = shape.iter().map(|&n| n as u64).sum();
    let weights: Vec<u64> = if sum == 0 {
        vec![1; shape.len()]
    } else {
        shape.iter().map(|&n| n as u64).collect()
    };
    let wsum: u64 = weights.iter().sum();
    let mut out: Vec<u32> = Vec::with_capacity(shape.len());
    let mut rema: Vec<(u64, usize)> = Vec::with_capacity(shape.len());
    let mut given = 0u64;
    for (i, &w) in weights.iter().enumerate() {
        let exact = w as u128 * total as u128;
        let q = (exact / wsum as u128) as u64;
        out.push(q as u32);
        given += q;
        rema.push(((exact % wsum as u128) as u64, i));
    }
    rema.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in rema.iter().take((total - given) as usize) {
        out[i] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Chunk;
    use crate::tokenizer::TiktokenTokenizer;
    use serde_json::json;

    fn exchange(texts: &[&str], usage: Option<serde_json::Value>) -> Draft {
        let mut ex = Draft::default();
        for (i, t) in texts.iter().enumerate() {
            ex.content_text.push_str(t);
            ex.record.chunks.push(Chunk {
                at: i as u64,
                tokens: 0,
                bytes: t.len() as u32,
            });
            ex.cumulative_usage.push(None);
        }
        ex.record.usage = usage;
        ex
    }

    #[test]
    fn one_token_per_chunk_when_usage_matches() {
        let tok = TiktokenTokenizer::cl100k();
        let mut ex = exchange(
            &["Hello", " world", "!"],
            Some(json!({"completion_tokens": 3})),
        );
        settle_tokens(&mut ex, &tok);
        assert_eq!(ex.record.output_tokens, 3);
        assert_eq!(ex.record.chunk_tokens_source, ChunkTokenSource::OnePerChunk);
        assert!(ex.record.chunks.iter().all(|c| c.tokens == 1));
    }

    #[test]
    fn multi_token_chunks_follow_the_tokenizer_and_the_server_total() {
        let tok = TiktokenTokenizer::cl100k();
        // " hello world" is 2 cl100k tokens, "!" is 1.
        let mut ex = exchange(
            &[" hello world", "!"],
            Some(json!({"completion_tokens": 3})),
        );
        settle_tokens(&mut ex, &tok);
        assert_eq!(
            ex.record
                .chunks
                .iter()
                .map(|c| c.tokens)
                .collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert_eq!(ex.record.chunk_tokens_source, ChunkTokenSource::Tokenizer);
        // The server says 6: the same shape, scaled.
        let mut ex = exchange(
            &[" hello world", "!"],
            Some(json!({"completion_tokens": 6})),
        );
        settle_tokens(&mut ex, &tok);
        assert_eq!(
            ex.record
                .chunks
                .iter()
                .map(|c| c.tokens)
                .collect::<Vec<_>>(),
            vec![4, 2]
        );
        assert_eq!(ex.record.output_tokens, 6);
    }

    #[test]
    fn no_usage_counts_with_the_tokenizer() {
        let tok = TiktokenTokenizer::cl100k();
        let mut ex = exchange(&[" hello world", "!"], None);
        settle_tokens(&mut ex, &tok);
        assert_eq!(ex.record.output_tokens, 3);
        assert_eq!(ex.record.output_tokens_source, TokenSource::Tokenizer);
    }

    #[test]
    fn streamed_cumulative_usage_is_exact() {
        let tok = TiktokenTokenizer::cl100k();
        let mut ex = exchange(&["a", "b", "c"], Some(json!({"completion_tokens": 6})));
        ex.cumulative_usage = vec![Some(1), Some(4), Some(6)];
        settle_tokens(&mut ex, &tok);
        assert_eq!(
            ex.record
                .chunks
                .iter()
                .map(|c| c.tokens)
                .collect::<Vec<_>>(),
            vec![1, 3, 2]
        );
        assert_eq!(
            ex.record.chunk_tokens_source,
            ChunkTokenSource::StreamedUsage
        );
    }

    #[test]
    fn a_token_split_across_chunks_goes_to_the_chunk_with_its_last_byte() {
        let tok = TiktokenTokenizer::cl100k();
        // "hello" arrives as "hel" + "lo": one token, in the second chunk.
        assert_eq!(split_by_tokens(&tok, "hello", &[3, 2]), vec![0, 1]);
    }

    #[test]
    fn apportion_keeps_the_total() {
        assert_eq!(apportion(&[1, 1, 1], 4), vec![2, 1, 1]);
        assert_eq!(apportion(&[0, 0], 3), vec![2, 1]);
        assert_eq!(apportion(&[5, 0, 5], 5), vec![3, 0, 2]);
        assert_eq!(apportion(&[3, 1], 0), vec![0, 0]);
    }

    #[test]
    fn reasoning_tokens_count_as_output_and_are_kept_apart() {
        let tok = TiktokenTokenizer::cl100k();
        // Usage says 10 generated, 6 of them reasoning; the answer came in 4 one-token chunks.
        let mut ex = exchange(
            &["a", "b", "c", "d"],
            Some(
                json!({"completion_tokens": 10, "completion_tokens_details": {"reasoning_tokens": 6}}),
            ),
        );
        ex.reasoning_text = "thinking hard".into();
        ex.record.reasoning_chunks.push(Chunk {
            at: 0,
            tokens: 0,
            bytes: 13,
        });
        settle_tokens(&mut ex, &tok);
        assert_eq!(ex.record.output_tokens, 10);
        assert_eq!(ex.record.reasoning_tokens, 6);
        assert_eq!(ex.record.answer_tokens(), 4);
        assert!(ex.record.chunks.iter().all(|c| c.tokens == 1));
        // Without usage: both counted by the tokenizer ("thinking hard" is 2 cl100k tokens).
        let mut ex = exchange(&[" hello world"], None);
        ex.reasoning_text = "thinking hard".into();
        ex.record.reasoning_chunks.push(Chunk {
            at: 0,
            tokens: 0,
            bytes: 13,
        });
        settle_tokens(&mut ex, &tok);
        assert_eq!(
            (ex.record.output_tokens, ex.record.reasoning_tokens),
            (4, 2)
        );
    }
}
