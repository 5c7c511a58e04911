//! How many 16-token completions per second the simulated vLLM serves (target ≥ 2,000/s on
//! the 2-core build machine), so that it is never the bottleneck of a test.
//!
//! Starts `inferlint sim serve` with a very high `--tokens-per-s`, then drives it from this
//! release-mode client: C connections, each sending one request after another, for a fixed
//! time after a warm-up; non-streaming and streaming (SSE with usage) in turn. Prints requests/s
//! and checks the server's own counters agree with what the client received.
//!
//! `cargo bench --bench sim_throughput` (env `SIM_BENCH_SECS`, `SIM_BENCH_CONNECTIONS`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TARGET_PER_S: f64 = 2000.0;

/// The server, SIGKILLed (engine included) when dropped.
struct Server {
    child: Child,
    engine: Option<u32>,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(e) = self.engine {
            unsafe { libc::kill(e as i32, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server() -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .args([
            "sim",
            "serve",
            "m",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--boot-secs",
            "0",
            "--tokens-per-s",
            "1000000",
            "--disable-uvicorn-access-log",
            "--disable-log-stats",
            "--max-num-seqs",
            "1024",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start inferlint sim serve");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut port = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line
            .split("Starting vLLM server on http://127.0.0.1:")
            .nth(1)
        {
            port = rest.trim().parse().expect("port");
            break;
        }
    }
    assert!(port > 0, "the simulator did not start");
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let engine = std::fs::read_dir("/proc").ok().and_then(|d| {
        d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .find(|p| {
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
                let ppid = stat
                    .rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
                ppid == Some(child.id())
            })
    });
    Server {
        child,
        engine,
        port,
    }
}

fn counter(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn scrape(client: &reqwest::Client, port: u16) -> String {
    client
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Runs `connections` request loops for `secs`; (requests completed, tokens received, seconds).
async fn drive(port: u16, connections: usize, secs: f64, stream: bool) -> (u64, u64, f64) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/v1/completions");
    let body = if stream {
        r#"{"model":"m","prompt":"hello world this is a benchmark","max_tokens":16,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}"#
    } else {
        r#"{"model":"m","prompt":"hello world this is a benchmark","max_tokens":16,"ignore_eos":true}"#
    };
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let tokens = Arc::new(AtomicU64::new(0));
    let counting = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (client, url, stop, done, tokens, counting) = (
            client.clone(),
            url.clone(),
            stop.clone(),
            done.clone(),
            tokens.clone(),
            counting.clone(),
        );
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let resp = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .expect("request");
                assert_eq!(resp.status(), 200);
                let text = resp.text().await.expect("body");
                let n = if stream {
                    let usage = text.rsplit("\"completion_tokens\":").next().unwrap();
                    usage.split('}').next().unwrap().parse::<u64>().unwrap()
                } else {
                    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                    v["usage"]["completion_tokens"].as_u64().unwrap()
                };
                if counting.load(Ordering::Relaxed) {
                    done.fetch_add(1, Ordering::Relaxed);
                    tokens.fetch_add(n, Ordering::Relaxed);
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await; // warm-up
    counting.store(true, Ordering::SeqCst);
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    counting.store(false, Ordering::SeqCst);
    let elapsed = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }
    (
        done.load(Ordering::SeqCst),
        tokens.load(Ordering::SeqCst),
        elapsed,
    )
}

fn main() {
    let secs: f64 = std::env::var("SIM_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5.0);
    let connections: usize = std::env::var("SIM_BENCH_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let server = start_server();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("sim_throughput: {} cores, {connections} connections, {secs} s per mode, 16-token completions", std::thread::available_parallelism().map_or(0, |n| n.get()));
    let mut ok = true;
    for stream in [false, true] {
        let (before, (n, tokens, elapsed), after) = rt.block_on(async {
            let c = reqwest::Client::new();
            let before = scrape(&c, server.port).await;
            let r = drive(server.port, connections, secs, stream).await;
            let after = scrape(&c, server.port).await;
            (before, r, after)
        });
        let rate = n as f64 / elapsed;
        let served = counter(&after, "vllm:request_success_total{")
            - counter(&before, "vllm:request_success_total{");
        let generated = counter(&after, "vllm:generation_tokens_total{")
            - counter(&before, "vllm:generation_tokens_total{");
        println!(
            "  {:<13} {:>8.0} requests/s ({n} in {elapsed:.2} s, {tokens} tokens; server counted {served} requests, {generated} tokens in the whole window) {}",
            if stream { "streaming" } else { "non-streaming" },
            rate,
            if rate >= TARGET_PER_S { "ok" } else { "BELOW TARGET" }
        );
        assert_eq!(tokens, n * 16);
        assert!(
            generated >= tokens as f64 && served >= n as f64,
            "the server counted less than the client received"
        );
        ok &= rate >= TARGET_PER_S;
    }
    println!(
        "target: {TARGET_PER_S:.0} requests/s: {}",
        if ok { "met" } else { "NOT met" }
    );
    drop(server);
}
