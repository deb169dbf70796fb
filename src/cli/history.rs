//! `servebench history`, `label`, `note` and `reindex`, and the indexing of a run when it
//! ends. The run folders are the truth; the database (`store::history`) only lists them,
//! so a failure to index warns and never costs a run.

use crate::flags::{HistoryArgs, LabelArgs, NoteArgs, ReindexArgs};
use crate::pipeline::exit;
use crate::store::history::{self, store_path, Filter, History, RunRef, RunRow};
use anyhow::{Context, Result};

/// `--since`: a date or time as given, or a span back from now (`7d`) as an ISO time.
fn since(value: &str) -> String {
    match humantime::parse_duration(value.trim()) {
        Ok(span) => {
            let now = crate::clock::RunClock::start().unix_us(0);
            crate::clock::iso8601_ms(now.saturating_sub(span.as_micros() as u64))
        }
        Err(_) => value.to_owned(),
    }
}

pub fn history(args: HistoryArgs) -> Result<u8> {
    let db = History::open(&store_path(args.store.store.as_deref()))?;
    let rows = db.list(&Filter {
        target: args.target,
        model: args.model,
        workload: args.workload,
        label: args.label,
        since: args.since.as_deref().map(since),
        limit: Some(args.limit),
        ..Filter::default()
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if rows.is_empty() {
        println!("No runs match. `servebench run` indexes each run it finishes; `servebench reindex DIR` indexes existing folders.");
    } else {
        print!("{}", table(&rows));
    }
    Ok(exit::OK)
}

fn f(v: Option<f64>, digits: usize) -> String {
    v.map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "–".into())
}

/// The load in a few characters: `closed c=64` → `c=64`, `open 12.5 req/s poisson` →
/// `12.5 req/s`.
fn short_load(load: Option<&str>) -> String {
    let Some(l) = load else {
        return "?".into();
    };
    if let Some(c) = l.strip_prefix("closed ") {
        return c.to_owned();
    }
    if let Some(rest) = l.strip_prefix("open ") {
        return rest.split(' ').take(2).collect::<Vec<_>>().join(" ");
    }
    l.to_owned()
}

/// A model that is a file path, shortened to its file name
/// (`/root/.cache/llama.cpp/gemma-3-270m-it-Q8_0.gguf` → `gemma-3-270m-it-Q8_0.gguf`); a
/// hub id (`meta-llama/Llama-3.1-8B-Instruct`) or a plain name stays as it is. Only the
/// listing shortens: `--json` keeps the full value.
fn short_model(model: &str) -> String {
    let path_like = model.starts_with('/')
        || model.starts_with("~/")
        || model.starts_with("./")
        || model.starts_with("../")
        || model.contains('\\')
        || model.matches('/').count() >= 2;
    if !path_like {
        return model.to_owned();
    }
    model
        .rsplit(['/', '\\'])
        .find(|part| !part.is_empty())
        .unwrap_or(model)
        .to_owned()
}

/// The listing's columns: (header, width, right-aligned). 100 columns in all with one
/// space between them; a text longer than its column is cut with `…` (never wrapped: 28
/// runs once took 338 lines), and `--json` has every value whole.
const COLUMNS: [(&str, usize, bool); 11] = [
    ("id", 5, true),
    ("", 1, false),
    ("started", 11, false),
    ("run", 16, false),
    ("model", 12, false),
    ("load", 11, false),
    ("tok/s", 6, true),
    ("TTFT", 11, true),
    ("TPOT", 6, true),
    ("ok", 4, true),
    ("labels", 7, false),
];
/// A test's answer spans the figure columns (load to ok) and the spaces between them.
const ANSWER_FROM: usize = 5;
const ANSWER_TO: usize = 9;

/// `text` in `width` characters: cut with `…` when longer, padded when shorter.
fn fit(text: &str, width: usize, right: bool) -> String {
    let n = text.chars().count();
    let cut: String = if n > width {
        text.chars()
            .take(width.saturating_sub(1))
            .chain(['…'])
            .collect()
    } else {
        text.to_owned()
    };
    if right {
        format!("{cut:>width$}")
    } else {
        format!("{cut:<width$}")
    }
}

/// A latency in ms: one decimal below 100 ms, whole milliseconds above.
fn ms(v: Option<f64>) -> String {
    match v {
        Some(v) if v < 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
        None => "–".into(),
    }
}

/// One listing line's cells, in [`COLUMNS`] order; a test's figure cells are empty and
/// its answer is returned beside them.
fn cells(r: &RunRow) -> (Vec<String>, Option<String>) {
    // 2026-11-22T21:16:39.462Z → 11-22 21:16
    let started = r
        .started_at
        .as_deref()
        .and_then(|s| Some(format!("{} {}", s.get(5..10)?, s.get(11..16)?)))
        .unwrap_or_default();
    let name = match (&r.test_name, r.kind) {
        (Some(t), history::Kind::Test) => format!("test {t}"),
        (Some(t), _) => format!("{} ({t})", r.name),
        _ => r.name.clone(),
    };
    let mark = match (r.interrupted, r.exit_status) {
        (Some(true), _) => "!",
        (_, Some(s)) if s != 0 => "x",
        _ => "",
    };
    let mut row = vec![
        format!("#{}", r.id),
        mark.to_owned(),
        started,
        name,
        r.model.as_deref().map(short_model).unwrap_or_default(),
    ];
    let answer = (r.kind == history::Kind::Test).then(|| {
        r.answer
            .clone()
            .or(r.verdict.clone())
            .unwrap_or_else(|| "–".into())
    });
    if answer.is_some() {
        row.extend((ANSWER_FROM..=ANSWER_TO).map(|_| String::new()));
    } else {
        row.extend([
            short_load(r.load.as_deref()),
            f(r.output_tokens_per_s, 0),
            format!("{}/{}", ms(r.ttft_p50_ms), ms(r.ttft_p99_ms)),
            f(r.tpot_p50_ms, 1),
            r.success_rate
                .map(|s| format!("{:.0}%", s * 100.0))
                .unwrap_or_else(|| "–".into()),
        ]);
    }
    row.push(r.labels.join(" "));
    (row, answer)
}

/// The listing: one line per run or test, in 100 columns, and a legend.
pub fn table(rows: &[RunRow]) -> String {
    let header: Vec<String> = COLUMNS.iter().map(|c| c.0.to_owned()).collect();
    let mut lines = vec![line(&header, None)];
    for r in rows {
        let (row, answer) = cells(r);
        lines.push(line(&row, answer.as_deref()));
    }
    format!(
        "{}\n!: interrupted; x: did not pass (a non-zero exit status); started: UTC; tok/s: output tokens\nper second; TTFT: P50/P99 ms; TPOT: P50 ms; ok: requests that succeeded; a test shows its answer\n",
        lines.join("\n")
    )
}

/// One line of [`COLUMNS`]' cells; `answer` fills the figure columns of a test's line.
fn line(cells: &[String], answer: Option<&str>) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < COLUMNS.len() {
        let (_, width, right) = COLUMNS[i];
        match answer {
            Some(a) if i == ANSWER_FROM => {
                let span: usize = COLUMNS[ANSWER_FROM..=ANSWER_TO]
                    .iter()
                    .map(|c| c.1 + 1)
                    .sum();
                out.push(fit(a, span - 1, false));
                i = ANSWER_TO + 1;
                continue;
            }
            _ => out.push(fit(cells.get(i).map_or("", String::as_str), width, right)),
        }
        i += 1;
    }
    out.join(" ").trim_end().to_owned()
}

