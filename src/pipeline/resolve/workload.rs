//! The workload group of flags: the dataset, the workload (a name, a scenario file, fixed
//! lengths or the dataset's own), and the request body every request carries. `workload
//! show|export` resolves its workload here too.

use crate::client::RequestOptions;
use crate::flags::{BodyArgs, WorkloadFlags};
use crate::workload::datasets::{Dataset, DatasetInfo};
use crate::workload::WorkloadSpec;
use anyhow::{bail, Context, Result};
use std::sync::Arc;

/// The `--dataset` file, loaded, and what was read of it.
pub(crate) fn dataset(w: &WorkloadFlags) -> Result<(Option<Arc<Dataset>>, Option<DatasetInfo>)> {
    Ok(match &w.dataset {
        Some(path) => {
            let (d, info) = crate::workload::datasets::load(path, w.dataset_format)?;
            if info.truncated {
                eprintln!(
                    "note: {} ends mid-record (truncated file): using its {} complete records",
                    path.display(),
                    info.records
                );
            }
            (Some(Arc::new(d)), Some(info))
        }
        None => (None, None),
    })
}

/// The workload of a profile (`--profile`), named by `--workload` (a name or a .toml
/// file), of fixed lengths, or a dataset's.
pub fn workload_of(
    profile: Option<&str>,
    workload: Option<&str>,
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
    dataset: Option<&crate::workload::datasets::Dataset>,
) -> Result<WorkloadSpec> {
    use crate::workload::{Content, Scenario};
    if output_tokens == Some(0) || input_tokens == Some(0) {
        bail!("--input-tokens and --output-tokens must be at least 1");
    }
    let mut w = match (workload, input_tokens, output_tokens) {
        _ if profile.is_some() => profile_scenario(profile.unwrap_or_default())?,
        (Some(name), _, _) if name.ends_with(".toml") => {
            let text = std::fs::read_to_string(name)
                .with_context(|| format!("reading the scenario file {name}"))?;
            Scenario::from_toml(&text, name)?
        }
        (Some(name), _, _) => Scenario::named(name)?,
        (None, None, None) if dataset.is_some() => Scenario {
            name: "dataset".into(),
            description: "prompts (and output lengths, where recorded) from --dataset".into(),
            content: Content::Dataset,
            ..Scenario::fixed(1, 256)
        },
        (None, None, None) => Scenario::named("synthetic-uniform")?,
        (None, i, o) => Scenario::fixed(i.unwrap_or(256), o.unwrap_or(128)),
    };
    if dataset.is_some() && w.content != Content::Dataset {
        w.content = Content::Dataset;
    }
    Ok(w)
}

/// The preset profile `id`, or an error that lists them.
fn profile_scenario(id: &str) -> Result<WorkloadSpec> {
    use crate::workload::profile::{preset, PRESET_IDS};
    preset(id).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown profile `{id}`: use one of {} (`servebench workload profiles` describes them), or a scenario file with a [profile] table",
            PRESET_IDS.join(", ")
        )
    })
}

/// The endpoint a profile asks for: a non-generative profile (EMBED, XRANK) turns the
/// default `--endpoint chat` into embeddings or rerank; any other mismatch is refused.
pub(crate) fn profile_endpoint(
    w: &WorkloadSpec,
    endpoint: crate::client::Endpoint,
) -> Result<crate::client::Endpoint> {
    use crate::client::Endpoint;
    use crate::workload::profile::{OutputStructure, ProfileApi};
    let Some(p) = &w.profile else {
        return Ok(endpoint);
    };
    let wanted = match p.output_structure.api() {
        // LOGPR's body fields are the chat API's (`logprobs: true`).
        ProfileApi::Generate if p.output_structure == OutputStructure::Logprobs && endpoint != Endpoint::Chat => bail!(
            "profile {} asks for logprobs in the chat API's shape: use --endpoint chat",
            p.id
        ),
        ProfileApi::Generate if endpoint.is_generative() => return Ok(endpoint),
        ProfileApi::Generate => bail!(
            "profile {} generates text: --endpoint {} does not (use chat, completions, or another generative API)",
            p.id,
            flag(endpoint)
        ),
        ProfileApi::Embed => Endpoint::Embeddings,
        ProfileApi::Rerank => Endpoint::Rerank,
    };
    match endpoint {
        e if e == wanted => Ok(e),
        Endpoint::Chat => Ok(wanted),
        other => bail!(
            "profile {} is served by --endpoint {}, not {}",
            p.id,
            flag(wanted),
            flag(other)
        ),
    }
}

