//! Boot logs, failures and result files: read in Rust, handed to Python as JSON documents that
//! its dataclasses are built from (one `json.loads`, in C, instead of a Python parser).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use serde_json::Value;

use crate::core::{bench, bootlog, BenchResult, BootFacts, Engine};
use crate::errors::{internal, io_error, read_error};

/// An engine hint as 0.3.1 took it: a key or a name, None for "from the log".
pub fn engine_arg(engine: Option<&str>) -> PyResult<Option<Engine>> {
    match engine {
        None => Ok(None),
        Some(k) => Engine::parse(k).map(Some).ok_or_else(|| {
            PyValueError::new_err(format!(
                "not an engine: {k:?} (vllm, sglang, trtllm, llamacpp)"
            ))
        }),
    }
}

/// A reader's facts as JSON, with 0.3.1's `kv_pool` conflict beside the library's fields.
fn to_json(f: &BootFacts) -> PyResult<String> {
    let mut f = f.clone();
    crate::compat::boot_conflicts(&mut f);
    serde_json::to_string(&f).map_err(internal)
}

/// A `BootFacts` document from Python (the dataclass's fields and the reader's own).
pub fn facts_from_json(doc: &str) -> PyResult<BootFacts> {
    serde_json::from_str(doc).map_err(|e| PyValueError::new_err(format!("not boot facts: {e}")))
}

/// Facts of a boot log file, as JSON; the file is read with the GIL released.
#[pyfunction]
#[pyo3(signature = (path, engine=None))]
pub fn parse_bootlog_file(py: Python<'_>, path: &str, engine: Option<&str>) -> PyResult<String> {
    let hint = engine_arg(engine)?;
    let p = std::path::PathBuf::from(path);
    let f = py
        .allow_threads(|| bootlog::parse_file(&p, hint))
        .map_err(|e| io_error(&e.path, &e.source))?;
    to_json(&f)
}

/// Facts of a boot log's text, as JSON.
#[pyfunction]
#[pyo3(signature = (text, engine=None))]
pub fn parse_bootlog_text(py: Python<'_>, text: &str, engine: Option<&str>) -> PyResult<String> {
    let hint = engine_arg(engine)?;
    let f = py.allow_threads(|| bootlog::parse_text(text, hint));
    to_json(&f)
}

#[pyfunction]
pub fn strip_log_prefix(line: &str) -> String {
    bootlog::strip_vllm_prefix(line).into_owned()
}

/// The untested-version warning as 0.3.1 worded it: the sentence, without the program's `note: `.
#[pyfunction]
pub fn untested_version(facts: &str) -> PyResult<Option<String>> {
    Ok(inferlint_core::bootlog::untested_version_sentence(
        &facts_from_json(facts)?,
    ))
}

/// The `boot` block of a result record, as JSON.
#[pyfunction]
pub fn result_block(facts: &str) -> PyResult<String> {
    Ok(bootlog::result_block(&facts_from_json(facts)?).to_string())
}

/// Short labels for several logs' paths (the parts that tell them apart).
#[pyfunction]
pub fn log_labels(paths: Vec<String>) -> Vec<String> {
    let paths: Vec<std::path::PathBuf> = paths.into_iter().map(Into::into).collect();
    bootlog::log_labels(&paths)
}

fn failure_json(f: Option<bootlog::Failure>) -> PyResult<Option<String>> {
    f.map(|f| serde_json::to_string(&f).map_err(internal))
        .transpose()
}

/// The failure a log's text shows, as JSON, or None.
#[pyfunction]
pub fn classify(py: Python<'_>, text: &str) -> PyResult<Option<String>> {
    failure_json(py.allow_threads(|| bootlog::classify_failure(text)))
}

#[pyfunction]
pub fn classify_file(py: Python<'_>, path: &str) -> PyResult<Option<String>> {
    let p = std::path::PathBuf::from(path);
    let f = py
        .allow_threads(|| bootlog::classify_failure_file(&p))
        .map_err(|e| io_error(&e.path, &e.source))?;
    failure_json(f)
}

/// `kind during phase: detail`, as the library words a failure.
#[pyfunction]
pub fn failure_summary(failure: &str) -> PyResult<String> {
    let f: bootlog::Failure =
        serde_json::from_str(failure).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(f.summary())
}

