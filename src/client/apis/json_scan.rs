//! A strict, borrowing JSON cursor for the hot path's fast readers (`openai_fast.rs`).
//!
//! Why by hand: serde_json's derive reads a Chat Completions chunk in 5,744 instructions,
//! though the client keeps four of its fields; a cursor that reads those in place and only
//! checks the grammar of the rest (`object`, `created`, `model`, `system_fingerprint`,
//! `logprobs`) takes 3,511, on every chunk of every run (docs/apis.md, "The fast chunk
//! reader").
//!
//! It never guesses: every method returns `None` for anything it does not fully check (a
//! malformed value, a surrogate not paired, nesting past 64 levels), and the caller then hands the
//! event to serde, which gives the answer or the error. So the fast path can only answer
//! where serde would answer the same, and the tests hold it to that.

use std::borrow::Cow;

/// Deepest nesting the cursor follows before it leaves the event to serde (whose limit is
/// 128 for the typed levels; it skips ignored values to any depth).
const MAX_DEPTH: u32 = 64;

/// A position in one event's JSON bytes.
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: u32,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`. Like serde_json, it checks UTF-8 only in the
    /// strings it returns and the keys it reads, not in the strings it skips.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            at: 0,
            depth: 0,
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.at).copied()
    }

    /// Consumes `byte` (after whitespace) if it is next.
    pub fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.at += usize::from(next);
        next
    }

    /// Whether only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.at == self.bytes.len()
    }

    /// After a member or an element: `Some(true)` past a comma, `Some(false)` past the
    /// closing `close`, `None` for anything else.
    pub fn next_or_close(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Some(true)
            }
            c if c == close => {
                self.at += 1;
                self.depth -= 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// Opens an object or array: consumes `open`, and says whether it is empty (its
    /// `close` consumed too).
    pub fn open(&mut self, open: u8, close: u8) -> Option<bool> {
        if !self.eat(open) || self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let empty = self.eat(close);
        if empty {
            self.depth -= 1;
        }
        Some(empty)
    }

    /// An object key (a string without escapes, checked for UTF-8 as serde does) as bytes,
    /// and its colon. Bytes, because the readers match keys against byte strings and a
    /// UTF-8 check per key cost more than the match (most keys are ASCII, checked by word).
    pub fn key(&mut self) -> Option<&'a [u8]> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        let mut i = self.plain_run(start);
        // The short last block is walked; an escape or a control byte is serde's.
        while self
            .bytes
            .get(i)
            .is_some_and(|&c| c >= 0x20 && c != b'"' && c != b'\\')
        {
            i += 1;
        }
        if self.bytes.get(i) != Some(&b'"') {
            return None;
        }
        let key = &self.bytes[start..i];
        if !key.is_ascii() {
            std::str::from_utf8(key).ok()?;
        }
        self.at = i + 1;
        self.eat(b':').then_some(key)
    }

    /// A string or `null` (`Some(None)`); `None` for any other value.
    pub fn opt_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        match self.peek()? {
            b'"' => self.string().map(Some),
            b'n' => self.literal(b"null").map(|_| None),
            _ => None,
        }
    }

    /// The raw text of the next value, or `None` inside for `null`.
    pub fn opt_raw(&mut self) -> Option<Option<&'a str>> {
        if self.peek()? == b'n' {
            return self.literal(b"null").map(|_| None);
        }
        let start = self.at;
        self.skip_value()?;
        std::str::from_utf8(&self.bytes[start..self.at])
            .ok()
            .map(Some)
    }

    /// A string, borrowed when it has no escapes.
    pub fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        let mut i = self.plain_run(start);
        loop {
            match *self.bytes.get(i)? {
                b'"' => {
                    self.at = i + 1;
                    let s = std::str::from_utf8(&self.bytes[start..i]).ok()?;
                    return Some(Cow::Borrowed(s));
                }
                b'\\' => return self.escaped_string(start),
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
    }

    /// The rest of a string that has escapes, decoded, from `start` (after its quote).
    #[cold]
    fn escaped_string(&mut self, start: usize) -> Option<Cow<'a, str>> {
        let mut out: Vec<u8> = Vec::with_capacity(32);
        let mut i = start;
        loop {
            match *self.bytes.get(i)? {
                b'"' => {
                    self.at = i + 1;
                    return String::from_utf8(out).ok().map(Cow::Owned);
                }
                b'\\' => {
                    let (ch, used) = self.escape(i)?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    i += used;
                }
                c if c < 0x20 => return None,
                c => {
                    out.push(c);
                    i += 1;
                }
            }
        }
    }

    /// The character of the escape at `i` (a backslash) and its length in bytes. A high
    /// surrogate followed by a low one (`\ud83d\ude00`, an emoji as Python's `json.dumps`
    /// writes it) is one character of 12 bytes, as serde decodes it; a surrogate alone is
    /// left to serde (which refuses it in a string it keeps, and accepts it in a value it
    /// skips).
    fn escape(&self, i: usize) -> Option<(char, usize)> {
        let c = match *self.bytes.get(i + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let code = self.hex4(i + 2)?;
                if (0xD800..0xDC00).contains(&code) {
                    if self.bytes.get(i + 6..i + 8)? != b"\\u" {
                        return None;
                    }
                    let low = self.hex4(i + 8)?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    let pair = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    return char::from_u32(pair).map(|c| (c, 12));
                }
                // A low surrogate alone is no `char`: None.
                return char::from_u32(code).map(|c| (c, 6));
            }
            _ => return None,
        };
        Some((c, 2))
    }

    /// The four hex digits at `i`, as a number.
    fn hex4(&self, i: usize) -> Option<u32> {
        let hex = std::str::from_utf8(self.bytes.get(i..i + 4)?).ok()?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(hex, 16).ok()
    }

    /// Skips one value of any kind, checking its grammar.
    pub fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => {
                if self.open(b'{', b'}')? {
                    return Some(());
                }
                loop {
                    self.key_any()?;
                    self.skip_value()?;
                    if !self.next_or_close(b'}')? {
                        return Some(());
                    }
                }
            }
            b'[' => {
                if self.open(b'[', b']')? {
                    return Some(());
                }
                loop {
                    self.skip_value()?;
                    if !self.next_or_close(b']')? {
                        return Some(());
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    /// Any key (escapes allowed) and its colon.
    fn key_any(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.skip_string()?;
        self.eat(b':').then_some(())
    }

    /// Skips a string, checking its escapes.
    fn skip_string(&mut self) -> Option<()> {
        let mut i = self.plain_run(self.at + 1);
        loop {
            match *self.bytes.get(i)? {
                b'"' => {
                    self.at = i + 1;
                    return Some(());
                }
                b'\\' => i += self.escape(i)?.1,
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
    }

    /// From `i`, the first quote, backslash or control byte, or the start of the last short
    /// block: a string's plain run, eight bytes a step, so an id or a model name is not
    /// walked byte by byte. The bit tricks are "Bit Twiddling Hacks"' "determine if a word
    /// has a byte less than n": the lowest flagged byte of a block is exact (flags above it
    /// may be false, from a borrow, and are not used).
    fn plain_run(&self, mut i: usize) -> usize {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
        while let Some(block) = self.bytes.get(i..i + 8) {
            let v = u64::from_le_bytes(block.try_into().expect("eight bytes"));
            let stops = zero_byte(v ^ (ONES * u64::from(b'"')))
                | zero_byte(v ^ (ONES * u64::from(b'\\')))
                | (v.wrapping_sub(ONES * 0x20) & !v & HIGHS);
            if stops != 0 {
                return i + (stops.trailing_zeros() / 8) as usize;
            }
            i += 8;
        }
        i
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// Skips a number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn skip_number(&mut self) -> Option<()> {
        let b = self.bytes;
        let mut i = self.at + usize::from(b.get(self.at) == Some(&b'-'));
        let digits = |mut i: usize| {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => i = digits(i),
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            let end = digits(i + 1);
            if end == i + 1 {
                return None;
            }
            i = end;
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1 + usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
            let end = digits(i);
            if end == i {
                return None;
            }
            i = end;
        }
        self.at = i;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skips(text: &str) -> bool {
        let mut c = Cursor::new(text.as_bytes());
        c.skip_value().is_some() && c.at_end()
    }

    /// What the cursor accepts, serde accepts; and it accepts the ordinary values serde
    /// does (it leaves some rarer ones, surrogates and deep nesting, to serde).
    #[test]
    fn skips_what_serde_reads_and_refuses_what_serde_refuses() {
        let good = [
            r#"{"a":[1,-2.5e+3,0,true,false,null,"x\n\u00e9\"",{}],"b":{"c":[]}}"#,
            " [ 1 , 2 ] ",
            r#""\/\b\f\r\t""#,
            "-0.0E-0",
        ];
        for text in good {
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
            assert!(skips(text), "{text}");
        }
        let bad = [
            "{",
            "[1,]",
            "{\"a\" 1}",
            "01",
            "1.",
            "1e",
            "-",
            "tru",
            "\"a",
            "\"\\x\"",
            "\"\u{1}\"",
            "{\"a\":1,}",
            "[1 2]",
            "\"\\u12\"",
        ];
        for text in bad {
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(text).is_err());
            assert!(!skips(text), "{text}");
        }
    }

    #[test]
    fn strings_borrow_without_escapes_and_decode_with_them() {
        let mut c = Cursor::new(br#""plain" "a\nb\u00e9\\" "\ud83d\ude00!""#);
        assert!(matches!(c.string(), Some(Cow::Borrowed("plain"))));
        assert_eq!(c.string().as_deref(), Some("a\nbé\\"));
        // A surrogate pair is one character, as serde reads it.
        assert_eq!(c.string().as_deref(), Some("😀!"));
        assert_eq!(
            serde_json::from_str::<String>(r#""\ud83d\ude00!""#).unwrap(),
            "😀!"
        );
    }

    /// A surrogate that is not half of a pair is left to serde, which refuses it in a
    /// string it keeps.
    #[test]
    fn lone_surrogates_are_left_to_serde() {
        for text in [
            r#""\ud83d""#,
            r#""\ud83dx""#,
            r#""\ud83d\u0041""#,
            r#""\ude00""#,
            r#""\ud83d\ud83d""#,
            r#""\ud83d\ude0""#,
        ] {
            assert_eq!(Cursor::new(text.as_bytes()).string(), None, "{text}");
            assert!(!skips(text), "{text}");
            assert!(serde_json::from_str::<String>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_serde() {
        let deep = "[".repeat(70) + &"]".repeat(70);
        assert!(!skips(&deep));
        let ok = "[".repeat(60) + &"]".repeat(60);
        assert!(skips(&ok));
    }
}
