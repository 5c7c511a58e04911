//! The simulated TensorRT-LLM 1.3 (`sim serve --engine trtllm`) judged against the recorded
//! runs in tests/fixtures/trtllm-1.3/: its boot log reads to the recorded log's facts through
//! core's analyzer with its anchor lines in the recorded order, its start-up failures classify
//! as the recorded ones, its /prometheus/metrics has the recorded families with their types,
//! HELP and label names (the iteration-stats families only with `enable_iter_perf_stats`, the
//! whole exposition only with `return_perf_metrics`), its gauges lag as recorded, its endpoints
//! answer, and its MPI processes carry their titles until SIGTERM ends them all while a
//! bystander of another engine lives on.

use crate::sim_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use inferlint_core::bootlog::{self, BootFacts};
use inferlint_core::prom::Metrics;
use inferlint_core::Engine;
use sim_support::*;

const REC: &str = "tests/fixtures/trtllm-1.3";

/// A `--config` YAML in a folder of its own (kept while the test runs).
fn perf_yaml(iteration_stats: bool) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perf.yaml");
    std::fs::write(
        &path,
        format!("return_perf_metrics: true\nenable_iter_perf_stats: {iteration_stats}\n"),
    )
    .unwrap();
    (dir, path.display().to_string())
}

/// The recorded qwen3-8b run's launch, as simulator flags (its `LLM Args`).
fn start_as_recorded(iteration_stats: bool, extra: &[&str]) -> (Sim, tempfile::TempDir) {
    let (dir, yaml) = perf_yaml(iteration_stats);
    let sim = Sim::builder()
        .model("/root/models/Qwen3-8B")
        .args(&[
            "--engine",
            "trtllm",
            "--served-model-name",
            "qwen3-8b",
            "--max_batch_size",
            "32",
            "--max_seq_len",
            "16384",
            "--num-gpu-blocks-override",
            "1180",
            "--kv_cache_free_gpu_memory_fraction",
            "0.9",
            "--config",
            &yaml,
        ])
        .args(extra)
        .start();
    (sim, dir)
}

fn recorded(name: &str) -> (String, BootFacts) {
    let path = format!("{REC}/{name}");
    let text = std::fs::read_to_string(&path).unwrap();
    (text, bootlog::parse_file(Path::new(&path), None).unwrap())
}

/// The lines whose order a reader of TensorRT-LLM's boot log relies on, first occurrences.
const ANCHORS: &[&str] = &[
    "[TensorRT-LLM] TensorRT LLM version: ",
    "[llmapi] Using LLM with PyTorch backend",
    "rank 0 using MpiPoolSession to spawn MPI processes",
    "worker_initialization_wait: start",
    "[runtime][RANK 0] Refreshed the MPI local session",
    "after loading weights (inside torch) in memory usage profiling: ",
    "for estimation dry run",
    "tokens per block=",
    "for max tokens in paged KV cache (",
    "max_num_requests=",
    "Running CUDA graph warmup for",
    "Estimated max memory in KV cache",
    "LLM Args:",
    "RPC Server has started.",
    "executor_proxy/workers_ready",
    "PROMETHEUS_MULTIPROC_DIR",
    "INFO:     Started server process",
    "INFO:     Waiting for application startup.",
    "Started background iteration stats collector task",
    "INFO:     Application startup complete.",
    "\"GET /health HTTP/1.1\" 200 OK",
    "INFO:     Shutting down",
    "INFO:     Waiting for application shutdown.",
    "Iteration stats collector loop cancelled",
    "MpiPoolSession.shutdown: joining 1 worker(s) (wait=True)",
    "MpiPoolSession.shutdown: done",
    "INFO:     Application shutdown complete.",
    "INFO:     Finished server process",
];

fn anchor_order(log: &str) -> Vec<&'static str> {
    let mut found: Vec<(usize, &'static str)> = ANCHORS
        .iter()
        .filter_map(|a| log.find(a).map(|i| (i, *a)))
        .collect();
    found.sort_unstable();
    found.into_iter().map(|(_, a)| a).collect()
}

