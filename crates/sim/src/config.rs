//! `sim serve`'s flags and the configuration the simulated server runs with.
//!
//! The API server parses the flags ([`ServeArgs`]), resolves them once into a [`ServeConfig`]
//! (release defaults, the KV pool arithmetic) and hands that to the engine process as JSON in
//! [`CONFIG_ENV`], so both processes agree on every number.

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
/// `sim:<dir>`: the engine holds simulated GPU memory, recorded in `<dir>` (see [`super::gpu`]).
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

/// How the simulated server's `/metrics` misbehaves (the hostile servers of issue 10): each is
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

/// `inferlint sim serve MODEL [flags]`: the `vllm serve` flags that matter, plus simulator knobs.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// The model to "serve" (only its name is used).
    #[arg(default_value = "Qwen/Qwen3-0.6B")]
    pub model: String,
    /// Address to listen on (vLLM's default is every interface; the simulator's is loopback).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on; 0 picks a free one (the boot log's "Starting vLLM server on" line names it).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// SGLang's `--max-running-requests`.
    #[arg(long, visible_aliases = ["max-running-requests", "max_batch_size"], default_value_t = 256)]
    pub max_num_seqs: u32,
    /// SGLang's `--context-length`.
    #[arg(long, visible_aliases = ["context-length", "max_seq_len"], default_value_t = 4096)]
    pub max_model_len: u32,
    /// Tokens per KV block (`--hybrid` forces 784); SGLang's `--page-size` (default 1).
    #[arg(long, visible_alias = "page-size")]
    pub block_size: Option<u32>,
    /// The number of KV blocks, one of which is the reserved null block.
    #[arg(long)]
    pub num_gpu_blocks_override: Option<u32>,
    /// Admission control: requests in flight beyond this are rejected (HTTP 503).
    #[arg(long)]
    pub max_num_queued_reqs: Option<u32>,
    /// SGLang's `--chunked-prefill-size`.
    #[arg(long, visible_aliases = ["chunked-prefill-size", "max_num_tokens"], default_value_t = 8192)]
    pub max_num_batched_tokens: u32,
    /// E.g. FLASH_ATTN, TRITON_ATTN, FLASHINFER.
    #[arg(long)]
    pub attention_backend: Option<String>,
    /// Requests to /v1/* need `Authorization: Bearer KEY`.
    #[arg(long)]
    pub api_key: Option<String>,
    #[arg(long, num_args = 1..)]
    pub served_model_name: Vec<String>,
    /// SGLang's `--mem-fraction-static`.
    #[arg(long, visible_aliases = ["mem-fraction-static", "kv_cache_free_gpu_memory_fraction"])]
    pub gpu_memory_utilization: Option<f64>,
    /// SGLang's `--disable-cuda-graph`.
    #[arg(long, visible_alias = "disable-cuda-graph")]
    pub enforce_eager: bool,
    /// Seconds to drain in-flight requests on SIGTERM (0 = abort them, vLLM's default).
    #[arg(long, default_value_t = 0)]
    pub shutdown_timeout: u32,
    #[arg(long)]
    pub disable_uvicorn_access_log: bool,
    #[arg(long)]
    pub disable_log_stats: bool,
    /// Tensor-parallel size: one `VLLM::Worker_TP{n}` process per rank when > 1.
    #[arg(
        long = "tp",
        visible_aliases = ["tensor-parallel-size", "tp-size", "tp_size"],
        default_value_t = 1
    )]
    pub tp: u32,
    /// Data-parallel size: one `VLLM::EngineCore_DP{i}` per rank, each with its own KV pool
    /// and scheduler (and GPU), a `VLLM::DPCoordinator`, and per-engine /metrics series.
    #[arg(long = "data-parallel-size", visible_aliases = ["dp", "dp-size"], default_value_t = 1)]
    pub dp: u32,

    /// The engine to simulate: `vllm`, `sglang` or `trtllm` (their boot logs, endpoints, /metrics
    /// and process titles, docs/design/engines.md#the-simulated-sglang and the next section).
    #[arg(long, value_parser = parse_engine, default_value = "vllm")]
    pub engine: Engine,
    #[command(flatten)]
    pub sglang: crate::sglang::SglangArgs,
    #[command(flatten)]
    pub trtllm: crate::trtllm::TrtllmArgs,

    /// The vLLM release whose log lines and /metrics exposition to copy.
    #[arg(long, value_enum, default_value = "0.28")]
    pub vllm_version: Release,
    /// Output tokens per second of each running request (one engine step per 1/N s).
    #[arg(long, default_value_t = 50.0)]
    pub tokens_per_s: f64,
    /// Seconds from start to the ready line.
    #[arg(long, default_value_t = 2.0)]
    pub boot_secs: f64,
    /// A hybrid (attention + Mamba) model: 784-token attention blocks and their log lines.
    #[arg(long)]
    pub hybrid: bool,
    /// Print this start-up failure signature and exit non-zero.
    #[arg(long, value_enum)]
    pub fail_boot: Option<FailKind>,
    /// The engine dies on the first completion request (after ready).
    #[arg(long)]
    pub die_on_first_request: bool,
    /// The engine dies when the (N+1)-th completion request arrives.
    #[arg(long)]
    pub die_after_requests: Option<u32>,
    /// The engine allocates (and touches) this many MiB of host memory for every completion
    /// request it takes, and never frees them: under a cgroup memory limit the kernel's OOM
    /// killer ends it, as it ends a real engine that outgrows its host memory.
    #[arg(long)]
    pub host_memory_grow_mib: Option<u32>,
    /// The engine outlives a SIGKILLed API server and keeps its GPU memory (vLLM issue 55510).
    #[arg(long)]
    pub orphan_engine: bool,
    /// The engine ignores SIGTERM; only SIGKILL stops it.
    #[arg(long)]
    pub engine_ignores_sigterm: bool,
    /// The engine leaves the API server's process group (setsid) or parentage (double-fork).
    #[arg(long, value_enum)]
    pub escape: Option<Escape>,
    /// Simulated GPU memory (MiB) the engine holds while alive (with INFERLINT_GPU=sim:DIR).
    #[arg(long, default_value_t = 21768)]
    pub gpu_mib: u64,
    /// Without `ignore_eos`, the model emits end-of-sequence after this many tokens.
    #[arg(long)]
    pub eos_after: Option<u32>,
    /// No prefix cache: every prompt token is computed (vLLM's `--no-enable-prefix-caching`).
    #[arg(long)]
    pub no_enable_prefix_caching: bool,
    /// A batch of a size not run before (by powers of two) compiles for this many seconds first
    /// and logs vLLM's "Compiling a graph for compile range" line (none under --enforce-eager).
    #[arg(long)]
    pub cold_start_secs: Option<f64>,
    /// Speculative decoding with vLLM's n-gram drafter, as vLLM's JSON (`{"method": "ngram",
    /// "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}`).
    #[arg(long, value_name = "JSON")]
    pub speculative_config: Option<String>,
    /// `/metrics` misbehaves this way (after the first `--metrics-fault-after` answers).
    #[arg(long, value_enum)]
    pub metrics_fault: Option<MetricsFault>,
    /// How many `/metrics` answers are normal before the fault starts (`restart`: the answer
    /// the restart happens at), so a run's first scrapes succeed and the fault comes mid-run.
    #[arg(long, default_value_t = 0)]
    pub metrics_fault_after: u32,
    /// The size of the `huge` fault's body, in MB.
    #[arg(long, default_value_t = 50)]
    pub metrics_huge_mb: u32,
    /// The boot never ends: the engine's handshake never completes, the API server logs that it
    /// is waiting, again and again, and never serves.
    #[arg(long)]
    pub boot_never_ends: bool,
}

