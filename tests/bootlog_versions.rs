//! vLLM releases after the tested ones (0.31–0.33) and before them (0.10–0.24): logs built from
//! the exact format strings of each release (docs/design/bootlog.md#vllm-lines), the engines'
//! format samples, and the real vLLM 0.32 CPU logs of the evidence; the real SGLang 0.5.23
//! start-ups on a CPU in `sglang_cpu`.

use inferlint_core::bootlog::{self, Analyzer, BootEventKind, BootFacts, FailureKind};
use inferlint_core::checks::{t5, t6};
use inferlint_core::testkit::evidence;
use inferlint_core::{Engine, Status};

/// One vLLM 0.33 log record as its formatter writes it: the process prefix inside the format,
/// and every `\n` of the message turned into `\r\n` plus the full header.
fn rec(proc_: &str, level: &str, time: &str, file: &str, msg: &str) -> String {
    let header = format!("({proc_}) {level} 11-29 {time} [{file}] ");
    let body: Vec<String> = msg.split('\n').map(|l| format!("{header}{l}")).collect();
    format!("{}\n", body.join("\r\n"))
}

const API: &str = "APIServer pid=21913";
const CORE: &str = "EngineCore pid=22050";

fn logo(version: &str) -> String {
    let msg = format!(
        "\n       \u{2588}     \u{2588}     \u{2588}\u{2584}   \u{2584}\u{2588}\n \u{2584}\u{2584} \u{2584}\u{2588} \u{2588}     \u{2588}     \u{2588} \u{2580}\u{2584}\u{2580} \u{2588}  version {version}\n  \u{2588}\u{2584}\u{2588}\u{2580} \u{2588}     \u{2588}     \u{2588}     \u{2588}  model   Qwen/Qwen3-0.6B\n   \u{2580}\u{2580}  \u{2580}\u{2580}\u{2580}\u{2580}\u{2580} \u{2580}\u{2580}\u{2580}\u{2580}\u{2580} \u{2580}     \u{2580}\n"
    );
    rec(API, "INFO", "14:06:07", "startup.py:38", &msg)
}

/// A vLLM 0.33 boot and a short run, then an orderly stop (docs/design/bootlog.md#vllm-lines).
fn v033_log(version: &str) -> String {
    let mut s = logo(version);
    s += &rec(API, "INFO", "14:06:07", "startup.py:96", "non-default args: {'model_tag': 'Qwen/Qwen3-0.6B', 'max_model_len': 4096, 'api_key': '***', 'model': 'Qwen/Qwen3-0.6B'}");
    s += &rec(
        API,
        "INFO",
        "14:06:13",
        "model.py:744",
        "Resolved architecture: Qwen3ForCausalLM",
    );
    s += &rec(CORE, "INFO", "14:06:21", "core.py:139", &format!("Initializing a V1 LLM engine (v{version}) with config: model='Qwen/Qwen3-0.6B', speculative_config=None"));
    s += &rec(CORE, "INFO", "14:06:23", "cuda.py:508", "Using FLASHINFER attention backend out of potential backends: ['FLASHINFER', 'FLASH_ATTN', 'TRITON_ATTN'].");
    s += &rec(
        CORE,
        "INFO",
        "14:06:26",
        "gpu_model_runner.py:5088",
        "Model loading took 1.12 GiB memory and 2.104566 seconds",
    );
    s += &rec(
        CORE,
        "INFO",
        "14:06:38",
        "backends.py:417",
        "Compiling a graph for compile range (1, 8192) takes 7.42 s",
    );
    s += &rec(
        CORE,
        "INFO",
        "14:06:41",
        "gpu_worker.py:772",
        "Available KV cache memory: 115.63 GiB",
    );
    s += &rec(CORE, "INFO", "14:06:41", "kv_cache_utils.py:1147", "GPU + host KV cache size: 2,164,992 tokens, Maximum concurrency for 4,096 tokens per request: 528.56x");
    s += "Capturing CUDA graphs (decode, FULL): 100%|\u{2588}\u{2588}\u{2588}| 7/7 [00:00<00:00, 14.48it/s]\r";
    s += &rec(
        CORE,
        "INFO",
        "14:06:47",
        "gpu_model_runner.py:6516",
        "Graph capturing finished in 5 secs, took 0.56 GiB",
    );
    s += &rec(
        CORE,
        "INFO",
        "14:06:47",
        "core.py:405",
        "init engine (profile, create kv cache, warmup model) took 21.19 s (compilation: 11.37 s)",
    );
    s += &rec(
        API,
        "INFO",
        "14:06:48",
        "entry.py:139",
        "Starting vLLM server on http://0.0.0.0:8000",
    );
    s += "INFO:     Started server process [21913]\nINFO:     Waiting for application startup.\nINFO:     Application startup complete.\n";
    s += "INFO:     127.0.0.1:51236 - \"POST /v1/completions HTTP/1.1\" 200 OK\n";
    s += &rec(API, "INFO", "14:07:00", "loggers.py:335", "Engine 000: Avg prompt throughput: 1024.0 tokens/s, Avg generation throughput: 1280.0 tokens/s, Running: 10 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.1%, Prefix cache hit rate: 0.0%");
    s += &rec(
        API,
        "INFO",
        "14:08:00",
        "launcher.py:254",
        "[shutdown] API server: shutdown triggered",
    );
    s += &rec(
        API,
        "INFO",
        "14:08:00",
        "launcher.py:270",
        "[shutdown] API server: stopping engine client mode=abort timeout=0s",
    );
    s += &rec(
        CORE,
        "INFO",
        "14:08:00",
        "core.py:1454",
        "[shutdown] EngineCore: trigger received signal=SIGTERM",
    );
    s += &rec(API, "ERROR", "14:08:00", "async_llm.py:906", "AsyncLLM output_handler failed.\nTraceback (most recent call last):\n  File \"/v/vllm/v1/engine/core_client.py\", line 1104, in get_output_async\n    raise self._format_exception(outputs) from None\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.");
    s += &rec(
        API,
        "INFO",
        "14:08:00",
        "utils.py:628",
        "[shutdown] Process manager: send sigterm to process EngineCore",
    );
    s
}

