//! From OpenTelemetry GenAI spans to agent sessions: replay what an instrumented agent did.
//!
//! Reads OTLP JSON (one `ExportTraceServiceRequest` object, or one per line as the
//! collector's file exporter writes them) and keeps the spans the GenAI semantic conventions
//! name: model calls (`gen_ai.operation.name` = `chat`, `text_completion`,
//! `generate_content`) with `gen_ai.usage.input_tokens` and `output_tokens`, and tool runs
//! (`execute_tool`, named by `gen_ai.tool.name`). Spans group into sessions by
//! `gen_ai.conversation.id`, else by trace id. In a session, in start order:
//!
//! - model calls that overlap in time are one step's fan-out, else each is a step;
//! - the tool runs between two steps are the earlier step's calls, each lasting from the
//!   model's answer to its end (so the longest is the wait, sequential tools included);
//!   the gap from the last tool's end to the next step is think time; a model call that
//!   finished with a tool call but has no tool span gets one call lasting the whole gap;
//! - a step's new tokens are the difference of successive prompts: the next prompt less the
//!   previous prompt and answer. After calls they are the calls' results (split evenly),
//!   else a user message whose wait before it is think time. The first step's prompt is
//!   all new (system prompt and tool definitions included: spans do not separate them).
//!
//! Pure: text in, sessions out. docs/workloads.md, "Importing OpenTelemetry traces".

use super::trace::{AgentStep, AgentTrace, BranchTrace, ToolCallTrace};
use serde_json::Value;
use std::collections::BTreeMap;
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum OtelError {
    #[error("line {line}: not OTLP JSON ({detail}): expected an object with `resourceSpans`, as the OTLP/HTTP JSON exporter or the collector's file exporter writes")]
    Json { line: usize, detail: String },
    #[error("no GenAI model call in the traces: spans need gen_ai.operation.name = chat (or text_completion, generate_content) and gen_ai.usage.input_tokens / output_tokens")]
    NoModelCalls,
}

/// What the import found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ImportInfo {
    pub spans: usize,
    pub model_calls: usize,
    pub tool_runs: usize,
    /// Model calls without token usage, left out.
    pub model_calls_without_usage: usize,
    pub sessions: usize,
}

/// One span, as far as the import needs it.
#[derive(Debug, Clone, PartialEq)]
struct Span {
    group: String,
    start_ns: u64,
    end_ns: u64,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Model {
        input: u32,
        output: u32,
        calls_tools: bool,
    },
    Tool {
        name: String,
    },
}

/// Reads OTLP JSON text into agent sessions, in order of their first span.
pub fn import(text: &str) -> Result<(Vec<AgentTrace>, ImportInfo), OtelError> {
    let mut info = ImportInfo::default();
    let mut spans = Vec::new();
    let trimmed = text.trim_start();
    // One pretty-printed object, or one object per line.
    let docs: Vec<(usize, &str)> =
        if trimmed.starts_with('{') && serde_json::from_str::<Value>(trimmed).is_ok() {
            vec![(1, trimmed)]
        } else {
            text.lines()
                .enumerate()
                .map(|(i, l)| (i + 1, l))
                .filter(|(_, l)| !l.trim().is_empty())
                .collect()
        };
    for (line, doc) in docs {
        let v: Value = serde_json::from_str(doc).map_err(|e| OtelError::Json {
            line,
            detail: e.to_string(),
        })?;
        let Some(resources) = v.get("resourceSpans").and_then(Value::as_array) else {
            return Err(OtelError::Json {
                line,
                detail: "no resourceSpans".into(),
            });
        };
        for raw in resources
            .iter()
            .filter_map(|r| r.get("scopeSpans")?.as_array())
            .flatten()
            .filter_map(|s| s.get("spans")?.as_array())
            .flatten()
        {
            info.spans += 1;
            match read_span(raw) {
                Read::Span(s) => {
                    match s.kind {
                        Kind::Model { .. } => info.model_calls += 1,
                        Kind::Tool { .. } => info.tool_runs += 1,
                    }
                    spans.push(s)
                }
                Read::ModelWithoutUsage => info.model_calls_without_usage += 1,
                Read::Other => {}
            }
        }
    }
    let mut groups: BTreeMap<(u64, String), Vec<Span>> = BTreeMap::new();
    let mut first_seen: BTreeMap<String, u64> = BTreeMap::new();
    for s in &spans {
        let e = first_seen.entry(s.group.clone()).or_insert(s.start_ns);
        *e = (*e).min(s.start_ns);
    }
    for s in spans {
        groups
            .entry((first_seen[&s.group], s.group.clone()))
            .or_default()
            .push(s);
    }
    let sessions: Vec<AgentTrace> = groups
        .into_iter()
        .filter_map(|((_, id), spans)| session(id, spans))
        .collect();
    if sessions.is_empty() {
        return Err(OtelError::NoModelCalls);
    }
    info.sessions = sessions.len();
    Ok((sessions, info))
}

