//! Property tests: blocks, counters, readers, redaction, bystanders.
//!
//! One test binary of the root package's tests (docs/design/testing.md#test-binaries): each
//! module below was a test binary of its own; they share one build and link.

mod proptest_support;
mod run_support;
mod serial;

mod proptest_blocks;
mod proptest_bystanders;
mod proptest_counters;
mod proptest_readers;
mod proptest_redact;
mod proptest_series_columns;
