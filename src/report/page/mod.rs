//! A report page as plain data: a title, sections, and blocks (paragraphs, lists, facts,
//! tables, charts, preformatted text, call-outs), rendered once to Markdown
//! ([`markdown::render`]) and once to a single self-contained HTML file ([`html::render`]).
//!
//! Run reports are built this way (`report::run`), and so can test and comparison pages:
//! their builders assemble [`Section`]s, the renderers own every layout decision. Pure: no
//! I/O, strings in and out.
//!
//! Text is plain, with one piece of markup: `backticks` around code (a command, a flag, a
//! field name), which both renderers show as code.
//!
//! ```
//! use servebench::report::page::{Page, Section, Table};
//! let page = Page::new("Throughput–latency curve")
//!     .section(
//!         Section::new("levels", "Levels")
//!             .paragraph("One run per offered load.")
//!             .table(Table::new(&["Offered", "P99 TTFT"]).row(["2 req/s", "180 ms"])),
//!     );
//! assert!(page.to_markdown().contains("| 2 req/s | 180 ms |"));
//! assert!(page.to_html().contains("<table"));
//! ```

pub mod html;
pub mod markdown;

use super::chart::Chart;

/// A whole report page.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// The page's title (`<h1>`, `# …`).
    pub title: String,
    /// Short lines under the title (what, when, verdict).
    pub lead: Vec<String>,
    pub sections: Vec<Section>,
    /// The HTML file the Markdown's figure references point to (default `report.html`).
    pub html_file: Option<String>,
}

impl Page {
    pub fn new(title: &str) -> Self {
        Self {
            title: title.to_string(),
            ..Default::default()
        }
    }

    /// Adds a line under the title.
    pub fn lead(mut self, line: &str) -> Self {
        self.lead.push(line.to_string());
        self
    }

    /// Names the HTML file that holds the charts, for the Markdown's figure references.
    pub fn html_file(mut self, name: &str) -> Self {
        self.html_file = Some(name.to_string());
        self
    }

    /// Appends a section.
    pub fn section(mut self, section: Section) -> Self {
        self.sections.push(section);
        self
    }

    /// Appends several sections (e.g. a run's, inside a test page).
    pub fn sections(mut self, sections: impl IntoIterator<Item = Section>) -> Self {
        self.sections.extend(sections);
        self
    }

    /// The page as Markdown (GitHub-flavoured tables); charts become references to the
    /// HTML report.
    pub fn to_markdown(&self) -> String {
        markdown::render(self)
    }

    /// The page as one self-contained HTML document that loads nothing.
    pub fn to_html(&self) -> String {
        html::render(self)
    }

    /// Every figure on the page, in order.
    pub fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.sections.iter().flat_map(|s| {
            s.blocks.iter().filter_map(|b| match b {
                Block::Figure(f) => Some(f),
                _ => None,
            })
        })
    }
}

/// A titled part of a page. `level` 1 is a top-level section (`<h2>`, `##`), 2 a
/// subsection (`<h3>`, `###`), 3 below that.
#[derive(Debug, Clone)]
pub struct Section {
    /// Anchor id, unique within the page (`[a-z0-9-]`).
    pub id: String,
    pub heading: String,
    pub level: u8,
    pub blocks: Vec<Block>,
}

impl Section {
    /// A top-level section.
    pub fn new(id: &str, heading: &str) -> Self {
        Self {
            id: super::chart::charts::slug(id),
            heading: heading.to_string(),
            level: 1,
            blocks: Vec::new(),
        }
    }

    /// A subsection (level 2).
    pub fn sub(id: &str, heading: &str) -> Self {
        Self {
            level: 2,
            ..Self::new(id, heading)
        }
    }

    /// Sets the level (1 to 3).
    pub fn level(mut self, level: u8) -> Self {
        self.level = level.clamp(1, 3);
        self
    }

    /// Adds a block.
    pub fn block(mut self, block: Block) -> Self {
        self.blocks.push(block);
        self
    }

    /// Adds a paragraph of plain text.
    pub fn paragraph(self, text: &str) -> Self {
        self.block(Block::Paragraph(text.to_string()))
    }

    /// Adds a bulleted list.
    pub fn list<S: Into<String>>(self, items: impl IntoIterator<Item = S>) -> Self {
        self.block(Block::List(items.into_iter().map(Into::into).collect()))
    }

    /// Adds `label: value` facts (a definition list in HTML, a two-column table in
    /// Markdown).
    pub fn facts<K: Into<String>, V: Into<String>>(
        self,
        facts: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.block(Block::Facts(
            facts
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        ))
    }

