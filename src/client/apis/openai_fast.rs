//! The fast reader of a Chat Completions or Completions chunk: the fields the client keeps,
//! read in place with [`Cursor`], every other field's grammar checked without decoding it.
//!
//! It answers only where serde would answer the same (`openai.rs`'s derive is the
//! reference, and the tests compare the two on every recorded chunk and on hand-made edge
//! cases); anything else (an error event, a duplicate field, a value of an unexpected type)
//! returns `None` and the chunk goes to serde. Its cost against serde's, in instructions
//! per chunk: docs/apis.md, "The fast chunk reader".

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::json_scan::Cursor;

/// What a chunk says, before it becomes an [`super::ApiEvent`]: the same fields whichever
/// reader filled them.
#[derive(Debug, Default)]
pub(super) struct ChunkParts<'a> {
    pub id: Option<Cow<'a, str>>,
    pub finish_reason: Option<Cow<'a, str>>,
    /// Whether the first choice had a `delta` object.
    pub has_delta: bool,
    pub content: Option<Cow<'a, str>>,
    pub reasoning_content: Option<Cow<'a, str>>,
    pub reasoning: Option<Cow<'a, str>>,
    pub refusal: Option<Cow<'a, str>>,
    pub text: Option<Cow<'a, str>>,
    /// `usage` and `timings` as sent (`null` reads as absent).
    pub usage: Option<&'a RawValue>,
    pub timings: Option<&'a RawValue>,
}

/// Reads a chunk's parts, or `None` when serde should read it.
pub(super) fn chunk_parts(data: &[u8]) -> Option<ChunkParts<'_>> {
    let mut c = Cursor::new(data);
    let mut out = ChunkParts::default();
    let mut seen = Seen::default();
    if !c.open(b'{', b'}')? {
        loop {
            match c.key()? {
                b"id" => {
                    seen.once(0)?;
                    out.id = c.opt_string()?;
                }
                b"choices" => {
                    seen.once(1)?;
                    choices(&mut c, &mut out)?;
                }
                b"usage" => {
                    seen.once(2)?;
                    out.usage = raw(c.opt_raw()?)?;
                }
                b"timings" => {
                    seen.once(3)?;
                    out.timings = raw(c.opt_raw()?)?;
                }
                // An error event (rare) is serde's: its message has several shapes.
                b"error" => return None,
                _ => c.skip_value()?,
            }
            if !c.next_or_close(b'}')? {
                break;
            }
        }
    }
    c.at_end().then_some(out)
}

/// A value's text as serde's borrowed raw value (read again, once: `usage` comes in the
/// last chunk only, unless continuous usage was asked for).
fn raw(text: Option<&str>) -> Option<Option<&RawValue>> {
    match text {
        None => Some(None),
        Some(t) => serde_json::from_str(t).ok().map(Some),
    }
}

/// The keys met so far in one object: serde's derive refuses a repeated known field, so a
/// repeat is left to it.
#[derive(Default)]
struct Seen(u8);

impl Seen {
    fn once(&mut self, bit: u8) -> Option<()> {
        let mask = 1 << bit;
        let first = self.0 & mask == 0;
        self.0 |= mask;
        first.then_some(())
    }
}

/// `choices`: `null`, or an array whose first element (an object) is read and the rest
/// skipped.
fn choices<'a>(c: &mut Cursor<'a>, out: &mut ChunkParts<'a>) -> Option<()> {
    if c.peek()? == b'n' {
        return c.opt_raw().map(|_| ());
    }
    if c.open(b'[', b']')? {
        return Some(());
    }
    choice(c, out)?;
    while c.next_or_close(b']')? {
        c.skip_value()?;
    }
    Some(())
}

/// The first choice: `delta`, `text`, `finish_reason`.
fn choice<'a>(c: &mut Cursor<'a>, out: &mut ChunkParts<'a>) -> Option<()> {
    if c.open(b'{', b'}')? {
        return Some(());
    }
    let mut seen = Seen::default();
    loop {
        match c.key()? {
            b"delta" => {
                seen.once(0)?;
                match c.peek()? {
                    b'n' => _ = c.opt_raw()?,
                    _ => delta(c, out)?,
                }
            }
            b"text" => {
                seen.once(1)?;
                out.text = c.opt_string()?;
            }
            b"finish_reason" => {
                seen.once(2)?;
                out.finish_reason = c.opt_string()?;
            }
            _ => c.skip_value()?,
        }
        if !c.next_or_close(b'}')? {
            return Some(());
        }
    }
}

