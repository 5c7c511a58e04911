//! `inferlint._native`: the Rust readers and checks under the Python package `inferlint`,
//! which keeps 0.3.1's API (dataclasses, enums, exceptions, injectable hooks) in Python and
//! calls here for every parse and every verdict; check results are this module's typed
//! `CheckResult` ([`result`]). Blocking work (file reads, HTTP, waits) runs
//! with the GIL released.

// No unwrap or expect on what the inputs hold: bad input is an error naming the file and line,
// never a panic. Where an invariant makes one safe, the site allows it and says why.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

use pyo3::prelude::*;

mod checks;
mod compat;
mod core;
mod errors;
mod facts;
mod load;
mod prom;
mod report;
mod result;
mod series;
mod snapshot;
mod sweep;
mod system;
mod teardown;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VERSION", core::VERSION)?;
    m.add_class::<result::PyCheckResult>()?;
    m.add_function(wrap_pyfunction!(result::status_table, m)?)?;
    m.add_function(wrap_pyfunction!(result::load_results, m)?)?;
    m.add_function(wrap_pyfunction!(result::server_version_with, m)?)?;
    m.add_function(wrap_pyfunction!(report::report_insights, m)?)?;
    m.add_class::<sweep::PySweep>()?;
    m.add_class::<sweep::PyPoint>()?;
    m.add_class::<sweep::PyFigures>()?;
    m.add_class::<sweep::PyPrompts>()?;
    m.add_class::<sweep::PyReset>()?;
    m.add_class::<sweep::PyFinding>()?;
    m.add_function(wrap_pyfunction!(sweep::read_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::finding_kinds, m)?)?;
    m.add_class::<snapshot::PySnapshot>()?;
    m.add_class::<prom::PyMetrics>()?;
    m.add_class::<snapshot::PyScraper>()?;
    m.add_class::<series::PySeries>()?;
    m.add_class::<series::PyRecorder>()?;
    m.add_function(wrap_pyfunction!(series::sample_row, m)?)?;
    m.add_function(wrap_pyfunction!(teardown::teardown, m)?)?;
    m.add_class::<report::PyReport>()?;
    m.add_function(wrap_pyfunction!(report::build_report, m)?)?;
    m.add_function(wrap_pyfunction!(load::load_client, m)?)?;
    m.add_function(wrap_pyfunction!(load::load_concurrency, m)?)?;
    m.add_function(wrap_pyfunction!(load::prepare_load, m)?)?;
    m.add_function(wrap_pyfunction!(load::untimed_requests, m)?)?;
    m.add_function(wrap_pyfunction!(load::server_url, m)?)?;
    m.add_function(wrap_pyfunction!(load::server_version, m)?)?;
    m.add_function(wrap_pyfunction!(load::run_exit_code, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::parse_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::load_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::scrape_with, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::snapshot_from_document, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::created_changes, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::counter_delta, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot::span_s, m)?)?;
    m.add_function(wrap_pyfunction!(series::load_series, m)?)?;
    m.add_function(wrap_pyfunction!(series::series_from_rows, m)?)?;
    m.add_function(wrap_pyfunction!(facts::parse_bootlog_file, m)?)?;
    m.add_function(wrap_pyfunction!(facts::parse_bootlog_text, m)?)?;
    m.add_function(wrap_pyfunction!(facts::strip_log_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(facts::untested_version, m)?)?;
    m.add_function(wrap_pyfunction!(facts::result_block, m)?)?;
    m.add_function(wrap_pyfunction!(facts::log_labels, m)?)?;
    m.add_function(wrap_pyfunction!(facts::classify, m)?)?;
    m.add_function(wrap_pyfunction!(facts::classify_file, m)?)?;
    m.add_function(wrap_pyfunction!(facts::failure_summary, m)?)?;
    m.add_function(wrap_pyfunction!(facts::shutdown_lineno, m)?)?;
    m.add_function(wrap_pyfunction!(facts::load_bench, m)?)?;
    m.add_function(wrap_pyfunction!(facts::parse_bench, m)?)?;
    m.add_function(wrap_pyfunction!(facts::engine_table, m)?)?;
    m.add_function(wrap_pyfunction!(facts::parse_engine, m)?)?;
    m.add_function(wrap_pyfunction!(facts::engine_from_names, m)?)?;
    m.add_function(wrap_pyfunction!(facts::engine_from_log, m)?)?;
    m.add_function(wrap_pyfunction!(facts::engine_from_command, m)?)?;
    m.add_function(wrap_pyfunction!(facts::engine_from_argv, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_no_preemption, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_same_pool, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_kv_memory_stable, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_block_size, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_backend_honoured, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_boot_failure, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_concurrency_reached, m)?)?;
    m.add_function(wrap_pyfunction!(checks::running_cap, m)?)?;
    m.add_function(wrap_pyfunction!(checks::concurrency_ceiling, m)?)?;
    m.add_function(wrap_pyfunction!(checks::does_not_apply, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_null_block, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_client_server_agree, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_prompts_fresh, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_requests_finished, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_outputs_full_length, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_speculation_transfers, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_warmup_outside_window, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_client_kept_pace, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_engines_balanced, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_itl_per_token, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_prompt_lengths, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_graph_batches, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_kv_offload, m)?)?;
    m.add_function(wrap_pyfunction!(checks::check_gpu_clocks, m)?)?;
    m.add_function(wrap_pyfunction!(checks::with_timer_comparison, m)?)?;
    m.add_function(wrap_pyfunction!(checks::precise_rate, m)?)?;
    m.add_function(wrap_pyfunction!(checks::infer_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(checks::predict_concurrency, m)?)?;
    m.add_function(wrap_pyfunction!(system::catalogue_entries, m)?)?;
    m.add_function(wrap_pyfunction!(system::catalogue_lookup, m)?)?;
    m.add_function(wrap_pyfunction!(system::gpu_family, m)?)?;
    m.add_function(wrap_pyfunction!(system::parse_gpus, m)?)?;
    m.add_function(wrap_pyfunction!(system::nvidia_smi_path, m)?)?;
    m.add_function(wrap_pyfunction!(system::run_smi, m)?)?;
    m.add_function(wrap_pyfunction!(system::list_processes, m)?)?;
    m.add_function(wrap_pyfunction!(system::server_engine, m)?)?;
    m.add_function(wrap_pyfunction!(system::server_pids, m)?)?;
    m.add_function(wrap_pyfunction!(system::usual_pkill_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(system::pkill_hits, m)?)?;
    m.add_function(wrap_pyfunction!(system::wait_clear, m)?)?;
    m.add_function(wrap_pyfunction!(system::probe_server, m)?)?;
    Ok(())
}
