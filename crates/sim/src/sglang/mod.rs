//! The simulated SGLang 0.5 (`sim serve --engine sglang`, docs/design/engines.md#the-simulated-sglang):
//! what differs from the simulated vLLM where inferlint reads a server. The processes, the
//! scheduler arithmetic, the API server ↔ engine channel and the OpenAI endpoints are the vLLM
//! simulation's, generalised; this module holds SGLang's flags, process titles, log prefixes,
//! boot lines ([`boot`]), native endpoints ([`http`]) and `/metrics` families ([`metrics`]).
//!
//! The facts are those of the recordings in tests/fixtures/sglang-0.5/, as the design page
//! (docs/design/engines.md#the-simulated-sglang) lists them.

pub mod boot;
pub mod failures;
mod families;
pub mod http;
pub mod lines;
pub mod metrics;
pub mod surface;

use crate::settings::{EngineOptions, ServeConfig};

/// The SGLang release whose log lines and exposition are copied: the recorded 0.5 runs.
pub const VERSION: &str = "0.5.2";

/// `launch_server` flags with no vLLM counterpart in the simulator (the others are aliases of
/// the vLLM flags: `--max-running-requests`, `--context-length`, `--page-size`, `--tp-size`…).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SglangArgs {
    /// SGLang: serve `/metrics` (without it SGLang answers 404 there).
    #[arg(long)]
    pub enable_metrics: bool,
    /// SGLang: the KV pool in tokens (`max_total_num_tokens`; pages of `--page-size` tokens).
    #[arg(long)]
    pub max_total_tokens: Option<u32>,
}

impl SglangArgs {
    /// Records the flags in the options the engine reads back.
    pub fn apply(&self, options: &mut EngineOptions) {
        options.enable_metrics = self.enable_metrics;
        options.max_total_tokens = self.max_total_tokens;
    }
}

/// The scheduler process of data-parallel rank `dp`, tensor-parallel rank `tp`:
/// `sglang::scheduler_TP{tp}`, or `sglang::scheduler_DP{dp}_TP{tp}_EP{tp}` with data
/// parallelism (the titles docs/supervision.md and docs/design/engines.md list; the
/// expert-parallel rank follows the tensor-parallel one when EP is not set apart).
pub fn scheduler_title(cfg: &ServeConfig, dp: u32, tp: u32) -> String {
    if cfg.dp > 1 {
        format!("sglang::scheduler_DP{dp}_TP{tp}_EP{tp}")
    } else {
        format!("sglang::scheduler_TP{tp}")
    }
}

/// The detokenizer process every SGLang server starts beside its schedulers.
pub const DETOKENIZER_TITLE: &str = "sglang::detokenizer";
/// The data-parallel controller (`--dp` > 1), the schedulers' load balancer.
pub const DP_CONTROLLER_TITLE: &str = "sglang::data_parallel_controller";

/// A scheduler's log prefix: ` DP{n}` and ` TP{n}` for the dimensions above 1, as
/// `[2026-11-29 14:06:05 TP0] …` (docs/design/engines.md#the-simulated-sglang; the recorded TP 1 runs show none).
pub fn log_prefix(cfg: &ServeConfig, dp: u32, tp: u32) -> String {
    let mut p = String::new();
    if cfg.dp > 1 {
        p.push_str(&format!(" DP{dp}"));
    }
    if cfg.tp > 1 {
        p.push_str(&format!(" TP{tp}"));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_config;

    #[test]
    fn titles_and_prefixes_follow_the_parallel_dimensions() {
        let one = test_config(&["m", "--engine", "sglang"]);
        assert_eq!(scheduler_title(&one, 0, 0), "sglang::scheduler_TP0");
        assert_eq!(log_prefix(&one, 0, 0), "");
        let tp = test_config(&["m", "--engine", "sglang", "--tp-size", "2"]);
        assert_eq!(scheduler_title(&tp, 0, 1), "sglang::scheduler_TP1");
        assert_eq!(log_prefix(&tp, 0, 1), " TP1");
        let dp = test_config(&["m", "--engine", "sglang", "--dp", "2"]);
        assert_eq!(scheduler_title(&dp, 1, 0), "sglang::scheduler_DP1_TP0_EP0");
        assert_eq!(log_prefix(&dp, 1, 0), " DP1");
    }

    #[test]
    fn sglang_flags_resolve_to_a_token_pool() {
        let c = test_config(&[
            "m",
            "--engine",
            "sglang",
            "--max-total-tokens",
            "32096",
            "--max-running-requests",
            "32",
            "--context-length",
            "16384",
            "--enable-metrics",
        ]);
        assert_eq!((c.block_size, c.pool_tokens()), (1, 32096));
        assert_eq!(c.usable_blocks(), 32096, "SGLang reserves no null block");
        assert_eq!((c.max_num_seqs, c.max_model_len), (32, 16384));
        assert!(c.options.enable_metrics);
        let v = test_config(&["m"]);
        assert_eq!((v.engine, v.block_size), (inferlint_core::Engine::Vllm, 16));
    }
}
