//! `servebench suite --profiles CHAT,SUMM,…`: the suite once per workload profile, as the
//! workload-profiles draft asks (the methodology's tests run against each profile).
//!
//! Each profile gets a folder of its own holding a whole suite (its workload, its endpoint,
//! its SLO default unless `--slo`); the top folder gets `profiles.json` and a page with
//! every profile's answers side by side. A profile whose suite cannot start (an embeddings
//! profile against a server without embeddings) is recorded with why, and the others run.

use super::{suite_once, SuiteArgs};
use crate::pipeline::pages::write_all;
use crate::procedure::suite::{ProfileSuite, ProfilesDocument, SuiteDocument};
use crate::report::output::{Output, Render};
use crate::report::views::ProfilesView;
use crate::store::prepare_run_dir;
use crate::workload::profile::{preset, PRESET_IDS};
use anyhow::{bail, Result};
use std::path::Path;

/// The profile ids `--profiles` names (`all`: every preset), checked and upper-cased.
fn wanted(names: &[String]) -> Result<Vec<String>> {
    if names.iter().any(|n| n.eq_ignore_ascii_case("all")) {
        return Ok(PRESET_IDS.iter().map(|s| s.to_string()).collect());
    }
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if preset(n).is_none() {
            bail!(
                "--profiles: unknown profile `{n}`; use all or some of {}",
                PRESET_IDS.join(", ")
            );
        }
        let id = n.to_ascii_uppercase();
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// Runs the suite per profile; the worst exit status of them all.
pub(super) fn suite_per_profile(args: SuiteArgs) -> Result<u8> {
    let ids = wanted(&args.profiles)?;
    let top = prepare_run_dir(args.run.output.out.as_deref(), args.run.output.force)?;
    let mut worst = crate::pipeline::exit::OK;
    let mut entries = Vec::new();
    for id in &ids {
        if super::INTERRUPTED.load(std::sync::atomic::Ordering::Acquire) {
            entries.push(ProfileSuite::Skipped {
                profile: id.clone(),
                skipped: "interrupted".into(),
            });
            continue;
        }
        let folder = id.to_ascii_lowercase();
        if !args.run.output.quiet {
            eprintln!(
                "\n=== Profile {id}: the suite in {}",
                top.join(&folder).display()
            );
        }
        let mut run = args.run.clone();
        run.workload.profile = Some(id.clone());
        run.output.out = Some(top.join(&folder));
        // A profile's folder of an earlier suite is replaced as the top folder was.
        run.output.force = args.run.output.force;
        let one = SuiteArgs {
            skip: args.skip.clone(),
            profiles: Vec::new(),
            procedure: args.procedure.clone(),
            run,
        };
        let done = match suite_once(one) {
            Ok((code, summary)) => {
                worst = worst.max(code);
                entry(id, &folder, code, summary)
            }
            Err(e) => {
                // A configuration this profile cannot run (as `suite` alone would exit 2).
                eprintln!("error: profile {id}: {e:#}");
                worst = worst.max(crate::pipeline::exit::USAGE);
                ProfileSuite::Failed {
                    profile: id.clone(),
                    folder,
                    exit_status: crate::pipeline::exit::USAGE,
                    error: format!("{e:#}"),
                }
            }
        };
        entries.push(done);
    }
    write(&top, entries)?;
    Ok(worst)
}

/// A profile's entry in `profiles.json`: its suite's tests, or why it did not start.
fn entry(id: &str, folder: &str, code: u8, summary: Option<SuiteDocument>) -> ProfileSuite {
    match summary {
        Some(s) => ProfileSuite::Ran {
            profile: id.into(),
            folder: folder.into(),
            exit_status: code,
            tests: s.tests,
        },
        None => ProfileSuite::Failed {
            profile: id.into(),
            folder: folder.into(),
            exit_status: code,
            error: "the suite did not start: the server could not be used for this profile (not ready, or its test request failed: the messages are above)".into(),
        },
    }
}

/// `profiles.json`, `report.md` and `report.html` of the top folder, and the table on the
/// terminal.
fn write(top: &Path, entries: Vec<ProfileSuite>) -> Result<()> {
    let doc = ProfilesDocument {
        schema_version: crate::procedure::report::TEST_SCHEMA_VERSION,
        profiles: entries,
        command_line: crate::pipeline::resolve::redacted_command_line(),
    };
    let view = ProfilesView { doc: &doc };
    let files = view.files(top);
    write_all(
        &view,
        &[Output::Json, Output::Markdown, Output::Html],
        &files,
    )?;
    print!("{}", view.terminal());
    println!(
        "Profiles folder: {} (profiles.json, report.md, report.html; a suite folder per profile)",
        top.display()
    );
    Ok(())
}
