//! The answer of a non-generative API (embeddings, rerank), read whole: the body is bounded
//! by `--max-response-bytes`, parsed once when it has all come, and checked against the
//! items sent. The request's latency ends with the body's last byte; there is no first
//! token, and no chunk is recorded.

use super::body::{read_whole, BodyEnd};
use super::{Exchange, ExchangeLimits};
use crate::client::apis::answer;
use crate::client::http::{BodyDecoder, Conn};
use crate::client::pool::Pool;
use crate::client::Endpoint;
use crate::clock::RunClock;
use crate::record::{FailureKind, Outcome};

/// Reads a 200 answer of `endpoint` to its end and settles the record by it; gives the
/// connection back to the pool when the body ended cleanly.
#[allow(clippy::too_many_arguments)]
pub(super) async fn read_answer(
    ex: &mut Exchange,
    pool: &Pool,
    mut conn: Conn,
    mut decoder: BodyDecoder,
    keep_alive: bool,
    endpoint: Endpoint,
    clock: &RunClock,
    limits: &ExchangeLimits,
) {
    // The body is bounded by `--max-response-bytes` as it is read: keep all of it.
    let (end, body) = read_whole(&mut conn, &mut decoder, clock, limits, usize::MAX).await;
    let now = clock.now();
    let complete = match end {
        Ok(BodyEnd::Complete | BodyEnd::Marker) => true,
        Ok(BodyEnd::Eof) => decoder.ends_at_close(),
        Err(outcome) => {
            ex.draft.record.finished_at = now;
            ex.draft.record.outcome = outcome;
            return;
        }
    };
    if !complete {
        ex.draft.record.finished_at = now;
        ex.draft.record.outcome = Outcome::failed(
            FailureKind::StreamCut,
            format!("connection closed after {} bytes of the answer", body.len()),
        );
        return;
    }
    ex.finish_answer(endpoint, &body, now);
    if keep_alive && matches!(end, Ok(BodyEnd::Complete)) {
        pool.release(conn);
    }
}

impl Exchange {
    /// Settles a non-generative request from its whole answer, which ended at `at`: a
    /// success with the server's input-token count as `usage`, or a `protocol` failure
    /// saying why the answer is not one (not JSON, an error, fewer items than sent).
    pub fn finish_answer(&mut self, endpoint: Endpoint, body: &[u8], at: crate::clock::Nanos) {
        let r = &mut self.draft.record;
        r.finished_at = at;
        match answer::parse(endpoint, body, r.items) {
            Ok(a) => {
                r.response_id = a.response_id;
                if let Some(n) = a.prompt_tokens {
                    self.draft.usage_raw =
                        format!("{{\"prompt_tokens\":{n},\"completion_tokens\":0}}");
                }
                r.finish_reason = Some("stop".into());
                r.outcome = Outcome::Ok;
            }
            Err(e) => {
                let start = &body[..body.len().min(crate::record::draft::BODY_START_BYTES)];
                self.draft.body_start = start.to_vec();
                r.outcome = Outcome::failed(FailureKind::Protocol, e);
            }
        }
    }
}
