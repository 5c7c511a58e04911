//! The whole run's helpers for `inferlint.xray` (0.3.1's API): the library's one reading of a
//! load command (its client, its concurrency, its rewrite to save a result), the untimed
//! requests in a load's output, the server's address and version, and a run's exit status.

use std::path::Path;
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use inferlint_core::engine::Engine;
use inferlint_core::load::{self, ResultLocation};

/// The engine whose benchmark client `argv` runs ("vllm", "sglang", "trtllm").
#[pyfunction]
pub fn load_client(argv: Vec<String>) -> Option<&'static str> {
    load::known_client(&argv).map(Engine::key)
}

/// The concurrency `argv` asks for.
#[pyfunction]
pub fn load_concurrency(argv: Vec<String>) -> Option<u64> {
    load::requested_concurrency(&argv)
}

/// The load command as it will run, saving its result in `out`, and that result's path when
/// it is known before the load runs.
#[pyfunction]
pub fn prepare_load(argv: Vec<String>, out: &str) -> (Vec<String>, Option<String>) {
    let r = load::rewrite(&argv, Path::new(out));
    let result = match r.result {
        ResultLocation::File(p) => Some(p.to_string_lossy().into_owned()),
        _ => None,
    };
    (r.argv, result)
}

/// Requests a load tool sent but left out of its result (a test prompt, warm-ups).
#[pyfunction]
pub fn untimed_requests(load_output: &str) -> u64 {
    inferlint_core::bench::untimed_requests(load_output)
}

/// Where a server started with `argv` answers; the engine is `engine` (a key), else the one
/// the command starts, else vLLM.
#[pyfunction]
#[pyo3(signature = (argv, engine = None))]
pub fn server_url(argv: Vec<String>, engine: Option<&str>) -> PyResult<String> {
    let named = match engine {
        Some(k) => Some(
            Engine::parse(k)
                .ok_or_else(|| PyValueError::new_err(format!("unknown engine {k:?}")))?,
        ),
        None => None,
    };
    Ok(inferlint_core::url::server_url(&argv, named))
}

/// The version a live server reports (`/version`, then `/get_server_info`), or None.
#[pyfunction]
pub fn server_version(py: Python<'_>, url: &str, timeout: f64) -> PyResult<Option<String>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| PyOSError::new_err(e.to_string()))?;
    let limit = Duration::from_secs_f64(timeout.max(0.001));
    let url = url.to_string();
    Ok(py.allow_threads(|| {
        rt.block_on(async {
            tokio::time::timeout(limit, inferlint_http::server_version(&url, None))
                .await
                .ok()
                .flatten()
        })
    }))
}

/// A run's exit status from its results (`CheckResult`s) and how it ended.
#[pyfunction]
#[pyo3(signature = (results, strict, interrupted, problem, load_exit = None))]
pub fn run_exit_code(
    results: Vec<Bound<'_, PyAny>>,
    strict: bool,
    interrupted: bool,
    problem: bool,
    load_exit: Option<i32>,
) -> PyResult<i32> {
    let results = results
        .iter()
        .map(crate::checks::result_from_py)
        .collect::<PyResult<Vec<_>>>()?;
    Ok(inferlint_core::output::run_exit_code(
        &results,
        strict,
        interrupted,
        problem,
        load_exit,
    ))
}