/// An endpoint as `--endpoint` spells it.
fn flag(e: crate::client::Endpoint) -> String {
    use clap::ValueEnum;
    e.to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// Agent sessions need an API with tools: Chat Completions, Responses or Messages.
pub(crate) fn agent_endpoint(
    w: &WorkloadSpec,
    dataset: Option<&crate::workload::datasets::Dataset>,
    endpoint: crate::client::Endpoint,
) -> Result<()> {
    let agent =
        w.agent.is_some() || matches!(dataset, Some(crate::workload::datasets::Dataset::Agent(_)));
    if agent && !endpoint.takes_tools() {
        bail!("--endpoint {endpoint:?} takes no tools: agent sessions (the agentic workload, [agent], AGNT, FUNC, an agent session dataset) need --endpoint chat, responses or messages");
    }
    Ok(())
}

/// The items of a non-generative endpoint's requests (`--items-per-request`, else the
/// scenario file's `items`, else 1), and rerank's query; refused on a generative endpoint,
/// where a request is one prompt.
pub(crate) fn items(
    w: &mut WorkloadSpec,
    flag: Option<&str>,
    endpoint: crate::client::Endpoint,
) -> Result<()> {
    use crate::workload::lengths::LengthDist;
    if endpoint.is_generative() {
        if flag.is_some() || w.items.is_some() {
            bail!("--items-per-request (a scenario's `items`) applies to --endpoint embeddings and rerank only");
        }
        return Ok(());
    }
    if let Some(text) = flag {
        w.items = Some(
            LengthDist::parse_count(text)
                .map_err(|e| anyhow::anyhow!("--items-per-request: {e}"))?,
        );
    }
    w.items.get_or_insert(LengthDist::fixed(1));
    w.items_query = endpoint == crate::client::Endpoint::Rerank;
    if w.sessions.is_some() || w.agent.is_some() || w.content == crate::workload::Content::Dataset {
        bail!("--endpoint {endpoint:?} sends independent items: multi-turn workloads and datasets do not apply (use --input-tokens and --items-per-request)");
    }
    Ok(())
}

/// What every request body carries, `--extra-body` checked to be a JSON object.
pub(crate) fn request_options(b: &BodyArgs) -> Result<RequestOptions> {
    let mut extra_body = Vec::new();
    if let Some(extra) = &b.extra_body {
        let v: serde_json::Value =
            serde_json::from_str(extra).context("--extra-body is not valid JSON")?;
        let serde_json::Value::Object(map) = v else {
            bail!("--extra-body must be a JSON object, e.g. '{{\"top_k\": 1}}'");
        };
        extra_body.extend(map);
    }
    Ok(RequestOptions {
        ignore_eos: b.ignore_eos,
        prefix_cache: !b.no_prefix_cache,
        usage_per_chunk: b.usage_per_chunk,
        temperature: Some(b.temperature),
        extra_body,
    })
}

/// A prompt salt no earlier run used: the wall clock's nanoseconds and the process id,
/// spread by SplitMix64. Not a draw of the workload (those stay seeded): it only has to
/// differ between runs, and the run records it so that it can be given again.
pub fn fresh_prompt_salt() -> u64 {
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let pid = u64::from(std::process::id());
    // A counter keeps two salts drawn in the same nanosecond apart.
    static DRAWN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = DRAWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    crate::workload::splitmix64(now_ns ^ pid.rotate_left(40) ^ n.rotate_left(20)).max(1)
}
