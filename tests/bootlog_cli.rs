//! `inferlint check-log` and `inferlint boot-facts`, run as a user runs them.

use std::path::Path;
use std::process::{Command, Output};

use inferlint_core::testkit::evidence;

fn inferlint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .output()
        .expect("the binary runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn check_log_exit_codes() {
    let Some(spec) = evidence("vllm-0.28/boot_spec_backend_override.log") else {
        return;
    };
    let o = inferlint(&["check-log", path(&spec)]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let text = out(&o);
    assert!(text.contains(
        "[ T7] TRIPWIRE-FAILED  jit_toolchain during serving: CUDA compiler and CUDA toolkit headers are incompatible"
    ));
    assert!(text.contains("[ T6] TRIPWIRE-FAILED  TRITON_ATTN was requested and the main model uses it, but the draft model (speculative decoding) picked FLASHINFER"));

    let fp8 = evidence("vllm-0.28/boot_fp8_triton.log").unwrap();
    let o = inferlint(&["check-log", path(&fp8)]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert_eq!(
        out(&o).lines().collect::<Vec<_>>(),
        [
            "[T12] PASS  no failure in log",
            "[ T5] WARN  attention block size forced to 1568 tokens (requested 16); each request's KV is allocated in 1568-token units",
            "[ T6] PASS  TRITON_ATTN was requested and used",
        ]
    );
    assert_eq!(
        inferlint(&["check-log", "--strict", path(&fp8)])
            .status
            .code(),
        Some(1)
    );

    let o = inferlint(&["check-log", "--json", path(&fp8)]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[1]["tripwire"], "T5");
    assert_eq!(v[1]["status"], "warn");
    assert_eq!(v[1]["evidence"]["block_size"], 1568);
}

#[test]
fn check_log_across_two_starts() {
    let Some(hi) = evidence("vllm-0.28/boot_pool_level_hi.log") else {
        return;
    };
    let lo = evidence("vllm-0.28/boot_pool_level_lo.log").unwrap();
    let o = inferlint(&["check-log", path(&hi), path(&lo)]);
    assert_eq!(o.status.code(), Some(0), "warnings only: {}", out(&o));
    let text = out(&o);
    assert!(text.contains("[T12] PASS  boot_pool_level_hi.log: no failure in log"));
    assert!(text
        .contains("[ T5] WARN  boot_pool_level_lo.log: attention block size forced to 416 tokens"));
    assert!(text.contains("[ T4] WARN  same flags, 2 different pools: 12,405 to 13,575 tokens (9.43% apart) across boot_pool_level_hi.log, boot_pool_level_lo.log; compare results only within one pool"));
    assert!(text.contains("[T11] WARN  same flags, KV cache memory varied: 1.44 to 1.59 GiB"));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "3 per log, then T4 and T11");
    assert!(lines[6].starts_with("[ T4]") && lines[7].starts_with("[T11]"));
}

#[test]
fn boot_facts_text_and_json() {
    let Some(eager) = evidence("vllm-0.28/boot_eager.log") else {
        return;
    };
    let o = inferlint(&["boot-facts", path(&eager)]);
    assert_eq!(o.status.code(), Some(0));
    let text = out(&o);
    assert!(
        text.lines()
            .any(|l| l == "kv_pool_tokens               31554"),
        "{text}"
    );
    assert!(text
        .lines()
        .any(|l| l == "vllm_version                 0.28.0"));
    assert!(text.lines().any(|l| l
        .starts_with("non_default_args             enforce_eager, gpu_memory_utilization, host,")));
    assert!(!text.contains("UNPARSED"));
    assert!(err(&o).is_empty(), "{}", err(&o));

    let o = inferlint(&["boot-facts", "--json", path(&eager)]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["attention_block_size"], 784);
    assert_eq!(v["kv_pool_tokens"], 31554);
    assert_eq!(v["engine"], "vllm");
    assert_eq!(v["non_default_args"]["max_num_seqs"], 32);
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("{\n \""),
        "indented by one space"
    );

    let Some(sg) = evidence("sglang-0.5/qwen3-8b/boot.log") else {
        return;
    };
    let o = inferlint(&["boot-facts", path(&sg)]);
    let text = out(&o);
    assert!(
        text.lines()
            .any(|l| l == "engine                       sglang"),
        "{text}"
    );
    assert!(text
        .lines()
        .any(|l| l == "kv_pool_tokens               32096"));
    assert!(text
        .lines()
        .any(|l| l == "server_args   499 settings (--json lists them)"));
}

#[test]
fn boot_facts_conflicts_unparsed_and_strict() {
    let Some(hi) = evidence("vllm-0.28/boot_pool_level_hi.log") else {
        return;
    };
    let lo = evidence("vllm-0.28/boot_pool_level_lo.log").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both.log");
    let mut text = std::fs::read_to_string(&hi).unwrap();
    text.push_str(&std::fs::read_to_string(&lo).unwrap());
    text.push_str("(EngineCore pid=1) INFO 09-06 00:30:00 [gpu_worker.py:578] Available KV cache memory: lots GiB\n");
    std::fs::write(&both, text).unwrap();
    let o = inferlint(&["boot-facts", path(&both)]);
    assert_eq!(o.status.code(), Some(0));
    let t = out(&o);
    assert!(t.contains("CONFLICT kv_pool_tokens: [13575, 12405]"), "{t}");
    assert!(
        t.contains(
            "UNPARSED available_kv_cache_gib (line 268): Available KV cache memory: lots GiB"
        ),
        "{t}"
    );
    assert_eq!(
        inferlint(&["boot-facts", "--strict", path(&both)])
            .status
            .code(),
        Some(2)
    );
    let o = inferlint(&["check-log", path(&both)]);
    assert!(out(&o).contains("[T12] ????  1 recognised line(s) in an unknown format"));
    assert_eq!(o.status.code(), Some(2));
}

