//! Boot-log facts and verdicts pinned in docs/design/evidence.md on the recorded logs, and the
//! mutations that flip each verdict (one line of real evidence changed in memory).

use inferlint_core::bootlog::{self, BootFacts, FailureKind, Phase};
use inferlint_core::checks::{t12, t4_t11, t5, t6};
use inferlint_core::testkit::{evidence, evidence_text};
use inferlint_core::{Engine, Status, Tripwire};
use serde_json::json;

fn facts(rel: &str) -> Option<BootFacts> {
    let p = evidence(rel)?;
    Some(bootlog::parse_file(&p, None).expect("readable"))
}

fn parse(text: &str) -> BootFacts {
    bootlog::parse_text(text, None)
}

fn pair<'a>(a: &'a BootFacts, b: &'a BootFacts) -> Vec<(String, &'a BootFacts)> {
    vec![("a".to_string(), a), ("b".to_string(), b)]
}

/// Text with one substring replaced, asserting that it was there.
fn replaced(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "the evidence holds {from:?}");
    text.replace(from, to)
}

/// Text without the lines that contain any of `needles`.
fn without_lines(text: &str, needles: &[&str]) -> String {
    text.lines()
        .filter(|l| !needles.iter().any(|n| l.contains(n)))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn vllm_028_live_and_xray_run_folders() {
    let Some(live) = facts("vllm-0.28/live/boot.log") else {
        return;
    };
    assert_eq!(live.kv_pool_tokens, Some(26_093));
    assert_eq!(live.attention_block_size, Some(784));
    assert_eq!(live.cudagraph_actual_gib, Some(0.18));
    assert!(live.unparsed.is_empty());
    assert_eq!(live.boot_seconds, Some(124.0));
    assert_eq!(t12::from_facts(&live).status, Status::Pass);
    assert_eq!(t5::check(&live).status, Status::Warn);
    assert_eq!(t6::check(&live).status, Status::Pass);
    let text = evidence_text("vllm-0.28/live/boot.log").unwrap();
    assert!(!text.to_lowercase().contains("preempt"));

    let xray = facts("vllm-0.28/xray/boot.log").unwrap();
    assert_eq!(xray.kv_pool_tokens, Some(26_093));
    assert_eq!(xray.attention_block_size, Some(784));
    assert_eq!(xray.cudagraph_actual_gib, Some(0.18));
    assert!(xray.version.as_deref().unwrap().starts_with("0.28"));
    assert!(xray.ready);
    assert!(xray.unparsed.is_empty());
    assert_eq!(bootlog::untested_version_note(&xray), None);
    assert_eq!(t12::from_facts(&xray).status, Status::Pass);
}

#[test]
fn boot_eager() {
    let Some(f) = facts("vllm-0.28/boot_eager.log") else {
        return;
    };
    assert_eq!(f.engine, Some(Engine::Vllm));
    assert_eq!(f.vllm_version.as_deref(), Some("0.28.0"));
    assert_eq!(f.kv_pool_tokens, Some(31_554));
    assert_eq!(f.max_concurrency, Some(1.93));
    assert_eq!(f.max_concurrency_request_len, Some(16_384));
    assert_eq!(f.attention_block_size, Some(784));
    assert_eq!(f.mamba_page_padding_pct, Some(0.13));
    assert_eq!(f.available_kv_cache_gib, Some(2.51));
    assert_eq!(f.selected_backends, ["FLASH_ATTN"]);
    assert_eq!(f.requested_backend, None);
    assert_eq!(f.cudagraphs, Some(false));
    assert_eq!(f.speculative, Some(false));
    assert!(f.ready);
    assert_eq!(f.non_default_args.as_ref().unwrap()["max_num_seqs"], 32);
    let procs: Vec<&str> = f.processes.keys().map(String::as_str).collect();
    assert_eq!(procs, ["APIServer", "EngineCore"]);
    let r = t5::check(&f);
    assert_eq!(r.status, Status::Warn);
    assert_eq!(r.evidence_json()["block_size"], 784);
    assert!(f.unparsed.is_empty());
    // Mutation: the block size vLLM would have used anyway passes.
    let text = evidence_text("vllm-0.28/boot_eager.log").unwrap();
    let small = parse(&replaced(
        &text,
        "block size to 784 tokens",
        "block size to 16 tokens",
    ));
    let r = t5::check(&small);
    assert_eq!(
        (r.status, r.message.as_str()),
        (Status::Pass, "block size 16")
    );
}

#[test]
fn boot_cudagraphs_and_the_untested_version_note() {
    let Some(f) = facts("vllm-0.28/boot_cudagraphs.log") else {
        return;
    };
    assert_eq!(f.cudagraphs, Some(true));
    assert_eq!(f.cudagraph_estimated_gib, Some(0.20));
    assert_eq!(f.cudagraph_actual_gib, Some(0.18));
    assert_eq!(f.kv_pool_tokens, Some(26_093));
    let r = t6::check(&f);
    assert_eq!(r.status, Status::Pass);
    assert!(r.message.starts_with("nothing to check: "));
    assert!(r.message.contains("vLLM chose its own (FLASH_ATTN)"));
    assert_eq!(bootlog::untested_version_note(&f), None);
    let text = evidence_text("vllm-0.28/boot_cudagraphs.log").unwrap();
    let newer = parse(&replaced(&text, "(v0.28", "(v0.99"));
    let note = bootlog::untested_version_note(&newer).expect("a note for 0.99");
    assert!(note.starts_with("note: vLLM 0.99"), "{note}");
    assert!(note.contains(
        "is not a tested version (tested: 0.28, 0.29, 0.30 on recorded GPU runs; 0.32 live on the CPU build)"
    ));
}

#[test]
fn boot_spec_backend_override() {
    let Some(f) = facts("vllm-0.28/boot_spec_backend_override.log") else {
        return;
    };
    assert_eq!(f.requested_backend.as_deref(), Some("TRITON_ATTN"));
    assert_eq!(f.selected_backends, ["TRITON_ATTN"]);
    assert_eq!(f.drafter_backends, ["FLASHINFER"]);
    assert_eq!(f.speculative, Some(true));
    assert_eq!(
        f.cudagraph_mode_downgrade,
        Some(("FULL_AND_PIECEWISE".to_string(), "PIECEWISE".to_string()))
    );
    assert_eq!(bootlog::result_block(&f)["kv_pool_tokens"], 19_988);
    let r6 = t6::check(&f);
    assert_eq!(r6.status, Status::Fail);
    assert!(r6
        .message
        .ends_with("draft model (speculative decoding) picked FLASHINFER"));
    assert!(f.ready);
    let r7 = t12::from_facts(&f);
    assert_eq!((r7.tripwire, r7.status), (Tripwire::T7, Status::Fail));
    assert_eq!(
        r7.message,
        "jit_toolchain during serving: CUDA compiler and CUDA toolkit headers are incompatible"
    );
    assert_eq!(r7.evidence_json()["kind"], "jit_toolchain");
    assert_eq!(r7.evidence_json()["phase"], "serving");

    // Mutations: T6 FLASHINFER -> TRITON_ATTN passes; T7 without ERROR/Traceback lines passes.
    let text = evidence_text("vllm-0.28/boot_spec_backend_override.log").unwrap();
    let same = parse(&text.replace("FLASHINFER", "TRITON_ATTN"));
    assert_eq!(t6::check(&same).status, Status::Pass);
    assert_eq!(
        t6::check(&same).message,
        "TRITON_ATTN was requested and used"
    );
    let quiet = without_lines(&text, &[" ERROR ", "Traceback"]);
    assert_eq!(t12::check(&quiet, &parse(&quiet)).status, Status::Pass);
    assert_eq!(t12::check(&text, &f).tripwire, Tripwire::T7);
}

#[test]
fn boot_fp8_triton_honours_the_backend() {
    let Some(f) = facts("vllm-0.28/boot_fp8_triton.log") else {
        return;
    };
    assert_eq!(f.requested_backend.as_deref(), Some("TRITON_ATTN"));
    assert_eq!(
        f.selected_backends,
        ["TRITON_ATTN"],
        "vision FLASH_ATTN lines ignored"
    );
    let r = t6::check(&f);
    assert_eq!(
        (r.status, r.message.as_str()),
        (Status::Pass, "TRITON_ATTN was requested and used")
    );
}

#[test]
fn pool_levels_t4_t11_and_their_mutations() {
    let Some(hi) = facts("vllm-0.28/boot_pool_level_hi.log") else {
        return;
    };
    let lo = facts("vllm-0.28/boot_pool_level_lo.log").unwrap();
    assert_eq!(
        (hi.kv_pool_tokens, lo.kv_pool_tokens),
        (Some(13_575), Some(12_405))
    );
    assert_eq!(
        (hi.available_kv_cache_gib, lo.available_kv_cache_gib),
        (Some(1.59), Some(1.44))
    );
    let logs = vec![
        ("boot_pool_level_hi.log".to_string(), &hi),
        ("boot_pool_level_lo.log".to_string(), &lo),
    ];
    let t4 = t4_t11::check_t4(&logs);
    assert_eq!(t4.len(), 1);
    assert_eq!(t4[0].status, Status::Warn);
    assert_eq!(t4[0].evidence_json()["levels"], json!([12405, 13575]));
    assert!(t4[0]
        .message
        .contains("2 different pools: 12,405 to 13,575 tokens (9.43% apart)"));
    let t11 = t4_t11::check_t11(&logs);
    assert_eq!(t11[0].status, Status::Warn);
    assert!(t11[0]
        .message
        .starts_with("same flags, KV cache memory varied: 1.44 to 1.59 GiB ("));
    assert!(t11[0]
        .message
        .contains("1 of 2 starts compiled the model from scratch"));

    let lo_text = evidence_text("vllm-0.28/boot_pool_level_lo.log").unwrap();
    let lo_as_hi = parse(&replaced(&lo_text, "12,405", "13,575"));
    assert_eq!(
        t4_t11::check_t4(&pair(&hi, &lo_as_hi))[0].status,
        Status::Pass
    );
    let lo_kv = parse(&replaced(&lo_text, "memory: 1.44 GiB", "memory: 1.59 GiB"));
    let r = &t4_t11::check_t11(&pair(&hi, &lo_kv))[0];
    assert_eq!(
        (r.status, r.message.as_str()),
        (
            Status::Pass,
            "same flags, 1.59 GiB for KV cache on every boot"
        )
    );

    // Two boots in one file: the last value wins and the other is kept as a conflict.
    let hi_text = evidence_text("vllm-0.28/boot_pool_level_hi.log").unwrap();
    let both = parse(&format!("{hi_text}\n{lo_text}"));
    assert_eq!(both.kv_pool_tokens, Some(12_405));
    assert_eq!(
        both.conflicts["kv_pool_tokens"],
        vec![json!(13575), json!(12405)]
    );
}

#[test]
fn same_named_logs_in_run_folders_are_both_compared() {
    let Some(hi) = evidence("vllm-0.28/boot_pool_level_hi.log") else {
        return;
    };
    let lo = evidence("vllm-0.28/boot_pool_level_lo.log").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (run, src) in [("run1", &hi), ("run2", &lo)] {
        std::fs::create_dir(dir.path().join(run)).unwrap();
        let p = dir.path().join(run).join("boot.log");
        std::fs::copy(src, &p).unwrap();
        paths.push(p);
    }
    let logs = bootlog::parse_files_labelled(&paths, None).unwrap();
    let labels: Vec<&str> = logs.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["run1/boot.log", "run2/boot.log"]);
    let refs: Vec<(String, &BootFacts)> = logs.iter().map(|(l, f)| (l.clone(), f)).collect();
    let t4 = t4_t11::check_t4(&refs);
    assert_eq!(t4[0].status, Status::Warn);
    assert!(t4[0]
        .message
        .contains("across run1/boot.log, run2/boot.log"));
}

