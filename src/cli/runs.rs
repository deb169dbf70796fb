//! What a run argument of `compare` and `regress` names: a group of run folders, found on
//! disk or in the history, read into reports.
//!
//! An argument is, in this order: a folder (a run, a test's level runs, or a folder of
//! runs: see `store::runs`), `label:NAME` (every run with that label), `#ID` (a history
//! row: a run, or a test's levels), the start of an indexed run folder's name, or a bare
//! label name. The history is opened only when an argument needs it.

use crate::compare::RunInput;
use crate::store::history::{store_path, Filter, History, Kind, RunRef};
use crate::store::runs::{classify, read_report, Folder};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// A named set of run folders: one system of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    pub dirs: Vec<PathBuf>,
}

/// The history, opened on first use.
pub struct LazyHistory {
    store: PathBuf,
    db: Option<History>,
}

impl LazyHistory {
    pub fn new(store: Option<&Path>) -> Self {
        Self {
            store: store_path(store),
            db: None,
        }
    }

    fn get(&mut self) -> Result<&mut History> {
        if self.db.is_none() {
            self.db = Some(History::open(&self.store)?);
        }
        Ok(self.db.as_mut().expect("just opened"))
    }

    /// The run folders of a history row: itself, or a test's levels.
    fn row_runs(&mut self, id: i64, kind: Kind, path: PathBuf) -> Result<Vec<PathBuf>> {
        if kind == Kind::Run {
            return Ok(vec![path]);
        }
        // A test still in its folder stands for its answer's levels, as when named by path.
        if let Ok(folder @ Folder::Test { .. }) = classify(&path) {
            return Ok(folder.runs());
        }
        let levels = self.get()?.list(&Filter {
            parent_test: Some(id),
            kind: Some(Kind::Run),
            ..Filter::default()
        })?;
        Ok(levels.into_iter().rev().map(|r| r.path).collect())
    }

    /// Every run folder carrying `label` (tests give their levels), oldest first.
    pub fn label(&mut self, label: &str) -> Result<Vec<PathBuf>> {
        let rows = self.get()?.runs_with_label(label)?;
        let mut dirs = Vec::new();
        for row in rows.into_iter().rev() {
            for d in self.row_runs(row.id, row.kind, row.path)? {
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
        Ok(dirs)
    }
}

/// The group an argument names.
pub fn resolve(arg: &str, history: &mut LazyHistory) -> Result<Group> {
    let path = Path::new(arg);
    if path.exists() {
        let folder = classify(path)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| arg.to_owned());
        let name = match &folder {
            Folder::Test { answer: true, .. } => format!("{name} (test answer)"),
            Folder::Test { .. } => format!("{name} (test, every level)"),
            _ => name,
        };
        return Ok(Group {
            name,
            dirs: folder.runs(),
        });
    }
    if let Some(label) = arg.strip_prefix("label:") {
        let dirs = history.label(label)?;
        if dirs.is_empty() {
            bail!(
                "no run carries the label `{label}` in {}: `servebench label RUN {label}` adds it, `servebench history` lists runs",
                history.store.display()
            );
        }
        return Ok(Group {
            name: label.to_owned(),
            dirs,
        });
    }
    if arg.contains('/') {
        bail!("{arg} does not exist");
    }
    let reference = RunRef::parse(arg);
    // A bare word is a label when some run carries it (labels are what people name runs
    // by), else the start of a run folder's name.
    if !matches!(reference, RunRef::Id(_)) {
        let dirs = history.label(arg)?;
        if !dirs.is_empty() {
            return Ok(Group {
                name: arg.to_owned(),
                dirs,
            });
        }
    }
    let row = history.get()?.get(&reference).map_err(|e| match e {
        crate::store::history::HistoryError::NotFound { .. } => anyhow::anyhow!(
            "`{arg}` is neither a folder, nor a label, nor an indexed run in {} (`servebench history` lists them)",
            history.store.display()
        ),
        other => other.into(),
    })?;
    let name = match reference {
        RunRef::Id(_) => format!("#{} {}", row.id, row.name),
        _ => row.name.clone(),
    };
    let dirs = history.row_runs(row.id, row.kind, row.path)?;
    Ok(Group { name, dirs })
}

/// Reads every run of a group.
pub fn load(group: &Group) -> Result<Vec<RunInput>> {
    group
        .dirs
        .iter()
        .map(|d| {
            Ok(RunInput {
                path: d.display().to_string(),
                report: read_report(d)
                    .with_context(|| format!("reading a run of `{}`", group.name))?,
            })
        })
        .collect()
}
