//! `inferlint run` end to end: on the simulator, mocks and hostile servers; deaths, neighbours, the proxy, the window.
//!
//! One test binary of the root package's tests (docs/design/testing.md#test-binaries): each
//! module below was a test binary of its own; they share one build and link.

mod run_support;
mod serial;
mod sim_support;

mod run_deaths;
mod run_dp;
mod run_hostile;
mod run_mock;
mod run_neighbours;
mod run_proxy;
mod run_sim;
mod run_sweep;
mod run_window;
mod run_window_second;
mod serial_turns;
