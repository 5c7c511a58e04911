//! What `inferlint run` costs, measured on the real binary (`cargo bench --bench run_overhead`):
//!
//! 1. Its own overhead: the run's wall time minus the server's boot (1 s) and the load's run, on
//!    the simulator, the T2 gate and the stop included (target ≤ 1 s), and the gate and the stop
//!    alone (target ≤ 0.5 s on a free machine: their clear readings are a settle apart, not 2 s,
//!    when nothing holds the run's card; docs/supervision.md, "T2 by events").
//! 2. Readiness: how long after `/health` first answers 200 the run notices (target ≤ 50 ms),
//!    against a server that prints its ready line and a mock `/health` that flips to 200.
//! 3. The recording: the sample period's error at 0.25 s (target p99 ≤ 2 ms) and inferlint's
//!    CPU during the load (target ≤ 1 % of one core), attached to a mock vLLM `/metrics`.
//!
//! `RUN_BENCH_RECORD_SECS` sets the recording's duration (default 60 s; the 5 minutes
//! is `300`); `RUN_BENCH_ONLY=overhead` measures 1. only.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
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

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let i = ((p / 100.0) * (v.len() as f64 - 1.0)).round() as usize;
    v[i.min(v.len() - 1)]
}

fn json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The last reading's elapsed seconds of each T2 result: the time spent waiting on readings.
fn t2_waits(results: &Value) -> f64 {
    results
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tripwire"] == "T2")
        .filter_map(|r| r["evidence"]["readings"].as_array()?.last()?[0].as_f64())
        .sum()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        .unwrap_or_default();
    let n = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{n} cores, {cpu}")
}

// ---------------------------------------------------------------------------------------------
// 1. Overhead on the simulator

/// One run's `(total - boot - load, that without the T2 reading waits, gate_s + stop_s)`.
fn overhead(runs: usize, gate: bool) -> Vec<(f64, f64, f64)> {
    let mut out = Vec::new();
    for _ in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let gpu = dir.path().join("gpu");
        std::fs::create_dir(&gpu).unwrap();
        let port = free_port();
        let serve = format!(
            "{} sim serve m --port {port} --boot-secs 1 --tokens-per-s 200",
            bin()
        );
        let run = dir.path().join("run");
        let mut cmd = Command::new(bin());
        cmd.arg("run")
            .arg("-o")
            .arg(&run)
            .arg("--serve")
            .arg(&serve);
        if !gate {
            cmd.arg("--no-gpu-check");
        }
        cmd.args(["--", bin(), "sim", "bench", "--port"])
            .arg(port.to_string())
            .args([
                "--model",
                "m",
                "--max-concurrency",
                "4",
                "--num-prompts",
                "16",
                "--random-input-len",
                "64",
                "--random-output-len",
                "64",
                "--ignore-eos",
            ])
            .env("INFERLINT_GPU", format!("sim:{}", gpu.display()))
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let status = cmd.status().unwrap();
        assert!(
            status.code().is_some_and(|c| c <= 2),
            "run failed: {status}"
        );
        let rec = json(&run.join("run.json"));
        let t = &rec["timings"];
        let total = t["total_s"].as_f64().unwrap();
        let boot = t["boot_s"].as_f64().unwrap();
        let load = t["load_s"].as_f64().unwrap();
        let waits = t2_waits(&json(&run.join("results.json")));
        let gate_stop = t["gate_s"].as_f64().unwrap() + t["stop_s"].as_f64().unwrap();
        out.push((total - boot - load, total - boot - load - waits, gate_stop));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// A mock server for 2. and 3.

#[derive(Default)]
struct Mock {
    healthy: AtomicBool,
    first_health: Mutex<Option<Instant>>,
    flipped_at: Mutex<Option<Instant>>,
    first_metrics_after_flip: Mutex<Option<Instant>>,
    flip_after: Duration,
}

fn metrics_text() -> String {
    // About the size of a real vLLM exposition (≈ 50 KB): the gauges and counters the recorder
    // reads, plus histogram buckets.
    let mut t = String::from(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n\
vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 1.0\n\
vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n\
vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 0.0\n\
vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 100.0\n\
vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 200.0\n\
vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"m\"} 10.0\n",
    );
    let mut i = 0;
    while t.len() < 50_000 {
        t.push_str(&format!(
            "vllm:request_latency_seconds_bucket{{engine=\"0\",le=\"{}.0\",model_name=\"m\",n=\"{i}\"}} 3.0\n",
            i % 40
        ));
        i += 1;
    }
    t
}

/// `/health`: 503 until `flip_after` past the first ask, then 200. The flip runs on its own
/// timer, so the time until the run's next poll counts against it.
async fn health(State(m): State<Arc<Mock>>) -> StatusCode {
    let first = {
        let mut g = m.first_health.lock().unwrap();
        let first = g.is_none();
        g.get_or_insert(Instant::now());
        first
    };
    if first && !m.healthy.load(Ordering::SeqCst) {
        let m2 = m.clone();
        tokio::spawn(async move {
            tokio::time::sleep(m2.flip_after).await;
            *m2.flipped_at.lock().unwrap() = Some(Instant::now());
            m2.healthy.store(true, Ordering::SeqCst);
        });
    }
    if m.healthy.load(Ordering::SeqCst) {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

async fn metrics(State(m): State<Arc<Mock>>) -> String {
    if m.healthy.load(Ordering::SeqCst) {
        m.first_metrics_after_flip
            .lock()
            .unwrap()
            .get_or_insert(Instant::now());
    }
    metrics_text()
}

fn start_mock(m: Arc<Mock>) -> (u16, std::sync::mpsc::Sender<()>) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (ptx, prx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let l = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        ptx.send(l.local_addr().unwrap().port()).unwrap();
        let app = Router::new()
            .route("/health", get(health))
            .route("/metrics", get(metrics))
            .with_state(m);
        rt.spawn(async move {
            let _ = axum::serve(l, app).await;
        });
        let _ = rx.recv();
        rt.shutdown_background();
    });
    (prx.recv().unwrap(), tx)
}

// ---------------------------------------------------------------------------------------------
// 2. Readiness

fn readiness(runs: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for _ in 0..runs {
        let m = Arc::new(Mock {
            flip_after: Duration::from_millis(700),
            ..Mock::default()
        });
        m.healthy.store(false, Ordering::SeqCst);
        let (port, stop) = start_mock(m.clone());
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new(bin())
            .arg("run")
            .arg("-o")
            .arg(dir.path().join("run"))
            .arg("--url")
            .arg(format!("http://127.0.0.1:{port}"))
            .arg("--serve")
            .arg("sh -c 'echo \"INFO:     Application startup complete.\"; exec sleep 600'")
            .args(["--no-gpu-check", "--no-probe", "--", "true"])
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        let _ = status;
        let flip = m.flipped_at.lock().unwrap().expect("health flipped");
        let seen = m
            .first_metrics_after_flip
            .lock()
            .unwrap()
            .expect("the run scraped after ready");
        out.push(seen.duration_since(flip).as_secs_f64() * 1000.0);
        let _ = stop.send(());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 3. Recording

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields after the comm: state is [0]; utime [11], stime [12] (man 5 proc, 14 and 15).
    let ut: u64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0);
    let st: u64 = f.get(12).and_then(|x| x.parse().ok()).unwrap_or(0);
    ut + st
}

fn recording(secs: u64) -> (Vec<f64>, f64, usize) {
    let m = Arc::new(Mock::default());
    m.healthy.store(true, Ordering::SeqCst);
    let (port, stop) = start_mock(m);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let mut child = Command::new(bin())
        .arg("run")
        .arg("-o")
        .arg(&run)
        .arg("--url")
        .arg(format!("http://127.0.0.1:{port}"))
        .args(["--no-probe", "--interval", "0.25", "--", "sleep"])
        .arg(secs.to_string())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let ticks_per_s = 100.0; // USER_HZ on Linux
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let (mut t_start, mut c_start) = (None, 0);
    let (mut t_end, mut c_end) = (None, 0);
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        if line.starts_with("== load:") {
            t_start = Some(Instant::now());
            c_start = cpu_ticks(pid);
        }
        if line.starts_with("== checks") && t_end.is_none() {
            t_end = Some(Instant::now());
            c_end = cpu_ticks(pid);
        }
        line.clear();
    }
    let _ = child.wait();
    let _ = stop.send(());
    let wall = t_end
        .unwrap()
        .duration_since(t_start.unwrap())
        .as_secs_f64();
    let cpu_pct = 100.0 * (c_end - c_start) as f64 / ticks_per_s / wall;
    let text = std::fs::read_to_string(run.join("run.series.jsonl")).unwrap();
    let monos: Vec<i64> = text
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok()?["t_mono_ns"].as_i64())
        .collect();
    let errors: Vec<f64> = monos
        .windows(2)
        .map(|w| ((w[1] - w[0]) as f64 / 1e6 - 250.0).abs())
        .collect();
    (errors, cpu_pct, monos.len())
}