fn parse(text: &str) -> BootFacts {
    bootlog::parse_text(text, None)
}

#[test]
fn vllm_033_boot_from_the_format_strings() {
    let text = v033_log("0.33.0");
    let f = parse(&text);
    assert_eq!(f.engine, Some(Engine::Vllm));
    assert_eq!(f.vllm_version.as_deref(), Some("0.33.0"));
    assert_eq!(f.non_default_args.as_ref().unwrap()["api_key"], "***");
    assert_eq!(f.selected_backends, ["FLASHINFER"]);
    assert_eq!(
        f.candidate_backends,
        ["FLASHINFER", "FLASH_ATTN", "TRITON_ATTN"]
    );
    assert_eq!(
        (f.model_load_gib, f.model_load_s),
        (Some(1.12), Some(2.104566))
    );
    assert_eq!(f.available_kv_cache_gib, Some(115.63));
    assert_eq!(
        f.kv_pool_tokens,
        Some(2_164_992),
        "the merged `GPU + host` line"
    );
    assert_eq!(f.max_concurrency, Some(528.56));
    assert_eq!(f.max_concurrency_request_len, Some(4096));
    assert_eq!(f.cudagraph_actual_gib, Some(0.56));
    assert_eq!(f.cudagraphs, Some(true));
    assert_eq!(f.compiled_fresh, Some(true));
    assert!(f.ready);
    assert_eq!(f.boot_seconds, Some(41.0));
    let procs: Vec<&str> = f.processes.keys().map(String::as_str).collect();
    assert_eq!(procs, ["APIServer", "EngineCore"]);
    assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
    assert!(f.conflicts.is_empty(), "{:?}", f.conflicts);
    // The teardown traceback after `[shutdown]` is noise; without the marker it is a crash.
    assert_eq!(f.failure, None);
    assert_eq!(f.shutdown_lineno, Some(24));
    let renamed = parse(&text.replace("[shutdown]", "[stop]"));
    assert_eq!(renamed.failure.unwrap().kind, FailureKind::EngineDead);
    let note = bootlog::untested_version_note(&f).unwrap();
    assert!(
        note.starts_with("note: vLLM 0.33.0 is not a tested version (tested: 0.28, 0.29, 0.30 on recorded GPU runs; 0.32 live on the CPU build).")
    );
    assert_eq!(t5::check(&f).message, "no block-size override printed");
    assert!(t6::check(&f)
        .message
        .contains("vLLM chose its own (FLASHINFER)"));
}

