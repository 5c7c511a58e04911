//! The metrics of vLLM's offloading connector (`OffloadingConnector`, docs/design/engines.md#kv-offloading):
//! the deprecated `vllm:kv_offload_total_bytes` and `vllm:kv_offload_total_time`, labelled by
//! `transfer_type` (`GPU_to_CPU`, `CPU_to_GPU`), registered with the connector and so present at
//! 0 from the start; their successors `vllm:kv_offload_store_bytes`, `…_load_bytes`,
//! `…_store_time`, `…_load_time`, which vLLM creates at their first observation; and the
//! scheduler's `vllm:external_prefix_cache_*` and cached-token counters, which count what the
//! connector served.

use super::Registry;
use crate::api::offload::OffloadStep;
use crate::expo::{Family, Kind};
use crate::os::unix_now;
use crate::settings::ServeConfig;

const TOTAL_BYTES: &str = "vllm:kv_offload_total_bytes";
const TOTAL_TIME: &str = "vllm:kv_offload_total_time";
/// The transfer directions of the deprecated families, in vLLM's order (load first).
const LOAD: &str = "CPU_to_GPU";
const STORE: &str = "GPU_to_CPU";

/// The successors, by name and HELP: load bytes and time, store bytes and time.
const FLAT: &[(&str, &str)] = &[
    (
        "vllm:kv_offload_load_bytes",
        "Total bytes loaded from offload storage to GPU.",
    ),
    (
        "vllm:kv_offload_load_time",
        "Total load time from offload storage to GPU, in seconds.",
    ),
    (
        "vllm:kv_offload_store_bytes",
        "Total bytes stored from GPU to offload storage.",
    ),
    (
        "vllm:kv_offload_store_time",
        "Total store time from GPU to offload storage, in seconds.",
    ),
];

/// The deprecated families, one child per engine and direction, when offloading is on.
pub(super) fn families(cfg: &ServeConfig, model: &str) -> Vec<Family> {
    if cfg.kv_offloading_size.is_none() {
        return Vec::new();
    }
    let labels = ["model_name", "engine", "transfer_type"];
    let mut out = vec![
        Family::new(
            TOTAL_BYTES,
            "Number of bytes offloaded by KV connector",
            Kind::Counter,
            &labels,
        ),
        Family::new(
            TOTAL_TIME,
            "Total time measured by all KV offloading operations",
            Kind::Counter,
            &labels,
        ),
    ];
    for fam in &mut out {
        for e in 0..cfg.dp.max(1) {
            for t in [LOAD, STORE] {
                fam.child(&[model, &e.to_string(), t], unix_now());
            }
        }
    }
    out
}

/// One admitted request's transfers and connector lookup on engine `e`.
pub(super) fn record(reg: &mut Registry, e: usize, s: &OffloadStep) {
    let (m, l) = (reg.model.clone(), reg.label(e));
    let moves = [
        (LOAD, FLAT[0], FLAT[1], s.loaded_bytes as f64, s.load_s),
        (STORE, FLAT[2], FLAT[3], s.stored_bytes as f64, s.store_s),
    ];
    for (dir, bytes_fam, time_fam, bytes, secs) in moves {
        if bytes <= 0.0 {
            continue;
        }
        for (name, x) in [(TOTAL_BYTES, bytes), (TOTAL_TIME, secs)] {
            if let Some(f) = reg.fam(name) {
                f.child(&[&m, &l, dir], 0.0).value += x;
            }
        }
        for ((name, help), x) in [(bytes_fam, bytes), (time_fam, secs)] {
            if reg.fam(name).is_none() {
                reg.families
                    .push(Family::new(name, help, Kind::Counter, super::families::ML));
            }
            if let Some(f) = reg.fam(name) {
                f.child(&[&m, &l], unix_now()).value += x;
            }
        }
    }
    if s.queried_tokens > 0 {
        reg.add(
            e,
            "vllm:external_prefix_cache_queries",
            f64::from(s.queried_tokens),
        );
        reg.add(
            e,
            "vllm:external_prefix_cache_hits",
            f64::from(s.hit_tokens),
        );
    }
    if s.hit_tokens > 0 {
        let hit = f64::from(s.hit_tokens);
        reg.add(e, "vllm:prompt_tokens_cached", hit);
        for (name, source) in [
            ("vllm:prompt_tokens_by_source", "external_kv_transfer"),
            ("vllm:prompt_tokens_cached_by_source", "host"),
        ] {
            if let Some(f) = reg.fam(name) {
                f.child(&[&m, &l, source], 0.0).value += hit;
            }
        }
    }
}
