//! `inferlint sim bench` against the simulated server: `vllm bench serve`'s output lines and
//! result keys, and counts that agree with the server's counters (T15), including the untimed
//! test request of the releases that send one.

use crate::sim_support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use inferlint_core::snapshot::Snapshot;
use inferlint_core::{Engine, Status};
use sim_support::*;

/// Runs `inferlint sim bench ARGS` to completion (killed by pid after 120 s).
fn bench(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(["sim", "bench"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sim bench");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sim bench did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn snapshot(sim: &Sim) -> Snapshot {
    let (text, _) = metrics(sim);
    Snapshot::from_text(&text, "scrape").unwrap()
}

fn delta(before: &Snapshot, after: &Snapshot, name: &str) -> f64 {
    after.metrics.total(name).unwrap() - before.metrics.total(name).unwrap()
}

fn run(sim: &Sim, dir: &Path, extra: &[&str]) -> (String, serde_json::Value, Snapshot, Snapshot) {
    let before = snapshot(sim);
    let base = sim.url("");
    let mut args = vec![
        "--base-url",
        base.as_str(),
        "--num-prompts",
        "20",
        "--max-concurrency",
        "4",
        "--random-input-len",
        "16",
        "--random-output-len",
        "8",
        "--ignore-eos",
        "--save-result",
        "--result-dir",
        dir.to_str().unwrap(),
        "--result-filename",
        "bench.json",
    ];
    args.extend_from_slice(extra);
    let out = bench(&args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "sim bench failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = snapshot(sim);
    let text = std::fs::read_to_string(dir.join("bench.json")).unwrap();
    assert!(!text.contains('\n'), "json.dump writes one line");
    (stdout, json(&text), before, after)
}

#[test]
fn result_counts_equal_the_server_counters() {
    let sim = Sim::start(&["--tokens-per-s", "400", "--vllm-version", "0.33"]);
    let dir = tempfile::tempdir().unwrap();
    let (stdout, r, before, after) = run(&sim, dir.path(), &["--vllm-version", "0.33"]);
    assert_eq!(r["completed"], 20);
    assert_eq!(r["failed"], 0);
    assert_eq!(r["total_output_tokens"], 160);
    assert_eq!(r["total_input_tokens"], 320);
    assert_eq!(delta(&before, &after, "vllm:request_success_total"), 20.0);
    assert_eq!(
        delta(&before, &after, "vllm:generation_tokens_total"),
        160.0
    );
    assert_eq!(delta(&before, &after, "vllm:prompt_tokens_total"), 320.0);
    assert!(
        stdout
            .contains("Starting initial single prompt test run...\nSkipping endpoint ready check."),
        "{stdout}"
    );
    assert_eq!(inferlint_core::bench::untimed_requests(&stdout), 0);
    assert!(stdout.contains("============ Serving Benchmark Result ============"));
    assert!(
        stdout.contains("Successful requests:                     20"),
        "{stdout}"
    );
    // inferlint's reader and T15 agree.
    let result = inferlint_core::bench::load(&dir.path().join("bench.json")).unwrap();
    assert_eq!(
        (result.completed, result.total_output_tokens),
        (Some(20.0), Some(160.0))
    );
    let t15 = inferlint_core::checks::t15::check(&result, &before, &after, 0, Engine::Vllm);
    assert_eq!(t15.status, Status::Pass, "{}", t15.message);
    // The key order of vLLM 0.33's result file (engine-samples).
    {
        let text =
            inferlint_core::testkit::engine_sample("vllm-0.33.0-bench-serve-save-result.json");
        let want: Vec<String> = json(&text).as_object().unwrap().keys().cloned().collect();
        let got: Vec<String> = r.as_object().unwrap().keys().cloned().collect();
        assert_eq!(got, want);
        assert_eq!(r["request_rate"], "inf");
        assert_eq!(r["label"], serde_json::Value::Null);
    }
}

#[test]
fn the_initial_test_request_is_sent_by_the_releases_that_send_one() {
    let sim = Sim::start(&["--tokens-per-s", "400"]);
    let dir = tempfile::tempdir().unwrap();
    let (stdout, r, before, after) = run(&sim, dir.path(), &["--vllm-version", "0.11"]);
    assert!(stdout.contains("Initial test run completed."), "{stdout}");
    assert_eq!(inferlint_core::bench::untimed_requests(&stdout), 1);
    assert_eq!(r["completed"], 20);
    assert!(r.get("failed").is_none(), "0.11 writes no `failed` key");
    // The server finished one request more than the client reports.
    assert_eq!(delta(&before, &after, "vllm:request_success_total"), 21.0);
    assert_eq!(
        delta(&before, &after, "vllm:generation_tokens_total"),
        168.0
    );
    let result = inferlint_core::bench::load(&dir.path().join("bench.json")).unwrap();
    let t15 = inferlint_core::checks::t15::check(&result, &before, &after, 1, Engine::Vllm);
    assert_eq!(t15.status, Status::Pass, "{}", t15.message);
    let t15 = inferlint_core::checks::t15::check(&result, &before, &after, 0, Engine::Vllm);
    assert_ne!(
        t15.status,
        Status::Pass,
        "forgetting the test request is a mismatch: {}",
        t15.message
    );
    // Any release sends it when asked to wait for the server.
    let (stdout, _, before, after) = run(&sim, dir.path(), &["--ready-check-timeout-sec", "30"]);
    assert_eq!(inferlint_core::bench::untimed_requests(&stdout), 1);
    assert_eq!(delta(&before, &after, "vllm:request_success_total"), 21.0);
}

#[test]
fn rejected_requests_count_as_failed_on_both_sides() {
    // As the recorded 0.30 run with --max-num-queued-reqs 16: the stream carries the error,
    // the client never gets a first token and fails the request; the server never finishes it.
    let sim = Sim::start(&[
        "--tokens-per-s",
        "50",
        "--max-num-queued-reqs",
        "2",
        "--vllm-version",
        "0.30",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (_, r, before, after) = run(
        &sim,
        dir.path(),
        &["--vllm-version", "0.30", "--save-detailed"],
    );
    let (completed, failed) = (
        r["completed"].as_u64().unwrap(),
        r["failed"].as_u64().unwrap(),
    );
    assert_eq!(completed + failed, 20);
    assert!(
        failed > 0,
        "concurrency 4 over a cap of 2 must be rejected sometimes"
    );
    assert_eq!(
        delta(&before, &after, "vllm:request_success_total"),
        completed as f64
    );
    let errors = r["errors"].as_array().unwrap();
    assert!(errors.iter().any(|e| e
        .as_str()
        .unwrap()
        .starts_with("Never received a valid chunk to calculate TTFT")));
    let latencies = r["latencies"].as_array().unwrap();
    assert_eq!(
        latencies.iter().filter(|l| l.as_f64() == Some(0.0)).count() as u64,
        failed
    );
    let result = inferlint_core::bench::load(&dir.path().join("bench.json")).unwrap();
    let t15 = inferlint_core::checks::t15::check(&result, &before, &after, 0, Engine::Vllm);
    assert_eq!(t15.status, Status::Pass, "{}", t15.message);
}

#[test]
fn the_default_result_file_name_is_vllms() {
    let sim = Sim::start(&[
        "--tokens-per-s",
        "1000",
        "--served-model-name",
        "Qwen/Qwen3-8B",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = bench(&[
        "--base-url",
        &sim.url(""),
        "--num-prompts",
        "3",
        "--max-concurrency",
        "2",
        "--random-input-len",
        "4",
        "--random-output-len",
        "2",
        "--save-result",
        "--result-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 1);
    let re = regex::Regex::new(r"^openai-infqps-concurrency2-Qwen3-8B-\d{8}-\d{6}\.json$").unwrap();
    assert!(re.is_match(&names[0]), "{names:?}");
}
