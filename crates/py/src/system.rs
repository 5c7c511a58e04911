//! The catalogue, GPUs, processes, the live probe and the wait for a clear card: the library's
//! functions with 0.3.1's injectable hooks (Python callables) where 0.3.1 had them.

use std::cell::RefCell;
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::checks::{out, Checked};
use crate::core::{catalogue, gpu, probe, procs, Clock, ClockReading, Engine};

/// One catalogue entry: `(id, slug, name, what, why, command, [(engine, note)])`.
pub type EntryRow = (
    String,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str)>,
);

/// Every tripwire's entry, in code order.
#[pyfunction]
pub fn catalogue_entries() -> Vec<EntryRow> {
    catalogue::all()
        .iter()
        .map(|e| {
            let notes = e.notes.iter().map(|(en, n)| (en.key(), *n)).collect();
            (e.id(), e.slug, e.name, e.what, e.why, e.command, notes)
        })
        .collect()
}

/// The code of the tripwire a key names (`T1`, `t1`, `silent-preemption`), or None.
#[pyfunction]
pub fn catalogue_lookup(key: &str) -> Option<String> {
    catalogue::lookup(key).map(catalogue::Entry::id)
}

#[pyfunction]
pub fn gpu_family(compute_cap: &str) -> Option<&'static str> {
    gpu::family(compute_cap)
}

/// One GPU row as 0.3.1's `GpuInfo` fields.
pub type GpuRow = (
    u32,
    String,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<String>,
    Option<String>,
);

/// Parses `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`; a row that is no GPU is a
/// `ValueError` naming the line.
#[pyfunction]
#[pyo3(signature = (text, with_cap=true))]
pub fn parse_gpus(text: &str, with_cap: bool) -> PyResult<Vec<GpuRow>> {
    let gpus =
        gpu::parse_query_gpu(text, with_cap).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(gpus
        .into_iter()
        .map(|g| {
            (
                g.index,
                g.name,
                g.memory_total_mib,
                g.memory_used_mib,
                g.memory_free_mib,
                g.driver,
                g.compute_cap,
            )
        })
        .collect())
}

#[pyfunction]
pub fn nvidia_smi_path() -> String {
    gpu::locate_nvidia_smi()
        .unwrap_or_else(|| "/usr/lib/wsl/lib/nvidia-smi".into())
        .display()
        .to_string()
}

/// Runs nvidia-smi with `args` (30 s at most) with the GIL released; `OSError` when it cannot.
#[pyfunction]
pub fn run_smi(py: Python<'_>, exe: &str, args: Vec<String>) -> PyResult<String> {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    py.allow_threads(|| gpu::run_smi(std::path::Path::new(exe), &argv, gpu::SMI_TIMEOUT))
        .map_err(|e| PyOSError::new_err(e.to_string()))
}

/// One process as 0.3.1's `Proc` fields: `(pid, ppid, argv, comm)`.
pub type ProcRow = (i32, i32, Vec<String>, String);

pub(crate) fn proc_info(r: ProcRow) -> procs::ProcInfo {
    procs::ProcInfo {
        pid: r.0,
        ppid: r.1,
        argv: r.2,
        comm: r.3,
        ..Default::default()
    }
}

/// Every live process under a `/proc`-style root (none when the root is missing).
#[pyfunction]
#[pyo3(signature = (proc_root="/proc"))]
pub fn list_processes(py: Python<'_>, proc_root: &str) -> Vec<ProcRow> {
    let root = std::path::PathBuf::from(proc_root);
    py.allow_threads(|| procs::list_processes(&root))
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p.pid, p.ppid, p.argv, p.comm))
        .collect()
}

#[pyfunction]
pub fn server_engine(p: ProcRow) -> Option<&'static str> {
    procs::server_engine(&proc_info(p)).map(Engine::key)
}

/// Pids of the servers (and all they started), never `self_pid` or its ancestors; of one engine
/// when named.
#[pyfunction]
#[pyo3(signature = (rows, self_pid, engine=None))]
pub fn server_pids(rows: Vec<ProcRow>, self_pid: i32, engine: Option<&str>) -> PyResult<Vec<i32>> {
    let engine = crate::facts::engine_arg(engine)?;
    let all: Vec<procs::ProcInfo> = rows.into_iter().map(proc_info).collect();
    Ok(procs::select_servers(&all, self_pid, engine, None)
        .targets
        .into_iter()
        .map(|t| t.pid)
        .collect())
}

/// The pattern scripts usually `pkill -f` for these server processes.
#[pyfunction]
pub fn usual_pkill_pattern(rows: Vec<ProcRow>) -> &'static str {
    let all: Vec<procs::ProcInfo> = rows.into_iter().map(proc_info).collect();
    // Every process given is a target (0.3.1 took the targets themselves).
    let targets = procs::all_servers(&all, -1);
    procs::usual_pkill_pattern(&targets)
}

/// Pids `pkill -f PATTERN` would signal (an invalid pattern matches nothing).
#[pyfunction]
pub fn pkill_hits(rows: Vec<ProcRow>, pattern: &str) -> Vec<i32> {
    let all: Vec<procs::ProcInfo> = rows.into_iter().map(proc_info).collect();
    procs::pkill_hits(&all, pattern)
}

