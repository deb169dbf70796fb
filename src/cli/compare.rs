//! `servebench compare` and `servebench regress`: arguments → groups of runs (`runs`) →
//! the pure comparison (`crate::compare`) → tables, JSON, the comparison page (`--md`,
//! `--html`), and for `regress` the exit status a CI pipeline gates on.

use super::runs::{load, resolve, Group, LazyHistory};
use crate::compare::metrics::Normalisation;
use crate::compare::{
    compare as build, page, regress, render, ComparisonReport, Options, SystemInput,
};
use crate::flags::{CompareArgs, RegressArgs};
use crate::pipeline::exit;
use crate::pipeline::pages::write_atomic;
use anyhow::{bail, Context, Result};
use std::path::Path;

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
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render::render(&report));
    }
    write_pages(&report, args.md.as_deref(), args.html.as_deref())?;
    Ok(exit::OK)
}

/// Writes the comparison page to the `--md` and `--html` files (stderr says where).
fn write_pages(report: &ComparisonReport, md: Option<&Path>, html: Option<&Path>) -> Result<()> {
    if md.is_none() && html.is_none() {
        return Ok(());
    }
    let command: Vec<String> = std::env::args().collect();
    let mut page = page::page(report, &command);
    // The Markdown's figure references name the HTML file written beside it.
    if let Some(name) = html.and_then(|h| h.file_name()) {
        page = page.html_file(&name.to_string_lossy());
    } else {
        page = page.html_file("the HTML page (compare --html)");
    }
    for (path, text) in [(md, page.to_markdown()), (html, page.to_html())] {
        if let Some(path) = path {
            write_atomic(path, &text).with_context(|| {
                format!(
                    "could not write the comparison page to {}: give a writable path",
                    path.display()
                )
            })?;
            eprintln!("Wrote {}", path.display());
        }
    }
    Ok(())
}

pub fn regress(args: RegressArgs) -> Result<u8> {
    let mut history = LazyHistory::new(args.store.store.as_deref());
    let baseline = load(&resolve(&args.baseline, &mut history)?)?;
    let mut candidate = Vec::new();
    for c in &args.candidates {
        candidate.extend(load(&resolve(c, &mut history)?)?);
    }
    let report = regress::gate(&baseline, &candidate, args.tolerance);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", regress::render(&report));
    }
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
