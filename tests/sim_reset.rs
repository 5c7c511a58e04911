//! The engines' cache-reset endpoints, as a sweep uses them between load points
//! (docs/design/engines.md#cache-resets): vLLM's `/reset_prefix_cache` only in dev mode, with
//! its security warning, `{"success": …}` by what the engines hold, and a successful reset
//! making the next identical prompt miss; SGLang's `/flush_cache` by its status and text;
//! TensorRT-LLM has neither.

use crate::sim_support;

use std::thread;
use std::time::Duration;

use sim_support::*;

const DEV_MODE: &str = "VLLM_SERVER_DEV_MODE";
const SECURITY: &str =
    "SECURITY WARNING: Development endpoints are enabled! This should NOT be used in production!";
const FLUSHED: &str = "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n";

/// A prompt of `n` distinct words (one simulated token each), the same for the same `n`.
fn prompt(n: usize) -> String {
    (0..n)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One non-streamed completion of `prompt(words)`; its status.
fn complete(sim: &Sim, words: usize, max_tokens: u32) -> u16 {
    let body =
        serde_json::json!({"prompt": prompt(words), "max_tokens": max_tokens, "ignore_eos": true});
    post(&sim.url("/v1/completions"), &body.to_string(), &[]).0
}

/// A completion long enough to be running while the test asks for a reset.
fn long_request(sim: &Sim) -> thread::JoinHandle<u16> {
    let url = sim.url("/v1/completions");
    thread::spawn(move || {
        let body = serde_json::json!({"prompt": prompt(100), "max_tokens": 60, "ignore_eos": true});
        post(&url, &body.to_string(), &[]).0
    })
}

fn total(sim: &Sim, name: &str) -> f64 {
    metrics(sim).1.total(name).unwrap_or(0.0)
}

fn wait_running(sim: &Sim, gauge: &str) {
    assert!(
        eventually(Duration::from_secs(10), || total(sim, gauge) >= 1.0),
        "the long request never ran:\n{}",
        sim.log()
    );
}

fn reset(sim: &Sim, query: &str) -> (u16, String) {
    post(&sim.url(&format!("/reset_prefix_cache{query}")), "", &[])
}

fn count(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

fn dev_vllm(extra: &[&str]) -> Sim {
    Sim::builder().env(DEV_MODE, "1").args(extra).start()
}

#[test]
fn without_dev_mode_vllm_has_no_reset_route_and_no_warning() {
    let sim = Sim::builder().env(DEV_MODE, "0").start();
    let (status, body) = reset(&sim, "");
    assert_eq!(
        (status, json(&body)),
        (404, serde_json::json!({"detail": "Not Found"}))
    );
    assert_eq!(get(&sim.url("/server_info")).0, 404);
    let log = sim.log();
    assert!(!log.contains("SECURITY WARNING"), "{log}");
    assert!(!log.contains("Route: /reset_prefix_cache"), "{log}");
    assert!(!log.contains("Resetting prefix cache..."), "{log}");
}

#[test]
fn in_dev_mode_a_reset_makes_the_next_identical_prompt_miss() {
    let sim = dev_vllm(&[]);
    let log = sim.log();
    let warning = log
        .lines()
        .find(|l| l.contains(SECURITY))
        .unwrap_or_else(|| panic!("no security warning:\n{log}"));
    assert!(warning.starts_with("(APIServer pid="), "{warning}");
    assert!(
        warning.contains(" WARNING ") && warning.contains(" [__init__.py:36] "),
        "{warning}"
    );
    assert!(
        log.contains("Route: /reset_prefix_cache, Methods: POST"),
        "{log}"
    );
    let info = json(&get(&sim.url("/server_info")).1);
    assert!(
        info["vllm_config"].as_str().unwrap().contains("model='m'"),
        "{info}"
    );

    let (hits, queries) = (
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_queries_total",
    );
    assert_eq!(complete(&sim, 100, 2), 200);
    assert_eq!(complete(&sim, 100, 2), 200);
    // 100 tokens in blocks of 16: the repeat hits 6 full blocks.
    let (h0, q0) = (total(&sim, hits), total(&sim, queries));
    assert_eq!((h0, q0), (96.0, 200.0));

    let (status, body) = reset(&sim, "");
    assert_eq!(
        (status, json(&body)),
        (200, serde_json::json!({"success": true}))
    );
    let log = sim.log();
    assert_eq!(count(&log, "Resetting prefix cache..."), 1, "{log}");
    assert_eq!(count(&log, "Successfully reset prefix cache"), 1, "{log}");
    assert!(log.contains("(EngineCore pid="), "{log}");
    // The instrumentator names the route, as it names every registered one.
    let (_, m) = metrics(&sim);
    let labels = [("handler", "/reset_prefix_cache"), ("method", "POST")];
    assert_eq!(m.total_where("http_requests_total", &labels), Some(1.0));

    assert_eq!(complete(&sim, 100, 2), 200);
    // Missed: the hits stand still, the queries (never reset) grow.
    assert_eq!((total(&sim, hits), total(&sim, queries)), (h0, q0 + 100.0));
    assert_eq!(complete(&sim, 100, 2), 200);
    assert_eq!(total(&sim, hits), h0 + 96.0, "seen again, it hits again");
}

#[test]
fn a_reset_fails_while_a_request_holds_blocks_then_succeeds() {
    let sim = dev_vllm(&["--tokens-per-s", "20"]);
    let running = long_request(&sim);
    wait_running(&sim, "vllm:num_requests_running");
    let (status, body) = reset(&sim, "");
    assert_eq!(
        (status, json(&body)),
        (200, serde_json::json!({"success": false}))
    );
    let log = sim.log();
    let failed = log
        .lines()
        .find(|l| l.contains("Failed to reset prefix cache because some blocks ("))
        .unwrap_or_else(|| panic!("no failure line:\n{log}"));
    assert!(
        failed.contains(" WARNING ") && failed.ends_with(") are not freed yet"),
        "{failed}"
    );
    let n: u32 = failed
        .rsplit('(')
        .next()
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        n >= 7,
        "100 prompt tokens hold 7 blocks of 16 at least: {failed}"
    );
    assert!(!log.contains("Successfully reset prefix cache"), "{log}");

    assert_eq!(running.join().unwrap(), 200);
    let (_, body) = reset(&sim, "");
    assert_eq!(json(&body), serde_json::json!({"success": true}));
}

#[test]
fn resetting_running_requests_preempts_them_and_succeeds() {
    let sim = dev_vllm(&["--tokens-per-s", "20"]);
    let (status, body) = reset(&sim, "?reset_running_requests=maybe");
    assert_eq!(status, 422, "{body}");
    assert_eq!(json(&body)["detail"][0]["loc"][1], "reset_running_requests");

    let running = long_request(&sim);
    wait_running(&sim, "vllm:num_requests_running");
    let preemptions = total(&sim, "vllm:num_preemptions_total");
    let (status, body) = reset(&sim, "?reset_running_requests=true&reset_external=false");
    assert_eq!(
        (status, json(&body)),
        (200, serde_json::json!({"success": true}))
    );
    // The preemption is applied before the answer: both come over the engine's one channel.
    assert_eq!(total(&sim, "vllm:num_preemptions_total"), preemptions + 1.0);
    assert_eq!(
        running.join().unwrap(),
        200,
        "the preempted request still finishes"
    );
    let log = sim.log();
    assert!(!log.contains("Failed to reset prefix cache"), "{log}");
}

#[test]
fn with_data_parallel_engines_every_engine_must_reset() {
    let sim = dev_vllm(&["--data-parallel-size", "2", "--tokens-per-s", "20"]);
    let (_, body) = reset(&sim, "");
    assert_eq!(json(&body), serde_json::json!({"success": true}));
    assert_eq!(count(&sim.log(), "Successfully reset prefix cache"), 2);

    let running = long_request(&sim);
    wait_running(&sim, "vllm:num_requests_running");
    let (_, body) = reset(&sim, "");
    assert_eq!(
        json(&body),
        serde_json::json!({"success": false}),
        "one busy engine fails it"
    );
    let log = sim.log();
    assert_eq!(count(&log, "Failed to reset prefix cache"), 1, "{log}");
    assert_eq!(count(&log, "Successfully reset prefix cache"), 3, "{log}");
    assert_eq!(running.join().unwrap(), 200);
}

#[test]
fn sglang_flushes_when_idle_and_refuses_when_busy() {
    let sim = Sim::start(&[
        "--engine",
        "sglang",
        "--enable-metrics",
        "--tokens-per-s",
        "20",
    ]);
    let cached = "sglang:cached_tokens_total";
    assert_eq!(complete(&sim, 100, 2), 200);
    assert_eq!(complete(&sim, 100, 2), 200);
    // Pages of one token: the repeat hits all but its last.
    let c0 = total(&sim, cached);
    assert_eq!(c0, 99.0);

    assert_eq!(get(&sim.url("/flush_cache")), (200, FLUSHED.to_string()));
    assert!(sim.wait_for("Cache flushed successfully!", Duration::from_secs(5)));
    assert_eq!(complete(&sim, 100, 2), 200);
    assert_eq!(total(&sim, cached), c0, "the flushed prompt misses");

    let running = long_request(&sim);
    wait_running(&sim, "sglang:num_running_reqs");
    let flush = |q: &str| post(&sim.url(&format!("/flush_cache{q}")), "", &[]);
    assert_eq!(flush(""), (400, "Flush cache failed.\n".to_string()));
    assert!(
        sim.wait_for(
            "Cache not flushed because there are pending requests. #queue-req: 0, #running-req: 1",
            Duration::from_secs(5)
        ),
        "{}",
        sim.log()
    );
    assert_eq!(
        flush("?timeout=0.1"),
        (400, "Timed out waiting for idle state.".to_string())
    );
    assert_eq!(
        flush("?timeout=30"),
        (200, FLUSHED.to_string()),
        "waits for the request"
    );
    assert_eq!(running.join().unwrap(), 200);
    assert_eq!(count(&sim.log(), "Cache flushed successfully!"), 2);
}

#[test]
fn trtllm_has_no_reset_route() {
    let sim = Sim::builder()
        .env(DEV_MODE, "1")
        .args(&["--engine", "trtllm"])
        .start();
    assert_eq!(reset(&sim, "").0, 404);
    assert_eq!(get(&sim.url("/flush_cache")).0, 404);
    assert!(!sim.log().contains("SECURITY WARNING"));
}