#[test]
fn boot_log_reads_to_the_recorded_facts_in_the_recorded_order() {
    let (mut sim, _yaml) = start_as_recorded(true, &[]);
    assert_eq!(get(&sim.url("/health")).0, 200);
    // An answered request: the log then covers serving (it counts pauses from there).
    burst(&sim, 2, 40, 8);
    sim.signal_api(libc::SIGTERM);
    assert!(sim.wait_exit(Duration::from_secs(10)).is_some());
    let log = sim.log();
    let (rec_text, rec) = recorded("qwen3-8b/boot.log");
    assert_eq!(
        anchor_order(&rec_text),
        ANCHORS,
        "the recording has every anchor"
    );
    assert_eq!(anchor_order(&log), ANCHORS, "simulated log:\n{log}");

    let got = bootlog::parse_text(&log, None);
    assert_eq!(got.engine, Some(Engine::Trtllm));
    assert_eq!(got.log_engine, rec.log_engine);
    assert!(got.ready && rec.ready);
    assert!(got.unparsed.is_empty(), "{:?}", got.unparsed);
    assert!(got.conflicts.is_empty(), "{:?}", got.conflicts);
    // Facts the simulated configuration sets, each as the recording has it.
    assert_eq!(got.engine_version, rec.engine_version);
    assert_eq!(got.kv_pool_tokens, rec.kv_pool_tokens);
    assert_eq!(got.available_kv_cache_gib, rec.available_kv_cache_gib);
    assert_eq!(got.page_size, rec.page_size);
    assert_eq!(got.running_cap, rec.running_cap);
    assert_eq!(got.requested_running, rec.requested_running);
    assert_eq!(got.model, rec.model);
    assert_eq!(got.selected_backends, rec.selected_backends);
    assert_eq!(got.speculative, rec.speculative);
    assert_eq!(got.pauses, rec.pauses);
    assert!(got.model_load_gib.is_some() && rec.model_load_gib.is_some());
    // The settings line is the recording's but for what a simulator run must differ in.
    let (g, r) = (got.server_args.unwrap(), rec.server_args.unwrap());
    assert_eq!(g.keys().collect::<Vec<_>>(), r.keys().collect::<Vec<_>>());
    for (k, v) in g.iter().filter(|(k, _)| *k != "llm_args") {
        assert_eq!(Some(v), r.get(k), "server_args[{k}]");
    }
}

#[test]
fn start_up_failures_classify_as_the_recorded_ones() {
    for (kind, file) in [
        ("assertion", "boot_fail_no_cuda_home.log"),
        (
            "unclassified_exception",
            "boot_fail_compressed_tensors_w4a16.log",
        ),
    ] {
        let mut sim = Sim::builder()
            .args(&["--engine", "trtllm", "--fail-boot", kind])
            .no_wait()
            .start();
        let status = sim.wait_exit(Duration::from_secs(10)).expect("it exits");
        assert_eq!(status.code(), Some(1), "{kind}");
        let got = bootlog::parse_text(&sim.log(), None);
        let (_, rec) = recorded(file);
        let (g, r) = (got.failure.expect(kind), rec.failure.expect(file));
        assert_eq!(
            (g.kind, g.phase, &g.detail),
            (r.kind, r.phase, &r.detail),
            "{kind}"
        );
        assert_eq!(g.line, r.line, "{kind}");
        assert!(sim.processes().is_empty(), "no rank started");
    }
    let mut sim = Sim::builder()
        .args(&["--engine", "trtllm", "--fail-boot", "out_of_memory"])
        .no_wait()
        .start();
    let status = sim.wait_exit(Duration::from_secs(10)).expect("it exits");
    assert_eq!(
        status.code(),
        Some(2),
        "an unrecorded failure is a usage error"
    );
    assert!(sim.log().contains("its recorded failures"), "{}", sim.log());
}

/// Family → (type, HELP, label names of its samples).
type Shape = BTreeMap<String, (String, String, BTreeSet<String>)>;

