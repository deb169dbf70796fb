//! Warnings a run's summary carries: each a kind a script can match, with a message that says
//! what it means and what to do.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::fmt;

/// Something a reader of the results must know.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// A percentile from fewer samples than the draft requires (5.1.4.3).
    FewSamples {
        metric: &'static str,
        percentile: &'static str,
        samples: usize,
        needed: usize,
    },
    /// Nothing completed: every latency figure is missing.
    NoRequestCompleted { total: u64 },
    /// Some requests did not complete (failed, or cancelled at the run's end: `by_kind`
    /// says which); latency figures cover completed requests only.
    Failures {
        failed: u64,
        total: u64,
        by_kind: String,
    },
    /// Requests ended before `max_tokens` (EOS or a stop sequence).
    EndedEarly { requests: u64 },
    /// ITL is time between chunks, not per token (draft 4.6.3 option A).
    ItlBetweenChunks { reason: String },
    /// The server streamed reasoning before the answer (draft 5.1.3.1 asks to say so).
    ReasoningBeforeAnswer { requests: u64 },
    /// Closed loop: the smooth-goodput window depends on outcomes.
    UxWindowDependsOnOutcomes,
    /// The warm-up stopped at its cap before meeting the draft's requirements.
    WarmupCapped {
        requests: u64,
        output_tokens: u64,
        cap_s: f64,
    },
    /// No warm-up (cold start).
    ColdStart,
    /// Open loop: the server completed fewer than 90 % of the arrivals (draft 5.2.3.1).
    ServerSaturated { completion_share: f64 },
    /// A `--prefill-curve` profiled on another server, model or engine version.
    PrefillCurveElsewhere { differences: String },
    /// The measured phase stopped sending after this many requests in a row failed with
    /// none succeeding (`runner::phase::GIVE_UP_AFTER`).
    GaveUpOnFailures { failures: u64 },
    /// The requests sent in the run's first seconds waited far longer for their first token
    /// than the rest (a start-up transient: every stream starting at once on an idle
    /// server), and the run's P99 TTFT includes them.
    StartupTransient {
        /// The start counted as "first seconds", s.
        early_s: f64,
        early_p99_ms: f64,
        rest_p99_ms: f64,
        /// The run's P99 TTFT, all requests.
        p99_ms: f64,
    },
    /// More than 5 % of the measured prompt tokens came from the server's prefix cache
    /// though the workload reuses no prefix on purpose: TTFT measured a cache, not prefill.
    PromptsFromCache {
        /// Cached ÷ prompt tokens, 0-1.
        cached_share: f64,
        cached_tokens: u64,
        prompt_tokens: u64,
    },
    /// The run kept no records past a limit and was summarised as they streamed past
    /// (`--exact-summary-limit` or `--memory-budget`; docs/metrics.md, "Long runs").
    SummaryStreamed { why: String },
    /// A warning read back from a run folder: its kind and message as written.
    Recorded { kind: String, message: String },
}

impl Warning {
    /// A stable name for scripts.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::FewSamples { .. } => "few_samples",
            Self::NoRequestCompleted { .. } => "no_request_completed",
            Self::Failures { .. } => "failures",
            Self::EndedEarly { .. } => "ended_early",
            Self::ItlBetweenChunks { .. } => "itl_between_chunks",
            Self::ReasoningBeforeAnswer { .. } => "reasoning_before_answer",
            Self::UxWindowDependsOnOutcomes => "ux_window_depends_on_outcomes",
            Self::WarmupCapped { .. } => "warmup_capped",
            Self::ColdStart => "cold_start",
            Self::ServerSaturated { .. } => "server_saturated",
            Self::PrefillCurveElsewhere { .. } => "prefill_curve_elsewhere",
            Self::GaveUpOnFailures { .. } => "gave_up_on_failures",
            Self::StartupTransient { .. } => "startup_transient",
            Self::PromptsFromCache { .. } => "prompts_from_cache",
            Self::SummaryStreamed { .. } => "summary_streamed",
            Self::Recorded { .. } => "recorded",
        }
    }

    /// The kind as written (a recorded warning keeps its original kind).
    pub fn kind_name(&self) -> &str {
        match self {
            Self::Recorded { kind, .. } => kind,
            other => other.kind(),
        }
    }
}