/// The first choice's `delta` object: its text fields (`tool_calls` is read in a second pass
/// by `openai.rs`, as with serde).
fn delta<'a>(c: &mut Cursor<'a>, out: &mut ChunkParts<'a>) -> Option<()> {
    out.has_delta = true;
    if c.open(b'{', b'}')? {
        return Some(());
    }
    let mut seen = Seen::default();
    loop {
        let (bit, slot) = match c.key()? {
            b"content" => (0, &mut out.content),
            b"reasoning_content" => (1, &mut out.reasoning_content),
            b"reasoning" => (2, &mut out.reasoning),
            b"refusal" => (3, &mut out.refusal),
            _ => {
                c.skip_value()?;
                if !c.next_or_close(b'}')? {
                    return Some(());
                }
                continue;
            }
        };
        seen.once(bit)?;
        *slot = c.opt_string()?;
        if !c.next_or_close(b'}')? {
            return Some(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::openai::serde_parts;
    use super::*;

    /// Every `data:` payload of the recorded and synthetic transcripts (all APIs: the
    /// property holds for any JSON), and the simulator's chunk shape.
    fn recorded_payloads() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut out = vec![
            r#"{"id":"sim-1","object":"chat.completion.chunk","created":1,"model":"sim","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}"#.to_owned(),
        ];
        for sub in ["llama.cpp", "llama.cpp-11434", "synthetic"] {
            for entry in std::fs::read_dir(dir.join(sub)).expect("fixtures are readable") {
                let text = std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default();
                out.extend(
                    text.lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(|d| d.trim_start().to_owned())
                        .filter(|d| d.starts_with('{')),
                );
            }
        }
        out
    }

    /// Where the fast reader answers, serde answers the same; and it does answer the
    /// ordinary text chunks (so the fast path is really taken).
    fn agrees(data: &str) -> bool {
        let Some(fast) = chunk_parts(data.as_bytes()) else {
            return false;
        };
        let reference = serde_parts(data.as_bytes()).expect("serde reads what the fast path reads");
        assert_eq!(reference.1, None, "{data}");
        assert_eq!(format!("{fast:?}"), format!("{:?}", reference.0), "{data}");
        true
    }

    #[test]
    fn the_fast_reader_agrees_with_serde_on_every_recorded_chunk() {
        let payloads = recorded_payloads();
        assert!(payloads.len() > 500, "{} payloads", payloads.len());
        for data in payloads.iter().filter(|d| !agrees(d)) {
            // Only error events are left to serde in these transcripts.
            let value: serde_json::Value = serde_json::from_str(data).unwrap();
            assert!(value.get("error").is_some(), "left to serde: {data}");
        }
    }

    #[test]
    fn edge_cases_agree_or_go_to_serde() {
        let cases = [
            r#"{"choices":[]}"#,
            r#"{"choices":null,"usage":null,"timings":null}"#,
            r#"{"choices":[{"delta":null,"text":"t"}]}"#,
            r#"{"choices":[{"delta":{}},{"delta":{"content":"second"}}]}"#,
            r#"{"choices":[{"delta":{"content":"a\nb\u00e9","role":"assistant"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"r","reasoning_content":null,"refusal":""}}]}"#,
            r#"{"choices":[{"delta":{"refusal":"no"},"finish_reason":"stop"}]}"#,
            r#" { "id" : "x" , "choices" : [ { "delta" : { "content" : "" } } ] } "#,
            r#"{"choices":[{"delta":{"content":"x"}}],"usage":{"completion_tokens":3}}"#,
            r#"{"choices":[{"logprobs":{"content":[{"token":"a","logprob":-0.1,"bytes":[97]}]},"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"content":"\ud83d\ude00 \u00e9"}}]}"#,
        ];
        for case in cases {
            assert!(agrees(case), "the fast path should read {case}");
        }
        // Left to serde: a repeated field, a non-string text, an escaped key, an error,
        // a surrogate alone, trailing bytes, a choice that is not an object.
        let to_serde = [
            r#"{"id":"a","id":"b"}"#,
            r#"{"choices":[{"delta":{"content":5}}]}"#,
            r#"{"ch\u006fices":[]}"#,
            r#"{"error":{"message":"boom"}}"#,
            r#"{"choices":[{"delta":{"content":"\ud83d"}}]}"#,
            r#"{"choices":[]} x"#,
            r#"{"choices":[null]}"#,
        ];
        for case in to_serde {
            assert!(chunk_parts(case.as_bytes()).is_none(), "{case}");
        }
        // Bytes that are not UTF-8: checked in the text kept, as serde does, not in a
        // skipped string (serde does not check those either).
        assert!(chunk_parts(b"{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}").is_none());
        assert!(agrees_bytes(b"{\"model\":\"\xff\",\"choices\":[]}"));
        // Not UTF-8 in a key serde matches: left to it (it refuses). In a key inside a
        // skipped object: both accept.
        assert!(chunk_parts(b"{\"\xff\":1,\"choices\":[]}").is_none());
        assert!(agrees_bytes(b"{\"x\":{\"\xff\":1},\"choices\":[]}"));
        // Nesting past 64 inside a skipped field: left to serde, which skips it.
        let deep = format!(
            r#"{{"choices":[{{"logprobs":{}{},"delta":{{"content":"a"}}}}]}}"#,
            "[".repeat(70),
            "]".repeat(70)
        );
        assert!(chunk_parts(deep.as_bytes()).is_none());
        assert!(serde_parts(deep.as_bytes()).is_ok());
    }

    /// Cut or corrupted chunks: whenever the fast reader still answers, serde agrees.
    #[test]
    fn damaged_chunks_never_make_the_readers_disagree() {
        for data in recorded_payloads().iter().step_by(7).take(40) {
            let bytes = data.as_bytes();
            for cut in 0..bytes.len() {
                let _ = agrees_bytes(&bytes[..cut]);
                for flip in [b'"', b'}', b',', b'\\', b'0', b' '] {
                    let mut damaged = bytes.to_vec();
                    damaged[cut] = flip;
                    let _ = agrees_bytes(&damaged);
                }
            }
        }
    }

    fn agrees_bytes(data: &[u8]) -> bool {
        let Some(fast) = chunk_parts(data) else {
            return false;
        };
        let text = String::from_utf8_lossy(data);
        let reference = serde_parts(data).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(format!("{fast:?}"), format!("{:?}", reference.0), "{text}");
        true
    }
}
