//! The KServe v2 / Triton gRPC inference protocol (`--endpoint grpc`): the messages of
//! `GRPCInferenceService.ModelStreamInfer`, the request built from a prompt, and what a
//! streamed response says.
//!
//! The message types are written here by hand with `prost`'s derive (the subset a text
//! stream needs, field numbers as in the protocol), so no `protoc` or build script is
//! needed. Origin: the KServe Open Inference Protocol v2 (`grpc_predict_v2.proto`, KServe,
//! Apache-2.0) as extended by Triton Inference Server with the bidirectional
//! `ModelStreamInfer` call (`grpc_service.proto` in triton-inference-server/common,
//! BSD-3-Clause). Unknown fields a server sends are skipped by prost.
//!
//! What goes in depends on the model behind Triton: the TensorRT-LLM ensemble takes
//! `text_input`, `max_tokens`, `stream` (and `temperature`); the vLLM backend takes
//! `text_input`, `stream` and a JSON `sampling_parameters` string. Both answer with
//! `text_output` (the new text of each response) and mark the last response with the
//! `triton_final_response` parameter.

use super::dialect::{dialect, OptionValue};
use super::event::ApiEvent;
use super::Prompt;
use crate::client::{Endpoint, RequestOptions};
use std::borrow::Cow;
use std::collections::HashMap;

/// The gRPC method of a streamed inference.
pub const MODEL_STREAM_INFER: &str = "/inference.GRPCInferenceService/ModelStreamInfer";
/// The gRPC method that says whether the server is ready.
pub const SERVER_READY: &str = "/inference.GRPCInferenceService/ServerReady";

/// A parameter value (`InferParameter`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferParameter {
    #[prost(oneof = "ParameterChoice", tags = "1, 2, 3, 4, 5")]
    pub parameter_choice: Option<ParameterChoice>,
}

/// `InferParameter.parameter_choice`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ParameterChoice {
    #[prost(bool, tag = "1")]
    BoolParam(bool),
    #[prost(int64, tag = "2")]
    Int64Param(i64),
    #[prost(string, tag = "3")]
    StringParam(String),
    #[prost(double, tag = "4")]
    DoubleParam(f64),
    #[prost(uint64, tag = "5")]
    Uint64Param(u64),
}

/// Tensor contents by type (`InferTensorContents`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferTensorContents {
    #[prost(bool, repeated, tag = "1")]
    pub bool_contents: Vec<bool>,
    #[prost(int32, repeated, tag = "2")]
    pub int_contents: Vec<i32>,
    #[prost(int64, repeated, tag = "3")]
    pub int64_contents: Vec<i64>,
    #[prost(uint32, repeated, tag = "4")]
    pub uint_contents: Vec<u32>,
    #[prost(uint64, repeated, tag = "5")]
    pub uint64_contents: Vec<u64>,
    #[prost(float, repeated, tag = "6")]
    pub fp32_contents: Vec<f32>,
    #[prost(double, repeated, tag = "7")]
    pub fp64_contents: Vec<f64>,
    #[prost(bytes = "vec", repeated, tag = "8")]
    pub bytes_contents: Vec<Vec<u8>>,
}

/// An input tensor (`ModelInferRequest.InferInputTensor`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferInputTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub datatype: String,
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, optional, tag = "5")]
    pub contents: Option<InferTensorContents>,
}

/// `ModelInferRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferRequest {
    #[prost(string, tag = "1")]
    pub model_name: String,
    #[prost(string, tag = "2")]
    pub model_version: String,
    #[prost(string, tag = "3")]
    pub id: String,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, repeated, tag = "5")]
    pub inputs: Vec<InferInputTensor>,
}

/// An output tensor (`ModelInferResponse.InferOutputTensor`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferOutputTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub datatype: String,
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, optional, tag = "5")]
    pub contents: Option<InferTensorContents>,
}

/// `ModelInferResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferResponse {
    #[prost(string, tag = "1")]
    pub model_name: String,
    #[prost(string, tag = "2")]
    pub model_version: String,
    #[prost(string, tag = "3")]
    pub id: String,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, repeated, tag = "5")]
    pub outputs: Vec<InferOutputTensor>,
    /// Output data in binary form, one entry per output in order (BYTES elements each
    /// prefixed by a 4-byte little-endian length).
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub raw_output_contents: Vec<Vec<u8>>,
}

