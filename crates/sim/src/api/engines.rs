//! The API server's engine processes: one `VLLM::EngineCore`, or with `--data-parallel-size N`
//! one `VLLM::EngineCore_DP{i}` per rank plus a `VLLM::DPCoordinator`, as `vllm serve` starts
//! them (its children, in its process group). Each engine talks to the API server over a
//! socket pair of its own, passed as fd 3. Under `--engine sglang` the engines are the
//! rank-0 schedulers (`sglang::scheduler_TP0`…), the coordinator is the data-parallel
//! controller, and a detokenizer (`sglang::detokenizer`) is started beside them.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use super::procs::EngineProc;
use crate::fds::pass_as_fd3;
use crate::settings::{ServeConfig, CONFIG_ENV, FD_ENV};
use crate::surface::Surface;
use crate::worker::{COORDINATOR, DP_RANK_ENV, ROLE_ENV};

/// The engines, the API server's ends of their sockets, and the coordinator.
pub struct Started {
    pub engines: Vec<EngineProc>,
    pub sockets: Vec<StdUnixStream>,
    pub coordinator: Option<Coordinator>,
    /// SGLang's detokenizer, TensorRT-LLM's `prte` (None for vLLM).
    pub detokenizer: Option<Coordinator>,
}

/// The data-parallel coordinator and the write end of its death pipe (it exits when the API
/// server does, however the API server ends).
pub struct Coordinator {
    pub child: Child,
    _death: OwnedFd,
}

/// Starts the coordinator (data parallel only) and every engine.
pub fn start(sim: &dyn Surface, cfg: &ServeConfig) -> std::io::Result<Started> {
    let coordinator = if cfg.dp > 1 {
        Some(start_helper(sim, cfg, COORDINATOR)?)
    } else {
        None
    };
    let detokenizer = sim
        .companion_role()
        .map(|role| start_helper(sim, cfg, role))
        .transpose()?;
    let mut engines = Vec::new();
    let mut sockets = Vec::new();
    for rank in 0..cfg.dp {
        let (api_end, engine_end) = StdUnixStream::pair()?;
        let engine_fd = engine_end.as_raw_fd();
        let title = sim.engine_title(cfg, rank);
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg0(&title)
            .args(["sim", "engine-core"])
            .env(CONFIG_ENV, cfg.to_env())
            .env(FD_ENV, "3")
            .env(DP_RANK_ENV, rank.to_string());
        // SAFETY: the hook only calls dup2/fcntl between fork and exec.
        unsafe {
            cmd.pre_exec(move || pass_as_fd3(engine_fd));
        }
        let child = cmd.spawn()?;
        drop(engine_end);
        engines.push(EngineProc {
            pid: child.id(),
            child,
            name: sim.engine_name(&title),
        });
        sockets.push(api_end);
    }
    Ok(Started {
        engines,
        sockets,
        coordinator,
        detokenizer,
    })
}

/// Starts a helper process (`role`: [`COORDINATOR`], or the engine's companion) that lives as long as
/// the API server.
fn start_helper(sim: &dyn Surface, cfg: &ServeConfig, role: &str) -> std::io::Result<Coordinator> {
    let title = sim
        .helper_title(cfg, role, std::process::id())
        .unwrap_or_else(|| "VLLM::DPCoordinator".to_string());
    // Both ends close on exec: the read end reaches the coordinator as its fd 3 (dup2 clears
    // the flag there), and no child may hold the write end, or the coordinator never sees EOF.
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let fd = read.as_raw_fd();
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0(&title)
        .args(["sim", "worker"])
        .env(CONFIG_ENV, cfg.to_env())
        .env(ROLE_ENV, role);
    // SAFETY: the hook only calls dup2/fcntl between fork and exec.
    unsafe {
        cmd.pre_exec(move || pass_as_fd3(fd));
    }
    let child = cmd.spawn()?;
    drop(read);
    Ok(Coordinator {
        child,
        _death: write,
    })
}
