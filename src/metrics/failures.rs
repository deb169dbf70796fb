//! What went wrong, in a form a person can act on: failures counted by kind, the most
//! frequent messages, and a hint where the cause is usually the same.

use crate::record::{FailureKind, Outcome, RequestRecord};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One distinct failure message and how often it occurred.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FailureMessage {
    pub kind: FailureKind,
    /// The message, with digits of request-specific numbers kept (they are usually the
    /// point: a status code, a token count).
    pub message: String,
    pub count: u64,
    /// What usually causes it and how to fix it.
    pub hint: Option<String>,
}

/// Failures of the measured requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FailureBreakdown {
    pub by_kind: BTreeMap<FailureKind, u64>,
    /// The most frequent messages, most frequent first (at most five).
    pub top: Vec<FailureMessage>,
}

const SHOWN: usize = 5;
const MESSAGE_CHARS: usize = 240;

/// Distinct messages kept at most; later new ones are counted under one line, so a run
/// whose every failure says something different cannot grow without bound.
const DISTINCT_MESSAGES: usize = 1_000;

/// Failure counts built one request at a time.
#[derive(Debug, Clone, Default)]
pub struct FailureTally {
    by_kind: BTreeMap<FailureKind, u64>,
    by_message: BTreeMap<(FailureKind, String), u64>,
}

impl FailureTally {
    /// Counts `r` when it failed.
    pub fn add(&mut self, r: &RequestRecord) {
        let Outcome::Failed { kind, detail } = &r.outcome else {
            return;
        };
        *self.by_kind.entry(*kind).or_default() += 1;
        let mut message: String = detail.chars().take(MESSAGE_CHARS).collect();
        if self.by_message.len() >= DISTINCT_MESSAGES
            && !self.by_message.contains_key(&(*kind, message.clone()))
        {
            message = format!("(other messages: more than {DISTINCT_MESSAGES} distinct ones)");
        }
        *self.by_message.entry((*kind, message)).or_default() += 1;
    }

    /// The counts by kind and the most frequent messages.
    pub fn finish(&self) -> FailureBreakdown {
        let mut top: Vec<FailureMessage> = self
            .by_message
            .iter()
            .map(|((kind, message), &count)| FailureMessage {
                hint: hint(*kind, message),
                kind: *kind,
                message: message.clone(),
                count,
            })
            .collect();
        top.sort_by(|a, b| b.count.cmp(&a.count).then(a.message.cmp(&b.message)));
        top.truncate(SHOWN);
        FailureBreakdown {
            by_kind: self.by_kind.clone(),
            top,
        }
    }
}

/// Counts failures by kind and message.
pub fn breakdown(measured: &[&RequestRecord]) -> FailureBreakdown {
    let mut tally = FailureTally::default();
    for r in measured {
        tally.add(r);
    }
    tally.finish()
}

/// Measured requests by who ended them: the server (completed, or failed for any reason but
/// `cancelled`) or the benchmark itself (`cancelled`: still in flight when a timed level or
/// run ended and its `--grace` ran out, or at Ctrl-C). A request the benchmark stopped says
/// nothing about the server, so the server's completion and failure rates are over the
/// first group only, and the cancelled ones are reported beside them, never as failures.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ServerOutcomes {
    pub completed: u64,
    /// Failed for the server's reasons: every failure kind but `cancelled`.
    pub failed: u64,
    /// Stopped by the benchmark at the end of the level (or run), after its grace.
    pub cancelled: u64,
}

impl ServerOutcomes {
    /// From a run's summary: its counts, less the `cancelled` failures.
    pub fn of(s: &crate::metrics::RunSummary) -> Self {
        let cancelled = s
            .failures
            .by_kind
            .get(&FailureKind::Cancelled)
            .copied()
            .unwrap_or(0);
        Self {
            completed: s.requests.completed,
            failed: s.requests.failed.saturating_sub(cancelled),
            cancelled,
        }
    }

    /// From the measured records themselves.
    pub fn of_records(measured: &[&RequestRecord]) -> Self {
        let mut out = Self::default();
        for r in measured {
            match r.outcome.failure_kind() {
                None => out.completed += 1,
                Some(FailureKind::Cancelled) => out.cancelled += 1,
                Some(_) => out.failed += 1,
            }
        }
        out
    }

    /// Requests the server decided: completed plus failed.
    pub fn judged(&self) -> u64 {
        self.completed + self.failed
    }

    /// Completed ÷ judged, 0-1; 0 when the server decided none (nothing was shown to
    /// complete).
    pub fn completion_rate(&self) -> f64 {
        match self.judged() {
            0 => 0.0,
            n => self.completed as f64 / n as f64,
        }
    }

    /// Failed ÷ judged, 0-1; 0 when the server decided none.
    pub fn failure_rate(&self) -> f64 {
        match self.judged() {
            0 => 0.0,
            n => self.failed as f64 / n as f64,
        }
    }
}

