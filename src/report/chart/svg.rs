//! A deliberately tiny SVG writer.
//!
//! Every chart is assembled through this module so that two promises hold everywhere at
//! once: all text and attribute values are XML-escaped, and no non-finite number ever
//! reaches the output. A `NaN` in a coordinate would make a browser drop the element
//! silently (or, in a `d` attribute, drop the rest of the path), so instead an element
//! with a non-finite number is not written at all and is counted as skipped; the caller
//! reports the count in the chart's description.

use std::fmt::Write;

/// Decimal places used for pixel coordinates: a hundredth of a pixel is invisible at any
/// sensible zoom and keeps files small.
const COORD_DECIMALS: usize = 2;

/// Significant digits written for data values (`data-*` attributes): enough to tell
/// measured values apart, short enough to keep large charts compact.
const DATA_DIGITS: i32 = 6;

/// Escapes `s` for use as XML character data or as a quoted attribute value.
///
/// Characters that XML 1.0 forbids even in escaped form (most C0 controls) are replaced
/// by U+FFFD, so that arbitrary model names or error strings can never make a report
/// ill-formed.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

/// Like [`escape`], appending to `out`.
pub fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// Formats `v` with at most `decimals` decimal places, trimming trailing zeros.
///
/// Returns `None` for `NaN` and infinities so that callers must decide what to do with
/// them instead of writing them. Negative zero is written as `0`.
pub fn fmt_fixed(v: f64, decimals: usize) -> Option<String> {
    if !v.is_finite() {
        return None;
    }
    let mut s = format!("{v:.decimals$}");
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    if s == "-0" {
        s = "0".to_string();
    }
    Some(s)
}

/// Formats a pixel coordinate (two decimals at most), `None` when not finite.
pub fn fmt_coord(v: f64) -> Option<String> {
    fmt_fixed(v, COORD_DECIMALS)
}

/// Formats a data value with six significant digits, plain notation for ordinary
/// magnitudes and `1.5e-7` style otherwise (both parse with JavaScript's `Number`).
/// `None` when not finite.
pub fn fmt_data(v: f64) -> Option<String> {
    if !v.is_finite() {
        return None;
    }
    if v == 0.0 {
        return Some("0".to_string());
    }
    let exp = v.abs().log10().floor() as i32;
    if (-5..15).contains(&exp) {
        let decimals = (DATA_DIGITS - 1 - exp).max(0) as usize;
        return fmt_fixed(v, decimals);
    }
    let s = format!("{:.*e}", (DATA_DIGITS - 1) as usize, v);
    // `{:e}` gives "1.50000e-7"; trim the mantissa's trailing zeros.
    let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    Some(format!("{mantissa}e{exponent}"))
}

/// An SVG document under construction.
///
/// Elements are started with [`Svg::el`], which returns an [`El`] that buffers its
/// attributes; the element reaches the output only when finished, and only if none of
/// its numbers was non-finite.
#[derive(Debug, Default)]
pub struct Svg {
    out: String,
    open: Vec<&'static str>,
    skipped: usize,
}

impl Svg {
    /// An empty document.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts an element named `name`; finish it with [`El::leaf`], [`El::text`],
    /// [`El::titled`] or [`El::open`].
    pub fn el(&mut self, name: &'static str) -> El<'_> {
        let mut buf = String::with_capacity(96);
        buf.push('<');
        buf.push_str(name);
        El {
            svg: self,
            name,
            buf,
            bad: false,
        }
    }

    /// Closes the innermost element opened with [`El::open`]; a no-op when none is open.
    pub fn close(&mut self) {
        if let Some(name) = self.open.pop() {
            let _ = write!(self.out, "</{name}>");
        }
    }

    /// Writes escaped character data inside the current element.
    pub fn text(&mut self, s: &str) {
        escape_into(&mut self.out, s);
    }

    /// How many elements were dropped because one of their numbers was not finite.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Closes every element still open and returns the markup.
    pub fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.close();
        }
        self.out
    }
}

/// One element being written; see [`Svg::el`].
#[derive(Debug)]
pub struct El<'a> {
    svg: &'a mut Svg,
    name: &'static str,
    buf: String,
    bad: bool,
}

