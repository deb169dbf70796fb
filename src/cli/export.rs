//! `servebench export DIR --format FORMAT [-o FILE]`: reads a run folder and writes it in
//! another tool's format (`crate::export`), to stdout or a file; Parquet's three files into
//! the folder `-o` names (`pipeline::parquet`).

use crate::export::{aiperf, csv, vllm};
use crate::flags::{ExportArgs, ExportFormatArg};
use crate::pipeline::exit;
use crate::store::runs::{read_report, read_wire_records};
use anyhow::{bail, Context, Result};
use std::path::Path;

pub fn export(args: ExportArgs) -> Result<u8> {
    if args.format != ExportFormatArg::CsvSummary && args.dirs.len() != 1 {
        use clap::ValueEnum;
        let name = args
            .format
            .to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default();
        bail!("--format {name} exports one run folder; csv-summary takes several");
    }
    let dir = &args.dirs[0];
    let text = match args.format {
        ExportFormatArg::Parquet => return parquet(dir, args.output.as_deref()),
        ExportFormatArg::Csv => csv::requests(&read_wire_records(dir)?),
        ExportFormatArg::CsvSummary => {
            let mut reports = Vec::new();
            for d in &args.dirs {
                reports.push((d.display().to_string(), read_report(d)?));
            }
            let refs: Vec<(String, &crate::artifacts::RunReport)> =
                reports.iter().map(|(p, r)| (p.clone(), r)).collect();
            csv::summaries(&refs)
        }
        ExportFormatArg::Vllm => {
            let v = vllm::result(&read_report(dir)?, &read_wire_records(dir)?);
            serde_json::to_string_pretty(&v)? + "\n"
        }
        ExportFormatArg::Aiperf => {
            let v = aiperf::summary(&read_report(dir)?, &read_wire_records(dir)?);
            serde_json::to_string_pretty(&v)? + "\n"
        }
        ExportFormatArg::AiperfJsonl => aiperf::records_jsonl(&read_wire_records(dir)?),
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{text}"),
    }
    Ok(exit::OK)
}

/// `--format parquet`: the three files into the folder `-o` names.
fn parquet(dir: &Path, out: Option<&Path>) -> Result<u8> {
    let Some(out) = out else {
        bail!(
            "--format parquet writes three files (requests.parquet, chunks.parquet, timeseries.parquet), not a stream: name a folder for them with -o (`-o {}` puts them beside the run's own files)",
            dir.display()
        );
    };
    let report = read_report(dir)?;
    let written = crate::pipeline::parquet::write_files(dir, &report, out)?;
    eprintln!("Wrote {}", written.describe());
    Ok(exit::OK)
}
