//! Snapshot tests of output (insta; tests/snapshots/).
//!
//! One test binary of the root package's tests (docs/design/testing.md#test-binaries): each
//! module below was a test binary of its own; they share one build and link.

mod serial;
#[macro_use]
mod snapshots_support;

mod snapshots_docs;
mod snapshots_explain;
mod snapshots_help;
mod snapshots_report;
mod snapshots_verdicts;
