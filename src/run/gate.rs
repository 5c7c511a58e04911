//! The GPU before the server starts (the T2 gate, spec §4 step 2) and after it stopped (the
//! full teardown of any server process left, and its T2, step 12).
//!
//! Where NVIDIA GPUs exist (or the simulated GPU of `INFERLINT_GPU=sim:DIR`), both are strict:
//! two consecutive clear readings, each with no server process alive and every GPU at most
//! 800 MiB used. Where no GPU can be read at all (a CPU build, the simulator without its GPU,
//! CI), T2 cannot be about GPU memory: the readings then judge the processes alone, a live
//! server process still fails, and otherwise T2 is N/A with a note that says why.

use std::time::Duration;

use inferlint_supervisor::TeardownReport;

use crate::cli::teardown::t2_result;
use crate::gpu::{self, ClearOptions, ClearResult, GpuSource};
use crate::procs::{self, ProcInfo, RealSystem, System, Target, TeardownOptions};
use crate::result::{CheckResult, Tripwire};

use super::GpuCheck;

/// The gate's FAIL prefix.
pub const GATE_PREFIX: &str = "card not clear; refusing to start a server. ";
/// The note when no GPU can be read.
pub const NO_GPU_NOTE: &str = "no NVIDIA GPU found (nvidia-smi is missing or failed): T2 checks only that no inference server process is alive";

/// Seconds between two readings (spec §5.3).
pub const READING_INTERVAL_S: f64 = 2.0;

fn clear_options(timeout: Duration, readable: bool) -> ClearOptions {
    ClearOptions {
        max_used_mib: gpu::DEFAULT_MAX_USED_MIB,
        consecutive: 2,
        timeout_s: timeout.as_secs_f64(),
        interval_s: READING_INTERVAL_S,
        require_gpu: readable,
    }
}

/// The machine as the run sees it. With the simulated GPU (`INFERLINT_GPU=sim:DIR`), the world
/// is that GPU: server processes started for another simulated GPU (their environment names
/// another DIR) belong to another simulated machine, and are neither counted nor stopped. So
/// simulated runs side by side (tests, demos) never see, or kill, each other's servers.
pub struct Machine {
    inner: RealSystem,
    /// `INFERLINT_GPU=sim:DIR`, when the GPU is simulated.
    marker: Option<Vec<u8>>,
}

impl Machine {
    pub fn new() -> (Machine, bool) {
        let source = gpu::source_from_env();
        let readable = !matches!(source, GpuSource::None);
        let marker = match &source {
            GpuSource::Sim(_) => std::env::var(gpu::GPU_ENV)
                .ok()
                .map(|v| format!("{}={v}", gpu::GPU_ENV).into_bytes()),
            _ => None,
        };
        let inner = RealSystem::new(std::path::Path::new("/proc"), source);
        (Machine { inner, marker }, readable)
    }

    fn same_world(&self, p: &ProcInfo) -> bool {
        let Some(m) = &self.marker else { return true };
        if !procs::is_server(p) {
            return true;
        }
        std::fs::read(format!("/proc/{}/environ", p.pid))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == m.as_slice()))
    }
}

impl System for Machine {
    fn processes(&mut self) -> Option<Vec<ProcInfo>> {
        let all = self.inner.processes()?;
        Some(all.into_iter().filter(|p| self.same_world(p)).collect())
    }
    fn signal(&mut self, target: &Target, sig: i32) -> bool {
        self.inner.signal(target, sig)
    }
    fn gpu_used_mib(&mut self) -> Option<u64> {
        self.inner.gpu_used_mib()
    }
    fn now(&self) -> f64 {
        self.inner.now()
    }
    fn sleep(&mut self, secs: f64) {
        self.inner.sleep(secs)
    }
}

/// T2 from the readings: strict with a GPU; without one, FAIL while a server process lives,
/// else N/A.
fn t2(clear: &ClearResult, prefix: &str) -> CheckResult {
    let r = if clear.gpu_unreadable {
        let alive = clear.readings.last().map_or(0, |r| r.n_live);
        if alive > 0 {
            CheckResult::fail(Tripwire::T2, format!("{prefix}{}", clear.reason))
        } else {
            CheckResult::not_applicable(
                Tripwire::T2,
                "no NVIDIA GPU here, so no GPU memory to free; no inference server process is alive",
            )
        }
    } else {
        t2_result(clear, prefix)
    };
    r.with("readings", clear.readings_json())
}

/// The T2 gate: two consecutive clear readings within `timeout`. Returns the result and a
/// note to print (when no GPU can be read).
pub async fn before_start(timeout: Duration, mode: GpuCheck) -> (CheckResult, Option<String>) {
    if mode == GpuCheck::Off {
        return (
            CheckResult::not_applicable(Tripwire::T2, "the GPU check was skipped (--no-gpu-check)"),
            None,
        );
    }
    let joined = tokio::task::spawn_blocking(move || {
        let (mut system, readable) = Machine::new();
        let me = std::process::id() as i32;
        let clear = procs::wait_clear(&mut system, me, &clear_options(timeout, readable));
        (clear, readable)
    })
    .await;
    match joined {
        Ok((Ok(clear), readable)) => {
            let note = (!readable).then(|| NO_GPU_NOTE.to_string());
            (t2(&clear, GATE_PREFIX), note)
        }
        Ok((Err(e), _)) => (CheckResult::unknown(Tripwire::T2, e.to_string()), None),
        Err(e) => (
            CheckResult::unknown(Tripwire::T2, format!("the GPU check failed: {e}")),
            None,
        ),
    }
}

/// After the server's own tree was torn down: the full teardown of any server process of any
/// engine still alive (§5), then the wait for clear readings, as T2. Its evidence names the
/// processes found after the server stopped (`left_after_the_server_stopped`) and what the
/// server's own teardown signalled.
pub async fn after_stop(
    timeout: Duration,
    grace: Duration,
    report: &TeardownReport,
) -> CheckResult {
    let signalled = report.signalled.clone();
    let leftovers: Vec<i32> = report.leftovers.iter().map(|l| l.pid).collect();
    let joined = tokio::task::spawn_blocking(move || {
        let (mut system, readable) = Machine::new();
        let opts = TeardownOptions {
            engine: None,
            uid: Some(inferlint_supervisor::sys::getuid()),
            grace_s: grace.as_secs_f64(),
            clear: clear_options(timeout, readable),
            ..TeardownOptions::default()
        };
        procs::teardown(&mut system, &opts)
    })
    .await;
    match joined {
        Ok(Ok(outcome)) => {
            let left: Vec<i32> = outcome
                .selection
                .targets
                .iter()
                .map(|t| t.pid)
                .chain(leftovers)
                .collect();
            match &outcome.clear {
                Some(clear) => t2(clear, "")
                    .with("left_after_the_server_stopped", left)
                    .with("signalled_by_the_server_teardown", signalled),
                None => CheckResult::unknown(Tripwire::T2, "the teardown took no reading"),
            }
        }
        Ok(Err(procs::TeardownError::NoProc)) => CheckResult::unknown(
            Tripwire::T2,
            "Checking that the GPU is free needs Linux: it finds the server's processes in /proc. Run it where the server runs.",
        ),
        Ok(Err(e)) => CheckResult::unknown(Tripwire::T2, e.to_string()),
        Err(e) => CheckResult::unknown(Tripwire::T2, format!("the teardown failed: {e}")),
    }
}