#[pyfunction]
pub fn shutdown_lineno(py: Python<'_>, text: &str) -> Option<usize> {
    py.allow_threads(|| bootlog::shutdown_lineno(text))
}

/// The numbers of a load tool's result file as a JSON object keyed by 0.3.1's field names.
fn bench_fields(b: BenchResult) -> String {
    serde_json::json!({
        "path": b.path,
        "completed": b.completed,
        "failed": b.failed,
        "input_tokens": b.total_input_tokens,
        "output_tokens": b.total_output_tokens,
        "duration_s": b.duration,
        "output_throughput": b.output_throughput,
        "max_concurrency": b.max_concurrency,
        "num_prompts": b.num_prompts,
        "backend": b.backend,
        "mean_ttft_ms": b.mean_ttft_ms,
        "median_ttft_ms": b.median_ttft_ms,
        "p99_ttft_ms": b.p99_ttft_ms,
        "mean_tpot_ms": b.mean_tpot_ms,
        "mean_itl_ms": b.mean_itl_ms,
        "first_error": b.first_error,
        "output_lens": b.output_lens,
        "ttfts": b.ttfts,
        "start_times": b.start_times,
        "input_lens": b.input_lens,
        "chunks": b.chunks,
        "request_rate": b.request_rate,
    })
    .to_string()
}

/// Reads a result file (a JSON document, or JSON lines whose last line is the latest run).
#[pyfunction]
pub fn load_bench(py: Python<'_>, path: &str) -> PyResult<String> {
    let p = std::path::PathBuf::from(path);
    let b = py.allow_threads(|| bench::load(&p)).map_err(read_error)?;
    Ok(bench_fields(b))
}

/// The numbers of one result object given as JSON.
#[pyfunction]
pub fn parse_bench(doc: &str, path: &str) -> PyResult<String> {
    let b = BenchResult::from_text(doc, path).map_err(read_error)?;
    Ok(bench_fields(b))
}

/// The library's engine table, as JSON: per engine (in `Engine::ALL`'s order) its key, name,
/// metric prefix and metric names, tested releases, eviction word, witness series, port, hints
/// and gauge behaviour. The Python package builds its `engines` and `metricnames` from it, so
/// the names are written once.
#[pyfunction]
pub fn engine_table() -> String {
    let rows: Vec<Value> = Engine::ALL
        .iter()
        .map(|&e| {
            let m = e.metrics();
            serde_json::json!({
                "key": e.key(),
                "name": e.name(),
                "prefix": e.metric_prefix(),
                "tested": e.tested_versions(),
                "preemption": e.eviction_word(),
                "default_port": e.default_port(),
                "metrics_hint": e.metrics_hint(),
                "gauges_hint": crate::core::t8::gauges_hint(e),
                "gauges_lag": e.gauges_lag(),
                "tokens_at_finish": e.token_counter_at_finish(),
                "metrics": {
                    "running": m.running,
                    "waiting": m.waiting,
                    "kv_usage": m.kv_usage,
                    "preemptions": m.preemptions,
                    "preemption_witness": m.preemption_witness,
                    "paused": m.paused,
                    "generation_tokens": m.generation_tokens,
                    "prompt_tokens": m.prompt_tokens,
                    "finished": m.finished,
                    "e2e_latency": m.e2e_latency,
                    "ttft": m.ttft,
                    "queue_time": m.queue_time,
                    "cache_info": m.cache_info,
                },
            })
        })
        .collect();
    Value::Array(rows).to_string()
}

/// The engine a user named (key or name, any case), as its key.
#[pyfunction]
pub fn parse_engine(value: &str) -> Option<&'static str> {
    Engine::parse(value).map(Engine::key)
}

#[pyfunction]
pub fn engine_from_names(names: Vec<String>) -> Option<&'static str> {
    crate::core::engine::detect_from_metric_names(names.iter().map(String::as_str)).map(Engine::key)
}

#[pyfunction]
pub fn engine_from_log(py: Python<'_>, text: &str) -> Option<&'static str> {
    py.allow_threads(|| crate::core::engine::detect_from_log(text))
        .map(Engine::key)
}

#[pyfunction]
pub fn engine_from_command(command: &str) -> Option<&'static str> {
    crate::core::argv::command_string_engine(command).map(Engine::key)
}

#[pyfunction]
pub fn engine_from_argv(argv: Vec<String>) -> Option<&'static str> {
    crate::core::argv::command_engine(&argv).map(Engine::key)
}
