//! SGLang 0.5's boot lines, in the order of the recorded boot logs
//! (tests/fixtures/sglang-0.5/qwen3-8b/boot.log): the launcher's `server_args={…}`, the
//! scheduler's weight load, KV pool, CUDA graph capture and `max_total_num_tokens=` line, then
//! uvicorn's start-up lines, the launcher's own warm-up requests and `The server is fired up and
//! ready to roll!`. The format strings are the recordings' (docs/design/engines.md#the-simulated-sglang).

use std::time::Duration;

use crate::logline::{py_str, Logger};
use crate::settings::{ServeConfig, KV_BYTES_PER_TOKEN};

/// The attention backend SGLang picks when none is named on a CUDA machine (the recorded
/// `Attention backend not specified. Use flashinfer backend by default.`).
pub const DEFAULT_BACKEND: &str = "flashinfer";

/// SGLang's `max_prefill_tokens` default.
const MAX_PREFILL_TOKENS: u32 = 16384;

/// The simulated model's GPU memory at each step of the boot, in GiB (SGLang prints GiB as
/// `GB`). The boot lines and the memory gauges of /metrics both read it, so they agree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Memory {
    /// Free at `Load weight begin`: the simulated card (`--gpu-mib`).
    pub avail_start: f64,
    /// The weights of the simulated Qwen3-0.6B (the vLLM simulation's 1.12 GiB).
    pub weights: f64,
    /// K and V, each.
    pub k_size: f64,
    /// The prefill and decode CUDA graphs (none under `--disable-cuda-graph`).
    pub graph_prefill: f64,
    pub graph_decode: f64,
}

impl Memory {
    pub fn of(cfg: &ServeConfig) -> Memory {
        let kv_bytes = cfg.pool_tokens() * KV_BYTES_PER_TOKEN;
        let graphs = !cfg.enforce_eager;
        Memory {
            avail_start: round2(cfg.gpu_mib as f64 / 1024.0),
            weights: 1.12,
            k_size: round2(kv_bytes as f64 / 2.0 / f64::from(1u32 << 30)),
            graph_prefill: if graphs { 0.21 } else { 0.0 },
            graph_decode: if graphs { 0.03 } else { 0.0 },
        }
    }

    /// Free once the KV pool is allocated.
    pub fn after_pool(&self) -> f64 {
        round2(self.avail_start - self.weights - 2.0 * self.k_size - 0.07)
    }

    /// Free once the graphs are captured (`available_gpu_mem`).
    pub fn available(&self) -> f64 {
        round2(self.after_pool() - self.graph_prefill - self.graph_decode)
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn py_opt_u32(v: Option<u32>) -> String {
    v.map_or_else(|| "None".to_string(), |n| n.to_string())
}

/// The backend the server runs with, and whether the user named it.
pub fn backend(cfg: &ServeConfig) -> (String, bool) {
    match &cfg.attention_backend {
        Some(b) => (b.clone(), true),
        None => (DEFAULT_BACKEND.to_string(), false),
    }
}

/// The `server_args` dict: the keys the simulator knows, in SGLang's field order (the
/// recorded dict's order).
pub fn server_args(cfg: &ServeConfig, random_seed: u64) -> String {
    let api_key = match &cfg.api_key {
        // SGLang prints the key; the simulator never prints one.
        Some(_) => "'<redacted>'".to_string(),
        None => "None".to_string(),
    };
    let parts = [
        ("model_path", py_str(&cfg.model)),
        ("tokenizer_path", py_str(&cfg.model)),
        ("context_length", cfg.max_model_len.to_string()),
        ("dtype", "'auto'".into()),
        ("kv_cache_dtype", "'auto'".into()),
        (
            "mem_fraction_static",
            crate::expo::py_repr(cfg.gpu_memory_utilization),
        ),
        ("max_running_requests", cfg.max_num_seqs.to_string()),
        ("max_queued_requests", py_opt_u32(cfg.max_num_queued_reqs)),
        ("max_total_tokens", py_opt_u32(cfg.options.max_total_tokens)),
        (
            "chunked_prefill_size",
            cfg.max_num_batched_tokens.to_string(),
        ),
        ("max_prefill_tokens", MAX_PREFILL_TOKENS.to_string()),
        ("schedule_policy", "'fcfs'".into()),
        ("page_size", cfg.block_size.to_string()),
        ("disable_radix_cache", py_bool(!cfg.prefix_caching).into()),
        ("tp_size", cfg.tp.to_string()),
        ("pp_size", "1".into()),
        ("dp_size", cfg.dp.to_string()),
        ("random_seed", random_seed.to_string()),
        ("host", py_str(&cfg.host)),
        ("port", cfg.port.to_string()),
        ("api_key", api_key),
        ("served_model_name", py_str(cfg.model_name())),
        ("enable_metrics", py_bool(cfg.options.enable_metrics).into()),
        ("attention_backend", py_str(&backend(cfg).0)),
        ("disable_cuda_graph", py_bool(cfg.enforce_eager).into()),
        ("speculative_algorithm", "None".into()),
    ];
    let body: Vec<String> = parts.iter().map(|(k, v)| format!("'{k}': {v}")).collect();
    format!("{{{}}}", body.join(", "))
}

fn sleep_s(s: f64) {
    if s > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(s));
    }
}

