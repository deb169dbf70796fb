//! A small block-style YAML writer for `serde_json::Value`.
//!
//! `servebench k8s` prints manifests that people read, diff and hand to `kubectl`, so they
//! should look like the YAML everyone else writes rather than one line of JSON. The main
//! crate has no YAML dependency and this output is simple (maps, lists, strings, numbers),
//! so a writer of a couple of hundred lines is cheaper than a crate.
//!
//! The one hard part is strings. Readers disagree about plain scalars: YAML 1.1 readers
//! (PyYAML, the Go libraries behind `kubectl`) turn `yes`, `on`, `1:20` or `2024-01-01`
//! into booleans, numbers and dates, YAML 1.2 readers do not. A string is therefore written
//! plain only when no reader of either version could take it for something else, and in
//! double quotes otherwise; multi-line strings become literal blocks (`|`) when that
//! notation can carry them exactly. Keys come out in the `Map`'s own order (sorted, unless
//! serde_json's `preserve_order` feature is on); nothing is reordered here.

use serde_json::{Map, Number, Value};

/// Spaces per nesting level, and the offset of a literal block's text from its owner.
const STEP: usize = 2;
/// Longest key written in the usual `key: value` form (YAML's limit is 1024 characters).
const MAX_IMPLICIT_KEY: usize = 1000;

/// Renders documents as one YAML stream; every document starts with a `---` line.
pub fn to_yaml(docs: &[Value]) -> String {
    let mut out = String::new();
    for doc in docs {
        out.push_str("---\n");
        write_document(&mut out, doc);
    }
    out
}

/// Renders one value as a single YAML document body, without the `---` line.
pub fn value_to_yaml(value: &Value) -> String {
    let mut out = String::new();
    write_document(&mut out, value);
    out
}

fn write_document(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) if !map.is_empty() => write_map(out, map, 0, false),
        Value::Array(items) if !items.is_empty() => write_seq(out, items, 0, false),
        // A top-level scalar is owned by "column 0", so a literal block's text sits at
        // column 2, the same offset as everywhere else.
        scalar => write_scalar(out, scalar, 0, false),
    }
}

/// Writes a block mapping whose keys sit at column `indent`. With `first_inline` the first
/// key continues a line the caller started (`- key: ...`).
fn write_map(out: &mut String, map: &Map<String, Value>, indent: usize, first_inline: bool) {
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 || !first_inline {
            pad(out, indent);
        }
        let key = key_text(key);
        if key.chars().count() > MAX_IMPLICIT_KEY {
            // Readers stop looking for the ':' of an implicit key after 1024 characters;
            // an explicit `? key` entry has no such limit.
            out.push_str("? ");
            out.push_str(&key);
            out.push('\n');
            pad(out, indent);
        } else {
            out.push_str(&key);
        }
        out.push(':');
        match value {
            Value::Object(inner) if !inner.is_empty() => {
                out.push('\n');
                write_map(out, inner, indent + STEP, false);
            }
            Value::Array(items) if !items.is_empty() => {
                // Lists under a key start at the key's own column, as `kubectl` prints
                // them; both forms are valid and this one keeps deep specs narrower.
                out.push('\n');
                write_seq(out, items, indent, false);
            }
            scalar => write_scalar(out, scalar, indent, true),
        }
    }
}

/// Writes a block sequence whose dashes sit at column `indent`.
fn write_seq(out: &mut String, items: &[Value], indent: usize, first_inline: bool) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !first_inline {
            pad(out, indent);
        }
        out.push('-');
        match item {
            // A map or list item starts on the dash's line and continues two columns in,
            // which is where the dash plus its space leave the first key.
            Value::Object(inner) if !inner.is_empty() => {
                out.push(' ');
                write_map(out, inner, indent + STEP, true);
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push(' ');
                write_seq(out, inner, indent + STEP, true);
            }
            scalar => write_scalar(out, scalar, indent, true),
        }
    }
}

