//! vLLM's boot lines, in the order of its recorded boot logs: the API server's logo,
//! `non-default args` and resolved model before the engine starts, the engine's config, weight
//! load, KV cache and graph capture lines, then the API server's routes and uvicorn's start-up.

use std::time::Duration;

use crate::logline::{logo, py_str, sites, Logger};
use crate::settings::{Release, ServeConfig};

/// The API server's lines before it starts the engine (vLLM).
pub(super) fn api_server_lines(cfg: &ServeConfig) -> Logger {
    let log = Logger::new(cfg.release, "APIServer", &super::lines::VllmLines);
    let s = sites(cfg.release);
    log.info(s.logo, &logo(cfg.release.version(), &cfg.model));
    log.info(
        s.args,
        &format!("non-default args: {}", non_default_args(cfg)),
    );
    std::thread::sleep(Duration::from_secs_f64(cfg.boot_secs * 0.1));
    let arch = if cfg.hybrid {
        "Qwen3_5ForConditionalGeneration"
    } else {
        "Qwen3ForCausalLM"
    };
    log.info(s.arch, &format!("Resolved architecture: {arch}"));
    log.info(
        s.max_len,
        &format!("Using max model len {}", cfg.max_model_len),
    );
    if let Some(site) = s.chunked_prefill {
        log.info(
            site,
            &format!(
                "Chunked prefill is enabled with max_num_batched_tokens={}.",
                cfg.max_num_batched_tokens
            ),
        );
    }
    if cfg.enforce_eager {
        log.info(s.eager, "Cudagraph is disabled under eager mode");
    }
    if cfg.spec.is_some() {
        log.warn(
            "vllm.py:1605",
            "Async scheduling not supported with ngram-based speculative decoding and will be disabled.",
        );
    }
    log
}

/// The `non-default args` dict vLLM prints, in its field order.
fn non_default_args(cfg: &ServeConfig) -> String {
    let mut parts: Vec<String> = vec![format!("'model_tag': {}", py_str(&cfg.model))];
    parts.push(format!("'host': {}", py_str(&cfg.host)));
    if cfg.port != 8000 {
        parts.push(format!("'port': {}", cfg.port));
    }
    if cfg.api_key.is_some() {
        // vLLM 0.33 redacts secrets here; the simulator never prints a key in any release.
        parts.push("'api_key': '<redacted>'".into());
    }
    parts.push(format!("'model': {}", py_str(&cfg.model)));
    if cfg.max_model_len != 4096 {
        parts.push(format!("'max_model_len': {}", cfg.max_model_len));
    }
    if cfg.enforce_eager {
        parts.push("'enforce_eager': True".into());
    }
    if cfg.served_names_given {
        let names: Vec<String> = cfg.served_names.iter().map(|n| py_str(n)).collect();
        parts.push(format!("'served_model_name': [{}]", names.join(", ")));
    }
    if let Some(b) = &cfg.attention_backend {
        parts.push(format!("'attention_backend': {}", py_str(b)));
    }
    if let Some(b) = cfg.user_block_size {
        parts.push(format!("'block_size': {b}"));
    }
    if cfg.user_set_gpu_memory_utilization {
        let g = cfg.gpu_memory_utilization;
        parts.push(format!(
            "'gpu_memory_utilization': {}",
            crate::expo::py_repr(g)
        ));
    }
    if cfg.tp > 1 {
        parts.push(format!("'tensor_parallel_size': {}", cfg.tp));
    }
    if cfg.dp > 1 {
        parts.push(format!("'data_parallel_size': {}", cfg.dp));
    }
    if let Some(n) = cfg.num_gpu_blocks_override {
        parts.push(format!("'num_gpu_blocks_override': {n}"));
    }
    if cfg.max_num_batched_tokens != 8192 {
        parts.push(format!(
            "'max_num_batched_tokens': {}",
            cfg.max_num_batched_tokens
        ));
    }
    if cfg.max_num_seqs != 256 {
        parts.push(format!("'max_num_seqs': {}", cfg.max_num_seqs));
    }
    if let Some(q) = cfg.max_num_queued_reqs {
        parts.push(format!("'max_num_queued_reqs': {q}"));
    }
    if let Some(n) = cfg.max_cudagraph_capture_size {
        parts.push(format!("'max_cudagraph_capture_size': {n}"));
    }
    if cfg.stream_interval != 1 {
        parts.push(format!("'stream_interval': {}", cfg.stream_interval));
    }
    if let Some(s) = &cfg.spec {
        parts.push(format!("'speculative_config': {}", s.py_dict()));
    }
    if let Some(g) = cfg.kv_offloading_size {
        parts.push(format!("'kv_offloading_size': {}", crate::expo::py_repr(g)));
    }
    format!("{{{}}}", parts.join(", "))
}

/// vLLM's lines once every engine is ready: the routes, then uvicorn's start-up.
pub(super) fn ready_lines(log: &Logger, cfg: &ServeConfig, port: u16) {
    let s = sites(cfg.release);
    log.info(s.tasks, "Supported tasks: ['generate']");
    // The app is built with the development routers between these two lines.
    super::dev::boot_line(log);
    log.info(
        s.listen,
        &format!("Starting vLLM server on http://{}:{port}", cfg.host),
    );
    log.info(s.routes_head, "Available routes are:");
    let dev = super::dev::routes_listed();
    for (route, methods) in crate::api::http::ROUTES.iter().chain(dev) {
        log.info(s.route, &format!("Route: {route}, Methods: {methods}"));
    }
    log.uvicorn(&format!("Started server process [{}]", std::process::id()));
    log.uvicorn("Waiting for application startup.");
    log.uvicorn("Application startup complete.");
}

