//! The run's GPUs before the server starts (the T2 gate, docs/design/run.md#the-gpu-gate) and after
//! it stopped (step 12), judged on a shared node (docs/supervision.md, "Sharing the node").
//!
//! Both judge only the run's scope: its GPUs (`--gpus`, else CUDA_VISIBLE_DEVICES, else
//! Slurm's, else every GPU) and its own processes. Other server processes are never signalled
//! by a run: they are listed as left alone, and block the run only where they hold memory on
//! the run's cards. The run's own tree is torn down by its supervisor before `after_stop`
//! judges what is left. Where no GPU can be read at all (a CPU build, CI), T2 cannot be about
//! GPU memory: the readings then judge the run's own processes, and otherwise T2 is N/A with a
//! note that says why.

use std::time::Duration;

use inferlint_supervisor::TeardownReport;

use inferlint_core::checks::t2;
use inferlint_core::result::CheckResult;
use inferlint_host::gpu::{self, GpuScope, GpuSource};

use super::GpuCheck;
use inferlint_host::neighbours::{self, Judged, Neighbour, Own, RealNode, WaitOptions};

/// The gate's FAIL prefix.
pub const GATE_PREFIX: &str = "card not clear; refusing to start a server. ";
/// The note when no GPU can be read.
pub const NO_GPU_NOTE: &str = "no NVIDIA GPU found (nvidia-smi is missing or failed): T2 checks only that no inference server process is alive";
/// The note when no GPU can be read and other server processes run.
pub const NO_GPU_NEIGHBOURS_NOTE: &str = "no NVIDIA GPU found (nvidia-smi is missing or failed): with no GPU memory to judge, T2 checks only the run's own server processes; the others below are not the run's";

/// Seconds between two readings (docs/design/gpus.md#two-consecutive-clear-readings), when the fast
/// path does not hold.
pub const READING_INTERVAL_S: f64 = 2.0;

/// What the gate or the stop found.
#[derive(Clone, Debug)]
pub struct Judgement {
    pub t2: CheckResult,
    /// Notes and `left alone: …` lines to print before T2.
    pub lines: Vec<String>,
    /// The readings' detail (None when no reading was taken).
    pub judged: Option<Judged>,
}

impl Judgement {
    fn only(t2: CheckResult) -> Judgement {
        Judgement {
            t2,
            lines: Vec::new(),
            judged: None,
        }
    }

    /// Whether a server may start after this gate: PASS, or N/A (no NVIDIA GPU here and none
    /// of the run's processes alive, or the check skipped).
    pub fn clear_to_start(&self) -> bool {
        matches!(
            self.t2.status,
            inferlint_core::result::Status::Pass | inferlint_core::result::Status::NotApplicable
        )
    }

    /// The largest used MiB of the run's cards at the last reading.
    pub fn used_mib(&self) -> Option<u64> {
        self.judged
            .as_ref()
            .and_then(|j| j.clear.readings.last())
            .and_then(|r| r.used)
    }
}

fn options(timeout: Duration, readable: bool, baseline: Option<u64>, at_stop: bool) -> WaitOptions {
    WaitOptions {
        max_used_mib: gpu::DEFAULT_MAX_USED_MIB,
        consecutive: 2,
        timeout_s: timeout.as_secs_f64(),
        interval_s: READING_INTERVAL_S,
        settle_s: Some(neighbours::SETTLE_S),
        require_gpu: readable,
        baseline_mib: baseline,
        self_pid: std::process::id() as i32,
        end_when_others_hold: at_stop,
    }
}

/// T2 from the readings: strict with a GPU; without one, FAIL while one of the run's own
/// processes lives, else N/A.
fn t2(j: &Judged, prefix: &str, scope: &GpuScope) -> CheckResult {
    let clear = &j.clear;
    let r = if j.held_by_others {
        let holders: Vec<String> = j.other_holders.iter().map(|h| h.describe()).collect();
        t2::held_by_others(&holders)
    } else {
        t2::run_result(clear, prefix, j.neighbours.len())
    };
    let mut e = inferlint_core::evidence::T2Evidence {
        readings: Some(clear.readings_json()),
        ..Default::default()
    };
    j.fill_evidence(scope, &mut e);
    r.with_evidence(e)
}

/// `on the run's GPUs: pid 4711 (alice) VLLM::EngineCore, 21768 MiB on GPU 1`, for a T2 that
/// failed.
fn holder_lines(j: &Judged) -> Vec<String> {
    j.other_holders
        .iter()
        .map(|h| format!("on the run's GPUs: {}", h.describe()))
        .collect()
}

fn left_alone_lines(n: &[Neighbour]) -> Vec<String> {
    n.iter().map(Neighbour::line).collect()
}

/// The T2 gate: two consecutive clear readings of the run's cards within `timeout`.
pub async fn before_start(timeout: Duration, mode: GpuCheck, scope: &GpuScope) -> Judgement {
    let scope = scope.clone();
    tokio::task::spawn_blocking(move || before_start_blocking(timeout, mode, &scope))
        .await
        .unwrap_or_else(|e| Judgement::only(t2::unreadable(format!("the GPU check failed: {e}"))))
}

