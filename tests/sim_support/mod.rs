//! Helpers for the simulator's integration tests: start `inferlint sim serve` on a free port,
//! collect its output, talk HTTP to it, and kill everything it started when the test ends.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_inferlint");
const TAG_ENV: &str = "INFERLINT_SIM_TEST_TAG";

/// A simulated server started by a test. Dropping it SIGKILLs, by pid, every process it
/// started (found by a per-server tag in their environment) and reaps the API server.
pub struct Sim {
    child: Option<Child>,
    pub api_pid: u32,
    pub port: u16,
    pub tag: String,
    lines: Arc<Mutex<Vec<String>>>,
    pub gpu_dir: Option<tempfile::TempDir>,
}

pub struct SimBuilder {
    model: String,
    args: Vec<String>,
    envs: Vec<(String, String)>,
    gpu: bool,
    wait_ready: bool,
}

impl SimBuilder {
    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.to_string());
        self
    }

    pub fn args(mut self, a: &[&str]) -> Self {
        self.args.extend(a.iter().map(|s| s.to_string()));
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.envs.push((k.into(), v.into()));
        self
    }

    /// Give the server a simulated GPU folder (INFERLINT_GPU=sim:<tempdir>).
    pub fn gpu(mut self) -> Self {
        self.gpu = true;
        self
    }

    /// The model to serve (`m` unless set).
    pub fn model(mut self, m: &str) -> Self {
        self.model = m.to_string();
        self
    }

    /// Do not wait for the ready line (start-up failures).
    pub fn no_wait(mut self) -> Self {
        self.wait_ready = false;
        self
    }

    pub fn start(self) -> Sim {
        let tag = format!("{:016x}", rand_u64());
        let gpu_dir = self.gpu.then(|| tempfile::tempdir().expect("temp dir"));
        let engine = self
            .args
            .windows(2)
            .find(|w| w[0] == "--engine")
            .map(|w| w[1].clone());
        // TensorRT-LLM's log names no port (the recording has no `Uvicorn running on` line):
        // it gets a free one of the test's choosing.
        let trtllm = engine.as_deref() == Some("trtllm");
        let fixed_port = if trtllm { free_port() } else { 0 };
        let mut cmd = Command::new(BIN);
        cmd.args([
            "sim",
            "serve",
            &self.model,
            "--host",
            "127.0.0.1",
            "--port",
            &fixed_port.to_string(),
        ]);
        // SGLang is ready once its launcher's warm-up is answered, and names its port in
        // uvicorn's line; vLLM in its own listen line.
        let sglang = engine.as_deref() == Some("sglang");
        let (ready, listen) = if sglang {
            (
                "The server is fired up and ready to roll!",
                "Uvicorn running on http://",
            )
        } else {
            (
                "Application startup complete.",
                "Starting vLLM server on http://",
            )
        };
        if !self.args.iter().any(|a| a == "--boot-secs") {
            cmd.args(["--boot-secs", "0"]);
        }
        cmd.args(&self.args);
        cmd.env(TAG_ENV, &tag)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(d) = &gpu_dir {
            cmd.env("INFERLINT_GPU", format!("sim:{}", d.path().display()));
        }
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start inferlint sim serve");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().expect("piped stdout");
        let err = child.stderr.take().expect("piped stderr");
        for stream in [
            Box::new(out) as Box<dyn std::io::Read + Send>,
            Box::new(err),
        ] {
            let lines = lines.clone();
            // Detached: an orphaned engine may hold the pipes open after the test ends.
            thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let api_pid = child.id();
        let mut sim = Sim {
            child: Some(child),
            api_pid,
            port: 0,
            tag,
            lines,
            gpu_dir,
        };
        if self.wait_ready {
            assert!(
                sim.wait_for(ready, Duration::from_secs(20)),
                "no ready line:\n{}",
                sim.log()
            );
            if trtllm {
                sim.port = fixed_port;
                return sim;
            }
            // stdout and stderr are read on separate threads: wait for the listen line too.
            assert!(
                sim.wait_for(listen, Duration::from_secs(5)),
                "no listen line:\n{}",
                sim.log()
            );
            let log = sim.log();
            let line = log
                .lines()
                .find(|l| l.contains(listen))
                .expect("listen line");
            let after = &line[line.find(listen).unwrap() + listen.len()..];
            let digits: String = after
                .rsplit(':')
                .next()
                .unwrap()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            sim.port = digits.parse().expect("port in the listen line");
        }
        sim
    }
}

/// A port nothing listens on now (the kernel's pick for a socket closed at once).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind a free port");
    l.local_addr().expect("its address").port()
}

fn rand_u64() -> u64 {
    rand::random()
}

