//! The failures the simulated server prints: start-up failure signatures of each kind the
//! classifier names (docs/design/bootlog.md#the-failure-classifier), shaped like the recorded
//! vLLM failures (the engine's `EngineCore failed to start.` traceback, then the API server's
//! `[shutdown]` line and its own traceback), and the fatal error of an engine that dies while
//! serving.

use crate::logline::{sites, Logger};
use crate::settings::{FailKind, ServeConfig, KV_BYTES_PER_TOKEN};

const SITE: &str = "/opt/venv/lib/python3.12/site-packages";

fn frame(file: &str, line: u32, func: &str, code: &str) -> [String; 2] {
    [
        format!("  File \"{SITE}/{file}\", line {line}, in {func}"),
        format!("    {code}"),
    ]
}

/// The frames common to every engine start-up failure (the recorded vLLM tracebacks).
const ENGINE_CORE: &str = include_str!("failures/engine_core.txt");

/// A kind's own frames and message, after [`ENGINE_CORE`]'s; `{…}` marks the numbers of the
/// configuration that fails.
fn kind_frames(kind: FailKind) -> &'static str {
    match kind {
        FailKind::JitToolchain => include_str!("failures/jit_toolchain.txt"),
        FailKind::OutOfMemory => include_str!("failures/out_of_memory.txt"),
        FailKind::KvCacheTooSmall => include_str!("failures/kv_cache_too_small.txt"),
        FailKind::AcceleratorError => include_str!("failures/accelerator_error.txt"),
        FailKind::CudaError => include_str!("failures/cuda_error.txt"),
        FailKind::Assertion => include_str!("failures/assertion.txt"),
        FailKind::ValueError => include_str!("failures/value_error.txt"),
        FailKind::RuntimeError => include_str!("failures/runtime_error.txt"),
        FailKind::UnclassifiedException => include_str!("failures/unclassified_exception.txt"),
        FailKind::EngineDead => unreachable!("an engine that died is reported by the API server"),
    }
}

/// The engine's traceback for `kind`, one line each.
fn engine_traceback(kind: FailKind, cfg: &ServeConfig) -> String {
    let text = format!("{ENGINE_CORE}{}", kind_frames(kind));
    let text = text.strip_suffix('\n').unwrap_or(&text);
    if kind != FailKind::KvCacheTooSmall {
        return text.to_string();
    }
    let gib = |tokens: f64| tokens * KV_BYTES_PER_TOKEN as f64 / (1u64 << 30) as f64;
    let need = cfg.max_model_len as f64;
    // A pool forced to fail (--fail-boot) holds a bit under half of one request.
    let (avail, est) = if cfg.pool_too_small() {
        (
            cfg.estimated_max_model_len() as f64,
            cfg.estimated_max_model_len(),
        )
    } else {
        let est =
            (cfg.max_model_len as u64 * 45 / 100) / cfg.block_size as u64 * cfg.block_size as u64;
        (est as f64, est)
    };
    text.replace("{max_model_len}", &cfg.max_model_len.to_string())
        .replace("{needed_gib}", &format!("{:.2}", gib(need)))
        .replace("{available_gib}", &format!("{:.2}", gib(avail)))
        .replace("{estimated_max_model_len}", &est.to_string())
}

/// Prints the engine's side of a start-up failure.
pub fn print_engine_failure(log: &Logger, kind: FailKind, cfg: &ServeConfig) {
    if kind == FailKind::EngineDead {
        return;
    }
    let site = sites(log.release).fail_start;
    let text = engine_traceback(kind, cfg);
    log.error(site, &text);
}

/// Prints the API server's side of a start-up failure: the process manager's `[shutdown]` line
/// and the traceback that ends `vllm serve`.
pub fn print_api_boot_failure(log: &Logger, kind: FailKind) {
    let s = sites(log.release);
    if kind == FailKind::EngineDead {
        print_engine_dead(log);
    }
    log.info(
        s.procman[0],
        "[shutdown] Process manager: send sigterm to process EngineCore",
    );
    let mut tb = vec!["Traceback (most recent call last):".to_string()];
    tb.extend(frame(
        "vllm/entrypoints/openai/api_server.py",
        753,
        "run_server_worker",
        "async with build_async_engine_client(",
    ));
    tb.extend(frame(
        "vllm/v1/engine/utils.py",
        1286,
        "wait_for_engine_startup",
        "raise RuntimeError(",
    ));
    tb.push("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}".into());
    for line in tb {
        log.raw(&line);
    }
}