#[test]
fn failed_boots_of_every_engine() {
    let cases: &[(&str, FailureKind, &str)] = &[
        ("vllm-0.28/boot_fail_accelerator.log", FailureKind::AcceleratorError, "accelerator_error during boot: CUDA error: device not ready"),
        ("vllm-0.28/boot_fail_cccl_headers.log", FailureKind::JitToolchain, "jit_toolchain during boot: CUDA compiler and CUDA toolkit headers are incompatible"),
        ("vllm-0.30/boot_fail_cccl_headers.log", FailureKind::JitToolchain, "jit_toolchain during boot: CUDA compiler and CUDA toolkit headers are incompatible"),
        ("vllm-0.30/boot_fail_ptx_version.log", FailureKind::JitToolchain, "jit_toolchain during boot: Unsupported .version 9.4; current version is '9.0'"),
        ("vllm-0.30/boot_fail_link_cudart.log", FailureKind::JitToolchain, "jit_toolchain during boot: cannot find -lcudart: No such file or directory"),
        ("sglang-0.5/boot_fail_mamba_state.log", FailureKind::RuntimeError, "runtime_error during boot: Not enough GPU memory for hybrid (mamba/linear-attention) state"),
        ("sglang-0.5/boot_fail_mem_advice.log", FailureKind::ValueError, "value_error during boot: "),
        ("trtllm-1.3/boot_fail_compressed_tensors_w4a16.log", FailureKind::UnclassifiedException, "unclassified_exception during boot: 'NoneType' object is not subscriptable (in update_quant_config_from_compressed_tensors, quant_config_utils.py:81)"),
        ("trtllm-1.3/boot_fail_no_cuda_home.log", FailureKind::Assertion, "assertion during boot: assert cuda_home is not None"),
    ];
    for (rel, kind, summary) in cases {
        let Some(f) = facts(rel) else { return };
        let failure = f
            .failure
            .as_ref()
            .unwrap_or_else(|| panic!("{rel}: no failure"));
        assert_eq!((failure.kind, failure.phase), (*kind, Phase::Boot), "{rel}");
        assert!(
            failure.summary().starts_with(summary),
            "{rel}: {}",
            failure.summary()
        );
        let r = t12::from_facts(&f);
        assert_eq!(
            (r.tripwire, r.status),
            (Tripwire::T12, Status::Fail),
            "{rel}"
        );
        assert_eq!(r.message, failure.summary());
        let text = evidence_text(rel).unwrap();
        assert_eq!(
            bootlog::classify_failure(&text).as_ref(),
            Some(failure),
            "{rel}"
        );
    }
    let advice = facts("sglang-0.5/boot_fail_mem_advice.log").unwrap();
    assert!(advice
        .failure
        .unwrap()
        .detail
        .contains("--mem-fraction-static=0.88. Raise --mem-fraction-static above 0.790"));
    let trt = facts("trtllm-1.3/boot_fail_compressed_tensors_w4a16.log").unwrap();
    assert_eq!(
        trt.failure.unwrap().detail,
        "'NoneType' object is not subscriptable (in update_quant_config_from_compressed_tensors, quant_config_utils.py:81)"
    );
}