fn main() {
    println!("run_overhead on {}", machine());
    let ov = overhead(5, true);
    let mut with: Vec<f64> = ov.iter().map(|x| x.0).collect();
    let mut own: Vec<f64> = ov.iter().map(|x| x.1).collect();
    let mut gs: Vec<f64> = ov.iter().map(|x| x.2).collect();
    println!(
        "overhead (run - boot - load), 1 s boot, GPU gate on, 5 runs: median {:.3} s, max {:.3} s (target <= 1 s); the gate and the stop: median {:.3} s, max {:.3} s (target <= 0.5 s); without the T2 reading waits: median {:.3} s, max {:.3} s",
        percentile(&mut with, 50.0),
        percentile(&mut with, 100.0),
        percentile(&mut gs, 50.0),
        percentile(&mut gs, 100.0),
        percentile(&mut own, 50.0),
        percentile(&mut own, 100.0)
    );
    if std::env::var("RUN_BENCH_ONLY").as_deref() == Ok("overhead") {
        return;
    }
    let ov = overhead(5, false);
    let mut with: Vec<f64> = ov.iter().map(|x| x.0).collect();
    let mut own: Vec<f64> = ov.iter().map(|x| x.1).collect();
    println!(
        "overhead, --no-gpu-check, 5 runs: median {:.3} s, max {:.3} s; without the stop's T2 reading wait: median {:.3} s, max {:.3} s",
        percentile(&mut with, 50.0),
        percentile(&mut with, 100.0),
        percentile(&mut own, 50.0),
        percentile(&mut own, 100.0)
    );
    let mut r = readiness(10);
    println!(
        "readiness noticed after /health first answers 200, 10 runs: median {:.1} ms, p99 {:.1} ms, max {:.1} ms (target <= 50 ms)",
        percentile(&mut r, 50.0),
        percentile(&mut r, 99.0),
        percentile(&mut r, 100.0)
    );
    let secs: u64 = std::env::var("RUN_BENCH_RECORD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let (mut errors, cpu, n) = recording(secs);
    println!(
        "recording at 0.25 s for {secs} s ({n} samples): period error median {:.3} ms, p99 {:.3} ms, max {:.3} ms (target p99 <= 2 ms); inferlint CPU during the load {:.2}% of one core (target <= 1%)",
        percentile(&mut errors, 50.0),
        percentile(&mut errors, 99.0),
        percentile(&mut errors, 100.0),
        cpu
    );
}
