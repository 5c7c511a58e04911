//! A simulated vLLM server (`inferlint sim serve`) and load client (`inferlint sim bench`).
//!
//! It exists so that everything inferlint promises about a real server can be tested on a
//! machine without a GPU: the same process tree (an API server and a `VLLM::EngineCore` child,
//! `VLLM::Worker_TP{n}` grandchildren with `--tensor-parallel-size`, one simulated GPU each; with
//! `--data-parallel-size N` a `VLLM::DPCoordinator` and N `VLLM::EngineCore_DP{i}`, each with its
//! own KV pool, GPU and `engine`-labelled series), the same boot-log lines and /metrics
//! exposition of the chosen release (0.28, 0.30, 0.33), the same scheduling arithmetic (paged KV
//! blocks, a reserved null block, silent preemption) and the same shutdown and orphan behaviour.
//!
//! The simulator shares no code with the checks: they judge its output as they would judge a
//! real server's.
//!
//! The seed's story, reproduced (requested 32, about 10 run, silent preemptions, a ceiling that
//! falls from 10 to 8 as outputs grow, 784-token blocks, the null block, an orphaned engine):
//!
//! ```text
//! inferlint sim serve qwen38 --hybrid --num-gpu-blocks-override 43 --max-model-len 16384 \
//!     --max-num-seqs 32 --tokens-per-s 150 --orphan-engine
//! inferlint sim bench --model qwen38 --num-prompts 32 --max-concurrency 32 \
//!     --random-input-len 2400 --random-output-len 1000 --ignore-eos --save-result
//! ```
//!
//! Modules: the generic layers — [`config`] (`sim serve`'s flags) and [`settings`] (the one
//! resolved configuration), [`sched`] (the KV cache and scheduler), [`engine`] and [`worker`]
//! (the engine and worker processes), [`api`] (the API server: HTTP, metrics, shutdown),
//! [`proto`] (their channel) and [`fds`] (the fds they pass), [`metrics`] and [`expo`] (the
//! exposition), [`logline`] (the log writer) and [`failures`] (the start-up tracebacks), [`gpu`]
//! (the simulated GPU), [`os`] (process titles and /proc), [`spec`] (the n-gram drafter's
//! counters), [`bench`] (the load client) — ask [`surface::Surface`] for what differs between
//! engines; each engine's folder ([`vllm`], [`sglang`], [`trtllm`]) implements it, and
//! [`registry`] picks one by its key (docs/design/engines.md#one-interface-three-engines).
#![expect(
    missing_docs,
    reason = "233 public items (mostly struct fields and variants) were undocumented when the workspace turned missing_docs on; document them, then drop this"
)]
// Unsafe code here is limited to what the process model needs (fork, pre_exec, raw fds); each
// block says why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]
// No unwrap or expect on what the inputs hold: bad input is an error naming the file and line,
// never a panic. Where an invariant makes one safe, the site allows it and says why.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
pub mod bench;
pub mod config;
pub mod engine;
pub mod error;
pub mod expo;
pub mod failures;
pub mod fds;
pub mod gpu;
pub mod logline;
pub mod metrics;
pub mod os;
pub mod proto;
pub mod registry;
pub mod sched;
pub mod settings;
pub mod sglang;
pub mod spec;
pub mod surface;
pub mod trtllm;
pub mod vllm;
pub mod worker;
