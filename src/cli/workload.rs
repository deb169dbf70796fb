//! `servebench workload show|export`: what a workload sends, without sending anything.

use crate::client::{BaseUrl, Endpoint, Target};
use crate::flags::{WorkloadArgs, WorkloadCommand};
use crate::pipeline::exit;
use crate::pipeline::resolve::workload_of;
use crate::stats::Distribution;
use crate::workload::datasets;
use crate::workload::{Generator, RequestSpec};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::Write;

fn generate(
    a: &WorkloadArgs,
) -> Result<(
    crate::workload::Scenario,
    Vec<RequestSpec>,
    Option<datasets::DatasetInfo>,
)> {
    let (dataset, info) = match &a.dataset {
        Some(p) => {
            let (d, i) = datasets::load(p, a.dataset_format)?;
            (Some(std::sync::Arc::new(d)), Some(i))
        }
        None => (None, None),
    };
    let mut scenario = workload_of(
        a.profile.as_deref(),
        a.workload.as_deref(),
        a.input_tokens,
        a.output_tokens,
        dataset.as_deref(),
    )?;
    // What `run` would send: a profile's items (and rerank's query) are drawn too.
    let endpoint = crate::pipeline::resolve::profile_endpoint(&scenario, Endpoint::Chat)?;
    crate::pipeline::resolve::items(&mut scenario, None, endpoint)?;
    crate::pipeline::resolve::media(&mut scenario, &a.media, dataset.as_deref(), None)?;
    let tok = match (&a.tokenizer[..], &a.url) {
        ("server", Some(url)) => {
            let target = Target {
                url: BaseUrl::parse(url)?,
                model: a.model.clone().unwrap_or_default(),
                endpoint: Endpoint::Chat,
                headers: Vec::new(),
                api_key: None,
                builtin_simulator: false,
                tls: Default::default(),
                proxy: None,
                websocket: None,
                grpc_backend: None,
                trace_id_prefix: None,
            };
            crate::client::server_tokenizer::load_for("server", &target)?
        }
        ("server", None) => {
            anyhow::bail!("--tokenizer server needs --url of the server whose /tokenize to use")
        }
        (name, _) => crate::tokenizer::load(name)?,
    };
    let mut g = Generator::new(&scenario, a.seed, tok.as_ref(), dataset)?;
    let mut out = Vec::with_capacity(a.requests as usize);
    while (out.len() as u64) < a.requests {
        out.extend(g.next_session(tok.as_ref())?);
    }
    out.truncate(a.requests as usize);
    Ok((scenario, out, info))
}

fn stats_line(name: &str, mut v: Vec<f64>) {
    if let Some(d) = Distribution::of(&mut v) {
        println!(
            "  {name:<14} mean {:>8.1}  P50 {:>7.0}  P95 {:>7.0}  P99 {:>7.0}  min {:>6.0}  max {:>7.0}",
            d.mean, d.p50, d.p95, d.p99, d.min, d.max
        );
    }
}

pub fn workload(cmd: WorkloadCommand) -> Result<u8> {
    match cmd {
        WorkloadCommand::Show(a) => show(&a)?,
        WorkloadCommand::Export(a) => export(&a)?,
        WorkloadCommand::Profiles => print!(
            "{}",
            crate::report::tables::to_terminal(&crate::report::profiles::table())
        ),
        WorkloadCommand::ImportOtel { traces, out } => import_otel(&traces, &out)?,
    }
    Ok(exit::OK)
}

/// `servebench workload import-otel`: OpenTelemetry GenAI spans → agent sessions (JSONL).
fn import_otel(traces: &std::path::Path, out: &std::path::Path) -> Result<()> {
    let text = std::fs::read_to_string(traces)
        .with_context(|| format!("cannot read {}", traces.display()))?;
    let (sessions, info) = crate::workload::agent::otel::import(&text)
        .with_context(|| format!("importing {}", traces.display()))?;
    let mut body = String::new();
    for s in &sessions {
        body.push_str(&serde_json::to_string(s)?);
        body.push('\n');
    }
    std::fs::write(out, body).with_context(|| format!("cannot write {}", out.display()))?;
    let steps: usize = sessions.iter().map(|s| s.steps.len()).sum();
    println!(
        "{} sessions ({steps} steps) from {} spans: {} model calls, {} tool runs{}",
        info.sessions,
        info.spans,
        info.model_calls,
        info.tool_runs,
        match info.model_calls_without_usage {
            0 => String::new(),
            n => format!("; {n} model calls without token usage left out"),
        }
    );
    println!(
        "wrote {}: replay with `servebench run --dataset {}`",
        out.display(),
        out.display()
    );
    Ok(())
}

