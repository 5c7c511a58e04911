//! The API server process (`inferlint sim serve`): it prints the API server's boot lines,
//! starts the engine process, serves HTTP once the engine is ready, and stops as vLLM's does —
//! on SIGTERM/SIGINT it logs the `[shutdown]` lines of its release, sends SIGTERM to the engine
//! and SIGKILLs it (and its workers) if they are still alive after the grace period; when the
//! engine dies under it, it fails the requests in flight, shuts down and exits 0.

pub(crate) mod engines;
pub(crate) mod front;
mod hostile;
pub(crate) mod http;
mod openai;
pub(crate) mod prefix;

use std::net::SocketAddr;
use std::process::Child;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use self::engines::EngineProc;
use self::front::{EngineState, Front, Interval};
use super::config::{FailKind, Release, ServeArgs, ServeConfig};
use super::failures;
use super::logline::{logo, py_str, sites, Logger};
use super::os::{self, unix_now};
use super::proto::{encode, ToApi, ToEngine};
use inferlint_core::Engine;

pub use self::http::ROUTES;

/// `inferlint sim serve`: returns the process exit status.
pub fn run_serve(args: ServeArgs) -> crate::error::SimResult<i32> {
    let cfg = ServeConfig::from_args(&args)?;
    let start_unix = unix_now();
    let log = match cfg.engine {
        Engine::Sglang => {
            let log = Logger::sglang(cfg.release, "APIServer", "");
            crate::sglang::boot::launcher_lines(&log, &cfg);
            log
        }
        Engine::Trtllm => {
            let log = Logger::trtllm(cfg.release, "trtllm-serve");
            // TensorRT-LLM's start-up failures end the launcher before any rank starts.
            if let Some(code) = crate::trtllm::boot::launcher_lines(&log, &cfg) {
                return Ok(code);
            }
            log
        }
        Engine::Vllm => vllm_boot_lines(&args, &cfg),
    };
    // vLLM binds its socket before starting the engine and serves once the engine is ready.
    let listener = match std::net::TcpListener::bind((cfg.host.as_str(), cfg.port)) {
        Ok(l) => l,
        Err(e) => {
            log.raw(&format!(
                "OSError: [Errno {}] {}",
                e.raw_os_error().unwrap_or(0),
                e
            ));
            return Ok(1);
        }
    };
    let port = listener.local_addr()?.port();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // The handlers are in place before the engines exist: a SIGTERM the moment an engine is
    // seen must reach the shutdown, not the default action that would orphan it.
    let stops = {
        let _in_runtime = rt.enter();
        StopSignals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        }
    };
    let started = engines::start(&cfg)?;
    let code = rt.block_on(serve(cfg, log, listener, port, started, start_unix, stops));
    rt.shutdown_timeout(Duration::from_millis(200));
    code
}

/// The API server's lines before it starts the engine (vLLM).
fn vllm_boot_lines(args: &ServeArgs, cfg: &ServeConfig) -> Logger {
    let log = Logger::new(cfg.release, "APIServer");
    let s = sites(cfg.release);
    log.info(s.logo, &logo(cfg.release.version(), &cfg.model));
    log.info(
        s.args,
        &format!("non-default args: {}", non_default_args(args, cfg)),
    );
    std::thread::sleep(Duration::from_secs_f64(cfg.boot_secs * 0.1));
    let arch = if cfg.hybrid {
        "Qwen3_5ForConditionalGeneration"
    } else {
        "Qwen3ForCausalLM"
    };
    log.info(s.arch, &format!("Resolved architecture: {arch}"));
    log.info(
        s.max_len,
        &format!("Using max model len {}", cfg.max_model_len),
    );
    if let Some(site) = s.chunked_prefill {
        log.info(
            site,
            &format!(
                "Chunked prefill is enabled with max_num_batched_tokens={}.",
                cfg.max_num_batched_tokens
            ),
        );
    }
    if cfg.enforce_eager {
        log.info(s.eager, "Cudagraph is disabled under eager mode");
    }
    if cfg.spec.is_some() {
        log.warn(
            "vllm.py:1605",
            "Async scheduling not supported with ngram-based speculative decoding and will be disabled.",
        );
    }
    log
}