#[test]
fn the_logo_is_the_version_line_and_its_continuations_are_lines() {
    let text = v033_log("0.31.2");
    let mut a = Analyzer::new(None);
    let events = a.feed_bytes(text.as_bytes());
    // The logo's version is seen at its own physical line (the third of six, `\r\n`-separated).
    let v = events
        .iter()
        .find(|e| matches!(&e.kind, BootEventKind::VersionSeen { .. }))
        .unwrap();
    assert_eq!(v.lineno, 3);
    assert_eq!(
        v.kind,
        BootEventKind::VersionSeen {
            version: "0.31.2".into()
        }
    );
    let f = a.finish();
    assert_eq!(f.vllm_version.as_deref(), Some("0.31.2"));
    // A boot that failed before the engine line still knows its version from the logo.
    let early: String = text.lines().take(8).map(|l| format!("{l}\n")).collect();
    let f = parse(&early);
    assert_eq!(f.vllm_version.as_deref(), Some("0.31.2"));
    assert!(bootlog::untested_version_note(&f)
        .unwrap()
        .contains("vLLM 0.31.2"));
}

#[test]
fn colour_codes_of_every_release_are_stripped() {
    // 0.10–0.11: always-coloured stream prefix; 0.15–0.24: `0;36`; 0.33 on a TTY: coloured
    // prefix, level and grey stamp inside the formatter.
    let lines = [
        "\x1b[1;36m(APIServer pid=7)\x1b[0;0m INFO 11-29 14:06:07 [utils.py:233] non-default args: {'model': 'm', 'attention_backend': 'FLASH_ATTN'}",
        "\x1b[0;36m(EngineCore_DP0 pid=8)\x1b[0;0m INFO 11-29 14:06:21 [core.py:77] Initializing a V1 LLM engine (v0.24.0) with config: model='m'",
        "\x1b[0;36m(EngineCore pid=8)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m11-29 14:06:23\x1b[0m \x1b[90m[cuda.py:448]\x1b[0m Using AttentionBackendEnum.FLASH_ATTN backend.",
        "\x1b[0;36m(EngineCore pid=8)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m11-29 14:06:41\x1b[0m \x1b[90m[kv_cache_utils.py:1087]\x1b[0m GPU KV cache size: 1,082,496 tokens",
        "\x1b[0;36m(EngineCore pid=8)\x1b[0;0m INFO 11-29 14:06:41 [kv_cache_utils.py:1091] Maximum concurrency for 4,096 tokens per request: 264.28x",
        "INFO:     Application startup complete.",
    ];
    let f = parse(&lines.join("\n"));
    assert_eq!(f.vllm_version.as_deref(), Some("0.24.0"));
    assert_eq!(f.selected_backends, ["FLASH_ATTN"]);
    assert_eq!(f.kv_pool_tokens, Some(1_082_496));
    assert_eq!(f.max_concurrency, Some(264.28));
    assert_eq!(f.processes["EngineCore_DP0"], [8]);
    assert_eq!(f.processes["EngineCore"], [8]);
    assert_eq!(t6::check(&f).message, "FLASH_ATTN was requested and used");
    assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
}

#[test]
fn older_spellings_of_the_key_lines() {
    let lines = [
        "(APIServer pid=1) INFO 11-29 14:06:07 [api_server.py:1839] vLLM server version 0.15.1, serving model Qwen/Qwen3-0.6B",
        "(EngineCore_DP0 pid=2) INFO 11-29 14:06:23 [cuda.py:366] Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER']",
        "(EngineCore_DP0 pid=2) INFO 11-29 14:06:26 [gpu_model_runner.py:2653] Model loading took 1.1201 GiB and 2.104566 seconds",
        "(EngineCore_DP0 pid=2) INFO 11-29 14:06:40 [monitor.py:34] torch.compile takes 11.37 s in total",
        "(EngineCore_DP0 pid=2) INFO 11-29 14:06:40 [monitor.py:34] torch.compile takes 1.01 s in total",
    ];
    let f = parse(&lines.join("\n"));
    assert_eq!(f.vllm_version.as_deref(), Some("0.15.1"));
    assert_eq!(
        f.selected_backends,
        ["FLASH_ATTN"],
        "0.15 has no final period"
    );
    assert_eq!(f.model_load_gib, Some(1.1201));
    assert_eq!(f.compile_s, Some(12.38), "summed");
    let f = parse("(EngineCore_DP0 pid=2) INFO 11-29 14:06:23 [cuda.py:366] Using Flash Attention backend on V1 engine.");
    assert_eq!(f.selected_backends, ["FLASH_ATTN"]);
}

