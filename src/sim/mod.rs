//! A simulated vLLM server (`inferlint sim serve`) and load client (`inferlint sim bench`).
//!
//! It exists so that everything inferlint promises about a real server can be tested on a
//! machine without a GPU: the same process tree (an API server and a `VLLM::EngineCore` child,
//! `VLLM::Worker_TP{n}` grandchildren with `--tp`), the same boot-log lines and /metrics
//! exposition of the chosen release, the same scheduling arithmetic (paged KV blocks, a reserved
//! null block, silent preemption) and the same shutdown and orphan behaviour.
//!
//! The simulator shares no code with the checks: they judge its output as they would judge a
//! real server's.

pub mod api;
pub mod bench;
pub mod config;
pub mod engine;
pub mod expo;
pub mod failures;
pub mod gpu;
pub mod logline;
pub mod metrics;
pub mod os;
pub mod proto;
pub mod sched;
