//! The recorded evidence read by the library: boot logs, checks, readers, the evidence home.
//!
//! One test binary of the root package's tests (docs/design/testing.md#test-binaries): each
//! module below was a test binary of its own; they share one build and link.

mod serial;

mod bootlog_evidence;
mod bootlog_memory;
mod bootlog_streaming;
mod bootlog_versions;
mod checks_evidence;
mod checks_field_second;
mod checks_gpu_clocks;
mod checks_kv_offload;
mod checks_llamacpp;
mod checks_window;
mod data_parallel;
mod evidence_home;
mod fuzz_regressions;
mod readers;
mod sweep_evidence;
mod t14_reserved_block;