/// One reading of the wait: `(elapsed_s, max used MiB or None, live server processes)`.
pub type ReadingRow = (f64, Option<u64>, usize);

/// The first exception a Python hook raised; the wait goes on to its end, then raises it.
#[derive(Default)]
pub(crate) struct FirstError(RefCell<Option<PyErr>>);

impl FirstError {
    /// The first error kept, taken out.
    pub(crate) fn take(&self) -> Option<PyErr> {
        self.0.borrow_mut().take()
    }

    pub(crate) fn keep(&self, e: PyErr) {
        let mut slot = self.0.borrow_mut();
        if slot.is_none() {
            *slot = Some(e);
        }
    }
}

/// The largest used MiB that Python's `read_used` hook gives. A hook that raises `OSError`,
/// `SubprocessError` or `ValueError` is an unreadable reading, as in 0.3.1; any other error is
/// kept for the end.
pub(crate) fn used_mib(
    py: Python<'_>,
    read_used: &Bound<'_, PyAny>,
    subprocess_error: &Bound<'_, PyAny>,
    error: &FirstError,
) -> Option<u64> {
    match read_used.call0().and_then(|v| v.extract::<Vec<i64>>()) {
        Ok(vals) => vals.into_iter().max().map(|m| m.max(0) as u64),
        Err(e) => {
            let unreadable = e.is_instance_of::<PyOSError>(py)
                || e.is_instance_of::<PyValueError>(py)
                || e.is_instance(py, subprocess_error);
            if !unreadable {
                error.keep(e);
            }
            None
        }
    }
}

/// Python's `sleep` and `clock` hooks as the library's clock.
struct Hooks<'a, 'py> {
    sleep: Bound<'py, PyAny>,
    clock: Bound<'py, PyAny>,
    error: &'a FirstError,
}

impl Clock for Hooks<'_, '_> {
    /// 0.3.1's `clock` hook gives seconds; the library reads them as the monotonic clock.
    fn now(&self) -> ClockReading {
        match self.clock.call0().and_then(|v| v.extract::<f64>()) {
            Ok(t) => ClockReading::at(t),
            Err(e) => {
                self.error.keep(e);
                ClockReading::at(f64::INFINITY)
            }
        }
    }
    fn sleep(&mut self, secs: f64) {
        if let Err(e) = self.sleep.call1((secs,)) {
            self.error.keep(e);
        }
    }
}

/// The "consecutive clear readings" wait of the library, reading through Python's hooks:
/// `(clear, [(elapsed_s, max used MiB or None, live servers)], reason)`. A `read_used` that
/// raises `OSError`, `SubprocessError` or `ValueError` is an unreadable reading, as in 0.3.1.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn wait_clear(
    py: Python<'_>,
    read_used: Bound<'_, PyAny>,
    live_servers: Bound<'_, PyAny>,
    max_used_mib: u64,
    consecutive: u32,
    interval_s: f64,
    timeout_s: f64,
    sleep: Bound<'_, PyAny>,
    clock: Bound<'_, PyAny>,
) -> PyResult<(bool, Vec<ReadingRow>, String)> {
    let opts = gpu::ClearOptions {
        max_used_mib,
        consecutive,
        timeout_s,
        interval_s,
        require_gpu: true,
    };
    let subprocess_error = py.import("subprocess")?.getattr("SubprocessError")?;
    let error = FirstError::default();
    let mut hooks = Hooks {
        sleep,
        clock,
        error: &error,
    };
    let mut n_live = || match live_servers.call0().and_then(|v| v.extract::<usize>()) {
        Ok(n) => n,
        Err(e) => {
            error.keep(e);
            0
        }
    };
    let mut used = || used_mib(py, &read_used, &subprocess_error, &error);
    let r = gpu::wait_until_clear(&opts, &mut n_live, &mut used, &mut hooks)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(e) = error.0.take() {
        return Err(e);
    }
    let readings = r
        .readings
        .iter()
        .map(|x| ((x.elapsed_s * 1000.0).round() / 1000.0, x.used, x.n_live))
        .collect();
    Ok((r.clear, readings, r.reason))
}

/// T7 against a live server: the model list, one request, a burst of `concurrency`, then
/// `/health`. Runs on the library's HTTP client with the GIL released.
#[pyfunction]
#[pyo3(signature = (base_url, model=None, concurrency=8, max_tokens=16, timeout=300.0))]
pub fn probe_server(
    py: Python<'_>,
    base_url: &str,
    model: Option<String>,
    concurrency: usize,
    max_tokens: u32,
    timeout: f64,
) -> PyResult<Checked> {
    let opts = probe::ProbeOptions {
        model,
        concurrency,
        max_tokens,
        request_timeout: Duration::from_secs_f64(timeout.max(0.001)),
        ..Default::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| PyOSError::new_err(e.to_string()))?;
    let url = base_url.trim_end_matches('/').to_string();
    out(py.allow_threads(|| rt.block_on(probe::probe(&url, &opts))))
}