/// Writes a scalar (or an empty map/list) and its line end. `owner` is the column of the
/// collection it belongs to; `after_indicator` says whether a `key:` or `-` precedes it.
fn write_scalar(out: &mut String, value: &Value, owner: usize, after_indicator: bool) {
    if after_indicator {
        out.push(' ');
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_text(n)),
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
        Value::String(s) if literal_ok(s) => {
            write_literal(out, s, owner);
            return;
        }
        Value::String(s) => out.push_str(&scalar_text(s)),
    }
    out.push('\n');
}

/// Writes `s` as a literal block whose text starts two columns right of `owner`.
fn write_literal(out: &mut String, s: &str, owner: usize) {
    out.push('|');
    // Readers find a block's indentation from its first non-empty line; when that line
    // itself starts with spaces, the indentation has to be stated (relative to the owner).
    let first_text = s.split('\n').find(|line| !line.is_empty());
    if first_text.is_some_and(|line| line.starts_with(' ')) {
        out.push_str(&STEP.to_string());
    }
    // Chomping: `-` drops the final line break, no indicator keeps exactly one, `+` keeps
    // all of them. The body below is `s` minus its final break in every case.
    let body = s.strip_suffix('\n').unwrap_or(s);
    if !s.ends_with('\n') {
        out.push('-');
    } else if body.ends_with('\n') {
        out.push('+');
    }
    out.push('\n');
    for line in body.split('\n') {
        if !line.is_empty() {
            pad(out, owner + STEP);
            out.push_str(line);
        }
        out.push('\n');
    }
}

/// Whether `s` can be a literal block that reads back byte for byte: it has a line break,
/// at least one non-empty line (a block of only breaks reads back as ""), nothing that
/// needs an escape (tabs and carriage returns included, which readers treat unevenly), and
/// no line ending in a space (trailing spaces are easy to lose and confuse some readers).
fn literal_ok(s: &str) -> bool {
    s.contains('\n')
        && s.chars().all(|c| c == '\n' || !needs_escape(c))
        && s.split('\n').any(|line| !line.is_empty())
        && s.split('\n').all(|line| !line.ends_with(' '))
}

/// A key: plain when safe, double-quoted otherwise (never a block scalar).
fn key_text(key: &str) -> String {
    scalar_text(key)
}

/// A one-line string: plain when safe, double-quoted otherwise.
fn scalar_text(s: &str) -> String {
    if plain_ok(s) {
        s.to_string()
    } else {
        double_quoted(s)
    }
}

/// Words that some YAML reader (1.1 or 1.2) resolves to null, a boolean or a special key.
/// Compared case-insensitively, which also quotes harmless mixed-case spellings.
const RESERVED: &[&str] = &[
    "~", "null", "true", "false", "yes", "no", "y", "n", "on", "off", "=", "<<",
];

/// Characters that mean something when they start a plain scalar. `-` is handled apart:
/// `--plan` is a fine plain scalar, `-`, `- x`, `-1` and `---` are not.
const LEADING_INDICATORS: &str = "?:,[]{}#&*!|>'\"%@`";

/// Whether `s` reads back as the same string when written without quotes.
fn plain_ok(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false; // "" would read as null
    };
    if LEADING_INDICATORS.contains(first) || first == ' ' || s.ends_with(' ') {
        return false;
    }
    if s.chars().any(needs_escape) {
        return false;
    }
    // ": " starts a mapping value, " #" a comment, and a final ':' is a key.
    if s.contains(": ") || s.contains(" #") || s.ends_with(':') {
        return false;
    }
    // Anything that starts like a number could be an int, float, octal, hex, base-60 value
    // (YAML 1.1) or a timestamp: quoting every such string is simpler than matching each
    // reader's regular expressions, and costs only a pair of quotes on strings like "500m".
    let second = chars.next();
    if first == '-' && (s.starts_with("---") || second.is_none_or(|c| c == ' ')) {
        return false;
    }
    let numeric_start = first.is_ascii_digit()
        || first == '.'
        || ("+-".contains(first) && second.is_some_and(|c| c.is_ascii_digit() || c == '.'));
    if numeric_start {
        return false;
    }
    !RESERVED.iter().any(|word| s.eq_ignore_ascii_case(word))
}

