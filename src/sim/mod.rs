//! The built-in simulated serving engine: an SSE server speaking every API the client drives
//! (OpenAI chat, completions and responses, Anthropic messages, llama.cpp `/completion`, TGI
//! `/generate_stream`, SGLang `/generate`: `wire`), whose answers come from a real-time
//! model of a continuous-batching engine (`engine`), or from fixed timings.
//!
//! It is the default target when no `--url` is given, and the fixture of the test suite:
//! it records what really happened to every request (`truth`: queue wait, token times,
//! chunk writes, preemptions, cache hits), so tests can check what the client measured.

pub mod capacity;
pub mod config;
pub mod engine;
pub mod grpc;
pub mod responder;
pub mod server;
pub mod truth;
pub mod websocket;
pub mod wire;

pub use config::{Faults, FixedTiming, SimConfig, VisionModel, PRESETS};
pub use server::SimServer;
pub use truth::{TruthLog, TruthRecord};
