//! The failures the simulated server prints: start-up failure signatures of each kind the
//! classifier names (docs/design/bootlog.md#the-failure-classifier), shaped like the recorded
//! vLLM failures (the engine's `EngineCore failed to start.` traceback, then the API server's
//! `[shutdown]` line and its own traceback), and the fatal error of an engine that dies while
//! serving.

use super::config::{FailKind, ServeConfig};
use super::logline::{sites, Logger};

const SITE: &str = "/opt/venv/lib/python3.12/site-packages";

fn frame(file: &str, line: u32, func: &str, code: &str) -> [String; 2] {
    [
        format!("  File \"{SITE}/{file}\", line {line}, in {func}"),
        format!("    {code}"),
    ]
}

/// The frames common to every engine start-up failure, then the kind's own frames and message.
fn engine_traceback(kind: FailKind, cfg: &ServeConfig) -> Vec<String> {
    let mut lines = vec![
        "EngineCore failed to start.".to_string(),
        "Traceback (most recent call last):".to_string(),
    ];
    lines.extend(frame(
        "vllm/v1/engine/core.py",
        1315,
        "run_engine_core",
        "engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)",
    ));
    lines.extend(frame(
        "vllm/v1/engine/core.py",
        1073,
        "__init__",
        "super().__init__(",
    ));
    let tail: Vec<String> = match kind {
        FailKind::JitToolchain => {
            let mut t = Vec::new();
            t.extend(frame(
                "vllm/v1/engine/core.py",
                133,
                "__init__",
                "self.model_executor = executor_class(vllm_config)",
            ));
            t.extend(frame(
                "flashinfer/jit/core.py",
                427,
                "build",
                "run_ninja(self.build_dir, self.ninja_path, verbose)",
            ));
            t.extend(frame(
                "flashinfer/jit/cpp_ext.py",
                382,
                "run_ninja",
                "raise RuntimeError(msg) from e",
            ));
            t.push("RuntimeError: Ninja build failed. Ninja output:".into());
            t.push("ninja: Entering directory `/root/.cache/flashinfer/0.6.16.post3/89/cached_ops/sampling'".into());
            t.push("FAILED: [code=1] /root/.cache/flashinfer/0.6.16.post3/89/cached_ops/sampling/csrc_sampling.cuda.o ".into());
            t.push(format!("{SITE}/flashinfer/data/cccl/libcudacxx/include/cuda/std/__cccl/cuda_toolkit.h:41:8: error: #error \"CUDA compiler and CUDA toolkit headers are incompatible, please check your include paths\""));
            t.push("   41 | #      error \"CUDA compiler and CUDA toolkit headers are incompatible, please check your include paths\"".into());
            t.push("ninja: build stopped: subcommand failed.".into());
            t
        }
        FailKind::OutOfMemory => {
            let mut t = Vec::new();
            t.extend(frame(
                "vllm/v1/worker/gpu_model_runner.py",
                5445,
                "load_model",
                "self.model = model_loader.load_model(",
            ));
            t.extend(frame(
                "torch/utils/_device.py",
                122,
                "__torch_function__",
                "return func(*args, **kwargs)",
            ));
            t.push("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.99 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 22.95 GiB memory in use. Of the allocated memory 21.80 GiB is allocated by PyTorch, and 512.00 MiB is reserved by PyTorch but unallocated.".into());
            t
        }
        FailKind::KvCacheTooSmall => {
            let mut t = Vec::new();
            t.extend(frame(
                "vllm/v1/engine/core.py",
                157,
                "__init__",
                "kv_cache_config = self._initialize_kv_caches(vllm_config)",
            ));
            t.extend(frame(
                "vllm/v1/core/kv_cache_utils.py",
                1030,
                "_check_enough_kv_cache_memory",
                "raise ValueError(",
            ));
            let gib = |tokens: f64| {
                tokens * super::config::KV_BYTES_PER_TOKEN as f64 / (1u64 << 30) as f64
            };
            let need = cfg.max_model_len as f64;
            // A pool forced to fail (--fail-boot) holds a bit under half of one request.
            let (avail, est) = if cfg.pool_too_small() {
                (
                    cfg.estimated_max_model_len() as f64,
                    cfg.estimated_max_model_len(),
                )
            } else {
                let est = (cfg.max_model_len as u64 * 45 / 100) / cfg.block_size as u64
                    * cfg.block_size as u64;
                (est as f64, est)
            };
            t.push(format!(
                "ValueError: To serve at least one request with the model's max seq len ({}), ({:.2} GiB KV cache is needed, which is larger than the available KV cache memory ({:.2} GiB). Based on the available memory, the estimated maximum model length is {est}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
                cfg.max_model_len,
                gib(need),
                gib(avail),
            ));
            t
        }
        FailKind::AcceleratorError => {
            let mut t = Vec::new();
            t.extend(frame(
                "vllm/model_executor/layers/vocab_parallel_embedding.py",
                50,
                "create_weights",
                "torch.empty(",
            ));
            t.extend(frame(
                "torch/utils/_device.py",
                122,
                "__torch_function__",
                "return func(*args, **kwargs)",
            ));
            t.push("torch.AcceleratorError: CUDA error: device not ready".into());
            t.push("Search for `cudaErrorNotReady' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.".into());
            t.push("For more detailed error information, run with CUDA_LOG_FILE=stderr".into());
            t
        }
        FailKind::CudaError => {
            let mut t = Vec::new();
            t.extend(frame(
                "vllm/v1/worker/gpu_worker.py",
                302,
                "determine_available_memory",
                "self.model_runner.profile_run()",
            ));
            t.extend(frame(
                "torch/cuda/__init__.py",
                1069,
                "synchronize",
                "return torch._C._cuda_synchronize()",
            ));
            t.push("RuntimeError: CUDA error: an illegal memory access was encountered".into());
            t.push("CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.".into());
            t.push("For debugging consider passing CUDA_LAUNCH_BLOCKING=1".into());
            t
        }
        FailKind::Assertion => {
            let mut t = Vec::new();
            t.extend(frame(
                "vllm/v1/core/kv_cache_utils.py",
                1187,
                "get_kv_cache_config",
                "assert len(kv_cache_specs) > 0",
            ));
            t.push("AssertionError".into());
            t
        }
        FailKind::ValueError => {
            let mut t = Vec::new();
            t.extend(frame(
                "vllm/model_executor/model_loader/utils.py",
                58,
                "initialize_model",
                "model_class, _ = get_model_architecture(model_config)",
            ));
            t.push("ValueError: Unknown quantization method: awq_marlin2. Must be one of ['awq', 'fp8', 'gptq', 'compressed-tensors', 'bitsandbytes'].".into());
            t
        }
        FailKind::RuntimeError => {
            let mut t = Vec::new();
            t.extend(frame(
                "vllm/distributed/parallel_state.py",
                1638,
                "init_distributed_environment",
                "torch.distributed.init_process_group(",
            ));
            t.push("RuntimeError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3".into());
            t
        }
        FailKind::UnclassifiedException => {
            let mut t = Vec::new();
            t.extend(frame(
                "vllm/model_executor/models/qwen3.py",
                512,
                "load_weights",
                "param = params_dict[name]",
            ));
            t.push("KeyError: 'model.layers.0.mlp.experts.w2_weight'".into());
            t
        }
        FailKind::EngineDead => unreachable!("an engine that died is reported by the API server"),
    };
    lines.extend(tail);
    lines
}

/// Prints the engine's side of a start-up failure.
pub fn print_engine_failure(log: &Logger, kind: FailKind, cfg: &ServeConfig) {
    if kind == FailKind::EngineDead {
        return;
    }
    let site = sites(log.release).fail_start;
    let text = engine_traceback(kind, cfg).join("\n");
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
    use crate::config::{test_config, Release};

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
            let text = engine_traceback(kind, &cfg).join("\n");
            assert!(text.contains(needle), "{kind:?}: {text}");
            assert!(
                text.starts_with("EngineCore failed to start.\nTraceback"),
                "{kind:?}"
            );
        }
        let _ = Release::V028;
    }
}