enum Read {
    Span(Span),
    ModelWithoutUsage,
    Other,
}

/// One OTLP span: its times, its group and what it was.
fn read_span(raw: &Value) -> Read {
    let attrs: BTreeMap<&str, &Value> = raw
        .get("attributes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| Some((a.get("key")?.as_str()?, a.get("value")?)))
        .collect();
    let text = |k: &str| attrs.get(k).and_then(|v| v.get("stringValue")?.as_str());
    let int = |k: &str| {
        attrs
            .get(k)
            .and_then(|v| number(v.get("intValue").or(v.get("doubleValue"))?))
    };
    let nanos = |k: &str| raw.get(k).and_then(number);
    let (Some(start_ns), Some(end_ns)) = (nanos("startTimeUnixNano"), nanos("endTimeUnixNano"))
    else {
        return Read::Other;
    };
    let group = text("gen_ai.conversation.id")
        .or_else(|| raw.get("traceId")?.as_str())
        .unwrap_or("")
        .to_owned();
    let kind = match text("gen_ai.operation.name") {
        Some("chat" | "text_completion" | "generate_content") => {
            // Instrumentations before the 1.37 conventions (OpenLLMetry) still write the
            // prompt/completion names.
            let (Some(input), Some(output)) = (
                int("gen_ai.usage.input_tokens").or_else(|| int("gen_ai.usage.prompt_tokens")),
                int("gen_ai.usage.output_tokens").or_else(|| int("gen_ai.usage.completion_tokens")),
            ) else {
                return Read::ModelWithoutUsage;
            };
            let finish = attrs
                .get("gen_ai.response.finish_reasons")
                .map(|v| v.to_string().to_ascii_lowercase())
                .unwrap_or_default();
            Kind::Model {
                input: input.min(u64::from(u32::MAX)) as u32,
                output: output.min(u64::from(u32::MAX)) as u32,
                // OpenAI `tool_calls`, the conventions' `tool_call`, Anthropic `tool_use`,
                // the Vercel AI SDK's `tool-calls`, the older `function_call`.
                calls_tools: ["tool_call", "tool-call", "tool_use", "function_call"]
                    .iter()
                    .any(|w| finish.contains(w)),
            }
        }
        Some("execute_tool") => Kind::Tool {
            name: text("gen_ai.tool.name")
                .map(str::to_owned)
                .or_else(|| {
                    raw.get("name")?
                        .as_str()?
                        .strip_prefix("execute_tool ")
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| "tool".into()),
        },
        _ => return Read::Other,
    };
    Read::Span(Span {
        group,
        start_ns,
        end_ns: end_ns.max(start_ns),
        kind,
    })
}

/// A JSON number, or a string holding one (OTLP JSON writes 64-bit integers as strings).
fn number(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => s.parse::<u64>().ok(),
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
        _ => None,
    }
}

/// The model calls of one step (overlapping in time) and the tool runs after it.
struct StepSpans {
    calls: Vec<(u64, u64, u32, u32, bool)>,
    tools: Vec<(String, u64, u64)>,
}

/// One session from its spans; `None` when it has no model call.
fn session(id: String, mut spans: Vec<Span>) -> Option<AgentTrace> {
    spans.sort_by_key(|s| (s.start_ns, s.end_ns));
    let mut steps: Vec<StepSpans> = Vec::new();
    let mut step_end = 0u64;
    for s in spans {
        match s.kind {
            Kind::Model {
                input,
                output,
                calls_tools,
            } => {
                let call = (s.start_ns, s.end_ns, input, output, calls_tools);
                match steps.last_mut() {
                    // Overlapping the current step's model calls (and no tool ran since):
                    // a branch of the same fan-out.
                    Some(st) if s.start_ns < step_end && st.tools.is_empty() => {
                        st.calls.push(call);
                        step_end = step_end.max(s.end_ns);
                    }
                    _ => {
                        steps.push(StepSpans {
                            calls: vec![call],
                            tools: Vec::new(),
                        });
                        step_end = s.end_ns;
                    }
                }
            }
            Kind::Tool { name } => {
                if let Some(st) = steps.last_mut() {
                    st.tools.push((name, s.start_ns, s.end_ns));
                }
            }
        }
    }
    if steps.is_empty() {
        return None;
    }
    Some(AgentTrace {
        id: Some(id),
        system_tokens: 0,
        tools: Vec::new(),
        steps: build_steps(&steps),
    })
}

/// The session format's steps from the grouped spans (see the module's reading).
fn build_steps(spans: &[StepSpans]) -> Vec<AgentStep> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut out: Vec<AgentStep> = Vec::with_capacity(spans.len());
    // Tokens of the history so far: the previous prompt and what followed it.
    let mut context = 0u32;
    for (k, st) in spans.iter().enumerate() {
        let next = spans.get(k + 1);
        let end = st.calls.iter().map(|c| c.1).max().unwrap_or(0);
        let mut step = new_step(spans, k, &out, context);
        let answer: u32 = st.calls.iter().map(|c| c.3).sum();
        let prompt = st.calls.iter().map(|c| c.2).max().unwrap_or(0);
        let next_prompt = next.and_then(|n| n.calls.iter().map(|c| c.2).min());
        let results = next_prompt.map_or(0, |p| p.saturating_sub(prompt + answer));
        // A call's time runs from the model's answer to the tool's end: replayed as parallel
        // calls, the longest of them is then the whole wait, sequential tools included.
        let mut tools: Vec<(String, f64)> = st
            .tools
            .iter()
            .map(|(n, _, b)| (n.clone(), ms(b.saturating_sub(end))))
            .collect();
        if tools.is_empty() && st.calls.len() == 1 && st.calls[0].4 {
            let next_start = next
                .and_then(|n| n.calls.iter().map(|c| c.0).min())
                .unwrap_or(end);
            tools.push(("tool".into(), ms(next_start.saturating_sub(end))));
        }
        if st.calls.len() == 1 && !tools.is_empty() {
            let n = tools.len() as u32;
            step.calls = tools
                .into_iter()
                .map(|(name, tool_ms)| ToolCallTrace {
                    name,
                    arguments_tokens: (answer / n).max(1),
                    result_tokens: results / n,
                    tool_ms,
                })
                .collect();
            context = prompt + answer + results;
        } else if st.calls.len() > 1 {
            // The branches' own messages stay in the branches; the history gains their
            // answers (as the sub-agents' results).
            context += answer;
        } else {
            context = prompt + answer;
        }
        out.push(step);
    }
    out
}

