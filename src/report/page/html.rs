//! A [`Page`] as one self-contained HTML file: it works offline, opened from disk or mailed
//! around, and loads nothing from anywhere.
//!
//! - Everything is inline: one style sheet, the charts as `<svg>` elements rendered in
//!   Rust, and one small script of our own (Apache-2.0, like servebench) that shows a
//!   point's values on hover. Without JavaScript the page reads the same; the charts keep
//!   their native `<title>` tooltips.
//! - A `Content-Security-Policy` meta element forbids every load (`default-src 'none'`):
//!   no fetch, image, font, frame or script from any URL, `file:` included. Only inline
//!   styles and the one script, allowed by its SHA-256, run.
//! - No attribute names a URL; links are `#anchors` within the page.

use super::{Block, Figure, Page, Table, Tone};
use crate::report::chart::svg::escape;
use base64::Engine;
use std::fmt::Write;

/// The page's only script: a hover read-out for chart elements, from their `<title>`.
/// Written for this project; licence Apache-2.0 (as servebench).
pub const SCRIPT: &str = r#"/* servebench report: hover read-out for chart points. Licence: Apache-2.0 (servebench). */
(function () {
  "use strict";
  var tip = document.createElement("div");
  tip.className = "sb-tip";
  tip.setAttribute("role", "status");
  tip.hidden = true;
  document.body.appendChild(tip);
  function target(e) {
    var el = e.target;
    return el && el.closest ? el.closest(".sb-chart [data-x], .sb-chart [data-y]") : null;
  }
  document.addEventListener("mouseover", function (e) {
    var el = target(e);
    var title = el ? el.querySelector("title") : null;
    if (!title) { tip.hidden = true; return; }
    tip.textContent = title.textContent;
    tip.hidden = false;
  });
  document.addEventListener("mousemove", function (e) {
    if (tip.hidden) { return; }
    var x = Math.min(e.pageX + 14, window.scrollX + document.documentElement.clientWidth - tip.offsetWidth - 8);
    tip.style.left = Math.max(0, x) + "px";
    tip.style.top = (e.pageY + 16) + "px";
  });
  document.addEventListener("mouseout", function (e) {
    if (!e.relatedTarget || !target({ target: e.relatedTarget })) { tip.hidden = true; }
  });
})();
"#;

/// The page's style sheet.
const STYLE: &str = r#"
:root{--fg:#1d1d1f;--muted:#5a5a5f;--line:#d9d9de;--soft:#f5f5f7;--accent:#0072B2;
--pass:#1a7f37;--warn:#9a6700;--fail:#cf222e}
*{box-sizing:border-box}
body{margin:0;color:var(--fg);background:#fff;font:15px/1.5 system-ui,-apple-system,"Segoe UI",
"DejaVu Sans",sans-serif}
header,main,footer{max-width:1040px;margin:0 auto;padding:0 24px}
header{padding-top:24px}
h1{font-size:26px;margin:0 0 6px;line-height:1.25}
h2{font-size:21px;margin:40px 0 12px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:17px;margin:28px 0 8px}
h4{font-size:15px;margin:20px 0 6px}
.lead{margin:0;color:var(--muted)}
nav{margin:16px 0 8px;padding:10px 14px;background:var(--soft);border-radius:6px;font-size:14px}
nav ul{margin:0;padding-left:0;list-style:none;columns:2;column-gap:32px}
nav a{color:var(--accent);text-decoration:none}
nav a:hover{text-decoration:underline}
p{margin:8px 0}
ul{margin:8px 0;padding-left:22px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:8px 0}
dt{font-weight:600;color:var(--muted)}
dd{margin:0;overflow-wrap:anywhere}
.twrap{overflow-x:auto;margin:10px 0}
table{border-collapse:collapse;font-size:14px;font-variant-numeric:tabular-nums}
.ttitle{font-weight:600;margin:16px 0 4px;font-size:14px}
th,td{border:1px solid var(--line);padding:4px 10px;vertical-align:top}
th{background:var(--soft);text-align:left}
td.num,th.num{text-align:right;white-space:nowrap}
td.nw,th.nw{white-space:nowrap}
code{font:13px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;background:var(--soft);
padding:1px 4px;border-radius:3px}
.tnote{font-size:13px;color:var(--muted);margin:4px 0}
pre{background:var(--soft);padding:12px 14px;border-radius:6px;overflow-x:auto;font-size:13px;
line-height:1.4;white-space:pre-wrap;overflow-wrap:anywhere}
figure{margin:18px 0 26px;max-width:900px}
figure svg{display:block;width:100%;height:auto;border:1px solid var(--line);border-radius:4px}
figcaption{font-size:14px;color:var(--muted);margin-top:6px}
.callout{padding:8px 12px;border-left:4px solid var(--muted);background:var(--soft);margin:10px 0}
.callout.pass{border-color:var(--pass)}
.callout.warn{border-color:var(--warn)}
.callout.fail{border-color:var(--fail)}
.callout strong{margin-right:6px}
footer{margin-top:48px;padding-bottom:32px;font-size:13px;color:var(--muted);
border-top:1px solid var(--line);padding-top:12px}
.sb-tip{position:absolute;z-index:10;pointer-events:none;background:#222;color:#fff;
font-size:13px;padding:4px 8px;border-radius:4px;max-width:420px}
@media print{nav,.sb-tip{display:none}figure{break-inside:avoid}h2{break-after:avoid}}
"#;

/// `sha256-…` source expression of `script` for a CSP `script-src`.
pub fn script_hash(script: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, script.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
    )
}

