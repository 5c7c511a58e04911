//! TensorRT-LLM 1.3's boot and shutdown lines, in the order of the recorded boot logs
//! (tests/fixtures/trtllm-1.3/qwen3-8b/boot.log): the launcher's import and executor set-up
//! lines, rank 0's weight load, the dry-run KV cache that sizes the pool, the CUDA graph
//! warm-up, the real pool, `LLM Args:` and its settings line, then the launcher's
//! `workers_ready`, uvicorn's start-up (no `Uvicorn running on` line: the recording has none)
//! and the iteration stats collector. The C++ batch manager's lines carry no time stamp. The
//! format strings are the recording's (docs/design/engines.md#the-simulated-tensorrt-llm).

use std::sync::Arc;
use std::time::Duration;

use super::failures::{self, IMPORT_WARNINGS};
use super::{pool_gib, KV_BYTES_PER_TOKEN, VERSION};
use crate::api::front::Front;
use crate::api::procs::{stop_engines, EngineProc};
use crate::expo::py_repr;
use crate::logline::Logger;
use crate::settings::{FailKind, ServeConfig};

/// The `LLM Args:` settings line of the recorded run, `{name}` where the simulated
/// configuration's value goes.
const LLM_ARGS: &str = include_str!("llm_args.txt");

/// The simulated model's weights in GiB (the vLLM simulation's Qwen3-0.6B).
pub const WEIGHTS_GIB: f64 = 1.12;

fn sleep_s(s: f64) {
    if s > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(s));
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// The line every TensorRT-LLM process prints when it imports the package.
fn import_lines(log: &Logger) {
    for w in IMPORT_WARNINGS {
        log.raw(w);
    }
    log.raw(&format!("[TensorRT-LLM] TensorRT LLM version: {VERSION}"));
}

/// The launcher's lines up to the spawn of its MPI ranks; `Some(exit status)` when the
/// configuration fails there (`--fail-boot`), after its traceback.
pub fn launcher_lines(log: &Logger, cfg: &ServeConfig) -> Option<i32> {
    if cfg.fail_boot == Some(FailKind::Assertion) {
        failures::print_no_cuda_home(log);
        return Some(1);
    }
    import_lines(log);
    log.info("llmapi", "Using LLM with PyTorch backend");
    log.info("llmapi", "neither checkpoint_format nor checkpoint_loader were provided, checkpoint_format will be set to HF.");
    if cfg.fail_boot == Some(FailKind::UnclassifiedException) {
        failures::print_compressed_tensors(log, cfg);
        return Some(1);
    }
    // The launcher's tenth of `--boot-secs` (rank 0 takes eight, serving the last).
    sleep_s(cfg.boot_secs * 0.1);
    let p = std::process::id();
    log.warn("executor", "Orchestrator is creating IPC executor");
    log.info(
        "executor",
        &format!("[startup][pid={p}] executor_proxy: start"),
    );
    log.info(
        "_startup",
        &format!("[startup][pid={p}] mpi_session_setup: start"),
    );
    log.info(
        "_startup",
        &format!(
            "[startup][pid={p}] mpi_session_setup: done, total=0.000s, unattributed=0.000s | "
        ),
    );
    log.raw("rank 0 using MpiPoolSession to spawn MPI processes");
    for queue in [
        "proxy_request_queue",
        "proxy_result_queue",
        "worker_init_status_queue",
    ] {
        log.info(
            "executor",
            &format!("Generating a new HMAC key for server {queue}"),
        );
    }
    log.info("executor", &format!("[startup][pid={p}] executor_proxy/pre_worker_setup: done in 0.038s (includes mpi_session_setup)"));
    log.info(
        "_startup",
        &format!("[startup][pid={p}] worker_submit_to_ready: start"),
    );
    log.info(
        "_startup",
        &format!("[startup][pid={p}] worker_submit_to_ready/worker_initialization_wait: start"),
    );
    None
}

