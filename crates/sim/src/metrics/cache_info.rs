//! `vllm:cache_config_info` per release (docs/design/engines.md#cache-config-info and the
//! recorded scrapes).

use crate::config::{Release, ServeConfig};
use crate::expo::{py_repr, Family, Kind};

/// `vllm:cache_config_info`: every CacheConfig field of the release as a label (alphabetical
/// on the wire), `num_gpu_blocks` among them, value 1.
pub fn family(cfg: &ServeConfig, now_unix: f64) -> Family {
    let mut labels: Vec<(&str, String)> = Vec::new();
    let t = |b: bool| {
        if b {
            "True".to_string()
        } else {
            "False".to_string()
        }
    };
    let none = || "None".to_string();
    let opt = |o: Option<u32>| o.map_or_else(|| "None".to_string(), |v| v.to_string());
    let hybrid = cfg.hybrid;
    labels.push(("_block_size_resolved", t(true)));
    labels.push(("block_size", cfg.block_size.to_string()));
    labels.push(("cache_dtype", "auto".into()));
    let r = cfg.release;
    if r == Release::V033 {
        labels.push(("cache_hit_alignment_tokens", none()));
        labels.push((
            "effective_attention_block_size",
            if hybrid {
                cfg.block_size.to_string()
            } else {
                none()
            },
        ));
        labels.push(("enable_mamba_shared_prefix_checkpoint", t(false)));
    }
    if r == Release::V030 {
        labels.push(("enable_mamba_fine_grained_prefix_cache", t(false)));
    }
    labels.push(("enable_prefix_caching", t(cfg.prefix_caching)));
    labels.push((
        "gpu_memory_utilization",
        py_repr(cfg.gpu_memory_utilization),
    ));
    if r == Release::V033 {
        labels.push(("hash_block_size", cfg.block_size.to_string()));
    }
    labels.push(("is_attention_free", t(false)));
    labels.push(("kv_cache_dtype_skip_layers", "[]".into()));
    if r != Release::V028 {
        labels.push(("kv_cache_layout", none()));
    }
    labels.push(("kv_cache_max_concurrency", py_repr(cfg.max_concurrency())));
    labels.push(("kv_cache_memory_bytes", none()));
    labels.push(("kv_cache_size_tokens", cfg.kv_cache_tokens().to_string()));
    labels.push(("kv_offloading_backend", "native".into()));
    labels.push(("kv_offloading_size", none()));
    labels.push(("kv_sharing_fast_prefill", t(false)));
    let mamba_block = match (hybrid, r) {
        (false, _) => none(),
        (true, Release::V028) => "16".into(),
        (true, _) => cfg.block_size.to_string(),
    };
    labels.push(("mamba_block_size", mamba_block));
    labels.push(("mamba_cache_dtype", "auto".into()));
    labels.push((
        "mamba_cache_mode",
        if hybrid {
            "align".into()
        } else {
            "none".into()
        },
    ));
    labels.push(("mamba_page_size_padded", none()));
    labels.push((
        "mamba_ssm_cache_dtype",
        if hybrid {
            "float32".into()
        } else {
            "auto".into()
        },
    ));
    labels.push(("num_cpu_blocks", none()));
    // With data parallelism vLLM's label is the sum over the engines, on each engine's series
    // (`vllm-0.32-cpu/dp2`: 12 for two pools of 6).
    labels.push((
        "num_gpu_blocks",
        (cfg.num_gpu_blocks * cfg.dp.max(1)).to_string(),
    ));
    labels.push(("num_gpu_blocks_override", opt(cfg.num_gpu_blocks_override)));
    if r != Release::V028 {
        labels.push(("prefix_cache_retention_interval", "0".into()));
    }
    labels.push(("prefix_caching_hash_algo", "sha256".into()));
    labels.push(("prefix_match_unit", none()));
    labels.push(("replayssm_buffer_len", "16".into()));
    if r == Release::V033 {
        labels.push(("simple_cpu_offload_num_blocks", none()));
    }
    labels.push(("skip_page_size_padded", none()));
    labels.push(("sliding_window", none()));
    if r == Release::V033 {
        labels.push(("swa_bounded_replay", t(true)));
    }
    if r != Release::V028 {
        labels.push(("use_kda_recoverssm", t(false)));
    }
    labels.push(("use_replayssm", t(false)));
    labels.push((
        "user_specified_block_size",
        t(cfg.user_block_size.is_some()),
    ));
    if r != Release::V033 {
        labels.push(("user_specified_mamba_block_size", t(false)));
    }
    labels.push(("engine", "0".into()));
    let names: Vec<&str> = labels.iter().map(|(k, _)| *k).collect();
    let mut fam = Family::new(
        "vllm:cache_config_info",
        "Information of the LLMEngine CacheConfig",
        Kind::Gauge,
        &names,
    );
    for e in 0..cfg.dp.max(1) {
        let id = e.to_string();
        let values: Vec<&str> = labels
            .iter()
            .map(|(k, v)| {
                if *k == "engine" {
                    id.as_str()
                } else {
                    v.as_str()
                }
            })
            .collect();
        fam.child(&values, now_unix).value = 1.0;
    }
    fam
}