fn shape(text: &str) -> Shape {
    let mut out: Shape = BTreeMap::new();
    let mut help: BTreeMap<String, String> = BTreeMap::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# HELP ") {
            let (n, h) = rest.split_once(' ').unwrap_or((rest, ""));
            help.insert(n.to_string(), h.to_string());
        } else if let Some(rest) = l.strip_prefix("# TYPE ") {
            let (n, t) = rest.split_once(' ').unwrap();
            let h = help.get(n).cloned().unwrap_or_default();
            out.insert(n.to_string(), (t.to_string(), h, BTreeSet::new()));
        }
    }
    let m = Metrics::parse(text).expect("exposition parses");
    for s in m.samples() {
        let fam = out
            .keys()
            .filter(|f| s.name.starts_with(f.as_str()))
            .max_by_key(|f| f.len())
            .cloned()
            .unwrap_or_else(|| panic!("{} has no family", s.name));
        let labels = &mut out.get_mut(&fam).unwrap().2;
        labels.extend(
            s.labels
                .iter()
                .map(|(k, _)| k.clone())
                .filter(|k| k != "le"),
        );
    }
    out
}

fn recorded_shape(run: &str, when: &str) -> Shape {
    let path = format!("{REC}/{run}/{when}.snapshot.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    shape(doc["text"].as_str().unwrap())
}

fn prometheus(sim: &Sim) -> (String, Metrics) {
    let (status, text) = get(&sim.url("/prometheus/metrics"));
    assert_eq!(status, 200, "{text}");
    let m = Metrics::parse(&text).unwrap();
    (text, m)
}

fn sample(m: &Metrics, name: &str) -> f64 {
    m.samples()
        .iter()
        .filter(|s| s.name == name)
        .map(|s| s.value)
        .sum()
}

#[test]
fn metrics_have_the_recorded_families_and_their_gauges_lag() {
    let (sim, _yaml) = start_as_recorded(true, &["--tokens-per-s", "40"]);
    let (text, _) = prometheus(&sim);
    let idle = shape(&text);
    let info: BTreeSet<&str> = idle.keys().map(String::as_str).collect();
    assert_eq!(
        info,
        BTreeSet::from([
            "trtllm_kv_cache_config_info",
            "trtllm_model_config_info",
            "trtllm_parallel_config_info"
        ]),
        "before any request only the configuration gauges"
    );
    let rec_after = recorded_shape("qwen3-8b", "after");
    for (f, s) in &idle {
        assert_eq!(Some(s), rec_after.get(f), "{f}");
    }

    // Requests sharing their prompt (the cache reuses its blocks), watched while they run.
    let watcher = std::thread::spawn({
        let url = sim.url("/prometheus/metrics");
        move || {
            let mut peak = 0.0f64;
            for _ in 0..40 {
                let m = Metrics::parse(&get(&url).1).unwrap();
                peak = peak.max(sample(&m, "trtllm_num_requests_running"));
                std::thread::sleep(Duration::from_millis(50));
            }
            peak
        }
    });
    burst(&sim, 1, 96, 10);
    let bodies = burst(&sim, 6, 96, 60);
    let peak = watcher.join().unwrap();
    assert!(bodies.iter().all(|b| b.contains("[DONE]")));
    assert!(peak >= 2.0, "trtllm_num_requests_running peaked at {peak}");

    let (text, m) = prometheus(&sim);
    assert_eq!(shape(&text), rec_after, "the recorded after-load families");
    assert_eq!(sample(&m, "trtllm_generation_tokens_total"), 370.0);
    assert_eq!(sample(&m, "trtllm_request_success_total"), 7.0);
    assert_eq!(sample(&m, "trtllm_kv_cache_max_blocks"), 1180.0);
    assert!(sample(&m, "trtllm_kv_cache_reused_blocks_total") > 0.0);
    // As recorded, the gauges keep the iteration before the last completion: not idle.
    assert!(
        sample(&m, "trtllm_num_requests_running") >= 1.0,
        "the gauges lag: {text}"
    );
    // /metrics is the iteration stats since the last read, drained.
    let stats = json(&get(&sim.url("/metrics")).1);
    let stats = stats.as_array().unwrap();
    assert!(!stats.is_empty());
    assert_eq!(stats[0]["kvCacheStats"]["maxNumBlocks"], 1180.0);
    assert!(stats
        .iter()
        .any(|s| s["numActiveRequests"].as_u64() >= Some(2)));
    assert_eq!(json(&get(&sim.url("/metrics")).1), serde_json::json!([]));
}

#[test]
fn without_iteration_stats_the_gauges_are_missing_as_recorded() {
    let (sim, _yaml) = start_as_recorded(false, &[]);
    burst(&sim, 3, 40, 8);
    let (text, _) = prometheus(&sim);
    let got: BTreeSet<String> = shape(&text).into_keys().collect();
    let rec: BTreeSet<String> = recorded_shape("no-iter-stats", "after")
        .into_keys()
        .collect();
    assert_eq!(got, rec);
    assert_eq!(json(&get(&sim.url("/metrics")).1), serde_json::json!([]));

    let plain = Sim::start(&["--engine", "trtllm"]);
    assert_eq!(
        get(&plain.url("/prometheus/metrics")).0,
        404,
        "no return_perf_metrics"
    );
    assert!(!plain.log().contains("PROMETHEUS_MULTIPROC_DIR"));
}

#[test]
fn endpoints_answer_as_recorded() {
    let sim = Sim::start(&["--engine", "trtllm", "--served-model-name", "served"]);
    assert_eq!(get(&sim.url("/health")).0, 200);
    assert_eq!(get(&sim.url("/health_generate")).0, 200);
    assert_eq!(
        json(&get(&sim.url("/version")).1)["version"],
        inferlint_sim::trtllm::VERSION
    );
    let models = json(&get(&sim.url("/v1/models")).1);
    assert_eq!(models["data"][0]["id"], "served");
    assert_eq!(post(&sim.url("/tokenize"), "{}", &[]).0, 404, "as recorded");
    let (s, body) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "a b", "max_tokens": 3}"#,
        &[],
    );
    assert_eq!(s, 200, "{body}");
    assert_eq!(json(&body)["usage"]["completion_tokens"], 3);
    let (s, body) = post(
        &sim.url("/v1/chat/completions"),
        r#"{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}"#,
        &[],
    );
    assert_eq!(s, 200, "{body}");
    assert!(sim
        .log()
        .contains("\"POST /tokenize HTTP/1.1\" 404 Not Found"));
}

