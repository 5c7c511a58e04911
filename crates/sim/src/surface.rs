//! The one interface every simulated engine implements: what differs between vLLM, SGLang and
//! TensorRT-LLM where inferlint reads a server (docs/design/engines.md#one-interface-three-engines).
//!
//! The generic layers (the flags' resolution, the API server, the engine and worker processes)
//! call only this trait; each engine's folder ([`crate::vllm`], [`crate::sglang`],
//! [`crate::trtllm`]) implements it, and [`crate::registry`] picks one by the engine's key.

use std::ops::Range;
use std::sync::Arc;

use axum::Router;
use futures_util::future::BoxFuture;

use crate::api::front::Front;
use crate::api::procs::EngineProc;
use crate::logline::Logger;
use crate::metrics::Exposition;
use crate::settings::{EngineOptions, FailKind, Release, ServeConfig};

/// An engine as the simulator shows it: flags' defaults, process titles, log lines, start-up
/// failures, endpoints, metric families and shutdown.
pub trait Surface: Sync {
    // Flags.

    /// Tokens per KV block when `--block-size` is not given.
    fn default_block_size(&self) -> u32;
    /// The KV pool in tokens that the engine's own flags ask for (SGLang's `--max-total-tokens`).
    fn pool_tokens_flag(&self, _options: &EngineOptions) -> Option<u32> {
        None
    }
    /// Whether one of the KV pool's blocks is a reserved null block no request can use.
    fn reserves_null_block(&self) -> bool {
        false
    }
    /// An error naming the flag when this engine cannot print the start-up failure `kind`.
    fn check_fail_boot(&self, _kind: Option<FailKind>) -> Result<(), String> {
        Ok(())
    }

    // Processes and their titles.

    /// The engine process of data-parallel rank `rank`.
    fn engine_title(&self, cfg: &ServeConfig, rank: u32) -> String;
    /// A worker of data-parallel rank `dp`, tensor-parallel rank `tp`.
    fn worker_title(&self, cfg: &ServeConfig, dp: u32, tp: u32) -> String;
    /// The engine's name in the process manager's lines (`EngineCore`, `EngineCore_DP1`), from
    /// its title.
    fn engine_name(&self, title: &str) -> String {
        title.to_string()
    }
    /// The helper process with role `role` (`crate::worker::ROLE_ENV`) started by the API
    /// server `launcher`; None for a role this engine does not have.
    fn helper_title(&self, cfg: &ServeConfig, role: &str, launcher: u32) -> Option<String>;
    /// The helper every run starts beside the engines (SGLang's detokenizer, TensorRT-LLM's
    /// `prte`), by role.
    fn companion_role(&self) -> Option<&'static str> {
        None
    }
    /// The tensor-parallel ranks that get a worker process of their own beside the engine: by
    /// default the ranks above 0, rank 0 being the engine process itself (SGLang's scheduler,
    /// TensorRT-LLM's rank 0).
    fn worker_ranks(&self, cfg: &ServeConfig) -> Range<u32> {
        match cfg.tp {
            0 | 1 => 0..0,
            n => 1..n,
        }
    }
    /// The logger of a process titled `title`, in the engine's log shape.
    fn logger(&self, cfg: &ServeConfig, title: &str, dp: u32, tp: u32) -> Logger;

    // The API server.

    /// The launcher's lines before the engines start: its logger, or the exit status of a
    /// launcher that fails before any engine exists.
    fn launch(&self, cfg: &ServeConfig) -> Result<Logger, i32>;
    /// An engine failed to start: the launcher's own lines, before the API server's failure.
    fn launch_failed(&self, _log: &Logger) {}
    /// The lines once every engine is ready, before the first request is served.
    fn serving_lines(&self, log: &Logger, cfg: &ServeConfig, port: u16, start_unix: f64);
    /// The HTTP endpoints (the shared fallback and middleware are added around them).
    fn routes(&self) -> Router<Arc<Front>>;
    /// The `/metrics` families and their arithmetic.
    fn exposition(&self, cfg: &ServeConfig, start_unix: f64, now_unix: f64) -> Box<dyn Exposition>;
    /// Whether requests are served before the launcher's own warm-up (SGLang's is not).
    fn starts_warm(&self) -> bool {
        true
    }
    /// Whether the instrumentator labels every path as its handler, not only the routes (SGLang).
    fn label_every_path(&self) -> bool {
        false
    }
    /// Routes beyond `crate::api::http::ROUTES` that the boot log lists and the instrumentator
    /// names as handlers (vLLM's development routes, in dev mode).
    fn more_routes(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// The launcher's warm-up requests, once serving.
    fn warm_up(&self, _front: Arc<Front>, _port: u16) -> Option<BoxFuture<'static, ()>> {
        None
    }
    /// The periodic stats lines while serving (none unless the engine prints them).
    fn stats_loop(&self, _front: Arc<Front>) -> Option<BoxFuture<'static, ()>> {
        None
    }
    /// The orderly stop on SIGTERM/SIGINT: its lines, the engines stopped; the exit status.
    fn shutdown<'a>(
        &'a self,
        front: &'a Arc<Front>,
        procs: &'a mut [EngineProc],
        serving: bool,
    ) -> BoxFuture<'a, i32>;
    /// uvicorn's last lines, once the HTTP server stopped.
    fn closing_lines(&self, log: &Logger, release: Release, engine_died: bool) {
        log.uvicorn("Waiting for application shutdown.");
        log.uvicorn("Application shutdown complete.");
        if release == Release::V033 && engine_died {
            log.uvicorn(&format!("Finished server process [{}]", std::process::id()));
        }
    }

    // The engine process.

    /// The engine's boot lines up to its start-up failure point.
    fn engine_boot_lines(&self, log: &Logger, cfg: &ServeConfig) -> crate::error::SimResult<()>;
    /// The engine's start-up failure `kind`.
    fn engine_failure(&self, log: &Logger, kind: FailKind, cfg: &ServeConfig);
    /// The engine's boot lines after the pool is sized, `elapsed` seconds into its boot.
    fn engine_ready_lines(&self, log: &Logger, cfg: &ServeConfig, elapsed: f64);
    /// Whether the engine process holds its GPU even when it has workers (its rank 0 is one).
    fn engine_is_rank0(&self) -> bool {
        true
    }
    /// Requests the scheduler preempted in a step (TensorRT-LLM logs each).
    fn preempted(&self, _log: &Logger, _ids: &[u64]) {}
    /// Whether the engine empties its prefix cache with `hold` still in use, and its lines
    /// saying so (an engine without a reset route is never asked).
    fn reset_prefix_cache(&self, _log: &Logger, hold: CacheHold) -> bool {
        hold.blocks == 0
    }
}

/// What an engine holds when asked to empty its prefix cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheHold {
    /// KV blocks held by requests (not counting the reserved null block).
    pub blocks: u32,
    pub running: u32,
    pub waiting: u32,
}
