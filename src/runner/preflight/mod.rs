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
//!
//! What an answer means (usable, a failure that may pass, or unusable, and why) is judged in
//! `verdict`.

#[cfg(test)]
mod tests;
mod verdict;

use crate::client::exchange::ExchangeLimits;
use crate::client::http::Connector;
use crate::client::{Endpoint, RequestOptions, Target};
use crate::client::{Exchange, Pool, PreparedRequest};
use crate::clock::RunClock;
use crate::record::Phase;
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use verdict::{judge, Judged, Seen};

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

use crate::record::speed::Speed;

pub use super::probe::{prepared, Solo};

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
    // Two texts: rerank's query and one document (an empty document list is refused).
    let messages = [
        ("user".to_owned(), "Say hello.".to_owned()),
        ("user".to_owned(), "Say hello.".to_owned()),
    ];
    let texts = if target.endpoint == crate::client::Endpoint::Rerank {
        2
    } else {
        1
    };
    let req = prepared(
        target,
        opts,
        &messages[..texts],
        MAX_TOKENS,
        3,
        u64::MAX - 100,
    );
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
    // Only this request's connection counts, not one a proxy closed after an earlier try.
    let closed_before = pool.closed_by_server();
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
        // The second request alone went out on the first one's connection, if the server
        // kept it.
        closes_connections: pool.closed_by_server() > closed_before,
    })
}

/// TTFT and time per output token after the first of a completed request, ms.
fn timings(ex: &Exchange) -> Option<(f64, f64)> {
    let r = ex.record();
    if !r.outcome.is_ok() {
        return None;
    }
    let sent = r.submitted_at()?;
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