/// The C++ batch manager's lines for a KV cache of `blocks` blocks (they carry no stamp).
fn kv_cache_lines(log: &Logger, cfg: &ServeConfig, blocks: u32) {
    let tpb = cfg.block_size;
    let window = cfg.max_model_len;
    log.info(
        "_torch",
        &format!("[KVCacheManager] blocks_per_window: {{{window}: ({blocks}, 0)}}"),
    );
    log.raw(&format!(
        "[TRT-LLM] [I] [batchmgr][RANK 0] Max KV cache blocks per sequence: {} [window size={window}], tokens per block={tpb}, primary blocks={blocks}, secondary blocks=0, max sequence length={window}",
        window.div_ceil(tpb)
    ));
    log.raw(&format!(
        "[TRT-LLM] [I] [batchmgr][RANK 0] Number of tokens per block: {tpb}."
    ));
    let tokens = u64::from(blocks) * u64::from(tpb);
    let gib = (tokens * KV_BYTES_PER_TOKEN) as f64 / f64::from(1u32 << 30);
    log.raw(&format!(
        "[TRT-LLM] [I] [batchmgr][RANK 0] [MemUsageChange] Allocated {gib:.2} GiB for max tokens in paged KV cache ({tokens})."
    ));
}

fn limits_line(log: &Logger, cfg: &ServeConfig) {
    log.info(
        "_torch",
        &format!(
            "max_seq_len={}, max_num_requests={}, max_num_tokens={}, max_batch_size={}",
            cfg.max_model_len, cfg.max_num_seqs, cfg.max_num_batched_tokens, cfg.max_num_seqs
        ),
    );
}

/// Rank 0's lines up to the dry run that sizes the pool (before the other ranks start).
pub fn rank_lines(log: &Logger, cfg: &ServeConfig) {
    let share = cfg.boot_secs * 0.8 / 8.0;
    let w = std::process::id();
    import_lines(log);
    log.raw("[TRT-LLM] [I] [runtime][RANK 0] Refreshed the MPI local session");
    log.info(
        "_startup",
        &format!("[startup][pid={w}] executor_creation: start"),
    );
    log.info(
        "_torch",
        &format!("Use {WEIGHTS_GIB:.2} GB for model weights."),
    );
    log.info(
        "_startup",
        &format!("[startup][pid={w}] executor_creation/model: start"),
    );
    sleep_s(share * 2.0);
    log.info("_torch", &format!(
        "Model loading metrics for rank 0: checkpoint_preparation_seconds={:.4}, weight_population_seconds={:.4}, checkpoint_finalization_seconds=0.0000, post_load_processing_seconds=0.0081, total_model_loading_seconds={:.4}",
        share, share, share * 2.0
    ));
    log.info(
        "_startup",
        &format!(
            "[startup][pid={w}] executor_creation/model: done in {:.3}s",
            share * 2.0
        ),
    );
    log.info("_torch", "Using Sampler: TorchSampler");
    log.info("_torch", &format!("Memory used at after loading weights (inside torch) in memory usage profiling: {WEIGHTS_GIB:.2} GiB"));
    log.info(
        "_torch",
        "Memory used at after loading weights (outside torch) in memory usage profiling: 0.20 GiB",
    );
    sleep_s(share * 2.0);
    // The dry run sizes a cache for one full-length sequence per batch slot's worth of blocks.
    let dry =
        (cfg.max_model_len.div_ceil(cfg.block_size) + cfg.max_num_seqs).min(cfg.num_gpu_blocks);
    log.info("_torch", &format!(
        "[kv cache manager] Primary/secondary blocks for window sizes set to {{{}: ({dry}, 0)}} for estimation dry run",
        cfg.max_model_len
    ));
    kv_cache_lines(log, cfg, dry);
    limits_line(log, cfg);
}

