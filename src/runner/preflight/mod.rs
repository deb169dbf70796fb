//! Before any load: one real request of the configured API, judged.
//!
//! Readiness (`ready.rs`) knows that the server answers `GET /models`; it cannot know that the
//! server speaks *this API*. A web UI's HTML page, a missing or wrong API key, a route that
//! does not exist or a server that does not stream all look ready, and each used to cost a
//! whole warm-up of failures. One small request (a short prompt, [`MAX_TOKENS`] output
//! tokens), sent by the measuring client exactly as the load sends its own, tells them apart
//! in seconds. A failure that may pass (5xx, 429, a cut or garbled stream) is tried again, up
//! to [`ATTEMPTS`] times; anything else that is not an answer in the API's shape stops the
//! run before it starts, with the cause and the fix (exit status 2).
//!
//! The sender ([`Solo`]) is the warm-up probe's too: one request alone, outside any phase.
//!
//! Once the server is known to answer, the same short request says how fast it is
//! ([`Speed`]): once more alone (the server is no longer cold), then [`TOGETHER`] copies at
//! once, to see how many it serves in parallel. That is what the warm-up and the run's
//! planned length are estimated from before they start (`runner::plan`).

use crate::client::exchange::ExchangeLimits;
use crate::client::http::Connector;
use crate::client::{execute, Exchange, Pool, PreparedRequest};
use crate::clock::RunClock;
use crate::config::{Endpoint, RequestOptions, Target};
use crate::record::{FailureKind, Outcome, Phase};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tries of the test request before a failure that may pass is taken as the answer.
pub const ATTEMPTS: u32 = 3;
/// Output tokens the test request asks for.
pub const MAX_TOKENS: u32 = 8;
/// The longest the test request may take (`--timeout` when it is shorter).
pub const LONGEST: Duration = Duration::from_secs(120);
/// Characters of a server's answer quoted in a message.
const QUOTED: usize = 200;
/// Copies of the test request sent at once to see how many the server serves in parallel.
pub const TOGETHER: u32 = 8;

/// How fast the server answered the short test request: enough to estimate what a warm-up
/// or a run will cost before it starts (`runner::plan`). Measured on a prompt of a few
/// tokens and [`MAX_TOKENS`] output tokens, so the estimates it gives leave out the
/// workload's prefill and are rough; the progress line corrects them as the run goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    /// Time to the first token of one request alone, ms.
    pub ttft_ms: f64,
    /// Time per output token after the first, one request alone, ms.
    pub ms_per_token: f64,
    /// Requests' worth of work the server did at once when [`Speed::sent_together`] were
    /// sent together: their count × one request's time alone ÷ the time all of them took
    /// (1: one at a time; `sent_together`: all at once).
    pub served_together: f64,
    /// Requests sent together (1: not measured).
    pub sent_together: u32,
}

impl Speed {
    /// How long one request of `output_tokens` takes alone, ms.
    pub fn request_ms(&self, output_tokens: f64) -> f64 {
        (self.ttft_ms + (output_tokens - 1.0).max(0.0) * self.ms_per_token).max(1e-3)
    }

    /// How many of `streams` requests in flight the server serves at full speed: all of
    /// them when it served (nearly) every one of [`Speed::sent_together`] at once, else as
    /// many as it did.
    pub fn parallel(&self, streams: f64) -> f64 {
        let all_at_once = self.served_together >= 0.75 * f64::from(self.sent_together.max(1));
        let p = if all_at_once {
            streams
        } else {
            self.served_together.min(streams)
        };
        p.max(1.0)
    }

    /// Requests completed per second with `streams` in flight, each of `output_tokens`.
    pub fn rate_per_s(&self, streams: f64, output_tokens: f64) -> f64 {
        self.parallel(streams) * 1000.0 / self.request_ms(output_tokens)
    }
}

/// A request outside the load (a warm-up probe, the test request), built as the load builds
/// its own: the same route, headers, body options and parser.
pub fn prepared(
    target: &Target,
    opts: &RequestOptions,
    messages: &[(String, String)],
    max_tokens: u32,
    input_tokens: u32,
    id: u64,
) -> PreparedRequest {
    let prompt = crate::client::apis::Prompt {
        messages,
        max_tokens,
        overrides: &[],
    };
    let body = crate::client::apis::request_body(target, &prompt, opts);
    PreparedRequest {
        endpoint: target.endpoint,
        parser: crate::client::apis::parser_for_target(target),
        id,
        class: None,
        input_tokens,
        max_tokens,
        arrival_ms: None,
        session: None,
        think_ms: 0.0,
        http_bytes: crate::client::exchange::http_request(target, &body),
        ws_frame: crate::client::exchange::ws_frame(target, &body),
    }
}

