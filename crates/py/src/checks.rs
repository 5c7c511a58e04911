//! The tripwires, called with the Rust readers' values. Each returns the library's verdict as a
//! typed `inferlint.result.CheckResult` ([`crate::result`]).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::{Map, Value};

use crate::core::{
    blocks, counters, t1, t10, t12, t14, t15, t16, t17, t18, t19, t20, t21, t22, t23, t24, t25,
    t26, t27, t4_t11, t5, t6, t8, t9, BenchResult, BootFacts, CheckResult, Engine, LoadIntent,
    LoadObserved, Series, Snapshot,
};
use crate::facts::{engine_arg, facts_from_json};
use crate::result::PyCheckResult;
use crate::series::PySeries;
use crate::snapshot::PySnapshot;

pub type Checked = PyCheckResult;

pub fn out(r: CheckResult) -> PyResult<Checked> {
    out_with(r, |_| {})
}

/// As [`out`], with the evidence's JSON object amended first (0.3.1's keys, [`crate::compat`]).
pub fn out_with(r: CheckResult, amend: impl FnOnce(&mut Map<String, Value>)) -> PyResult<Checked> {
    Python::with_gil(|py| PyCheckResult::of(py, r, amend))
}

/// A result from Python: a `CheckResult`, or `CheckResult.to_json()`'s dict.
pub fn result_from_py(doc: &Bound<'_, PyAny>) -> PyResult<CheckResult> {
    if let Ok(r) = doc.downcast::<PyCheckResult>() {
        return Ok(r.get().inner.clone());
    }
    pythonize::depythonize(doc)
        .map_err(|e| PyValueError::new_err(format!("not a check result: {e}")))
}

/// The engine of snapshots, by their metric names; vLLM when they name none (as 0.3.1).
fn engine_of(snaps: &[&Snapshot]) -> Engine {
    counters::snapshots_engine(snaps).unwrap_or(Engine::Vllm)
}

/// The engine a recording's header names; vLLM when it names none.
fn series_engine(s: &Series) -> Engine {
    s.engine().unwrap_or(Engine::Vllm)
}

fn facts_opt(doc: Option<&str>) -> PyResult<Option<BootFacts>> {
    doc.map(facts_from_json).transpose()
}

/// A Python `BenchResult`'s fields, read by attribute.
pub fn bench_of(obj: &Bound<'_, PyAny>) -> PyResult<BenchResult> {
    let f = |k: &str| -> PyResult<Option<f64>> { obj.getattr(k)?.extract() };
    Ok(BenchResult {
        completed: f("completed")?,
        failed: f("failed")?,
        total_input_tokens: f("input_tokens")?,
        total_output_tokens: f("output_tokens")?,
        duration: f("duration_s")?,
        output_throughput: f("output_throughput")?,
        max_concurrency: f("max_concurrency")?,
        num_prompts: f("num_prompts")?,
        backend: obj.getattr("backend")?.extract()?,
        mean_ttft_ms: f("mean_ttft_ms")?,
        median_ttft_ms: f("median_ttft_ms")?,
        p99_ttft_ms: f("p99_ttft_ms")?,
        mean_tpot_ms: f("mean_tpot_ms")?,
        // 0.3.1's BenchResult has no median TPOT.
        median_tpot_ms: None,
        mean_itl_ms: f("mean_itl_ms")?,
        first_error: obj.getattr("first_error")?.extract()?,
        output_lens: obj.getattr("output_lens")?.extract()?,
        ttfts: obj.getattr("ttfts")?.extract()?,
        start_times: obj.getattr("start_times")?.extract()?,
        input_lens: obj.getattr("input_lens")?.extract()?,
        chunks: obj.getattr("chunks")?.extract()?,
        request_rate: obj.getattr("request_rate")?.extract()?,
        path: obj.getattr("path")?.extract()?,
    })
}

#[pyfunction]
#[pyo3(signature = (before, after, series=None, facts=None))]
pub fn check_no_preemption(
    before: &PySnapshot,
    after: &PySnapshot,
    series: Option<&PySeries>,
    facts: Option<&str>,
) -> PyResult<Checked> {
    let facts = facts_opt(facts)?;
    let engine = engine_of(&[&before.inner, &after.inner]);
    let series = series.map(|s| &s.inner);
    let r = t1::check(&before.inner, &after.inner, series, facts.as_ref(), engine);
    out_with(r, |ev| crate::compat::t1(ev, engine))
}