/// [`before_start`] on the calling thread, which it blocks for the readings: a node agent's
/// gate on its own node's GPUs before it starts its part (docs/design/nodes.md#the-gate-on-every-node).
pub fn before_start_blocking(timeout: Duration, mode: GpuCheck, scope: &GpuScope) -> Judgement {
    if mode == GpuCheck::Off {
        return Judgement::only(t2::skipped());
    }
    let mut node = RealNode::new(gpu::source_from_env(), scope.clone());
    let readable = node.readable();
    // Nothing of this run runs yet: its tree is trivially gone.
    let own = Own {
        tree_gone: true,
        ..Own::default()
    };
    let j = match neighbours::wait_clear(&mut node, &own, &options(timeout, readable, None, false))
    {
        Ok(j) => j,
        Err(e) => return Judgement::only(t2::unreadable(e.to_string())),
    };
    let mut lines = Vec::new();
    if !readable {
        lines.push(format!(
            "note: {}",
            if j.neighbours.is_empty() {
                NO_GPU_NOTE
            } else {
                NO_GPU_NEIGHBOURS_NOTE
            }
        ));
    }
    if readable && j.last.as_ref().is_some_and(|r| r.gpus.is_empty()) {
        let t2 = t2::scope_names_no_gpu(GATE_PREFIX, &scope.describe());
        return Judgement {
            t2,
            lines,
            judged: Some(j),
        };
    }
    if readable && scope.ids.is_some() {
        lines.push(format!("note: judging {}", scope.describe()));
    }
    lines.extend(left_alone_lines(&j.neighbours));
    let t2 = t2(&j, GATE_PREFIX, scope);
    if t2.status == inferlint_core::result::Status::Fail {
        lines.extend(holder_lines(&j));
        // Every GPU was judged, and some card is free: naming the run's GPUs may be all it takes.
        let free: Vec<String> = j
            .last
            .iter()
            .flat_map(|r| &r.gpus)
            .filter(|g| {
                g.memory_used_mib
                    .is_some_and(|u| u <= gpu::DEFAULT_MAX_USED_MIB)
            })
            .map(|g| g.index.to_string())
            .collect();
        if scope.ids.is_none() && !free.is_empty() {
            lines.push(format!(
                "note: GPU {} is free; name the run's GPUs with --gpus (or CUDA_VISIBLE_DEVICES) to judge only those",
                free.join(", ")
            ));
        }
    }
    Judgement {
        t2,
        lines,
        judged: Some(j),
    }
}

/// After the server's own tree was torn down by its supervisor: the readings of the run's
/// cards, as T2. Nothing is signalled here. Its evidence names what the run's teardown left
/// (`left_after_the_server_stopped`), what it signalled, and the server processes that are not
/// the run's (left alone).
pub async fn after_stop(
    timeout: Duration,
    report: &TeardownReport,
    run_id: Option<String>,
    scope: &GpuScope,
    baseline_mib: Option<u64>,
) -> Judgement {
    let (report, scope) = (report.clone(), scope.clone());
    tokio::task::spawn_blocking(move || {
        after_stop_blocking(timeout, &report, run_id, &scope, baseline_mib)
    })
    .await
    .unwrap_or_else(|e| Judgement::only(t2::unreadable(format!("the GPU check failed: {e}"))))
}

/// [`after_stop`] on the calling thread, which it blocks for the readings: a node agent's T2
/// on its own node's GPUs (docs/design/nodes.md#t2-on-every-node).
pub fn after_stop_blocking(
    timeout: Duration,
    report: &TeardownReport,
    run_id: Option<String>,
    scope: &GpuScope,
    baseline_mib: Option<u64>,
) -> Judgement {
    let signalled = report.signalled.clone();
    let leftovers: Vec<i32> = report.leftovers.iter().map(|l| l.pid).collect();
    let own = Own {
        run_id,
        leftovers: leftovers.clone(),
        tree_gone: report.is_clean(),
    };
    if !std::path::Path::new("/proc/self").exists() {
        return Judgement::only(t2::needs_linux("Checking that the GPU is free"));
    }
    let source = gpu::source_from_env();
    let readable = !matches!(source, GpuSource::None);
    let mut node = RealNode::new(source, scope.clone());
    match neighbours::wait_clear(
        &mut node,
        &own,
        &options(timeout, readable, baseline_mib, true),
    ) {
        Ok(j) => {
            let left: Vec<i32> = j.own_alive.iter().copied().chain(leftovers).collect();
            let mut left: Vec<i32> = left;
            left.sort_unstable();
            left.dedup();
            let mut t2 = t2(&j, "", scope);
            if let inferlint_core::evidence::Evidence::T2(e) = &mut t2.evidence {
                e.left_after_the_server_stopped = Some(left);
                e.signalled_by_the_server_teardown = Some(signalled);
                e.fast_readings = Some(j.fast);
            }
            let mut lines = left_alone_lines(&j.neighbours);
            if t2.status != inferlint_core::result::Status::Pass {
                lines.extend(holder_lines(&j));
            }
            Judgement {
                t2,
                lines,
                judged: Some(j),
            }
        }
        Err(e) => Judgement::only(t2::unreadable(e.to_string())),
    }
}
