//! What a boot log says about the server that started (docs/design/bootlog.md): the fields every
//! result should carry. A field the log did not print stays empty (None); it is never given a
//! default.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::classify::Failure;
use crate::engine::Engine;

/// A line whose key phrase was found but whose value did not parse.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unparsed {
    pub field: String,
    /// 1-based line number in the log.
    pub lineno: usize,
    /// The line with its process prefix stripped, at most 300 characters.
    pub line: String,
}

/// Boot facts of one log. Field names are the JSON keys of `boot-facts --json`. A key a
/// document lacks takes its default: facts saved by 0.3.1 (no `lines_cut`, `lines_lossy`, …)
/// and facts built field by field in Python read back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BootFacts {
    /// From the log's own markers, else the engine the user named (a hint).
    pub engine: Option<Engine>,
    // --- vLLM (docs/design/bootlog.md#vllm-lines)
    pub vllm_version: Option<String>,
    pub non_default_args: Option<Map<String, Value>>,
    pub selected_backends: Vec<String>,
    pub candidate_backends: Vec<String>,
    pub drafter_backends: Vec<String>,
    pub attention_block_size: Option<u64>,
    pub mamba_page_padding_pct: Option<f64>,
    pub kv_pool_tokens: Option<u64>,
    pub max_concurrency_request_len: Option<u64>,
    pub max_concurrency: Option<f64>,
    pub available_kv_cache_gib: Option<f64>,
    pub model_load_gib: Option<f64>,
    pub model_load_s: Option<f64>,
    pub cudagraph_estimated_gib: Option<f64>,
    pub cudagraph_actual_gib: Option<f64>,
    pub consumed_gib: Option<f64>,
    pub peak_activation_gib: Option<f64>,
    pub compile_s: Option<f64>,
    /// `(from, to)`, e.g. `("FULL_AND_PIECEWISE", "PIECEWISE")`.
    pub cudagraph_mode_downgrade: Option<(String, String)>,
    pub cudagraphs: Option<bool>,
    /// The largest decode batch a CUDA graph was captured for: vLLM's
    /// `max_cudagraph_capture_size` (in its engine config line), SGLang's largest decode `bs`.
    /// A batch beyond it runs eager (docs/design/tripwires.md#t25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_graph_max_batch: Option<u64>,
    /// Why vLLM's custom all-reduce is off, where its log says so (`more than two PCIe-only
    /// GPUs`, `no GPU peer-to-peer access`, …): tensor-parallel steps then use NCCL's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_allreduce_off: Option<String>,
    pub compiled_fresh: Option<bool>,
    pub requested_backend: Option<String>,
    pub speculative: Option<bool>,
    // --- SGLang and TensorRT-LLM (docs/design/bootlog.md#sglang-lines,
    // docs/design/bootlog.md#tensorrt-llm-lines)
    /// SGLang's full `server_args` dict; TensorRT-LLM's parsed `LLM Args` settings.
    pub server_args: Option<Map<String, Value>>,
    pub page_size: Option<u64>,
    pub running_cap: Option<u64>,
    pub running_cap_reason: Option<String>,
    pub requested_running: Option<u64>,
    pub engine_version: Option<String>,
    pub model: Option<String>,
    /// TensorRT-LLM access-log lines `"POST /… HTTP/1.1" 200`.
    pub served_in_log: Option<u64>,
    /// TensorRT-LLM `request ID N -> pause` lines; None unless the log is at INFO and served.
    pub pauses: Option<u64>,
    // --- every engine
    pub ready: bool,
    pub ready_lineno: Option<usize>,
    /// Seconds from the first stamped line to the last stamped line before ready.
    pub boot_seconds: Option<f64>,
    /// Filled in from the live server (`/version`, `/get_server_info`) by `run` and `report`.
    pub server_version: Option<String>,
    /// vLLM version, else engine version, else server version.
    pub version: Option<String>,
    /// The flags that group starts for T4/T11.
    pub config_args: Option<Value>,
    /// Process name → pids seen in vLLM's line prefixes.
    pub processes: BTreeMap<String, Vec<u32>>,
    pub unparsed: Vec<Unparsed>,
    /// Fields seen with more than one distinct value (two boots in one file).
    pub conflicts: BTreeMap<String, Vec<Value>>,
    /// Lines longer than the cap, cut (memory stays bounded on hostile input).
    pub lines_cut: u64,
    /// Lines that were not valid UTF-8 and were read lossily.
    pub lines_lossy: u64,
    /// Lines read.
    #[serde(default)]
    pub lines: u64,
    /// The engine the log's own markers name (`engine` falls back to the user's hint).
    #[serde(default)]
    pub log_engine: Option<Engine>,
    /// Line number of the first `[shutdown]` line (vLLM's orderly stop); the failure classifier
    /// ignores what follows it.
    #[serde(default)]
    pub shutdown_lineno: Option<usize>,
    /// Unparsed lines beyond those kept in `unparsed` (only hostile input has that many).
    #[serde(default)]
    pub unparsed_more: u64,
    /// The start-up or serving failure the log shows
    /// (docs/design/bootlog.md#the-failure-classifier), if any.
    #[serde(default)]
    pub failure: Option<Failure>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_saved_without_the_newer_keys_read_back() {
        // 0.3.1's BootFacts as a dict: no lines_cut, lines_lossy or unparsed_more.
        let doc = r#"{"engine": "vllm", "vllm_version": "0.28.0", "attention_block_size": 784,
                      "kv_pool_tokens": 32928, "ready": true, "lines": 120,
                      "processes": {"EngineCore": [4711]}, "unparsed": [], "conflicts": {}}"#;
        let f: BootFacts = serde_json::from_str(doc).unwrap();
        assert_eq!(f.vllm_version.as_deref(), Some("0.28.0"));
        assert_eq!(f.kv_pool_tokens, Some(32928));
        assert_eq!((f.lines_cut, f.lines_lossy, f.lines), (0, 0, 120));
    }
}