    /// Adds a table.
    pub fn table(self, table: Table) -> Self {
        self.block(Block::Table(table))
    }

    /// Adds a chart with a caption saying what to read from it.
    pub fn chart(self, chart: &Chart, caption: &str) -> Self {
        self.block(Block::Figure(Figure::new(chart, caption)))
    }

    /// Adds preformatted text (kept verbatim, monospaced).
    pub fn pre(self, text: &str) -> Self {
        self.block(Block::Pre(text.to_string()))
    }

    /// Adds a highlighted note.
    pub fn callout(self, tone: Tone, text: &str) -> Self {
        self.block(Block::Callout(tone, text.to_string()))
    }
}

/// How a call-out reads: as good news, a caution, or a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Pass,
    Info,
    Warn,
    Fail,
}

/// One piece of a section.
#[derive(Debug, Clone)]
pub enum Block {
    Paragraph(String),
    List(Vec<String>),
    Facts(Vec<(String, String)>),
    Table(Table),
    Figure(Figure),
    Pre(String),
    Callout(Tone, String),
}

/// A table of text cells. With `numeric`, every column after the first is right-aligned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Shown above the table (draft table numbers go here).
    pub title: Option<String>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub numeric: bool,
    /// Columns whose cells never wrap in HTML (short codes, statuses, counts).
    pub nowrap: Vec<usize>,
    /// Sentences shown under the table.
    pub notes: Vec<String>,
}

impl Table {
    /// A table with these column headings; right-aligned numbers by default.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|h| h.to_string()).collect(),
            numeric: true,
            ..Default::default()
        }
    }

    /// Sets the title.
    pub fn titled(mut self, title: &str) -> Self {
        self.title = Some(title.to_string());
        self
    }

    /// Left-aligns every column (text tables).
    pub fn text(mut self) -> Self {
        self.numeric = false;
        self
    }

    /// Keeps these columns (0-based) from wrapping in HTML.
    pub fn nowrap(mut self, columns: &[usize]) -> Self {
        self.nowrap = columns.to_vec();
        self
    }

    /// Appends a row (cells beyond the header are kept; missing ones are blank).
    pub fn row<S: Into<String>>(mut self, cells: impl IntoIterator<Item = S>) -> Self {
        self.push(cells);
        self
    }

    /// Appends a row in place.
    pub fn push<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Adds a sentence under the table.
    pub fn note(mut self, note: &str) -> Self {
        self.notes.push(note.to_string());
        self
    }

    /// Number of columns: the header's, or the widest row's.
    pub fn columns(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0)
    }
}

/// A rendered chart with its caption.
#[derive(Debug, Clone)]
pub struct Figure {
    /// The chart's id (its `data-chart`).
    pub id: String,
    pub title: String,
    /// The `<svg>` element, ready to inline.
    pub svg: String,
    /// What to read from the chart.
    pub caption: String,
    /// Data elements drawn (the SVG's `data-points`).
    pub points: usize,
}

impl Figure {
    /// Renders `chart` now.
    pub fn new(chart: &Chart, caption: &str) -> Self {
        let svg = chart.render();
        let points = svg
            .split("data-points=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        Self {
            id: chart.chart_id().to_string(),
            title: chart_title(&svg),
            svg,
            caption: caption.to_string(),
            points,
        }
    }
}

/// The text of the SVG's `<title>`, unescaped enough for a heading.
fn chart_title(svg: &str) -> String {
    svg.split("-title\">")
        .nth(1)
        .and_then(|s| s.split("</title>").next())
        .map(|t| {
            t.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::chart::Chart;

    #[test]
    fn figures_know_their_points_and_title() {
        let chart = Chart::cdf("TTFT", &[1.0, 2.0, 3.0]).title("TTFT <CDF> & more");
        let f = Figure::new(&chart, "read the median");
        assert_eq!(f.points, 3);
        assert_eq!(f.id, "ttft-cdf");
        assert_eq!(f.title, "TTFT <CDF> & more");
        let page = Page::new("p").section(Section::new("a", "A").chart(&chart, "c"));
        assert_eq!(page.figures().count(), 1);
    }

    #[test]
    fn tables_count_columns_from_header_or_rows() {
        let t = Table::new(&["a", "b"]).row(["1", "2", "3"]);
        assert_eq!(t.columns(), 3);
        assert!(t.numeric);
        assert!(!t.text().numeric);
        assert_eq!(Section::sub("x y", "X").id, "x-y");
        assert_eq!(Section::new("a", "A").level(9).level, 3);
    }
}