/// The launcher's lines before it starts the scheduler.
pub fn launcher_lines(log: &Logger, cfg: &ServeConfig) {
    if cfg.attention_backend.is_none() {
        log.info(
            "",
            &format!("Attention backend not specified. Use {DEFAULT_BACKEND} backend by default."),
        );
    }
    let seed = rand::random::<u32>() as u64;
    log.info("", &format!("server_args={}", server_args(cfg, seed)));
    log.info(
        "",
        "Using default HuggingFace chat template with detected content format: string",
    );
}

/// The scheduler's lines up to its KV pool (before its workers start).
pub fn scheduler_lines(log: &Logger, cfg: &ServeConfig) {
    let share = cfg.boot_secs * 0.8 / 8.0;
    let m = Memory::of(cfg);
    log.info("", "Init torch distributed begin.");
    sleep_s(share);
    log.info(
        "",
        &format!("Init torch distributed ends. elapsed={share:.2} s, mem usage=0.07 GB"),
    );
    log.info(
        "",
        &format!(
            "Load weight begin. avail mem={:.2} GB",
            m.avail_start - 0.07
        ),
    );
    sleep_s(share * 2.0);
    log.info("", &format!(
        "Load weight end. elapsed={:.2} s, type=Qwen3ForCausalLM, avail mem={:.2} GB, mem usage={:.2} GB.",
        share * 2.0,
        m.avail_start - 0.07 - m.weights,
        m.weights
    ));
    log.info(
        "",
        &format!(
            "KV Cache is allocated. dtype: torch.bfloat16, #tokens: {}, K size: {:.2} GB, V size: {:.2} GB",
            cfg.pool_tokens(),
            m.k_size,
            m.k_size
        ),
    );
    log.info(
        "",
        &format!("Memory pool end. avail mem={:.2} GB", m.after_pool()),
    );
}

/// The scheduler's lines from the graph capture to the pool summary (after its workers start).
pub fn scheduler_ready_lines(log: &Logger, cfg: &ServeConfig, elapsed: f64) {
    let share = cfg.boot_secs * 0.8 / 8.0;
    let m = Memory::of(cfg);
    let mut avail = m.after_pool();
    if !cfg.enforce_eager {
        let bs = decode_batch_sizes(cfg.max_num_seqs);
        log.info("", &format!(
            "Capture target prefill CUDA graph begin. backend=breakable, num_tokens=[4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096], avail mem={avail:.2} GB"
        ));
        sleep_s(share);
        avail -= m.graph_prefill;
        log.info("", &format!(
            "Capture target prefill CUDA graph end. elapsed={share:.2} s, mem usage={:.2} GB, avail mem={avail:.2} GB.",
            m.graph_prefill
        ));
        log.info("", &format!(
            "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs={bs:?}, avail mem={avail:.2} GB"
        ));
        avail -= m.graph_decode;
        log.info("", &format!(
            "Capture target decode CUDA graph end. elapsed={:.2} s, mem usage={:.2} GB, avail mem={avail:.2} GB.",
            share / 4.0,
            m.graph_decode
        ));
    }
    log.info("", &format!(
        "max_total_num_tokens={}, chunked_prefill_size={}, max_prefill_tokens={MAX_PREFILL_TOKENS}, max_running_requests={}, context_len={}, available_gpu_mem={:.2} GB",
        cfg.pool_tokens(),
        cfg.max_num_batched_tokens,
        cfg.max_num_seqs,
        cfg.max_model_len,
        m.available()
    ));
    log.info("", &format!(
        "Engine startup timings (s): load_weight={:.2}, kv_cache_allocation=0.01, scheduler_e2e={elapsed:.2}",
        share * 2.0
    ));
}

