//! Parser for the Prometheus text exposition format (0.0.4) and OpenMetrics 1.0 text.
//!
//! Every engine we benchmark publishes queue depth, KV-cache use and token counters on a
//! `/metrics` page in one of these two formats, and telemetry scrapes it once a second during
//! a run. The parser is hand-written rather than taken from a crate because we need, all at
//! once: leniency where real servers are sloppy (CRLF, blank lines, stray comments, samples
//! with no `# TYPE`), an error naming the line and the fault when a sample line really is
//! malformed, no panic on any input, and one pass over the text per scrape.
//!
//! The result keeps every sample (name, labels, value, optional timestamp) grouped into
//! families by the `# TYPE` / `# HELP` / `# UNIT` lines; OpenMetrics exemplars are dropped.
//! Queries ([`Scrape::value`], [`Scrape::histogram`]) sum across series, because engines
//! split one quantity by labels a benchmark does not care about (vLLM's data-parallel
//! `engine`, `finished_reason`, `model_name`).
//!
//! The lexer for one sample line is in `sample_line.rs`, histogram arithmetic in
//! `histogram.rs`.

use serde::{Deserialize, Serialize};

use super::histogram::Histogram;
use super::sample_line::{parse_sample, push_escaped};

/// The kind declared by a `# TYPE` line; `Unknown` covers `untyped`, OpenMetrics `unknown`,
/// unrecognised words and samples that had no `# TYPE` at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
    GaugeHistogram,
    Summary,
    Info,
    StateSet,
    Unknown,
}

impl MetricKind {
    fn from_type_word(word: &str) -> MetricKind {
        match word {
            "counter" => MetricKind::Counter,
            "gauge" => MetricKind::Gauge,
            "histogram" => MetricKind::Histogram,
            "gaugehistogram" => MetricKind::GaugeHistogram,
            "summary" => MetricKind::Summary,
            "info" => MetricKind::Info,
            "stateset" => MetricKind::StateSet,
            // `untyped` (0.0.4), `unknown` (OpenMetrics) and anything newer we do not know:
            // keeping the samples is more useful than rejecting the scrape.
            _ => MetricKind::Unknown,
        }
    }

    /// Suffixes a sample name may add to its family name for this kind.
    fn sample_suffixes(self) -> &'static [&'static str] {
        match self {
            // OpenMetrics names the family `foo` and the samples `foo_total` / `foo_created`.
            MetricKind::Counter => &["_total", "_created"],
            MetricKind::Histogram => &["_bucket", "_sum", "_count", "_created"],
            MetricKind::GaugeHistogram => &["_bucket", "_gsum", "_gcount"],
            MetricKind::Summary => &["_sum", "_count", "_created"],
            MetricKind::Info => &["_info"],
            MetricKind::Gauge | MetricKind::StateSet | MetricKind::Unknown => &[],
        }
    }
}

/// Every suffix any kind allows; used to find a family when its samples are not contiguous.
const ALL_SUFFIXES: [&str; 8] = [
    "_total", "_created", "_bucket", "_sum", "_count", "_gsum", "_gcount", "_info",
];

/// Which text format the scrape was read as. It matters only for timestamps: integer
/// milliseconds in 0.0.4, float seconds in OpenMetrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Prometheus text format 0.0.4 (no `# EOF` at the end).
    Prometheus,
    /// OpenMetrics 1.0 text (last non-blank line is `# EOF`).
    OpenMetrics,
}

/// One sample line: `name{label="value",...} value [timestamp]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Full sample name, suffix included (`vllm:prompt_tokens_total`, `x_bucket`).
    pub name: String,
    /// Labels in the order written, escapes resolved.
    pub labels: Vec<(String, String)>,
    /// The value; may be NaN or ±infinity.
    pub value: f64,
    /// Timestamp in milliseconds since the Unix epoch, when the line had one.
    pub timestamp_ms: Option<i64>,
}

impl Sample {
    /// Value of the label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// True when every `(label, value)` pair given is present on this sample.
    pub fn has_labels(&self, wanted: &[(&str, &str)]) -> bool {
        wanted.iter().all(|(k, v)| self.label(k) == Some(*v))
    }
}

/// A metric family: the samples under one `# TYPE` (or one bare sample name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Family {
    /// Family name as declared by `# TYPE`/`# HELP`, or the sample name when undeclared.
    pub name: String,
    pub kind: MetricKind,
    pub help: Option<String>,
    /// OpenMetrics `# UNIT`, e.g. `seconds`.
    pub unit: Option<String>,
    pub samples: Vec<Sample>,
}

/// A parsed `/metrics` page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scrape {
    pub format: Format,
    /// Families in order of first appearance.
    pub families: Vec<Family>,
}

/// Why a scrape could not be parsed, with the 1-based line number.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    pub line: usize,
    pub kind: ParseErrorKind,
}

