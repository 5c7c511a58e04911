//! The engine processes as the API server knows them, and their stop: SIGTERM, then SIGKILL for
//! those still alive after the grace period, then their children (workers) that outlived them.

use std::process::Child;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::logline::{sites, Logger};
use crate::os;

/// One engine process as the API server knows it.
pub struct EngineProc {
    pub child: Child,
    /// The engine's own pid (its Hello; it differs from the child's with double-fork).
    pub pid: u32,
    /// `EngineCore` or `EngineCore_DP{i}`, as the process manager's lines name it.
    pub name: String,
}

/// SIGKILLs the engines still alive, logging as vLLM's process manager does.
fn force_kill_engines(log: &Logger, procs: &[EngineProc]) {
    let s = sites(log.release);
    let alive: Vec<&EngineProc> = procs.iter().filter(|p| os::is_alive(p.pid)).collect();
    if alive.is_empty() {
        return;
    }
    if log.is_vllm() {
        log.warn(
            s.procman[1],
            &format!(
                "[shutdown] Process manager: force killing remaining processes count={}",
                alive.len()
            ),
        );
    }
    for p in alive {
        if log.is_vllm() {
            log.warn(
                s.procman[2],
                &format!(
                    "[shutdown] Process manager: force killing remaining process {} pid {}",
                    p.name, p.pid
                ),
            );
        }
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGKILL);
    }
}

/// SIGTERM to every engine, then SIGKILL for those still alive after `grace`, then their
/// children (workers) that outlived them. Returns once they are gone (or 5 s more passed).
pub(crate) async fn stop_engines(log: &Logger, procs: &mut [EngineProc], grace: Duration) {
    let s = sites(log.release);
    let kids: Vec<u32> = procs.iter().flat_map(|p| os::children_of(p.pid)).collect();
    for p in procs.iter() {
        if log.is_vllm() {
            log.info(
                s.procman[0],
                &format!(
                    "[shutdown] Process manager: send sigterm to process {}",
                    p.name
                ),
            );
        }
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGTERM);
    }
    if !wait_all_gone(procs, grace).await {
        force_kill_engines(log, procs);
        wait_all_gone(procs, Duration::from_secs(5)).await;
    }
    // Workers follow their engine through its death pipe; kill any that did not.
    tokio::time::sleep(Duration::from_millis(20)).await;
    force_kill_subprocesses(log, &kids);
}

async fn wait_all_gone(procs: &mut [EngineProc], limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    for p in procs.iter_mut() {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if !wait_gone(&mut p.child, p.pid, left).await {
            return false;
        }
    }
    true
}

/// SIGKILLs the engine's children (TP workers) that outlived it.
fn force_kill_subprocesses(log: &Logger, kids: &[u32]) {
    let s = sites(log.release);
    for &k in kids {
        if os::is_alive(k) {
            let name = std::fs::read_to_string(format!("/proc/{k}/cmdline"))
                .ok()
                .and_then(|c| c.split('\0').next().map(str::to_string))
                .unwrap_or_default();
            if log.is_vllm() {
                log.warn(
                    s.subprocess_kill,
                    &format!("[shutdown] force killing sub process {name} pid {k}"),
                );
            }
            let _ = kill(Pid::from_raw(k as i32), Signal::SIGKILL);
        }
    }
}

/// Waits until `pid` is gone (reaping it when it is our child), up to `limit`.
async fn wait_gone(child: &mut Child, pid: u32, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let _ = child.try_wait();
        if !os::is_alive(pid) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