/// SGLang's decode graph batch sizes up to `max_running_requests`: 1, 2, 4, 8, then steps of
/// 4 to 16, of 8 beyond (the recorded `bs=[1, 2, 4, 8, 12, 16, 24, 32]` for 32).
pub fn decode_batch_sizes(max: u32) -> Vec<u32> {
    let mut v = vec![1, 2, 4, 8];
    let mut n = 12;
    while n <= max.max(8) {
        v.push(n);
        n += if n < 16 { 4 } else { 8 };
    }
    v.retain(|&b| b <= max.max(1));
    v
}

/// uvicorn's start-up lines once every scheduler is ready (the recorded order: the ready line
/// precedes `Uvicorn running on`).
pub fn uvicorn_lines(log: &Logger, cfg: &ServeConfig, port: u16) {
    log.uvicorn(&format!("Started server process [{}]", std::process::id()));
    log.uvicorn("Waiting for application startup.");
    log.uvicorn("Application startup complete.");
    log.uvicorn(&format!(
        "Uvicorn running on http://{}:{port} (Press CTRL+C to quit)",
        cfg.host
    ));
}

/// The scheduler's periodic `Decode batch, …` line while requests run (every
/// `SGLANG_LOG_INTERVAL` seconds here, 1 by default; SGLang counts decode steps,
/// `decode_log_interval` 40), in the recording's spelling.
pub async fn decode_log_loop(front: std::sync::Arc<crate::api::front::Front>) {
    let every: f64 = std::env::var("SGLANG_LOG_INTERVAL")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v: &f64| *v > 0.0)
        .unwrap_or(1.0);
    let pool = front.cfg.pool_tokens() as f64;
    let cudagraphs = if front.cfg.enforce_eager {
        "False"
    } else {
        "True"
    };
    let mut tick = tokio::time::interval(Duration::from_secs_f64(every));
    tick.tick().await;
    loop {
        tick.tick().await;
        let engines = front.lock().engines.clone();
        for es in engines.iter().filter(|es| es.running > 0) {
            front.log.info("", &format!(
                "Decode batch, #running-req: {}, #token: {}, token usage: {:.2}, cuda graph: {cudagraphs}, gen throughput (token/s): {:.2}, #queue-req: {}",
                es.running,
                (es.kv_usage * pool).round(),
                es.kv_usage,
                f64::from(es.running) * front.cfg.tokens_per_s,
                es.waiting
            ));
        }
    }
}

/// The launcher's last line, once its own warm-up request is answered.
pub const FIRED_UP: &str = "The server is fired up and ready to roll!";

/// SGLang's stop on SIGTERM/SIGINT: its launcher kills its process tree and leaves with
/// uvicorn's lines only.
pub async fn shutdown(
    front: &std::sync::Arc<crate::api::front::Front>,
    procs: &mut [crate::api::procs::EngineProc],
    serving: bool,
) -> i32 {
    let log = &front.log;
    let timeout = front.cfg.shutdown_timeout;
    let grace = Duration::from_secs(timeout as u64).max(Duration::from_millis(50));
    crate::api::procs::stop_engines(log, procs, grace).await;
    front.fail_all(500, "The server is shutting down; the request was aborted.");
    if serving {
        log.uvicorn("Shutting down");
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_config;

    #[test]
    fn decode_batch_sizes_match_the_recorded_capture() {
        assert_eq!(decode_batch_sizes(32), vec![1, 2, 4, 8, 12, 16, 24, 32]);
        assert_eq!(decode_batch_sizes(4), vec![1, 2, 4]);
    }

    #[test]
    fn server_args_parse_as_the_analyzer_reads_them() {
        let cfg = test_config(&[
            "/root/models/Qwen3-8B",
            "--engine",
            "sglang",
            "--served-model-name",
            "qwen3-8b",
            "--max-total-tokens",
            "32096",
        ]);
        let line = format!(
            "[2026-10-01 01:40:37] server_args={}\n",
            server_args(&cfg, 7)
        );
        let f = inferlint_core::bootlog::parse_text(&line, None);
        let args = f.server_args.expect("server_args parsed");
        assert_eq!(args["model_path"], "/root/models/Qwen3-8B");
        assert_eq!(args["max_total_tokens"], 32096);
        assert_eq!(args["page_size"], 1);
        assert_eq!(args["disable_cuda_graph"], false);
        assert!(args["api_key"].is_null());
        assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
    }

    #[test]
    fn memory_adds_up_from_the_card_down() {
        let m = Memory::of(&test_config(&[
            "m",
            "--engine",
            "sglang",
            "--gpu-mib",
            "24576",
        ]));
        assert_eq!(m.avail_start, 24.0);
        assert!(m.available() < m.after_pool() && m.after_pool() < m.avail_start);
    }
}