/// A boot log that names no engine.
const ANONYMOUS: &str = "starting up\nKV Cache is allocated. #tokens: 1000, K size: 0.50 GB, V size: 0.50 GB\nINFO:     Application startup complete.\n";

#[test]
fn a_log_that_names_no_engine() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("boot.log");
    std::fs::write(&p, ANONYMOUS).unwrap();
    let o = inferlint(&["boot-facts", "--json", path(&p)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        err(&o).trim_end(),
        format!(
            "note: {} does not say which engine it came from; read as vLLM's (--engine or INFERLINT_ENGINE names it)",
            p.display()
        )
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["engine"], "vllm");
    assert_eq!(v["log_engine"], serde_json::Value::Null);

    let o = inferlint(&["boot-facts", "--json", "--engine", "sglang", path(&p)]);
    assert_eq!(o.status.code(), Some(0));
    assert!(err(&o).is_empty(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["engine"], "sglang");
    assert_eq!(v["kv_pool_tokens"], 1000);

    let o = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args(["boot-facts", "--json", path(&p)])
        .env("INFERLINT_ENGINE", "SGLang")
        .output()
        .unwrap();
    assert!(err(&o).is_empty());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["engine"], "sglang");
}

#[test]
fn another_engines_log_is_refused() {
    let Some(vllm) = evidence("vllm-0.28/boot_eager.log") else {
        return;
    };
    for cmd in ["boot-facts", "check-log"] {
        let o = inferlint(&[cmd, "--engine", "sglang", path(&vllm)]);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        assert!(o.stdout.is_empty(), "{cmd}: nothing on stdout");
        assert_eq!(
            err(&o).trim_end(),
            format!(
                "inferlint: --engine sglang, but {} came from vLLM. Check the server address or the file, or name the engine it came from.",
                vllm.display()
            )
        );
    }
    let o = inferlint(&["check-log", "--engine", "tgi", path(&vllm)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("unknown engine 'tgi' (known: vllm, sglang, trtllm, llamacpp)"));
}

#[test]
fn unreadable_input_is_an_error_naming_the_file() {
    let o = inferlint(&["check-log", "/nonexistent/boot.log"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("/nonexistent/boot.log"), "{}", err(&o));
    assert!(o.stdout.is_empty());
    let o = inferlint(&["check-log"]);
    assert_eq!(o.status.code(), Some(2), "a log is required");
}

/// 0.32 runs live on the CPU build in CI: no note. A release outside every tested series gets
/// the note on stderr, saying how each series is tested.
#[test]
fn untested_versions_get_the_note_on_stderr() {
    let Some(cpu) = evidence("vllm-0.32-cpu/boot.log") else {
        return;
    };
    let o = inferlint(&["boot-facts", "--json", path(&cpu)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(err(&o), "", "0.32 is tested live on the CPU build");
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout is clean JSON");
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("boot.log");
    let text = std::fs::read_to_string(&cpu).unwrap();
    assert!(text.contains("0.32.0"), "the recording names its version");
    std::fs::write(&newer, text.replace("0.32.0", "0.35.0")).unwrap();
    let o = inferlint(&["boot-facts", "--json", path(&newer)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        err(&o).trim_end(),
        "note: vLLM 0.35.0 is not a tested version (tested: 0.28, 0.29, 0.30 on recorded GPU runs; 0.32 live on the CPU build). If a check says Can't tell or a value looks wrong, a log line or metric may have changed: please report it."
    );
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout is clean JSON");
}

/// A damaged line of each key phrase is unparsed under 0.3.1's name for it (its public
/// `Unparsed.field`), which users' scripts match on (docs/design/bootlog.md).
#[test]
fn unparsed_lines_are_named_as_0_3_1_named_them() {
    use inferlint_core::bootlog::parse_text;
    use inferlint_core::Engine;
    let cases: &[(Engine, &str, &str)] = &[
        (Engine::Vllm, "GPU KV cache size: lots tokens", "kv_pool"),
        (Engine::Vllm, "Model loading took lots GiB memory and 3 seconds", "model_load"),
        (
            Engine::Vllm,
            "Actual usage is lots GiB for consumed memory (weights + non-torch), 2 GiB for peak activation",
            "memory_split",
        ),
        (Engine::Sglang, "KV Cache is allocated. #tokens: lots, K size: 1 GB", "sglang_kv_pool"),
        (Engine::Sglang, "max_total_num_tokens=lots, chunked_prefill_size=8192", "sglang_limits"),
        (Engine::Trtllm, "[TRT-LLM] [I] [MemUsageChange] Allocated lots GiB for max tokens in paged KV cache (1).", "trt_kv_pool"),
    ];
    for (engine, line, field) in cases {
        let f = parse_text(&format!("{line}\n"), Some(*engine));
        let fields: Vec<&str> = f.unparsed.iter().map(|u| u.field.as_str()).collect();
        assert_eq!(fields, vec![*field], "{line}");
    }
}

/// TensorRT-LLM's settings line starts with `model='…'`: the model is among the server's
/// settings, as 0.3.1 kept it, and is the facts' model.
#[test]
fn a_trtllm_boot_keeps_its_model_among_the_settings() {
    let Some(log) = evidence("trtllm-1.3/qwen3-8b/boot.log") else {
        return;
    };
    let text = std::fs::read_to_string(log).unwrap();
    let f = inferlint_core::bootlog::parse_text(&text, Some(inferlint_core::Engine::Trtllm));
    let args = f.server_args.expect("the LLM Args line is read");
    assert_eq!(args["model"], "/root/models/Qwen3-8B");
    assert_eq!(f.model.as_deref(), Some("/root/models/Qwen3-8B"));
}
