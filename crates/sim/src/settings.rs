//! The configuration the simulated server runs with, resolved once from `sim serve`'s flags
//! (see [`crate::config`]) and handed to the engine process as JSON in [`CONFIG_ENV`], so
//! both processes agree on every number.

use inferlint_core::Engine;
use serde::{Deserialize, Serialize};

/// The environment variable that carries the resolved [`ServeConfig`] to the engine process.
pub const CONFIG_ENV: &str = "INFERLINT_SIM_CONFIG";
/// The environment variable naming the engine's end of the API server ↔ engine socket.
pub const FD_ENV: &str = "INFERLINT_SIM_FD";
/// The fd number the socket is passed on.
pub const CHANNEL_FD: i32 = 3;
/// Test-only: a file the engine appends one line to for each preemption it performs.
pub const PREEMPTION_LOG_ENV: &str = "INFERLINT_SIM_PREEMPTION_LOG";
/// `sim:<dir>`: the engine holds simulated GPU memory, recorded in `<dir>` (see [`crate::gpu`]).
pub const GPU_ENV: &str = "INFERLINT_GPU";

/// Bytes of KV cache per token of the simulated model (Qwen3-0.6B: 28 layers × 8 KV heads ×
/// 128 dims × K and V × 2 bytes), used to print the memory lines of the boot log.
pub const KV_BYTES_PER_TOKEN: u64 = 28 * 8 * 128 * 2 * 2;

/// The vLLM release whose log lines and metric exposition the simulator copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Release {
    #[value(name = "0.28")]
    V028,
    #[value(name = "0.30")]
    V030,
    #[value(name = "0.33")]
    V033,
}

impl Release {
    /// The full version string, as `/version` and the boot log print it.
    pub fn version(self) -> &'static str {
        match self {
            Release::V028 => "0.28.0",
            Release::V030 => "0.30.0",
            Release::V033 => "0.33.0",
        }
    }

    /// `--gpu-memory-utilization`'s default in this release.
    pub fn default_gpu_memory_utilization(self) -> f64 {
        match self {
            Release::V033 => 0.92,
            _ => 0.9,
        }
    }
}

/// How the engine process leaves the API server's process group or parentage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Escape {
    /// The engine calls setsid(): a new session and process group.
    Setsid,
    /// The engine forks and its parent exits: it is reparented at once.
    DoubleFork,
}

/// A start-up failure to print (the kinds of
/// docs/design/bootlog.md#the-failure-classifier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum FailKind {
    #[value(name = "jit_toolchain")]
    JitToolchain,
    #[value(name = "out_of_memory")]
    OutOfMemory,
    #[value(name = "kv_cache_too_small")]
    KvCacheTooSmall,
    #[value(name = "accelerator_error")]
    AcceleratorError,
    #[value(name = "cuda_error")]
    CudaError,
    #[value(name = "assertion")]
    Assertion,
    #[value(name = "value_error")]
    ValueError,
    #[value(name = "runtime_error")]
    RuntimeError,
    #[value(name = "unclassified_exception")]
    UnclassifiedException,
    #[value(name = "engine_dead")]
    EngineDead,
}

impl FailKind {
    pub const ALL: [FailKind; 10] = [
        FailKind::JitToolchain,
        FailKind::OutOfMemory,
        FailKind::KvCacheTooSmall,
        FailKind::AcceleratorError,
        FailKind::CudaError,
        FailKind::Assertion,
        FailKind::ValueError,
        FailKind::RuntimeError,
        FailKind::UnclassifiedException,
        FailKind::EngineDead,
    ];

    /// The kind's name as the failure classifier reports it.
    pub fn key(self) -> &'static str {
        match self {
            FailKind::JitToolchain => "jit_toolchain",
            FailKind::OutOfMemory => "out_of_memory",
            FailKind::KvCacheTooSmall => "kv_cache_too_small",
            FailKind::AcceleratorError => "accelerator_error",
            FailKind::CudaError => "cuda_error",
            FailKind::Assertion => "assertion",
            FailKind::ValueError => "value_error",
            FailKind::RuntimeError => "runtime_error",
            FailKind::UnclassifiedException => "unclassified_exception",
            FailKind::EngineDead => "engine_dead",
        }
    }
}