/// The usual cause of a failure, from its kind and message.
pub fn hint(kind: FailureKind, message: &str) -> Option<String> {
    let m = message.to_ascii_lowercase();
    let status = m
        .strip_prefix("http ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse::<u16>().ok());
    let h = match (kind, status) {
        (FailureKind::HttpStatus, Some(404)) => {
            "the server has no such route: is `/v1` (or the API's base path) missing from --url, or is --endpoint wrong?"
        }
        (FailureKind::HttpStatus, Some(401 | 403)) => {
            "the server refused the credentials: set the key in the variable named by --api-key-env (or --api-key-file)"
        }
        (FailureKind::HttpStatus, Some(400))
            if m.contains("context") || m.contains("too long") || m.contains("exceed") =>
        {
            "prompts longer than the server's context: lower --input-tokens, or raise the server's context (llama.cpp splits -c across --parallel slots; vLLM --max-model-len)"
        }
        (FailureKind::HttpStatus, Some(400)) if m.contains("model") => {
            "the server does not know this model: check --model against its /v1/models"
        }
        (FailureKind::HttpStatus, Some(429)) => {
            "the server rate-limited the client: lower the load, or it is the limit being measured"
        }
        (FailureKind::HttpStatus, Some(503)) => {
            "the server was overloaded or still loading: lower the load or wait for /health"
        }
        (FailureKind::HttpStatus, Some(s)) if s >= 500 => {
            "the server failed: its own log says why"
        }
        (FailureKind::Connect, _) if m.contains("refused") => {
            "nothing listens there: is the server running, and is the port in --url right?"
        }
        (FailureKind::Connect, _) => "no connection could be made: check the host, port, DNS and TLS settings",
        (FailureKind::Timeout, _) => {
            "requests took longer than --timeout: raise it, or lower the load if the server is queueing"
        }
        (FailureKind::Protocol, _) => {
            "the response could not be read as the API's stream: check --endpoint, and that --url points at the API, not a web page"
        }
        (FailureKind::StreamCut, _) => {
            "the server (or a proxy in between) closed streams before they ended: look for crashes, restarts or proxy timeouts"
        }
        (FailureKind::Cancelled, _) => {
            "requests still in flight when the run stopped (Ctrl-C, or --duration plus --grace)"
        }
        (FailureKind::Refused, _) => "the server's content filter refused the request",
        _ => return None,
    };
    Some(h.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(kind: FailureKind, detail: &str) -> RequestRecord {
        RequestRecord {
            outcome: Outcome::failed(kind, detail),
            ..Default::default()
        }
    }

    /// Issue 19, item 4: a closed-loop level at concurrency 16 ends with its 16 requests in
    /// flight cancelled by the benchmark. 983 completed, 1 failed with HTTP 503, 16
    /// cancelled: the server's completion rate is 983 / (983 + 1) = 99.90 % (the old share
    /// of all measured, 983 / 1,000 = 98.3 %, failed a 99 % criterion), its failure rate
    /// 1 / 984 = 0.10 % (old: 17 / 1,000 = 1.7 %), and the 16 stay visible as `cancelled`.
    #[test]
    fn the_benchmarks_own_cancellations_are_not_server_failures() {
        let mut records: Vec<RequestRecord> = (0..983)
            .map(|i| RequestRecord::completed_for_tests(i, i * 10, &[i * 10 + 5], 10))
            .collect();
        records.push(failed(FailureKind::HttpStatus, "HTTP 503: overloaded"));
        for _ in 0..16 {
            records.push(failed(
                FailureKind::Cancelled,
                "still in flight when the run stopped (duration limit plus --grace, or Ctrl-C)",
            ));
        }
        let refs: Vec<&RequestRecord> = records.iter().collect();
        let o = ServerOutcomes::of_records(&refs);
        assert_eq!((o.completed, o.failed, o.cancelled), (983, 1, 16));
        assert_eq!(o.judged(), 984);
        assert!((o.completion_rate() - 983.0 / 984.0).abs() < 1e-12);
        assert!(o.completion_rate() >= 0.99);
        assert!((o.failure_rate() - 1.0 / 984.0).abs() < 1e-12);
        // The summary path agrees, while the summary's own success rate still counts the
        // cancelled requests (98.3 %): procedures read `ServerOutcomes`, not `success_rate`.
        let s = crate::metrics::summarize(&records, &crate::metrics::SummaryParams::default());
        assert_eq!(ServerOutcomes::of(&s), o);
        assert!((s.success_rate - 0.983).abs() < 1e-12);
        // Nothing decided by the server: no completion shown.
        let only_cancelled = ServerOutcomes {
            cancelled: 4,
            ..Default::default()
        };
        assert_eq!(only_cancelled.completion_rate(), 0.0);
        assert_eq!(only_cancelled.failure_rate(), 0.0);
    }

    #[test]
    fn counts_by_kind_and_message_with_hints() {
        let records = [
            failed(FailureKind::HttpStatus, "HTTP 404: Not Found"),
            failed(FailureKind::HttpStatus, "HTTP 404: Not Found"),
            failed(
                FailureKind::HttpStatus,
                "HTTP 400: {\"error\":{\"message\":\"the request exceeds the available context size\"}}",
            ),
            failed(FailureKind::Timeout, "no complete response within 600 s (--timeout)"),
            RequestRecord::default(),
        ];
        let refs: Vec<&RequestRecord> = records.iter().collect();
        let b = breakdown(&refs);
        assert_eq!(b.by_kind[&FailureKind::HttpStatus], 3);
        assert_eq!(b.by_kind[&FailureKind::Timeout], 1);
        assert_eq!(b.by_kind.len(), 2);
        assert_eq!(b.top[0].message, "HTTP 404: Not Found");
        assert_eq!(b.top[0].count, 2);
        assert!(b.top[0].hint.as_deref().unwrap().contains("/v1"));
        let ctx = b
            .top
            .iter()
            .find(|m| m.message.contains("context"))
            .unwrap();
        assert!(ctx.hint.as_deref().unwrap().contains("--input-tokens"));
    }
}
