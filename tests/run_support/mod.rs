//! Shared by the run, probe and demo tests: small mock inference servers (axum on
//! 127.0.0.1:0, one per engine) and helpers to run the real binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferlint")
}

/// Runs the binary with a hard time limit (a hung run fails the test instead of hanging CI).
pub fn inferlint(args: &[&str], envs: &[(&str, &str)], limit: Duration) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env_remove("INFERLINT_ENGINE")
        .env("NO_COLOR", "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    run_with_limit(cmd, limit)
}

/// Runs a command, killing it if it outlives `limit`.
pub fn run_with_limit(mut cmd: Command, limit: Duration) -> Output {
    use std::process::Stdio;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("the binary starts");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send(());
        out
    });
    if rx.recv_timeout(limit).is_err() {
        // SAFETY: kill with a pid we started; at worst ESRCH.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
        let out = waiter.join().unwrap().unwrap();
        panic!(
            "timed out after {limit:?}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    waiter.join().unwrap().expect("the binary ran")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MockEngine {
    Vllm,
    Sglang,
    Trtllm,
}

/// How a mock server behaves.
#[derive(Clone, Debug)]
pub struct MockConfig {
    pub engine: MockEngine,
    pub model: String,
    /// Dies (stops answering anything) when this completion request arrives (1 = the first).
    pub die_at: Option<u64>,
    /// Answers completions with no text and no tokens.
    pub empty: bool,
}

impl MockConfig {
    pub fn new(engine: MockEngine, model: &str) -> MockConfig {
        MockConfig {
            engine,
            model: model.to_string(),
            die_at: None,
            empty: false,
        }
    }
}

/// What the mock counted.
#[derive(Default)]
pub struct MockState {
    pub completions: AtomicU64,
    pub finished: AtomicU64,
    pub tokens: AtomicU64,
    pub prompt_tokens: AtomicU64,
    die: tokio::sync::Notify,
}

struct App {
    cfg: MockConfig,
    state: Arc<MockState>,
}

/// A mock server on 127.0.0.1, in its own thread and runtime; stopped on drop.
pub struct Mock {
    pub url: String,
    pub state: Arc<MockState>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Mock {
    pub fn start(cfg: MockConfig) -> Mock {
        let state = Arc::new(MockState::default());
        let app = Arc::new(App {
            cfg,
            state: state.clone(),
        });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let st = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let listener = rt
                .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
                .unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let router = Router::new()
                .route("/health", get(|| async { StatusCode::OK }))
                .route("/v1/models", get(models))
                .route("/version", get(version))
                .route("/get_server_info", get(server_info))
                .route("/metrics", get(metrics))
                .route("/prometheus/metrics", get(prometheus_metrics))
                .route("/v1/completions", post(completions))
                .with_state(app);
            rt.spawn(async move {
                let _ = axum::serve(listener, router).await;
            });
            rt.block_on(async {
                tokio::select! {
                    _ = stop_rx => {}
                    _ = st.die.notified() => {}
                }
            });
            // Dropping the runtime closes the listener and every open connection: to a client
            // the server is gone.
            rt.shutdown_background();
        });
        let addr = addr_rx.recv().unwrap();
        Mock {
            url: format!("http://{addr}"),
            state,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    pub fn finished(&self) -> u64 {
        self.state.finished.load(Ordering::SeqCst)
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn models(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!({"object": "list", "data": [{"id": app.cfg.model, "object": "model"}]}))
}

/// vLLM and TensorRT-LLM answer `/version`; SGLang answers `/get_server_info`.
async fn version(State(app): State<Arc<App>>) -> Response {
    if app.cfg.engine == MockEngine::Sglang {
        return StatusCode::NOT_FOUND.into_response();
    }
    Json(json!({"version": "0.0.1"})).into_response()
}

async fn server_info(State(app): State<Arc<App>>) -> Response {
    if app.cfg.engine != MockEngine::Sglang {
        return StatusCode::NOT_FOUND.into_response();
    }
    Json(json!({"version": "0.0.1", "max_total_num_tokens": 1000})).into_response()
}

async fn completions(State(app): State<Arc<App>>, Json(body): Json<Value>) -> Response {
    let n = app.state.completions.fetch_add(1, Ordering::SeqCst) + 1;
    if app.cfg.die_at.is_some_and(|k| n >= k) {
        app.state.die.notify_one();
        std::future::pending::<()>().await;
    }
    let max_tokens = body.get("max_tokens").and_then(Value::as_u64).unwrap_or(16);
    if app.cfg.empty {
        return Json(json!({
            "id": "cmpl-0", "object": "text_completion", "model": app.cfg.model,
            "choices": [{"index": 0, "text": "", "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 8, "completion_tokens": 0, "total_tokens": 8}
        }))
        .into_response();
    }
    app.state.finished.fetch_add(1, Ordering::SeqCst);
    app.state.tokens.fetch_add(max_tokens, Ordering::SeqCst);
    app.state.prompt_tokens.fetch_add(8, Ordering::SeqCst);
    Json(json!({
        "id": format!("cmpl-{n}"), "object": "text_completion", "model": app.cfg.model,
        "choices": [{"index": 0, "text": " sunny".repeat(max_tokens as usize), "finish_reason": "length"}],
        "usage": {"prompt_tokens": 8, "completion_tokens": max_tokens, "total_tokens": 8 + max_tokens}
    }))
    .into_response()
}

fn prom_text(app: &App) -> String {
    let f = app.state.finished.load(Ordering::SeqCst) as f64;
    let t = app.state.tokens.load(Ordering::SeqCst) as f64;
    let p = app.state.prompt_tokens.load(Ordering::SeqCst) as f64;
    let m = &app.cfg.model;
    match app.cfg.engine {
        MockEngine::Vllm => format!(
            "# TYPE vllm:num_requests_running gauge\n\
vllm:num_requests_running{{engine=\"0\",model_name=\"{m}\"}} 0.0\n\
# TYPE vllm:num_requests_waiting gauge\n\
vllm:num_requests_waiting{{engine=\"0\",model_name=\"{m}\"}} 0.0\n\
# TYPE vllm:kv_cache_usage_perc gauge\n\
vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"{m}\"}} 0.0\n\
# TYPE vllm:num_preemptions_total counter\n\
vllm:num_preemptions_total{{engine=\"0\",model_name=\"{m}\"}} 0.0\n\
# TYPE vllm:prompt_tokens_total counter\n\
vllm:prompt_tokens_total{{engine=\"0\",model_name=\"{m}\"}} {p:.1}\n\
# TYPE vllm:generation_tokens_total counter\n\
vllm:generation_tokens_total{{engine=\"0\",model_name=\"{m}\"}} {t:.1}\n\
# TYPE vllm:request_success_total counter\n\
vllm:request_success_total{{engine=\"0\",finished_reason=\"length\",model_name=\"{m}\"}} {f:.1}\n\
vllm:request_success_total{{engine=\"0\",finished_reason=\"stop\",model_name=\"{m}\"}} 0.0\n\
# TYPE vllm:cache_config_info gauge\n\
vllm:cache_config_info{{block_size=\"16\",num_gpu_blocks=\"1000\"}} 1.0\n"
        ),
        MockEngine::Sglang => format!(
            "# TYPE sglang:num_running_reqs gauge\n\
sglang:num_running_reqs{{model_name=\"{m}\"}} 0.0\n\
sglang:num_queue_reqs{{model_name=\"{m}\"}} 0.0\n\
sglang:token_usage{{model_name=\"{m}\"}} 0.0\n\
sglang:num_retracted_reqs{{model_name=\"{m}\"}} 0.0\n\
sglang:prompt_tokens_total{{model_name=\"{m}\"}} {p:.1}\n\
sglang:generation_tokens_total{{model_name=\"{m}\"}} {t:.1}\n\
sglang:num_requests_total{{model_name=\"{m}\"}} {f:.1}\n"
        ),
        MockEngine::Trtllm => format!(
            "trtllm_num_requests_running{{model_name=\"{m}\"}} 0.0\n\
trtllm_num_requests_waiting{{model_name=\"{m}\"}} 0.0\n\
trtllm_kv_cache_utilization{{model_name=\"{m}\"}} 0.0\n\
trtllm_num_paused_requests{{model_name=\"{m}\"}} 0.0\n\
trtllm_prompt_tokens_total{{model_name=\"{m}\"}} {p:.1}\n\
trtllm_generation_tokens_total{{model_name=\"{m}\"}} {t:.1}\n\
trtllm_request_success_total{{finished_reason=\"length\",model_name=\"{m}\"}} {f:.1}\n"
        ),
    }
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    if app.cfg.engine == MockEngine::Trtllm {
        return Json(json!([{"iter": 1}])).into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        prom_text(&app),
    )
        .into_response()
}

async fn prometheus_metrics(State(app): State<Arc<App>>) -> Response {
    if app.cfg.engine != MockEngine::Trtllm {
        return StatusCode::NOT_FOUND.into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        prom_text(&app),
    )
        .into_response()
}

/// Reads a JSON file.
/// A run started with its stdout piped: a thread collects every line and says on the channel
/// when the load has begun (the `== load:` line); its handle gives the whole output.
pub type Watched = (
    std::process::Child,
    std::sync::mpsc::Receiver<()>,
    std::thread::JoinHandle<String>,
);

/// Spawns `cmd` (its stdout piped by this function) and watches its output for the load's start.
pub fn spawn_watching_load(mut cmd: Command) -> Watched {
    use std::io::{BufRead, BufReader};
    cmd.stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let rest = std::thread::spawn(move || {
        let mut all = String::new();
        let mut l = String::new();
        while reader.read_line(&mut l).unwrap_or(0) > 0 {
            if l.starts_with("== load:") {
                let _ = tx.send(());
            }
            all.push_str(&l);
            l.clear();
        }
        all
    });
    (child, rx, rest)
}

/// A process of the same user titled `VLLM::EngineCore`, started by the test itself: a run
/// must leave it alone.
pub struct Bystander(std::process::Child);

impl Bystander {
    pub fn start() -> Bystander {
        use std::os::unix::process::CommandExt;
        Bystander(
            Command::new("sleep")
                .arg0("VLLM::EngineCore")
                .arg("300")
                .spawn()
                .unwrap(),
        )
    }

    pub fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn json_file(p: &Path) -> Value {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The statuses per tripwire in a results.json.
pub fn statuses(results: &Value) -> Vec<(String, String)> {
    results
        .as_array()
        .expect("results.json is an array")
        .iter()
        .map(|r| {
            (
                r["tripwire"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The status of the last result of a tripwire.
pub fn status_of(results: &Value, t: &str) -> Option<String> {
    statuses(results)
        .into_iter()
        .rev()
        .find(|(id, _)| id == t)
        .map(|(_, s)| s)
}

/// The message of the last result of a tripwire.
pub fn message_of(results: &Value, t: &str) -> Option<String> {
    results
        .as_array()?
        .iter()
        .rev()
        .find(|r| r["tripwire"] == t)
        .map(|r| r["message"].as_str().unwrap_or("").to_string())
}

/// The exit status of a run whose every check should be decided: 0, or 2 when the machine's
/// wall clock stepped during the load (a VM's clock corrected mid-test), which makes T10
/// "can't tell" by its rule (docs/tripwires.md, T10) and nothing else. The step is printed.
pub fn clean_exit_code(results: &Value) -> i32 {
    let stepped = status_of(results, "T10").as_deref() == Some("unknown")
        && message_of(results, "T10").is_some_and(|m| m.contains("the wall clock stepped"));
    let others_decided = statuses(results)
        .iter()
        .all(|(t, s)| t == "T10" || s != "unknown");
    if stepped && others_decided {
        eprintln!(
            "the wall clock stepped during this run: {:?}",
            message_of(results, "T10")
        );
        2
    } else {
        0
    }
}

pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

pub fn path_str(p: &Path) -> String {
    p.display().to_string()
}

/// Every file name in a folder.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn out_dir(base: &Path, name: &str) -> PathBuf {
    base.join(name)
}

/// A free port on loopback (bound and released; the test starts its server on it at once).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One run test's world: a folder, a simulated GPU of its own (whose name marks every process
/// the run starts, so they can be found afterwards), a port. Each test file adds the commands
/// it runs in an `impl World` of its own.
pub struct World {
    pub dir: tempfile::TempDir,
    pub port: u16,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("gpu")).unwrap();
        World {
            dir,
            port: free_port(),
        }
    }

    /// The run folder.
    pub fn out(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    /// `INFERLINT_GPU` for this world's simulated GPU.
    pub fn gpu_env(&self) -> String {
        format!("sim:{}", self.dir.path().join("gpu").display())
    }

    /// The `--serve` command of a simulated vLLM on this world's port.
    pub fn sim_serve(&self, boot_secs: &str, extra: &str) -> String {
        format!(
            "{} sim serve m --port {} --boot-secs {boot_secs} {extra}",
            shlex::try_quote(bin()).unwrap(),
            self.port
        )
    }

    /// A simulated vLLM of the test's own on this world's port (for attach mode), started and
    /// listening; the caller ends it.
    pub fn start_sim_server(&self, extra: &str) -> std::process::Child {
        let serve = shlex::split(&self.sim_serve("0.2", extra)).unwrap();
        let child = Command::new(&serve[0])
            .args(&serve[1..])
            .env("INFERLINT_GPU", self.gpu_env())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the simulated server did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }

    /// The load command: the simulator's `vllm bench serve` against this world's port.
    pub fn sim_bench(&self, extra: &str) -> Vec<String> {
        let mut v: Vec<String> = [bin(), "sim", "bench", "--port", &self.port.to_string()]
            .iter()
            .chain(&["--model", "m"])
            .map(|s| s.to_string())
            .collect();
        v.extend(shlex::split(extra).unwrap());
        v
    }

    /// `inferlint run -o RUN ARGS -- LOAD` in this world: its folder, its simulated GPU, no
    /// engine or API key from the caller's environment, no colour.
    pub fn run_command(&self, args: &[String], load: &[String]) -> Command {
        self.run_command_in(&self.out(), args, load)
    }

    /// `inferlint run --serve SERVE ARGS -- LOAD` in this world.
    pub fn command(&self, serve: &str, args: &[&str], load: &[String]) -> Command {
        let args: Vec<String> = ["--serve", serve]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect();
        self.run_command(&args, load)
    }

    /// The run folder's results.json.
    pub fn results(&self) -> Value {
        json_file(&self.out().join("results.json"))
    }

    /// [`World::run_command`] with the run folder `out`, for a test of several runs.
    pub fn run_command_in(&self, out: &Path, args: &[String], load: &[String]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.arg("run")
            .arg("-o")
            .arg(out)
            .args(args)
            .arg("--")
            .args(load)
            .env_remove("INFERLINT_ENGINE")
            .env_remove("OPENAI_API_KEY")
            .env("INFERLINT_GPU", self.gpu_env())
            .env("NO_COLOR", "1")
            .current_dir(self.dir.path());
        cmd
    }

    /// Live processes whose environment names this world's simulated GPU: the server, its
    /// engine, the load.
    pub fn live_processes(&self) -> Vec<(i32, String)> {
        // This world's simulated GPUs: its own, and any a test gives another node
        // (`gpu-node1`) under the same folder.
        let marker = format!("INFERLINT_GPU={}", self.gpu_env());
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(env) = std::fs::read(e.path().join("environ")) else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            if stat.contains(") Z ") {
                continue;
            }
            if env
                .split(|b| *b == 0)
                .any(|v| v.starts_with(marker.as_bytes()))
            {
                let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                found.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
            }
        }
        found
    }
}
