//! `teardown.teardown` of 0.3.1 on the library's teardown (the run crate's `procs::teardown`,
//! which `inferlint teardown` runs): the process table, the signals, the GPU reading and the
//! clock come from Python's hooks, so the staged stop — SIGTERM, the grace, SIGKILL of the
//! survivors, the clear readings — is written once.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::core::procs::Signal;
use crate::core::{gpu, procs};
use crate::system::{proc_info, used_mib, FirstError, ProcRow, ReadingRow};

/// Python's hooks as the library's machine. A hook that raises is kept and raised at the end
/// (the stop goes on); a GPU reading that raises `OSError`, `SubprocessError` or `ValueError`
/// is unreadable, as in 0.3.1.
struct PySystem<'a, 'py> {
    py: Python<'py>,
    list_procs: Bound<'py, PyAny>,
    kill: Bound<'py, PyAny>,
    read_used: Bound<'py, PyAny>,
    sleep: Bound<'py, PyAny>,
    clock: Bound<'py, PyAny>,
    subprocess_error: Bound<'py, PyAny>,
    error: &'a FirstError,
}

impl procs::System for PySystem<'_, '_> {
    fn processes(&mut self) -> Option<Vec<procs::ProcInfo>> {
        match self
            .list_procs
            .call0()
            .and_then(|v| v.extract::<Vec<ProcRow>>())
        {
            Ok(rows) => Some(rows.into_iter().map(proc_info).collect()),
            Err(e) => {
                self.error.keep(e);
                Some(Vec::new())
            }
        }
    }

    fn signal(&mut self, target: &procs::Target, sig: Signal) -> bool {
        self.signal_all(std::slice::from_ref(target), sig)
            .first()
            .copied()
            .unwrap_or(false)
    }

    /// One `kill(pids, sig)` call for all of them, as 0.3.1 made it.
    fn signal_all(&mut self, targets: &[procs::Target], sig: Signal) -> Vec<bool> {
        let pids: Vec<i32> = targets.iter().map(|t| t.pid).collect();
        match self
            .kill
            .call1((pids, sig as i32))
            .and_then(|v| v.extract::<Vec<i32>>())
        {
            Ok(sent) => targets.iter().map(|t| sent.contains(&t.pid)).collect(),
            Err(e) => {
                self.error.keep(e);
                vec![false; targets.len()]
            }
        }
    }

    fn gpu_used_mib(&mut self) -> Option<u64> {
        used_mib(self.py, &self.read_used, &self.subprocess_error, self.error)
    }

    fn now(&self) -> f64 {
        match self.clock.call0().and_then(|v| v.extract::<f64>()) {
            Ok(t) => t,
            Err(e) => {
                self.error.keep(e);
                f64::INFINITY
            }
        }
    }

    fn sleep(&mut self, secs: f64) {
        if let Err(e) = self.sleep.call1((secs,)) {
            self.error.keep(e);
        }
    }
}

/// The staged teardown through Python's hooks: `(target pids, clear, readings, reason)`.
/// `kill(pids, signal)` returns the pids it signalled; `list_procs()` the table as rows.
#[pyfunction]
#[pyo3(signature = (
    list_procs, kill, read_used, sleep, clock, *, grace_s, self_pid, max_used_mib,
    consecutive, interval_s, timeout_s, engine=None
))]
#[allow(clippy::too_many_arguments)]
pub fn teardown(
    py: Python<'_>,
    list_procs: Bound<'_, PyAny>,
    kill: Bound<'_, PyAny>,
    read_used: Bound<'_, PyAny>,
    sleep: Bound<'_, PyAny>,
    clock: Bound<'_, PyAny>,
    grace_s: f64,
    self_pid: i32,
    max_used_mib: u64,
    consecutive: u32,
    interval_s: f64,
    timeout_s: f64,
    engine: Option<&str>,
) -> PyResult<(Vec<i32>, bool, Vec<ReadingRow>, String)> {
    let error = FirstError::default();
    let mut system = PySystem {
        py,
        list_procs,
        kill,
        read_used,
        sleep,
        clock,
        subprocess_error: py.import("subprocess")?.getattr("SubprocessError")?,
        error: &error,
    };
    let opts = procs::TeardownOptions {
        engine: crate::facts::engine_arg(engine)?,
        self_pid,
        // 0.3.1 stops every user's servers it may signal.
        uid: None,
        grace_s: grace_s.max(0.0),
        poll_s: 0.5,
        clear: gpu::ClearOptions {
            max_used_mib,
            consecutive,
            timeout_s,
            interval_s,
            require_gpu: true,
        },
        dry_run: false,
    };
    let outcome =
        procs::teardown(&mut system, &opts).map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(e) = error.take() {
        return Err(e);
    }
    let targets = outcome.selection.targets.iter().map(|t| t.pid).collect();
    let Some(clear) = outcome.clear else {
        return Err(PyValueError::new_err("the teardown took no reading"));
    };
    let readings = clear
        .readings
        .iter()
        .map(|x| ((x.elapsed_s * 1000.0).round() / 1000.0, x.used, x.n_live))
        .collect();
    Ok((targets, clear.clear, readings, clear.reason))
}
