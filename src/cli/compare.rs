//! `servebench compare` and `servebench regress`: arguments → groups of runs (`runs`) →
//! the pure comparison (`crate::compare`) → its view (`report::views`) printed as tables or
//! JSON, its page written to `--md` and `--html` (`pipeline::pages`), and for `regress`
//! the exit status a CI pipeline gates on.

use super::runs::{load, resolve, Group, LazyHistory};
use crate::compare::metrics::Normalisation;
use crate::compare::{compare as build, regress, Options, SystemInput};
use crate::flags::{CompareArgs, RegressArgs};
use crate::pipeline::exit;
use crate::pipeline::pages::write;
use crate::report::output::{render, Files, Output, PAGES};
use crate::report::views::{ComparisonView, RegressView};
use anyhow::{bail, Context, Result};

/// The value for system `i` of a per-system list given once for all or once per system.
fn per_system(values: &[f64], i: usize, systems: usize, flag: &str) -> Result<Option<f64>> {
    match values.len() {
        0 => Ok(None),
        1 => Ok(Some(values[0])),
        n if n == systems => Ok(Some(values[i])),
        n => bail!("{flag} has {n} values for {systems} systems: give one for all, or one per system in order"),
    }
}

pub fn compare(args: CompareArgs) -> Result<u8> {
    let mut history = LazyHistory::new(args.store.store.as_deref());
    let mut groups: Vec<Group> = Vec::new();
    for a in &args.systems {
        groups.push(resolve(a, &mut history)?);
    }
    for l in &args.labels {
        groups.push(resolve(&format!("label:{l}"), &mut history)?);
    }
    if groups.len() < 2 {
        bail!("compare needs at least two systems (runs, folders of runs, or labels), the baseline first; got {}", groups.len());
    }
    for v in args.gpus.iter().chain(&args.cost_per_hour) {
        if !(v.is_finite() && *v > 0.0) {
            bail!("--gpus and --cost-per-hour take positive numbers");
        }
    }
    let n = groups.len();
    let mut systems = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        systems.push(SystemInput {
            name: g.name.clone(),
            runs: load(g)?,
            norm: Normalisation {
                gpus: per_system(&args.gpus, i, n, "--gpus")?,
                cost_per_hour: per_system(&args.cost_per_hour, i, n, "--cost-per-hour")?,
            },
        });
    }
    let report = build(
        &systems,
        &Options {
            tolerance: args.tolerance,
            ..Options::default()
        },
    );
    let command: Vec<String> = std::env::args().collect();
    // The Markdown's figure references name the HTML file written beside it.
    let html_file = match args.html.as_deref().and_then(|h| h.file_name()) {
        Some(name) => name.to_string_lossy().into_owned(),
        None => "the HTML page (compare --html)".to_owned(),
    };
    let view = ComparisonView {
        report: &report,
        command: &command,
        html_file: &html_file,
    };
    let shown = if args.json {
        Output::Json
    } else {
        Output::Terminal
    };
    print!("{}", render(&view, shown).unwrap_or_default());
    let files = Files {
        json: None,
        markdown: args.md.clone(),
        html: args.html.clone(),
    };
    // Each page is written to the `--md` and `--html` files (stderr says where).
    for (path, written) in write(&view, &PAGES, &files) {
        written.with_context(|| {
            format!(
                "could not write the comparison page to {}: give a writable path",
                path.display()
            )
        })?;
        eprintln!("Wrote {}", path.display());
    }
    Ok(exit::OK)
}

pub fn regress(args: RegressArgs) -> Result<u8> {
    let mut history = LazyHistory::new(args.store.store.as_deref());
    let baseline = load(&resolve(&args.baseline, &mut history)?)?;
    let mut candidate = Vec::new();
    for c in &args.candidates {
        candidate.extend(load(&resolve(c, &mut history)?)?);
    }
    let report = regress::gate(&baseline, &candidate, args.tolerance);
    let shown = if args.json {
        Output::Json
    } else {
        Output::Terminal
    };
    let view = RegressView { report: &report };
    print!("{}", render(&view, shown).unwrap_or_default());
    Ok(if !report.decided && report.likely_regression {
        exit::LIKELY_REGRESSION
    } else if !report.decided {
        exit::USAGE
    } else if report.regressed {
        exit::FAILED
    } else {
        exit::OK
    })
}
