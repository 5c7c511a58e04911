//! T22 (data-parallel balance), T23 (tokens per streamed chunk) and T24 (prompt lengths) on the
//! recordings of the real vLLM 0.32 CPU build (tests/fixtures/vllm-0.32-cpu/field/), both
//! verdicts of each, and a one-number mutation that flips each verdict
//! (docs/design/evidence.md#mutations).

use inferlint_core::bench::{self, BenchResult};
use inferlint_core::checks::{t22, t23, t24, window_all, Facts};
use inferlint_core::load::{intent_of_command, LoadIntent};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::testkit::{evidence, evidence_text};
use inferlint_core::{Engine, Status, Tripwire};

const FIELD: &str = "vllm-0.32-cpu/field";

fn snap(rel: &str) -> Option<Snapshot> {
    let p = evidence(&format!("{FIELD}/{rel}"))?;
    Some(Snapshot::load(&p).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

fn result(rel: &str) -> Option<BenchResult> {
    let p = evidence(&format!("{FIELD}/{rel}"))?;
    Some(bench::load(&p).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

fn command(rel: &str) -> Option<LoadIntent> {
    Some(intent_of_command(
        evidence_text(&format!("{FIELD}/{rel}"))?.trim(),
    ))
}

/// The snapshot with exactly one occurrence of `from` in its text replaced.
fn edited(s: &Snapshot, from: &str, to: &str) -> Snapshot {
    assert_eq!(s.text.matches(from).count(), 1, "{from:?} in {}", s.source);
    Snapshot::from_text(&s.text.replacen(from, to, 1), &s.source).unwrap()
}

/// A load's before and after snapshots in `case`.
fn pair(case: &str, load: &str) -> Option<(Snapshot, Snapshot)> {
    Some((
        snap(&format!("{case}/{load}-before.prom"))?,
        snap(&format!("{case}/{load}-after.prom"))?,
    ))
}

const SUCCESS_E1: &str =
    "vllm:request_success_total{engine=\"1\",finished_reason=\"length\",model_name=\"smollm2-135m\"}";

#[test]
fn t22_warns_when_one_data_parallel_engine_carried_the_load_and_passes_when_both_did() {
    let Some((b, a)) = pair("dp2-balance", "pinned") else {
        return;
    };
    let ids = t22::engines(&a, Engine::Vllm).expect("two engines");
    assert_eq!(ids, ["0", "1"]);
    let r = t22::check(&b, &a, None, &ids, Engine::Vllm);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert_eq!(
        r.message,
        "engine 0 finished 16 of the 16 requests (100%; an even share is 50%): the figures describe one engine's queue, not the 2 engines' capacity"
    );
    let Some((b, a)) = pair("dp2-balance", "even") else {
        return;
    };
    let r = t22::check(&b, &a, None, &ids, Engine::Vllm);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(
        r.message,
        "2 engines shared the load: 8 and 8 requests finished (the busiest 50%; an even share is 50%)"
    );
    // Mutation: engine 1 finished 2 requests in the window instead of 8, so engine 0 carried 8
    // of 10 (80 %): a finding.
    let line = format!("{SUCCESS_E1} 8.0");
    let fewer = edited(&a, &line, &format!("{SUCCESS_E1} 2.0"));
    let r = t22::check(&b, &fewer, None, &ids, Engine::Vllm);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert!(
        r.message.starts_with("engine 0 finished 8 of the 10"),
        "{}",
        r.message
    );
}

#[test]
fn t22_is_left_out_for_a_server_of_one_engine() {
    let Some((b, a)) = pair("tokenizer", "matching") else {
        return;
    };
    assert!(t22::engines(&a, Engine::Vllm).is_none());
    let facts = Facts {
        before: Some(&b),
        after: Some(&a),
        series: None,
        boot: None,
        requested: None,
        bench: None,
        untimed_requests: 0,
        load: None,
        observed: None,
        engine: Engine::Vllm,
    };
    assert!(!window_all(&facts)
        .iter()
        .any(|r| r.tripwire == Tripwire::T22));
}

#[test]
fn t23_warns_on_the_ngram_streams_chunks_and_passes_on_one_token_a_chunk() {
    let Some(chunked) = result("spec-ngram/repetitive.json") else {
        return;
    };
    let Some(boot) = evidence(&format!("{FIELD}/spec-ngram/boot.log")) else {
        return;
    };
    let facts = inferlint_core::bootlog::parse_file(&boot, None).unwrap();
    let r = t23::check(Some(&chunked), Some(&facts));
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert_eq!(
        r.message,
        "2.84 tokens per streamed chunk (128 tokens in 45 chunks over 4 requests, from speculative decoding (ngram)): the client's ITL (mean 783 ms per chunk, about 275 ms per token) is the gap between chunks, not tokens; TPOT divides by tokens and is the per-token figure"
    );
    // The same server on random prompts: nothing drafted is accepted, one token a chunk.
    let Some(plain) = result("spec-ngram/load.json") else {
        return;
    };
    let r = t23::check(Some(&plain), Some(&facts));
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(
        r.message,
        "1.00 tokens per streamed chunk (512 tokens in 512 chunks over 8 requests): the client's ITL is per token"
    );
    // Mutation: one chunk's gaps cut to a third of the 64 a request of the plain run had.
    let Some(text) = evidence_text(&format!("{FIELD}/spec-ngram/load.json")) else {
        return;
    };
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    for gaps in doc["itls"].as_array_mut().unwrap() {
        gaps.as_array_mut().unwrap().truncate(20);
    }
    let cut = BenchResult::from_object(doc.as_object().unwrap(), "load.json (cut)");
    assert_eq!(t23::check(Some(&cut), None).status, Status::Warn);
}

#[test]
fn t24_warns_on_a_client_tokenizer_that_is_not_the_servers_and_passes_on_the_servers() {
    let (Some((b, a)), Some(load), Some(res)) = (
        pair("tokenizer", "mismatch"),
        command("tokenizer/mismatch.cmd.txt"),
        result("tokenizer/mismatch.json"),
    ) else {
        return;
    };
    assert_eq!(load.input_len, Some(100));
    let r = t24::check(&b, &a, &load, Some(&res), Engine::Vllm);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert_eq!(
        r.message,
        "the server processed 30.3 prompt tokens per request where the load asked for 100 (-70%): the client's tokenizer is not the server's (its prompts encode to fewer tokens on the server); input tokens/s, TTFT by prompt length and the prefill share describe 30.3-token prompts"
    );
    // The client agrees with the server (it reads `usage`): both disagree with the command.
    assert_eq!(res.total_input_tokens, Some(484.0));
    let (Some((b2, a2)), Some(load2), Some(res2)) = (
        pair("tokenizer", "matching"),
        command("tokenizer/matching.cmd.txt"),
        result("tokenizer/matching.json"),
    ) else {
        return;
    };
    let r = t24::check(&b2, &a2, &load2, Some(&res2), Engine::Vllm);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert_eq!(
        r.message,
        "the server processed 100 prompt tokens per request; the load asked for 100"
    );
    // Mutation: the server's prompt counter 30 % lower over the same 16 requests.
    let from = "vllm:prompt_tokens_total{engine=\"0\",model_name=\"smollm2-135m\"} 2084.0";
    let fewer = edited(
        &a2,
        from,
        "vllm:prompt_tokens_total{engine=\"0\",model_name=\"smollm2-135m\"} 1604.0",
    );
    let r = t24::check(&b2, &fewer, &load2, Some(&res2), Engine::Vllm);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
}

/// The recorded GPU runs: vLLM 0.28 (graphs captured up to 64, `--max-num-seqs 32`, at most 10
/// running) and SGLang 0.5 (decode graphs up to bs 32, 32 running at the peak).
#[test]
fn t25_passes_on_the_recorded_gpu_runs_and_a_smaller_capture_size_warns() {
    use inferlint_core::checks::t25;
    use inferlint_core::series::Series;
    let (Some(log), Some(rec)) = (
        evidence_text("vllm-0.28/live/boot.log"),
        evidence("vllm-0.28/live/run.series.jsonl"),
    ) else {
        return;
    };
    let series = Series::load(&rec).unwrap();
    let facts = |text: &str| inferlint_core::bootlog::parse_text(text, None);
    let f = facts(&log);
    assert_eq!(f.decode_graph_max_batch, Some(64));
    let r = t25::check(&series, t25::graph_batch(Some(&f)).unwrap(), Engine::Vllm);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    assert!(r.message.starts_with("the server ran at most 10 requests at once, within the largest decode batch captured as a CUDA graph (64)"), "{}", r.message);
    // Mutation: the same server with graphs captured up to 8.
    let small = log.replacen(
        "'max_cudagraph_capture_size': 64",
        "'max_cudagraph_capture_size': 8",
        1,
    );
    assert_ne!(small, log);
    let g = t25::graph_batch(Some(&facts(&small))).unwrap();
    let r = t25::check(&series, g, Engine::Vllm);
    assert_eq!(r.status, Status::Warn, "{}", r.message);
    assert!(r.message.starts_with("the server ran up to 10 requests at once, beyond the largest decode batch captured as a CUDA graph (8)"), "{}", r.message);
    // SGLang's decode capture line.
    let (Some(slog), Some(srec)) = (
        evidence_text("sglang-0.5/qwen3-8b/boot.log"),
        evidence("sglang-0.5/qwen3-8b/run.series.jsonl"),
    ) else {
        return;
    };
    let sf = inferlint_core::bootlog::parse_text(&slog, None);
    assert_eq!(sf.decode_graph_max_batch, Some(32));
    let s = Series::load(&srec).unwrap();
    let r = t25::check(&s, t25::graph_batch(Some(&sf)).unwrap(), Engine::Sglang);
    assert_eq!(r.status, Status::Pass, "{}", r.message);
    // The eager vLLM and the CPU build capture none: T25 is not due.
    for eager in ["vllm-0.28/boot_eager.log", "vllm-0.32-cpu/boot.log"] {
        let Some(text) = evidence_text(eager) else {
            return;
        };
        assert_eq!(t25::graph_batch(Some(&facts(&text))), None, "{eager}");
    }
}

/// vLLM's KV offloading on the CPU build: refused at start-up, and T12 says why.
#[test]
fn kv_offloading_on_the_cpu_build_is_a_start_up_failure_t12_names() {
    let Some(log) = evidence_text(&format!("{FIELD}/kv-offload/boot.log")) else {
        return;
    };
    let facts = inferlint_core::bootlog::parse_text(&log, None);
    let r = inferlint_core::checks::t12::check(&log, &facts);
    assert_eq!(r.status, Status::Fail, "{}", r.message);
    assert!(
        r.message
            .contains("CPU Offloading is currently only supported on CUDA-alike and XPU GPUs"),
        "{}",
        r.message
    );
}
