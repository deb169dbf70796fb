//! The simulator's gRPC service: KServe v2 / Triton `GRPCInferenceService` with
//! `ModelStreamInfer` (and `ServerReady`), for the client's `--endpoint grpc`.
//!
//! Written by hand as `tonic`'s code generator would write it (a `tower` service routing on
//! the method path), with the messages of `client::apis::kserve`. A call's first request
//! is turned into the same generation request the HTTP routes take, and answered by the
//! same engine, faults and truth: each streamed token write becomes one
//! `ModelStreamInferResponse` with `text_output`, the last one flagged
//! `triton_final_response`. The truth's write time is when the response is handed to
//! tonic, which then encodes and sends it.

use super::responder::{self, Responder};
use super::server::{grpc_writer, Request};
use super::wire::SimApi;
use crate::client::apis::kserve::{
    self, InferOutputTensor, InferParameter, InferTensorContents, ModelInferRequest,
    ModelInferResponse, ModelStreamInferResponse, ParameterChoice, ServerReadyRequest,
    ServerReadyResponse,
};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::{mpsc, watch};
use tonic::codegen::{http, BoxFuture, Service};
use tonic::{Status, Streaming};

type Item = Result<ModelStreamInferResponse, Status>;

/// Where a streamed answer's lines go: each becomes one response message.
pub struct GrpcSink {
    tx: mpsc::Sender<Item>,
    id: String,
}

impl GrpcSink {
    fn send_err() -> io::Error {
        io::Error::new(io::ErrorKind::BrokenPipe, "the gRPC client went away")
    }

    /// One line of the simulator's gRPC wire format (`sim::wire`): `{"text": ...}`,
    /// `{"final": true}`, `{"error": ...}`; anything else (a malformed-event fault) becomes
    /// an error response.
    pub async fn line(&mut self, line: &[u8]) -> io::Result<()> {
        #[derive(serde::Deserialize)]
        struct Line {
            #[serde(default)]
            text: Option<String>,
            #[serde(default, rename = "final")]
            last: bool,
            #[serde(default)]
            error: Option<String>,
            #[serde(default)]
            id: Option<String>,
        }
        let msg = match serde_json::from_slice::<Line>(line) {
            Ok(l) => {
                if let Some(id) = l.id {
                    self.id = id;
                }
                match l.error {
                    Some(e) => ModelStreamInferResponse {
                        error_message: e,
                        infer_response: None,
                    },
                    None => response(&self.id, l.text.as_deref(), l.last),
                }
            }
            Err(_) => ModelStreamInferResponse {
                error_message: format!("malformed response: {}", String::from_utf8_lossy(line)),
                infer_response: None,
            },
        };
        self.tx.send(Ok(msg)).await.map_err(|_| Self::send_err())
    }

    /// An error answer instead of a stream.
    pub async fn error(&mut self, message: &str) -> io::Result<()> {
        let msg = ModelStreamInferResponse {
            error_message: message.to_owned(),
            infer_response: None,
        };
        self.tx.send(Ok(msg)).await.map_err(|_| Self::send_err())
    }

    /// Ends the call with a status instead of a clean end (a cut stream).
    pub async fn abort(&mut self) -> io::Result<()> {
        let _ = self
            .tx
            .send(Err(Status::aborted("the simulator cut the stream")))
            .await;
        Ok(())
    }
}

/// One response message: optional text, optionally the last one.
fn response(id: &str, text: Option<&str>, last: bool) -> ModelStreamInferResponse {
    let mut r = ModelInferResponse {
        model_name: String::new(),
        model_version: "1".into(),
        id: id.to_owned(),
        ..Default::default()
    };
    if let Some(t) = text {
        r.outputs.push(InferOutputTensor {
            name: "text_output".into(),
            datatype: "BYTES".into(),
            shape: vec![1],
            parameters: HashMap::new(),
            contents: Some(InferTensorContents {
                bytes_contents: vec![t.as_bytes().to_vec()],
                ..Default::default()
            }),
        });
    }
    r.parameters.insert(
        "triton_final_response".into(),
        InferParameter {
            parameter_choice: Some(ParameterChoice::BoolParam(last)),
        },
    );
    ModelStreamInferResponse {
        error_message: String::new(),
        infer_response: Some(r),
    }
}

