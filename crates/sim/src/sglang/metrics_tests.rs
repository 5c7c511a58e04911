//! Tests of the SGLang exposition (children, values, multiprocess order).
use super::*;
use crate::config::test_config;

fn registry() -> SglangRegistry {
    let cfg = test_config(&["m", "--engine", "sglang", "--max-total-tokens", "1000"]);
    let mut r = SglangRegistry::new(&cfg, 0.0);
    r.engine_initialized(&cfg, 0.0);
    r.engine_pids(&[4242]);
    r
}

fn value(text: &str, prefix: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} in\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn gauges_follow_the_scheduler_and_histograms_put_sum_first() {
    let mut r = registry();
    r.set_scheduler_state(0, 3, 2, 0.25);
    let text = r.render();
    assert_eq!(value(&text, "sglang:num_running_reqs{"), 3.0);
    assert_eq!(value(&text, "sglang:num_queue_reqs{"), 2.0);
    assert_eq!(value(&text, "sglang:num_used_tokens{"), 250.0);
    assert_eq!(value(&text, "sglang:kv_available_tokens{"), 750.0);
    assert!(text.contains("pid=\"4242\""));
    assert!(
        !text.contains("sglang:inter_token_latency_seconds"),
        "no sample yet"
    );
    assert!(!text.contains("_created"));
    r.tokens(0, 2, Some((2, 0.02)), true);
    r.request_finished(
        0,
        &RequestStats {
            finished_reason: "length",
            streaming: true,
            prompt_tokens: 10,
            generation_tokens: 4,
            e2e_s: 0.5,
            ..RequestStats::default()
        },
    );
    let text = r.render();
    let itl: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("sglang:inter_token_latency_seconds"))
        .collect();
    assert!(itl[0].starts_with("sglang:inter_token_latency_seconds_sum{"));
    assert!(itl
        .last()
        .unwrap()
        .starts_with("sglang:inter_token_latency_seconds_count{"));
    assert_eq!(
        value(
            &text,
            "sglang:generation_tokens_total{engine_type=\"unified\",is_streaming=\"true\""
        ),
        4.0
    );
}

#[test]
fn retraction_counters_appear_with_the_first_retraction() {
    let mut r = registry();
    assert!(!r.render().contains("sglang:num_retracted_requests_total"));
    r.add_preemptions(0, 2);
    let text = r.render();
    assert_eq!(value(&text, "sglang:num_retracted_requests_total{"), 2.0);
    assert_eq!(value(&text, "sglang:num_retracted_reqs{"), 2.0);
}
