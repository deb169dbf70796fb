//! Integration tests: one binary (see STYLE.md), modules per area.

mod apis;
mod architecture;
mod browser;
mod client_at_scale;
mod common;
mod crash;
mod e2e_sim;
mod embeddings;
mod experience;
mod failures;
mod fault_matrix;
mod first_hour;
mod history;
mod hostile;
mod parquet_export;
mod real_apis;
mod real_first_hour;
mod real_server;
mod reports;
mod scaleout;
mod sim_engine;
mod telemetry;
mod trace_context;
mod trustworthy;
mod workloads;
