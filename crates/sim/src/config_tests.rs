//! Tests of the flags' resolution into a [`ServeConfig`].
use super::*;

fn cfg(args: &[&str]) -> ServeConfig {
    test_config(args)
}

#[test]
fn pool_arithmetic_matches_the_recorded_boot_lines() {
    // vllm-0.32 CPU run: 5 blocks of 128, max len 512 → 640 tokens, 1.25x.
    let c = cfg(&[
        "m",
        "--num-gpu-blocks-override",
        "5",
        "--block-size",
        "128",
        "--max-model-len",
        "512",
    ]);
    assert_eq!(c.kv_cache_tokens(), 640);
    assert!((c.max_concurrency() - 1.25).abs() < 1e-12);
    assert!(!c.pool_too_small());
    // 4 blocks: one is the null block, 3 × 128 < 512 → vLLM refuses to start.
    let c = cfg(&[
        "m",
        "--num-gpu-blocks-override",
        "4",
        "--block-size",
        "128",
        "--max-model-len",
        "512",
    ]);
    assert!(c.pool_too_small());
    assert_eq!(c.estimated_max_model_len(), 384);
    // engine-samples 0.33: 67,656 blocks of 16, max len 4096 → 1,082,496 tokens, 264.28x.
    let c = cfg(&["m", "--num-gpu-blocks-override", "67656"]);
    assert_eq!(c.kv_cache_tokens(), 1_082_496);
    assert_eq!(format!("{:.2}", c.max_concurrency()), "264.28");
}

#[test]
fn hybrid_forces_784_token_blocks() {
    let c = cfg(&["m", "--hybrid", "--block-size", "16"]);
    assert_eq!(c.block_size, 784);
    assert_eq!(c.user_block_size, None);
    assert_eq!(c.usable_blocks(), c.num_gpu_blocks - 1);
}

#[test]
fn die_on_first_request_is_die_after_zero() {
    assert_eq!(
        cfg(&["m", "--die-on-first-request"]).die_after_requests,
        Some(0)
    );
    assert_eq!(
        cfg(&["m", "--die-after-requests", "3"]).die_after_requests,
        Some(3)
    );
    assert_eq!(cfg(&["m"]).die_after_requests, None);
}

#[test]
fn hostile_modes_parse_and_reach_the_config() {
    for f in MetricsFault::ALL {
        let c = cfg(&[
            "m",
            "--metrics-fault",
            f.key(),
            "--metrics-fault-after",
            "3",
        ]);
        assert_eq!(c.metrics_fault, Some(f));
        assert_eq!(c.metrics_fault_after, 3);
    }
    let c = cfg(&["m", "--boot-never-ends"]);
    assert!(c.boot_never_ends);
    assert_eq!((c.metrics_fault, c.metrics_huge_mb), (None, 50));
    let back: ServeConfig =
        serde_json::from_str(&cfg(&["m", "--metrics-fault", "broken-off"]).to_env()).unwrap();
    assert_eq!(back.metrics_fault, Some(MetricsFault::BrokenOff));
}

#[test]
fn config_round_trips_through_the_environment_text() {
    let c = cfg(&[
        "m",
        "--served-model-name",
        "a",
        "b",
        "--vllm-version",
        "0.33",
    ]);
    let back: ServeConfig = serde_json::from_str(&c.to_env()).unwrap();
    assert_eq!(back.served_names, vec!["a", "b"]);
    assert_eq!(back.release, Release::V033);
    assert_eq!(back.gpu_memory_utilization, 0.92);
}
