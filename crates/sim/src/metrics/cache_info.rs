//! `vllm:cache_config_info` per release (docs/design/engines.md#cache-config-info and the
//! recorded scrapes).

use super::families::Releases::{self, All, Before033, Only030, Only033, Since030};
use crate::expo::{py_repr, Family, Kind};
use crate::settings::{Release, ServeConfig};

/// A label's value: a constant, or what the configuration makes it.
enum Value {
    Is(&'static str),
    BlockSize,
    /// The block size on a hybrid model, `None` otherwise.
    HybridBlockSize,
    PrefixCaching,
    GpuMemoryUtilization,
    MaxConcurrency,
    KvCacheTokens,
    MambaBlockSize,
    /// The first on a hybrid model, the second otherwise.
    Hybrid(&'static str, &'static str),
    NumGpuBlocks,
    NumGpuBlocksOverride,
    /// `--kv-offloading-size` in GiB, `None` without it.
    OffloadingSize,
    UserBlockSize,
    /// The engine's index, set per child.
    Engine,
}

use Value::Is;

/// Every CacheConfig field of each release, alphabetical as on the wire (`engine` last).
const LABELS: &[(&str, Releases, Value)] = &[
    ("_block_size_resolved", All, Is("True")),
    ("block_size", All, Value::BlockSize),
    ("cache_dtype", All, Is("auto")),
    ("cache_hit_alignment_tokens", Only033, Is("None")),
    (
        "effective_attention_block_size",
        Only033,
        Value::HybridBlockSize,
    ),
    (
        "enable_mamba_shared_prefix_checkpoint",
        Only033,
        Is("False"),
    ),
    (
        "enable_mamba_fine_grained_prefix_cache",
        Only030,
        Is("False"),
    ),
    ("enable_prefix_caching", All, Value::PrefixCaching),
    ("gpu_memory_utilization", All, Value::GpuMemoryUtilization),
    ("hash_block_size", Only033, Value::BlockSize),
    ("is_attention_free", All, Is("False")),
    ("kv_cache_dtype_skip_layers", All, Is("[]")),
    ("kv_cache_layout", Since030, Is("None")),
    ("kv_cache_max_concurrency", All, Value::MaxConcurrency),
    ("kv_cache_memory_bytes", All, Is("None")),
    ("kv_cache_size_tokens", All, Value::KvCacheTokens),
    ("kv_offloading_backend", All, Is("native")),
    ("kv_offloading_size", All, Value::OffloadingSize),
    ("kv_sharing_fast_prefill", All, Is("False")),
    ("mamba_block_size", All, Value::MambaBlockSize),
    ("mamba_cache_dtype", All, Is("auto")),
    ("mamba_cache_mode", All, Value::Hybrid("align", "none")),
    ("mamba_page_size_padded", All, Is("None")),
    (
        "mamba_ssm_cache_dtype",
        All,
        Value::Hybrid("float32", "auto"),
    ),
    ("num_cpu_blocks", All, Is("None")),
    ("num_gpu_blocks", All, Value::NumGpuBlocks),
    ("num_gpu_blocks_override", All, Value::NumGpuBlocksOverride),
    ("prefix_cache_retention_interval", Since030, Is("0")),
    ("prefix_caching_hash_algo", All, Is("sha256")),
    ("prefix_match_unit", All, Is("None")),
    ("replayssm_buffer_len", All, Is("16")),
    ("simple_cpu_offload_num_blocks", Only033, Is("None")),
    ("skip_page_size_padded", All, Is("None")),
    ("sliding_window", All, Is("None")),
    ("swa_bounded_replay", Only033, Is("True")),
    ("use_kda_recoverssm", Since030, Is("False")),
    ("use_replayssm", All, Is("False")),
    ("user_specified_block_size", All, Value::UserBlockSize),
    ("user_specified_mamba_block_size", Before033, Is("False")),
    ("engine", All, Value::Engine),
];

fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

impl Value {
    fn of(&self, cfg: &ServeConfig, engine: &str) -> String {
        match self {
            Is(v) => (*v).to_string(),
            Value::BlockSize => cfg.block_size.to_string(),
            Value::HybridBlockSize if cfg.hybrid => cfg.block_size.to_string(),
            Value::HybridBlockSize => "None".to_string(),
            Value::PrefixCaching => py_bool(cfg.prefix_caching),
            Value::GpuMemoryUtilization => py_repr(cfg.gpu_memory_utilization),
            Value::MaxConcurrency => py_repr(cfg.max_concurrency()),
            Value::KvCacheTokens => cfg.kv_cache_tokens().to_string(),
            Value::MambaBlockSize => match (cfg.hybrid, cfg.release) {
                (false, _) => "None".to_string(),
                (true, Release::V028) => "16".to_string(),
                (true, _) => cfg.block_size.to_string(),
            },
            Value::Hybrid(yes, no) => if cfg.hybrid { yes } else { no }.to_string(),
            // With data parallelism vLLM's label is the sum over the engines, on each engine's
            // series (`vllm-0.32-cpu/dp2`: 12 for two pools of 6).
            Value::NumGpuBlocks => (cfg.num_gpu_blocks * cfg.dp.max(1)).to_string(),
            Value::NumGpuBlocksOverride => cfg
                .num_gpu_blocks_override
                .map_or_else(|| "None".to_string(), |v| v.to_string()),
            Value::OffloadingSize => cfg
                .kv_offloading_size
                .map_or_else(|| "None".to_string(), py_repr),
            Value::UserBlockSize => py_bool(cfg.user_block_size.is_some()),
            Value::Engine => engine.to_string(),
        }
    }
}

/// `vllm:cache_config_info`: every CacheConfig field of the release as a label (alphabetical
/// on the wire), `num_gpu_blocks` among them, value 1.
pub fn family(cfg: &ServeConfig, now_unix: f64) -> Family {
    let labels: Vec<&(&str, Releases, Value)> = LABELS
        .iter()
        .filter(|(_, releases, _)| releases.include(cfg.release))
        .collect();
    let names: Vec<&str> = labels.iter().map(|(k, _, _)| *k).collect();
    let mut fam = Family::new(
        "vllm:cache_config_info",
        "Information of the LLMEngine CacheConfig",
        Kind::Gauge,
        &names,
    );
    for e in 0..cfg.dp.max(1) {
        let id = e.to_string();
        let values: Vec<String> = labels.iter().map(|(_, _, v)| v.of(cfg, &id)).collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        fam.child(&values, now_unix).value = 1.0;
    }
    fam
}