#[test]
fn accelerator_failure_details_and_mutations() {
    let Some(f) = facts("vllm-0.28/boot_fail_accelerator.log") else {
        return;
    };
    assert!(!f.ready);
    assert_eq!((f.kv_pool_tokens, f.attention_block_size), (None, None));
    let ok = facts("vllm-0.28/boot_eager.log").unwrap();
    let t4 = t4_t11::check_t4(&[
        ("ok".into(), &ok),
        ("ok2".into(), &ok),
        ("failed".into(), &f),
    ]);
    assert_eq!(t4[0].evidence_json()["not_compared"], json!(["failed"]));

    let text = evidence_text("vllm-0.28/boot_fail_accelerator.log").unwrap();
    let quiet = without_lines(&text, &["Error", "Traceback"]);
    assert_eq!(t12::check(&quiet, &parse(&quiet)).status, Status::Pass);
    let novel = replaced(&text, "AcceleratorError", "NovelError");
    let r = t12::check(&novel, &parse(&novel));
    assert_eq!(r.status, Status::Fail);
    assert!(
        r.evidence_json()["kind"] == "cuda_error"
            || r.evidence_json()["kind"] == "unclassified_exception",
        "{r:?}"
    );
}

#[test]
fn sglang_mamba_state_failure_flips_without_its_error_lines() {
    let Some(text) = evidence_text("sglang-0.5/boot_fail_mamba_state.log") else {
        return;
    };
    assert_eq!(
        bootlog::classify_failure(&text).unwrap().kind,
        FailureKind::RuntimeError
    );
    let quiet = without_lines(&text, &["Error", "Traceback"]);
    assert_eq!(bootlog::classify_failure(&quiet), None);
}