impl Sim {
    pub fn builder() -> SimBuilder {
        SimBuilder {
            model: "m".into(),
            args: Vec::new(),
            envs: Vec::new(),
            gpu: false,
            wait_ready: true,
        }
    }

    pub fn start(args: &[&str]) -> Sim {
        Sim::builder().args(args).start()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Everything the server printed so far (stdout and stderr, line by line).
    pub fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    pub fn wait_for(&self, needle: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self
                .lines
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains(needle))
            {
                return true;
            }
            thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// Waits for the API server to exit; its status, or None after `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                // Let the readers drain the last lines (an orphaned engine may keep the pipes
                // open, so they are not joined).
                thread::sleep(Duration::from_millis(100));
                return Some(st);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn signal_api(&self, sig: i32) {
        unsafe { libc::kill(self.api_pid as i32, sig) };
    }

    /// Live processes started by this server (API server, engine, workers), by pid.
    pub fn processes(&self) -> Vec<u32> {
        tagged_pids(&self.tag)
    }

    /// The engine process: the live tagged process whose argv[0] is `VLLM::EngineCore`.
    pub fn engine_pid(&self) -> Option<u32> {
        self.processes()
            .into_iter()
            .find(|&p| argv(p).first().is_some_and(|a| a == "VLLM::EngineCore"))
    }

    pub fn gpu_readings(&self) -> Vec<(u32, u64)> {
        let dir = self.gpu_dir.as_ref().expect("started with .gpu()");
        inferlint_host::gpu::sim::sim_gpu_readings(dir.path())
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        for _ in 0..3 {
            for pid in tagged_pids(&self.tag) {
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            thread::sleep(Duration::from_millis(20));
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Fields of /proc/PID/stat from field 3 on.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// True when the process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| !matches!(f[0].as_str(), "Z" | "X"))
}

pub fn ppid(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

pub fn session(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(3)?.parse().ok()
}

pub fn pgrp(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(2)?.parse().ok()
}

/// argv as /proc/PID/cmdline gives it, empty arguments dropped.
pub fn argv(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    raw.split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

pub fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

/// Live (non-zombie) processes whose environment carries `INFERLINT_SIM_TEST_TAG=tag`.
pub fn tagged_pids(tag: &str) -> Vec<u32> {
    let needle = format!("{TAG_ENV}={tag}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
                .unwrap_or(false)
        })
        .filter(|&p| alive(p))
        .collect()
}

/// Polls `cond` every 10 ms until it holds or `limit` passes.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// (status, body) of a GET.
pub fn get(url: &str) -> (u16, String) {
    block_on(async {
        let r = reqwest::Client::new()
            .get(url)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .expect("GET");
        let s = r.status().as_u16();
        (s, r.text().await.unwrap_or_default())
    })
}

/// (status, body) of a POST with a raw body and extra headers.
pub fn post(url: &str, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
    block_on(async {
        let mut req = reqwest::Client::new()
            .post(url)
            .body(body.to_string())
            .header("content-type", "application/json")
            .timeout(Duration::from_secs(30));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let r = req.send().await.expect("POST");
        let s = r.status().as_u16();
        (s, r.text().await.unwrap_or_default())
    })
}

pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The server's /metrics, parsed by inferlint's own reader.
pub fn metrics(sim: &Sim) -> (String, inferlint_core::prom::Metrics) {
    let (status, text) = get(&sim.url("/metrics"));
    assert_eq!(status, 200);
    let m = inferlint_core::prom::Metrics::parse(&text)
        .unwrap_or_else(|e| panic!("the simulator's /metrics does not parse: {e}"));
    (text, m)
}

/// Sends `n` streaming completions at once and waits for all of them; returns their bodies.
pub fn burst(sim: &Sim, n: usize, prompt_words: usize, max_tokens: u32) -> Vec<String> {
    burst_of(sim, &vec![(prompt_words, max_tokens); n])
}

/// Sends one streaming completion per `(prompt words, max_tokens)` at once; returns the bodies.
pub fn burst_of(sim: &Sim, requests: &[(usize, u32)]) -> Vec<String> {
    let url = sim.url("/v1/completions");
    let requests = requests.to_vec();
    block_on(async move {
        let client = reqwest::Client::new();
        let mut tasks = Vec::new();
        for (words, max_tokens) in requests {
            let prompt = vec!["word"; words].join(" ");
            let body = serde_json::json!({"prompt": prompt, "max_tokens": max_tokens, "ignore_eos": true,
                                          "stream": true, "stream_options": {"include_usage": true}});
            let req = client
                .post(&url)
                .json(&body)
                .timeout(Duration::from_secs(120));
            tasks.push(tokio::spawn(async move {
                req.send()
                    .await
                    .expect("POST")
                    .text()
                    .await
                    .unwrap_or_default()
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    })
}