/// Step `k` before its calls: a fan-out of its overlapping model calls, or one request
/// whose new tokens are the prompt's growth past `context` (none right after calls, whose
/// results are that growth); the gap after a step without calls is think time.
fn new_step(spans: &[StepSpans], k: usize, out: &[AgentStep], context: u32) -> AgentStep {
    let ms = |ns: u64| ns as f64 / 1e6;
    let st = &spans[k];
    let start = st.calls.iter().map(|c| c.0).min().unwrap_or(0);
    let new_tokens = |input: u32| input.saturating_sub(context).max(1);
    let mut step = if st.calls.len() > 1 {
        AgentStep {
            fan_out: st
                .calls
                .iter()
                .map(|c| BranchTrace {
                    input_tokens: new_tokens(c.2),
                    output_tokens: c.3.max(1),
                })
                .collect(),
            ..Default::default()
        }
    } else {
        let c = st.calls[0];
        AgentStep {
            input_tokens: if k == 0 || out.last().is_some_and(|p| p.calls.is_empty()) {
                new_tokens(c.2)
            } else {
                0
            },
            output_tokens: c.3.max(1),
            ..Default::default()
        }
    };
    // The wait before this step: the tools account for theirs (to their last end); the
    // rest of the gap is thinking.
    if let Some(prev) = out.last() {
        let before = &spans[k - 1];
        let model_end = before.calls.iter().map(|c| c.1).max().unwrap_or(start);
        let prev_end = match (
            prev.calls.is_empty(),
            before.tools.iter().map(|t| t.2).max(),
        ) {
            (true, _) => model_end,
            (false, Some(tools_end)) => tools_end.max(model_end),
            // A call without a tool span lasted the whole gap.
            (false, None) => start,
        };
        step.think_ms = ms(start.saturating_sub(prev_end));
    }
    step
}
