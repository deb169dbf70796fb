//! A run's settings as a flat `pointer → compact JSON` view, and the settings whose value
//! differs between the systems compared.

use super::super::SystemInput;
use super::{join, to_json, Difference};
use crate::artifacts::fingerprint::canonical;
use crate::artifacts::RunReport;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};

/// Keys of a run's configuration view that are bookkeeping, not configuration: where it
/// wrote, how it was typed, how it printed, the seed (checked on its own), the trace id
/// prefix and the prompt salt (fresh every run: the words of the prompts, not the workload,
/// whose lengths and order the seed fixes).
const IGNORED: [&str; 8] = [
    "/config/out_dir",
    "/config/command_line",
    "/config/quiet",
    "/config/client_threads",
    "/config/seed",
    "/config/target/api_key",
    "/config/target/trace_id_prefix",
    "/config/prompt_salt",
];

/// Settings whose value differs between systems, each with its per-system value.
pub(super) fn differences(systems: &[SystemInput]) -> Vec<Difference> {
    let per_system: Vec<BTreeMap<String, BTreeSet<String>>> = systems
        .iter()
        .map(|s| {
            let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            let views: Vec<BTreeMap<String, String>> =
                s.runs.iter().map(|r| flat_view(&r.report)).collect();
            let keys: BTreeSet<&String> = views.iter().flat_map(|v| v.keys()).collect();
            for k in keys {
                for v in &views {
                    m.entry(k.clone())
                        .or_default()
                        .insert(v.get(k).cloned().unwrap_or_else(|| "(absent)".into()));
                }
            }
            m
        })
        .collect();
    let keys: BTreeSet<&String> = per_system.iter().flat_map(|m| m.keys()).collect();
    let mut out = Vec::new();
    for k in keys {
        let shown: Vec<String> = per_system
            .iter()
            .map(|m| match m.get(k) {
                None => "(absent)".into(),
                Some(vals) if vals.len() == 1 => vals.iter().next().cloned().unwrap_or_default(),
                Some(vals) => format!("varies: {}", join(vals)),
            })
            .collect();
        if shown.iter().collect::<BTreeSet<_>>().len() > 1 {
            out.push(Difference {
                setting: k.clone(),
                values: shown,
            });
        }
    }
    out
}

/// A run's configuration as `pointer → compact JSON`: the run configuration, what the
/// server said about itself, the system as described, the tokenizer and the tool version.
/// The built-in simulator's URL (a fresh port every run) reads as `built-in simulator`.
pub fn flat_view(r: &RunReport) -> BTreeMap<String, String> {
    let mut config = to_json(&r.config);
    if r.config.target.builtin_simulator {
        if let Some(u) = config.pointer_mut("/target/url") {
            *u = Json::from("built-in simulator");
        }
        if let Some(u) = config.pointer_mut("/telemetry/metrics_url") {
            if !u.is_null() {
                *u = Json::from("built-in simulator /metrics");
            }
        }
    }
    let mut server = to_json(&r.server);
    if let Some(obj) = server.as_object_mut() {
        // The Server header of a simulator carries nothing a reader compares.
        obj.remove("server_header");
    }
    let view = serde_json::json!({
        "config": config,
        "server": server,
        "system": to_json(&r.system),
        "tokenizer": {
            "name": r.tokenizer.name,
            "counting_option": r.tokenizer.counting_option,
        },
        "tool": {"version": r.tool.version},
    });
    let mut out = BTreeMap::new();
    flatten("", &view, &mut out);
    for k in IGNORED {
        out.retain(|key, _| key != k && !key.starts_with(&format!("{k}/")));
    }
    out
}

/// Leaves of `value` as `pointer → compact JSON`; arrays are leaves (a list of classes or
/// notes reads best whole).
fn flatten(prefix: &str, value: &Json, out: &mut BTreeMap<String, String>) {
    match value {
        Json::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                flatten(&format!("{prefix}/{k}"), v, out);
            }
        }
        other => {
            let mut text = canonical(other);
            if text.len() > 120 {
                let mut cut = 100;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text = format!(
                    "{}… (hash {})",
                    &text[..cut],
                    crate::artifacts::fingerprint::hash_value(other)
                );
            }
            out.insert(prefix.to_owned(), text);
        }
    }
}