/// The run an argument names; a run folder not indexed yet is indexed first, so labelling
/// or noting a folder never needs a separate step.
fn run_ref(db: &mut History, arg: &str) -> Result<RunRef> {
    let run = RunRef::parse(arg);
    if let RunRef::Path(p) = &run {
        if p.exists() && db.get(&run).is_err() {
            db.index(p)?;
        }
    }
    Ok(run)
}

pub fn label(args: LabelArgs) -> Result<u8> {
    let mut db = History::open(&store_path(args.store.store.as_deref()))?;
    let run = run_ref(&mut db, &args.run)?;
    if args.remove {
        if db.unlabel(&run, &args.name)? {
            println!("Removed `{}` from {}", args.name.trim(), args.run);
        } else {
            println!("{} did not carry `{}`", args.run, args.name.trim());
        }
    } else {
        db.label(&run, &args.name)?;
        println!("Labelled {} `{}`", args.run, args.name.trim());
    }
    Ok(exit::OK)
}

pub fn note(args: NoteArgs) -> Result<u8> {
    let mut db = History::open(&store_path(args.store.store.as_deref()))?;
    let run = run_ref(&mut db, &args.run)?;
    db.note(&run, &args.text)?;
    println!("Noted on {}", args.run);
    Ok(exit::OK)
}