/// Characters that YAML cannot hold unescaped (or that some reader treats as a line
/// break): controls, including tab, CR, DEL and NEL, the Unicode line and paragraph
/// separators, the byte-order mark and the two non-characters.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}'
        )
}

/// `s` in double quotes, with everything that needs it escaped.
fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if needs_escape(c) && (c as u32) <= 0xFF => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c if needs_escape(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A number as YAML text. Integers print as they are. `serde_json` prints some floats as
/// `1e20`; YAML 1.1 readers only see a float in that when it has a dot and a signed
/// exponent, so such text becomes `1.0e+20` (the same value for every reader).
fn number_text(n: &Number) -> String {
    let text = n.to_string();
    if !n.is_f64() {
        return text;
    }
    let Some(e) = text.find(['e', 'E']) else {
        return text;
    };
    let (mantissa, exponent) = text.split_at(e);
    let exponent = &exponent[1..];
    let mantissa = if mantissa.contains('.') {
        mantissa.to_string()
    } else {
        format!("{mantissa}.0")
    };
    let sign = if exponent.starts_with(['+', '-']) {
        ""
    } else {
        "+"
    };
    format!("{mantissa}e{sign}{exponent}")
}

fn pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> String {
        value_to_yaml(&v)
    }

    #[test]
    fn strings_that_readers_would_misread_are_quoted() {
        for s in [
            "",
            "yes",
            "No",
            "ON",
            "off",
            "y",
            "N",
            "true",
            "False",
            "null",
            "Null",
            "~",
            "=",
            "<<",
            "1.0",
            "0x10",
            "0o17",
            "017",
            "1e3",
            ".5",
            ".inf",
            "-.inf",
            "+1",
            "+.5",
            "1:20",
            "2024-01-01",
            "12",
            "500m",
            "1Gi",
            "-1",
            "-.5",
        ] {
            assert_eq!(scalar_text(s), format!("\"{s}\""), "{s:?} must be quoted");
        }
    }

    #[test]
    fn indicators_and_edges_are_quoted() {
        for s in [
            "a: b", "a #b", "key:", "#x", "-", "- x", "---", "*ref", "&anchor", "!tag", "|x", ">x",
            "'x", "\"x", "%x", "@x", "`x", "?x", ":x", ",x", "[x", "]x", "{x", "}x", " lead",
            "trail ",
        ] {
            assert!(!plain_ok(s), "{s:?} must not be plain");
        }
    }

    #[test]
    fn ordinary_strings_stay_plain() {
        for s in [
            "servebench",
            "app.kubernetes.io/name",
            "http://host:8000/v1",
            "metadata.annotations['batch.kubernetes.io/job-completion-index']",
            "/results/shard-$(JOB_COMPLETION_INDEX)",
            "a#b",
            "v1.2.3",
            "Indexed",
            "x-y",
            "--plan",
            "-x",
            "中文",
        ] {
            assert_eq!(scalar_text(s), s, "{s:?} should stay plain");
        }
    }

    #[test]
    fn escapes_in_double_quotes() {
        assert_eq!(double_quoted("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(double_quoted("t\tr\rz\0"), r#""t\tr\rz\0""#);
        assert_eq!(double_quoted("\u{7}\u{7F}\u{85}"), r#""\x07\x7F\x85""#);
        assert_eq!(double_quoted("\u{2028}\u{FEFF}"), r#""\u2028\uFEFF""#);
        assert_eq!(scalar_text("tab\there"), r#""tab\there""#);
    }

    #[test]
    fn scalars_and_empty_collections() {
        let v = json!({"a": null, "b": true, "c": 3, "d": -1.5, "e": {}, "f": [], "g": "x"});
        assert_eq!(
            doc(v),
            "a: null\nb: true\nc: 3\nd: -1.5\ne: {}\nf: []\ng: x\n"
        );
        assert_eq!(doc(json!("plain")), "plain\n");
        assert_eq!(doc(json!({})), "{}\n");
        assert_eq!(doc(json!([])), "[]\n");
    }

    #[test]
    fn float_exponents_get_a_dot_and_a_sign() {
        assert_eq!(doc(json!(1e20)), "1.0e+20\n");
        assert_eq!(doc(json!(1.5e-7)), "1.5e-7\n");
        assert_eq!(doc(json!(2.0)), "2.0\n");
        assert_eq!(doc(json!(u64::MAX)), "18446744073709551615\n");
    }

    #[test]
    fn nested_lists_of_maps() {
        let v = json!({
            "containers": [
                {"args": ["run", "--plan"], "name": "shard"},
                {"env": [{"name": "A", "value": "1"}], "name": "merge"}
            ],
            "matrix": [[1, 2], [], [{"k": "v"}]],
            "spec": {"template": {"spec": {"restartPolicy": "Never"}}}
        });
        let expected = "\
containers:
- args:
  - run
  - --plan
  name: shard
- env:
  - name: A
    value: \"1\"
  name: merge
matrix:
- - 1
  - 2
- []
- - k: v
spec:
  template:
    spec:
      restartPolicy: Never
";
        assert_eq!(doc(v), expected);
    }

    #[test]
    fn multi_line_strings_become_literal_blocks() {
        let v = json!({"clip": "a\nb\n", "keep": "a\n\n", "strip": "a\n\nb"});
        assert_eq!(
            doc(v),
            "clip: |\n  a\n  b\nkeep: |+\n  a\n\nstrip: |-\n  a\n\n  b\n"
        );
        // In a list, and in a map inside a list: the text sits two columns in from its owner.
        let v = json!([{"script": "set -u\necho hi\n"}, "x\ny"]);
        assert_eq!(
            doc(v),
            "- script: |\n    set -u\n    echo hi\n- |-\n  x\n  y\n"
        );
        // A first line that starts with spaces needs an explicit indentation indicator.
        assert_eq!(doc(json!({"k": "  a\nb"})), "k: |2-\n    a\n  b\n");
        assert_eq!(doc(json!({"k": "\n  a\n"})), "k: |2\n\n    a\n");
    }

    #[test]
    fn multi_line_strings_that_blocks_cannot_carry_are_quoted() {
        assert_eq!(doc(json!({"k": "a \nb"})), "k: \"a \\nb\"\n");
        assert_eq!(doc(json!({"k": "\n\n"})), "k: \"\\n\\n\"\n");
        assert_eq!(doc(json!({"k": "a\tb\nc"})), "k: \"a\\tb\\nc\"\n");
        assert_eq!(doc(json!({"k": "a\r\nb"})), "k: \"a\\r\\nb\"\n");
    }

    #[test]
    fn keys_are_quoted_like_values() {
        let v = json!({"": 1, "a: b": 2, "multi\nline": 3, "yes": 4});
        assert_eq!(
            doc(v),
            "\"\": 1\n\"a: b\": 2\n\"multi\\nline\": 3\n\"yes\": 4\n"
        );
    }

    #[test]
    fn very_long_keys_are_explicit() {
        let long = "k".repeat(MAX_IMPLICIT_KEY + 1);
        let v = json!([{ long.clone(): [1], "short": {"a": 1} }]);
        assert_eq!(
            doc(v),
            format!("- ? {long}\n  :\n  - 1\n  short:\n    a: 1\n")
        );
    }

    #[test]
    fn documents_are_separated() {
        let out = to_yaml(&[json!({"a": 1}), json!({"b": [true]})]);
        assert_eq!(out, "---\na: 1\n---\nb:\n- true\n");
        assert_eq!(to_yaml(&[]), "");
    }
}