/// Sends requests one at a time, alone (nothing else of the run in flight).
pub struct Solo<'a> {
    pub pool: &'a Pool,
    pub clock: &'a RunClock,
    /// The target's URL, for error messages.
    pub url: &'a str,
    pub limits: &'a ExchangeLimits,
    /// The longest one request may take; it then ends as a `timeout`.
    pub timeout: Duration,
}

impl Solo<'_> {
    /// Sends `req` and waits for its end; the exchange holds the record and what arrived.
    pub async fn send(&self, req: &PreparedRequest, phase: Phase) -> Exchange {
        let mut ex = Exchange::new(req, phase, None);
        let run = execute(&mut ex, self.pool, self.clock, req, self.url, self.limits);
        if tokio::time::timeout(self.timeout, run).await.is_err() {
            let detail = format!(
                "no complete answer within {:.0} s (--timeout)",
                self.timeout.as_secs_f64()
            );
            ex.fail_if_unfinished(FailureKind::Timeout, &detail, self.clock.now());
        }
        ex
    }
}

/// Where the test request went and where its credentials came from, for the messages.
#[derive(Debug, Clone, Default)]
pub struct Route {
    /// What was sent, e.g. `POST http://127.0.0.1:8000/v1/chat/completions`.
    pub request: String,
    /// The API, as reports name it.
    pub api: &'static str,
    /// A base URL worth trying when the route was not found (`/v1` added to a bare host).
    pub suggest_url: Option<String>,
    /// The variable an API key is read from (`--api-key-env`, or the API's default).
    pub key_env: String,
    /// Where the credentials sent came from; `None`: none were sent.
    pub key_sent: Option<String>,
}

impl Route {
    /// The route of `target`'s requests; `key_env` and `key_sent` as in [`Route`].
    pub fn of(target: &Target, key_env: &str, key_sent: Option<String>) -> Self {
        let request = match target.endpoint {
            Endpoint::Websocket | Endpoint::Grpc => {
                format!("{} at {}", target.endpoint.api_name(), target.url)
            }
            e => format!(
                "POST {}{}",
                target.url.root(),
                e.request_path(&target.url, None)
            ),
        };
        let openai_style = !target.endpoint.is_native()
            && !matches!(target.endpoint, Endpoint::Websocket | Endpoint::Grpc);
        Route {
            request,
            api: target.endpoint.api_name(),
            suggest_url: (openai_style && target.url.base_path.is_empty())
                .then(|| format!("{}/v1", target.url.root())),
            key_env: key_env.to_owned(),
            key_sent,
        }
    }
}

/// Sends the test request (again after a failure that may pass, [`ATTEMPTS`] in all), then
/// measures the server's [`Speed`] with it. `Err`: why the server cannot be used as
/// configured, and what to do; `Ok(None)`: usable, but the speed could not be measured.
pub async fn check(
    target: &Target,
    opts: &RequestOptions,
    limits: &ExchangeLimits,
    timeout: Duration,
    route: &Route,
) -> Result<Option<Speed>, String> {
    let connector =
        Connector::for_target(target, false).map_err(|e| format!("{}: {e}", route.request))?;
    let pool = Arc::new(Pool::new(connector));
    let clock = RunClock::start();
    let url = target.url.to_string();
    let solo = Solo {
        pool: &pool,
        clock: &clock,
        url: &url,
        limits,
        timeout: timeout.min(LONGEST),
    };
    let messages = [("user".to_owned(), "Say hello.".to_owned())];
    let req = prepared(target, opts, &messages, MAX_TOKENS, 3, u64::MAX - 100);
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        let ex = solo.send(&req, Phase::Probe).await;
        match judge(&Seen::of(&ex), route) {
            Judged::Usable => return Ok(measure_speed(&solo, &pool, &req).await),
            Judged::Unusable(why) => return Err(why),
            Judged::Passing(why) => last = why,
        }
        if attempt < ATTEMPTS {
            tokio::time::sleep(Duration::from_millis(250 * u64::from(attempt))).await;
        }
    }
    Err(format!(
        "{ATTEMPTS} test requests failed in a row before any load was sent; the last: {last}"
    ))
}

/// The test request once more alone, timed, then [`TOGETHER`] copies at once: the server's
/// [`Speed`]; `None` when the request alone did not stream a token.
async fn measure_speed(solo: &Solo<'_>, pool: &Arc<Pool>, req: &PreparedRequest) -> Option<Speed> {
    let start = Instant::now();
    let ex = solo.send(req, Phase::Probe).await;
    let alone = start.elapsed().as_secs_f64();
    let (ttft_ms, ms_per_token) = timings(&ex)?;
    let served = together(solo, pool, req, TOGETHER).await.map(|all| {
        (f64::from(TOGETHER) * alone / all.as_secs_f64().max(1e-9)).clamp(1.0, f64::from(TOGETHER))
    });
    Some(Speed {
        ttft_ms,
        ms_per_token,
        served_together: served.unwrap_or(1.0),
        sent_together: if served.is_some() { TOGETHER } else { 1 },
    })
}

