//! The evidence of the checks on the load's window as a whole (T16–T27). Field names are JSON
//! keys (docs/tripwires.md names them).

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::serde_helpers::JsonF64;

/// T16 cached-prompts: prompt tokens served from the prefix cache in the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T16Evidence {
    /// The counters read: hits, then the prompt tokens they are a share of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hits_counter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queries_counter: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
    /// `enable_prefix_caching` of the engine's cache config, where it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_caching: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_rate: Option<JsonF64>,
    /// Hits the load's untimed requests explain (a test prompt repeats a measured one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explained_hit_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untimed_requests: Option<u64>,
    /// The load's dataset and whether its prompts are meant to be fresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// T17 failed-requests: what the client and the server say of requests that did not finish.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T17Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_completed: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_failed: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
    /// Requests the engine ended with finished_reason abort, and with error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_aborted: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_errored: Option<f64>,
    /// The API server's 4xx and 5xx answers on inference endpoints, by endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<IndexMap<String, RefusedCounts>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<f64>,
}

/// One endpoint's refusals in the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RefusedCounts {
    #[serde(rename = "4xx")]
    pub client_errors: f64,
    #[serde(rename = "5xx")]
    pub server_errors: f64,
}

/// T18 short-outputs: requests that ended at end-of-sequence before the length asked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T18Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_output_len: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
    /// The engine's finished_reason deltas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_stop: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_length: Option<f64>,
    /// The load tool's per-request output lengths: how many, how many fell short, the median
    /// of those.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_short: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_short_len: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<f64>,
}

/// T19 spec-decode-synthetic: speculative decoding's acceptance over the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T19Evidence {
    /// The drafting method of the boot log's speculative config (`ngram`, `eagle`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<String>,
}

/// T20 warm-up-in-window: the first requests of the measured window against the rest, and the
/// warm-up work the server logged while the load ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T20Evidence {
    /// Requests with a TTFT (successful ones), and how many of them open the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_requests: Option<u64>,
    /// Median TTFTs, seconds: of the first requests, of the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_median_ttft_s: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rest_median_ttft_s: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<JsonF64>,
    /// How many times the rest's TTFT the first requests may take for sharing one prefill:
    /// their prompt tokens over a typical prompt's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batching_allowance: Option<JsonF64>,
    /// Warm-up lines the server logged during the load; None when its log was not watched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_lines: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_warmup_line: Option<String>,
}

/// T21 client-pace: whether the client kept up with what it asked of the server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T21Evidence {
    /// The rate asked for and the rate the client sent at (requests over the send span).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_rate: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_rate: Option<JsonF64>,
    /// The busiest client process's share of a core, and the tree's share of its CPU limit,
    /// while the server was busy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hottest_core_share: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hottest: Option<String>,
    /// The busiest process's share of the busy time spent running or waiting for a CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hottest_demand_share: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_cores: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_share: Option<JsonF64>,
    /// Busy samples, and those on which the server ran fewer requests than asked with none
    /// waiting (room the client did not use).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_samples: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub room_samples: Option<u64>,
    /// Who held the run back: `client`, `server`, or absent when neither is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_by: Option<String>,
}

/// T25 graph-batch: the running requests against the largest captured decode graph.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T25Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_max_batch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_running: Option<u64>,
    /// Readings with a request running, and those beyond the largest graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_samples: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beyond_samples: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beyond_share: Option<JsonF64>,
}

/// T22 dp-balance: how the engines of a data-parallel server shared the requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T22Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
    /// Requests finished in the window, over all engines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished: Option<f64>,
    /// Each engine's share, by its `engine` label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engines: Option<IndexMap<String, EngineShare>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_share: Option<JsonF64>,
    /// One over the number of engines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub even_share: Option<JsonF64>,
}

/// One engine's part of a data-parallel server's load.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineShare {
    /// Requests it finished in the window.
    pub finished: f64,
    /// Its mean running requests over the recording's busy samples; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_running: Option<JsonF64>,
}

/// T23 chunked-stream: tokens per streamed chunk, from the result's per-request streams.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T23Evidence {
    /// Requests that streamed a token, their output tokens and the chunks they came in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_chunk: Option<JsonF64>,
    /// The client's mean ITL and TPOT, and the ITL per token the chunks imply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_itl_ms: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_tpot_ms: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_token_itl_ms: Option<JsonF64>,
    /// What the boot log says hands several tokens at once to the stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// T24 token-counts: the prompt tokens the server processed per request against what the
/// load asked for, or what the client counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T24Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_input_len: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_prompt_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_requests: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_per_request: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_per_request: Option<JsonF64>,
    /// The server's count against the reference, as a share of it; `fewer` or `more`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
}

/// T26 kv-offload: what KV offloading stored in CPU memory and loaded back to the GPU between
/// the snapshots, and the connector's lookups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T26Evidence {
    /// `OffloadingConnector` or `SimpleCPUOffloadConnector`, by the counters the server exposes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// `bytes` (the native connector) or `blocks` (the simple one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded: Option<f64>,
    /// Prompt tokens asked of the connector and those it served
    /// (`vllm:external_prefix_cache_{queries,hits}`), and their ratio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queried_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_rate: Option<JsonF64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted: Option<bool>,
}

/// T27 gpu-clocks: the readings of the run's cards during the load, and the most throttled
/// card's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct T27Evidence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readings: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cards: Option<u64>,
    /// The most throttled card's index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_readings: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_readings: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_share: Option<JsonF64>,
    /// NVML's names of the throttling reasons seen (`SwPowerCap`, `HwThermalSlowdown`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasons: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_min_mhz: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm_max_mhz: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_max_w: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temp_max_c: Option<f64>,
}