#[test]
fn healthy_classic_logs_and_the_shutdown_cut() {
    let classic = [
        "vllm-0.28/boot_cudagraphs.log",
        "vllm-0.28/boot_eager.log",
        "vllm-0.28/boot_fail_accelerator.log",
        "vllm-0.28/boot_fail_cccl_headers.log",
        "vllm-0.28/boot_fp8_triton.log",
        "vllm-0.28/boot_pool_level_hi.log",
        "vllm-0.28/boot_pool_level_lo.log",
        "vllm-0.28/boot_spec_backend_override.log",
        "vllm-0.28/run_preempted_silently.log",
    ];
    for rel in classic {
        let Some(f) = facts(rel) else { return };
        assert_eq!(f.vllm_version.as_deref(), Some("0.28.0"), "{rel}");
        assert!(f.unparsed.is_empty(), "{rel}: {:?}", f.unparsed);
        assert!(f.conflicts.is_empty(), "{rel}: {:?}", f.conflicts);
    }
    for rel in [
        "vllm-0.28/boot_cudagraphs.log",
        "vllm-0.28/boot_eager.log",
        "vllm-0.28/boot_fp8_triton.log",
        "vllm-0.28/run_preempted_silently.log",
    ] {
        let text = evidence_text(rel).unwrap();
        let first =
            bootlog::shutdown_lineno(&text).unwrap_or_else(|| panic!("{rel}: no [shutdown]"));
        let want = text.lines().position(|l| l.contains("[shutdown]")).unwrap() + 1;
        assert_eq!(first, want, "{rel}");
        assert_eq!(bootlog::classify_failure(&text), None, "{rel}");
        let renamed = text.replace("[shutdown]", "[stopping]");
        let f = bootlog::classify_failure(&renamed).unwrap_or_else(|| {
            panic!("{rel}: teardown noise should classify once the marker is gone")
        });
        assert_eq!(f.phase, Phase::Serving, "{rel}");
    }
    let silent = facts("vllm-0.28/run_preempted_silently.log").unwrap();
    assert_eq!(silent.failure, None);
    let text = evidence_text("vllm-0.28/run_preempted_silently.log").unwrap();
    assert!(!text.to_lowercase().contains("preempt"));
}