#[test]
fn a_known_line_that_no_longer_parses_is_unparsed_not_defaulted() {
    let lines = [
        "(EngineCore pid=2) INFO 11-29 14:06:41 [kv_cache_utils.py:1147] GPU KV cache size: many tokens, Maximum concurrency for 4,096 tokens per request: 2.1x",
        "(EngineCore pid=2) INFO 11-29 14:06:41 [gpu_worker.py:772] Available KV cache memory: 115.63 GB",
        "(EngineCore pid=2) INFO 11-29 14:06:41 [interface.py:1108] Setting attention block size to many tokens",
    ];
    let f = parse(&lines.join("\n"));
    assert_eq!(f.kv_pool_tokens, None);
    assert_eq!(f.available_kv_cache_gib, None);
    assert_eq!(f.attention_block_size, None);
    assert_eq!(f.max_concurrency, Some(2.1));
    let fields: Vec<&str> = f.unparsed.iter().map(|u| u.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            // 0.3.1's names for the key phrases (docs/design/bootlog.md).
            "kv_pool",
            "available_kv_cache_gib",
            "attention_block_size"
        ]
    );
    assert_eq!(f.unparsed[1].lineno, 2);
    assert_eq!(
        f.unparsed[1].line, "Available KV cache memory: 115.63 GB",
        "prefix stripped"
    );
}

/// A format sample of tests/engine-samples.
fn sample(name: &str) -> Option<String> {
    Some(inferlint_core::testkit::engine_sample(name))
}

#[test]
fn the_format_samples_of_the_spec() {
    if let Some(text) = sample("vllm-0.33.0-boot.log") {
        let f = parse(&text);
        assert_eq!(f.vllm_version.as_deref(), Some("0.33.0"));
        assert_eq!(f.kv_pool_tokens, Some(1_082_496));
        assert_eq!(f.max_concurrency, Some(264.28));
        assert_eq!(f.available_kv_cache_gib, Some(115.63));
        assert_eq!(f.selected_backends, ["FLASH_ATTN"]);
        assert_eq!(f.cudagraph_actual_gib, Some(0.56));
        assert!(f.ready);
        assert_eq!(f.processes["APIServer"], [21913]);
        assert_eq!(f.processes["EngineCore"], [22050]);
        assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
        assert_eq!(f.failure, None);
    }
    if let Some(text) = sample("vllm-0.11.0-boot.log") {
        let f = parse(&text);
        assert_eq!(f.engine, Some(Engine::Vllm));
        assert_eq!(f.vllm_version.as_deref(), Some("0.11.0"));
        assert_eq!(f.selected_backends, ["FLASH_ATTN"]);
        assert_eq!(f.kv_pool_tokens, Some(1_082_496));
        assert_eq!(f.max_concurrency, Some(264.28));
        assert_eq!(f.model_load_gib, Some(1.1201));
        assert_eq!(f.compile_s, Some(11.37));
        assert_eq!(f.compiled_fresh, Some(true));
        assert_eq!(f.processes["EngineCore_DP0"], [22050]);
        assert!(f.ready);
        assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
    }
}