impl Warning {
    /// One short line for the terminal's minimum report (the full message is in `run.json`
    /// and the detailed report).
    pub fn short(&self) -> String {
        match self {
            Self::FewSamples {
                metric,
                percentile,
                samples,
                needed,
            } => format!("{metric} {percentile}: {samples} samples (< {needed}), indicative"),
            Self::Failures {
                failed,
                total,
                by_kind,
            } => {
                format!("{failed} of {total} requests did not complete ({by_kind})")
            }
            Self::EndedEarly { requests } => {
                format!("{requests} requests ended before max_tokens")
            }
            Self::ItlBetweenChunks { .. } => "ITL is time between chunks (option A)".into(),
            Self::ReasoningBeforeAnswer { requests } => {
                format!("{requests} requests reasoned before answering; TTFT is to the answer")
            }
            Self::UxWindowDependsOnOutcomes => {
                "closed loop: smooth goodput's window depends on outcomes".into()
            }
            Self::WarmupCapped { cap_s, .. } => {
                format!("warm-up stopped at its {cap_s:.0} s cap: not compliant")
            }
            Self::ColdStart => "cold start (--warmup none)".into(),
            Self::ServerSaturated { completion_share } => format!(
                "server saturated: {:.0} % of arrivals completed",
                completion_share * 100.0
            ),
            Self::PrefillCurveElsewhere { .. } => {
                "--prefill-curve was profiled on another system".into()
            }
            Self::GaveUpOnFailures { failures } => {
                format!("sending stopped after {failures} failures in a row, none succeeded")
            }
            Self::StartupTransient {
                early_s,
                early_p99_ms,
                rest_p99_ms,
                ..
            } => format!(
                "start-up transient: TTFT P99 {early_p99_ms:.0} ms in the first {early_s:.1} s, {rest_p99_ms:.0} ms after"
            ),
            Self::PromptsFromCache { cached_share, .. } => format!(
                "{:.0} % of prompt tokens came from the server's cache: TTFT measured a cache",
                cached_share * 100.0
            ),
            Self::SummaryStreamed { .. } => {
                "summarised as records streamed past: percentiles within 0.4 %".into()
            }
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FewSamples {
                metric,
                percentile,
                samples,
                needed,
            } => write!(
                f,
                "{metric} {percentile} from {samples} samples: below the {needed} the draft requires (5.1.4.3); treat it as indicative, or run more requests"
            ),
            Self::NoRequestCompleted { total } => write!(
                f,
                "none of {total} requests completed: every latency figure is missing (see the failures above)"
            ),
            Self::Failures {
                failed,
                total,
                by_kind,
            } => write!(
                f,
                "{failed} of {total} requests did not complete ({by_kind}); latency figures cover completed requests only"
            ),
            Self::EndedEarly { requests } => write!(
                f,
                "{requests} requests ended before max_tokens (EOS or a stop sequence): output lengths differ from the workload's (does the server honour ignore_eos?)"
            ),
            Self::ItlBetweenChunks { reason } => {
                write!(f, "ITL is reported as time between chunks: {reason}")
            }
            Self::ReasoningBeforeAnswer { requests } => write!(
                f,
                "{requests} requests streamed reasoning before the answer: TTFT is the time to the first answer token; the time to the first reasoning token is reported beside it (draft 5.1.3.1)"
            ),
            Self::UxWindowDependsOnOutcomes => write!(
                f,
                "closed loop: each send waits for an earlier answer, so the smooth-goodput window depends on outcomes; compare smooth goodput across open-loop runs (--rate)"
            ),
            Self::WarmupCapped {
                requests,
                output_tokens,
                cap_s,
            } => write!(
                f,
                "warm-up stopped at its {cap_s:.0} s cap with {requests} requests and {output_tokens} output tokens, short of the draft's >= 100 and >= 10,000 (4.5): the run is not compliant; raise --warmup-max"
            ),
            Self::ColdStart => write!(
                f,
                "no warm-up (--warmup none): a cold-start measurement, not comparable with warmed runs (draft 4.5)"
            ),
            Self::ServerSaturated { completion_share } => write!(
                f,
                "the server completed {:.0} % of arrivals in the steady window, below 90 %: it is saturated at this load (draft 5.2.3.1), so latency figures grow with the run's length",
                completion_share * 100.0
            ),
            Self::PrefillCurveElsewhere { differences } => write!(
                f,
                "the --prefill-curve was profiled elsewhere ({differences}): fluidity deadlines are another system's; omit --prefill-curve to profile this one"
            ),
            Self::GaveUpOnFailures { failures } => write!(
                f,
                "sending stopped after {failures} requests in a row failed and none had succeeded: the server is not answering this API as configured (see the failures and their hints), so more requests would only have added failures"
            ),
            Self::StartupTransient {
                early_s,
                early_p99_ms,
                rest_p99_ms,
                p99_ms,
            } => write!(
                f,
                "start-up transient: the requests sent in the first {early_s:.1} s had a TTFT P99 of {early_p99_ms:.0} ms, {:.0}× the {rest_p99_ms:.0} ms of the rest, and the run's P99 TTFT ({p99_ms:.0} ms) includes them: many streams started at once on an idle server. Read the figures after the start (the report's time series), or run longer; after a warm-up a closed loop spreads its first requests (docs/run.md#start-up)",
                early_p99_ms / rest_p99_ms.max(1e-9)
            ),
            Self::PromptsFromCache { .. } | Self::SummaryStreamed { .. } => self.fmt_kept(f),
            Self::Recorded { message, .. } => f.write_str(message),
        }
    }
}