/// The settings line after `LLM Args:`, with the simulated configuration's values.
pub fn llm_args(cfg: &ServeConfig) -> String {
    let pool = cfg.pool_tokens();
    let tp = cfg.tp.to_string();
    let pairs = [
        ("{model}", cfg.model.clone()),
        ("{tp}", tp),
        ("{max_tokens}", pool.to_string()),
        ("{fraction}", py_repr(cfg.gpu_memory_utilization)),
        ("{kv_bytes}", (pool * KV_BYTES_PER_TOKEN).to_string()),
        ("{tpb}", cfg.block_size.to_string()),
        ("{max_batch}", cfg.max_num_seqs.to_string()),
        ("{max_seq_len}", cfg.max_model_len.to_string()),
        ("{max_num_tokens}", cfg.max_num_batched_tokens.to_string()),
        ("{perf}", py_bool(cfg.options.return_perf_metrics).into()),
        ("{iter}", py_bool(cfg.options.enable_iter_perf_stats).into()),
        ("{reuse}", py_bool(cfg.prefix_caching).into()),
    ];
    let mut line = LLM_ARGS.trim_end().to_string();
    for (k, v) in pairs {
        line = line.replace(k, &v);
    }
    line
}

/// Rank 0's lines from the CUDA graph warm-up to the executor's start (after the other ranks
/// start); `elapsed` is the seconds since its boot began.
pub fn rank_ready_lines(log: &Logger, cfg: &ServeConfig, elapsed: f64) {
    let share = cfg.boot_secs * 0.8 / 8.0;
    let w = std::process::id();
    if !cfg.enforce_eager {
        let n = cfg.max_num_seqs;
        log.info(
            "_torch",
            &format!("Running CUDA graph warmup for {n} batch sizes."),
        );
        sleep_s(share);
        log.info(
            "_torch",
            &format!("Running CUDA graph capture for {n} batch sizes."),
        );
        sleep_s(share);
    }
    // The memory profiling and the final pool's allocation.
    sleep_s(share * 2.0);
    let gib = pool_gib(cfg);
    let total = cfg.gpu_mib as f64 / 1024.0;
    log.info("_torch", &format!(
        "Peak memory during memory usage profiling (torch + non-torch): {:.2} GiB, available KV cache memory when calculating max tokens: {gib:.2} GiB, fraction is set {}, kv size per token is {KV_BYTES_PER_TOKEN} bytes/token. device total memory {total:.2} GiB, temporary kv cache memory 0.00 GiB",
        WEIGHTS_GIB + 0.5, py_repr(cfg.gpu_memory_utilization)
    ));
    log.info(
        "_torch",
        &format!("Estimated max memory in KV cache : {gib:.2} GiB"),
    );
    kv_cache_lines(log, cfg, cfg.num_gpu_blocks);
    limits_line(log, cfg);
    log.info("_torch", &format!("LLM Args:\n{}", llm_args(cfg)));
    log.info("_startup", &format!(
        "[startup][pid={w}] executor_creation: done, total={elapsed:.3}s, unattributed=0.024s | model={:.3}s",
        share * 2.0
    ));
    log.info("executor", "RPC Server has started.");
}

/// The launcher's lines once every rank is ready: `workers_ready`, then uvicorn's start-up
/// with the stats collector between its lines (the recorded order). `start_unix` is when the
/// launcher started.
pub fn server_lines(log: &Logger, cfg: &ServeConfig, start_unix: f64) {
    let p = std::process::id();
    let waited = crate::os::unix_now() - start_unix;
    log.info("executor", "get signal from executor worker");
    log.info("_startup", &format!("[startup][pid={p}] worker_submit_to_ready/worker_initialization_wait: done in {waited:.3}s"));
    log.info("_startup", &format!("[startup][pid={p}] worker_submit_to_ready: done, total={waited:.3}s, unattributed=0.002s | worker_submit=0.000s, worker_initialization_wait={waited:.3}s"));
    log.info(
        "executor",
        &format!("[startup][pid={p}] executor_proxy/workers_ready: elapsed={waited:.3}s"),
    );
    if cfg.options.return_perf_metrics {
        log.info(
            "_utils",
            &format!(
                "PROMETHEUS_MULTIPROC_DIR: /tmp/tmp{:08x}",
                rand::random::<u32>()
            ),
        );
    }
    log.warn("serve", "Resource governor is disabled: the executor backend does not provide a resource_governor_queue (e.g. RPC orchestrator mode or explicit opt-out). Endpoints under /_resource_governor/ will not be available.");
    log.uvicorn(&format!("Started server process [{p}]"));
    log.uvicorn("Waiting for application startup.");
    log.info(
        "_startup",
        &format!("[startup][pid={p}] http_server_start: start"),
    );
    if cfg.options.enable_iter_perf_stats {
        log.info("serve", "Started background iteration stats collector task");
        log.info("serve", "Iteration stats collector loop started");
    }
    log.uvicorn("Application startup complete.");
    log.info(
        "_startup",
        &format!(
            "[startup][pid={p}] http_server_start: done, total=0.101s, unattributed=0.101s | "
        ),
    );
}

