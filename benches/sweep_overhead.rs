//! What a sweep costs per point beyond its load (`cargo bench --bench sweep_overhead`): a
//! four-point `inferlint run --sweep` on the simulated vLLM, with the cache reset between points
//! (target: inferlint's own time per point, its snapshots, the reset, reading the result, the
//! checks and the point's files, ≤ 0.2 s; docs/design/sweeps.md).
//!
//! Each point's `timings` in `sweep.json` holds its whole time and its load's; the difference is
//! inferlint's own. `SWEEP_BENCH_RUNS` sets how many sweeps are measured (default 3).

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferlint")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One sweep's per-point own times, in seconds.
fn one_sweep() -> Vec<f64> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("gpu")).unwrap();
    let port = free_port();
    let serve = format!(
        "{} sim serve m --host 127.0.0.1 --port {port} --boot-secs 0.5",
        bin()
    );
    let out = dir.path().join("run");
    let status = Command::new(bin())
        .args(["run", "-o"])
        .arg(&out)
        .args([
            "--serve",
            &serve,
            "--sweep",
            "max-concurrency=1,2,4,8",
            "--",
        ])
        .args([
            bin(),
            "sim",
            "bench",
            "--port",
            &port.to_string(),
            "--model",
            "m",
        ])
        .args([
            "--num-prompts",
            "16",
            "--random-input-len",
            "128",
            "--random-output-len",
            "16",
        ])
        .env(
            "INFERLINT_GPU",
            format!("sim:{}", dir.path().join("gpu").display()),
        )
        .env_remove("INFERLINT_ENGINE")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.code().is_some(), "the sweep ran");
    let sweep: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    sweep["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let t = &p["timings"];
            t["total_s"].as_f64().unwrap() - t["load_s"].as_f64().unwrap()
        })
        .collect()
}

fn main() {
    let runs: usize = std::env::var("SWEEP_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut own: Vec<f64> = Vec::new();
    for _ in 0..runs {
        own.extend(one_sweep());
        std::thread::sleep(Duration::from_millis(200));
    }
    own.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = own[own.len() / 2];
    let max = own[own.len() - 1];
    println!(
        "sweep_overhead: inferlint's own time per point over {} points: median {median:.3} s, max {max:.3} s (target <= 0.2 s): {}",
        own.len(),
        if median <= 0.2 { "met" } else { "NOT met" }
    );
}