/// Lines of a real vLLM 0.32 CPU boot (docs/design/evidence.md#vllm-032-on-cpu).
const REAL_032: &str = "Triton is installed, but doesn't include CPU backend. Disabling Triton.
(APIServer pid=1318) INFO 11-29 14:32:46 [api_utils.py:347]  \u{2584}\u{2584} \u{2584}\u{2588} \u{2588}     \u{2588}     \u{2588} \u{2580}\u{2584}\u{2580} \u{2588}  version 0.32.0
(APIServer pid=1318) INFO 11-29 14:32:58 [model.py:733] Resolved architecture: LlamaForCausalLM
(EngineCore pid=1418) INFO 11-29 14:33:08 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: model='/tmp/vllmcpu/smollm2-135m', dtype=torch.bfloat16, max_seq_len=512, device_config=cpu
(Worker pid=1458) INFO 11-29 14:33:19 [cpu_model_runner.py:68] Starting to load model /tmp/vllmcpu/smollm2-135m...
(VllmWorker-0 pid=1458) WARNING 11-29 14:33:19 [vllm.py:725] Model Runner V2 requires Triton; using the V1 model runner instead.
(Worker pid=1458) INFO 11-29 14:35:18 [cpu_worker.py:260] Explicitly set (1.0/15.71) GiB for KV cache on node 0.
(EngineCore pid=1418) INFO 11-29 14:35:18 [kv_cache_utils.py:2327] CPU KV cache size: 640 tokens, Maximum concurrency for 512 tokens per request: 1.25x
(EngineCore pid=1418) INFO 11-29 14:35:20 [core.py:402] init engine (profile, create kv cache, warmup model) took 119.49 s
(APIServer pid=1318) INFO 11-29 14:35:23 [entry.py:140] Starting vLLM server on http://127.0.0.1:8011
INFO:     Application startup complete.
(APIServer pid=1318) INFO 11-29 14:35:33 [loggers.py:335] Engine 000: Avg prompt throughput: 3.5 tokens/s, Avg generation throughput: 2.8 tokens/s, Running: 1 reqs, Waiting: 0 reqs, CPU KV cache usage: 0.3%, Prefix cache hit rate: 0.0%
";

#[test]
fn real_vllm_032_cpu_lines() {
    let f = parse(REAL_032);
    assert_eq!(f.vllm_version.as_deref(), Some("0.32.0"));
    assert_eq!(f.kv_pool_tokens, Some(640));
    assert_eq!(f.max_concurrency, Some(1.25));
    assert_eq!(
        f.available_kv_cache_gib, None,
        "no GPU line on CPU, and nothing made up"
    );
    assert!(
        f.selected_backends.is_empty(),
        "no attention backend line on CPU"
    );
    let procs: Vec<&str> = f.processes.keys().map(String::as_str).collect();
    assert_eq!(procs, ["APIServer", "EngineCore", "VllmWorker-0", "Worker"]);
    assert!(f.ready);
    assert_eq!(f.boot_seconds, Some(157.0));
    assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
    assert_eq!(t5::check(&f).status, Status::Pass);
    // 0.32 runs live on the CPU build in CI: a tested series.
    assert_eq!(bootlog::untested_version_note(&f), None);
}

#[test]
fn real_vllm_032_cpu_logs_of_the_evidence() {
    let Some(p) = evidence("vllm-0.32-cpu/boot.log") else {
        return;
    };
    let f = bootlog::parse_file(&p, None).unwrap();
    assert_eq!(f.vllm_version.as_deref(), Some("0.32.0"));
    assert_eq!(f.kv_pool_tokens, Some(46_592));
    assert_eq!(f.max_concurrency, Some(91.0));
    assert!(f.ready);
    assert!(f.processes.contains_key("Worker"));
    assert_eq!(f.failure, None);
    let orphan = bootlog::parse_file(
        &evidence("vllm-0.32-cpu/boot-preempt-orphan.log").unwrap(),
        None,
    )
    .unwrap();
    assert_eq!(orphan.kv_pool_tokens, Some(640));
    let failed = bootlog::parse_file(
        &evidence("vllm-0.32-cpu/boot-fail-kvcache.log").unwrap(),
        None,
    )
    .unwrap();
    assert_eq!(failed.failure.unwrap().kind, FailureKind::KvCacheTooSmall);
}

#[test]
fn the_library_strips_vllm_prefixes_with_or_without_colour() {
    assert_eq!(
        bootlog::strip_vllm_prefix("(EngineCore pid=3475) ERROR 09-05 23:33:11 [core.py:1348] EngineCore encountered a fatal error."),
        "EngineCore encountered a fatal error."
    );
    assert_eq!(
        bootlog::strip_vllm_prefix("\x1b[1;36m(APIServer pid=7)\x1b[0;0m INFO 11-29 14:06:07 [api_server.py:1839] vLLM API server version 0.11.0"),
        "vLLM API server version 0.11.0"
    );
    assert_eq!(bootlog::strip_vllm_prefix("plain text"), "plain text");
    assert_eq!(bootlog::TESTED_VLLM_VERSIONS, ["0.28", "0.29", "0.30"]);
}

#[path = "bootlog_versions/sglang_cpu.rs"]
mod sglang_cpu;