/// A request evicted to make room, as TensorRT-LLM's scheduler logs it at INFO
/// (`MaxUtilizationScheduler: request ID 72 -> pause`, docs/tripwires.md T1). The simulated
/// scheduler evicts whenever its pool is full, whatever the capacity policy the settings line
/// names (the real `GUARANTEED_NO_EVICT` would have held the request back instead).
pub fn pause_lines(log: &Logger, preempted: &[u64]) {
    for id in preempted {
        log.info(
            "",
            &format!("MaxUtilizationScheduler: request ID {id} -> pause"),
        );
    }
}

/// The stop on SIGTERM/SIGINT: uvicorn's shutdown runs the lifespan, which stops the stats
/// collector, the proxy's threads and then the MPI session (its ranks), as recorded; the
/// caller prints uvicorn's last two lines.
pub async fn shutdown(front: &Arc<Front>, procs: &mut [EngineProc], serving: bool) -> i32 {
    let log = &front.log;
    if serving {
        log.uvicorn("Shutting down");
        log.uvicorn("Waiting for application shutdown.");
    }
    if front.cfg.options.enable_iter_perf_stats {
        log.info("serve", "Iteration stats collector loop cancelled");
        log.info("serve", "Stopped background iteration stats collector task");
    }
    log.info("llmapi", "Thread proxy_dispatch_result_thread stopped.");
    log.info("llmapi", "Thread await_response_thread stopped.");
    log.info(
        "llmapi",
        &format!(
            "MpiPoolSession.shutdown: joining {} worker(s) (wait=True)",
            front.cfg.tp
        ),
    );
    let grace =
        Duration::from_secs(u64::from(front.cfg.shutdown_timeout)).max(Duration::from_millis(50));
    stop_engines(log, procs, grace).await;
    front.fail_all(500, "The server is shutting down; the request was aborted.");
    log.info("llmapi", "MpiPoolSession.shutdown: done");
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_config;

    #[test]
    fn llm_args_read_as_the_analyzer_reads_the_recorded_line() {
        let cfg = test_config(&[
            "/root/models/Qwen3-8B",
            "--engine",
            "trtllm",
            "--max_batch_size",
            "32",
            "--max_seq_len",
            "16384",
            "--num-gpu-blocks-override",
            "1180",
        ]);
        let text = format!(
            "[10/01/2026-01:43:50] [TRT-LLM] [I] [_torch] LLM Args:\n{}\n",
            llm_args(&cfg)
        );
        let f = inferlint_core::bootlog::parse_text(&text, None);
        let args = f.server_args.expect("settings parsed");
        assert_eq!(args["max_batch_size"], 32);
        assert_eq!(args["max_seq_len"], 16384);
        assert_eq!(args["tokens_per_block"], 32);
        assert_eq!(args["attn_backend"], "TRTLLM");
        assert_eq!(args["capacity_scheduler_policy"], "GUARANTEED_NO_EVICT");
        assert_eq!(f.model.as_deref(), Some("/root/models/Qwen3-8B"));
        assert!(!llm_args(&cfg).contains('{'), "every placeholder filled");
    }
}
