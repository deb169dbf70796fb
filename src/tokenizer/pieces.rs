//! `cl100k_base`'s pre-tokenizer for ASCII text, written by hand so that counting the
//! tokens of a synthetic prompt need not run a backtracking regex.
//!
//! tiktoken encodes in two steps: a regular expression cuts the text into pieces, then
//! byte-pair merges run inside each piece. For the request feeder's prompts the regex was
//! nearly all of the cost (about 3,000 instructions a token in `fancy_regex`, against a
//! few hundred for the merges), and every exact-length prompt is counted at least once.
//! [`piece_end`] follows the pattern below, alternative by alternative, for ASCII bytes
//! only, where its classes are simple: `\p{L}` is `A-Za-z`, `\p{N}` is `0-9`, `\s` is tab,
//! line feed, vertical tab, form feed, carriage return and space (Unicode's White_Space;
//! the ASCII separators 0x1C–0x1F are not in it). Text with any other byte goes to
//! tiktoken whole. The tests hold it to the pattern itself, run by `fancy_regex`, on every
//! string of up to three bytes of a hostile alphabet and on many longer ones.
//!
//! The pattern (tiktoken-rs 0.12, `cl100k_base`), its alternatives tried in order at each
//! position, the first that matches winning:
//!
//! ```text
//! '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
//! |\s++$|\s*[\r\n]|\s+(?!\S)|\s
//! ```

/// The pattern [`piece_end`] follows, as tiktoken-rs 0.12 builds `cl100k_base` with it.
#[cfg(test)]
pub(super) const CL100K_PATTERN: &str = "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s";

fn is_letter(c: u8) -> bool {
    c.is_ascii_alphabetic()
}

fn is_digit(c: u8) -> bool {
    c.is_ascii_digit()
}

/// `\s` on ASCII: Unicode's White_Space, which is not `u8::is_ascii_whitespace` (that
/// leaves out the vertical tab).
fn is_space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

fn is_newline(c: u8) -> bool {
    c == b'\r' || c == b'\n'
}

/// `[^\s\p{L}\p{N}]`: punctuation, symbols and control bytes.
fn is_symbol(c: u8) -> bool {
    !is_space(c) && !is_letter(c) && !is_digit(c)
}

/// The end of the run of bytes from `i` that satisfy `class`.
fn run_end(b: &[u8], mut i: usize, class: fn(u8) -> bool) -> usize {
    while i < b.len() && class(b[i]) {
        i += 1;
    }
    i
}

/// The end of the piece that starts at `i` (`i < b.len()`), for ASCII `b`: where the
/// pattern's match starting at `i` ends. Every byte starts some alternative, so pieces
/// tile the text.
pub(super) fn piece_end(b: &[u8], i: usize) -> usize {
    let n = b.len();
    let c = b[i];
    let next = |k: usize| b.get(i + k).copied();
    // '(?i:[sdmt]|ll|ve|re): a contraction, whatever follows it.
    if c == b'\'' {
        let lower = |k| next(k).map(|x: u8| x.to_ascii_lowercase());
        match (lower(1), lower(2)) {
            (Some(b's' | b'd' | b'm' | b't'), _) => return i + 2,
            (Some(b'l'), Some(b'l')) | (Some(b'v' | b'r'), Some(b'e')) => return i + 3,
            _ => {}
        }
    }
    // [^\r\n\p{L}\p{N}]?+\p{L}++: letters, after at most one byte that is none of these.
    if is_letter(c) {
        return run_end(b, i + 1, is_letter);
    }
    if !is_newline(c) && !is_digit(c) && next(1).is_some_and(is_letter) {
        return run_end(b, i + 2, is_letter);
    }
    // \p{N}{1,3}+: up to three digits.
    if is_digit(c) {
        return run_end(&b[..n.min(i + 3)], i + 1, is_digit);
    }
    // ` ?[^\s\p{L}\p{N}]++[\r\n]*+`: symbols, after at most one space, then line breaks.
    let symbols_from = if c == b' ' && next(1).is_some_and(is_symbol) {
        i + 1
    } else {
        i
    };
    if is_symbol(b[symbols_from]) {
        let end = run_end(b, symbols_from + 1, is_symbol);
        return run_end(b, end, is_newline);
    }
    // Only whitespace starts here: its run is [i, end).
    let end = run_end(b, i, is_space);
    // \s++$: the run reaches the end of the text.
    if end == n {
        return n;
    }
    // \s*[\r\n]: up to the run's last line break (the greedy \s* gives bytes back until
    // a line break follows it).
    if let Some(last) = b[i..end].iter().rposition(|&x| is_newline(x)) {
        return i + last + 1;
    }
    // \s+(?!\S): all but the run's last byte, which stays to lead the next piece.
    if end - i >= 2 {
        return end - 1;
    }
    // \s: one byte.
    i + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces the pattern itself cuts `text` into.
    fn regex_pieces(re: &fancy_regex::Regex, text: &str) -> Vec<String> {
        re.find_iter(text)
            .map(|m| m.expect("the pattern runs").as_str().to_owned())
            .collect()
    }

    fn hand_pieces(text: &str) -> Vec<String> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let end = piece_end(b, i);
            assert!(end > i, "an empty piece at {i} of {text:?}");
            out.push(text[i..end].to_owned());
            i = end;
        }
        out
    }

    /// Bytes that meet every branch: letters of both cases (and every contraction's own),
    /// digits, each kind of whitespace, an apostrophe, symbols, a control byte and a
    /// separator that `\s` leaves out.
    const ALPHABET: &[u8] = b"aBsLvErdMe7 \t\n\r\x0B\x0C'._(\x00\x1F/";

    #[test]
    fn every_short_string_splits_as_the_pattern_does() {
        let re = fancy_regex::Regex::new(CL100K_PATTERN).expect("the pattern compiles");
        let mut texts = vec![String::new()];
        let mut checked = 0;
        for _ in 0..3 {
            let mut longer = Vec::new();
            for t in &texts {
                for &c in ALPHABET {
                    let mut s = t.clone();
                    s.push(c as char);
                    assert_eq!(hand_pieces(&s), regex_pieces(&re, &s), "{s:?}");
                    checked += 1;
                    longer.push(s);
                }
            }
            texts = longer;
        }
        assert_eq!(checked, 24 + 24 * 24 + 24 * 24 * 24);
    }

    #[test]
    fn long_mixed_strings_split_as_the_pattern_does() {
        use rand::{RngExt, SeedableRng};
        let re = fancy_regex::Regex::new(CL100K_PATTERN).expect("the pattern compiles");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let words = [
            "hello", " world", "'ll", "'S", "'re", "'D", "'ve", "'m", "'T", "  ", "\r\n", "123456",
            " (", "x_y",
        ];
        for _ in 0..3000 {
            let len = rng.random_range(4..40);
            let mut s = String::new();
            for _ in 0..len {
                if rng.random_bool(0.3) {
                    s.push_str(words[rng.random_range(0..words.len())]);
                } else {
                    s.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
                }
            }
            assert_eq!(hand_pieces(&s), regex_pieces(&re, &s), "{s:?}");
        }
        // Every printable ASCII byte and every control byte, alone and between words.
        for c in 0u8..128 {
            for s in [
                (c as char).to_string(),
                format!("ab{}cd", c as char),
                format!(" {} 9", c as char),
            ] {
                assert_eq!(hand_pieces(&s), regex_pieces(&re, &s), "{s:?}");
            }
        }
    }
}
