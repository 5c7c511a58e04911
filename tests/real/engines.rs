//! The real aiperf 0.13 against the simulated SGLang and TensorRT-LLM under `inferlint run`:
//! the load tool inferlint reads for every engine (its `profile_export_aiperf.json`), with the
//! run judging each server as its own engine — SGLang's and TensorRT-LLM's counters against
//! aiperf's file for T15, aiperf's `--concurrency` as the request for T8, the tree stopped
//! clean. The servers are simulated because neither engine runs on this CPU-only machine
//! (docs/real-sglang.md); the client is the real one.

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
