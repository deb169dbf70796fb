//! Failure is data: how a request ended, by kind, with the detail kept.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Outcome {
    /// A complete response.
    #[default]
    Ok,
    /// The request failed; what was received before the failure is kept in the record.
    Failed { kind: FailureKind, detail: String },
}

impl Outcome {
    pub fn failed(kind: FailureKind, detail: impl Into<String>) -> Self {
        Outcome::Failed {
            kind,
            detail: detail.into(),
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok)
    }

    pub fn failure_kind(&self) -> Option<FailureKind> {
        match self {
            Outcome::Ok => None,
            Outcome::Failed { kind, .. } => Some(*kind),
        }
    }
}

/// Why a request failed. Counted by kind in every summary.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// No connection could be made (refused, DNS, TLS handshake).
    Connect,
    /// The request exceeded its time limit.
    Timeout,
    /// The server answered with a non-success HTTP status.
    HttpStatus,
    /// The response could not be understood (bad HTTP, bad SSE, bad JSON, error event).
    Protocol,
    /// The stream ended before the response was complete.
    StreamCut,
    /// The run was stopped (Ctrl-C) before the response finished.
    Cancelled,
    /// The server refused the content (guardrail / content filter).
    Refused,
}

impl FailureKind {
    pub const ALL: [FailureKind; 7] = [
        FailureKind::Connect,
        FailureKind::Timeout,
        FailureKind::HttpStatus,
        FailureKind::Protocol,
        FailureKind::StreamCut,
        FailureKind::Cancelled,
        FailureKind::Refused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Connect => "connect",
            FailureKind::Timeout => "timeout",
            FailureKind::HttpStatus => "http_status",
            FailureKind::Protocol => "protocol",
            FailureKind::StreamCut => "stream_cut",
            FailureKind::Cancelled => "cancelled",
            FailureKind::Refused => "refused",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
