//! SGLang 0.5.23's own load client (`python -m sglang.bench_serving --backend vllm`) against the
//! real vLLM 0.32 CPU server, under `inferlint run` (`sglang-0.5-cpu/client-on-vllm/`,
//! docs/real-sglang.md): the client's JSONL, its console output and the server's snapshots read
//! through the core readers must agree with each other.

use inferlint_core::bench::{self, untimed_requests};
use inferlint_core::snapshot::Snapshot;
use inferlint_core::testkit::{evidence, evidence_text};
use inferlint_core::Engine;

const DIR: &str = "sglang-0.5-cpu/client-on-vllm";

#[test]
fn sglang_0523_client_result_reads_with_its_infinite_rate() {
    let Some(path) = evidence(&format!("{DIR}/bench.jsonl")) else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    // Python's json.dumps writes the unbounded rate as a bare Infinity.
    assert!(text.contains("\"request_rate\": Infinity"));
    let r = bench::load(&path).unwrap();
    assert_eq!(r.completed, Some(8.0));
    assert_eq!(r.total_output_tokens, Some(128.0));
    assert_eq!(r.max_concurrency, Some(4.0));
    assert!((r.duration.unwrap() - 65.660286069).abs() < 1e-9);
    assert!((r.output_throughput.unwrap() - 1.949427997701525).abs() < 1e-12);
}

#[test]
fn sglang_0523_client_warm_up_is_the_servers_extra_request() {
    let (Some(log), Some(before), Some(after)) = (
        evidence_text(&format!("{DIR}/load.log")),
        evidence(&format!("{DIR}/before.snapshot.json")),
        evidence(&format!("{DIR}/after.snapshot.json")),
    ) else {
        return;
    };
    assert_eq!(
        untimed_requests(&log),
        1,
        "Warmup completed with 1 sequences."
    );
    let (before, after) = (
        Snapshot::load(&before).unwrap(),
        Snapshot::load(&after).unwrap(),
    );
    assert_eq!(after.engine(), Some(Engine::Vllm));
    let delta =
        |name: &str| after.metrics.total(name).unwrap() - before.metrics.total(name).unwrap();
    // 8 timed requests of 16 tokens, plus the client's one warm-up request of 16.
    assert_eq!(delta("vllm:generation_tokens_total"), 128.0 + 16.0);
    assert_eq!(delta("vllm:request_success_total"), 8.0 + 1.0);
}