impl El<'_> {
    /// Adds an attribute whose value is escaped. Names are always our own literals.
    pub fn attr(mut self, name: &str, value: &str) -> Self {
        let _ = write!(self.buf, " {name}=\"");
        escape_into(&mut self.buf, value);
        self.buf.push('"');
        self
    }

    /// Adds a coordinate-precision numeric attribute; a non-finite value spoils the element.
    pub fn num(mut self, name: &str, v: f64) -> Self {
        match fmt_coord(v) {
            Some(s) => {
                let _ = write!(self.buf, " {name}=\"{s}\"");
            }
            None => self.bad = true,
        }
        self
    }

    /// Adds `data-<name>` with a data-precision value; a non-finite value spoils the element.
    pub fn data(mut self, name: &str, v: f64) -> Self {
        match fmt_data(v) {
            Some(s) => {
                let _ = write!(self.buf, " data-{name}=\"{s}\"");
            }
            None => self.bad = true,
        }
        self
    }

    /// Writes the element as `<name .../>`. Returns whether it was written.
    pub fn leaf(mut self) -> bool {
        if self.reject() {
            return false;
        }
        self.buf.push_str("/>");
        self.svg.out.push_str(&self.buf);
        true
    }

    /// Writes the element with escaped text content. Returns whether it was written.
    pub fn text(mut self, content: &str) -> bool {
        if self.reject() {
            return false;
        }
        self.buf.push('>');
        escape_into(&mut self.buf, content);
        let _ = write!(self.buf, "</{}>", self.name);
        self.svg.out.push_str(&self.buf);
        true
    }

    /// Writes the element with a `<title>` child, which browsers show as a native
    /// tooltip on hover (no JavaScript needed). Returns whether it was written.
    pub fn titled(mut self, title: &str) -> bool {
        if self.reject() {
            return false;
        }
        self.buf.push_str("><title>");
        escape_into(&mut self.buf, title);
        let _ = write!(self.buf, "</title></{}>", self.name);
        self.svg.out.push_str(&self.buf);
        true
    }

    /// Writes the start tag and leaves the element open until [`Svg::close`].
    ///
    /// A container cannot be dropped without unbalancing the document, so here a
    /// non-finite number only loses its own attribute (and is counted as skipped).
    pub fn open(mut self) {
        if self.bad {
            self.svg.skipped += 1;
        }
        self.buf.push('>');
        self.svg.out.push_str(&self.buf);
        self.svg.open.push(self.name);
    }

    fn reject(&mut self) -> bool {
        if self.bad {
            self.svg.skipped += 1;
        }
        self.bad
    }
}

/// Path data (`d` attribute) built point by point.
///
/// Non-finite points are skipped and lift the pen, so a gap in the data shows as a gap
/// in the line rather than a jump, and the count is kept for the chart's description.
#[derive(Debug, Default, Clone)]
pub struct PathData {
    d: String,
    pen_down: bool,
    points: usize,
    skipped: usize,
}

impl PathData {
    /// An empty path.
    pub fn new() -> Self {
        Self::default()
    }

    /// Continues the line to (`x`, `y`), or starts a new sub-path after a gap.
    pub fn line_to(&mut self, x: f64, y: f64) {
        match (fmt_coord(x), fmt_coord(y)) {
            (Some(xs), Some(ys)) => {
                let cmd = if self.pen_down { 'L' } else { 'M' };
                if !self.d.is_empty() {
                    self.d.push(' ');
                }
                let _ = write!(self.d, "{cmd}{xs} {ys}");
                self.pen_down = true;
                self.points += 1;
            }
            _ => {
                self.skipped += 1;
                self.pen_down = false;
            }
        }
    }

    /// Starts a new sub-path at (`x`, `y`).
    pub fn move_to(&mut self, x: f64, y: f64) {
        self.pen_down = false;
        self.line_to(x, y);
    }

    /// Closes the current sub-path (for filled shapes such as bands).
    pub fn close(&mut self) {
        if self.pen_down {
            self.d.push_str(" Z");
            self.pen_down = false;
        }
    }

    /// Number of points written.
    pub fn points(&self) -> usize {
        self.points
    }

