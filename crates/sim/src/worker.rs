//! The processes beside the engine: its tensor-parallel workers (`VLLM::Worker_TP{n}`, or
//! `VLLM::Worker_DP{d}_TP{n}` with data parallelism too), each holding the simulated memory of
//! its own GPU, and the data-parallel coordinator (`VLLM::DPCoordinator`). Both are
//! `inferlint sim worker` and end when their parent does (a death pipe on fd 3).
//!
//! Under `--engine sglang` the same machinery runs SGLang's processes: the scheduler of each
//! tensor-parallel rank above 0 (`sglang::scheduler_TP{n}`; rank 0's is the engine process),
//! the detokenizer and, with data parallelism, the data-parallel controller.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use nix::sys::signal::Signal;

use crate::fds::{pass_as_fd3, set_cloexec, SignalPipe};
use crate::gpu;
use crate::logline::{sites, Logger};
use crate::os;
use crate::settings::{ServeConfig, CHANNEL_FD, CONFIG_ENV};
use crate::surface::Surface;

/// The environment variable naming a worker's tensor-parallel rank.
pub const RANK_ENV: &str = "INFERLINT_SIM_WORKER_RANK";
/// The environment variable naming an engine's (and its workers') data-parallel rank.
pub const DP_RANK_ENV: &str = "INFERLINT_SIM_DP_RANK";
/// The environment variable that makes `sim worker` the data-parallel coordinator instead.
pub const ROLE_ENV: &str = "INFERLINT_SIM_ROLE";
/// [`ROLE_ENV`]'s value for the coordinator.
pub const COORDINATOR: &str = "coordinator";
/// [`ROLE_ENV`]'s value for SGLang's detokenizer.
pub const DETOKENIZER: &str = "detokenizer";
/// [`ROLE_ENV`]'s value for TensorRT-LLM's MPI runtime (`prte`).
pub const PRTE: &str = "prte";

/// This process's data-parallel rank (0 without data parallelism).
pub(crate) fn dp_rank() -> u32 {
    std::env::var(DP_RANK_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

pub(crate) fn spawn_workers(
    sim: &dyn Surface,
    cfg: &ServeConfig,
    death_read: &OwnedFd,
) -> crate::error::SimResult<Vec<Child>> {
    let mut out = Vec::new();
    for rank in sim.worker_ranks(cfg) {
        let fd = death_read.as_fd().as_raw_fd();
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg0(sim.worker_title(cfg, dp_rank(), rank))
            .args(["sim", "worker"])
            .env(RANK_ENV, rank.to_string())
            .env(CONFIG_ENV, cfg.to_env());
        // SAFETY: the hook only calls dup2/fcntl.
        unsafe {
            cmd.pre_exec(move || pass_as_fd3(fd));
        }
        out.push(cmd.spawn()?);
    }
    Ok(out)
}

/// SIGTERM to every worker, then each reaped.
fn terminate_and_wait(workers: &mut [Child]) {
    for w in workers.iter() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(w.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    for w in workers.iter_mut() {
        let _ = w.wait();
    }
}

pub(crate) fn stop_workers(log: &Logger, workers: &mut [Child]) {
    if workers.is_empty() {
        return;
    }
    if !log.is_vllm() {
        // SGLang's schedulers log nothing of their teardown.
        terminate_and_wait(workers);
        return;
    }
    let s = sites(log.release);
    log.info(
        s.executor[0],
        &format!(
            "[shutdown] Executor: waiting for worker exit count={}",
            workers.len()
        ),
    );
    terminate_and_wait(workers);
    log.info(
        s.executor[1],
        "[shutdown] Executor: all workers exited gracefully",
    );
}

/// `inferlint sim worker`: a tensor-parallel worker, or (with [`ROLE_ENV`]) the data-parallel
/// coordinator. A worker holds its GPU's simulated memory; both exit when their parent does
/// (the death pipe on fd 3 reaches EOF) or on SIGTERM.
pub fn run(sim: &dyn Surface, cfg: &ServeConfig) -> crate::error::SimResult<i32> {
    let rank: u32 = std::env::var(RANK_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let role = std::env::var(ROLE_ENV).ok();
    let helper = role
        .as_deref()
        .and_then(|r| sim.helper_title(cfg, r, std::os::unix::process::parent_id()));
    let title = match &helper {
        Some(t) => t.clone(),
        None => sim.worker_title(cfg, dp_rank(), rank),
    };
    // The helpers (coordinator, detokenizer) only pass messages: they hold no GPU.
    let coordinator = helper.is_some();
    os::rename(&title);
    let log = sim.logger(cfg, &title, dp_rank(), rank);
    let mut sigs = SignalPipe::new(&[Signal::SIGTERM, Signal::SIGINT])?;
    // SAFETY: the parent passed the read end of its death pipe as fd 3.
    let death = unsafe { OwnedFd::from_raw_fd(CHANNEL_FD) };
    set_cloexec(&death);
    // The coordinator only balances load between the engines: it holds no GPU. Each worker's
    // card is its place among the visible ones (CUDA_VISIBLE_DEVICES), as CUDA renumbers them.
    let _holding = match gpu::dir_from_env().filter(|_| !coordinator) {
        Some(dir) => {
            let card = gpu::my_card(&dir, cfg.gpu_index(dp_rank(), rank))?;
            Some(gpu::hold(&dir, cfg.gpu_mib, card)?)
        }
        None => None,
    };
    loop {
        let (death_ready, sig_ready) = {
            let mut fds = vec![PollFd::new(death.as_fd(), PollFlags::POLLIN)];
            fds.extend(sigs.poll_fds());
            match poll(&mut fds, PollTimeout::NONE) {
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return Ok(1),
                Ok(_) => {}
            }
            let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
            (ready(&fds[0]), fds[1..].iter().any(ready))
        };
        if sig_ready && sigs.take().is_some() {
            return Ok(0);
        }
        if death_ready {
            if !coordinator && log.is_vllm() {
                log.info(
                    sites(cfg.release).worker_parent_exit,
                    "Parent process exited, terminating worker queues",
                );
            }
            return Ok(0);
        }
    }
}
