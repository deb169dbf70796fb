//! `servebench history`, `label`, `note` and `reindex`, and the indexing of a run when it
//! ends. The run folders are the truth; the database (`store::history`) only lists them,
//! so a failure to index warns and never costs a run.

use crate::flags::{HistoryArgs, LabelArgs, NoteArgs, ReindexArgs};
use crate::pipeline::exit;
use crate::store::history::{self, store_path, Filter, History, RunRef, RunRow};
use anyhow::{Context, Result};
use comfy_table::presets::NOTHING;
use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table};
use std::path::Path;

/// Indexes a finished run (or test) folder with its labels; prints a warning instead of
/// failing, since the folder holds everything and `servebench reindex` can add it later.
/// Returns the row id when indexed.
pub fn record_run(store: Option<&Path>, dir: &Path, labels: &[String], quiet: bool) -> Option<i64> {
    let path = store_path(store);
    match history::record_folder(&path, dir, labels) {
        Ok(indexed) => {
            if !quiet {
                eprintln!(
                    "History: #{} in {} (`servebench history` lists runs)",
                    indexed.id,
                    path.display()
                );
            }
            Some(indexed.id)
        }
        Err(e) => {
            eprintln!(
                "WARNING: the run was not indexed in the history ({e}). Its folder {} is complete; `servebench reindex {}` adds it later.",
                dir.display(),
                dir.parent().unwrap_or(dir).display()
            );
            None
        }
    }
}

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

/// Columns of the listing that hold figures (id, start, load, tok/s, TTFT, TPOT, ok): each
/// keeps its content's width, so a figure never wraps inside its cell; the text columns
/// (run, model, workload, labels) share what is left and wrap instead.
const FIGURE_COLUMNS: [usize; 7] = [0, 1, 5, 6, 7, 8, 9];

/// The listing: one line per run with its key figures.
pub fn table(rows: &[RunRow]) -> String {
    let mut t = Table::new();
    // No borders: the most room for the text columns within 100 characters.
    t.load_style(NOTHING);
    t.set_content_arrangement(ContentArrangement::Dynamic);
    t.set_width(crate::report::terminal::WIDTH as u16);
    t.set_header(
        [
            "id", "started", "run", "model", "workload", "load", "tok/s", "TTFT", "TPOT", "ok",
            "labels",
        ]
        .map(Cell::new),
    );
    for r in rows {
        // 2026-11-22T21:16:39.462Z → 11-22 21:16
        let started = r
            .started_at
            .as_deref()
            .and_then(|s| Some(format!("{} {}", s.get(5..10)?, s.get(11..16)?)))
            .unwrap_or_default();
        let name = match (&r.test_name, r.kind) {
            (Some(t), history::Kind::Test) => format!("{} (test {t})", r.name),
            (Some(t), _) => format!("{} (in {t})", r.name),
            _ => r.name.clone(),
        };
        t.add_row(vec![
            format!("#{}", r.id),
            started,
            name,
            r.model.as_deref().map(short_model).unwrap_or_default(),
            r.workload.clone().unwrap_or_default(),
            short_load(r.load.as_deref()),
            f(r.output_tokens_per_s, 0),
            format!("{}/{}", f(r.ttft_p50_ms, 1), f(r.ttft_p99_ms, 1)),
            f(r.tpot_p50_ms, 2),
            r.success_rate
                .map(|s| format!("{:.0}%", s * 100.0))
                .unwrap_or_else(|| "–".into()),
            r.labels.join(" "),
        ]);
    }
    for i in [6, 7, 8, 9] {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    for i in FIGURE_COLUMNS {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
    format!(
        "{t}\nstarted: UTC; tok/s: output tokens per second; TTFT: P50/P99 ms; TPOT: P50 ms;\nok: requests that succeeded\n"
    )
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
        for figure in [
            "11-22 21:16",
            "c=64",
            "1234",
            "1234.5/56789.0",
            "12.34",
            "75%",
        ] {
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