    /// Number of non-finite points left out.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// The `d` attribute value.
    pub fn as_str(&self) -> &str {
        &self.d
    }

    /// Whether nothing was drawn.
    pub fn is_empty(&self) -> bool {
        self.d.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape(r#"a<b & "c" 'd' > e"#),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39; &gt; e"
        );
        assert_eq!(escape("&amp;"), "&amp;amp;");
        assert_eq!(escape("µs → ok"), "µs → ok");
    }

    #[test]
    fn replaces_characters_xml_forbids() {
        assert_eq!(escape("a\u{0}b\u{1b}c\td"), "a\u{FFFD}b\u{FFFD}c\td");
    }

    #[test]
    fn attribute_and_text_are_escaped() {
        let mut svg = Svg::new();
        assert!(svg.el("text").attr("class", "a\"<&'").text("x < y & 'z'"));
        assert_eq!(
            svg.finish(),
            "<text class=\"a&quot;&lt;&amp;&#39;\">x &lt; y &amp; &#39;z&#39;</text>"
        );
    }

    #[test]
    fn fixed_formatting_trims_and_rounds() {
        assert_eq!(fmt_fixed(1.23456, 2).as_deref(), Some("1.23"));
        assert_eq!(fmt_fixed(100.0, 2).as_deref(), Some("100"));
        assert_eq!(fmt_fixed(0.5, 2).as_deref(), Some("0.5"));
        assert_eq!(fmt_fixed(-0.001, 2).as_deref(), Some("0"));
        assert_eq!(fmt_fixed(-0.0, 2).as_deref(), Some("0"));
        assert_eq!(fmt_fixed(-12.345, 1).as_deref(), Some("-12.3"));
        assert_eq!(fmt_fixed(7.0, 0).as_deref(), Some("7"));
        assert_eq!(fmt_fixed(f64::NAN, 2), None);
        assert_eq!(fmt_fixed(f64::INFINITY, 2), None);
        assert_eq!(fmt_fixed(f64::NEG_INFINITY, 2), None);
    }

    #[test]
    fn data_formatting_keeps_six_significant_digits() {
        assert_eq!(fmt_data(0.0).as_deref(), Some("0"));
        assert_eq!(fmt_data(512.0).as_deref(), Some("512"));
        assert_eq!(fmt_data(1234.56789).as_deref(), Some("1234.57"));
        assert_eq!(fmt_data(0.0123456789).as_deref(), Some("0.0123457"));
        assert_eq!(fmt_data(-2.5).as_deref(), Some("-2.5"));
        assert_eq!(fmt_data(1.5e-7).as_deref(), Some("1.5e-7"));
        assert_eq!(fmt_data(2.0e20).as_deref(), Some("2e20"));
        assert_eq!(fmt_data(f64::NAN), None);
    }

    #[test]
    fn non_finite_elements_are_skipped_and_counted() {
        let mut svg = Svg::new();
        assert!(!svg.el("circle").num("cx", f64::NAN).num("cy", 1.0).leaf());
        assert!(!svg
            .el("circle")
            .num("cx", 1.0)
            .data("y", f64::INFINITY)
            .titled("t"));
        assert!(svg.el("circle").num("cx", 1.0).num("cy", 2.5).leaf());
        assert_eq!(svg.skipped(), 2);
        assert_eq!(svg.finish(), "<circle cx=\"1\" cy=\"2.5\"/>");
    }

    #[test]
    fn open_elements_are_closed_in_order() {
        let mut svg = Svg::new();
        svg.el("g").attr("class", "a").open();
        svg.el("g").open();
        svg.text("x");
        svg.close();
        assert_eq!(svg.finish(), "<g class=\"a\"><g>x</g></g>");
    }

    #[test]
    fn path_breaks_at_non_finite_points() {
        let mut p = PathData::new();
        p.line_to(0.0, 0.0);
        p.line_to(1.0, 1.004);
        p.line_to(f64::NAN, 2.0);
        p.line_to(3.0, 3.0);
        p.line_to(4.0, 4.0);
        p.close();
        assert_eq!(p.as_str(), "M0 0 L1 1 M3 3 L4 4 Z");
        assert_eq!((p.points(), p.skipped()), (4, 1));
    }
}