/// `ModelStreamInferResponse`: an error or a response.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelStreamInferResponse {
    #[prost(string, tag = "1")]
    pub error_message: String,
    #[prost(message, optional, tag = "2")]
    pub infer_response: Option<ModelInferResponse>,
}

/// `ServerReadyRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerReadyRequest {}

/// `ServerReadyResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerReadyResponse {
    #[prost(bool, tag = "1")]
    pub ready: bool,
}

/// Which Triton backend's inputs to send (`--grpc-backend`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum GrpcBackend {
    /// The TensorRT-LLM ensemble: `text_input`, `max_tokens`, `stream`, `temperature`.
    #[default]
    TensorrtLlm,
    /// Triton's vLLM backend: `text_input`, `stream`, `sampling_parameters` (JSON),
    /// `exclude_input_in_output`.
    Vllm,
}

fn tensor(name: &str, datatype: &str, contents: InferTensorContents) -> InferInputTensor {
    InferInputTensor {
        name: name.into(),
        datatype: datatype.into(),
        shape: vec![1, 1],
        parameters: HashMap::new(),
        contents: Some(contents),
    }
}

/// A sampling option as a tensor typed by its value: INT32, FP32 or BOOL.
fn option_tensor(name: &str, value: OptionValue) -> InferInputTensor {
    let (datatype, contents) = match value {
        OptionValue::Int(v) => (
            "INT32",
            InferTensorContents {
                int_contents: vec![v.min(i32::MAX as u32) as i32],
                ..Default::default()
            },
        ),
        OptionValue::Float(v) => (
            "FP32",
            InferTensorContents {
                fp32_contents: vec![v as f32],
                ..Default::default()
            },
        ),
        OptionValue::Bool(v) => (
            "BOOL",
            InferTensorContents {
                bool_contents: vec![v],
                ..Default::default()
            },
        ),
    };
    tensor(name, datatype, contents)
}

/// The streamed inference request for `prompt` (its messages joined as raw text; no chat
/// template). `request_id` lets logs be joined.
pub fn request(
    backend: GrpcBackend,
    model: &str,
    request_id: &str,
    prompt: &Prompt<'_>,
    opts: &RequestOptions,
) -> ModelInferRequest {
    let text = tensor(
        "text_input",
        "BYTES",
        InferTensorContents {
            bytes_contents: vec![prompt.joined_text().into_bytes()],
            ..Default::default()
        },
    );
    let stream = tensor(
        "stream",
        "BOOL",
        InferTensorContents {
            bool_contents: vec![true],
            ..Default::default()
        },
    );
    let mut inputs = vec![text, stream];
    let sampling = dialect(Endpoint::Grpc, backend).sampling(prompt.max_tokens, opts);
    match backend {
        // Each sampling option is a tensor of its own.
        GrpcBackend::TensorrtLlm => {
            inputs.extend(sampling.into_iter().map(|(name, v)| option_tensor(name, v)))
        }
        // The sampling options as one JSON object, in one BYTES tensor.
        GrpcBackend::Vllm => {
            let params: serde_json::Map<String, serde_json::Value> = sampling
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value.json()))
                .collect();
            let params = serde_json::Value::Object(params);
            inputs.push(tensor(
                "sampling_parameters",
                "BYTES",
                InferTensorContents {
                    bytes_contents: vec![params.to_string().into_bytes()],
                    ..Default::default()
                },
            ));
            inputs.push(tensor(
                "exclude_input_in_output",
                "BOOL",
                InferTensorContents {
                    bool_contents: vec![true],
                    ..Default::default()
                },
            ));
        }
    }
    ModelInferRequest {
        model_name: model.into(),
        model_version: String::new(),
        id: request_id.into(),
        parameters: HashMap::new(),
        inputs,
    }
}

/// The first BYTES element of output `name`, from `contents` or from the raw form.
fn bytes_output<'a>(r: &'a ModelInferResponse, name: &str) -> Option<&'a [u8]> {
    let i = r.outputs.iter().position(|o| o.name == name)?;
    if let Some(c) = r.outputs[i].contents.as_ref() {
        if let Some(b) = c.bytes_contents.first() {
            return Some(b);
        }
    }
    let raw = r.raw_output_contents.get(i)?;
    let len = u32::from_le_bytes(raw.get(..4)?.try_into().ok()?) as usize;
    raw.get(4..4 + len)
}

