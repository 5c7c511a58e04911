//! The real SGLang 0.5.23 start-ups on a CPU without a GPU (docs/real-sglang.md): none got to
//! ready, and the boot-log analyzer must say which failure stopped each, in SGLang's own words,
//! without inventing a version, a pool or a backend the log does not print.

use inferlint_core::bootlog::{self, BootFacts, FailureKind, Phase};
use inferlint_core::checks::{t12, t5, t6};
use inferlint_core::testkit::evidence;
use inferlint_core::{Engine, Status, Tripwire};

fn read(name: &str) -> Option<(String, BootFacts)> {
    let p = evidence(&format!("sglang-0.5-cpu/{name}"))?;
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let facts = bootlog::parse_file(&p, None).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    Some((text, facts))
}

/// What every one of the three logs shares: SGLang's, never ready, nothing unparsed, and no
/// version line (SGLang prints none before it fails), so none is made up.
fn common(f: &BootFacts) {
    assert_eq!(f.engine, Some(Engine::Sglang));
    assert_eq!(f.log_engine, Some(Engine::Sglang));
    assert!(!f.ready);
    assert_eq!(f.engine_version, None);
    assert_eq!(f.version, None);
    assert_eq!(f.kv_pool_tokens, None, "no pool was ever allocated");
    assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
}

#[test]
fn sglang_cpu_engine_without_its_kernel_package_fails_at_the_import() {
    let Some((text, f)) = read("boot_fail_no_sgl_kernel.log") else {
        return;
    };
    common(&f);
    let failure = f.failure.as_ref().expect("the import failure");
    assert_eq!(failure.kind, FailureKind::UnclassifiedException);
    assert_eq!(failure.phase, Phase::Boot);
    assert_eq!(
        failure.line,
        "ModuleNotFoundError: No module named 'sgl_kernel'"
    );
    assert_eq!(
        failure.detail,
        "No module named 'sgl_kernel' (in <module>, cache_move.py:10)"
    );
    let t12 = t12::check(&text, &f);
    assert_eq!((t12.tripwire, t12.status), (Tripwire::T12, Status::Fail));
    // The launcher failed before printing its arguments: T5 and T6 cannot tell, not PASS.
    assert_eq!(f.server_args, None);
    assert_eq!(t5::check(&f).status, Status::Unknown);
    assert_eq!(t6::check(&f).status, Status::Unknown);
}

#[test]
fn sglang_cpu_engine_with_pypis_cuda_kernel_fails_where_the_library_loads() {
    let Some((text, f)) = read("boot_fail_cuda_sgl_kernel.log") else {
        return;
    };
    common(&f);
    assert!(text.contains("libcuda.so.1: cannot open shared object file"));
    let failure = f.failure.as_ref().expect("the kernel load failure");
    assert_eq!(failure.kind, FailureKind::UnclassifiedException);
    assert_eq!(failure.phase, Phase::Boot);
    assert_eq!(failure.lineno, 45);
    assert!(failure.line.starts_with("ImportError:"), "{}", failure.line);
    assert!(
        failure
            .detail
            .contains("_load_architecture_specific_ops, load_utils.py:192"),
        "{}",
        failure.detail
    );
    assert_eq!(t12::from_facts(&f).status, Status::Fail);
}

#[test]
fn sglang_without_the_cpu_engine_dies_in_the_scheduler_after_its_arguments() {
    let Some((text, f)) = read("boot_fail_no_cpu_engine.log") else {
        return;
    };
    common(&f);
    let args = f.server_args.as_ref().expect("the server_args line");
    assert_eq!(args["device"], "cpu");
    assert_eq!(args["max_total_tokens"], 2048);
    assert_eq!(args["enable_metrics"], true);
    // SGLang resolved AMX's absence to torch_native and said so in the log.
    assert!(text.contains("will fallback to torch_native backend"));
    assert_eq!(args["attention_backend"], "torch_native");
    assert_eq!(f.selected_backends, ["torch_native"]);
    assert_eq!(f.page_size, Some(1));
    assert_eq!(
        f.model.as_deref(),
        Some("/var/cache/inferlint/vllmcpu/smollm2-135m")
    );
    let failure = f.failure.as_ref().expect("the scheduler's failure");
    assert_eq!(failure.kind, FailureKind::UnclassifiedException);
    assert_eq!(
        failure.detail,
        "No module named 'vllm' (in __init__, base.py:138)"
    );
    // The optional-model import errors before it are SGLang's noise, not the failure.
    assert!(text.contains("Ignore import error when loading sglang.srt.models.midashenglm"));
    assert_eq!(
        failure.lineno, 105,
        "the last line of the scheduler's traceback"
    );
    assert_eq!(t12::check(&text, &f).status, Status::Fail);
    assert_eq!(t5::check(&f).status, Status::Pass);
    assert_eq!(t6::check(&f).status, Status::Pass);
}