/// What was wrong with a line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseErrorKind {
    #[error("a sample must start with a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), found {found}")]
    InvalidMetricName { found: String },
    #[error("unexpected {found} after metric name `{name}` (expected a space or '{{')")]
    AfterName { name: String, found: String },
    #[error("invalid label name: found {found}")]
    InvalidLabelName { found: String },
    #[error("expected '=' after label name `{label}`")]
    ExpectedEquals { label: String },
    #[error("value of label `{label}` must be in double quotes")]
    ExpectedQuote { label: String },
    #[error("value of label `{label}` has no closing double quote")]
    UnterminatedLabelValue { label: String },
    #[error("label `{label}` appears twice")]
    DuplicateLabel { label: String },
    #[error("expected ',' or '}}' between labels, found {found}")]
    ExpectedCommaOrBrace { found: String },
    #[error("label set is not closed with '}}'")]
    UnterminatedLabels,
    #[error("sample `{name}` has no value")]
    MissingValue { name: String },
    #[error("invalid value `{text}` (expected a number, NaN, +Inf or -Inf)")]
    InvalidValue { text: String },
    #[error("invalid timestamp `{text}` (expected {expected})")]
    InvalidTimestamp {
        text: String,
        expected: &'static str,
    },
    #[error("unexpected text `{text}` after the timestamp")]
    TrailingText { text: String },
    #[error("content after `# EOF`")]
    AfterEof,
}

/// Parse a Prometheus 0.0.4 or OpenMetrics 1.0 text page.
///
/// Lenient about blank lines, CRLF, surrounding whitespace, comments that are not
/// HELP/TYPE/UNIT/EOF, unknown type words and unknown label escapes (kept verbatim);
/// strict about sample lines, which must parse completely.
pub fn parse(text: &str) -> Result<Scrape, ParseError> {
    let format = detect_format(text);
    let mut builder = Builder::default();
    let mut after_eof = false;
    for (index, raw) in text.split('\n').enumerate() {
        let line_no = index + 1;
        // `trim` removes the `\r` of CRLF and stray spaces at either end.
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if after_eof {
            return Err(ParseError {
                line: line_no,
                kind: ParseErrorKind::AfterEof,
            });
        }
        if let Some(body) = line.strip_prefix('#') {
            if body.trim() == "EOF" {
                after_eof = true;
            } else {
                builder.comment(body);
            }
            continue;
        }
        let sample = parse_sample(line, format).map_err(|kind| ParseError {
            line: line_no,
            kind,
        })?;
        builder.push(sample);
    }
    Ok(Scrape {
        format,
        families: builder.families,
    })
}

/// OpenMetrics must end with `# EOF`; a page without it is read as 0.0.4.
fn detect_format(text: &str) -> Format {
    let last = text.lines().rev().map(str::trim).find(|l| !l.is_empty());
    if last == Some("# EOF") {
        Format::OpenMetrics
    } else {
        Format::Prometheus
    }
}

/// Groups samples into families as lines arrive.
#[derive(Default)]
struct Builder {
    families: Vec<Family>,
    index: std::collections::HashMap<String, usize>,
    current: Option<usize>,
}

impl Builder {
    fn comment(&mut self, body: &str) {
        let (keyword, rest) = split_word(body);
        let (name, rest) = split_word(rest);
        if name.is_empty() {
            return; // `# HELP` with nothing after it: treat as a plain comment.
        }
        if !matches!(keyword, "HELP" | "TYPE" | "UNIT") {
            return; // any other comment carries nothing for us
        }
        let text = rest.trim();
        let i = self.family_named(name);
        let family = &mut self.families[i];
        match keyword {
            "HELP" => family.help = Some(unescape_help(text)),
            "TYPE" => family.kind = MetricKind::from_type_word(text),
            _ => family.unit = Some(text.to_string()),
        }
    }

    /// The family declared under `name`, created when first seen.
    fn family_named(&mut self, name: &str) -> usize {
        if let Some(c) = self.current.filter(|&c| self.families[c].name == name) {
            return c;
        }
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => self.create(name),
        };
        self.current = Some(i);
        i
    }

    /// A new family, `Unknown` until a `# TYPE` says otherwise.
    fn create(&mut self, name: &str) -> usize {
        self.families.push(Family {
            name: name.to_string(),
            kind: MetricKind::Unknown,
            help: None,
            unit: None,
            samples: Vec::new(),
        });
        let i = self.families.len() - 1;
        self.index.insert(name.to_string(), i);
        i
    }

    fn push(&mut self, sample: Sample) {
        let i = self.family_for_sample(&sample.name);
        self.families[i].samples.push(sample);
    }

    fn family_for_sample(&mut self, name: &str) -> usize {
        if let Some(c) = self.current.filter(|&c| belongs(&self.families[c], name)) {
            return c;
        }
        // Servers sometimes interleave families; find the one this sample belongs to.
        if let Some(&i) = self.index.get(name) {
            self.current = Some(i);
            return i;
        }
        for suffix in ALL_SUFFIXES {
            let Some(base) = name.strip_suffix(suffix) else {
                continue;
            };
            if let Some(&i) = self.index.get(base) {
                if belongs(&self.families[i], name) {
                    self.current = Some(i);
                    return i;
                }
            }
        }
        // A sample with no declaration is an untyped family of its own.
        let i = self.create(name);
        self.current = Some(i);
        i
    }
}