impl schemars::JsonSchema for Warning {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Warning".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A warning: `kind` for scripts, `message` for people.",
            "type": "object",
            "properties": {
                "kind": {"type": "string"},
                "message": {"type": "string"}
            },
            "required": ["kind", "message"],
            "additionalProperties": false
        })
    }
}

impl<'de> serde::Deserialize<'de> for Warning {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct W {
            kind: String,
            message: String,
        }
        let w = W::deserialize(d)?;
        Ok(Warning::Recorded {
            kind: w.kind,
            message: w.message,
        })
    }
}

impl Serialize for Warning {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("kind", self.kind_name())?;
        m.serialize_entry("message", &self.to_string())?;
        m.end()
    }
}

impl Warning {
    /// The messages of the warnings about what a run kept: its prompts in the server's
    /// cache, its records in memory (apart, so `fmt` stays a readable length).
    fn fmt_kept(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PromptsFromCache {
                cached_share,
                cached_tokens,
                prompt_tokens,
            } => write!(
                f,
                "{:.1} % of the measured prompt tokens ({cached_tokens} of {prompt_tokens}) were served from the server's prefix cache, as its responses report, though this workload reuses no prefix on purpose: TTFT measured a cache, not prefill. An earlier run or level sent these prompts (a --prompt-salt given again, or a dataset's prompts replayed); give no --prompt-salt for fresh prompts, or empty the server's cache first (--reset-cache-between-levels in tests)",
                cached_share * 100.0
            ),
            Self::SummaryStreamed { why } => write!(
                f,
                "the run kept no records for its summary past {why}: it was summarised as they streamed past (counts and rates exact, percentiles within 0.4 %, whole-request figures from a seeded sample of 2,000; docs/metrics.md, \"Long runs\"); every record is in requests.jsonl"
            ),
            other => fmt::Display::fmt(other, f),
        }
    }
}
