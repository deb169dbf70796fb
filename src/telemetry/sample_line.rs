//! Lexer for one sample line of the Prometheus / OpenMetrics text format:
//! `name{label="value",...} value [timestamp] [# exemplar]`.
//!
//! Split from the page-level parser in `prometheus.rs` because this is where strictness
//! lives: every way a sample line can be malformed maps to one [`ParseErrorKind`] with a
//! message a user can act on. It works on bytes and slices the line only at ASCII
//! delimiters, so no input can make it panic on a char boundary.

use super::prometheus::{Format, ParseErrorKind, Sample};

/// Resolves the escape `\` + `c`. Only `\\`, `\"` and `\n` exist; any other is kept as
/// written (a Windows path in a label should not cost the whole scrape).
pub(super) fn push_escaped(out: &mut String, c: char) {
    match c {
        'n' => out.push('\n'),
        '\\' | '"' => out.push(c),
        other => {
            out.push('\\');
            out.push(other);
        }
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b':'
}

fn is_label_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn skip_blanks(bytes: &[u8], mut pos: usize) -> usize {
    while matches!(bytes.get(pos), Some(b' ' | b'\t')) {
        pos += 1;
    }
    pos
}

/// Describes what sits at `pos` for an error message, without risking a bad slice.
fn found_at(line: &str, pos: usize) -> String {
    match line.get(pos..).and_then(|s| s.chars().next()) {
        Some(c) => format!("{c:?}"),
        None => "end of line".to_string(),
    }
}

/// Parses one sample line (already trimmed, not a comment). Timestamps are read as
/// integer milliseconds for 0.0.4 and float seconds for OpenMetrics.
pub(super) fn parse_sample(line: &str, format: Format) -> Result<Sample, ParseErrorKind> {
    let bytes = line.as_bytes();
    let name_end = bytes
        .iter()
        .position(|&b| !is_name_byte(b))
        .unwrap_or(bytes.len());
    if name_end == 0 || bytes[0].is_ascii_digit() {
        return Err(ParseErrorKind::InvalidMetricName {
            found: found_at(line, 0),
        });
    }
    let name = &line[..name_end];
    let mut labels = Vec::new();
    let mut pos = skip_blanks(bytes, name_end);
    if bytes.get(pos) == Some(&b'{') {
        pos = parse_labels(line, pos + 1, &mut labels)?;
    } else if pos == name_end && pos < bytes.len() {
        return Err(ParseErrorKind::AfterName {
            name: name.to_string(),
            found: found_at(line, pos),
        });
    }
    // Labels are consumed, so a '#' from here on starts an OpenMetrics exemplar.
    let rest = line[pos..].split('#').next().unwrap_or("");
    let mut words = rest.split_ascii_whitespace();
    let Some(value_text) = words.next() else {
        return Err(ParseErrorKind::MissingValue {
            name: name.to_string(),
        });
    };
    let value = parse_value(value_text).ok_or_else(|| ParseErrorKind::InvalidValue {
        text: value_text.to_string(),
    })?;
    let timestamp_ms = match words.next() {
        Some(t) => Some(parse_timestamp(t, format)?),
        None => None,
    };
    if let Some(extra) = words.next() {
        return Err(ParseErrorKind::TrailingText {
            text: extra.to_string(),
        });
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
        timestamp_ms,
    })
}

/// Reads labels after the opening `{`; returns the position after the closing `}`.
fn parse_labels(
    line: &str,
    mut pos: usize,
    labels: &mut Vec<(String, String)>,
) -> Result<usize, ParseErrorKind> {
    let bytes = line.as_bytes();
    loop {
        pos = skip_blanks(bytes, pos);
        match bytes.get(pos) {
            None => return Err(ParseErrorKind::UnterminatedLabels),
            // Also accepts a trailing comma, which some exporters write.
            Some(b'}') => return Ok(pos + 1),
            Some(_) => {}
        }
        let start = pos;
        while bytes.get(pos).is_some_and(|&b| is_label_byte(b)) {
            pos += 1;
        }
        if pos == start || bytes[start].is_ascii_digit() {
            return Err(ParseErrorKind::InvalidLabelName {
                found: found_at(line, start),
            });
        }
        let label = &line[start..pos];
        pos = skip_blanks(bytes, pos);
        if bytes.get(pos) != Some(&b'=') {
            return Err(ParseErrorKind::ExpectedEquals {
                label: label.to_string(),
            });
        }
        pos = skip_blanks(bytes, pos + 1);
        if bytes.get(pos) != Some(&b'"') {
            return Err(ParseErrorKind::ExpectedQuote {
                label: label.to_string(),
            });
        }
        let (value, next) = read_label_value(line, pos + 1).ok_or_else(|| {
            ParseErrorKind::UnterminatedLabelValue {
                label: label.to_string(),
            }
        })?;
        if labels.iter().any(|(k, _)| k == label) {
            return Err(ParseErrorKind::DuplicateLabel {
                label: label.to_string(),
            });
        }
        labels.push((label.to_string(), value));
        pos = skip_blanks(bytes, next);
        match bytes.get(pos) {
            Some(b',') => pos += 1,
            Some(b'}') => return Ok(pos + 1),
            None => return Err(ParseErrorKind::UnterminatedLabels),
            Some(_) => {
                return Err(ParseErrorKind::ExpectedCommaOrBrace {
                    found: found_at(line, pos),
                })
            }
        }
    }
}