/// TTFT and time per output token after the first of a completed request, ms.
fn timings(ex: &Exchange) -> Option<(f64, f64)> {
    let r = ex.record();
    if !r.outcome.is_ok() {
        return None;
    }
    let sent = r.sent_at?;
    let first = r.first_token_at().or_else(|| r.first_reasoning_at())?;
    let last = r.last_token_at().unwrap_or(first).max(first);
    let tokens = r
        .chunks
        .iter()
        .map(|c| c.tokens as usize)
        .sum::<usize>()
        .max(r.chunks.len());
    let ttft_ms = first.saturating_sub(sent) as f64 / 1e6;
    let per_token = if tokens > 1 {
        (last - first) as f64 / 1e6 / (tokens - 1) as f64
    } else {
        0.0
    };
    Some((ttft_ms, per_token))
}

/// Sends `k` copies of `req` at once; how long until all had ended, or `None` when one of
/// them did not complete.
async fn together(
    solo: &Solo<'_>,
    pool: &Arc<Pool>,
    req: &PreparedRequest,
    k: u32,
) -> Option<Duration> {
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..k {
        let pool = pool.clone();
        let (clock, url, limits, timeout) =
            (*solo.clock, solo.url.to_owned(), *solo.limits, solo.timeout);
        let req = PreparedRequest {
            id: u64::MAX - 200 - u64::from(i),
            ..req.clone()
        };
        set.spawn(async move {
            let solo = Solo {
                pool: &pool,
                clock: &clock,
                url: &url,
                limits: &limits,
                timeout,
            };
            let ex = solo.send(&req, Phase::Probe).await;
            ex.record().outcome.is_ok()
        });
    }
    let mut all_ok = true;
    while let Some(done) = set.join_next().await {
        all_ok &= done.unwrap_or(false);
    }
    all_ok.then(|| start.elapsed())
}

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
fn quote(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > QUOTED {
        format!("{}…", flat.chars().take(QUOTED).collect::<String>())
    } else if flat.is_empty() {
        "an empty body".into()
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route() -> Route {
        Route {
            request: "POST http://127.0.0.1:8000/chat/completions".into(),
            api: "OpenAI chat completions",
            suggest_url: Some("http://127.0.0.1:8000/v1".into()),
            key_env: "OPENAI_API_KEY".into(),
            key_sent: None,
        }
    }

    fn status(code: u16, content_type: &str, body: &str) -> Seen {
        Seen {
            status: Some(code),
            content_type: Some(content_type.into()),
            outcome: Outcome::failed(FailureKind::HttpStatus, format!("HTTP {code}: {body}")),
            ..Default::default()
        }
    }

    fn unusable(j: Judged) -> String {
        match j {
            Judged::Unusable(m) => m,
            other => panic!("expected unusable, got {other:?}"),
        }
    }

    #[test]
    fn a_streamed_answer_is_usable() {
        let seen = Seen {
            status: Some(200),
            content_type: Some("text/event-stream".into()),
            tokens: 8,
            finish_reason: true,
            ..Default::default()
        };
        assert_eq!(judge(&seen, &route()), Judged::Usable);
        // An empty answer that still ended in the API's shape (a model that stopped at once).
        let empty = Seen { tokens: 0, ..seen };
        assert_eq!(judge(&empty, &route()), Judged::Usable);
    }

    #[test]
    fn html_pages_are_named_with_their_title_whatever_the_status() {
        let page = "<!DOCTYPE html><html><head><title>Open WebUI</title></head></html>";
        let ok = Seen {
            status: Some(200),
            content_type: Some("text/html; charset=utf-8".into()),
            body_start: page.into(),
            outcome: Outcome::failed(FailureKind::StreamCut, "stream ended without its end event"),
            ..Default::default()
        };
        let m = unusable(judge(&ok, &route()));
        assert!(m.contains("HTML page (HTTP 200, \"Open WebUI\")"), "{m}");
        assert!(m.contains("try --url http://127.0.0.1:8000/v1"), "{m}");
        let m = unusable(judge(&status(501, "text/html", page), &route()));
        assert!(m.contains("HTML page (HTTP 501"), "{m}");
        // Known by its body even without the type.
        let m = unusable(judge(
            &status(404, "text/plain", "<html><body>x</body></html>"),
            &route(),
        ));
        assert!(m.contains("HTML page"), "{m}");
        // A gateway's error page may pass.
        assert!(matches!(
            judge(&status(502, "text/html", page), &route()),
            Judged::Passing(_)
        ));
    }

    #[test]
    fn refused_credentials_say_which_variable_sets_the_key() {
        let body = r#"{"error":{"message":"Invalid API Key","type":"authentication_error"}}"#;
        let m = unusable(judge(&status(401, "application/json", body), &route()));
        assert!(
            m.contains("HTTP 401") && m.contains("Invalid API Key"),
            "{m}"
        );
        assert!(m.contains("export OPENAI_API_KEY=<key>"), "{m}");
        let sent = Route {
            key_sent: Some("the variable MY_KEY".into()),
            ..route()
        };
        let m = unusable(judge(&status(403, "application/json", body), &sent));
        assert!(
            m.contains("from the variable MY_KEY") && m.contains("not accepted"),
            "{m}"
        );
    }

    #[test]
    fn a_missing_route_suggests_the_url_and_the_endpoints() {
        let m = unusable(judge(
            &status(404, "application/json", r#"{"error":"not found"}"#),
            &route(),
        ));
        assert!(
            m.contains("HTTP 404") && m.contains("try --url http://127.0.0.1:8000/v1"),
            "{m}"
        );
        assert!(m.contains("--endpoint") && m.contains("llamacpp"), "{m}");
        let no_v1_hint = Route {
            suggest_url: None,
            ..route()
        };
        let m = unusable(judge(&status(405, "application/json", "{}"), &no_v1_hint));
        assert!(!m.contains("try --url"), "{m}");
    }

    #[test]
    fn server_errors_may_pass_client_errors_do_not() {
        for code in [500, 503, 429, 408] {
            assert!(
                matches!(
                    judge(&status(code, "application/json", "{}"), &route()),
                    Judged::Passing(_)
                ),
                "{code}"
            );
        }
        let m = unusable(judge(
            &status(
                400,
                "application/json",
                r#"{"error":"model `x` not found"}"#,
            ),
            &route(),
        ));
        assert!(m.contains("HTTP 400") && m.contains("--model"), "{m}");
        let m = unusable(judge(&status(302, "text/plain", ""), &route()));
        assert!(m.contains("redirects"), "{m}");
    }

    #[test]
    fn a_json_document_or_another_body_is_not_a_stream() {
        let json = Seen {
            status: Some(200),
            content_type: Some("application/json".into()),
            body_start: r#"{"choices":[{"message":{"content":"hello"}}]}"#.into(),
            outcome: Outcome::failed(FailureKind::StreamCut, "stream ended without its end event"),
            ..Default::default()
        };
        let m = unusable(judge(&json, &route()));
        assert!(
            m.contains("one JSON document") && m.contains("stream: true"),
            "{m}"
        );
        assert!(
            m.contains("\"content\":\"hello\""),
            "the server's words: {m}"
        );
        let text = Seen {
            content_type: Some("text/plain".into()),
            body_start: "hello".into(),
            ..json.clone()
        };
        let m = unusable(judge(&text, &route()));
        assert!(
            m.contains("with text/plain") && m.contains("--endpoint"),
            "{m}"
        );
        // The API's own stream cut before its first token may pass.
        let cut = Seen {
            content_type: Some("text/event-stream".into()),
            ..json
        };
        assert!(matches!(judge(&cut, &route()), Judged::Passing(_)));
    }

    #[test]
    fn a_stream_in_another_shape_is_unusable() {
        let seen = Seen {
            status: Some(200),
            content_type: Some("text/event-stream".into()),
            ..Default::default()
        };
        let m = unusable(judge(&seen, &route()));
        assert!(m.contains("API's shape") && m.contains("--endpoint"), "{m}");
    }

    #[test]
    fn speed_says_how_many_requests_the_server_serves_at_once() {
        let all = Speed {
            ttft_ms: 100.0,
            ms_per_token: 10.0,
            served_together: 8.0,
            sent_together: 8,
        };
        assert_eq!(all.request_ms(101.0), 1100.0);
        // All eight sent together were served at once: every stream is taken at full speed.
        assert_eq!(all.parallel(32.0), 32.0);
        // A server of four slots: eight sent, about three requests' worth done at once.
        let slots = Speed {
            served_together: 3.2,
            ..all
        };
        assert_eq!(slots.parallel(32.0), 3.2);
        assert_eq!(slots.parallel(2.0), 2.0);
        assert!((slots.rate_per_s(32.0, 101.0) - 3.2 / 1.1).abs() < 1e-9);
        // Not measured: nothing is known against running every stream at once.
        let unmeasured = Speed {
            served_together: 1.0,
            sent_together: 1,
            ..all
        };
        assert_eq!(unmeasured.parallel(4.0), 4.0);
    }

    #[test]
    fn a_long_body_is_quoted_short_on_one_line() {
        let long = format!("line one\nline two {}", "x".repeat(500));
        let q = quote(&long);
        assert!(!q.contains('\n'));
        assert_eq!(q.chars().count(), QUOTED + 1);
        assert_eq!(quote("  "), "an empty body");
    }
}