/// The `non-default args` dict vLLM prints, in its field order.
fn non_default_args(a: &ServeArgs, cfg: &ServeConfig) -> String {
    let mut parts: Vec<String> = vec![format!("'model_tag': {}", py_str(&a.model))];
    parts.push(format!("'host': {}", py_str(&a.host)));
    if a.port != 8000 {
        parts.push(format!("'port': {}", a.port));
    }
    if a.api_key.is_some() {
        // vLLM 0.33 redacts secrets here; the simulator never prints a key in any release.
        parts.push("'api_key': '<redacted>'".into());
    }
    parts.push(format!("'model': {}", py_str(&a.model)));
    if a.max_model_len != 4096 {
        parts.push(format!("'max_model_len': {}", a.max_model_len));
    }
    if a.enforce_eager {
        parts.push("'enforce_eager': True".into());
    }
    if !a.served_model_name.is_empty() {
        let names: Vec<String> = a.served_model_name.iter().map(|n| py_str(n)).collect();
        parts.push(format!("'served_model_name': [{}]", names.join(", ")));
    }
    if let Some(b) = &a.attention_backend {
        parts.push(format!("'attention_backend': {}", py_str(b)));
    }
    if let Some(b) = cfg.user_block_size {
        parts.push(format!("'block_size': {b}"));
    }
    if let Some(g) = a.gpu_memory_utilization {
        parts.push(format!(
            "'gpu_memory_utilization': {}",
            super::expo::py_repr(g)
        ));
    }
    if cfg.tp > 1 {
        parts.push(format!("'tensor_parallel_size': {}", cfg.tp));
    }
    if cfg.dp > 1 {
        parts.push(format!("'data_parallel_size': {}", cfg.dp));
    }
    if let Some(n) = a.num_gpu_blocks_override {
        parts.push(format!("'num_gpu_blocks_override': {n}"));
    }
    if a.max_num_batched_tokens != 8192 {
        parts.push(format!(
            "'max_num_batched_tokens': {}",
            a.max_num_batched_tokens
        ));
    }
    if a.max_num_seqs != 256 {
        parts.push(format!("'max_num_seqs': {}", a.max_num_seqs));
    }
    if let Some(q) = a.max_num_queued_reqs {
        parts.push(format!("'max_num_queued_reqs': {q}"));
    }
    if let Some(s) = &cfg.spec {
        parts.push(format!("'speculative_config': {}", s.py_dict()));
    }
    format!("{{{}}}", parts.join(", "))
}