/// `servebench workload show`: the scenario, the dataset used, and what the requests drawn
/// look like.
fn show(a: &WorkloadArgs) -> Result<()> {
    let (scenario, reqs, info) = generate(a)?;
    println!("{}", serde_json::to_string_pretty(&scenario)?);
    if let Some(i) = &info {
        println!(
            "dataset: {} ({}, {} records used, {} skipped{})",
            i.path,
            i.format,
            i.records,
            i.skipped,
            if i.truncated {
                ", file truncated: every complete record used"
            } else {
                ""
            }
        );
    }
    println!(
        "\n{} requests drawn with seed {} (tokenizer {}):",
        reqs.len(),
        a.seed,
        a.tokenizer
    );
    stats_line(
        "input tokens",
        reqs.iter().map(|r| r.input_tokens as f64).collect(),
    );
    stats_line(
        "output tokens",
        reqs.iter().map(|r| r.max_tokens as f64).collect(),
    );
    print_classes(&reqs);
    print_sharing(&reqs);
    if reqs.iter().any(|r| !r.media.is_empty()) {
        let per = |f: &dyn Fn(&crate::workload::media::MediaPart) -> f64| -> Vec<f64> {
            reqs.iter().map(|r| r.media.iter().map(f).sum()).collect()
        };
        stats_line("images", per(&|m| f64::from(u8::from(m.is_image()))));
        stats_line("audio clips", per(&|m| f64::from(u8::from(m.is_audio()))));
        stats_line("media KB", per(&|m| m.bytes as f64 / 1e3));
    }
    Ok(())
}

/// The requests' classes and their shares, when there are classes.
fn print_classes(reqs: &[RequestSpec]) {
    let mut classes: BTreeMap<String, usize> = BTreeMap::new();
    for r in reqs {
        *classes
            .entry(r.class.clone().unwrap_or_else(|| "-".into()))
            .or_default() += 1;
    }
    if classes.len() > 1 || !classes.contains_key("-") {
        for (c, n) in classes {
            println!(
                "  class {c:<8} {n} ({:.1} %)",
                n as f64 * 100.0 / reqs.len() as f64
            );
        }
    }
}

/// The shares of requests with the shared system prompt and with a prompt prefix (the
/// user message's first 120 characters) another request has too.
fn print_sharing(reqs: &[RequestSpec]) {
    let with_system = reqs
        .iter()
        .filter(|r| r.messages.first().is_some_and(|m| m.0 == "system"))
        .count();
    if with_system > 0 {
        println!(
            "  with the shared system prompt: {:.1} %",
            with_system as f64 * 100.0 / reqs.len() as f64
        );
    }
    let mut prefixes: BTreeMap<String, usize> = BTreeMap::new();
    for r in reqs {
        let user = r
            .messages
            .iter()
            .rev()
            .find(|m| m.0 == "user")
            .map(|m| m.1.as_str())
            .unwrap_or("");
        *prefixes
            .entry(user.chars().take(120).collect())
            .or_default() += 1;
    }
    let shared: usize = prefixes.values().filter(|&&n| n > 1).sum();
    if shared > 0 {
        println!(
            "  sharing a prompt prefix with another request: {:.1} %",
            shared as f64 * 100.0 / reqs.len() as f64
        );
    }
}

/// `servebench workload export`: the requests drawn, one JSON line each, on stdout.
fn export(a: &WorkloadArgs) -> Result<()> {
    let (scenario, reqs, _) = generate(a)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for r in reqs {
        let line = export_line(&scenario, r);
        serde_json::to_writer(&mut out, &line)?;
        out.write_all(b"\n")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(())
}

/// One request as `workload export` writes it.
fn export_line(scenario: &crate::workload::Scenario, r: RequestSpec) -> serde_json::Value {
    // Chat Completions messages: an agent request's tool calls and results woven in.
    let prompt = crate::client::apis::Prompt {
        messages: &r.messages,
        max_tokens: r.max_tokens,
        overrides: &[],
        agent: r.agent.as_deref(),
    };
    let messages = crate::client::apis::tools::chat_messages(&prompt);
    let mut tools = serde_json::Map::new();
    if let Some(agent) = r.agent.as_deref() {
        let chat = crate::client::apis::dialect::ToolForm::Chat;
        crate::client::apis::tools::insert_tools(chat, &mut tools, agent);
    }
    let mut line = serde_json::json!({
        "index": r.index,
        "input_tokens": r.input_tokens,
        "max_tokens": r.max_tokens,
        "messages": messages,
    });
    let body = scenario.body_for(r.class.as_deref());
    if !body.is_empty() {
        line["body"] = serde_json::Value::Object(body.into_iter().collect());
    }
    if let Some(c) = r.class {
        line["class"] = c.into();
    }
    if let Some(t) = r.arrival_ms {
        line["arrival_ms"] = t.into();
    }
    if let Some(session) = r.session {
        line["session"] = session.into();
        line["turn"] = r.turn.into();
        line["think_ms"] = r.think_ms.into();
    }
    if r.branch > 0 {
        line["branch"] = r.branch.into();
    }
    if r.tool_ms > 0.0 {
        line["tool_ms"] = r.tool_ms.into();
    }
    for (k, v) in tools {
        line[k] = v; // `tools` and `tool_choice`, in the Chat Completions form
    }
    if !r.media.is_empty() {
        // What each part is (format, size, fingerprint), not its megabytes of base64.
        line["media"] = serde_json::to_value(&r.media).unwrap_or_default();
    }
    line
}