/// T4 or T11 over labelled boots.
fn labelled(facts: Vec<String>, labels: Vec<String>) -> PyResult<Vec<(String, BootFacts)>> {
    if facts.len() != labels.len() {
        return Err(PyValueError::new_err(format!(
            "{} boot facts but {} labels",
            facts.len(),
            labels.len()
        )));
    }
    labels
        .into_iter()
        .zip(facts)
        .map(|(l, f)| Ok((l, facts_from_json(&f)?)))
        .collect()
}

#[pyfunction]
pub fn check_same_pool(facts: Vec<String>, labels: Vec<String>) -> PyResult<Vec<Checked>> {
    let owned = labelled(facts, labels)?;
    let refs: Vec<(String, &BootFacts)> = owned.iter().map(|(l, f)| (l.clone(), f)).collect();
    t4_t11::check_t4(&refs).into_iter().map(out).collect()
}

#[pyfunction]
pub fn check_kv_memory_stable(facts: Vec<String>, labels: Vec<String>) -> PyResult<Vec<Checked>> {
    let owned = labelled(facts, labels)?;
    let refs: Vec<(String, &BootFacts)> = owned.iter().map(|(l, f)| (l.clone(), f)).collect();
    t4_t11::check_t11(&refs).into_iter().map(out).collect()
}

#[pyfunction]
#[pyo3(signature = (facts, default=16))]
pub fn check_block_size(facts: &str, default: u64) -> PyResult<Checked> {
    out(t5::check_with_default(&facts_from_json(facts)?, default))
}

#[pyfunction]
pub fn check_backend_honoured(facts: &str) -> PyResult<Checked> {
    out_with(t6::check(&facts_from_json(facts)?), crate::compat::t6)
}

#[pyfunction]
pub fn check_boot_failure(py: Python<'_>, log_text: &str) -> PyResult<Checked> {
    out(py
        .allow_threads(|| t12::verdict(crate::core::bootlog::classify_failure(log_text).as_ref())))
}

#[pyfunction]
#[pyo3(signature = (series, requested, facts=None))]
pub fn check_concurrency_reached(
    py: Python<'_>,
    series: &PySeries,
    requested: u64,
    facts: Option<&str>,
) -> PyResult<Checked> {
    let facts = facts_opt(facts)?;
    let engine = series_engine(&series.inner);
    // A day's recording is 345,600 samples: other Python threads run meanwhile.
    out(py.allow_threads(|| t8::check(&series.inner, requested, facts.as_ref(), engine)))
}

/// The server's own running limit and the sentence that says how it was set.
#[pyfunction]
#[pyo3(signature = (facts, engine=None))]
pub fn running_cap(facts: &str, engine: Option<&str>) -> PyResult<Option<(u64, String)>> {
    let f = facts_from_json(facts)?;
    let engine = engine_arg(engine)?.or(f.engine).unwrap_or(Engine::Vllm);
    Ok(t8::running_limit(&f, engine).map(|l| (l.value, l.sentence(engine))))
}

#[pyfunction]
#[pyo3(signature = (series, usable_blocks=None, saturated=0.9, requested=None))]
pub fn concurrency_ceiling(
    py: Python<'_>,
    series: &PySeries,
    usable_blocks: Option<u64>,
    saturated: f64,
    requested: Option<u64>,
) -> PyResult<Checked> {
    let engine = series_engine(&series.inner);
    out(py
        .allow_threads(|| t9::check_at(&series.inner, usable_blocks, requested, engine, saturated)))
}

/// T14's "does not apply" for an engine without vLLM's null block, else None.
#[pyfunction]
pub fn does_not_apply(tripwire: &str, engine: &str) -> PyResult<Option<Checked>> {
    let engine = engine_arg(Some(engine))?.unwrap_or(Engine::Vllm);
    (tripwire.eq_ignore_ascii_case("T14") && !t14::applies_to(engine))
        .then(|| out(t14::not_applicable(engine)))
        .transpose()
}

#[pyfunction]
pub fn check_null_block(
    py: Python<'_>,
    series: &PySeries,
    snapshot: &PySnapshot,
) -> PyResult<Checked> {
    let engine = engine_of(&[&snapshot.inner]);
    out(py.allow_threads(|| t14::check(&series.inner, &snapshot.inner, engine)))
}

#[pyfunction]
#[pyo3(signature = (bench, before, after, expected_extra_requests=0))]
pub fn check_client_server_agree(
    bench: &Bound<'_, PyAny>,
    before: &PySnapshot,
    after: &PySnapshot,
    expected_extra_requests: u64,
) -> PyResult<Checked> {
    let b = bench_of(bench)?;
    let engine = engine_of(&[&before.inner, &after.inner]);
    out(t15::check(
        &b,
        &before.inner,
        &after.inner,
        expected_extra_requests,
        engine,
    ))
}

