//! Judges the answer to the test request: whether the server speaks the API, or else the
//! cause and the fix in words a user can act on (an HTML page, refused credentials, a missing
//! route, a JSON document instead of a stream).

use super::{Route, MAX_TOKENS, QUOTED};
use crate::client::Exchange;
use crate::record::{FailureKind, Outcome};

/// What the test request showed: enough to judge it (built by hand in tests).
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// The HTTP status, when an HTTP answer came.
    pub status: Option<u16>,
    pub content_type: Option<String>,
    /// The first bytes of a body that was not an event stream.
    pub body_start: String,
    pub outcome: Outcome,
    /// Answer and reasoning chunks read in the API's shape.
    pub tokens: usize,
    /// The stream named a finish reason (an answer in the API's shape, if an empty one).
    pub finish_reason: bool,
}

impl Seen {
    pub fn of(ex: &Exchange) -> Self {
        let r = ex.record();
        Seen {
            status: r.http_status,
            content_type: ex.draft.content_type.clone(),
            body_start: String::from_utf8_lossy(&ex.draft.body_start).into_owned(),
            outcome: r.outcome.clone(),
            tokens: r.chunks.len() + r.reasoning_chunks.len(),
            finish_reason: r.finish_reason.is_some(),
        }
    }

    /// The body the server sent when it was not the API's stream: an error status's body
    /// (kept in the failure's detail), or the first bytes of a 200 answer.
    fn body(&self) -> &str {
        match &self.outcome {
            Outcome::Failed {
                kind: FailureKind::HttpStatus,
                detail,
            } => detail.split_once(": ").map_or("", |(_, b)| b),
            _ => &self.body_start,
        }
    }
}

/// What the server's answer means for the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Judged {
    /// It speaks the API: the run may start.
    Usable,
    /// A failure that may pass (5xx, 429, a cut or garbled stream): try again.
    Passing(String),
    /// The server cannot be used as configured: the cause and the fix.
    Unusable(String),
}

/// Judges the answer to the test request.
pub fn judge(seen: &Seen, route: &Route) -> Judged {
    let req = &route.request;
    if let Some(title) = html_title(seen) {
        let status = seen.status.unwrap_or(0);
        let what = format!(
            "{req} answered with an HTML page (HTTP {status}{title}), not the {} API",
            route.api
        );
        if matches!(status, 502..=504) {
            return Judged::Passing(format!("{what}: a gateway's error page"));
        }
        return Judged::Unusable(format!("{what}: --url points at a web page (a web UI, a proxy's or another service's page), not at the API.{}", url_fix(route)));
    }
    match (&seen.outcome, seen.status) {
        (Outcome::Ok, _) if seen.tokens > 0 || seen.finish_reason => Judged::Usable,
        (Outcome::Ok, _) => Judged::Unusable(format!(
            "{req} answered with a stream that ended properly, but no event in it had the {} API's shape (no text, no finish reason): does the server speak another API? Pass the --endpoint it speaks (docs/apis.md).",
            route.api
        )),
        // A content filter's refusal is an answer in the API's shape.
        (Outcome::Failed { kind: FailureKind::Refused, .. }, _) => Judged::Usable,
        (Outcome::Failed { kind: FailureKind::Timeout, detail }, _) => Judged::Unusable(format!(
            "{req}: {detail}, for a prompt of a few tokens and {MAX_TOKENS} output tokens. Is the server stuck, or busy with other work (a previous run's requests)? A server this slow needs a longer --timeout."
        )),
        (Outcome::Failed { kind: FailureKind::HttpStatus, detail }, Some(s)) => {
            by_status(s, detail, route)
        }
        (Outcome::Failed { kind, detail }, Some(200)) if seen.tokens == 0 => {
            not_a_stream(seen, *kind, detail, route)
        }
        (Outcome::Failed { kind, detail }, _) => Judged::Passing(with_hint(*kind, detail)),
    }
}

