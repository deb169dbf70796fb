//! gRPC streaming (`--endpoint grpc`): one `ModelStreamInfer` call per request over a shared
//! HTTP/2 channel, each streamed response timed as it is handed to the request's task.
//!
//! The draft recommends gRPC streaming for engine-level testing (Triton, TensorRT-LLM).
//! Transport is `tonic` (HTTP/2 over plain TCP, h2c): its connection task reads the socket
//! and passes decoded messages to the request through a channel, so a message's arrival
//! time here is when the request's task received it, not the kernel's receive stamp as for
//! SSE and WebSocket; `servebench selfbench` measures what that costs. Connection set-up
//! is paid by the first request and recorded in its `connect_ns`; requests share the one
//! connection (HTTP/2 streams), as gRPC clients do.

use super::apis::kserve::{self, ModelInferRequest, ModelStreamInferResponse};
use super::exchange::{Exchange, ExchangeLimits, PreparedRequest};
use crate::client::BaseUrl;
use crate::clock::{Nanos, RunClock};
use crate::record::{FailureKind, Outcome};
use prost::Message;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::Streaming;

/// A channel to the target, connecting on first use (plain HTTP/2; `https` is refused when
/// the run is configured).
pub fn channel(url: &BaseUrl) -> Result<Channel, String> {
    let endpoint = tonic::transport::Endpoint::from_shared(url.root())
        .map_err(|e| format!("{url} is not a gRPC address: {e}"))?
        .tcp_nodelay(true)
        // Hundreds of streams share the connection: HTTP/2's default 64 KiB receive windows
        // would make the server wait for window updates, which the client would then
        // measure as server latency.
        .initial_connection_window_size(Some(64 << 20))
        .initial_stream_window_size(Some(4 << 20));
    Ok(endpoint.connect_lazy())
}

/// Asks `ServerReady`: `Ok(true)` when the server says it is ready.
pub async fn server_ready(url: &BaseUrl) -> Result<bool, String> {
    use kserve::{ServerReadyRequest, ServerReadyResponse};
    let mut grpc = tonic::client::Grpc::new(channel(url)?);
    grpc.ready()
        .await
        .map_err(|e| format!("could not reach {url} over gRPC: {e}"))?;
    let codec = tonic_prost::ProstCodec::<ServerReadyRequest, ServerReadyResponse>::default();
    let r = grpc
        .unary(
            tonic::Request::new(ServerReadyRequest {}),
            PathAndQuery::from_static(kserve::SERVER_READY),
            codec,
        )
        .await
        .map_err(|s| {
            format!(
                "{url} answered ServerReady with {:?}: {}",
                s.code(),
                s.message()
            )
        })?;
    Ok(r.into_inner().ready)
}

/// The call's failure status as a record outcome.
fn status_outcome(s: &tonic::Status, during: &str) -> Outcome {
    use tonic::Code;
    let kind = match s.code() {
        Code::Unavailable => FailureKind::Connect,
        Code::DeadlineExceeded => FailureKind::Timeout,
        Code::Cancelled => FailureKind::Cancelled,
        Code::Aborted => FailureKind::StreamCut,
        Code::Internal | Code::Unknown | Code::DataLoss => FailureKind::Protocol,
        _ => FailureKind::HttpStatus,
    };
    Outcome::failed(
        kind,
        format!("gRPC {during}: {:?}: {}", s.code(), s.message()),
    )
}

/// Runs one streamed inference. `req.http_bytes` holds the encoded `ModelInferRequest`.
pub async fn execute(
    ex: &mut Exchange,
    channel: &Channel,
    clock: &RunClock,
    req: &PreparedRequest,
    limits: &ExchangeLimits,
) {
    if ex.draft.record.queued_at == 0 {
        ex.draft.record.queued_at = clock.now();
    }
    let Some((mut stream, sent)) = open_stream(ex, channel, clock, req, limits).await else {
        return;
    };
    ex.draft.record.first_byte_at = Some(clock.now());
    ex.draft.record.http_status = Some(200);
    let first_token = limits.first_token.map(|d| clock.instant_at(sent) + d);
    loop {
        let r = &ex.draft.record;
        let waiting = r.chunks.is_empty() && r.reasoning_chunks.is_empty();
        let next = match first_token.filter(|_| waiting) {
            Some(deadline) => {
                match tokio::time::timeout_at(deadline.into(), stream.message()).await {
                    Ok(m) => m,
                    Err(_) => {
                        ex.fail_if_unfinished(
                            FailureKind::Timeout,
                            "no token within the first-token timeout (--first-token-timeout)",
                            clock.now(),
                        );
                        return;
                    }
                }
            }
            None => stream.message().await,
        };
        let at = clock.now();
        match next {
            Ok(Some(m)) => match ex.apply(kserve::event(&m), at) {
                Ok(true) => return ex.finish_stream(at),
                Ok(false) => {}
                Err(o) => {
                    ex.draft.record.finished_at = at;
                    ex.draft.record.outcome = o;
                    return;
                }
            },
            // The server ended the call: complete only if it marked the final response.
            Ok(None) => return ex.finish_stream(at),
            Err(s) => {
                ex.draft.record.finished_at = at;
                ex.draft.record.outcome = status_outcome(&s, "stream failed");
                return;
            }
        }
    }
}

/// Makes the call (the channel ready, the request sent) and waits for the response stream,
/// within `--first-byte-timeout` when set: the stream, and when the request was sent.
/// `None` when that failed (the record then says why).
async fn open_stream(
    ex: &mut Exchange,
    channel: &Channel,
    clock: &RunClock,
    req: &PreparedRequest,
    limits: &ExchangeLimits,
) -> Option<(Streaming<ModelStreamInferResponse>, Nanos)> {
    let msg = match ModelInferRequest::decode(req.http_bytes.as_slice()) {
        Ok(m) => m,
        Err(e) => {
            ex.draft.record.finished_at = clock.now();
            ex.draft.record.outcome =
                Outcome::failed(FailureKind::Protocol, format!("bad prepared request: {e}"));
            return None;
        }
    };
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    if let Err(e) = grpc.ready().await {
        let now = clock.now();
        ex.draft.record.connect_ns = now - ex.draft.record.queued_at;
        ex.draft.record.finished_at = now;
        ex.draft.record.outcome = Outcome::failed(
            FailureKind::Connect,
            format!("could not open the gRPC channel: {e}"),
        );
        return None;
    }
    let sent = clock.now();
    ex.draft.record.sent_at = Some(sent);
    ex.draft.record.connect_ns = sent - ex.draft.record.queued_at;
    let codec = tonic_prost::ProstCodec::<ModelInferRequest, ModelStreamInferResponse>::default();
    let path = PathAndQuery::from_static(kserve::MODEL_STREAM_INFER);
    let call = grpc.streaming(tonic::Request::new(tokio_stream::once(msg)), path, codec);
    let first_byte = limits.first_byte.map(|d| clock.instant_at(sent) + d);
    let response = match first_byte {
        Some(deadline) => match tokio::time::timeout_at(deadline.into(), call).await {
            Ok(r) => r,
            Err(_) => {
                ex.fail_if_unfinished(
                    FailureKind::Timeout,
                    "no response within the first-byte timeout (--first-byte-timeout)",
                    clock.now(),
                );
                return None;
            }
        },
        None => call.await,
    };
    match response {
        Ok(r) => Some((r.into_inner(), sent)),
        Err(s) => {
            ex.draft.record.finished_at = clock.now();
            ex.draft.record.outcome = status_outcome(&s, "call refused");
            None
        }
    }
}