/// How the simulated server's `/metrics` misbehaves (the hostile servers): each is
/// a way a real server, or something in front of it, has been seen to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum MetricsFault {
    /// HTTP 500 with a short error body (an exporter that raised).
    #[value(name = "status-500")]
    Status500,
    /// Never answers: the scraper's own timeout has to end the wait.
    Hang,
    /// HTTP 200 with an HTML error page and binary bytes, not Prometheus text (a proxy's page).
    Garbage,
    /// SGLang's metric names instead of vLLM's (another server on the port, or a mixed-up URL).
    OtherEngine,
    /// The server restarts once: every counter back to zero and every `_created` stamp moved.
    Restart,
    /// The real exposition followed by [`ServeArgs::metrics_huge_mb`] MB of high-cardinality
    /// series (an instrumentator labelling by raw path).
    // The text is `sim serve --help`'s too, so it keeps the flag's name as written in config.rs.
    #[allow(rustdoc::broken_intra_doc_links)]
    Huge,
    /// The headers and part of the body, then the connection is closed.
    BrokenOff,
}

impl MetricsFault {
    pub const ALL: [MetricsFault; 7] = [
        MetricsFault::Status500,
        MetricsFault::Hang,
        MetricsFault::Garbage,
        MetricsFault::OtherEngine,
        MetricsFault::Restart,
        MetricsFault::Huge,
        MetricsFault::BrokenOff,
    ];

    /// The flag value.
    pub fn key(self) -> &'static str {
        match self {
            MetricsFault::Status500 => "status-500",
            MetricsFault::Hang => "hang",
            MetricsFault::Garbage => "garbage",
            MetricsFault::OtherEngine => "other-engine",
            MetricsFault::Restart => "restart",
            MetricsFault::Huge => "huge",
            MetricsFault::BrokenOff => "broken-off",
        }
    }
}

/// Everything both simulator processes need, resolved once from the flags.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServeConfig {
    /// The engine whose log lines, endpoints, metrics and titles the simulator copies.
    #[serde(default = "vllm")]
    pub engine: Engine,
    /// What the engine's own flags set.
    #[serde(default)]
    pub options: EngineOptions,
    pub release: Release,
    pub model: String,
    pub served_names: Vec<String>,
    /// `--served-model-name` was given (vLLM's `non-default args` shows it then).
    #[serde(default)]
    pub served_names_given: bool,
    pub host: String,
    pub port: u16,
    pub max_num_seqs: u32,
    pub max_model_len: u32,
    pub block_size: u32,
    pub num_gpu_blocks: u32,
    /// One of the blocks is the engine's reserved null block, which no request can use.
    #[serde(default = "yes")]
    pub null_block: bool,
    pub num_gpu_blocks_override: Option<u32>,
    pub max_num_queued_reqs: Option<u32>,
    /// Tokens a stream sends per chunk after its first (vLLM's `--stream-interval`).
    #[serde(default = "one")]
    pub stream_interval: u32,
    /// `--max-cudagraph-capture-size`, where given.
    #[serde(default)]
    pub max_cudagraph_capture_size: Option<u32>,
    pub max_num_batched_tokens: u32,
    pub attention_backend: Option<String>,
    pub api_key: Option<String>,
    pub gpu_memory_utilization: f64,
    pub user_set_gpu_memory_utilization: bool,
    pub enforce_eager: bool,
    pub shutdown_timeout: u32,
    pub access_log: bool,
    pub log_stats: bool,
    pub tp: u32,
    /// Engines (data-parallel ranks); each has `num_gpu_blocks` of its own.
    pub dp: u32,
    pub tokens_per_s: f64,
    pub boot_secs: f64,
    pub hybrid: bool,
    pub fail_boot: Option<FailKind>,
    /// The engine dies when this many completion requests have arrived before the current one.
    pub die_after_requests: Option<u32>,
    pub host_memory_grow_mib: Option<u32>,
    pub orphan_engine: bool,
    pub engine_ignores_sigterm: bool,
    pub escape: Option<Escape>,
    pub gpu_mib: u64,
    pub eos_after: Option<u32>,
    /// Seconds a batch of a new size waits for a compile (`--cold-start-secs`).
    #[serde(default)]
    pub cold_start_secs: Option<f64>,
    /// Prompts' leading blocks seen before are served from the prefix cache (vLLM's default).
    #[serde(default = "yes")]
    pub prefix_caching: bool,
    /// The block size the user asked for (shown in `non-default args`).
    pub user_block_size: Option<u32>,
    /// The n-gram drafter, when speculative decoding is on.
    #[serde(default)]
    pub spec: Option<crate::spec::SpecConfig>,
    /// vLLM's native KV offloading: GiB of CPU memory per engine (`--kv-offloading-size`).
    #[serde(default)]
    pub kv_offloading_size: Option<f64>,
    /// The offload lookup never finds a block: stores, no loads.
    #[serde(default)]
    pub kv_offload_never_loads: bool,
    /// The simulated card throttles so while the engine holds it.
    #[serde(default)]
    pub gpu_throttle: Option<GpuThrottle>,
    pub metrics_fault: Option<MetricsFault>,
    pub metrics_fault_after: u32,
    pub metrics_huge_mb: u32,
    pub boot_never_ends: bool,
}