/// Reads a quoted label value starting just after the opening quote; returns the value,
/// escapes resolved, and the position after the closing quote.
fn read_label_value(line: &str, start: usize) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = line.get(start..)?.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, start + i + 1)),
            '\\' => push_escaped(&mut out, chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}

/// Numbers as Go's `ParseFloat` reads them for Prometheus: decimals, exponents, `NaN`,
/// `Inf`, `+Inf`, `-Inf` (any case). Rust's parser accepts the same spellings.
pub(super) fn parse_value(text: &str) -> Option<f64> {
    text.parse::<f64>().ok()
}

fn parse_timestamp(text: &str, format: Format) -> Result<i64, ParseErrorKind> {
    match format {
        Format::Prometheus => text
            .parse::<i64>()
            .map_err(|_| ParseErrorKind::InvalidTimestamp {
                text: text.to_string(),
                expected: "integer milliseconds",
            }),
        Format::OpenMetrics => {
            let ms = text.parse::<f64>().map(|s| (s * 1000.0).round());
            match ms {
                // The bound keeps the cast exact rather than saturating.
                Ok(ms) if ms.is_finite() && ms.abs() < 9.0e18 => Ok(ms as i64),
                _ => Err(ParseErrorKind::InvalidTimestamp {
                    text: text.to_string(),
                    expected: "seconds since the epoch",
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::prometheus::{parse, MetricKind, ParseError};

    fn err_at(text: &str) -> ParseError {
        parse(text).expect_err("should not parse")
    }

    #[test]
    fn label_escapes_special_values_and_sloppy_lines() {
        let text = "# a free comment\r\n\r\n\
            m{path=\"C:\\\\dir\",q=\"say \\\"hi\\\"\",nl=\"a\\nb\",odd=\"\\t\",} 1e3 1700000000000\r\n\
            \tn NaN  \n\
            p +Inf\n\
            q -Inf\n\
            r Inf\n\
            s{ a = \"1\" , b=\"}{,\" } -2.5E-3\n\
            t{} 7\n";
        let s = parse(text).unwrap();
        let m = s.samples().next().unwrap();
        assert_eq!(m.label("path"), Some("C:\\dir"));
        assert_eq!(m.label("q"), Some("say \"hi\""));
        assert_eq!(m.label("nl"), Some("a\nb"));
        assert_eq!(m.label("odd"), Some("\\t"));
        assert_eq!(m.value, 1000.0);
        assert_eq!(m.timestamp_ms, Some(1_700_000_000_000));
        assert!(s.value("n", &[]).unwrap().is_nan());
        assert_eq!(s.value("p", &[]), Some(f64::INFINITY));
        assert_eq!(s.value("q", &[]), Some(f64::NEG_INFINITY));
        assert_eq!(s.value("r", &[]), Some(f64::INFINITY));
        assert_eq!(s.value("s", &[("b", "}{,")]), Some(-0.0025));
        assert_eq!(s.value("t", &[]), Some(7.0));
        assert!(s.families.iter().all(|f| f.kind == MetricKind::Unknown));
    }

    #[test]
    fn malformed_lines_give_line_and_reason() {
        let cases: [(&str, usize, &str); 13] = [
            ("ok 1\n9lives 1\n", 2, "must start with a metric name"),
            ("ok 1\n\nm{a=\"1\" 2\n", 3, "expected ',' or '}'"),
            ("m{a=\"1\"\n", 1, "not closed"),
            ("m{a=1} 2\n", 1, "must be in double quotes"),
            ("m{a=\"1} 2\n", 1, "no closing double quote"),
            ("m{a \"1\"} 2\n", 1, "expected '=' after label name `a`"),
            ("m{1a=\"1\"} 2\n", 1, "invalid label name"),
            ("m{a=\"1\",a=\"2\"} 2\n", 1, "appears twice"),
            ("# TYPE m gauge\nm\n", 2, "has no value"),
            ("m one\n", 1, "invalid value `one`"),
            ("m 1 2 3\n", 1, "unexpected text `3`"),
            ("m-x 1\n", 1, "unexpected '-' after metric name `m`"),
            ("m 1 1.5\n", 1, "expected integer milliseconds"),
        ];
        for (text, line, reason) in cases {
            let err = err_at(text);
            let message = err.to_string();
            assert_eq!(err.line, line, "{text:?}: {message}");
            assert!(message.contains(reason), "{text:?}: {message}");
            assert!(message.starts_with(&format!("line {line}: ")), "{message}");
        }
    }
}
