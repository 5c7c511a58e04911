//! `explain` (every tripwire, and each engine's notes) and `boot-facts` on recorded boot logs of
//! each engine, under snapshot.

use crate::snapshots_support;

use snapshots_support::cli;

#[test]
fn explain_every_tripwire() {
    snap!("explain_all", cli(&["explain"]));
    let text = cli(&["explain"]);
    for n in 1..=15 {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("T{n}  "))),
            "T{n} missing from explain"
        );
    }
}

#[test]
fn explain_for_one_engine() {
    snap!(
        "explain_sglang",
        cli(&["explain", "T1", "null-block", "--engine", "sglang"])
    );
    snap!(
        "explain_trtllm",
        cli(&["explain", "T8", "T9", "--engine", "trtllm"])
    );
    snap!("explain_unknown", cli(&["explain", "T99"]));
}

#[test]
fn boot_facts_of_vllm() {
    let [eager, cpu] = fixtures_or_skip!(["vllm-0.28/boot_eager.log", "vllm-0.32-cpu/boot.log"]);
    snap!("boot_facts_vllm_eager", cli(&["boot-facts", &eager]));
    snap!(
        "boot_facts_vllm_eager_json",
        cli(&["boot-facts", "--json", &eager])
    );
    snap!(
        "boot_facts_vllm_cpu_json",
        cli(&["boot-facts", "--json", &cpu])
    );
}

#[test]
fn boot_facts_of_sglang_and_tensorrt_llm() {
    let [sglang, trtllm] = fixtures_or_skip!([
        "sglang-0.5/qwen3-8b/boot.log",
        "trtllm-1.3/qwen3-8b/boot.log"
    ]);
    snap!("boot_facts_sglang", cli(&["boot-facts", &sglang]));
    snap!("boot_facts_trtllm", cli(&["boot-facts", &trtllm]));
}
