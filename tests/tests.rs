//! Integration tests: one binary (see STYLE.md), modules per area.

mod common;
mod e2e_sim;
mod experience;
mod failures;
mod first_hour;
mod real_server;
mod sim_engine;
mod telemetry;
mod trustworthy;
mod workloads;
