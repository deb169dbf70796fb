//! Integration tests: one binary (see STYLE.md), modules per area.

mod common;
mod e2e_sim;
mod failures;
mod real_server;
mod sim_engine;
