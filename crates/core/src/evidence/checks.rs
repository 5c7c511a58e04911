//! One struct per check's evidence. Each field is a JSON key, in the order the key is written;
//! `None` leaves the key out, and `Some(None)` in an `Option<Option<_>>` writes `null`.
//!
//! Field names are the JSON keys users and scripts read (docs/tripwires.md names them), so they
//! keep their spelling.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::serde_helpers::{nullable, Count, JsonF64};
use super::PerEngine;
use crate::engine::Engine;

/// T1 preemption-silent: the engine's counter, or its log's pauses, or its paused gauge.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T1Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// The counter read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    /// A counter went backwards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused_in_log: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub served_in_log: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused_readings: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readings: Option<u64>,
    /// The most requests paused at once in a reading (TensorRT-LLM's gauge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused_max: Option<f64>,
    /// The count; null when it cannot be told.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub preemptions: Option<Option<Count>>,
    /// What showed the restart, after one.
    #[serde(flatten)]
    pub restart: RestartEvidence,
}

/// What shows a server restarted between two snapshots: how many `*_created` stamps moved and
/// the first of them (`example`, `before`, `after`), or the counter that went down (`counter`,
/// `before`, `after`). Empty when there was no restart.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RestartEvidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_changed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<f64>,
}

/// T2 gpu-not-clear: the readings of the cards and who held them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T2Evidence {
    /// The readings, as the GPU reader writes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readings: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub holders: Option<Option<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<Vec<String>>,
    /// Which GPUs a run judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus_judged: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cards: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub others_holding_these_gpus: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub servers_left_alone: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_after_the_server_stopped: Option<Vec<i32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signalled_by_the_server_teardown: Option<Vec<i32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_readings: Option<bool>,
    /// What `teardown` signalled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signalled: Option<Vec<i32>>,
}

/// T3 and T13 from `lint-script`: where in the script, and the fix.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScriptEvidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// T4 pool-size-jump: each start's KV pool, by log label.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T4Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pools: Option<IndexMap<String, Option<u64>>>,
    /// The distinct pool sizes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub levels: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_compared: Option<Vec<String>>,
}

/// T5 block-size-forced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T5Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub mamba_page_padding_pct: Option<Option<JsonF64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub pool_blocks: Option<Option<u64>>,
    /// The log's label, when `check-log` read several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// T6 backend-ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T6Evidence {
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub requested: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drafter: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub speculative: Option<Option<bool>>,
    /// The log's label, when `check-log` read several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// T7 crash-after-ready: the failure in the log, the probe's requests, or the deaths a run saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T7Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lineno: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub model: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<ProbeReply>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<ProbeBurst>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alive_after: Option<bool>,
    /// The deaths, as the run records them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deaths: Option<Value>,
    /// The log's label, when `check-log` read several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// T8 concurrency-capped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T8Evidence {
    /// The number of engines of a data-parallel server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engines: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_running_per_engine: Option<IndexMap<String, Option<JsonF64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub peak_running: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub peak_in_flight: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub boot_line_max_concurrency: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub boot_line_request_len: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub max_num_queued_reqs: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub max_num_queued_tokens: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub running_cap: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gauges_lag: Option<bool>,
}

/// T9 falling-ceiling.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T9Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling_min: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling_max: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub ceiling_at_fullest: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_min: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_max: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basis: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub usable_blocks: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub blocks_per_request_min: Option<Option<JsonF64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub blocks_per_request_max: Option<Option<JsonF64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gauges_lag: Option<bool>,
    /// Each engine's verdict, for a data-parallel server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engines: Option<PerEngine<T9Evidence>>,
}

/// T10 rate-denominator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T10Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_s: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub span_uncertainty_s: Option<Option<JsonF64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integer_second_span_s: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub integer_second_rate_per_s: Option<Option<JsonF64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub integer_second_error: Option<Option<JsonF64>>,
}

/// T11 kv-memory-drift: each start's memory figures, by log label.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T11Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_kv_cache_gib: Option<IndexMap<String, Option<JsonF64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cudagraph_actual_gib: Option<IndexMap<String, Option<JsonF64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_gib: Option<IndexMap<String, Option<JsonF64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_activation_gib: Option<IndexMap<String, Option<JsonF64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiled_fresh: Option<IndexMap<String, Option<bool>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_compared: Option<Vec<String>>,
}

/// T12 unexplained-failure, and the lines of a log that could not be read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T12Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lineno: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unparsed: Option<Vec<UnparsedLine>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_cut: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_lossy: Option<u64>,
    /// The log's label, when `check-log` read several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// T14 null-block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T14Evidence {
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub reported_num_gpu_blocks: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub inferred_usable_blocks: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct_readings: Option<u64>,
    /// The engine T14 does not apply to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// Each engine's verdict, for a data-parallel server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engines: Option<PerEngine<T14Evidence>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_num_gpu_blocks_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_count: Option<u64>,
}

/// T15 client-server-mismatch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T15Evidence {
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub client_completed: Option<Option<JsonF64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub client_failed: Option<Option<JsonF64>>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]
    pub client_output_tokens: Option<Option<JsonF64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_extra_requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_finished: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_output_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_requests: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_output_tokens: Option<JsonF64>,
}

/// A probe request's outcome (T7).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeReply {
    pub ok: bool,
    /// Rounded to the millisecond.
    pub seconds: f64,
    pub error: Option<String>,
}

/// The probe's concurrent burst (T7).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeBurst {
    pub concurrency: u64,
    pub failed: u64,
    /// Rounded to the millisecond.
    pub max_seconds: f64,
    /// The first three errors.
    pub errors: Vec<String>,
}

/// A recognised boot-log line that did not parse (T12).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UnparsedLine {
    pub field: String,
    pub lineno: u64,
    pub line: String,
}
