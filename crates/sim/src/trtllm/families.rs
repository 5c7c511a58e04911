//! TensorRT-LLM 1.3's `/prometheus/metrics` families as the recorded scrape exposes them: name,
//! type, HELP, label names and histogram buckets, taken from
//! tests/fixtures/trtllm-1.3/qwen3-8b/after.snapshot.json (the run that saw every family), in its
//! order. `iteration` marks the families fed by iteration stats, which the recorded
//! no-iter-stats run (`enable_iter_perf_stats: false`) does not have.

/// One family of the table.
pub(super) struct Spec {
    /// The exposed name (a counter's with its `_total`).
    pub name: &'static str,
    /// `counter`, `gauge` or `histogram`, as its `# TYPE` line.
    pub kind: &'static str,
    pub help: &'static str,
    /// Label names in exposition (alphabetical) order, `le` left out.
    pub labels: &'static [&'static str],
    /// A histogram's bucket bounds without +Inf.
    pub buckets: &'static [f64],
    /// Fed by iteration stats (only with `enable_iter_perf_stats: true`).
    pub iteration: bool,
}

#[rustfmt::skip]
pub(super) const FAMILIES: &[Spec] = &[
    Spec { name: "trtllm_model_config_info", kind: "gauge", help: "Model configuration info", labels: &["dtype", "engine_type", "gpu_type", "max_model_len", "model", "model_name", "pid", "quantization", "served_model_name"], buckets: &[], iteration: false },
    Spec { name: "trtllm_parallel_config_info", kind: "gauge", help: "Parallelism configuration info", labels: &["context_parallel_size", "engine_type", "gpu_count", "model_name", "pid", "pipeline_parallel_size", "tensor_parallel_size"], buckets: &[], iteration: false },
    Spec { name: "trtllm_kv_cache_config_info", kind: "gauge", help: "KV cache configuration info", labels: &["cache_dtype", "enable_block_reuse", "enable_partial_reuse", "engine_type", "free_gpu_memory_fraction", "model_name", "pid"], buckets: &[], iteration: false },
    Spec { name: "trtllm_num_requests_running", kind: "gauge", help: "Number of active requests", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_num_requests_waiting", kind: "gauge", help: "Number of queued requests", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_max_num_active_requests", kind: "gauge", help: "Maximum number of active requests", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_iteration_latency_seconds", kind: "gauge", help: "Iteration latency in seconds", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_gpu_memory_usage_bytes", kind: "gauge", help: "GPU memory usage in bytes", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_cpu_memory_usage_bytes", kind: "gauge", help: "CPU memory usage in bytes", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_pinned_memory_usage_bytes", kind: "gauge", help: "Pinned memory usage in bytes", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_max_batch_size_static", kind: "gauge", help: "Static maximum batch size", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_max_batch_size_runtime", kind: "gauge", help: "Runtime maximum batch size", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_max_num_tokens_runtime", kind: "gauge", help: "Runtime maximum number of tokens", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_hit_rate", kind: "gauge", help: "KV cache hit rate", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_utilization", kind: "gauge", help: "KV cache utilization", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_max_blocks", kind: "gauge", help: "Maximum number of KV cache blocks", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_free_blocks", kind: "gauge", help: "Number of free KV cache blocks", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_used_blocks", kind: "gauge", help: "Number of used KV cache blocks", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_tokens_per_block", kind: "gauge", help: "Number of tokens per KV cache block", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_num_context_requests", kind: "gauge", help: "Number of context (prefill) requests", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_num_generation_requests", kind: "gauge", help: "Number of generation (decode) requests", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_num_paused_requests", kind: "gauge", help: "Number of paused requests", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_num_scheduled_requests", kind: "gauge", help: "Number of scheduled requests", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_total_context_tokens", kind: "gauge", help: "Total number of context tokens", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_avg_decoded_tokens_per_iter", kind: "gauge", help: "Average number of decoded tokens per iteration", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_prefill_batch_occupancy", kind: "gauge", help: "Fraction of max active slots occupied by context requests.", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_iter_reuse_rate", kind: "gauge", help: "Per-iteration KV cache block reuse rate", labels: &["engine_type", "model_name", "pid"], buckets: &[], iteration: true },
    Spec { name: "trtllm_prompt_cached_tokens_total", kind: "counter", help: "Process-lifetime total prompt tokens served from KV cache. Resets only when the serving process restarts, not when the KV cache is flushed or evicted.", labels: &["engine_type", "model_name"], buckets: &[], iteration: false },
    Spec { name: "trtllm_request_success_total", kind: "counter", help: "Count of successfully processed requests.", labels: &["engine_type", "finished_reason", "model_name"], buckets: &[], iteration: false },
    Spec { name: "trtllm_prompt_tokens_total", kind: "counter", help: "Cumulative number of prompt (input) tokens processed.", labels: &["engine_type", "model_name"], buckets: &[], iteration: false },
    Spec { name: "trtllm_generation_tokens_total", kind: "counter", help: "Cumulative number of generation (output) tokens produced.", labels: &["engine_type", "model_name"], buckets: &[], iteration: false },
    Spec { name: "trtllm_kv_cache_missed_blocks_total", kind: "counter", help: "Cumulative number of KV cache blocks missed (cache misses)", labels: &["engine_type", "model_name"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_iter_missed_blocks_total", kind: "counter", help: "Total missed KV cache blocks (context phase)", labels: &["engine_type", "model_name"], buckets: &[], iteration: true },
    Spec { name: "trtllm_num_requests_completed_total", kind: "counter", help: "Total number of completed requests across iterations", labels: &["engine_type", "model_name"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_reused_blocks_total", kind: "counter", help: "Cumulative number of KV cache blocks reused (cache hits)", labels: &["engine_type", "model_name"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_iter_reused_blocks_total", kind: "counter", help: "Total reused KV cache blocks (full + partial)", labels: &["engine_type", "model_name"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_iter_partial_reused_blocks_total", kind: "counter", help: "Total partially reused KV cache blocks", labels: &["engine_type", "model_name"], buckets: &[], iteration: true },
    Spec { name: "trtllm_kv_cache_gen_alloc_blocks_total", kind: "counter", help: "Total blocks allocated during generation phase", labels: &["engine_type", "model_name"], buckets: &[], iteration: true },
    Spec { name: "trtllm_e2e_request_latency_seconds", kind: "histogram", help: "Histogram of end to end request latency in seconds.", labels: &["engine_type", "model_name"], buckets: &[0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0], iteration: false },
    Spec { name: "trtllm_time_to_first_token_seconds", kind: "histogram", help: "Histogram of time to first token in seconds.", labels: &["engine_type", "model_name"], buckets: &[0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0], iteration: false },
    Spec { name: "trtllm_time_per_output_token_seconds", kind: "histogram", help: "Histogram of time per output token in seconds.", labels: &["engine_type", "model_name"], buckets: &[0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0], iteration: false },
    Spec { name: "trtllm_request_queue_time_seconds", kind: "histogram", help: "Histogram of time spent in WAITING phase for request.", labels: &["engine_type", "model_name"], buckets: &[0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0], iteration: false },
    Spec { name: "trtllm_request_prefill_time_seconds", kind: "histogram", help: "Histogram of prefill (context) phase duration in seconds (first_token_time - first_scheduled_time).", labels: &["engine_type", "model_name"], buckets: &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0], iteration: false },
    Spec { name: "trtllm_request_decode_time_seconds", kind: "histogram", help: "Histogram of decode (generation) phase duration in seconds (last_token_time - first_token_time).", labels: &["engine_type", "model_name"], buckets: &[0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0], iteration: false },
    Spec { name: "trtllm_request_inference_time_seconds", kind: "histogram", help: "Histogram of total inference duration in seconds (last_token_time - first_scheduled_time).", labels: &["engine_type", "model_name"], buckets: &[0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0], iteration: false },
    Spec { name: "trtllm_prompt_cached_tokens_per_request", kind: "histogram", help: "Histogram of cached prompt tokens per request.", labels: &["engine_type", "model_name"], buckets: &[0.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0], iteration: false },
    Spec { name: "trtllm_prefill_batch_tokens", kind: "histogram", help: "Histogram of total context tokens per iteration.", labels: &["engine_type", "model_name"], buckets: &[64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0], iteration: true },
];
