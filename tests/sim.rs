//! The simulated servers and load clients, and `inferlint demo`.
//!
//! One test binary of the root package's tests (docs/design/testing.md#test-binaries): each
//! module below was a test binary of its own; they share one build and link.

mod run_support;
mod serial;
mod sim_support;

mod demo;
mod sim_bench;
mod sim_dp;
mod sim_http;
mod sim_metrics;
mod sim_process;
mod sim_reset;
mod sim_sglang;
mod sim_trtllm;
