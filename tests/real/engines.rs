//! The real aiperf 0.13 against the simulated SGLang and TensorRT-LLM under `inferlint run`:
//! the load tool inferlint reads for every engine (its `profile_export_aiperf.json`), with the
//! run judging each server as its own engine — SGLang's and TensorRT-LLM's counters against
//! aiperf's file for T15, aiperf's `--concurrency` as the request for T8, the tree stopped
//! clean. The servers are simulated because neither engine runs on this CPU-only machine
//! (docs/real-sglang.md); the client is the real one. And AIPerf's own sweep, a process per
//! point, judged point by point against the simulated vLLM.

use std::path::Path;
use std::time::Duration;

use super::files::{aiperf_t15, args, assert_stopped_clean, json, num, print_timings, result};
use super::install::AIPERF_REQUESTS;
use super::{assert_port_free, turn, Install, Launch};

const RUN_LIMIT: Duration = Duration::from_secs(600);

/// A simulated server of `engine`, serving the lane's model name on `port`, with the metrics
/// each engine exposes only when asked (SGLang's `--enable-metrics`, TensorRT-LLM's
/// `return_perf_metrics` in its `--config`, written into `dir`).
fn sim_serve(engine: &str, port: u16, dir: &Path) -> String {
    let extra = match engine {
        "sglang" => "--enable-metrics".to_string(),
        _ => {
            let yaml = dir.join("perf.yaml");
            std::fs::write(
                &yaml,
                "return_perf_metrics: true\nenable_iter_perf_stats: true\n",
            )
            .unwrap();
            format!("--config {}", yaml.display())
        }
    };
    format!(
        "{} sim serve smollm2-135m --engine {engine} {extra} --port {port} --boot-secs 1 --tokens-per-s 200",
        env!("CARGO_BIN_EXE_inferlint")
    )
}

fn aiperf_against(engine: &str, port: u16) {
    let _t = turn();
    let name = format!("aiperf_against_the_simulated_{engine}");
    let Some(inst) = Install::find(&name) else {
        return;
    };
    let Some(aiperf) = inst.aiperf(&name) else {
        return;
    };
    assert_port_free(port);
    let config = tempfile::tempdir().unwrap();
    let launch = Launch::start(
        &format!("aiperf-{engine}"),
        &args(
            Path::new("run"),
            &sim_serve(engine, port, config.path()),
            &["--no-gpu-check"],
            &inst.aiperf_profile(&aiperf, port, 32, 16, "aiperf-artifacts"),
        ),
    );
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    let out = launch.out();
    let results = json(&out.join("results.json"));
    print_timings(&name, &launch, &out, &results);
    assert!((0..=2).contains(&code), "{stdout}");
    let rec = json(&out.join("run.json"));
    assert_eq!(rec["engine"], engine, "{rec}");
    assert_eq!(rec["load_exit_code"], 0, "{rec}");
    assert_eq!(rec["requested"], 8, "--concurrency 8 is the request: {rec}");
    let file = launch
        .dir
        .path()
        .join("aiperf-artifacts/profile_export_aiperf.json");
    let completed = num(&json(&file)["request_count"]["avg"]);
    assert_eq!(completed, f64::from(AIPERF_REQUESTS));
    // T15: aiperf's file read, its requests the server's own (the token counts may differ:
    // aiperf re-tokenizes the simulated text with the real tokenizer).
    let t15 = aiperf_t15(&results, completed);
    assert_eq!(num(&t15["evidence"]["server_finished"]), completed, "{t15}");
    assert!(t15["status"] == "pass" || t15["status"] == "warn", "{t15}");
    assert_eq!(num(&result(&results, "T8")["evidence"]["requested"]), 8.0);
    assert_eq!(result(&results, "T14")["status"], "not_applicable");
    assert_stopped_clean(&launch, &results);
}

#[test]
fn aiperf_against_the_simulated_sglang() {
    aiperf_against("sglang", 8031);
}

#[test]
fn aiperf_against_the_simulated_trtllm() {
    aiperf_against("trtllm", 8032);
}

/// AIPerf's own sweep (`--concurrency 2,8`, each value a process of its own) against the
/// simulated vLLM that runs at most 4 at once: each of its points is judged on its own, from
/// the counters around its process and its own `profile_export_aiperf.json`; T15 agrees at
/// each point, and no verdict blames one point's requests on another's; the second is the knee.
/// The server makes 40 tokens a second, so the second point's 8 requests of 16 tokens (two
/// rounds of 4) take about 0.8 s and the recorder's samples, 0.25 s apart, see them running: at
/// 200 a second they were done in under 0.2 s and a sample fell inside them only by luck.
#[test]
fn aiperfs_own_sweep_is_judged_point_by_point() {
    let _t = turn();
    let name = "aiperfs_own_sweep_is_judged_point_by_point";
    let Some(inst) = Install::find(name) else {
        return;
    };
    let Some(aiperf) = inst.aiperf(name) else {
        return;
    };
    let port = 8033;
    assert_port_free(port);
    let serve = format!(
        "{} sim serve smollm2-135m --host 127.0.0.1 --port {port} --boot-secs 1 --tokens-per-s 40 --max-num-seqs 4",
        env!("CARGO_BIN_EXE_inferlint")
    );
    let mut load = inst.aiperf_profile(&aiperf, port, 32, 16, "aiperf-artifacts");
    let at = load.iter().position(|w| w == "--concurrency").unwrap();
    load[at + 1] = "2,8".into();
    let launch = Launch::start(
        "aiperf-sweep",
        &args(Path::new("run"), &serve, &["--no-gpu-check"], &load),
    );
    let code = launch.wait(RUN_LIMIT);
    let stdout = launch.output();
    assert_eq!(code, 1, "T8 fails at the knee\n{stdout}");
    assert!(
        stdout.contains(
            "== the load tool ran a sweep of its own, 2 points: each is judged on its own"
        ),
        "{stdout}"
    );
    let out = launch.out();
    let sweep = json(&out.join("sweep.json"));
    assert_eq!(sweep["option"], "(load tool)", "{sweep}");
    let points = sweep["points"].as_array().unwrap();
    let labels: Vec<&str> = points
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["--concurrency 2", "--concurrency 8"], "{stdout}");
    let status = |p: &serde_json::Value, t: &str| result(&p["results"], t)["status"].clone();
    assert_eq!(status(&points[0], "T15"), "pass", "{stdout}");
    assert_eq!(status(&points[1], "T15"), "pass", "{stdout}");
    assert_eq!(status(&points[0], "T8"), "pass", "{stdout}");
    assert_eq!(status(&points[1], "T8"), "fail", "{stdout}");
    assert_eq!(sweep["knee"], 2, "{sweep}");
    // The whole load's verdicts take no one point's result file for the whole.
    let results = json(&out.join("results.json"));
    assert!(
        !results
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["tripwire"] == "T15" && r["status"] == "fail"),
        "{results}"
    );
    assert_stopped_clean(&launch, &results);
}