/// How the serving phase ended.
enum End {
    Signal(&'static str),
    EngineDied,
}

/// SIGTERM and SIGINT, registered before the engines start.
struct StopSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

async fn serve(
    cfg: ServeConfig,
    log: Logger,
    listener: std::net::TcpListener,
    port: u16,
    started: engines::Started,
    start_unix: f64,
    stops: StopSignals,
) -> crate::error::SimResult<i32> {
    let engines::Started {
        engines: mut procs,
        sockets,
        coordinator,
        detokenizer,
    } = started;
    if let Some(c) = coordinator.as_ref().filter(|_| log.is_vllm()) {
        log.info(
            "utils.py:1245",
            &format!("Started DP Coordinator process (PID: {})", c.child.id()),
        );
    }
    // Every engine's messages arrive tagged with its rank; None when its socket closed.
    let (from_engine_tx, mut from_engine) = mpsc::unbounded_channel::<(usize, Option<ToApi>)>();
    let mut to_engines = Vec::new();
    for (rank, api_end) in sockets.into_iter().enumerate() {
        api_end.set_nonblocking(true)?;
        let sock = tokio::net::UnixStream::from_std(api_end)?;
        let (read_half, mut write_half) = sock.into_split();
        let (to_engine, mut to_engine_rx) = mpsc::unbounded_channel::<ToEngine>();
        tokio::spawn(async move {
            let mut buf = Vec::new();
            while let Some(msg) = to_engine_rx.recv().await {
                buf.clear();
                buf.extend(encode(&msg));
                while let Ok(more) = to_engine_rx.try_recv() {
                    buf.extend(encode(&more));
                }
                if write_half.write_all(&buf).await.is_err() {
                    break;
                }
            }
        });
        to_engines.push(to_engine);
        let tx = from_engine_tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::with_capacity(256 * 1024, read_half).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(msg) = serde_json::from_str::<ToApi>(&line) {
                    if tx.send((rank, Some(msg))).is_err() {
                        return;
                    }
                }
            }
            let _ = tx.send((rank, None));
        });
    }
    drop(from_engine_tx);
    let StopSignals {
        term: mut sigterm,
        int: mut sigint,
    } = stops;
    let front = Front::new(cfg.clone(), log.clone(), to_engines, start_unix);

    // Boot: wait for every engine. With `--boot-never-ends` their handshake is never taken,
    // and the API server says it is still waiting, again and again.
    let mut still_waiting = tokio::time::interval(hostile::NEVER_ENDING_BOOT_LINE_EVERY);
    let mut ready = vec![false; procs.len()];
    loop {
        tokio::select! {
            _ = still_waiting.tick(), if cfg.boot_never_ends => hostile::log_still_waiting(&log),
            msg = from_engine.recv() => match msg {
                Some((rank, Some(ToApi::Hello { pid }))) => procs[rank].pid = pid,
                Some((_, Some(ToApi::Ready { .. }))) if cfg.boot_never_ends => {}
                Some((rank, Some(ToApi::Ready { .. }))) => {
                    ready[rank] = true;
                    if ready.iter().all(|r| *r) {
                        break;
                    }
                }
                Some((_, Some(ToApi::Out(_)))) => {}
                Some((_, None)) | None => {
                    // An engine failed to start (it has exited): the others are stopped
                    // quietly, and the API server prints its failure and exits.
                    for p in &procs {
                        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGTERM);
                    }
                    for p in &mut procs {
                        let _ = p.child.wait();
                    }
                    if cfg.engine == Engine::Sglang {
                        crate::sglang::failures::print_launcher_failure(&log);
                        // SGLang's kill_process_tree ends the launcher too, with SIGKILL.
                        let _ = kill(Pid::this(), Signal::SIGKILL);
                    }
                    failures::print_api_boot_failure(&log, cfg.fail_boot.unwrap_or(FailKind::RuntimeError));
                    return Ok(1);
                }
            },
            _ = sigterm.recv() => return Ok(shutdown(&front, &mut procs, "SIGTERM", false).await),
            _ = sigint.recv() => return Ok(shutdown(&front, &mut procs, "SIGINT", false).await),
        }
    }
    {
        let mut st = front.lock();
        st.reg.engine_initialized(&cfg, unix_now());
        st.reg
            .engine_pids(&procs.iter().map(|p| p.pid).collect::<Vec<_>>());
    }
    tokio::time::sleep(Duration::from_secs_f64(cfg.boot_secs * 0.1)).await;
    match cfg.engine {
        Engine::Sglang => crate::sglang::boot::uvicorn_lines(&log, &cfg, port),
        Engine::Trtllm => crate::trtllm::boot::server_lines(&log, &cfg, start_unix),
        Engine::Vllm => vllm_ready_lines(&log, &cfg, port),
    }

    listener.set_nonblocking(true)?;
    // uvicorn's asyncio transports set TCP_NODELAY; without it a streamed body waits for the
    // client's delayed ACK of the headers (about 40 ms a request).
    let listener = tokio::net::TcpListener::from_std(listener)?.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let app = http::router(front.clone());
    let server = tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async move {
            let _ = stop_rx.await;
        })
        .await;
    });
    let stats = tokio::spawn(stats_loop(front.clone()));
    if cfg.engine == Engine::Sglang {
        tokio::spawn(crate::sglang::http::warm_up(front.clone(), port));
    }

    let end = loop {
        tokio::select! {
            msg = from_engine.recv() => match msg {
                Some((rank, Some(ToApi::Out(batch)))) => front.apply(rank, batch),
                Some((_, Some(_))) => {}
                Some((_, None)) | None => break End::EngineDied,
            },
            _ = sigterm.recv() => break End::Signal("SIGTERM"),
            _ = sigint.recv() => break End::Signal("SIGINT"),
        }
    };
    stats.abort();
    let code = match end {
        End::Signal(sig) => shutdown(&front, &mut procs, sig, true).await,
        End::EngineDied => engine_died(&front, &mut procs).await,
    };
    drop(coordinator);
    drop(detokenizer);
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(2), server).await;
    if cfg.engine != Engine::Trtllm {
        // TensorRT-LLM's lifespan shutdown has logged this before stopping its ranks.
        log.uvicorn("Waiting for application shutdown.");
    }
    log.uvicorn("Application shutdown complete.");
    let v033_died = cfg.release == Release::V033 && matches!(end, End::EngineDied);
    if cfg.engine == Engine::Trtllm || v033_died {
        log.uvicorn(&format!("Finished server process [{}]", std::process::id()));
    }
    Ok(code)
}