/// What the engines' own flags set (`crate::registry::EngineFlags` resolves them): carried to
/// the engine process with the rest, read only by the engine's folder.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineOptions {
    /// SGLang's `--enable-metrics` (vLLM always serves /metrics).
    pub enable_metrics: bool,
    /// SGLang's `--max-total-tokens`, as given.
    pub max_total_tokens: Option<u32>,
    /// TensorRT-LLM's `--config` option `return_perf_metrics`: /prometheus/metrics is served.
    pub return_perf_metrics: bool,
    /// TensorRT-LLM's `--config` option `enable_iter_perf_stats`: the iteration stats.
    pub enable_iter_perf_stats: bool,
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

fn vllm() -> Engine {
    Engine::Vllm
}

/// The default KV pool when no override is given: 8,192 blocks of 16 tokens (131,072 tokens),
pub(crate) const DEFAULT_POOL_TOKENS: u32 = 8192 * 16;

/// The block size a hybrid (attention + Mamba) model is forced to (the recorded 0.28 run).
pub const HYBRID_BLOCK_SIZE: u32 = 784;

impl ServeConfig {
    /// The name requests and metrics use (the first served name).
    pub fn model_name(&self) -> &str {
        &self.served_names[0]
    }

    /// The simulated GPU of data-parallel rank `dp_rank`'s tensor-parallel rank `tp_rank`: one
    /// GPU per worker, numbered across the engines (`dp_rank · tp + tp_rank`).
    pub fn gpu_index(&self, dp_rank: u32, tp_rank: u32) -> u32 {
        dp_rank * self.tp + tp_rank
    }

    /// Blocks the requests can use: all but the reserved null block of an engine that keeps one
    /// (vLLM's; SGLang's token pool reserves none: `max_total_num_tokens` are all usable).
    pub fn usable_blocks(&self) -> u32 {
        if self.null_block {
            self.num_gpu_blocks.saturating_sub(1)
        } else {
            self.num_gpu_blocks
        }
    }

    /// The KV pool in tokens (SGLang's `max_total_num_tokens`).
    pub fn pool_tokens(&self) -> u64 {
        u64::from(self.num_gpu_blocks) * u64::from(self.block_size)
    }

