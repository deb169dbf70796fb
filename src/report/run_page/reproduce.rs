//! What someone needs to run the same benchmark again (draft Appendix C.2, item 6): the
//! exact command line, the seed, a hash of the workload, the tool's version, the files.
//!
//! The workload hash identifies the request sequence a run sent: two runs with the same
//! hash (and the same servebench version) sent prompts of the same lengths in the same
//! order, with the same words when their prompt salts (`config.prompt_salt`) are equal too. It covers the resolved workload specification, the seed, the dataset's
//! description (path, format, records; not its bytes), the tokenizer that sized the
//! prompts, the API and the request options. It is computed from `run.json`, so old runs get
//! it too.

use crate::artifacts::RunReport;

/// `sha256:` and the first 16 hex digits of the SHA-256 of the workload's identity.
pub fn workload_hash(r: &RunReport) -> String {
    let c = &r.config;
    let identity = serde_json::json!({
        "workload": c.workload,
        "seed": c.seed,
        "dataset": c.dataset_info,
        "tokenizer": r.tokenizer.name,
        "endpoint": c.target.endpoint,
        "request": c.request,
    });
    let text = serde_json::to_string(&identity).unwrap_or_default();
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let hex: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// One argument quoted for a POSIX shell, only when it needs it.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// The command line as a shell would take it back (credentials were redacted when the run
/// recorded it).
pub fn command_line(args: &[String]) -> String {
    args.iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Options of `run` that `servebench workload export` takes too: what decides the prompts.
const WORKLOAD_FLAGS: [&str; 8] = [
    "--workload",
    "--dataset",
    "--dataset-format",
    "--input-tokens",
    "--output-tokens",
    "--tokenizer",
    "--model",
    "--requests",
];

/// `servebench workload export` with the run's workload options and seed: it prints the
/// requests the workload draws with that seed, without sending anything.
pub fn export_command(r: &RunReport) -> String {
    let mut out = vec!["servebench".to_string(), "workload".into(), "export".into()];
    let args = &r.command_line;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        if WORKLOAD_FLAGS.contains(&flag) {
            let value = match inline {
                Some(v) => Some(v),
                None => {
                    i += 1;
                    args.get(i).cloned()
                }
            };
            if let Some(v) = value {
                if flag == "--workload" {
                    out.push(v);
                } else {
                    out.push(flag.to_string());
                    out.push(v);
                }
            }
        }
        i += 1;
    }
    if out
        .windows(2)
        .any(|w| w[0] == "--tokenizer" && w[1] == "server")
    {
        out.push("--url".into());
        out.push(r.config.target.url.to_string());
    }
    out.push("--seed".into());
    out.push(r.config.seed.to_string());
    command_line(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_command_keeps_the_workload_options() {
        let mut r = crate::report::run_page::tests::report_of(&["--seed", "7"], &[]);
        r.command_line = [
            "servebench",
            "run",
            "--url",
            "http://h/v1",
            "--input-tokens=512",
            "--output-tokens",
            "64",
            "--rate",
            "3",
            "--requests",
            "100",
            "--tokenizer",
            "cl100k_base",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            export_command(&r),
            "servebench workload export --input-tokens 512 --output-tokens 64 --requests 100 --tokenizer cl100k_base --seed 7"
        );
        r.command_line = ["servebench", "run", "--workload", "my scenario.toml"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            export_command(&r),
            "servebench workload export 'my scenario.toml' --seed 7"
        );
    }

    #[test]
    fn arguments_are_quoted_only_when_needed() {
        let args: Vec<String> = [
            "servebench",
            "run",
            "--slo",
            "p99(ttft_ms)<=500",
            "--note",
            "it's on",
            "--url",
            "http://h:8000/v1",
            "",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            command_line(&args),
            "servebench run --slo 'p99(ttft_ms)<=500' --note 'it'\\''s on' --url http://h:8000/v1 ''"
        );
    }
}