/// vLLM's lines once every engine is ready: the routes, then uvicorn's start-up.
fn vllm_ready_lines(log: &Logger, cfg: &ServeConfig, port: u16) {
    let s = sites(cfg.release);
    log.info(s.tasks, "Supported tasks: ['generate']");
    log.info(
        s.listen,
        &format!("Starting vLLM server on http://{}:{port}", cfg.host),
    );
    log.info(s.routes_head, "Available routes are:");
    for (route, methods) in ROUTES {
        log.info(s.route, &format!("Route: {route}, Methods: {methods}"));
    }
    log.uvicorn(&format!("Started server process [{}]", std::process::id()));
    log.uvicorn("Waiting for application startup.");
    log.uvicorn("Application startup complete.");
}

/// SIGKILLs the engines still alive, logging as vLLM's process manager does.
fn force_kill_engines(log: &Logger, procs: &[EngineProc]) {
    let s = sites(log.release);
    let alive: Vec<&EngineProc> = procs.iter().filter(|p| os::is_alive(p.pid)).collect();
    if alive.is_empty() {
        return;
    }
    if log.is_vllm() {
        log.warn(
            s.procman[1],
            &format!(
                "[shutdown] Process manager: force killing remaining processes count={}",
                alive.len()
            ),
        );
    }
    for p in alive {
        if log.is_vllm() {
            log.warn(
                s.procman[2],
                &format!(
                    "[shutdown] Process manager: force killing remaining process {} pid {}",
                    p.name, p.pid
                ),
            );
        }
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGKILL);
    }
}

/// SIGTERM to every engine, then SIGKILL for those still alive after `grace`, then their
/// children (workers) that outlived them. Returns once they are gone (or 5 s more passed).
pub(crate) async fn stop_engines(log: &Logger, procs: &mut [EngineProc], grace: Duration) {
    let s = sites(log.release);
    let kids: Vec<u32> = procs.iter().flat_map(|p| os::children_of(p.pid)).collect();
    for p in procs.iter() {
        if log.is_vllm() {
            log.info(
                s.procman[0],
                &format!(
                    "[shutdown] Process manager: send sigterm to process {}",
                    p.name
                ),
            );
        }
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGTERM);
    }
    if !wait_all_gone(procs, grace).await {
        force_kill_engines(log, procs);
        wait_all_gone(procs, Duration::from_secs(5)).await;
    }
    // Workers follow their engine through its death pipe; kill any that did not.
    tokio::time::sleep(Duration::from_millis(20)).await;
    force_kill_subprocesses(log, &kids);
}