    /// Blocks one request of `max_model_len` tokens needs.
    pub fn blocks_per_max_request(&self) -> u32 {
        self.max_model_len.div_ceil(self.block_size)
    }

    /// vLLM's "Maximum concurrency for N tokens per request": all blocks (the null block
    /// included, as vLLM counts them) over the blocks of one full-length request.
    pub fn max_concurrency(&self) -> f64 {
        self.num_gpu_blocks as f64 / self.blocks_per_max_request() as f64
    }

    /// vLLM's "KV cache size: N tokens" = int(max concurrency × max model len).
    pub fn kv_cache_tokens(&self) -> u64 {
        (self.max_concurrency() * self.max_model_len as f64) as u64
    }

    /// The KV cache memory the pool stands for, in GiB.
    pub fn kv_cache_gib(&self) -> f64 {
        let bytes = self.num_gpu_blocks as u64 * self.block_size as u64 * KV_BYTES_PER_TOKEN;
        bytes as f64 / (1u64 << 30) as f64
    }

    /// Whether the pool cannot hold one request of `max_model_len` tokens (vLLM refuses to start).
    pub fn pool_too_small(&self) -> bool {
        (self.usable_blocks() as u64) * (self.block_size as u64) < self.max_model_len as u64
    }

    /// The largest model length the pool can hold, as vLLM's refusal message estimates it.
    pub fn estimated_max_model_len(&self) -> u64 {
        self.usable_blocks() as u64 * self.block_size as u64
    }

    /// Seconds one engine step takes.
    pub fn step_secs(&self) -> f64 {
        1.0 / self.tokens_per_s
    }

    #[allow(
        clippy::expect_used,
        reason = "the config is a plain struct with string keys, serialized to memory"
    )]
    pub fn to_env(&self) -> String {
        serde_json::to_string(self).expect("config serialises")
    }

    pub fn from_env() -> Result<ServeConfig, String> {
        let text = std::env::var(CONFIG_ENV).map_err(|_| {
            format!("{CONFIG_ENV} is not set; this command is started by 'inferlint sim serve'")
        })?;
        serde_json::from_str(&text).map_err(|e| format!("{CONFIG_ENV}: {e}"))
    }
}

/// Why a simulated card throttles while the engine holds it (NVML's clock event reasons,
/// docs/design/gpus.md#clocks): each with the clocks, power and temperature such a card reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum GpuThrottle {
    /// SwPowerCap: at its power limit, the SM clock 1965 → 1580 MHz at about 1000 W.
    SwPowerCap,
    /// HwSlowdown.
    HwSlowdown,
    /// SwThermalSlowdown: over its software temperature limit.
    SwThermal,
    /// HwThermalSlowdown.
    HwThermal,
    /// HwPowerBrakeSlowdown.
    HwPowerBrake,
}

impl GpuThrottle {
    /// What the card reads while it throttles so.
    pub fn clocks(self) -> inferlint_core::gpu::simdir::SimClocks {
        use inferlint_core::gpu::clocks as c;
        let (reasons, sm, power, temp) = match self {
            GpuThrottle::SwPowerCap => (c::SW_POWER_CAP, 1580.0, 998.5, 71.0),
            GpuThrottle::HwSlowdown => (c::HW_SLOWDOWN, 1200.0, 640.0, 84.0),
            GpuThrottle::SwThermal => (c::SW_THERMAL, 1410.0, 610.0, 91.0),
            GpuThrottle::HwThermal => (c::HW_THERMAL, 990.0, 520.0, 94.0),
            GpuThrottle::HwPowerBrake => (c::HW_POWER_BRAKE, 810.0, 450.0, 66.0),
        };
        inferlint_core::gpu::simdir::SimClocks {
            reasons,
            sm_mhz: sm,
            sm_max_mhz: 1980.0,
            power_w: power,
            power_limit_w: 1000.0,
            temp_c: temp,
        }
    }
}