/// An error status: which ones are the configuration's fault, which may pass.
fn by_status(status: u16, detail: &str, route: &Route) -> Judged {
    let req = &route.request;
    let quoted = quote(detail);
    match status {
        401 | 403 => Judged::Unusable(format!(
            "{req} was refused (HTTP {status}): the server wants credentials it did not get ({quoted}). {}",
            key_fix(route)
        )),
        404 | 405 => Judged::Unusable(format!(
            "{req} answered HTTP {status}: the server has no {} route there ({quoted}).{} Otherwise pass the --endpoint this server speaks: chat, completions, responses, messages, llamacpp, tgi, sglang, websocket, grpc (docs/apis.md).",
            route.api,
            url_fix(route)
        )),
        501 => Judged::Unusable(format!(
            "{req} answered HTTP 501 (not implemented): the server does not serve the {} API there ({quoted}). Pass the --endpoint it speaks (docs/apis.md).{}",
            route.api,
            url_fix(route)
        )),
        408 | 429 | 500..=599 => {
            Judged::Passing(with_hint(FailureKind::HttpStatus, detail))
        }
        400..=499 => Judged::Unusable(format!(
            "{req} was rejected (HTTP {status}) for a prompt of a few tokens and {MAX_TOKENS} output tokens: {quoted}. Check --model, --header and --extra-body.{}",
            crate::metrics::failures::hint(FailureKind::HttpStatus, detail)
                .map(|h| format!(" ({h})"))
                .unwrap_or_default()
        )),
        _ => Judged::Unusable(format!(
            "{req} answered HTTP {status} ({quoted}), not a streamed answer: servebench does not follow redirects; is --url the API's own address (scheme, host, port, base path)?"
        )),
    }
}

/// A 200 answer with no token in it: a JSON document instead of a stream, another body, or
/// a stream in another shape.
fn not_a_stream(seen: &Seen, kind: FailureKind, detail: &str, route: &Route) -> Judged {
    let req = &route.request;
    let ctype = seen.content_type.as_deref().unwrap_or("no Content-Type");
    let lower = ctype.to_ascii_lowercase();
    let said = quote(seen.body());
    if lower.contains("event-stream") {
        // The API's stream, broken before its first token: may pass (a cut, a bad event).
        return Judged::Passing(with_hint(kind, detail));
    }
    if lower.contains("json") {
        return Judged::Unusable(format!(
            "{req} answered HTTP 200 with one JSON document ({ctype}) instead of a stream of events: servebench measures streamed answers (`stream: true`). Does the server, or a proxy in front of it, stream on this route? It said: {said}"
        ));
    }
    Judged::Unusable(format!(
        "{req} answered HTTP 200 with {ctype}, not the {} API's event stream: {said}. Check --url and --endpoint (docs/apis.md).",
        route.api
    ))
}

/// `Some(", \"title\"")` (or `Some("")` without a title) when the answer is an HTML page.
fn html_title(seen: &Seen) -> Option<String> {
    let html_type = seen
        .content_type
        .as_deref()
        .is_some_and(|t| t.to_ascii_lowercase().contains("html"));
    let body = seen.body().trim_start();
    let lower = body.to_ascii_lowercase();
    if !(html_type || lower.starts_with("<!doctype html") || lower.starts_with("<html")) {
        return None;
    }
    let title = lower
        .find("<title>")
        .map(|i| i + "<title>".len())
        .and_then(|start| {
            let end = start + lower[start..].find("</title>")?;
            // Same offsets in `body`: lowercasing ASCII keeps every byte where it was.
            body.get(start..end)
        })
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|t| !t.is_empty())
        .map(|t| format!(", \"{}\"", t.chars().take(80).collect::<String>()))
        .unwrap_or_default();
    Some(title)
}

/// How to set the key, from where the one sent came from (or that none was sent).
fn key_fix(route: &Route) -> String {
    match &route.key_sent {
        Some(from) => format!(
            "A key was sent (from {from}) and not accepted: check it, or that it is this server's (--api-key-env names the variable to read, --api-key-file a file)."
        ),
        None => format!(
            "No API key was sent: export {}=<key> (--api-key-env names another variable; --api-key-file reads it from a file).",
            route.key_env
        ),
    }
}

/// A base URL to try, when one is worth suggesting.
fn url_fix(route: &Route) -> String {
    route
        .suggest_url
        .as_deref()
        .map(|u| format!(" The base URL has no /v1, where OpenAI-compatible servers serve their API: try --url {u}."))
        .unwrap_or_default()
}

/// A failure's detail with its usual cause.
fn with_hint(kind: FailureKind, detail: &str) -> String {
    match crate::metrics::failures::hint(kind, detail) {
        Some(h) => format!("{kind}: {} ({h})", quote(detail)),
        None => format!("{kind}: {}", quote(detail)),
    }
}

/// At most [`QUOTED`] characters of `text` on one line.
pub(super) fn quote(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > QUOTED {
        format!("{}…", flat.chars().take(QUOTED).collect::<String>())
    } else if flat.is_empty() {
        "an empty body".into()
    } else {
        flat
    }
}