/// The API server's lines when its engine is gone (the recorded EngineDeadError).
pub fn print_engine_dead(log: &Logger) {
    let s = sites(log.release);
    let mut tb = vec![
        "AsyncLLM output_handler failed.".to_string(),
        "Traceback (most recent call last):".to_string(),
    ];
    tb.extend(frame(
        "vllm/v1/engine/async_llm.py",
        690,
        "output_handler",
        "outputs = await engine_core.get_output_async()",
    ));
    tb.extend(frame(
        "vllm/v1/engine/core_client.py",
        1104,
        "get_output_async",
        "raise self._format_exception(outputs) from None",
    ));
    tb.push("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.".into());
    log.error(s.output_handler, &tb.join("\n"));
}

/// The engine's fatal error while serving (`--die-on-first-request`, `--die-after-requests`).
pub fn print_engine_fatal(log: &Logger) {
    let s = sites(log.release);
    let mut tb = vec![
        "EngineCore encountered a fatal error.".to_string(),
        "Traceback (most recent call last):".to_string(),
    ];
    tb.extend(frame(
        "vllm/v1/engine/core.py",
        1339,
        "run_engine_core",
        "engine_core.run_busy_loop()",
    ));
    tb.extend(frame(
        "vllm/v1/engine/core.py",
        1436,
        "_process_engine_step",
        "outputs, model_executed = self.step_fn()",
    ));
    tb.extend(frame(
        "vllm/v1/executor/uniproc_executor.py",
        131,
        "execute_model",
        "output.result()",
    ));
    tb.push("torch.AcceleratorError: CUDA error: an illegal memory access was encountered".into());
    tb.push("Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.".into());
    tb.push("For more detailed error information, run with CUDA_LOG_FILE=stderr".into());
    log.error(s.fatal, &tb.join("\n"));
}

/// The recorded `--max-num-queued-reqs` rejection (0.30's capped run): a streaming request's
/// generator logs the overflow with its traceback, another logs the bare line with `None`.
pub fn print_queue_full(log: &Logger, request_id: Option<&str>, current: u32, max: u32) {
    let s = sites(log.release);
    let id = request_id.unwrap_or("None");
    log.info(
        s.queue_full,
        &format!(
            "Request queue full - rejecting request {id} (current={current}, n=1, max={max})."
        ),
    );
    if request_id.is_none() {
        return;
    }
    let mut tb = vec![
        "Error in completion stream generator.".to_string(),
        "Traceback (most recent call last):".to_string(),
    ];
    tb.extend(frame(
        "vllm/v1/engine/async_llm.py",
        518,
        "_add_request",
        "self.check_admission(request_id=request.request_id)",
    ));
    tb.extend(frame(
        "vllm/v1/engine/async_llm.py",
        339,
        "check_admission",
        "raise QueueOverflowError()",
    ));
    tb.push("vllm.exceptions.QueueOverflowError: The engine is currently busy and cannot accept new requests. Please try again later or on a different instance.".into());
    log.error(s.stream_error, &tb.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_config;
    use crate::settings::Release;

    #[test]
    fn every_engine_kind_ends_in_its_own_exception_line() {
        let cfg = test_config(&["m"]);
        let expect = [
            (
                FailKind::JitToolchain,
                "CUDA compiler and CUDA toolkit headers are incompatible",
            ),
            (
                FailKind::OutOfMemory,
                "torch.OutOfMemoryError: CUDA out of memory",
            ),
            (
                FailKind::KvCacheTooSmall,
                "KV cache is needed, which is larger than the available KV cache memory",
            ),
            (
                FailKind::AcceleratorError,
                "AcceleratorError: CUDA error: device not ready",
            ),
            (
                FailKind::CudaError,
                "RuntimeError: CUDA error: an illegal memory access",
            ),
            (FailKind::Assertion, "AssertionError"),
            (
                FailKind::ValueError,
                "ValueError: Unknown quantization method",
            ),
            (FailKind::RuntimeError, "RuntimeError: NCCL error"),
            (
                FailKind::UnclassifiedException,
                "KeyError: 'model.layers.0.mlp.experts.w2_weight'",
            ),
        ];
        for (kind, needle) in expect {
            let text = engine_traceback(kind, &cfg);
            assert!(text.contains(needle), "{kind:?}: {text}");
            assert!(
                text.starts_with("EngineCore failed to start.\nTraceback"),
                "{kind:?}"
            );
        }
        let _ = Release::V028;
    }
}