/// The Content-Security-Policy of every report page: nothing may load, only inline
/// styles and the page's own script run.
pub fn content_security_policy() -> String {
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src {}; img-src data:; \
         base-uri 'none'; form-action 'none'",
        script_hash(SCRIPT)
    )
}

/// Escaped text with `backtick` spans as `<code>`.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for (i, part) in super::markdown::code_spans(s).into_iter().enumerate() {
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(&escape(part));
            out.push_str("</code>");
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

/// The whole document.
pub fn render(page: &Page) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"servebench {}\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<header>\n<h1>{}</h1>\n",
        escape(&content_security_policy()),
        env!("CARGO_PKG_VERSION"),
        escape(&page.title),
        escape(&page.title)
    );
    for line in &page.lead {
        let _ = writeln!(out, "<p class=\"lead\">{}</p>", text(line));
    }
    let top: Vec<_> = page.sections.iter().filter(|s| s.level == 1).collect();
    if top.len() > 1 {
        out.push_str("<nav aria-label=\"Contents\"><ul>");
        for s in top {
            let _ = write!(
                out,
                "<li><a href=\"#{}\">{}</a></li>",
                escape(&s.id),
                escape(&s.heading)
            );
        }
        out.push_str("</ul></nav>\n");
    }
    out.push_str("</header>\n<main>\n");
    for s in &page.sections {
        let h = s.level + 1;
        let _ = writeln!(
            out,
            "<section id=\"{}\">\n<h{h}>{}</h{h}>",
            escape(&s.id),
            escape(&s.heading)
        );
        for b in &s.blocks {
            block(&mut out, b);
        }
        out.push_str("</section>\n");
    }
    let _ = write!(
        out,
        "</main>\n<footer>Made by servebench {}. This page is one self-contained file: it loads \
         nothing from the network and reads the same without JavaScript.</footer>\n\
         <script>{SCRIPT}</script>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    out
}

fn block(out: &mut String, b: &Block) {
    match b {
        Block::Paragraph(p) => {
            let _ = writeln!(out, "<p>{}</p>", text(p));
        }
        Block::List(items) => {
            out.push_str("<ul>");
            for i in items {
                let _ = write!(out, "<li>{}</li>", text(i));
            }
            out.push_str("</ul>\n");
        }
        Block::Facts(facts) => {
            out.push_str("<dl>");
            for (k, v) in facts {
                let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", text(k), text(v));
            }
            out.push_str("</dl>\n");
        }
        Block::Table(t) => table(out, t),
        Block::Figure(f) => figure(out, f),
        Block::Pre(text) => {
            let _ = writeln!(out, "<pre>{}</pre>", escape(text.trim_end()));
        }
        Block::Callout(tone, body) => {
            let (class, label) = match tone {
                Tone::Pass => ("pass", "PASS"),
                Tone::Info => ("info", "Note"),
                Tone::Warn => ("warn", "Warning"),
                Tone::Fail => ("fail", "FAIL"),
            };
            let _ = writeln!(
                out,
                "<div class=\"callout {class}\"><strong>{label}</strong>{}</div>",
                self::text(body)
            );
        }
    }
}