fn parse_engine(s: &str) -> Result<Engine, String> {
    match Engine::parse(s) {
        Some(e) => Ok(e),
        None => Err(format!("'{s}': the simulator runs vllm, sglang or trtllm")),
    }
}

/// Everything both simulator processes need, resolved once from the flags.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServeConfig {
    /// The engine whose log lines, endpoints, metrics and titles the simulator copies.
    #[serde(default = "vllm")]
    pub engine: Engine,
    /// SGLang's `--enable-metrics` (vLLM always serves /metrics).
    #[serde(default)]
    pub enable_metrics: bool,
    /// SGLang's `--max-total-tokens`, as given.
    #[serde(default)]
    pub max_total_tokens: Option<u32>,
    /// TensorRT-LLM's `--config` options.
    #[serde(default)]
    pub trtllm: crate::trtllm::TrtllmConfig,
    pub release: Release,
    pub model: String,
    pub served_names: Vec<String>,
    pub host: String,
    pub port: u16,
    pub max_num_seqs: u32,
    pub max_model_len: u32,
    pub block_size: u32,
    pub num_gpu_blocks: u32,
    pub num_gpu_blocks_override: Option<u32>,
    pub max_num_queued_reqs: Option<u32>,
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
    pub metrics_fault: Option<MetricsFault>,
    pub metrics_fault_after: u32,
    pub metrics_huge_mb: u32,
    pub boot_never_ends: bool,
}

