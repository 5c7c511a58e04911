//! vLLM's answers to the [`Surface`] the generic layers ask.

use std::ops::Range;
use std::sync::Arc;

use axum::Router;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::lines::VllmLines;
use super::{boot, dev, http, serving};
use crate::api::front::Front;
use crate::api::procs::EngineProc;
use crate::failures;
use crate::logline::Logger;
use crate::metrics::{Exposition, Registry};
use crate::settings::{FailKind, ServeConfig};
use crate::surface::{CacheHold, Surface};
use crate::worker::COORDINATOR;

/// vLLM, as [`crate::registry`] names it.
pub struct Vllm;

/// The data-parallel coordinator's title (whatever the engine, when it has no controller of
/// its own).
pub const COORDINATOR_TITLE: &str = "VLLM::DPCoordinator";

impl Surface for Vllm {
    fn default_block_size(&self) -> u32 {
        16
    }

    fn reserves_null_block(&self) -> bool {
        true
    }

    /// `VLLM::EngineCore`, or `VLLM::EngineCore_DP{rank}` with data parallelism (node-sharing
    /// facts, docs/supervision.md).
    fn engine_title(&self, cfg: &ServeConfig, rank: u32) -> String {
        if cfg.dp > 1 {
            format!("VLLM::EngineCore_DP{rank}")
        } else {
            "VLLM::EngineCore".to_string()
        }
    }

    /// `VLLM::Worker` plus `_DP{d}` and `_TP{r}` for the dimensions above 1.
    fn worker_title(&self, cfg: &ServeConfig, dp: u32, tp: u32) -> String {
        let mut t = "VLLM::Worker".to_string();
        if cfg.dp > 1 {
            t.push_str(&format!("_DP{dp}"));
        }
        if cfg.tp > 1 {
            t.push_str(&format!("_TP{tp}"));
        }
        t
    }

    fn engine_name(&self, title: &str) -> String {
        title.trim_start_matches("VLLM::").to_string()
    }

    fn helper_title(&self, _cfg: &ServeConfig, role: &str, _launcher: u32) -> Option<String> {
        (role == COORDINATOR).then(|| COORDINATOR_TITLE.to_string())
    }

    /// Every rank has a worker of its own with `--tp` > 1.
    fn worker_ranks(&self, cfg: &ServeConfig) -> Range<u32> {
        match cfg.tp {
            0 | 1 => 0..0,
            n => 0..n,
        }
    }

    fn logger(&self, cfg: &ServeConfig, title: &str, _dp: u32, _tp: u32) -> Logger {
        Logger::new(cfg.release, title.trim_start_matches("VLLM::"), &VllmLines)
    }

    fn launch(&self, cfg: &ServeConfig) -> Result<Logger, i32> {
        Ok(boot::api_server_lines(cfg))
    }

    fn serving_lines(&self, log: &Logger, cfg: &ServeConfig, port: u16, _start_unix: f64) {
        boot::ready_lines(log, cfg, port);
    }

    fn routes(&self) -> Router<Arc<Front>> {
        http::routes()
    }

    fn exposition(&self, cfg: &ServeConfig, start_unix: f64, now_unix: f64) -> Box<dyn Exposition> {
        Box::new(Registry::new(cfg, start_unix, now_unix))
    }

    fn stats_loop(&self, front: Arc<Front>) -> Option<BoxFuture<'static, ()>> {
        Some(serving::stats_loop(front).boxed())
    }

    fn shutdown<'a>(
        &'a self,
        front: &'a Arc<Front>,
        procs: &'a mut [EngineProc],
        serving: bool,
    ) -> BoxFuture<'a, i32> {
        serving::shutdown(front, procs, serving).boxed()
    }

    fn engine_boot_lines(&self, log: &Logger, cfg: &ServeConfig) -> crate::error::SimResult<()> {
        boot::engine_lines(log, cfg)
    }

    fn engine_failure(&self, log: &Logger, kind: FailKind, cfg: &ServeConfig) {
        failures::print_engine_failure(log, kind, cfg);
    }

    fn engine_ready_lines(&self, log: &Logger, cfg: &ServeConfig, elapsed: f64) {
        boot::engine_ready_lines(log, cfg, elapsed);
    }

    /// The engine process is no rank of its own: with `--tp` > 1 its workers hold the GPUs.
    fn engine_is_rank0(&self) -> bool {
        false
    }

    fn more_routes(&self) -> &'static [(&'static str, &'static str)] {
        dev::routes_listed()
    }

    fn reset_prefix_cache(&self, log: &Logger, hold: CacheHold) -> bool {
        dev::engine_reset(log, hold)
    }
}