/// The generation request a `ModelInferRequest` stands for, as JSON the responder reads:
/// `prompt`, `max_tokens` and `ignore_eos` from the TensorRT-LLM or vLLM backend's inputs.
fn as_generation_request(m: &ModelInferRequest) -> serde_json::Value {
    let input = |name: &str| m.inputs.iter().find(|i| i.name == name)?.contents.as_ref();
    let text = input("text_input")
        .and_then(|c| c.bytes_contents.first())
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    let mut body = serde_json::json!({"model": m.model_name, "prompt": text});
    if let Some(n) = input("max_tokens").and_then(|c| c.int_contents.first()) {
        body["max_tokens"] = (*n).max(0).into();
    }
    if let Some(sp) = input("sampling_parameters").and_then(|c| c.bytes_contents.first()) {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(sp) {
            body["max_tokens"] = v["max_tokens"].clone();
            body["ignore_eos"] = v["ignore_eos"].clone();
        }
    }
    body
}

/// The `GRPCInferenceService` of the simulator.
#[derive(Clone)]
pub struct InferenceService {
    responder: Arc<Responder>,
}

impl tonic::server::NamedService for InferenceService {
    const NAME: &'static str = "inference.GRPCInferenceService";
}

struct StreamInfer(Arc<Responder>);

impl tonic::server::StreamingService<ModelInferRequest> for StreamInfer {
    type Response = ModelStreamInferResponse;
    type ResponseStream = tokio_stream::wrappers::ReceiverStream<Item>;
    type Future = BoxFuture<tonic::Response<Self::ResponseStream>, Status>;

    fn call(&mut self, request: tonic::Request<Streaming<ModelInferRequest>>) -> Self::Future {
        let r = self.0.clone();
        Box::pin(async move {
            let mut inbound = request.into_inner();
            let first = inbound
                .message()
                .await?
                .ok_or_else(|| Status::invalid_argument("no request message"))?;
            let received = std::time::Instant::now();
            let (tx, rx) = mpsc::channel(64);
            tokio::spawn(async move {
                let req = Request {
                    received,
                    method: "POST".into(),
                    path: kserve::MODEL_STREAM_INFER.into(),
                    headers: Vec::new(),
                    body: as_generation_request(&first).to_string().into_bytes(),
                    keep_alive: false,
                };
                let mut w = grpc_writer(GrpcSink {
                    tx,
                    id: String::new(),
                });
                let _ = responder::completion(&r, &req, &mut w, SimApi::Grpc).await;
            });
            Ok(tonic::Response::new(
                tokio_stream::wrappers::ReceiverStream::new(rx),
            ))
        })
    }
}

struct Ready;

impl tonic::server::UnaryService<ServerReadyRequest> for Ready {
    type Response = ServerReadyResponse;
    type Future = BoxFuture<tonic::Response<ServerReadyResponse>, Status>;
    fn call(&mut self, _: tonic::Request<ServerReadyRequest>) -> Self::Future {
        Box::pin(async { Ok(tonic::Response::new(ServerReadyResponse { ready: true })) })
    }
}

impl<B> Service<http::Request<B>> for InferenceService
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        match req.uri().path() {
            kserve::MODEL_STREAM_INFER => {
                let svc = StreamInfer(self.responder.clone());
                Box::pin(async move {
                    let codec = tonic_prost::ProstCodec::<
                        ModelStreamInferResponse,
                        ModelInferRequest,
                    >::default();
                    Ok(tonic::server::Grpc::new(codec).streaming(svc, req).await)
                })
            }
            kserve::SERVER_READY => Box::pin(async move {
                let codec =
                    tonic_prost::ProstCodec::<ServerReadyResponse, ServerReadyRequest>::default();
                Ok(tonic::server::Grpc::new(codec).unary(Ready, req).await)
            }),
            _ => Box::pin(async move {
                Ok(
                    Status::unimplemented("the simulator serves ModelStreamInfer and ServerReady")
                        .into_http(),
                )
            }),
        }
    }
}

/// Serves gRPC on `listener` until `stop` changes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    responder: Arc<Responder>,
    mut stop: watch::Receiver<bool>,
) {
    use tokio_stream::StreamExt;
    // No Nagle delay on the token writes, as on the HTTP port.
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener).map(|s| {
        if let Ok(s) = &s {
            let _ = s.set_nodelay(true);
        }
        s
    });
    let _ = tonic::transport::Server::builder()
        .initial_connection_window_size(Some(64 << 20))
        .initial_stream_window_size(Some(4 << 20))
        .add_service(InferenceService { responder })
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.changed().await;
        })
        .await;
}
