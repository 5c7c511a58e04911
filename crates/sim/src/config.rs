//! `sim serve`'s flags: the generic ones here, each engine's own from its folder (through
//! [`crate::registry::EngineFlags`]). The API server resolves them once into a [`ServeConfig`]
//! (release defaults, the KV pool arithmetic) and hands that to the engine process as JSON in
//! [`CONFIG_ENV`], so both processes agree on every number.

use inferlint_core::Engine;

use crate::registry;
use crate::settings::DEFAULT_POOL_TOKENS;
pub use crate::settings::{
    EngineOptions, Escape, FailKind, MetricsFault, Release, ServeConfig, CHANNEL_FD, CONFIG_ENV,
    FD_ENV, GPU_ENV, HYBRID_BLOCK_SIZE, KV_BYTES_PER_TOKEN, PREEMPTION_LOG_ENV,
};
use crate::surface::Surface;

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
    /// vLLM's `--max-cudagraph-capture-size`: the largest decode batch captured as a CUDA graph,
    /// printed in the engine's config line (only when given; eager servers capture none).
    #[arg(long)]
    pub max_cudagraph_capture_size: Option<u32>,
    /// vLLM's `--stream-interval`: a stream sends its first token alone, then every N tokens
    /// in one chunk (and what is left at the end).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub stream_interval: u32,
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
    pub engine_flags: registry::EngineFlags,

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
    /// vLLM's native KV offloading (`OffloadingConnector` with `CPUOffloadingSpec`) with this many
    /// GiB of CPU memory per engine: every full prompt block is stored there as it is computed,
    /// and a prompt whose leading blocks the GPU's cache no longer holds loads them back.
    #[arg(long, value_name = "GIB")]
    pub kv_offloading_size: Option<f64>,
    /// With `--kv-offloading-size`: the offload lookup never finds a block, so blocks are stored
    /// and never loaded back (a connector whose keys never match, docs/tripwires.md#t26-kv-offload).
    #[arg(long, requires = "kv_offloading_size")]
    pub kv_offload_never_loads: bool,
    /// The simulated GPU (`INFERLINT_GPU=sim:DIR`) reads as throttled for this reason while the
    /// engine holds it: its clock event reasons, a lower SM clock, power near its limit or heat.
    #[arg(long, value_enum)]
    pub gpu_throttle: Option<crate::settings::GpuThrottle>,
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
        // llama.cpp runs for real in CI (docs/real-llamacpp.md); the simulator has no copy of it.
        Some(Engine::Llamacpp) | None => {
            Err(format!("'{s}': the simulator runs vllm, sglang or trtllm"))
        }
        Some(e) => Ok(e),
    }
}

impl ServeConfig {
    pub fn from_args(a: &ServeArgs) -> Result<ServeConfig, String> {
        check(a)?;
        let surface = registry::surface(a.engine);
        surface.check_fail_boot(a.fail_boot)?;
        let block_size = block_size(a, surface)?;
        let options = a.engine_flags.options()?;
        let num_gpu_blocks = match (
            a.num_gpu_blocks_override,
            surface.pool_tokens_flag(&options),
        ) {
            (Some(n), _) => n,
            (None, Some(tokens)) => (tokens / block_size).max(2),
            _ => (DEFAULT_POOL_TOKENS / block_size).max(2),
        };
        Ok(ServeConfig {
            engine: a.engine,
            options,
            release: a.vllm_version,
            model: a.model.clone(),
            served_names: if a.served_model_name.is_empty() {
                vec![a.model.clone()]
            } else {
                a.served_model_name.clone()
            },
            served_names_given: !a.served_model_name.is_empty(),
            host: a.host.clone(),
            port: a.port,
            max_num_seqs: a.max_num_seqs,
            max_model_len: a.max_model_len,
            block_size,
            num_gpu_blocks,
            null_block: surface.reserves_null_block(),
            num_gpu_blocks_override: a.num_gpu_blocks_override,
            max_num_queued_reqs: a.max_num_queued_reqs,
            stream_interval: a.stream_interval,
            max_cudagraph_capture_size: a.max_cudagraph_capture_size,
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
            die_after_requests: if a.die_on_first_request {
                Some(0)
            } else {
                a.die_after_requests
            },
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
            kv_offloading_size: a.kv_offloading_size,
            kv_offload_never_loads: a.kv_offload_never_loads,
            gpu_throttle: a.gpu_throttle,
            metrics_fault: a.metrics_fault,
            metrics_fault_after: a.metrics_fault_after,
            metrics_huge_mb: a.metrics_huge_mb,
            boot_never_ends: a.boot_never_ends,
        })
    }
}

/// Tokens per KV block: a hybrid model's forced size, `--block-size`, or the engine's default.
fn block_size(a: &ServeArgs, surface: &dyn Surface) -> Result<u32, String> {
    let block_size = if a.hybrid {
        HYBRID_BLOCK_SIZE
    } else {
        a.block_size.unwrap_or(surface.default_block_size())
    };
    if block_size == 0 {
        return Err("--block-size must be positive".into());
    }
    Ok(block_size)
}

/// The flags' own ranges, whatever the engine.
fn check(a: &ServeArgs) -> Result<(), String> {
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
            "--max-num-seqs, --max-model-len and --max-num-batched-tokens must be positive".into(),
        );
    }
    if a.kv_offloading_size
        .is_some_and(|g| !(g > 0.0 && g.is_finite()))
    {
        return Err("--kv-offloading-size must be a positive number of GiB".into());
    }
    if a.kv_offloading_size.is_some() && a.engine != Engine::Vllm {
        return Err(
            "--kv-offloading-size is vLLM's; the simulator offloads for --engine vllm only".into(),
        );
    }
    if a.tp == 0 {
        return Err("--tp must be at least 1".into());
    }
    if a.dp == 0 {
        return Err("--data-parallel-size must be at least 1".into());
    }
    Ok(())
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
