//! A [`Page`] as Markdown: GitHub-flavoured tables, fenced preformatted text, and each
//! chart as a one-line reference to the same figure in `report.html` (or the page's
//! [`Page::html_file`]; Markdown cannot
//! hold the drawing, and an image file beside it would make the report two files).
//!
//! Text is escaped only where Markdown would misread it (`*`, `` ` ``, `<`, `[`, `|` in
//! tables …), so the file stays readable as plain text in a terminal.

use super::{Block, Figure, Page, Table, Tone};
use std::fmt::Write;

/// Escapes characters Markdown would treat as markup; `|` too inside tables. Text between
/// a pair of backticks stays a code span, verbatim.
pub fn escape(s: &str, in_table: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, part) in code_spans(s).into_iter().enumerate() {
        if i % 2 == 1 {
            // A code span; a `|` inside one still ends a table cell in GFM.
            out.push('`');
            out.push_str(&if in_table {
                part.replace('|', "\\|")
            } else {
                part.to_string()
            });
            out.push('`');
            continue;
        }
        for c in part.chars() {
            match c {
                '\\' | '`' | '*' | '<' | '>' | '[' | ']' => {
                    out.push('\\');
                    out.push(c);
                }
                '|' if in_table => out.push_str("\\|"),
                '\n' if in_table => out.push_str("<br>"),
                c => out.push(c),
            }
        }
    }
    out
}

/// Splits `s` at backticks into text, code, text, …; an unpaired last backtick stays in
/// the text.
pub fn code_spans(s: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = s.split('`').collect();
    if parts.len().is_multiple_of(2) {
        // Odd number of backticks: glue the unpaired tail back as plain text.
        let tail = parts.pop().unwrap_or("");
        let last = parts.pop().unwrap_or("");
        let start = s.len() - tail.len() - 1 - last.len();
        parts.push(&s[start..]);
    }
    parts
}

/// The whole page.
pub fn render(page: &Page) -> String {
    let mut out = format!("# {}\n\n", escape(&page.title, false));
    for line in &page.lead {
        let _ = writeln!(out, "{}  ", escape(line, false));
    }
    if !page.lead.is_empty() {
        out.push('\n');
    }
    for s in &page.sections {
        let hashes = "#".repeat(s.level as usize + 1);
        let _ = writeln!(out, "{hashes} {}\n", escape(&s.heading, false));
        for b in &s.blocks {
            block(
                &mut out,
                b,
                page.html_file.as_deref().unwrap_or("report.html"),
            );
            out.push('\n');
        }
    }
    // One trailing newline, whatever the last block wrote.
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('\n');
    out
}

fn block(out: &mut String, b: &Block, html_file: &str) {
    match b {
        Block::Paragraph(p) => {
            let _ = writeln!(out, "{}", escape(p, false));
        }
        Block::List(items) => {
            for i in items {
                let _ = writeln!(out, "- {}", escape(i, false).replace('\n', "\n  "));
            }
        }
        Block::Facts(facts) => {
            for (k, v) in facts {
                let _ = writeln!(
                    out,
                    "- **{}:** {}",
                    escape(k, false),
                    escape(v, false).replace('\n', "\n  ")
                );
            }
        }
        Block::Table(t) => table(out, t),
        Block::Figure(f) => figure(out, f, html_file),
        Block::Pre(text) => {
            // A fence longer than any run of backticks inside keeps the text verbatim.
            let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
            let fence = "`".repeat(longest.max(2) + 1);
            let _ = writeln!(out, "{fence}text\n{}\n{fence}", text.trim_end());
        }
        Block::Callout(tone, text) => {
            let label = match tone {
                Tone::Pass => "PASS",
                Tone::Info => "Note",
                Tone::Warn => "Warning",
                Tone::Fail => "FAIL",
            };
            let _ = writeln!(out, "> **{label}:** {}", escape(text, false));
        }
    }
}

fn table(out: &mut String, t: &Table) {
    if let Some(title) = &t.title {
        let _ = writeln!(out, "**{}**\n", escape(title, false));
    }
    let n = t.columns().max(1);
    let cell = |row: &[String], i: usize| {
        row.get(i)
            .map(|c| escape(c, true))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let header: Vec<String> = (0..n).map(|i| cell(&t.header, i)).collect();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let rule: Vec<&str> = (0..n)
        .map(|i| if t.numeric && i > 0 { "---:" } else { "---" })
        .collect();
    let _ = writeln!(out, "|{}|", rule.join("|"));
    for row in &t.rows {
        let cells: Vec<String> = (0..n).map(|i| cell(row, i)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    for note in &t.notes {
        let _ = writeln!(out, "\n{}", escape(note, false));
    }
}

fn figure(out: &mut String, f: &Figure, html_file: &str) {
    let _ = writeln!(
        out,
        "**Figure: {}** (chart `{}` in {}, {} data points). {}",
        escape(&f.title, false),
        f.id,
        escape(html_file, false),
        f.points,
        escape(&f.caption, false)
    );
}

#[cfg(test)]
mod tests {
    use super::super::{Section, Table};
    use super::*;

    #[test]
    fn a_page_renders_exactly() {
        let page = Page::new("Run *fast*")
            .lead("exit status 0")
            .section(
                Section::new("sys", "System")
                    .facts([("Model", "m|1")])
                    .paragraph("P99 <500 ms")
                    .list(["a", "b"]),
            )
            .section(
                Section::sub("t", "Tables")
                    .table(
                        Table::new(&["Metric", "Value"])
                            .titled("Table 1")
                            .row(["TTFT P50", "12 ms"])
                            .note("n = 3"),
                    )
                    .pre("servebench run ```x```")
                    .paragraph("use `--slo a|b` or a lone ` tick")
                    .callout(Tone::Fail, "SLO not met"),
            );
        let md = render(&page);
        let expected = "# Run \\*fast\\*\n\nexit status 0  \n\n## System\n\n\
- **Model:** m|1\n\nP99 \\<500 ms\n\n- a\n- b\n\n\
### Tables\n\n**Table 1**\n\n| Metric | Value |\n|---|---:|\n| TTFT P50 | 12 ms |\n\nn = 3\n\n\
````text\nservebench run ```x```\n````\n\nuse `--slo a|b` or a lone \\` tick\n\n> **FAIL:** SLO not met\n";
        assert_eq!(md, expected);
    }
}
