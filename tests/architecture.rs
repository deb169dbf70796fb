//! The house's shape, checked on the source itself (docs/architecture.md): every folder of
//! `src/` imports only folders below it in one order, so no import circle crosses folders,
//! no function runs over 80 lines and no source file over 600. Reads files only; no build
//! or timing involved.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folders (and top-level files) of `src/`, lowest first: each may import only those
/// before it. docs/architecture.md "Imports run one way" shows the same list.
const ORDER: &[&str] = &[
    "clock",
    "stats",
    "tokenizer",
    "workload",
    "record",
    "client",
    "metrics",
    "schedule",
    "telemetry",
    "config",
    "artifacts",
    "store",
    "scaleout",
    "runner",
    "sim",
    "procedure",
    "compare",
    "report",
    "export",
    "flags",
    "pipeline",
    "cli",
];

/// Longest function, lines from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 80;

/// Longest source file, lines.
const MAX_FILE_LINES: usize = 600;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The folder (or top-level file) a source file belongs to: `src/metrics/x.rs` → `metrics`.
fn room(path: &Path) -> String {
    let rel = path.strip_prefix(src()).expect("under src/");
    let first = rel.components().next().expect("a component");
    first
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_string()
}

/// The non-test code of a file: test files are skipped whole, and an inline
/// `#[cfg(test)] mod … {` cuts the rest of the file (test modules sit at the end).
fn non_test_code(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    let rel = path.to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") || rel.contains("/tests/") {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let mut cut = text.len();
    let mut from = 0;
    while let Some(i) = text[from..].find("#[cfg(test)]") {
        let at = from + i;
        let rest = text[at + "#[cfg(test)]".len()..].trim_start();
        if rest.starts_with("mod ") && rest.split('\n').next().is_some_and(|l| l.contains('{')) {
            cut = at;
            break;
        }
        from = at + 1;
    }
    Some(text[..cut].to_string())
}

/// The top-level modules a piece of code names through `crate::`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn every_folder_imports_only_folders_below_it() {
    let rank: BTreeMap<&str, usize> = ORDER.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut up: Vec<String> = Vec::new();
    let mut unplaced: Vec<String> = Vec::new();
    for f in &files {
        let from = room(f);
        if from == "lib" || from == "main" {
            continue;
        }
        let Some(&from_rank) = rank.get(from.as_str()) else {
            unplaced.push(from);
            continue;
        };
        let Some(code) = non_test_code(f) else {
            continue;
        };
        for to in crate_paths(&code) {
            if to == from {
                continue;
            }
            if let Some(&to_rank) = rank.get(to.as_str()) {
                if to_rank > from_rank {
                    up.push(format!("{} → {to}", f.display()));
                }
            }
        }
    }
    unplaced.sort();
    unplaced.dedup();
    assert!(
        unplaced.is_empty(),
        "folders missing from ORDER (place them, and in docs/architecture.md): {unplaced:?}"
    );
    up.sort();
    up.dedup();
    assert!(
        up.is_empty(),
        "imports that point up the order {ORDER:?} (move the type down to the stage that owns it):\n{}",
        up.join("\n")
    );
}

/// Lengths of the functions in `text` whose body is a block: from the `fn` line to the
/// line that closes it at the same indentation.
fn function_lengths(text: &str) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let mut words = trimmed.split_whitespace().skip_while(|w| {
            w.starts_with("pub") || ["const", "async", "unsafe", "extern"].contains(w)
        });
        if words.next() != Some("fn") {
            continue;
        }
        let name: String = words
            .next()
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The signature ends at the first line holding `{` (a body) or ending in `;` (none).
        let Some(open) = (i..lines.len())
            .find(|&j| lines[j].contains('{') || lines[j].trim_end().ends_with(';'))
        else {
            continue;
        };
        if !lines[open].contains('{') {
            continue;
        }
        let one_line = lines[open].matches('{').count() == lines[open].matches('}').count();
        let end = if one_line {
            open
        } else {
            let close = format!("{indent}}}");
            match (open + 1..lines.len()).find(|&k| lines[k] == close) {
                Some(k) => k,
                None => continue,
            }
        };
        out.push((end - i + 1, i + 1, name));
    }
    out
}

