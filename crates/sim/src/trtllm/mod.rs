//! The simulated TensorRT-LLM 1.3 `trtllm-serve` (`sim serve --engine trtllm`,
//! docs/design/engines.md#the-simulated-tensorrt-llm): what differs from the simulated vLLM where
//! inferlint reads a server. The processes, the scheduler arithmetic, the API server ↔ engine
//! channel and the OpenAI endpoints are the vLLM simulation's; this module holds TensorRT-LLM's
//! flags and `--config` YAML, its MPI process titles, its boot and shutdown lines ([`boot`]),
//! its start-up failures ([`failures`]), its HTTP surface ([`http`]) and its
//! `/prometheus/metrics` families ([`metrics`]).
//!
//! The facts are those of the recordings in tests/fixtures/trtllm-1.3/, as the design page lists
//! them; where docs/design/engines.md and a recording disagree, the recording wins.

pub mod boot;
pub mod failures;
mod families;
pub mod http;
pub mod lines;
pub mod metrics;
pub mod surface;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::settings::{EngineOptions, ServeConfig};

/// The TensorRT-LLM release whose log lines and exposition are copied: the recorded 1.3 runs.
pub const VERSION: &str = "1.3.0rc29";

/// The title of each MPI rank: the model runs in `python -R -m mpi4py.futures.server` processes
/// (docs/design/processes.md#finding-server-processes), one per `--tp_size` rank.
pub const RANK_TITLE: &str = "python3 -R -m mpi4py.futures.server";

/// `trtllm-serve` flags with no vLLM counterpart in the simulator (the others are aliases of the
/// vLLM flags: `--max_batch_size`, `--max_seq_len`, `--max_num_tokens`, `--tp_size`,
/// `--kv_cache_free_gpu_memory_fraction`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TrtllmArgs {
    /// TensorRT-LLM: the YAML file of LLM API options (`--extra_llm_api_options` before 1.0).
    /// Its top-level `return_perf_metrics: true` serves /prometheus/metrics, and
    /// `enable_iter_perf_stats: true` adds the iteration-stats gauges and /metrics' JSON.
    #[arg(long, visible_alias = "extra_llm_api_options", value_name = "YAML")]
    pub config: Option<PathBuf>,
}

impl TrtllmArgs {
    /// Reads the `--config` file into the options the engine reads back.
    pub fn apply(&self, options: &mut EngineOptions) -> Result<(), String> {
        let c = TrtllmConfig::from_args(self)?;
        options.return_perf_metrics = c.return_perf_metrics;
        options.enable_iter_perf_stats = c.enable_iter_perf_stats;
        Ok(())
    }
}

/// The options of the `--config` YAML the simulator acts on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrtllmConfig {
    /// `/prometheus/metrics` is served (404 without).
    pub return_perf_metrics: bool,
    /// Iteration stats: the running/waiting/KV gauges, their counters, and /metrics' JSON list.
    pub enable_iter_perf_stats: bool,
}

impl TrtllmConfig {
    /// Reads the `--config` file: the top-level `key: value` lines, YAML booleans for the two
    /// options above (other keys and nested mappings are the real server's business and are
    /// left alone). A file that cannot be read is an error naming it.
    pub fn from_args(a: &TrtllmArgs) -> Result<TrtllmConfig, String> {
        let Some(path) = &a.config else {
            return Ok(TrtllmConfig::default());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--config {}: {e}", path.display()))?;
        TrtllmConfig::parse(&text)
            .map_err(|(line, msg)| format!("{}:{line}: {msg}", path.display()))
    }

    /// The options of a YAML text; an option whose value is not a boolean is an error with its
    /// line number.
    pub fn parse(text: &str) -> Result<TrtllmConfig, (usize, String)> {
        let mut c = TrtllmConfig::default();
        for (i, line) in text.lines().enumerate() {
            if line.starts_with([' ', '\t', '#']) {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.split('#').next().unwrap_or("").trim();
            let slot = match key.trim() {
                "return_perf_metrics" => &mut c.return_perf_metrics,
                "enable_iter_perf_stats" => &mut c.enable_iter_perf_stats,
                _ => continue,
            };
            *slot = match value {
                "true" | "True" | "TRUE" | "yes" | "on" => true,
                "false" | "False" | "FALSE" | "no" | "off" => false,
                other => {
                    return Err((
                        i + 1,
                        format!("{}: '{other}' is not true or false", key.trim()),
                    ))
                }
            };
        }
        Ok(c)
    }
}

/// The MPI runtime's process beside the ranks (`prte --singleton …`, the singleton DVM
/// mpi4py's spawn starts), named after the launcher's pid.
pub fn prte_title(launcher: u32) -> String {
    format!("prte --singleton singleton.host.{launcher}.0")
}

/// The KV cache bytes of one token of the simulated model in TensorRT-LLM's own accounting
/// (the recorded `kv size per token is 147456 bytes/token` of Qwen3-8B: 36 layers × 8 KV heads
/// × 128 × 2 bytes × K and V).
pub const KV_BYTES_PER_TOKEN: u64 = 147_456;

/// The pool's size in GiB as TensorRT-LLM prints it (`Allocated 5.19 GiB for max tokens in
/// paged KV cache (37760)`).
pub fn pool_gib(cfg: &ServeConfig) -> f64 {
    (cfg.pool_tokens() * KV_BYTES_PER_TOKEN) as f64 / f64::from(1u32 << 30)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_config;

    #[test]
    fn the_yaml_options_are_read_with_their_line() {
        let c = TrtllmConfig::parse(
            "# perf\nreturn_perf_metrics: true\nkv_cache_config:\n  enable_iter_perf_stats: true\n",
        )
        .unwrap();
        assert!(c.return_perf_metrics && !c.enable_iter_perf_stats);
        let c = TrtllmConfig::parse("enable_iter_perf_stats: True # on\n").unwrap();
        assert!(c.enable_iter_perf_stats);
        assert_eq!(
            TrtllmConfig::parse("a: 1\nreturn_perf_metrics: maybe\n")
                .unwrap_err()
                .0,
            2
        );
    }

    #[test]
    fn trtllm_flags_resolve_to_its_block_pool() {
        let c = test_config(&[
            "m",
            "--engine",
            "trtllm",
            "--max_batch_size",
            "32",
            "--max_seq_len",
            "16384",
            "--num-gpu-blocks-override",
            "1180",
        ]);
        assert_eq!((c.block_size, c.pool_tokens()), (32, 37760));
        assert_eq!(
            c.usable_blocks(),
            1180,
            "TensorRT-LLM reserves no null block"
        );
        assert_eq!((c.max_num_seqs, c.max_model_len), (32, 16384));
        assert_eq!(format!("{:.2}", pool_gib(&c)), "5.19");
    }
}