fn titled(sim: &Sim) -> Vec<String> {
    let mut v: Vec<String> = sim
        .processes()
        .into_iter()
        .filter(|&p| p != sim.api_pid)
        .map(|p| argv(p).join(" "))
        .collect();
    v.sort();
    v
}

#[test]
fn mpi_ranks_while_serving_and_none_after_sigterm() {
    // A same-user bystander titled like another engine's worker.
    let mut bystander = std::process::Command::new("bash")
        .args(["-c", "exec -a sglang::scheduler_TP0 sleep 60"])
        .spawn()
        .unwrap();
    let mut sim = Sim::start(&["--engine", "trtllm", "--tp_size", "2"]);
    let prte = format!("prte --singleton singleton.host.{}.0", sim.api_pid);
    let rank = inferlint_sim::trtllm::RANK_TITLE.to_string();
    // Each rank retitles itself once it runs, which may be just after the launcher's ready line.
    let want = vec![prte, rank.clone(), rank];
    assert!(
        eventually(Duration::from_secs(5), || titled(&sim) == want),
        "{:?}",
        titled(&sim)
    );
    let ranks: Vec<u32> = sim
        .processes()
        .into_iter()
        .filter(|&p| argv(p).first().is_some_and(|a| a.contains("mpi4py")))
        .collect();
    assert!(
        ranks.iter().all(|&p| comm(p) == "python3"),
        "comm as exec gives it"
    );
    assert!(!sim.log().contains("MpiPoolSession.shutdown"));
    sim.signal_api(libc::SIGTERM);
    let status = sim
        .wait_exit(Duration::from_secs(10))
        .expect("exits on SIGTERM");
    assert!(status.success(), "{status:?}");
    assert!(
        eventually(Duration::from_secs(5), || sim.processes().is_empty()),
        "left behind: {:?}",
        titled(&sim)
    );
    assert!(sim
        .log()
        .contains("MpiPoolSession.shutdown: joining 2 worker(s) (wait=True)"));
    assert!(alive(bystander.id()), "the bystander survives the stop");
    let _ = bystander.kill();
    let _ = bystander.wait();
}