#[test]
fn vllm_030_capped_run() {
    let Some(f) = facts("vllm-0.30/capped/boot.log") else {
        return;
    };
    assert_eq!(f.vllm_version.as_deref(), Some("0.30.0"));
    assert_eq!(bootlog::untested_version_note(&f), None);
    assert_eq!(
        f.non_default_args.as_ref().unwrap()["max_num_queued_reqs"],
        16
    );
    assert!(f.unparsed.is_empty());
    assert!(f.ready);
    // Requests rejected by admission control log tracebacks, but the engine kept generating.
    assert_eq!(t12::from_facts(&f).status, Status::Pass);
}

#[test]
fn sglang_capped_run() {
    let Some(f) = facts("sglang-0.5/capped/boot.log") else {
        return;
    };
    assert_eq!(f.engine, Some(Engine::Sglang));
    assert_eq!(f.kv_pool_tokens, Some(17_675));
    assert_eq!(f.available_kv_cache_gib, Some(1.08));
    assert_eq!(f.page_size, Some(1));
    assert_eq!(f.model_load_gib, Some(17.65));
    assert_eq!(f.cudagraph_actual_gib, Some(1.74));
    assert_eq!(f.cudagraphs, Some(true));
    assert_eq!(f.requested_running, Some(32));
    assert_eq!(f.running_cap, Some(1));
    assert_eq!(f.running_cap_reason.as_deref(), Some("mamba state cache"));
    assert_eq!(f.requested_backend, None);
    assert_eq!(f.selected_backends, ["flashinfer"]);
    assert_eq!(f.version, None);
    assert!(f.unparsed.is_empty());
    assert_eq!(bootlog::untested_version_note(&f), None);
    let mut known = f.clone();
    known.set_server_version("0.5.20");
    assert_eq!(bootlog::untested_version_note(&known), None);
    assert_eq!(known.version.as_deref(), Some("0.5.20"));
    let mut newer = f.clone();
    newer.set_server_version("0.6.1");
    assert!(bootlog::untested_version_note(&newer)
        .unwrap()
        .starts_with("note: SGLang 0.6.1 is not a tested version"));
    let text = evidence_text("sglang-0.5/capped/boot.log").unwrap();
    assert!(text.contains("libavutil") && text.contains("Ignore import error"));
    assert_eq!(f.failure, None);
    assert_eq!(t5::check(&f).message, "page size 1 token, as set");
    let r6 = t6::check(&f);
    assert_eq!(r6.status, Status::Pass);
    assert!(r6.message.contains("SGLang chose its own (flashinfer)"));
}