fn table(out: &mut String, t: &Table) {
    let n = t.columns().max(1);
    let class = |i: usize| {
        let mut c = Vec::new();
        if t.numeric && i > 0 {
            c.push("num");
        }
        if t.nowrap.contains(&i) {
            c.push("nw");
        }
        if c.is_empty() {
            String::new()
        } else {
            format!(" class=\"{}\"", c.join(" "))
        }
    };
    // The title sits above the table rather than in a <caption>, whose width would be
    // held to the table's and wrap a long title into a narrow column.
    if let Some(title) = &t.title {
        let _ = writeln!(out, "<p class=\"ttitle\">{}</p>", text(title));
    }
    out.push_str("<div class=\"twrap\"><table>");
    if t.header.iter().any(|h| !h.is_empty()) {
        out.push_str("<thead><tr>");
        for i in 0..n {
            let h = t.header.get(i).map(String::as_str).unwrap_or("");
            let _ = write!(out, "<th scope=\"col\"{}>{}</th>", class(i), text(h));
        }
        out.push_str("</tr></thead>");
    }
    out.push_str("<tbody>");
    for row in &t.rows {
        out.push_str("<tr>");
        for i in 0..n {
            let c = row.get(i).map(String::as_str).unwrap_or("");
            let _ = write!(out, "<td{}>{}</td>", class(i), text(c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
    for note in &t.notes {
        let _ = writeln!(out, "<p class=\"tnote\">{}</p>", text(note));
    }
}

fn figure(out: &mut String, f: &Figure) {
    // Inline SVG in HTML needs no namespace declaration; dropping it keeps the page free
    // of URLs altogether.
    let svg = f
        .svg
        .replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    // The chart draws its own title; the caption says what to read from it.
    let _ = writeln!(
        out,
        "<figure id=\"fig-{}\">{svg}<figcaption>{}</figcaption></figure>",
        escape(&f.id),
        text(&f.caption)
    );
}

#[cfg(test)]
mod tests {
    use super::super::Section;
    use super::*;
    use crate::report::chart::Chart;

    #[test]
    fn the_page_is_self_contained() {
        let page = Page::new("Run <1>").lead("exit 0").section(
            Section::new("charts", "Charts")
                .chart(&Chart::cdf("TTFT", &[1.0, 2.0]), "median & tail")
                .table(
                    Table::new(&["a", "b"])
                        .titled("T `x<`")
                        .row(["x", "1"])
                        .nowrap(&[0]),
                )
                .facts([("URL", "http://127.0.0.1:8000/v1")]),
        );
        let html = render(&page);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>Run &lt;1&gt;</title>"));
        assert!(html.contains("default-src &#39;none&#39;"));
        assert!(html.contains(&escape(&script_hash(SCRIPT))));
        assert!(html.contains(&format!("<script>{SCRIPT}</script>")));
        assert!(html.contains("<figcaption>median &amp; tail</figcaption>"));
        assert!(html.contains("<td class=\"num\">1</td>"));
        assert!(html.contains("<td class=\"nw\">x</td>"));
        assert!(html.contains("<p class=\"ttitle\">T <code>x&lt;</code></p>"));
        // Nothing that loads: no src, no link element, no namespace URL; the only
        // http text is the data a reader needs (the target's URL), never an attribute.
        for bad in [" src=", "<link", "@import", "url(http", "xmlns="] {
            assert!(!html.contains(bad), "{bad}");
        }
        assert_eq!(html.matches("://").count(), 1);
        // A single section gets no table of contents.
        assert!(!html.contains("<nav"));
    }

    #[test]
    fn the_script_hash_is_the_sha256_of_its_text() {
        // echo -n abc | sha256sum | xxd -r -p | base64
        assert_eq!(
            script_hash("abc"),
            "'sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0='"
        );
    }
}
