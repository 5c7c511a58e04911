//! TensorRT-LLM's answers to the [`Surface`] the generic layers ask.

use std::sync::Arc;

use axum::Router;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::lines::TrtllmLines;
use super::metrics::TrtllmRegistry;
use super::{boot, failures, http, prte_title, RANK_TITLE};
use crate::api::front::Front;
use crate::api::procs::EngineProc;
use crate::logline::Logger;
use crate::metrics::Exposition;
use crate::settings::{FailKind, Release, ServeConfig};
use crate::surface::Surface;
use crate::worker::{COORDINATOR, PRTE};

/// TensorRT-LLM 1.3's `trtllm-serve`, as [`crate::registry`] names it.
pub struct Trtllm;

/// The data-parallel coordinator's title: with `--dp` > 1 the simulator starts vLLM's.
const COORDINATOR_TITLE: &str = "VLLM::DPCoordinator";

impl Surface for Trtllm {
    /// TensorRT-LLM's `tokens_per_block` default.
    fn default_block_size(&self) -> u32 {
        32
    }

    fn check_fail_boot(&self, kind: Option<FailKind>) -> Result<(), String> {
        failures::supported(kind)
    }

    /// Every rank is an MPI rank of the same title.
    fn engine_title(&self, _cfg: &ServeConfig, _rank: u32) -> String {
        RANK_TITLE.to_string()
    }

    fn worker_title(&self, _cfg: &ServeConfig, _dp: u32, _tp: u32) -> String {
        RANK_TITLE.to_string()
    }

    fn helper_title(&self, _cfg: &ServeConfig, role: &str, launcher: u32) -> Option<String> {
        match role {
            PRTE => Some(prte_title(launcher)),
            COORDINATOR => Some(COORDINATOR_TITLE.to_string()),
            _ => None,
        }
    }

    /// The MPI runtime mpi4py's spawn starts beside the ranks.
    fn companion_role(&self) -> Option<&'static str> {
        Some(PRTE)
    }

    fn logger(&self, cfg: &ServeConfig, title: &str, _dp: u32, _tp: u32) -> Logger {
        Logger::new(cfg.release, title, &TrtllmLines)
    }

    /// TensorRT-LLM's start-up failures end the launcher before any rank starts.
    fn launch(&self, cfg: &ServeConfig) -> Result<Logger, i32> {
        let log = Logger::new(cfg.release, "trtllm-serve", &TrtllmLines);
        match boot::launcher_lines(&log, cfg) {
            Some(code) => Err(code),
            None => Ok(log),
        }
    }

    fn serving_lines(&self, log: &Logger, cfg: &ServeConfig, _port: u16, start_unix: f64) {
        boot::server_lines(log, cfg, start_unix);
    }

    fn routes(&self) -> Router<Arc<Front>> {
        http::routes()
    }

    fn exposition(
        &self,
        cfg: &ServeConfig,
        _start_unix: f64,
        _now_unix: f64,
    ) -> Box<dyn Exposition> {
        Box::new(TrtllmRegistry::new(cfg))
    }

    // No periodic line: `print_iter_log` is off by default.

    fn shutdown<'a>(
        &'a self,
        front: &'a Arc<Front>,
        procs: &'a mut [EngineProc],
        serving: bool,
    ) -> BoxFuture<'a, i32> {
        boot::shutdown(front, procs, serving).boxed()
    }

    /// The lifespan shutdown has logged `Waiting for application shutdown.` before stopping
    /// the ranks; uvicorn then names its process as it leaves.
    fn closing_lines(&self, log: &Logger, _release: Release, _engine_died: bool) {
        log.uvicorn("Application shutdown complete.");
        log.uvicorn(&format!("Finished server process [{}]", std::process::id()));
    }

    fn engine_boot_lines(&self, log: &Logger, cfg: &ServeConfig) -> crate::error::SimResult<()> {
        boot::rank_lines(log, cfg);
        Ok(())
    }

    fn engine_failure(&self, log: &Logger, kind: FailKind, cfg: &ServeConfig) {
        crate::failures::print_engine_failure(log, kind, cfg);
    }

    fn engine_ready_lines(&self, log: &Logger, cfg: &ServeConfig, elapsed: f64) {
        boot::rank_ready_lines(log, cfg, elapsed);
    }

    fn preempted(&self, log: &Logger, ids: &[u64]) {
        boot::pause_lines(log, ids);
    }
}
