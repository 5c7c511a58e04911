//! SGLang's answers to the [`Surface`] the generic layers ask.

use std::sync::Arc;

use axum::Router;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::lines::SglangLines;
use super::metrics::SglangRegistry;
use super::{boot, failures, http, log_prefix, scheduler_title};
use super::{DETOKENIZER_TITLE, DP_CONTROLLER_TITLE};
use crate::api::front::Front;
use crate::api::procs::EngineProc;
use crate::logline::Logger;
use crate::metrics::Exposition;
use crate::settings::{EngineOptions, FailKind, ServeConfig};
use crate::surface::{CacheHold, Surface};
use crate::worker::{COORDINATOR, DETOKENIZER};

/// SGLang 0.5, as [`crate::registry`] names it.
pub struct Sglang;

impl Surface for Sglang {
    /// SGLang's page size defaults to 1 token (its server_args).
    fn default_block_size(&self) -> u32 {
        1
    }

    fn pool_tokens_flag(&self, options: &EngineOptions) -> Option<u32> {
        options.max_total_tokens
    }

    fn check_fail_boot(&self, kind: Option<FailKind>) -> Result<(), String> {
        failures::supported(kind)
    }

    /// Rank 0's scheduler is the engine process.
    fn engine_title(&self, cfg: &ServeConfig, rank: u32) -> String {
        scheduler_title(cfg, rank, 0)
    }

    fn worker_title(&self, cfg: &ServeConfig, dp: u32, tp: u32) -> String {
        scheduler_title(cfg, dp, tp)
    }

    fn engine_name(&self, title: &str) -> String {
        title.trim_start_matches("sglang::").to_string()
    }

    fn helper_title(&self, _cfg: &ServeConfig, role: &str, _launcher: u32) -> Option<String> {
        match role {
            COORDINATOR => Some(DP_CONTROLLER_TITLE.into()),
            DETOKENIZER => Some(DETOKENIZER_TITLE.into()),
            _ => None,
        }
    }

    fn companion_role(&self) -> Option<&'static str> {
        Some(DETOKENIZER)
    }

    fn logger(&self, cfg: &ServeConfig, title: &str, dp: u32, tp: u32) -> Logger {
        Logger::new(
            cfg.release,
            title.trim_start_matches("sglang::"),
            &SglangLines,
        )
        .tagged(&log_prefix(cfg, dp, tp))
    }

    fn launch(&self, cfg: &ServeConfig) -> Result<Logger, i32> {
        let log = Logger::new(cfg.release, "APIServer", &SglangLines);
        boot::launcher_lines(&log, cfg);
        Ok(log)
    }

    fn launch_failed(&self, log: &Logger) {
        failures::print_launcher_failure(log);
        // SGLang's kill_process_tree ends the launcher too, with SIGKILL.
        let _ = kill(Pid::this(), Signal::SIGKILL);
    }

    fn serving_lines(&self, log: &Logger, cfg: &ServeConfig, port: u16, _start_unix: f64) {
        boot::uvicorn_lines(log, cfg, port);
    }

    fn routes(&self) -> Router<Arc<Front>> {
        http::routes()
    }

    fn exposition(
        &self,
        cfg: &ServeConfig,
        _start_unix: f64,
        now_unix: f64,
    ) -> Box<dyn Exposition> {
        Box::new(SglangRegistry::new(cfg, now_unix))
    }

    fn starts_warm(&self) -> bool {
        false
    }

    fn label_every_path(&self) -> bool {
        true
    }

    fn warm_up(&self, front: Arc<Front>, port: u16) -> Option<BoxFuture<'static, ()>> {
        Some(http::warm_up(front, port).boxed())
    }

    fn stats_loop(&self, front: Arc<Front>) -> Option<BoxFuture<'static, ()>> {
        Some(boot::decode_log_loop(front).boxed())
    }

    fn shutdown<'a>(
        &'a self,
        front: &'a Arc<Front>,
        procs: &'a mut [EngineProc],
        serving: bool,
    ) -> BoxFuture<'a, i32> {
        boot::shutdown(front, procs, serving).boxed()
    }

    fn engine_boot_lines(&self, log: &Logger, cfg: &ServeConfig) -> crate::error::SimResult<()> {
        boot::scheduler_lines(log, cfg);
        Ok(())
    }

    fn engine_failure(&self, log: &Logger, kind: FailKind, _cfg: &ServeConfig) {
        failures::print_scheduler_failure(log, kind);
    }

    fn engine_ready_lines(&self, log: &Logger, cfg: &ServeConfig, elapsed: f64) {
        boot::scheduler_ready_lines(log, cfg, elapsed);
    }

    /// The scheduler's `flush_cache`: only with nothing running or queued.
    fn reset_prefix_cache(&self, log: &Logger, hold: CacheHold) -> bool {
        if hold.running == 0 && hold.waiting == 0 {
            log.info("", "Cache flushed successfully!");
            return true;
        }
        log.warn(
            "",
            &format!(
                "Cache not flushed because there are pending requests. #queue-req: {}, #running-req: {}",
                hold.waiting, hold.running
            ),
        );
        false
    }
}