fn belongs(family: &Family, sample_name: &str) -> bool {
    match sample_name.strip_prefix(family.name.as_str()) {
        Some("") => true,
        Some(suffix) => family.kind.sample_suffixes().contains(&suffix),
        None => false,
    }
}

/// Splits off the first whitespace-separated word.
fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find([' ', '\t']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    }
}

/// HELP text escapes `\\` and `\n` (OpenMetrics adds `\"`).
fn unescape_help(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => push_escaped(&mut out, chars.next().unwrap_or('\\')),
            c => out.push(c),
        }
    }
    out
}

impl Scrape {
    /// The family declared as `name`.
    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    /// Every sample, in page order within each family.
    pub fn samples(&self) -> impl Iterator<Item = &Sample> {
        self.families.iter().flat_map(|f| f.samples.iter())
    }

    /// Samples named exactly `name` that carry all the `labels` given.
    pub fn series<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        // A sample's name always starts with its family's name, so this skips most families.
        self.families
            .iter()
            .filter(move |f| name.starts_with(f.name.as_str()))
            .flat_map(|f| f.samples.iter())
            .filter(move |s| s.name == name && s.has_labels(labels))
    }

    /// Sum of the samples named `name` carrying the given labels (others may differ), or
    /// `None` when no sample matches. Sample names include suffixes (`x_total`).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.series(name, labels)
            .map(|s| s.value)
            .fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
    }

    /// The histogram `family` summed over all its series (every label but `le`).
    pub fn histogram(&self, family: &str) -> Option<Histogram> {
        Histogram::from_scrape(self, family, &[])
    }

    /// The histogram `family` summed over the series carrying `labels`.
    pub fn histogram_with(&self, family: &str, labels: &[(&str, &str)]) -> Option<Histogram> {
        Histogram::from_scrape(self, family, labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page from `tests/fixtures/metrics/`.
    macro_rules! fixture {
        ($file:literal) => {
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/metrics/",
                $file
            ))
        };
    }

    const VLLM: &str = fixture!("vllm.txt");
    const LLAMA: &str = fixture!("llamacpp-11434.txt");
    const FIXTURES: [&str; 8] = [
        VLLM,
        LLAMA,
        fixture!("llamacpp-sample.txt"),
        fixture!("sglang.txt"),
        fixture!("tgi.txt"),
        fixture!("triton_trtllm.txt"),
        fixture!("trtllm_serve.txt"),
        fixture!("dcgm.txt"),
    ];

    fn err_at(text: &str) -> ParseError {
        parse(text).expect_err("should not parse")
    }

    #[test]
    fn llama_cpp_recorded_scrape() {
        let s = parse(LLAMA).unwrap();
        assert_eq!(s.format, Format::Prometheus);
        assert_eq!(s.families.len(), 15);
        let f = s.family("llamacpp:prompt_tokens_total").unwrap();
        assert_eq!(f.kind, MetricKind::Counter);
        assert!(f
            .help
            .as_deref()
            .unwrap()
            .ends_with("excluding cached tokens"));
        assert_eq!(s.value("llamacpp:n_decode_total", &[]), Some(70.0));
        assert_eq!(s.value("llamacpp:prompt_seconds_total", &[]), Some(0.24519));
        assert_eq!(s.value("llamacpp:no_such_metric", &[]), None);
    }

    #[test]
    fn vllm_sums_across_engines_and_labels() {
        let s = parse(VLLM).unwrap();
        let success = "vllm:request_success_total";
        // 38 + 2 + 0 (engine 0) + 36 + 4 + 0 (engine 1)
        assert_eq!(s.value(success, &[]), Some(80.0));
        assert_eq!(
            s.value(success, &[("finished_reason", "length")]),
            Some(6.0)
        );
        let engine_1 = [("engine", "1"), ("finished_reason", "stop")];
        assert_eq!(s.value(success, &engine_1), Some(36.0));
        // A histogram named `..._total` stays a histogram; its name is no sample.
        let it = s.family("vllm:iteration_tokens_total").unwrap();
        assert_eq!(it.kind, MetricKind::Histogram);
        assert_eq!(s.value("vllm:iteration_tokens_total", &[]), None);
        // prometheus_client writes `_created` as its own gauge family in 0.0.4.
        let created = s.family("vllm:num_preemptions_created").unwrap();
        assert_eq!(created.kind, MetricKind::Gauge);
    }

    #[test]
    fn openmetrics_with_exemplars_units_and_eof() {
        let text = "# TYPE rpc_duration_seconds histogram\n\
            # UNIT rpc_duration_seconds seconds\n\
            # HELP rpc_duration_seconds RPC latency.\n\
            rpc_duration_seconds_bucket{le=\"0.5\"} 3 # {trace_id=\"a#b\"} 0.31 1520879607.789\n\
            rpc_duration_seconds_bucket{le=\"+Inf\"} 4\n\
            rpc_duration_seconds_sum 2.5\n\
            rpc_duration_seconds_count 4\n\
            rpc_duration_seconds_created 1520430000.123\n\
            # TYPE requests counter\n\
            requests_total{path=\"/\"} 17 1520879607.789\n\
            requests_created{path=\"/\"} 1520430000\n\
            # TYPE build info\n\
            build_info{version=\"1.2\"} 1\n\
            # TYPE door stateset\n\
            door{door=\"open\"} 1\n\
            # EOF\n";
        let s = parse(text).unwrap();
        assert_eq!(s.format, Format::OpenMetrics);
        let names: Vec<&str> = s.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["rpc_duration_seconds", "requests", "build", "door"]);
        assert_eq!(s.families[0].unit.as_deref(), Some("seconds"));
        assert_eq!(s.families[0].samples.len(), 5);
        assert_eq!(s.families[1].kind, MetricKind::Counter);
        assert_eq!(s.families[1].samples.len(), 2);
        assert_eq!(s.families[2].kind, MetricKind::Info);
        assert_eq!(s.families[3].kind, MetricKind::StateSet);
        // OpenMetrics timestamps are float seconds; we keep milliseconds.
        let total = s.series("requests_total", &[]).next().unwrap();
        assert_eq!(total.timestamp_ms, Some(1_520_879_607_789));
        let h = s.histogram("rpc_duration_seconds").unwrap();
        assert_eq!(h.buckets, vec![(0.5, 3.0), (f64::INFINITY, 4.0)]);
        // Rank 2 of 3 in [0, 0.5].
        assert!((h.quantile(0.5).unwrap() - 0.5 * 2.0 / 3.0).abs() < 1e-12);
        let err = err_at("a 1\n# EOF\nb 2\n# EOF\n");
        assert_eq!((err.line, err.kind), (3, ParseErrorKind::AfterEof));
    }

    #[test]
    fn interleaved_family_samples_rejoin_their_family() {
        let text = "# TYPE a counter\n# TYPE b gauge\nb 1\na_total 2\na_created 3\nb 4\n";
        let s = parse(text).unwrap();
        assert_eq!(s.families.len(), 2);
        assert_eq!(s.family("a").unwrap().samples.len(), 2);
        assert_eq!(s.value("b", &[]), Some(5.0));
    }

    /// A tiny xorshift generator, so the garbage is the same on every run.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn exercise(text: &str) -> bool {
        match parse(text) {
            Ok(s) => {
                for f in &s.families {
                    if let Some(h) = s.histogram(&f.name) {
                        let _ = (h.quantile(0.5), h.mean(), h.delta(&h));
                    }
                }
                true
            }
            Err(e) => e.line >= 1 && !e.to_string().is_empty(),
        }
    }

    #[test]
    fn no_panic_on_prefixes_and_garbage() {
        // Every prefix of a whole page costs O(n²) parsing, too slow for the larger pages in
        // a debug build. The parser keeps no state across lines except the family grouping,
        // so every prefix of the first 3 KB, every prefix that ends a line, and every prefix of
        // every single line reach the same states.
        for fixture in FIXTURES {
            for (end, _) in fixture.char_indices() {
                let prefix = &fixture[..end];
                if end < 3000 {
                    assert!(exercise(prefix));
                }
                // Cut at a line end, a prefix is a complete page and must parse.
                if prefix.ends_with('\n') {
                    assert!(parse(prefix).is_ok(), "prefix ending at byte {end}");
                }
            }
            for line in fixture.lines() {
                for (end, _) in line.char_indices() {
                    assert!(exercise(&line[..end]));
                }
            }
        }
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let alphabet = b"{}=\",# \n\\abc_:01.eE+-InfNaN\r\t\xff\xc3";
        for _ in 0..3000 {
            let len = (xorshift(&mut state) % 80) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    let r = xorshift(&mut state);
                    if r.is_multiple_of(4) {
                        r as u8
                    } else {
                        alphabet[(r as usize / 4) % alphabet.len()]
                    }
                })
                .collect();
            assert!(exercise(&String::from_utf8_lossy(&bytes)));
        }
    }
}
