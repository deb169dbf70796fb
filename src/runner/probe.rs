//! Requests sent alone, outside the load: the preflight's test request, the warm-up's
//! probes and the prefill profile's isolated requests. They are built as the load builds its
//! own (the same route, headers, body options and parser) and sent one at a time through
//! [`Solo`], so the three differ only in what they ask and what they read from the answer.

use super::phase::Shared;
use crate::client::exchange::ExchangeLimits;
use crate::client::{execute, Exchange, Pool, PreparedRequest};
use crate::client::{RequestOptions, Target};
use crate::clock::RunClock;
use crate::record::{FailureKind, Phase};
use crate::tokenizer::SharedTokenizer;
use crate::workload::{Generator, RequestSpec, WorkloadSpec};
use std::time::Duration;

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
        agent: None,
    };
    let body = crate::client::apis::request_body(target, &prompt, opts);
    PreparedRequest {
        body_bytes: body.len() as u64,
        media: Default::default(),
        endpoint: target.endpoint,
        items: target.endpoint.items_of(messages.len()),
        parser: crate::client::apis::parser_for_target(target),
        id,
        class: None,
        input_tokens,
        max_tokens,
        arrival_ms: None,
        session: None,
        think_ms: 0.0,
        session_steps: 0,
        branch: 0,
        tool_ms: 0.0,
        http_bytes: crate::client::exchange::http_request(target, &body, id),
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

impl<'a> Solo<'a> {
    /// Sends with the run's own pool, clock, limits and `--timeout`.
    pub fn of(shared: &'a Shared) -> Self {
        Self {
            pool: &shared.pool,
            clock: &shared.clock,
            url: &shared.url,
            limits: &shared.limits,
            timeout: shared.timeout,
        }
    }
}

/// The first request `spec` makes with `seed`, built off the runtime (a server tokenizer
/// makes blocking calls); `None` when the workload cannot make one.
pub async fn one_request(
    spec: WorkloadSpec,
    seed: u64,
    tokenizer: &SharedTokenizer,
) -> Option<RequestSpec> {
    let tok = tokenizer.clone();
    tokio::task::spawn_blocking(move || {
        Generator::new(&spec, seed, tok.as_ref(), None)
            .and_then(|mut g| g.next_request(tok.as_ref()))
    })
    .await
    .ok()?
    .ok()
}