#[pyfunction]
pub fn with_timer_comparison(result: &Bound<'_, PyAny>) -> PyResult<Checked> {
    out(t10::with_integer_second_comparison(&result_from_py(
        result,
    )?))
}

#[pyfunction]
#[pyo3(signature = (before, after, counter=None))]
pub fn precise_rate(
    before: &PySnapshot,
    after: &PySnapshot,
    counter: Option<&str>,
) -> PyResult<Checked> {
    let engine = engine_of(&[&before.inner, &after.inner]);
    out(t10::check(&before.inner, &after.inner, counter, engine))
}

/// `(blocks, distinct, max_residual, trusted)` of the usage readings.
#[pyfunction]
#[pyo3(signature = (usages, max_blocks=65536, tol=1e-6))]
pub fn infer_blocks(
    usages: Vec<f64>,
    max_blocks: u64,
    tol: f64,
) -> PyResult<(Option<u64>, usize, f64, bool)> {
    let b = blocks::infer_blocks_within(&usages, max_blocks, tol);
    // 0.3.1 reported no residual as 0.0 and an unfit one as infinity, never NaN.
    let worst = match (b.blocks, b.distinct) {
        (_, 0) => 0.0,
        (None, _) if b.worst_residual.is_nan() => f64::INFINITY,
        _ => b.worst_residual,
    };
    Ok((b.blocks, b.distinct, worst, b.trusted))
}