#[test]
fn no_function_runs_over_80_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long: Vec<String> = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("a source file");
        for (n, line, name) in function_lengths(&text) {
            if n > MAX_FUNCTION_LINES {
                long.push(format!("{}:{line} {name}: {n} lines", f.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them into named steps):\n{}",
        long.join("\n")
    );
}

#[test]
fn no_source_file_runs_over_600_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).ok()?.lines().count();
            (n > MAX_FILE_LINES).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines (a file per idea: split them):\n{}",
        long.join("\n")
    );
}

/// The `pub use` statements of a piece of code that re-export another folder's items
/// (`pub use crate::X::…` with `X` not `room`), each as written.
fn foreign_re_exports(code: &str, room: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("pub use ") {
        let stmt = &rest[i..];
        let end = stmt.find(';').map_or(stmt.len(), |e| e + 1);
        let stmt = &stmt[..end];
        if crate_paths(stmt).iter().any(|to| to != room) {
            out.push(stmt.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        rest = &rest[i + end.max(1)..];
    }
    out
}

#[test]
fn no_folder_re_exports_another_folders_items() {
    // A path says where the code lives: users import from the owning folder, and a folder's
    // `pub use` re-exports only its own children (its front door), never another folder's
    // items under its name.
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut found: Vec<String> = Vec::new();
    for f in &files {
        let from = room(f);
        let Some(code) = non_test_code(f) else {
            continue;
        };
        for stmt in foreign_re_exports(&code, &from) {
            found.push(format!("{}: {stmt}", f.display()));
        }
    }
    found.sort();
    assert!(
        found.is_empty(),
        "re-exports of other folders' items (import them from their owner instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_readers_find_what_they_look_for() {
    // The checks above are only as good as their parsing: a hand-made file.
    let code = "use crate::{stats, metrics::X};\nfn f() { crate::clock::now(); }\n#[cfg(test)]\nmod tests {\n    use crate::cli;\n}\n";
    let dir = std::env::temp_dir().join(format!("sb-arch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.rs");
    std::fs::write(&path, code).unwrap();
    let kept = non_test_code(&path).unwrap();
    assert_eq!(crate_paths(&kept), vec!["stats", "metrics", "clock"]);
    let facade = "pub use self::a::B;\npub use crate::metrics::{x, Y};\npub use crate::stats::D;\n";
    assert_eq!(
        foreign_re_exports(facade, "metrics"),
        vec!["pub use crate::stats::D;"]
    );
    std::fs::remove_dir_all(&dir).ok();
    let lengths = function_lengths("fn a() {\n    x();\n}\npub(crate) async fn b() { y() }\n");
    assert_eq!(
        lengths,
        vec![(3, 1, "a".to_string()), (1, 4, "b".to_string())]
    );
}

/// docs/architecture.md is drawn from the tree: its "Folders" picture names every folder
/// and top-level file of `src/` and nothing that is gone, and its "Imports run one way"
/// list is [`ORDER`].
#[test]
fn the_architecture_doc_draws_the_tree_and_the_order() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/architecture.md is readable");
    // Names at the picture's top level: `├── name/ …`, `└── name.rs …`, `├── a.rs, b.rs`.
    let mut drawn: Vec<String> = Vec::new();
    for line in doc.lines() {
        let Some(rest) = line
            .strip_prefix("├── ")
            .or_else(|| line.strip_prefix("└── "))
        else {
            continue;
        };
        let names = rest.split("  ").next().unwrap_or("");
        for name in names.split(',') {
            let name = name.trim().trim_end_matches('/').trim_end_matches(".rs");
            if !name.is_empty() {
                drawn.push(name.to_string());
            }
        }
    }
    drawn.sort();
    let mut present: Vec<String> = std::fs::read_dir(src())
        .expect("src/ is readable")
        .map(|e| {
            let name = e
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .to_string();
            name.trim_end_matches(".rs").to_string()
        })
        .collect();
    present.sort();
    assert_eq!(
        drawn, present,
        "docs/architecture.md's Folders picture should name exactly the folders and files of src/"
    );
    // The order block: the names between arrows, in order.
    let start = doc
        .find("## Imports run one way")
        .expect("the doc has the order");
    let block = &doc[start..];
    let open = block.find("```\n").expect("a code block") + 4;
    let close = open + block[open..].find("```").expect("its end");
    let listed: Vec<&str> = block[open..close]
        .split(['→', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(
        listed, ORDER,
        "docs/architecture.md's import order should be ORDER"
    );
}
