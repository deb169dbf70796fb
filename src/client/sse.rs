//! Incremental Server-Sent Events parser.
//!
//! Written by hand because it sits on the hot path: bytes are fed as they are read from the
//! socket, and every event completed by that read is handed out at once, borrowing from an
//! internal buffer (no allocation per event once the buffers have grown). It follows the
//! WHATWG event-stream rules that matter for LLM APIs: lines end in `\n`, `\r\n` or `\r`
//! (a `\r\n` may be split across reads), `:` starts a comment, `data:` lines of one event are
//! joined with `\n`, a single space after the colon is dropped, and a blank line dispatches.

/// One dispatched event, borrowing from the parser.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct SseEvent<'a> {
    /// The `event:` field, if any (`message` when absent).
    pub event: Option<&'a str>,
    /// The joined `data:` lines.
    pub data: &'a [u8],
}

/// Parser state carried between reads.
#[derive(Debug)]
pub struct SseParser {
    /// Most bytes one line or one event's data may hold; beyond it the parser stops (see
    /// [`SseParser::overflowed`]), so a line that never ends cannot grow memory without bound.
    max: usize,
    overflow: bool,
    /// Bytes of an unfinished line.
    line: Vec<u8>,
    /// Data of the event being built.
    data: Vec<u8>,
    /// `event:` value of the event being built.
    event: String,
    has_data: bool,
    /// The previous chunk ended in `\r`: a leading `\n` in the next one belongs to it.
    after_cr: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::with_max_line(usize::MAX)
    }
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser that gives up on a line or event longer than `max` bytes.
    pub fn with_max_line(max: usize) -> Self {
        Self {
            max,
            overflow: false,
            line: Vec::new(),
            data: Vec::new(),
            event: String::new(),
            has_data: false,
            after_cr: false,
        }
    }

    /// A line or an event's data grew past the limit; the stream is not parsed further.
    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// Feeds bytes; calls `on_event` for every event they complete. Stops early, returning
    /// `false`, when `on_event` returns `false`.
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>) -> bool,
    ) -> bool {
        if self.overflow {
            return false;
        }
        if self.after_cr {
            self.after_cr = false;
            if bytes.first() == Some(&b'\n') {
                bytes = &bytes[1..];
            }
        }
        while !bytes.is_empty() {
            match memchr::memchr2(b'\n', b'\r', bytes) {
                None => {
                    if self.line.len() + bytes.len() > self.max {
                        self.overflow = true;
                        self.line = Vec::new();
                        return false;
                    }
                    self.line.extend_from_slice(bytes);
                    return true;
                }
                Some(i) => {
                    let terminator = bytes[i];
                    let rest_start = if terminator == b'\r' {
                        if i + 1 < bytes.len() {
                            if bytes[i + 1] == b'\n' {
                                i + 2
                            } else {
                                i + 1
                            }
                        } else {
                            self.after_cr = true;
                            i + 1
                        }
                    } else {
                        i + 1
                    };
                    let keep_going = if self.line.is_empty() {
                        self.process_line(&bytes[..i], &mut on_event)
                    } else {
                        let mut line = std::mem::take(&mut self.line);
                        line.extend_from_slice(&bytes[..i]);
                        let k = self.process_line(&line, &mut on_event);
                        line.clear();
                        self.line = line;
                        k
                    };
                    bytes = &bytes[rest_start..];
                    if !keep_going {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Whether an event has been started but not dispatched (a stream ending here was cut).
    pub fn has_pending(&self) -> bool {
        self.has_data || !self.line.is_empty()
    }

    fn process_line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>) -> bool,
    ) -> bool {
        if line.is_empty() {
            if !self.has_data {
                self.event.clear();
                return true;
            }
            let event = if self.event.is_empty() {
                None
            } else {
                Some(self.event.as_str())
            };
            let keep_going = on_event(SseEvent {
                event,
                data: &self.data,
            });
            self.data.clear();
            self.event.clear();
            self.has_data = false;
            return keep_going;
        }
        if line[0] == b':' {
            return true; // comment (keep-alive pings)
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max {
                    self.overflow = true;
                    self.data = Vec::new();
                    return false;
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            _ => {} // id, retry and unknown fields carry nothing we measure
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn collect(parts: &[&[u8]]) -> Vec<(Option<String>, String)> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for part in parts {
            p.feed(part, |e| {
                out.push((
                    e.event.map(str::to_owned),
                    String::from_utf8_lossy(e.data).into_owned(),
                ));
                true
            });
        }
        out
    }

    #[test]
    fn basic_events_comments_and_done() {
        let s = b": keep-alive\n\ndata: {\"a\":1}\n\ndata:{\"b\":2}\r\n\r\nevent: ping\ndata: x\n\ndata: [DONE]\n\n";
        let ev = collect(&[s]);
        assert_eq!(
            ev,
            vec![
                (None, "{\"a\":1}".into()),
                (None, "{\"b\":2}".into()),
                (Some("ping".into()), "x".into()),
                (None, "[DONE]".into())
            ]
        );
    }

    #[test]
    fn multi_line_data_is_joined_and_lone_cr_ends_lines() {
        let ev = collect(&[b"data: a\rdata: b\r\rdata:  c\n\n"]);
        assert_eq!(ev, vec![(None, "a\nb".into()), (None, " c".into())]);
    }

    #[test]
    fn crlf_split_across_reads_is_one_line_end() {
        let ev = collect(&[b"data: a\r", b"\n\r", b"\ndata: b\n\n"]);
        assert_eq!(ev, vec![(None, "a".into()), (None, "b".into())]);
    }

    #[test]
    fn unfinished_event_is_pending() {
        let mut p = SseParser::new();
        p.feed(b"data: {\"x\"", |_| true);
        assert!(p.has_pending());
        let mut n = 0;
        p.feed(b":1}\n\n", |_| {
            n += 1;
            true
        });
        assert_eq!(n, 1);
        assert!(!p.has_pending());
    }

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/fixtures/llama.cpp/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn llama_cpp_transcripts_parse_into_json_events() {
        for name in [
            "sse_chat.txt",
            "sse_comp_true.txt",
            "sse_emoji.txt",
            "sse_ja.txt",
        ] {
            let bytes = fixture(name);
            let ev = collect(&[&bytes]);
            assert!(ev.len() > 10, "{name}");
            assert_eq!(ev.last().unwrap().1, "[DONE]", "{name}");
            for (_, data) in &ev[..ev.len() - 1] {
                serde_json::from_str::<serde_json::Value>(data)
                    .unwrap_or_else(|e| panic!("{name}: {e}: {data}"));
            }
        }
    }

    proptest! {
        /// Any split of a stream into reads gives the same events as one read.
        #[test]
        fn any_split_gives_same_events(cuts in proptest::collection::vec(0usize..20_000, 0..40), crlf in any::<bool>()) {
            let mut bytes = fixture("sse_emoji.txt");
            bytes.truncate(6_000);
            bytes.extend_from_slice(b"\n\n: comment\n\ndata: [DONE]\n\n");
            if crlf {
                let s = String::from_utf8(bytes).unwrap().replace('\n', "\r\n");
                bytes = s.into_bytes();
            }
            let whole = collect(&[&bytes]);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut parts = Vec::new();
            let mut prev = 0;
            for c in cuts { parts.push(&bytes[prev..c]); prev = c; }
            parts.push(&bytes[prev..]);
            prop_assert_eq!(collect(&parts), whole);
        }

        /// Arbitrary bytes, split anywhere: no panic, and the same events as in one read.
        #[test]
        fn arbitrary_bytes_split_anywhere(
            bytes in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), any::<u8>()], 0..600),
            cut in any::<prop::sample::Index>(),
        ) {
            let c = cut.index(bytes.len() + 1);
            prop_assert_eq!(collect(&[&bytes[..c], &bytes[c..]]), collect(&[&bytes]));
            // And no dialect's parser panics on whatever the events carry.
            let mut p = SseParser::new();
            for endpoint in crate::client::Endpoint::ALL {
                use crate::client::apis::StreamParser;
                let mut parser = crate::client::apis::parser_for(endpoint);
                p.feed(&bytes, |e| {
                    let _ = parser.parse(e.event, e.data);
                    true
                });
                p = SseParser::new();
            }
        }
    }

    /// A line longer than the limit stops the parser instead of growing without bound.
    #[test]
    fn an_endless_line_overflows_at_the_limit() {
        let mut p = SseParser::with_max_line(1024);
        let chunk = [b'x'; 300];
        let mut fed = 0;
        while p.feed(&chunk, |_| true) {
            fed += 300;
            assert!(fed < 10_000, "never overflowed");
        }
        assert!(p.overflowed());
        assert!(fed <= 1024);
        let mut p = SseParser::with_max_line(1024);
        let mut events = 0;
        let big = format!("data: {}\n\n", "y".repeat(2000));
        p.feed(big.as_bytes(), |_| {
            events += 1;
            true
        });
        assert!(p.overflowed() && events == 0);
    }

    #[test]
    fn every_single_byte_split_gives_same_events() {
        let bytes = fixture("sse_chat.txt");
        let whole = collect(&[&bytes]);
        let parts: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(collect(&parts), whole);
    }
}