#[test]
fn sglang_live_run_survived_its_timeouts() {
    let Some(f) = facts("sglang-0.5/live/boot.log") else {
        return;
    };
    assert_eq!(f.kv_pool_tokens, Some(5_930));
    assert_eq!(f.running_cap, Some(10));
    assert_eq!(f.requested_running, Some(10));
    let text = evidence_text("sglang-0.5/live/boot.log").unwrap();
    assert!(
        text.contains("post-warmup freeze_gc failed") && text.contains("TimeoutError: timed out")
    );
    assert_eq!(t12::from_facts(&f).status, Status::Pass);
    assert_eq!(t12::check(&text, &f).status, Status::Pass);
}

#[test]
fn sglang_qwen3_8b_starts_and_mutations() {
    let Some(a) = facts("sglang-0.5/qwen3-8b/boot.log") else {
        return;
    };
    let b = facts("sglang-0.5/qwen3-8b-start2/boot.log").unwrap();
    assert_eq!(a.kv_pool_tokens, Some(32_096));
    assert_eq!(a.available_kv_cache_gib, Some(4.4));
    assert_eq!(a.running_cap, Some(32));
    assert_eq!(b.kv_pool_tokens, Some(32_096));
    assert_ne!(
        a.server_args.as_ref().unwrap()["random_seed"],
        b.server_args.as_ref().unwrap()["random_seed"],
        "the starts differ only in their random seed"
    );
    let t4 = t4_t11::check_t4(&pair(&a, &b));
    assert_eq!(t4[0].message, "same flags, same pool (32,096 tokens): a, b");
    assert_eq!(t4_t11::check_t11(&pair(&a, &b))[0].status, Status::Pass);

    let text = evidence_text("sglang-0.5/qwen3-8b-start2/boot.log").unwrap();
    let smaller = parse(&text.replace("32096", "30016"));
    assert_eq!(
        t4_t11::check_t4(&pair(&a, &smaller))[0].status,
        Status::Warn
    );
    let less_kv = parse(&replaced(
        &text,
        "K size: 2.20 GB, V size: 2.20 GB",
        "K size: 2.05 GB, V size: 2.05 GB",
    ));
    assert_eq!(
        t4_t11::check_t11(&pair(&a, &less_kv))[0].status,
        Status::Warn
    );
}