async fn wait_all_gone(procs: &mut [EngineProc], limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    for p in procs.iter_mut() {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if !wait_gone(&mut p.child, p.pid, left).await {
            return false;
        }
    }
    true
}

/// SIGKILLs the engine's children (TP workers) that outlived it.
fn force_kill_subprocesses(log: &Logger, kids: &[u32]) {
    let s = sites(log.release);
    for &k in kids {
        if os::is_alive(k) {
            let name = std::fs::read_to_string(format!("/proc/{k}/cmdline"))
                .ok()
                .and_then(|c| c.split('\0').next().map(str::to_string))
                .unwrap_or_default();
            if log.is_vllm() {
                log.warn(
                    s.subprocess_kill,
                    &format!("[shutdown] force killing sub process {name} pid {k}"),
                );
            }
            let _ = kill(Pid::from_raw(k as i32), Signal::SIGKILL);
        }
    }
}

/// Waits until `pid` is gone (reaping it when it is our child), up to `limit`.
async fn wait_gone(child: &mut Child, pid: u32, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let _ = child.try_wait();
        if !os::is_alive(pid) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// vLLM's orderly stop on SIGTERM/SIGINT.
async fn shutdown(front: &Arc<Front>, procs: &mut [EngineProc], _sig: &str, serving: bool) -> i32 {
    let log = &front.log;
    let s = sites(log.release);
    let timeout = front.cfg.shutdown_timeout;
    let mode = if timeout > 0 { "drain" } else { "abort" };
    front.stopping.store(true, Ordering::SeqCst);
    if front.cfg.engine == Engine::Trtllm {
        return crate::trtllm::boot::shutdown(front, procs, serving).await;
    }
    if !log.is_vllm() {
        // SGLang's launcher kills its process tree and leaves with uvicorn's lines only.
        let grace = Duration::from_secs(timeout as u64).max(Duration::from_millis(50));
        stop_engines(log, procs, grace).await;
        front.fail_all(500, "The server is shutting down; the request was aborted.");
        if serving {
            log.uvicorn("Shutting down");
        }
        return 0;
    }
    log.info(
        s.api_shutdown[0],
        "[shutdown] API server: shutdown triggered",
    );
    log.info(
        s.api_shutdown[1],
        &format!("[shutdown] API server: stopping engine client mode={mode} timeout={timeout}s"),
    );
    log.info(
        s.client[0],
        &format!("[shutdown] MPClient: start timeout={timeout}s"),
    );
    log.info(s.client[1], "[shutdown] MPClient: stopping engine manager");
    let grace = Duration::from_secs(timeout as u64).max(Duration::from_millis(50));
    stop_engines(log, procs, grace).await;
    log.info(s.client[2], "[shutdown] MPClient: engine manager stopped");
    log.info(
        s.client[3],
        "[shutdown] MPClient: cleaning up background resources",
    );
    log.info(s.client[4], "[shutdown] MPClient: complete");
    front.fail_all(500, "The server is shutting down; the request was aborted.");
    log.info(
        s.api_shutdown[2],
        "[shutdown] API server: engine client stopped",
    );
    log.info(
        s.api_shutdown[3],
        "[shutdown] API server: signalling HTTP server shutdown",
    );
    log.info(
        s.api_shutdown[4],
        "[shutdown] API server: shutting down FastAPI HTTP server",
    );
    if serving {
        log.uvicorn("Shutting down");
    }
    0
}

/// An engine process is gone while serving (killed, or a fatal error): the others are
/// stopped with it, as vLLM's engine manager does.
async fn engine_died(front: &Arc<Front>, procs: &mut [EngineProc]) -> i32 {
    let log = &front.log;
    let s = sites(log.release);
    front.engine_dead.store(true, Ordering::SeqCst);
    log.warn(
        s.client_unexpected,
        "[shutdown] MPClient: engine core exited unexpectedly; starting cleanup",
    );
    log.info(s.client[0], "[shutdown] MPClient: start timeout=default");
    log.info(s.client[1], "[shutdown] MPClient: stopping engine manager");
    stop_engines(log, procs, Duration::from_millis(200)).await;
    log.info(s.client[2], "[shutdown] MPClient: engine manager stopped");
    log.info(
        s.client[3],
        "[shutdown] MPClient: cleaning up background resources",
    );
    log.info(s.client[4], "[shutdown] MPClient: complete");
    failures::print_engine_dead(log);
    front.fail_all(
        500,
        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    );
    // /health answers 503 for a moment before the server goes, as vLLM's does.
    tokio::time::sleep(Duration::from_millis(500)).await;
    log.uvicorn("Shutting down");
    for p in procs.iter_mut() {
        let _ = p.child.try_wait();
    }
    0
}

/// The periodic `Engine 000: Avg prompt throughput: …` line (every VLLM_LOG_STATS_INTERVAL s).
async fn stats_loop(front: Arc<Front>) {
    if !front.cfg.log_stats {
        return;
    }
    match front.cfg.engine {
        Engine::Sglang => return crate::sglang::boot::decode_log_loop(front).await,
        // TensorRT-LLM prints no periodic line (`print_iter_log` is off by default).
        Engine::Trtllm => return,
        Engine::Vllm => {}
    }
    let every: f64 = std::env::var("VLLM_LOG_STATS_INTERVAL")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v: &f64| *v > 0.0)
        .unwrap_or(10.0);
    let mut last_busy = vec![false; front.to_engine.len()];
    let mut tick = tokio::time::interval(Duration::from_secs_f64(every));
    tick.tick().await;
    loop {
        tick.tick().await;
        let (per, st_prefix): (Vec<(Interval, EngineState)>, Vec<front::PrefixTotals>) = {
            let mut st = front.lock();
            let engines = st.engines.clone();
            let totals = st.prefix_totals.clone();
            let per = st
                .interval
                .iter_mut()
                .map(std::mem::take)
                .zip(engines)
                .collect::<Vec<_>>();
            (per, totals)
        };
        // One line per engine, `Engine 000:`, `Engine 001:`, … as vLLM's logging stat logger.
        for (e, (iv, es)) in per.into_iter().enumerate() {
            let busy = iv.prompt_tokens > 0 || iv.generation_tokens > 0;
            if !(busy || last_busy[e]) {
                continue;
            }
            last_busy[e] = busy;
            let mut parts = vec![
                format!(
                    "Avg prompt throughput: {:.1} tokens/s",
                    iv.prompt_tokens as f64 / every
                ),
                format!(
                    "Avg generation throughput: {:.1} tokens/s",
                    iv.generation_tokens as f64 / every
                ),
                format!("Running: {} reqs", es.running),
                format!("Waiting: {} reqs", es.waiting),
            ];
            let r = front.cfg.release;
            if r == Release::V033 && iv.preemptions > 0 {
                parts.push(format!("Preemptions: {}", iv.preemptions));
            }
            parts.push(format!("GPU KV cache usage: {:.1}%", es.kv_usage * 100.0));
            if r != Release::V033 || iv.prefix_queries > 0 {
                // vLLM's rate is over its recent requests; since the start is the same for runs
                // shorter than its window of 1,000 requests.
                let t = st_prefix.get(e).copied().unwrap_or_default();
                let rate = if t.queries > 0 {
                    t.hits as f64 / t.queries as f64 * 100.0
                } else {
                    0.0
                };
                parts.push(format!("Prefix cache hit rate: {rate:.1}%"));
            }
            front.log.info(
                sites(r).stats,
                &format!("Engine {e:03}: {}", parts.join(", ")),
            );
        }
    }
}
