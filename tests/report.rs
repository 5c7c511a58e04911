//! The report: the page, its model, its lines, per engine, from a live run.
//!
//! One test binary of the root package's tests (docs/design/testing.md#test-binaries): each
//! module below was a test binary of its own; they share one build and link.

mod report_support;
mod serial;

mod report_browser;
mod report_cli;
mod report_engines;
mod report_lines;
mod report_model;
mod report_sweep;
mod report_vllm_live;