pub fn reindex(args: ReindexArgs) -> Result<u8> {
    let path = store_path(args.store.store.as_deref());
    let mut db = History::open(&path)?;
    let report = db
        .reindex(&args.dir)
        .with_context(|| format!("reindexing {}", args.dir.display()))?;
    println!(
        "Indexed {} run(s) and {} test(s) under {} into {}; removed {} row(s) of folders that are gone.",
        report.runs,
        report.tests,
        args.dir.display(),
        path.display(),
        report.removed
    );
    for u in &report.unreadable {
        eprintln!("  skipped {}: {}", u.path.display(), u.reason);
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A listed run with long text columns and wide figures, as a real server's runs have.
    fn row(model: &str) -> RunRow {
        RunRow {
            id: 12,
            kind: history::Kind::Run,
            path: PathBuf::from("/runs/20261122-211639-abcdef"),
            name: "20261122-211639-abcdef".into(),
            parent_test: Some(11),
            test_name: Some("throughput-sweep".into()),
            schema_version: Some(1),
            started_at: Some("2026-11-22T21:16:39.462Z".into()),
            started_at_us: Some(1_795_382_199_462_000),
            finished_at_us: None,
            interrupted: Some(false),
            command_line: None,
            target: Some("http://127.0.0.1:8080/v1".into()),
            endpoint: Some("chat".into()),
            model: Some(model.into()),
            engine: Some("llama.cpp".into()),
            engine_version: None,
            workload: Some("synthetic-uniform".into()),
            workload_key: None,
            seed: Some(1),
            load: Some("closed c=64".into()),
            limit_requests: None,
            limit_duration_s: None,
            hardware: None,
            gpus: None,
            hostname: None,
            requests_total: Some(40),
            completed: Some(30),
            failed: Some(10),
            duration_s: Some(60.0),
            ttft_p50_ms: Some(1234.5),
            ttft_p99_ms: Some(56789.0),
            tpot_p50_ms: Some(12.34),
            tpot_p99_ms: None,
            itl_p99_ms: None,
            e2e_p50_ms: None,
            e2e_p99_ms: None,
            output_tokens_per_s: Some(1234.0),
            requests_per_s: None,
            success_rate: Some(0.75),
            slo: None,
            goodput_requests_per_s: None,
            exit_status: Some(1),
            verdict: None,
            answer: None,
            indexed_at: "2026-11-22T21:17:40.000Z".into(),
            labels: vec!["baseline".into(), "vllm-0.6.3".into()],
            notes: Vec::new(),
        }
    }

    /// Issue 23: `history` wrapped figures inside their cells (`11-22` over `21:16`, a TTFT
    /// split in two) and showed a model's whole cache path.
    #[test]
    fn figures_stay_on_one_line_and_model_paths_are_shortened() {
        let model = "/root/.cache/llama.cpp/unsloth_gemma-3-270m-it-GGUF_gemma-3-270m-it-Q8_0.gguf";
        let r = row(model);
        let text = table(std::slice::from_ref(&r));
        let first = text
            .lines()
            .find(|l| l.contains("#12"))
            .unwrap_or_else(|| panic!("no row #12 in\n{text}"));
        for figure in ["11-22 21:16", "c=64", "1234", "1234/56789", "12.3", "75%"] {
            assert!(first.contains(figure), "{figure:?} wrapped in\n{text}");
        }
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "{line}");
        }
        assert!(
            !text.contains("/root") && !text.contains(".cache"),
            "{text}"
        );
        // JSON keeps the full value.
        assert_eq!(serde_json::to_value(&r).unwrap()["model"], model);
    }

    /// Issue 36, item 9: test rows showed `?` and `–`, interrupted runs were not marked,
    /// and long names wrapped (28 runs took 338 lines). One line each, a test's answer in
    /// place of the figures, `!` for an interrupted run.
    #[test]
    fn one_line_per_run_a_test_shows_its_answer_and_interruptions_are_marked() {
        let mut test = row("gemma");
        test.kind = history::Kind::Test;
        test.name = "20261122-211639-throughput".into();
        test.answer = Some(
            "max sustainable: 0.228 req/s, 56 tok/s with no saturation signal (0.236 req/s failed)"
                .into(),
        );
        let mut stopped = row("a-model-with-a-very-long-name-indeed");
        stopped.interrupted = Some(true);
        stopped.name = "a-run-folder-with-a-very-long-name-that-once-wrapped".into();
        let text = table(&[test, stopped]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[1].contains("test throughput"), "{}", lines[1]);
        assert!(
            lines[1].contains("max sustainable: 0.228 req/s, 56 tok/s"),
            "{}",
            lines[1]
        );
        assert!(!lines[1].contains('?'), "{}", lines[1]);
        assert!(lines[2].starts_with("  #12 ! "), "{}", lines[2]);
        for l in &lines {
            assert!(l.chars().count() <= 100, "{} chars: {l}", l.chars().count());
        }
    }

    #[test]
    fn only_paths_are_shortened_to_their_file_name() {
        for (model, short) in [
            (
                "/root/.cache/llama.cpp/gemma-3-270m-it-Q8_0.gguf",
                "gemma-3-270m-it-Q8_0.gguf",
            ),
            ("./models/qwen.gguf", "qwen.gguf"),
            ("~/models/llama/", "llama"),
            ("C:\\models\\phi.gguf", "phi.gguf"),
            (
                "meta-llama/Llama-3.1-8B-Instruct",
                "meta-llama/Llama-3.1-8B-Instruct",
            ),
            ("gpt-4o", "gpt-4o"),
        ] {
            assert_eq!(short_model(model), short, "{model}");
        }
    }
}