#[test]
fn trtllm_qwen3_8b() {
    let Some(f) = facts("trtllm-1.3/qwen3-8b/boot.log") else {
        return;
    };
    assert_eq!(f.engine, Some(Engine::Trtllm));
    assert!(f.ready);
    assert!(f.unparsed.is_empty());
    assert!(f.conflicts.is_empty(), "{:?}", f.conflicts);
    assert_eq!(f.version.as_deref(), Some("1.3.0rc29"));
    assert_eq!(bootlog::untested_version_note(&f), None);
    assert_eq!(f.kv_pool_tokens, Some(37_760));
    assert_eq!(f.available_kv_cache_gib, Some(5.19));
    assert_eq!(f.page_size, Some(32));
    assert_eq!((f.running_cap, f.requested_running), (Some(32), Some(32)));
    assert_eq!(f.model_load_gib, Some(15.31));
    assert_eq!(f.selected_backends, ["TRTLLM"]);
    assert_eq!(f.speculative, Some(false));
    assert_eq!(f.model.as_deref(), Some("/root/models/Qwen3-8B"));
    assert_eq!(
        f.server_args.as_ref().unwrap()["capacity_scheduler_policy"],
        "GUARANTEED_NO_EVICT"
    );
    assert_eq!((f.pauses, f.served_in_log), (Some(0), Some(41)));
    assert_eq!(t5::check(&f).message, "page size 32 tokens, as set");

    // The log cut at ready: nothing served yet, so pauses cannot be told.
    let text = evidence_text("trtllm-1.3/qwen3-8b/boot.log").unwrap();
    let upto: String = text
        .lines()
        .take(f.ready_lineno.unwrap())
        .map(|l| format!("{l}\n"))
        .collect();
    let cut = parse(&upto);
    assert_eq!((cut.pauses, cut.served_in_log), (None, Some(0)));

    let b = facts("trtllm-1.3/qwen3-8b-start2/boot.log").unwrap();
    let t4 = t4_t11::check_t4(&pair(&f, &b));
    assert_eq!(t4[0].message, "same flags, same pool (37,760 tokens): a, b");
    assert_eq!(t4_t11::check_t11(&pair(&f, &b))[0].status, Status::Pass);
    let start2 = evidence_text("trtllm-1.3/qwen3-8b-start2/boot.log").unwrap();
    let smaller = parse(&replaced(
        &start2,
        "paged KV cache (37760)",
        "paged KV cache (35200)",
    ));
    assert_eq!(
        t4_t11::check_t4(&pair(&f, &smaller))[0].status,
        Status::Warn
    );
    let less = parse(&replaced(&start2, "5.19 GiB", "4.81 GiB"));
    assert_eq!(t4_t11::check_t11(&pair(&f, &less))[0].status, Status::Warn);
}

#[test]
fn every_recorded_log_reads_without_unparsed_lines() {
    let Some(dir) = inferlint_core::testkit::evidence_dir() else {
        return;
    };
    let mut n = 0;
    for entry in walk(&dir) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".log") || name == "load.log" {
            continue;
        }
        let f = bootlog::parse_file(&entry, None).unwrap();
        assert!(
            f.unparsed.is_empty(),
            "{}: {:?}",
            entry.display(),
            f.unparsed
        );
        assert!(
            f.engine.is_some(),
            "{}: engine told from the log",
            entry.display()
        );
        n += 1;
    }
    assert!(n >= 30, "found {n} logs");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn classifier_cases_of_the_spec() {
    let p = "(EngineCore pid=1) ERROR 09-05 10:57:48 [core.py:1] ";
    let kind = |msg: &str| bootlog::classify_failure(&format!("{p}{msg}\n")).map(|f| f.kind);
    use FailureKind::*;
    let cases = [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", OutOfMemory),
        ("ValueError: To serve at least one request with the models's max seq len (32768), (4.0 GiB KV cache is needed, which is larger than the available KV cache memory (1.2 GiB).", KvCacheTooSmall),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", CudaError),
        ("AssertionError", Assertion),
        ("ValueError: unsupported quantization", ValueError),
        ("RuntimeError: something else", RuntimeError),
        ("KeyError: 'model.layers.0.weight'", UnclassifiedException),
        ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.", EngineDead),
    ];
    for (msg, want) in cases {
        assert_eq!(kind(msg), Some(want), "{msg}");
    }
    let both = format!(
        "{p}vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.\n{p}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    );
    let f = bootlog::classify_failure(&both).unwrap();
    assert_eq!((f.kind, f.lineno), (OutOfMemory, 2));
    assert_eq!(kind("INFO all good"), None);
}
