//! What the boot-log analyzer tells the live supervisor the moment a line arrives, and the value
//! helpers every engine's line reader shares. The engines' readers (`vllm.rs`, `sglang.rs`,
//! `trtllm.rs`) and the analyzer that dispatches to them all depend on this module, never on one
//! another.

use super::classify::Failure;
use super::state::State;
use crate::engine::Engine;

/// Something the live supervisor wants to know the moment its line arrives.
#[derive(Clone, Debug, PartialEq)]
pub struct BootEvent {
    /// 1-based line number of the line that caused it.
    pub lineno: usize,
    pub kind: BootEventKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum BootEventKind {
    /// The log's own markers name this engine (it may change once: TensorRT-LLM and SGLang
    /// markers outrank vLLM's).
    EngineDetected { engine: Engine },
    /// The engine's version as the log prints it.
    VersionSeen { version: String },
    /// The KV cache pool, in tokens (TensorRT-LLM prints a dry-run size before the real one).
    KvPoolSized { tokens: u64 },
    /// An attention backend was chosen, for the main model or for the draft model.
    BackendSelected { backend: String, drafter: bool },
    /// vLLM raised the attention block size (hybrid attention/Mamba models).
    BlockSizeForced { tokens: u64 },
    /// `Application startup complete`: the server is ready.
    Ready,
    /// The verdict on the log so far is this failure. One found before ready is final unless the
    /// server becomes ready after all; one found while serving is withdrawn (FailureCleared) if
    /// the server keeps answering.
    FailureFound { failure: Failure },
    /// The failure reported earlier no longer holds.
    FailureCleared,
    /// After the ready line, a line of work vLLM and SGLang do to warm up (compiling a graph,
    /// capturing CUDA graphs): a request paid for it (docs/design/tripwires.md#t20). The
    /// line's message, prefixes stripped.
    WarmupWork { line: String },
}

/// A number as the engines print it, thousands separators allowed (`26,093`).
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    s.replace(',', "").parse().ok()
}

/// A finite float.
pub(crate) fn parse_f64(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Sets the pool size, with a conflict note unless the field is last-wins (TensorRT-LLM), and
/// tells the live terminal when it changed.
pub(crate) fn set_pool(
    st: &mut State,
    tokens: u64,
    note: bool,
    lineno: usize,
    ev: &mut Vec<BootEvent>,
) {
    if note {
        st.note("kv_pool_tokens", tokens);
    }
    if st.f.kv_pool_tokens != Some(tokens) {
        ev.push(BootEvent {
            lineno,
            kind: BootEventKind::KvPoolSized { tokens },
        });
    }
    st.f.kv_pool_tokens = Some(tokens);
}