fn yes() -> bool {
    true
}

fn vllm() -> Engine {
    Engine::Vllm
}

/// The default KV pool when no override is given: 8,192 blocks of 16 tokens (131,072 tokens),
/// scaled for other block sizes so the pool stays the same number of tokens.
const DEFAULT_POOL_TOKENS: u32 = 8192 * 16;

/// The block size a hybrid (attention + Mamba) model is forced to (the recorded 0.28 run).
pub const HYBRID_BLOCK_SIZE: u32 = 784;

impl ServeConfig {
    pub fn from_args(a: &ServeArgs) -> Result<ServeConfig, String> {
        if !(a.tokens_per_s > 0.0 && a.tokens_per_s.is_finite()) {
            return Err(format!(
                "--tokens-per-s must be positive, got {}",
                a.tokens_per_s
            ));
        }
        if !(a.boot_secs >= 0.0 && a.boot_secs.is_finite()) {
            return Err(format!(
                "--boot-secs must be 0 or more, got {}",
                a.boot_secs
            ));
        }
        if a.cold_start_secs
            .is_some_and(|s| !(s >= 0.0 && s.is_finite()))
        {
            return Err("--cold-start-secs must be 0 or more".into());
        }
        if a.max_num_seqs == 0 || a.max_model_len == 0 || a.max_num_batched_tokens == 0 {
            return Err(
                "--max-num-seqs, --max-model-len and --max-num-batched-tokens must be positive"
                    .into(),
            );
        }
        if a.tp == 0 {
            return Err("--tp must be at least 1".into());
        }
        if a.dp == 0 {
            return Err("--data-parallel-size must be at least 1".into());
        }
        if a.engine == Engine::Trtllm {
            crate::trtllm::failures::supported(a.fail_boot)?;
        }
        if a.engine == Engine::Sglang {
            crate::sglang::failures::supported(a.fail_boot)?;
        }
        let sglang = a.engine == Engine::Sglang;
        let block_size = if a.hybrid {
            HYBRID_BLOCK_SIZE
        } else {
            // SGLang's page size defaults to 1 token (its server_args), TensorRT-LLM's
            // tokens_per_block to 32.
            a.block_size.unwrap_or(match a.engine {
                Engine::Sglang => 1,
                Engine::Trtllm => 32,
                Engine::Vllm => 16,
            })
        };
        if block_size == 0 {
            return Err("--block-size must be positive".into());
        }
        let num_gpu_blocks = match (a.num_gpu_blocks_override, a.sglang.max_total_tokens) {
            (Some(n), _) => n,
            (None, Some(tokens)) if sglang => (tokens / block_size).max(2),
            _ => (DEFAULT_POOL_TOKENS / block_size).max(2),
        };
        let served_names = if a.served_model_name.is_empty() {
            vec![a.model.clone()]
        } else {
            a.served_model_name.clone()
        };
        let die_after_requests = match (a.die_on_first_request, a.die_after_requests) {
            (true, _) => Some(0),
            (false, n) => n,
        };
        Ok(ServeConfig {
            engine: a.engine,
            enable_metrics: a.sglang.enable_metrics,
            max_total_tokens: a.sglang.max_total_tokens,
            trtllm: crate::trtllm::TrtllmConfig::from_args(&a.trtllm)?,
            release: a.vllm_version,
            model: a.model.clone(),
            served_names,
            host: a.host.clone(),
            port: a.port,
            max_num_seqs: a.max_num_seqs,
            max_model_len: a.max_model_len,
            block_size,
            num_gpu_blocks,
            num_gpu_blocks_override: a.num_gpu_blocks_override,
            max_num_queued_reqs: a.max_num_queued_reqs,
            max_num_batched_tokens: a.max_num_batched_tokens,
            attention_backend: a.attention_backend.clone(),
            api_key: a.api_key.clone(),
            gpu_memory_utilization: a
                .gpu_memory_utilization
                .unwrap_or(a.vllm_version.default_gpu_memory_utilization()),
            user_set_gpu_memory_utilization: a.gpu_memory_utilization.is_some(),
            enforce_eager: a.enforce_eager,
            shutdown_timeout: a.shutdown_timeout,
            access_log: !a.disable_uvicorn_access_log,
            log_stats: !a.disable_log_stats,
            tp: a.tp,
            dp: a.dp,
            tokens_per_s: a.tokens_per_s,
            boot_secs: a.boot_secs,
            hybrid: a.hybrid,
            fail_boot: a.fail_boot,
            die_after_requests,
            host_memory_grow_mib: a.host_memory_grow_mib,
            orphan_engine: a.orphan_engine,
            engine_ignores_sigterm: a.engine_ignores_sigterm,
            escape: a.escape,
            gpu_mib: a.gpu_mib,
            eos_after: a.eos_after,
            cold_start_secs: a.cold_start_secs,
            prefix_caching: !a.no_enable_prefix_caching,
            user_block_size: if a.hybrid { None } else { a.block_size },
            spec: a
                .speculative_config
                .as_deref()
                .map(crate::spec::SpecConfig::parse)
                .transpose()?,
            metrics_fault: a.metrics_fault,
            metrics_fault_after: a.metrics_fault_after,
            metrics_huge_mb: a.metrics_huge_mb,
            boot_never_ends: a.boot_never_ends,
        })
    }

    /// The name requests and metrics use (the first served name).
    pub fn model_name(&self) -> &str {
        &self.served_names[0]
    }

    /// The simulated GPU of data-parallel rank `dp_rank`'s tensor-parallel rank `tp_rank`: one
    /// GPU per worker, numbered across the engines (`dp_rank · tp + tp_rank`).
    pub fn gpu_index(&self, dp_rank: u32, tp_rank: u32) -> u32 {
        dp_rank * self.tp + tp_rank
    }

    /// Blocks the requests can use: all but vLLM's reserved null block (SGLang's token pool
    /// reserves none: `max_total_num_tokens` are all usable).
    pub fn usable_blocks(&self) -> u32 {
        match self.engine {
            Engine::Sglang | Engine::Trtllm => self.num_gpu_blocks,
            _ => self.num_gpu_blocks.saturating_sub(1),
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

/// The configuration `inferlint sim serve ARGS` would run with (for the simulator's unit tests).
#[cfg(test)]
pub(crate) fn test_config(args: &[&str]) -> ServeConfig {
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: ServeArgs,
    }
    let mut v = vec!["x"];
    v.extend_from_slice(args);
    ServeConfig::from_args(&Wrap::parse_from(v).a).unwrap()
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
