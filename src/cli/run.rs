//! `servebench run`: flags → a ready target (`pipeline::target`) → the pipeline's run
//! (`pipeline::execute`) → the summary printed → the exit status.

use crate::flags::RunArgs;
use crate::pipeline::execute::{execute, Execute};
use crate::pipeline::target::{ready, Ready};
use crate::record::run::ServerInfo;
use crate::report::output::Render;
use crate::report::views::RunView;
use crate::store::RunFolder;
use anyhow::{Context, Result};

/// The default load and warm-up cap sized to the server once it has said what it is and
/// answered its test request ([`size_to_server`], [`proportionate_warmup_max`]), each
/// change said on stderr.
fn size_to_the_server(args: &RunArgs, config: &mut crate::config::RunConfig, server: &ServerInfo) {
    let given = args.load.concurrency.is_some() || args.target.url.is_none();
    let line = crate::pipeline::resolve::size_to_server(
        &mut config.load,
        given,
        server.slots,
        config.preflight.as_ref(),
    );
    if args.limits.warmup_max.is_none() {
        if let Some(cap) = crate::runner::plan::proportionate_warmup_max(config) {
            config.warmup_max = cap;
            config.warmup_sizing = crate::config::WarmupSizing::RunLength;
        }
    }
    if let (Some(line), false) = (line, args.output.quiet) {
        eprintln!("{line}");
    }
}

/// Runs the whole pipeline; returns the exit status.
pub fn run(args: RunArgs) -> Result<u8> {
    let detail = args.output.detail;
    for label in &args.output.labels {
        crate::store::history::check_label(label).context("--label")?;
    }
    let Ready {
        sim,
        mut resolved,
        server,
        tokenizer: tok,
        warnings,
    } = ready(&args)?;
    // A run's own defaults (a test sizes its levels itself).
    size_to_the_server(&args, &mut resolved.config, &server);
    let (report, _records) = execute(Execute {
        config: resolved.config,
        system: resolved.system,
        baseline: resolved.baseline,
        server: &server,
        tokenizer: tok,
        warnings,
        announce: true,
    })?;
    let view = RunView {
        report: &report,
        records: &[],
        detail,
    };
    print!("{}", view.terminal());
    let dir = &report.config.out_dir;
    println!("\nRun folder: {}", dir.display());
    let tables = if detail {
        ""
    } else {
        " · every table: --detail"
    };
    if RunFolder::new(dir).report_html().exists() {
        println!("  report.html (charts) · report.md · run.json · requests.jsonl{tables}");
    } else {
        println!("  run.json · requests.jsonl{tables}");
    }
    if RunFolder::new(dir).requests_parquet().exists() {
        println!("  requests.parquet · chunks.parquet · timeseries.parquet (docs/parquet.md)");
    }
    drop(sim);
    if !args.output.no_store {
        crate::pipeline::index::record_run(
            args.output.store.as_deref(),
            dir,
            &args.output.labels,
            args.output.quiet,
        );
    }
    Ok(report.verdict.exit_status)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rate_accepts_a_negative_number_so_the_check_can_name_it() {
        use clap::Parser;
        let cli = crate::flags::Cli::try_parse_from(["servebench", "run", "--rate", "-1"])
            .expect("-1 is read as the value of --rate, not as a flag");
        let crate::flags::Command::Run(args) = cli.command else {
            unreachable!()
        };
        assert_eq!(args.run.load.rate, Some(-1.0));
    }
}
