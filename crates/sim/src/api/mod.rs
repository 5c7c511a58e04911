//! The API server process (`inferlint sim serve`): it prints the API server's boot lines,
//! starts the engine process, serves HTTP once the engine is ready, and stops as vLLM's does —
//! on SIGTERM/SIGINT it logs the `[shutdown]` lines of its release, sends SIGTERM to the engine
//! and SIGKILLs it (and its workers) if they are still alive after the grace period; when the
//! engine dies under it, it fails the requests in flight, shuts down and exits 0.

pub(crate) mod engines;
pub(crate) mod front;
mod hostile;
pub(crate) mod http;
pub(crate) mod offload;
mod openai;
pub(crate) mod prefix;
pub(crate) mod procs;
mod request;
pub(crate) mod reset;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use self::front::{Front, Quirks};
use self::procs::{stop_engines, EngineProc};
use crate::config::ServeArgs;
use crate::failures;
use crate::logline::{sites, Logger};
use crate::os::unix_now;
use crate::proto::{encode, ToApi, ToEngine};
use crate::registry;
use crate::settings::{FailKind, ServeConfig};
use crate::surface::Surface;

pub use self::http::ROUTES;

/// `inferlint sim serve`: returns the process exit status.
pub fn run_serve(args: ServeArgs) -> crate::error::SimResult<i32> {
    let cfg = ServeConfig::from_args(&args)?;
    let sim = registry::surface(cfg.engine);
    let start_unix = unix_now();
    let log = match sim.launch(&cfg) {
        Ok(log) => log,
        Err(code) => return Ok(code),
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
    let started = engines::start(sim, &cfg)?;
    let server = Server {
        sim,
        cfg,
        log,
        port,
        start_unix,
    };
    let code = rt.block_on(server.serve(listener, started, stops));
    rt.shutdown_timeout(Duration::from_millis(200));
    code
}

/// How the serving phase ended.
enum End {
    Signal,
    EngineDied,
}

/// SIGTERM and SIGINT, registered before the engines start.
struct StopSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

/// Every engine's messages, tagged with its rank; None when its socket closed.
type FromEngines = mpsc::UnboundedReceiver<(usize, Option<ToApi>)>;

/// The API server once its socket is bound: the engine it simulates and what it was started with.
struct Server {
    sim: &'static dyn Surface,
    cfg: ServeConfig,
    log: Logger,
    port: u16,
    start_unix: f64,
}

impl Server {
    async fn serve(
        self,
        listener: std::net::TcpListener,
        started: engines::Started,
        stops: StopSignals,
    ) -> crate::error::SimResult<i32> {
        let engines::Started {
            engines: mut procs,
            sockets,
            coordinator,
            detokenizer,
        } = started;
        if let Some(c) = coordinator.as_ref().filter(|_| self.log.is_vllm()) {
            self.log.info(
                "utils.py:1245",
                &format!("Started DP Coordinator process (PID: {})", c.child.id()),
            );
        }
        let (to_engines, mut from_engine) = connect(sockets)?;
        let StopSignals {
            term: mut sigterm,
            int: mut sigint,
        } = stops;
        let (cfg, sim) = (&self.cfg, self.sim);
        let reg = sim.exposition(cfg, self.start_unix, unix_now());
        let quirks = Quirks {
            starts_warm: sim.starts_warm(),
            label_every_path: sim.label_every_path(),
            more_routes: sim.more_routes(),
        };
        let front = Front::new(cfg.clone(), self.log.clone(), to_engines, reg, quirks);
        tokio::select! {
            ready = self.boot(&mut procs, &mut from_engine) => if let Err(code) = ready {
                return Ok(code);
            },
            _ = sigterm.recv() => return Ok(self.shutdown(&front, &mut procs, false).await),
            _ = sigint.recv() => return Ok(self.shutdown(&front, &mut procs, false).await),
        }
        {
            let mut st = front.lock();
            st.reg.engine_initialized(cfg, unix_now());
            st.reg
                .engine_pids(&procs.iter().map(|p| p.pid).collect::<Vec<_>>());
        }
        tokio::time::sleep(Duration::from_secs_f64(cfg.boot_secs * 0.1)).await;
        sim.serving_lines(&self.log, cfg, self.port, self.start_unix);
        let (stop_tx, server) = self.http(listener, &front)?;
        let stats = cfg
            .log_stats
            .then(|| sim.stats_loop(front.clone()))
            .flatten()
            .map(tokio::spawn);
        if let Some(warm_up) = sim.warm_up(front.clone(), self.port) {
            tokio::spawn(warm_up);
        }

        let end = loop {
            tokio::select! {
                msg = from_engine.recv() => match msg {
                    Some((rank, Some(ToApi::Out(batch)))) => front.apply(rank, batch),
                    Some((rank, Some(ToApi::CacheReset { success }))) => {
                        front.reset_answered(rank, success);
                    }
                    Some((_, Some(_))) => {}
                    Some((_, None)) | None => break End::EngineDied,
                },
                _ = sigterm.recv() => break End::Signal,
                _ = sigint.recv() => break End::Signal,
            }
        };
        if let Some(stats) = stats {
            stats.abort();
        }
        let code = match end {
            End::Signal => self.shutdown(&front, &mut procs, true).await,
            End::EngineDied => engine_died(&front, &mut procs).await,
        };
        drop(coordinator);
        drop(detokenizer);
        let _ = stop_tx.send(());
        let _ = tokio::time::timeout(Duration::from_secs(2), server).await;
        sim.closing_lines(&self.log, cfg.release, matches!(end, End::EngineDied));
        Ok(code)
    }

    /// Waits for every engine. With `--boot-never-ends` their handshake is never taken, and
    /// the API server says it is still waiting, again and again. An engine that fails to start
    /// ends the boot with the API server's exit status.
    async fn boot(
        &self,
        procs: &mut [EngineProc],
        from_engine: &mut FromEngines,
    ) -> Result<(), i32> {
        let cfg = &self.cfg;
        let mut still_waiting = tokio::time::interval(hostile::NEVER_ENDING_BOOT_LINE_EVERY);
        let mut ready = vec![false; procs.len()];
        loop {
            tokio::select! {
                _ = still_waiting.tick(), if cfg.boot_never_ends => hostile::log_still_waiting(&self.log),
                msg = from_engine.recv() => match msg {
                    Some((rank, Some(ToApi::Hello { pid }))) => procs[rank].pid = pid,
                    Some((_, Some(ToApi::Ready { .. }))) if cfg.boot_never_ends => {}
                    Some((rank, Some(ToApi::Ready { .. }))) => {
                        ready[rank] = true;
                        if ready.iter().all(|r| *r) {
                            return Ok(());
                        }
                    }
                    Some((_, Some(ToApi::Out(_) | ToApi::CacheReset { .. }))) => {}
                    Some((_, None)) | None => return Err(self.boot_failed(procs)),
                },
            }
        }
    }

    /// An engine failed to start (it has exited): the others are stopped quietly, and the API
    /// server prints its failure; the exit status.
    fn boot_failed(&self, procs: &mut [EngineProc]) -> i32 {
        for p in procs.iter() {
            let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGTERM);
        }
        for p in procs.iter_mut() {
            let _ = p.child.wait();
        }
        self.sim.launch_failed(&self.log);
        failures::print_api_boot_failure(
            &self.log,
            self.cfg.fail_boot.unwrap_or(FailKind::RuntimeError),
        );
        1
    }

    /// Serves HTTP on `listener` until the returned sender fires.
    fn http(
        &self,
        listener: std::net::TcpListener,
        front: &Arc<Front>,
    ) -> crate::error::SimResult<(
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    )> {
        listener.set_nonblocking(true)?;
        // uvicorn's asyncio transports set TCP_NODELAY; without it a streamed body waits for the
        // client's delayed ACK of the headers (about 40 ms a request).
        let listener = tokio::net::TcpListener::from_std(listener)?.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let app = http::router(front.clone(), self.sim.routes());
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
        Ok((stop_tx, server))
    }

    /// The orderly stop on SIGTERM/SIGINT, in the engine's words.
    async fn shutdown(&self, front: &Arc<Front>, procs: &mut [EngineProc], serving: bool) -> i32 {
        front.stopping.store(true, Ordering::SeqCst);
        self.sim.shutdown(front, procs, serving).await
    }
}

/// One channel to each engine (its messages written in batches) and one from them all.
fn connect(
    sockets: Vec<std::os::unix::net::UnixStream>,
) -> crate::error::SimResult<(Vec<mpsc::UnboundedSender<ToEngine>>, FromEngines)> {
    let (from_engine_tx, from_engine) = mpsc::unbounded_channel::<(usize, Option<ToApi>)>();
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
    Ok((to_engines, from_engine))
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
