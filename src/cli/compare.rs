//! `servebench compare` and `servebench regress`: arguments → groups of runs (`runs`) →
//! the pure comparison (`crate::compare`) → tables, JSON, and for `regress` the exit
//! status a CI pipeline gates on.

use super::args::{CompareArgs, RegressArgs};
use super::exit;
use super::runs::{load, resolve, Group, LazyHistory};
use crate::compare::metrics::Normalisation;
use crate::compare::{compare as build, regress, render, Options, SystemInput};
use anyhow::{bail, Result};

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
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", regress::render(&report));
    }
    Ok(if !report.decided {
        exit::USAGE
    } else if report.regressed {
        exit::FAILED
    } else {
        exit::OK
    })
}