/// What one streamed response says, borrowing its text.
pub fn event(msg: &ModelStreamInferResponse) -> ApiEvent<'_> {
    let mut out = ApiEvent::default();
    if !msg.error_message.is_empty() {
        out.error = Some(msg.error_message.clone());
        return out;
    }
    let Some(r) = msg.infer_response.as_ref() else {
        return out;
    };
    if !r.id.is_empty() {
        out.id = Some(Cow::Borrowed(&r.id));
    }
    out.content = bytes_output(r, "text_output").map(String::from_utf8_lossy);
    let final_response = matches!(
        r.parameters
            .get("triton_final_response")
            .and_then(|p| p.parameter_choice.as_ref()),
        Some(ParameterChoice::BoolParam(true))
    );
    if final_response {
        out.done = true;
        out.finish_reason = Some(Cow::Borrowed("stop"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn response(text: Option<&str>, last: bool, raw: bool) -> ModelStreamInferResponse {
        let mut r = ModelInferResponse {
            id: "r1".into(),
            ..Default::default()
        };
        if let Some(t) = text {
            let mut out = InferOutputTensor {
                name: "text_output".into(),
                datatype: "BYTES".into(),
                shape: vec![1],
                ..Default::default()
            };
            if raw {
                let mut b = (t.len() as u32).to_le_bytes().to_vec();
                b.extend_from_slice(t.as_bytes());
                r.raw_output_contents.push(b);
            } else {
                out.contents = Some(InferTensorContents {
                    bytes_contents: vec![t.as_bytes().to_vec()],
                    ..Default::default()
                });
            }
            r.outputs.push(out);
        }
        if last {
            r.parameters.insert(
                "triton_final_response".into(),
                InferParameter {
                    parameter_choice: Some(ParameterChoice::BoolParam(true)),
                },
            );
        }
        ModelStreamInferResponse {
            error_message: String::new(),
            infer_response: Some(r),
        }
    }

    #[test]
    fn responses_read_text_end_and_errors() {
        for raw in [false, true] {
            let m = response(Some(" the"), false, raw);
            // Through the wire and back, as a server sends it.
            let m = ModelStreamInferResponse::decode(m.encode_to_vec().as_slice()).unwrap();
            let e = event(&m);
            assert_eq!(
                (e.content.as_deref(), e.done, e.id.as_deref()),
                (Some(" the"), false, Some("r1"))
            );
        }
        let last = response(None, true, false);
        let e = event(&last);
        assert!(e.done && e.content.is_none());
        assert_eq!(e.finish_reason.as_deref(), Some("stop"));
        let failed = ModelStreamInferResponse {
            error_message: "model not found".into(),
            infer_response: None,
        };
        let e = event(&failed);
        assert_eq!(e.error.as_deref(), Some("model not found"));
    }

    #[test]
    fn requests_per_backend() {
        let msgs = vec![("user".to_owned(), "hi".to_owned())];
        let prompt = Prompt {
            messages: &msgs,
            max_tokens: 7,
            overrides: &[],
            agent: None,
        };
        let opts = RequestOptions::default();
        let r = request(GrpcBackend::TensorrtLlm, "ensemble", "q1", &prompt, &opts);
        let names: Vec<&str> = r.inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["text_input", "stream", "max_tokens", "temperature"]);
        assert_eq!(r.inputs[2].contents.as_ref().unwrap().int_contents, [7]);
        assert_eq!(
            r.inputs[0].contents.as_ref().unwrap().bytes_contents,
            [b"hi".to_vec()]
        );
        let r = request(GrpcBackend::Vllm, "m", "q1", &prompt, &opts);
        let sp: serde_json::Value =
            serde_json::from_slice(&r.inputs[2].contents.as_ref().unwrap().bytes_contents[0])
                .unwrap();
        assert_eq!(
            sp,
            serde_json::json!({"max_tokens": 7, "temperature": 0.0, "ignore_eos": true})
        );
        assert_eq!(r.inputs[3].name, "exclude_input_in_output");
    }
}
