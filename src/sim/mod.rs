//! The built-in simulated server: an OpenAI-compatible SSE endpoint with controllable timing.
//!
//! It is the default target when no `--url` is given, and the fixture of the test suite:
//! it records when it wrote every chunk (`truth`), so tests can check what the client
//! measured against what really happened.

pub mod config;
pub mod responder;
pub mod server;
pub mod truth;

pub use config::SimConfig;
pub use server::SimServer;
pub use truth::{TruthLog, TruthRecord};