/// `floor(1/share)` at one sample; `ValueError` for a sample with nothing running or no usage.
#[pyfunction]
#[pyo3(signature = (usage, running, usable_blocks=None))]
pub fn predict_concurrency(usage: f64, running: f64, usable_blocks: Option<u64>) -> PyResult<u64> {
    blocks::predicted_ceiling(usage, running, usable_blocks)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The load's intent from its command: a string as a shell splits it, or its words.
fn intent_arg(load: Option<&Bound<'_, PyAny>>) -> PyResult<LoadIntent> {
    let Some(load) = load.filter(|l| !l.is_none()) else {
        return Ok(LoadIntent::unknown());
    };
    if let Ok(s) = load.extract::<String>() {
        return Ok(crate::core::load::intent_of_command(&s));
    }
    let words: Vec<String> = load.extract()?;
    Ok(crate::core::load::intent(&words))
}

#[pyfunction]
#[pyo3(signature = (before, after, load=None, untimed_requests=0, completed=None))]
pub fn check_prompts_fresh(
    before: &PySnapshot,
    after: &PySnapshot,
    load: Option<&Bound<'_, PyAny>>,
    untimed_requests: u64,
    completed: Option<f64>,
) -> PyResult<Checked> {
    let intent = intent_arg(load)?;
    let engine = engine_of(&[&before.inner, &after.inner]);
    let untimed = t16::Untimed {
        requests: untimed_requests,
        completed,
    };
    out(t16::check(
        &before.inner,
        &after.inner,
        &intent,
        untimed,
        engine,
    ))
}

#[pyfunction]
#[pyo3(signature = (bench=None, before=None, after=None))]
pub fn check_requests_finished(
    bench: Option<&Bound<'_, PyAny>>,
    before: Option<&PySnapshot>,
    after: Option<&PySnapshot>,
) -> PyResult<Checked> {
    let b = bench.filter(|b| !b.is_none()).map(bench_of).transpose()?;
    let server = before.zip(after).map(|(b, a)| (&b.inner, &a.inner));
    let engine = server.map_or(Engine::Vllm, |(b, a)| engine_of(&[b, a]));
    out(t17::check(b.as_ref(), server, engine))
}

#[pyfunction]
#[pyo3(signature = (load=None, bench=None, before=None, after=None))]
pub fn check_outputs_full_length(
    load: Option<&Bound<'_, PyAny>>,
    bench: Option<&Bound<'_, PyAny>>,
    before: Option<&PySnapshot>,
    after: Option<&PySnapshot>,
) -> PyResult<Checked> {
    let intent = intent_arg(load)?;
    let b = bench.filter(|b| !b.is_none()).map(bench_of).transpose()?;
    let server = before.zip(after).map(|(b, a)| (&b.inner, &a.inner));
    let engine = server.map_or(Engine::Vllm, |(b, a)| engine_of(&[b, a]));
    out(t18::check(&intent, b.as_ref(), server, engine))
}

#[pyfunction]
#[pyo3(signature = (before, after, load=None, facts=None))]
pub fn check_speculation_transfers(
    before: &PySnapshot,
    after: &PySnapshot,
    load: Option<&Bound<'_, PyAny>>,
    facts: Option<&str>,
) -> PyResult<Checked> {
    let intent = intent_arg(load)?;
    let f = facts.map(facts_from_json).transpose()?;
    let engine = engine_of(&[&before.inner, &after.inner]);
    out(t19::check(
        &before.inner,
        &after.inner,
        &intent,
        f.as_ref(),
        engine,
    ))
}

/// `run.json`'s `during_load` object (what a run saw of its load), given as JSON.
fn observed_arg(doc: Option<&str>) -> PyResult<Option<LoadObserved>> {
    doc.map(|d| {
        serde_json::from_str(d)
            .map_err(|e| PyValueError::new_err(format!("not a run's during_load: {e}")))
    })
    .transpose()
}

#[pyfunction]
#[pyo3(signature = (bench=None, observed=None))]
pub fn check_warmup_outside_window(
    bench: Option<&Bound<'_, PyAny>>,
    observed: Option<&str>,
) -> PyResult<Checked> {
    let b = bench.filter(|b| !b.is_none()).map(bench_of).transpose()?;
    let o = observed_arg(observed)?;
    let warmup = o.as_ref().and_then(|o| o.warmup_work.as_deref());
    out(t20::check(b.as_ref(), warmup))
}

#[pyfunction]
#[pyo3(signature = (load=None, bench=None, series=None, requested=None, observed=None))]
pub fn check_client_kept_pace(
    load: Option<&Bound<'_, PyAny>>,
    bench: Option<&Bound<'_, PyAny>>,
    series: Option<&PySeries>,
    requested: Option<u64>,
    observed: Option<&str>,
) -> PyResult<Checked> {
    let intent = intent_arg(load)?;
    let b = bench.filter(|b| !b.is_none()).map(bench_of).transpose()?;
    let o = observed_arg(observed)?;
    let cpu = o.as_ref().and_then(|o| o.client_cpu.as_ref());
    out(t21::check(
        &intent,
        b.as_ref(),
        series.map(|s| &s.inner),
        requested,
        cpu,
    ))
}

#[pyfunction]
#[pyo3(signature = (before, after, series=None))]
pub fn check_engines_balanced(
    before: &PySnapshot,
    after: &PySnapshot,
    series: Option<&PySeries>,
) -> PyResult<Checked> {
    let engine = engine_of(&[&before.inner, &after.inner]);
    out(t22::judge(
        &before.inner,
        &after.inner,
        series.map(|s| &s.inner),
        engine,
    ))
}

#[pyfunction]
#[pyo3(signature = (bench=None, facts=None))]
pub fn check_itl_per_token(
    bench: Option<&Bound<'_, PyAny>>,
    facts: Option<&str>,
) -> PyResult<Checked> {
    let b = bench.filter(|b| !b.is_none()).map(bench_of).transpose()?;
    let f = facts.map(facts_from_json).transpose()?;
    out(t23::check(b.as_ref(), f.as_ref()))
}

#[pyfunction]
#[pyo3(signature = (before, after, load=None, bench=None))]
pub fn check_prompt_lengths(
    before: &PySnapshot,
    after: &PySnapshot,
    load: Option<&Bound<'_, PyAny>>,
    bench: Option<&Bound<'_, PyAny>>,
) -> PyResult<Checked> {
    let intent = intent_arg(load)?;
    let b = bench.filter(|b| !b.is_none()).map(bench_of).transpose()?;
    let engine = engine_of(&[&before.inner, &after.inner]);
    out(t24::check(
        &before.inner,
        &after.inner,
        &intent,
        b.as_ref(),
        engine,
    ))
}

#[pyfunction]
#[pyo3(signature = (observed))]
pub fn check_gpu_clocks(observed: &str) -> PyResult<Checked> {
    let o = observed_arg(Some(observed))?;
    out(o
        .as_ref()
        .and_then(t27::judge)
        .unwrap_or_else(|| t27::check(&[])))
}

#[pyfunction]
#[pyo3(signature = (before, after, facts=None))]
pub fn check_kv_offload(
    before: &PySnapshot,
    after: &PySnapshot,
    facts: Option<&str>,
) -> PyResult<Checked> {
    let f = facts.map(facts_from_json).transpose()?;
    out(t26::judge(&before.inner, &after.inner, f.as_ref()))
}

#[pyfunction]
#[pyo3(signature = (series, facts=None))]
pub fn check_graph_batches(series: &PySeries, facts: Option<&str>) -> PyResult<Checked> {
    let f = facts.map(facts_from_json).transpose()?;
    let engine = series_engine(&series.inner);
    out(t25::judge(&series.inner, f.as_ref(), engine))
}
