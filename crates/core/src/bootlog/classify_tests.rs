//! Tests of the failure classifier: the cases of docs/design/bootlog.md#the-failure-classifier and
//! its preparation rules.

use super::*;
use crate::bootlog::phrases::scan;

fn classify(lines: &[&str]) -> Option<Failure> {
    let mut c = Classifier::new();
    for (i, l) in lines.iter().enumerate() {
        let text =
            crate::bootlog::lines::strip_other_stamps(crate::bootlog::lines::strip_vllm_prefix(l));
        c.feed(i + 1, text, scan(l, false));
    }
    c.verdict().cloned()
}

const P: &str = "(EngineCore pid=1) ERROR 09-05 10:57:48 [core.py:1] ";

fn one(msg: &str) -> Option<(FailureKind, String)> {
    classify(&[&format!("{P}{msg}")]).map(|f| (f.kind, f.detail))
}

#[test]
fn the_classifier_cases_of_the_spec() {
    use FailureKind::*;
    let k = |m: &str| one(m).map(|(k, _)| k);
    assert_eq!(
        k("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
        Some(OutOfMemory)
    );
    assert_eq!(k("ValueError: To serve at least one request with the models's max seq len (32768), (4.0 GiB KV cache is needed, which is larger than the available KV cache memory (1.2 GiB)."), Some(KvCacheTooSmall));
    assert_eq!(
        one("RuntimeError: CUDA error: an illegal memory access was encountered"),
        Some((CudaError, "an illegal memory access was encountered".into()))
    );
    assert_eq!(one("AssertionError"), Some((Assertion, String::new())));
    assert_eq!(
        one("ValueError: unsupported quantization"),
        Some((ValueError, "unsupported quantization".into()))
    );
    assert_eq!(
        one("RuntimeError: something else"),
        Some((RuntimeError, "something else".into()))
    );
    assert_eq!(
        one("KeyError: 'model.layers.0.weight'"),
        Some((UnclassifiedException, "'model.layers.0.weight'".into()))
    );
    assert_eq!(
        k("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."),
        Some(EngineDead)
    );
    let both = classify(&[
        &format!("{P}vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."),
        &format!("{P}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
    ])
    .unwrap();
    assert_eq!(both.kind, OutOfMemory);
    assert_eq!(both.lineno, 2);
    assert_eq!(both.phase, Phase::Boot);
    assert_eq!(
        both.summary(),
        "out_of_memory during boot: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    );
    assert_eq!(k("INFO everything is fine"), None);
}

#[test]
fn context_rules() {
    let f = classify(&[
        "  File \"/x/deep_gemm/__init__.py\", line 126, in _find_cuda_home",
        "    assert cuda_home is not None",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        "AssertionError",
    ])
    .unwrap();
    assert_eq!(
        (f.kind, f.detail.as_str()),
        (FailureKind::Assertion, "assert cuda_home is not None")
    );
    let f = classify(&[
        "  File \"/x/models/quant_config_utils.py\", line 81, in update_quant_config_from_compressed_tensors",
        "    a = b[0]",
        "        ~^^^",
        "TypeError: 'NoneType' object is not subscriptable",
    ])
    .unwrap();
    assert_eq!(f.detail, "'NoneType' object is not subscriptable (in update_quant_config_from_compressed_tensors, quant_config_utils.py:81)");
    let far = classify(&[
        "  File \"/x/a.py\", line 1, in f",
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
        "TypeError: boom",
    ])
    .unwrap();
    assert_eq!(
        far.detail, "boom",
        "a frame more than 6 lines above is not used"
    );
}

#[test]
fn ready_work_shutdown_and_ignored_tracebacks() {
    // Errors before ready do not count once the server is ready.
    assert_eq!(
        classify(&[
            "RuntimeError: early",
            "INFO:     Application startup complete."
        ]),
        None
    );
    // An error after ready is a serving failure unless the server kept working.
    let f = classify(&[
        "INFO:     Application startup complete.",
        "RuntimeError: late",
    ])
    .unwrap();
    assert_eq!(f.phase, Phase::Serving);
    assert_eq!(
        classify(&[
            "INFO:     Application startup complete.",
            "TimeoutError: timed out",
            "[2026-10-01 01:20:52] Decode batch, #running-req: 1",
        ]),
        None
    );
    assert_eq!(
        classify(&[
            "INFO:     Application startup complete.",
            "TimeoutError: timed out",
            "INFO:     127.0.0.1:1 - \"POST /v1/completions HTTP/1.1\" 200 OK",
        ]),
        None
    );
    assert!(classify(&[
        "INFO:     Application startup complete.",
        "TimeoutError: timed out",
        "INFO:     127.0.0.1:1 - \"GET /v1/models HTTP/1.1\" 200 OK",
    ])
    .is_some());
    // Tracebacks after an orderly shutdown are noise.
    assert_eq!(
        classify(&[
            "INFO x [shutdown] API server: shutdown triggered",
            "RuntimeError: teardown"
        ]),
        None
    );
    // Tracebacks the server says it ignores.
    assert_eq!(
        classify(&[
            "Ignore import error when loading x: Could not load libtorchcodec.",
            "[start of libtorchcodec loading traceback]",
            "OSError: libavutil.so.60: cannot open shared object file",
            "[end of libtorchcodec loading traceback].",
        ]),
        None
    );
    assert_eq!(
        classify(&[
            "INFO:     Application startup complete.",
            "vllm.exceptions.QueueOverflowError: The engine is currently busy",
            "Engine 000: Avg prompt throughput: 89.5 tokens/s, Avg generation throughput: 23.1 tokens/s, Running: 11 reqs",
        ]),
        None,
        "a request rejected by admission control is not a crash"
    );
    assert!(classify(&[
        "INFO:     Application startup complete.",
        "vllm.exceptions.QueueOverflowError: The engine is currently busy",
        "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs",
    ])
    .is_some());
    assert!(is_answered_post(
        "INFO:     1.2.3.4:5 - \"POST /generate HTTP/1.1\" 200 OK"
    ));
    assert!(!is_answered_post(
        "INFO:     1.2.3.4:5 - \"POST /tokenize HTTP/1.1\" 404 Not Found"
    ));
}

#[test]
fn events_follow_the_verdict() {
    let mut c = Classifier::new();
    let mut feed = |n, l: &str| c.feed(n, l, scan(l, false));
    assert_eq!(feed(1, "INFO:     Application startup complete."), None);
    assert!(matches!(
        feed(2, "TimeoutError: timed out"),
        Some(Change::Found(_))
    ));
    assert_eq!(
        feed(3, "Decode batch, #running-req: 1"),
        Some(Change::Cleared)
    );
}
