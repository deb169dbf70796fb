//! The one render seam. Every document servebench shows (a run, a test, a suite, a suite
//! per profile, a comparison, the regression gate) renders through one trait,
//! [`Render`], into one list of outputs, [`Output`]: the terminal's text, the document's
//! JSON, and its page as Markdown and as HTML. The views that implement it, one per
//! document, are in `report::views`; `pipeline::pages::write` writes whichever outputs a
//! command asks for, atomically, where [`Files`] says (a folder's own names, from
//! `store::folder`, or the paths the user gave).
//!
//! Pure: documents in, text out. A new output is a variant here, its arm in [`render_each`],
//! its place in [`Files`], and (for `servebench report --format`) a value of [`Format`].

use super::page::Page;
use std::path::{Path, PathBuf};

/// One form a document takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Text for the terminal, within 100 columns.
    Terminal,
    /// The document itself, as its file holds it (`run.json`, `test.json`, `suite.json`,
    /// `profiles.json`) or `--json` prints it.
    Json,
    /// The page in Markdown (`report.md`).
    Markdown,
    /// The page as one self-contained HTML file, charts inline (`report.html`).
    Html,
}

/// Both forms of a document's page, in the order they are written.
pub const PAGES: [Output; 2] = [Output::Markdown, Output::Html];

impl Output {
    /// Whether it is a form of the page (built once for both).
    pub fn is_page(self) -> bool {
        matches!(self, Self::Markdown | Self::Html)
    }
}

/// A document as it renders: what only it knows (its text, its JSON, its page and its
/// folder's files); [`render_each`] does the rest the same way for every document.
pub trait Render {
    /// The text the terminal shows.
    fn terminal(&self) -> String;
    /// The document as JSON text, byte for byte as its file holds it or `--json` prints it.
    fn json(&self) -> String;
    /// The page `report.md` and `report.html` are drawn from; `None` for a document without
    /// one (the regression gate).
    fn page(&self) -> Option<Page>;
    /// Where each output goes in the document's folder `dir`; nowhere for a document without
    /// a folder (a comparison: the user names its files).
    fn files(&self, dir: &Path) -> Files;
}

/// One output of a document, or `None` when it has no such form.
pub fn render(doc: &dyn Render, output: Output) -> Option<String> {
    render_each(doc, &[output]).pop().map(|(_, text)| text)
}

/// Each of `outputs` of a document, in order, the page built once for both of its forms;
/// an output the document has no form of is left out.
pub fn render_each(doc: &dyn Render, outputs: &[Output]) -> Vec<(Output, String)> {
    let page = match outputs.iter().any(|o| o.is_page()) {
        true => doc.page(),
        false => None,
    };
    outputs
        .iter()
        .filter_map(|&o| {
            let text = match o {
                Output::Terminal => doc.terminal(),
                Output::Json => doc.json(),
                Output::Markdown => page.as_ref()?.to_markdown(),
                Output::Html => page.as_ref()?.to_html(),
            };
            Some((o, text))
        })
        .collect()
}

/// Where a document's outputs are written: a path for each that has one (the terminal's
/// text is printed, never written).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Files {
    pub json: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub html: Option<PathBuf>,
}

impl Files {
    /// A folder's files: its document and its two pages.
    pub fn of(json: PathBuf, markdown: PathBuf, html: PathBuf) -> Self {
        Self {
            json: Some(json),
            markdown: Some(markdown),
            html: Some(html),
        }
    }

    /// Where `output` goes, if anywhere.
    pub fn path(&self, output: Output) -> Option<&Path> {
        match output {
            Output::Terminal => None,
            Output::Json => self.json.as_deref(),
            Output::Markdown => self.markdown.as_deref(),
            Output::Html => self.html.as_deref(),
        }
    }

    /// The same files with `output` going to `path` instead (`report --output PATH`,
    /// `compare --md PATH`).
    pub fn with(mut self, output: Output, path: PathBuf) -> Self {
        match output {
            Output::Terminal => {}
            Output::Json => self.json = Some(path),
            Output::Markdown => self.markdown = Some(path),
            Output::Html => self.html = Some(path),
        }
        self
    }
}

/// What `servebench report --format` renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The minimum report (every table with --detail), printed.
    Terminal,
    /// report.md: the verdict and key numbers, Appendix C.1, then the C.2 full report.
    Md,
    /// report.html: the same with charts, one self-contained file.
    Html,
    /// The terminal report printed, report.md and report.html written.
    All,
}

impl Format {
    /// The outputs it asks for, in the order they are made.
    pub fn outputs(self) -> &'static [Output] {
        match self {
            Self::Terminal => &[Output::Terminal],
            Self::Md => &[Output::Markdown],
            Self::Html => &[Output::Html],
            Self::All => &[Output::Terminal, Output::Markdown, Output::Html],
        }
    }

    /// The one page it asks for (`md` or `html`), which `--output` may send elsewhere.
    pub fn single_page(self) -> Option<Output> {
        match self {
            Self::Md => Some(Output::Markdown),
            Self::Html => Some(Output::Html),
            Self::Terminal | Self::All => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document that counts how often its page is built.
    struct Counting(std::cell::Cell<usize>);

    impl Render for Counting {
        fn terminal(&self) -> String {
            "text\n".into()
        }
        fn json(&self) -> String {
            "{}".into()
        }
        fn page(&self) -> Option<Page> {
            self.0.set(self.0.get() + 1);
            Some(Page::new("A page"))
        }
        fn files(&self, dir: &Path) -> Files {
            Files::of(dir.join("a.json"), dir.join("a.md"), dir.join("a.html"))
        }
    }

    #[test]
    fn every_output_renders_once_and_the_page_is_built_once() {
        let doc = Counting(Default::default());
        let all = [
            Output::Terminal,
            Output::Json,
            Output::Markdown,
            Output::Html,
        ];
        let each = render_each(&doc, &all);
        assert_eq!(each.iter().map(|e| e.0).collect::<Vec<_>>(), all);
        assert_eq!(doc.0.get(), 1);
        assert_eq!(each[0].1, "text\n");
        assert!(each[2].1.starts_with("# A page"), "{}", each[2].1);
        assert!(each[3].1.contains("<html"));
        assert_eq!(render(&doc, Output::Json).as_deref(), Some("{}"));
        assert_eq!(doc.0.get(), 1, "no page built for the JSON");
    }

    #[test]
    fn files_go_to_the_folder_unless_sent_elsewhere() {
        let doc = Counting(Default::default());
        let files = doc.files(Path::new("out"));
        assert_eq!(files.path(Output::Terminal), None);
        assert_eq!(files.path(Output::Html), Some(Path::new("out/a.html")));
        let files = files.with(Output::Markdown, "elsewhere.md".into());
        assert_eq!(
            files.path(Output::Markdown),
            Some(Path::new("elsewhere.md"))
        );
        assert_eq!(Files::default().path(Output::Json), None);
        assert_eq!(Format::All.outputs()[1..], PAGES);
        assert_eq!(Format::Html.single_page(), Some(Output::Html));
    }
}
