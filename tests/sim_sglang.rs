//! The simulated SGLang 0.5 (`sim serve --engine sglang`) judged against the recorded SGLang
//! runs in tests/fixtures/sglang-0.5/: its boot log reads to the recorded log's facts through
//! core's analyzer (for every fact the simulated configuration determines) with its anchor
//! lines in the recorded order, its /metrics has the recorded families with their types, HELP
//! and label names (and only with --enable-metrics), its gauges move with the load, its
//! endpoints answer, and its processes carry SGLang's titles until SIGTERM ends them all
//! while a bystander lives on.

use crate::sim_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use inferlint_core::bootlog::{self, BootFacts};
use inferlint_core::prom::Metrics;
use inferlint_core::Engine;
use sim_support::*;

const REC: &str = "tests/fixtures/sglang-0.5";

/// The recorded qwen3-8b run's launch, as simulator flags (its `server_args`).
const AS_RECORDED: &[&str] = &[
    "--engine",
    "sglang",
    "--served-model-name",
    "qwen3-8b",
    "--max-running-requests",
    "32",
    "--context-length",
    "16384",
    "--max-total-tokens",
    "32096",
    "--chunked-prefill-size",
    "4096",
    "--mem-fraction-static",
    "0.88",
    "--enable-metrics",
];

fn start_as_recorded(extra: &[&str]) -> Sim {
    Sim::builder()
        .model("/root/models/Qwen3-8B")
        .args(AS_RECORDED)
        .args(extra)
        .start()
}

fn recorded_facts() -> BootFacts {
    bootlog::parse_file(Path::new(&format!("{REC}/qwen3-8b/boot.log")), None).unwrap()
}