/// The engine line's `compilation_config` with its capture size, when one was asked for and
/// the server is not eager (vLLM prints 0 then).
fn graph_config(cfg: &ServeConfig) -> String {
    match cfg.max_cudagraph_capture_size {
        Some(n) => {
            let n = if cfg.enforce_eager { 0 } else { n };
            format!(", compilation_config={{'cudagraph_capture_sizes': [1], 'max_cudagraph_capture_size': {n}}}")
        }
        None => String::new(),
    }
}

pub(super) fn engine_lines(log: &Logger, cfg: &ServeConfig) -> crate::error::SimResult<()> {
    let s = sites(cfg.release);
    let share = cfg.boot_secs * 0.8 / 8.0;
    log.info(s.engine_config, &format!(
        "Initializing a V1 LLM engine (v{}) with config: model='{m}', speculative_config={spec}, tokenizer='{m}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={}, download_dir=None, load_format=auto, tensor_parallel_size={}, pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager={}, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name={}, enable_prefix_caching=True, enable_chunked_prefill=True{graphs}",
        cfg.release.version(),
        cfg.max_model_len,
        cfg.tp,
        if cfg.enforce_eager { "True" } else { "False" },
        cfg.served_names.join(","),
        m = cfg.model,
        graphs = graph_config(cfg),
        spec = cfg
            .spec
            .as_ref()
            .map_or_else(|| "None".to_string(), crate::spec::SpecConfig::engine_repr)
    ));
    sleep_s(share);
    let load = match cfg.release {
        Release::V030 => "Loading model from scratch...".to_string(),
        _ => format!("Starting to load model {}...", cfg.model),
    };
    log.info(s.load_start, &load);
    match &cfg.attention_backend {
        Some(b) => log.info(s.backend_explicit, &format!("Using AttentionBackendEnum.{b} backend.")),
        None => log.info(
            s.backend_auto,
            "Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION'].",
        ),
    }
    sleep_s(share * 2.0);
    log.info(
        s.weights,
        &format!("Loading weights took {:.2} seconds", share * 2.0 + 0.61),
    );
    let load_gib = 1.12;
    let model_msg = match cfg.release {
        Release::V028 | Release::V030 | Release::V033 => {
            format!(
                "Model loading took {load_gib} GiB memory and {:.6} seconds",
                share * 3.0 + 2.104566
            )
        }
    };
    log.info(s.model_memory, &model_msg);
    Ok(())
}

/// The worker's lines as it creates vLLM's native offloading connector
/// (`vllm-0.32-cpu/field/kv-offload/boot.log`, where the CPU build then refuses it).
fn connector_lines(log: &Logger) {
    let engine_id = format!("{:08x}-e8a5-45d1-aa40-0a901ee115a1", std::process::id());
    log.info(
        "factory.py:62",
        &format!("Creating v1 connector with name: OffloadingConnector and engine_id: {engine_id}"),
    );
    log.warn("base.py:214", "Initializing KVConnectorBase_V1. This API is experimental and subject to change in the future as we iterate the design.");
    log.info(
        "factory.py:57",
        "Creating offloading spec with name: CPUOffloadingSpec",
    );
}

pub(super) fn engine_ready_lines(log: &Logger, cfg: &ServeConfig, elapsed: f64) {
    let s = sites(cfg.release);
    let share = cfg.boot_secs * 0.8 / 8.0;
    if cfg.hybrid {
        log.info(s.hybrid_block, &format!("Setting attention block size to {} tokens to ensure that attention page size is >= mamba page size.", cfg.block_size));
        log.info(s.hybrid_padding, "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.");
    }
    if cfg.kv_offloading_size.is_some() {
        connector_lines(log);
    }
    sleep_s(share);
    if !cfg.enforce_eager {
        if let Some(site) = s.compile {
            log.info(site, "torch.compile took 4.07 s in total");
        }
        if let Some(site) = s.cudagraph_estimate {
            log.info(site, "Estimated CUDA graph memory: 0.20 GiB total");
        }
    }
    log.info(
        s.kv_memory,
        &format!("Available KV cache memory: {:.2} GiB", cfg.kv_cache_gib()),
    );
    if let Some(n) = cfg.num_gpu_blocks_override {
        let profiled = (8192 * 16 / cfg.block_size).max(n + 1);
        log.info(
            s.blocks_override,
            &format!("Overriding num_gpu_blocks={profiled} with num_gpu_blocks_override={n}"),
        );
    }
    log.info(
        s.kv_size,
        &format!(
            "GPU KV cache size: {} tokens, Maximum concurrency for {} tokens per request: {:.2}x",
            inferlint_core::fmt::thousands(cfg.kv_cache_tokens() as i64),
            inferlint_core::fmt::thousands(cfg.max_model_len as i64),
            cfg.max_concurrency()
        ),
    );
    sleep_s(share * 2.0);
    if cfg.enforce_eager {
        log.info(s.eager, "Cudagraph is disabled under eager mode");
    } else {
        log.info(
            s.graphs,
            "Graph capturing finished in 1 secs, took 0.18 GiB",
        );
        if let Some(site) = s.graph_pool {
            log.info(site, "CUDA graph pool memory: 0.18 GiB (actual), 0.2 GiB (estimated), difference: 0.02 GiB (12.0%).");
        }
    }
    let took = elapsed + share * 2.0;
    let msg = if cfg.enforce_eager {
        format!("init engine (profile, create kv cache, warmup model) took {took:.2} s")
    } else {
        format!("init engine (profile, create kv cache, warmup model) took {took:.2} s (compilation: 4.07 s)")
    };
    log.info(s.init_done, &msg);
}

fn sleep_s(s: f64) {
    if s > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(s));
    }
}
