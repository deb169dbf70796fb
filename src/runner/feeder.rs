//! Builds requests ahead of time on its own thread, so sending never waits on prompt
//! generation, tokenization or JSON encoding.

use super::cpu::ThreadCpu;
use crate::client::apis::media::request_body_with_media;
use crate::client::apis::Prompt;
use crate::client::exchange::http_request;
use crate::client::PreparedRequest;
use crate::client::{RequestOptions, Target};
use crate::schedule::shard::Shard;
use crate::tokenizer::SharedTokenizer;
use crate::workload::datasets::Dataset;
use crate::workload::{Generator, RequestSpec, WorkloadSpec};
use std::sync::Arc;
use tokio::sync::{mpsc, Mutex};

/// The receiving end: sessions in workload order (one request each unless the workload is
/// multi-turn).
#[derive(Clone)]
pub struct Feed {
    rx: Arc<Mutex<mpsc::Receiver<Vec<PreparedRequest>>>>,
    /// Set when the workload could not produce a request (the feed then ends).
    pub error: Arc<std::sync::Mutex<Option<String>>>,
}

impl Feed {
    /// The next request (async; for closed-loop workers).
    pub async fn next(&self) -> Option<Vec<PreparedRequest>> {
        self.rx.lock().await.recv().await
    }

    /// The next request, blocking (for the open-loop dispatcher thread).
    pub fn next_blocking(&self) -> Option<Vec<PreparedRequest>> {
        self.rx.blocking_lock().blocking_recv()
    }
}

/// Sessions built ahead of sending for `load`: at least 512, and two waves of a closed
/// loop's streams (so when every stream ends at once, the next requests are ready and the
/// feeder refills at leisure), at most 8,192.
pub fn lookahead_for(load: crate::schedule::LoadPattern) -> usize {
    match load {
        crate::schedule::LoadPattern::Closed { concurrency } => (2 * concurrency as usize).max(512),
        _ => 512,
    }
    .min(8192)
}

#[cfg(test)]
impl Feed {
    /// A feed that reads from `rx` (unit tests).
    pub fn for_tests(rx: mpsc::Receiver<Vec<PreparedRequest>>) -> Self {
        Feed {
            rx: Arc::new(Mutex::new(rx)),
            error: Arc::new(std::sync::Mutex::new(None)),
        }
    }
}

/// Starts generating requests; stops when the feed is dropped. A workload error ends the
/// feed and is left in `Feed::error`.
///
/// With a `shard` (scale-out), the whole global sequence is still generated, so every
/// shard draws the same requests, but only the shard's ordinals are sent on; trace
/// arrival times are then made relative to the global first request, not the shard's.
#[allow(clippy::too_many_arguments)]
pub fn start(
    workload: &WorkloadSpec,
    dataset: Option<Arc<Dataset>>,
    seed: u64,
    prompt_salt: u64,
    target: &Target,
    opts: &RequestOptions,
    tokenizer: SharedTokenizer,
    cpu: ThreadCpu,
    shard: Option<Shard>,
    lookahead: usize,
) -> std::io::Result<Feed> {
    let lookahead = super::media::lookahead(workload, lookahead);
    let (tx, rx) = mpsc::channel::<Vec<PreparedRequest>>(lookahead.max(1));
    let workload = workload.clone();
    let target = target.clone();
    let opts = opts.clone();
    let error = Arc::new(std::sync::Mutex::new(None));
    let error_slot = error.clone();
    std::thread::Builder::new()
        .name("feeder".into())
        .spawn(move || {
            cpu.register_current();
            super::cpu::lower_current_thread_priority();
            let fail = |e: String| *error_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            let mut gen = match Generator::new(&workload, seed, tokenizer.as_ref(), dataset) {
                Ok(g) => g.with_prompt_salt(prompt_salt),
                Err(e) => return fail(e.to_string()),
            };
            let mut trace_base_ms: Option<f64> = None;
            loop {
                let mut session = match gen.next_session(tokenizer.as_ref()) {
                    Ok(s) => s,
                    Err(e) => return fail(e.to_string()),
                };
                if let Some(shard) = shard {
                    let Some(first) = session.first() else {
                        continue;
                    };
                    let base = *trace_base_ms.get_or_insert(first.arrival_ms.unwrap_or(0.0));
                    if !shard.owns(first.index) {
                        continue;
                    }
                    for spec in &mut session {
                        spec.arrival_ms = spec.arrival_ms.map(|a| a - base);
                    }
                }
                let prepared: Result<Vec<PreparedRequest>, String> = session
                    .into_iter()
                    .map(|spec| prepare(&workload, &target, &opts, spec))
                    .collect();
                let prepared = match prepared {
                    Ok(p) => p,
                    Err(e) => return fail(e),
                };
                if tx.blocking_send(prepared).is_err() {
                    return;
                }
            }
        })?;
    Ok(Feed {
        rx: Arc::new(Mutex::new(rx)),
        error,
    })
}

/// One request of the workload, ready to send: its body (with its class's overrides and
/// its images and audio, files read now) and the bytes of the target's API.
fn prepare(
    workload: &WorkloadSpec,
    target: &Target,
    opts: &RequestOptions,
    mut spec: RequestSpec,
) -> Result<PreparedRequest, String> {
    let overrides = workload.body_for(spec.class.as_deref());
    super::media::read_files(&mut spec.media)?;
    let body = request_body_with_media(
        target,
        &Prompt {
            messages: &spec.messages,
            max_tokens: spec.max_tokens,
            overrides: &overrides,
            agent: spec.agent.as_deref(),
        },
        opts,
        &spec.media,
    );
    Ok(PreparedRequest {
        body_bytes: body.len() as u64,
        media: crate::client::apis::media::counts(&spec.media),
        endpoint: target.endpoint,
        items: target.endpoint.items_of(spec.messages.len()),
        parser: crate::client::apis::parser_for_target(target),
        id: spec.index,
        class: spec.class,
        input_tokens: spec.input_tokens,
        max_tokens: spec.max_tokens,
        arrival_ms: spec.arrival_ms,
        session: spec.session.map(|s| (s, spec.turn)),
        think_ms: spec.think_ms,
        session_steps: spec.session_steps,
        branch: spec.branch,
        tool_ms: spec.tool_ms,
        http_bytes: http_request(target, &body, spec.index),
        ws_frame: crate::client::exchange::ws_frame(target, &body),
    })
}