/// The lines whose order a reader of SGLang's boot log relies on, first occurrences.
const ANCHORS: &[&str] = &[
    "server_args={",
    "Init torch distributed begin.",
    "Load weight begin.",
    "Load weight end.",
    "KV Cache is allocated.",
    "Memory pool end.",
    "Capture target prefill CUDA graph begin.",
    "Capture target prefill CUDA graph end.",
    "Capture target decode CUDA graph begin.",
    "Capture target decode CUDA graph end.",
    "max_total_num_tokens=",
    "Engine startup timings (s):",
    "INFO:     Started server process",
    "INFO:     Waiting for application startup.",
    "INFO:     Application startup complete.",
    "INFO:     Uvicorn running on http://",
    "\"GET /model_info HTTP/1.1\"",
    "\"POST /generate HTTP/1.1\"",
    "The server is fired up and ready to roll!",
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
    let sim = start_as_recorded(&[]);
    let log = sim.log();
    let recorded_text = std::fs::read_to_string(format!("{REC}/qwen3-8b/boot.log")).unwrap();
    assert_eq!(
        anchor_order(&recorded_text),
        ANCHORS,
        "the recording has every anchor"
    );
    assert_eq!(anchor_order(&log), ANCHORS, "simulated log:\n{log}");

    let rec = recorded_facts();
    let got = bootlog::parse_text(&log, None);
    assert_eq!(got.engine, Some(Engine::Sglang));
    assert_eq!(got.log_engine, rec.log_engine);
    assert!(got.ready && rec.ready);
    assert!(got.unparsed.is_empty(), "{:?}", got.unparsed);
    // Facts the simulated configuration sets, each as the recording has it.
    assert_eq!(got.kv_pool_tokens, rec.kv_pool_tokens);
    assert_eq!(got.running_cap, rec.running_cap);
    assert_eq!(got.requested_running, rec.requested_running);
    assert_eq!(got.page_size, rec.page_size);
    assert_eq!(got.model, rec.model);
    assert_eq!(got.selected_backends, rec.selected_backends);
    assert_eq!(got.requested_backend, rec.requested_backend);
    assert_eq!(got.speculative, rec.speculative);
    assert_eq!(got.cudagraphs, rec.cudagraphs);
    // Present in both, with the simulated model's own sizes.
    for (what, g, r) in [
        ("model_load_gib", got.model_load_gib, rec.model_load_gib),
        (
            "cudagraph_actual_gib",
            got.cudagraph_actual_gib,
            rec.cudagraph_actual_gib,
        ),
        (
            "available_kv_cache_gib",
            got.available_kv_cache_gib,
            rec.available_kv_cache_gib,
        ),
    ] {
        assert!(g.is_some() && r.is_some(), "{what}: {g:?} vs {r:?}");
    }
    let kv = 32096.0 * inferlint_sim::config::KV_BYTES_PER_TOKEN as f64 / 2.0 / (1u64 << 30) as f64;
    let kv = (kv * 100.0).round() / 100.0 * 2.0;
    assert!((got.available_kv_cache_gib.unwrap() - kv).abs() < 0.011);

    // Every server_args key the simulator prints is the recording's, in its order, with its
    // value — but for what a simulator run must differ in.
    let (g, r) = (got.server_args.unwrap(), rec.server_args.unwrap());
    let rec_keys: Vec<&String> = r.keys().collect();
    let positions: Vec<usize> = g
        .keys()
        .map(|k| {
            rec_keys
                .iter()
                .position(|rk| *rk == k)
                .unwrap_or_else(|| panic!("{k} not recorded"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    // port: the test asks for a free one; random_seed: random; max_total_tokens: the recorded
    // server sized its pool from memory, the simulator from the flag.
    for (k, v) in g
        .iter()
        .filter(|(k, _)| !["port", "random_seed", "max_total_tokens"].contains(&k.as_str()))
    {
        assert_eq!(Some(v), r.get(k), "server_args[{k}]");
    }
    assert!(g.len() >= 20, "{} keys", g.len());
}

/// Family → (type, HELP, label names of its samples).
type Shape = BTreeMap<String, (String, String, BTreeSet<String>)>;

/// An exposition's [`Shape`].
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

/// Every recorded scrape's shape.
fn recorded_shapes() -> Vec<Shape> {
    let mut v = Vec::new();
    for run in ["qwen3-8b", "qwen3-8b-own-client", "live", "capped"] {
        for when in ["before", "after"] {
            let path = format!("{REC}/{run}/{when}.snapshot.json");
            let doc: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            v.push(shape(doc["text"].as_str().unwrap()));
        }
    }
    v
}

/// Each family of `sim` as some recording has it (type, HELP, label names), and the families
/// every recording shows all present.
fn assert_recorded_shape(sim: &Shape) -> usize {
    let recs = recorded_shapes();
    for (fam, got) in sim {
        let rec = recs
            .iter()
            .find_map(|r| r.get(fam))
            .unwrap_or_else(|| panic!("{fam} is in no recorded scrape"));
        assert_eq!(got, rec, "{fam}");
    }
    let always: BTreeSet<&String> = recs[0]
        .keys()
        .filter(|f| recs.iter().all(|r| r.contains_key(*f)))
        .collect();
    for f in &always {
        assert!(
            sim.contains_key(*f),
            "{f} is in every recorded scrape but not the simulator's"
        );
    }
    always.len()
}

fn sample(m: &Metrics, name: &str, label: Option<(&str, &str)>) -> f64 {
    m.samples()
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| label.is_none_or(|(k, v)| s.labels.iter().any(|(a, b)| a == k && b == v)))
        .map(|s| s.value)
        .sum()
}

#[test]
fn metrics_have_the_recorded_families_and_move_with_the_load() {
    let sim = start_as_recorded(&["--tokens-per-s", "40"]);
    let (text, _) = metrics(&sim);
    let always = assert_recorded_shape(&shape(&text));
    assert!(always >= 70, "{always} families in every recording");
    assert!(
        !text.contains("sglang:inter_token_latency_seconds"),
        "no stream yet"
    );

    // A load of 6 streams sharing a prompt prefix, watched while it runs.
    let watcher = std::thread::spawn({
        let url = sim.url("/metrics");
        move || {
            let mut peak = (0.0f64, 0.0f64);
            for _ in 0..40 {
                let m = Metrics::parse(&get(&url).1).unwrap();
                peak.0 = peak.0.max(sample(&m, "sglang:num_running_reqs", None));
                peak.1 = peak.1.max(sample(&m, "sglang:token_usage", None));
                std::thread::sleep(Duration::from_millis(50));
            }
            peak
        }
    });
    let bodies = burst(&sim, 6, 64, 60);
    let (peak_running, peak_usage) = watcher.join().unwrap();
    assert!(bodies.iter().all(|b| b.contains("[DONE]")));
    assert!(
        peak_running >= 2.0,
        "num_running_reqs peaked at {peak_running}"
    );
    assert!(peak_usage > 0.0, "token_usage peaked at {peak_usage}");

    let (text, m) = metrics(&sim);
    let got = shape(&text);
    assert_recorded_shape(&got);
    for f in [
        "sglang:inter_token_latency_seconds",
        "sglang:cached_tokens_total",
    ] {
        assert!(got.contains_key(f), "{f} after a load with shared prefixes");
    }
    assert_eq!(sample(&m, "sglang:num_running_reqs", None), 0.0);
    let streamed = Some(("is_streaming", "true"));
    assert_eq!(sample(&m, "sglang:num_requests_total", streamed), 6.0);
    assert_eq!(
        sample(&m, "sglang:generation_tokens_total", streamed),
        360.0
    );
    assert!(sample(&m, "sglang:cached_tokens_total", None) > 0.0);
    assert_eq!(sample(&m, "sglang:max_total_num_tokens", None), 32096.0);
    assert_eq!(
        sample(
            &m,
            "sglang:http_responses_total",
            Some(("endpoint", "/v1/completions"))
        ),
        6.0
    );
}

#[test]
fn retractions_bring_the_recorded_retraction_counters() {
    // A pool of 600 tokens cannot hold 8 requests growing to 150 tokens each.
    let sim = Sim::start(&[
        "--engine",
        "sglang",
        "--enable-metrics",
        "--max-total-tokens",
        "600",
        "--context-length",
        "512",
        "--tokens-per-s",
        "200",
    ]);
    burst(&sim, 8, 50, 100);
    let (text, m) = metrics(&sim);
    let got = shape(&text);
    assert_recorded_shape(&got);
    assert!(
        sample(&m, "sglang:num_retracted_requests_total", None) > 0.0,
        "{text}"
    );
    for f in [
        "sglang:num_retracted_input_tokens_total",
        "sglang:num_retracted_output_tokens_total",
    ] {
        assert!(got.contains_key(f), "{f}");
    }
}

#[test]
fn endpoints_answer_and_metrics_need_the_flag() {
    let sim = Sim::start(&["--engine", "sglang", "--served-model-name", "served"]);
    assert_eq!(get(&sim.url("/metrics")).0, 404, "no --enable-metrics");
    assert_eq!(get(&sim.url("/health")).0, 200);
    assert_eq!(get(&sim.url("/health_generate")).0, 200);
    assert_eq!(get(&sim.url("/version")).0, 404, "as recorded");
    let info = json(&get(&sim.url("/get_model_info")).1);
    assert_eq!(info["model_path"], "m");
    let server = json(&get(&sim.url("/get_server_info")).1);
    assert_eq!(server["version"], inferlint_sim::sglang::VERSION);
    assert_eq!(server["served_model_name"], "served");
    assert_eq!(server["enable_metrics"], false);
    let models = json(&get(&sim.url("/v1/models")).1);
    assert_eq!(models["data"][0]["id"], "served");
    assert_eq!(models["data"][0]["owned_by"], "sglang");
    let (s, body) = post(
        &sim.url("/generate"),
        r#"{"text": "a b c", "sampling_params": {"max_new_tokens": 5}}"#,
        &[],
    );
    assert_eq!(s, 200);
    assert_eq!(json(&body)["meta_info"]["completion_tokens"], 5);
    let (s, body) = post(
        &sim.url("/v1/completions"),
        r#"{"prompt": "a b", "max_tokens": 3}"#,
        &[],
    );
    assert_eq!(s, 200, "{body}");
    assert_eq!(json(&body)["usage"]["completion_tokens"], 3);
    assert!(sim
        .log()
        .contains("\"GET /health_generate HTTP/1.1\" 200 OK"));
}

fn titles(sim: &Sim) -> BTreeSet<String> {
    sim.processes()
        .into_iter()
        .filter_map(|p| argv(p).first().cloned())
        .filter(|a| a.starts_with("sglang::"))
        .collect()
}

fn assert_titles_then_clean_stop(args: &[&str], want: &[&str]) {
    let mut bystander = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let mut sim = Sim::start(args);
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    assert_eq!(titles(&sim), want);
    sim.signal_api(libc::SIGTERM);
    let status = sim
        .wait_exit(Duration::from_secs(10))
        .expect("API server exits on SIGTERM");
    assert!(status.success(), "{status:?}");
    assert!(
        eventually(Duration::from_secs(5), || sim.processes().is_empty()),
        "left behind: {:?}",
        titles(&sim)
    );
    assert!(alive(bystander.id()), "the bystander survives the stop");
    let _ = bystander.kill();
    let _ = bystander.wait();
}

#[test]
fn process_titles_while_serving_and_none_after_sigterm() {
    assert_titles_then_clean_stop(
        &["--engine", "sglang", "--tp-size", "2"],
        &[
            "sglang::scheduler_TP0",
            "sglang::scheduler_TP1",
            "sglang::detokenizer",
        ],
    );
    assert_titles_then_clean_stop(
        &["--engine", "sglang", "--dp", "2"],
        &[
            "sglang::scheduler_DP0_TP0_EP0",
            "sglang::scheduler_DP1_TP0_EP0",
            "sglang::data_parallel_controller",
            "sglang::detokenizer",
        ],
    );
}

#[test]
fn requests_beyond_the_running_cap_wait_in_the_queue_gauge() {
    let sim = Sim::start(&[
        "--engine",
        "sglang",
        "--enable-metrics",
        "--max-running-requests",
        "2",
        "--tokens-per-s",
        "50",
    ]);
    let watcher = std::thread::spawn({
        let url = sim.url("/metrics");
        move || {
            let mut peak = (0.0f64, 0.0f64);
            for _ in 0..30 {
                let m = Metrics::parse(&get(&url).1).unwrap();
                peak.0 = peak.0.max(sample(&m, "sglang:num_running_reqs", None));
                peak.1 = peak.1.max(sample(&m, "sglang:num_queue_reqs", None));
                std::thread::sleep(Duration::from_millis(50));
            }
            peak
        }
    });
    burst(&sim, 5, 8, 40);
    let (running, queued) = watcher.join().unwrap();
    assert_eq!(running, 2.0, "at most the cap runs");
    assert!(queued >= 1.0, "num_queue_reqs peaked at {queued}");
    let (_, m) = metrics(&sim);
    assert_eq!(sample(&m, "sglang:num_queue_reqs", None), 0.0);
}

/// `--fail-boot value_error|runtime_error`: the scheduler's recorded traceback, then the
/// launcher's sigquit lines and its own SIGKILL (SGLang's `kill_process_tree` includes the
/// parent); the analyzer classifies the simulated log as the recorded one, to the line text.
#[test]
fn start_up_failures_classify_as_the_recorded_ones() {
    use std::os::unix::process::ExitStatusExt;
    for (kind, file) in [
        ("value_error", "boot_fail_mem_advice.log"),
        ("runtime_error", "boot_fail_mamba_state.log"),
    ] {
        let mut sim = Sim::builder()
            .args(&["--engine", "sglang", "--fail-boot", kind])
            .no_wait()
            .start();
        let status = sim.wait_exit(Duration::from_secs(20)).expect("it exits");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{kind}: {status:?}");
        let log = sim.log();
        let got = bootlog::parse_text(&log, Some(Engine::Sglang));
        let text = std::fs::read_to_string(Path::new(REC).join(file)).unwrap();
        let rec = bootlog::parse_text(&text, Some(Engine::Sglang));
        let (g, r) = (got.failure.expect(kind), rec.failure.expect(file));
        assert_eq!(
            (g.kind, g.phase, &g.detail),
            (r.kind, r.phase, &r.detail),
            "{kind}: {log}"
        );
        assert!(
            log.contains(
                "Received sigquit from a child process. It usually means the child failed."
            ),
            "{log}"
        );
        assert!(
            eventually(Duration::from_secs(5), || sim.processes().is_empty()),
            "{kind}: left behind"
        );
    }
    let mut sim = Sim::builder()
        .args(&["--engine", "sglang", "--fail-boot", "jit_toolchain"])
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
