//! The engine process (`VLLM::EngineCore`, or `VLLM::EngineCore_DP{i}` with data parallelism);
//! its workers and the data-parallel coordinator are in [`super::worker`].
//!
//! The API server starts this binary again with argv[0] `VLLM::EngineCore`; it renames itself
//! as setproctitle does, prints the engine's boot lines, holds the simulated GPU memory, and
//! runs the scheduler on a clock: one step every 1/`--tokens-per-s` seconds while there is
//! work. Requests come in and step results go out over the socket on fd 3. The engine is
//! single-threaded, like vLLM's busy loop.

use std::io::{Read, Write};
use std::os::fd::{AsFd, FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::Signal;

use crate::failures;
use crate::fds::{set_cloexec, SignalPipe};
use crate::gpu;
use crate::logline::{sites, Logger};
use crate::os::{self, mono_now};
use crate::proto::{drain_lines, encode, Batch, ToApi, ToEngine};
use crate::registry;
use crate::sched::{NewRequest, Outputs, SchedConfig, Scheduler};
use crate::settings::{Escape, FailKind, ServeConfig, CHANNEL_FD, FD_ENV, PREEMPTION_LOG_ENV};
use crate::surface::{CacheHold, Surface};
use crate::worker::{dp_rank, spawn_workers, stop_workers};

/// Steps run back to back before the engine reports and reads new requests.
const MAX_STEPS_PER_BATCH: usize = 256;

fn sleep_s(s: f64) {
    if s > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(s));
    }
}

/// `inferlint sim engine-core`: runs until told to stop; returns the exit status.
pub fn run_engine() -> crate::error::SimResult<i32> {
    let cfg = ServeConfig::from_env()?;
    let sim = registry::surface(cfg.engine);
    let fd: RawFd = std::env::var(FD_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CHANNEL_FD);
    // Leave the API server's session or parentage before anything else (still single-threaded).
    escape(cfg.escape)?;
    let rank = dp_rank();
    let title = sim.engine_title(&cfg, rank);
    os::rename(&title);
    // SAFETY: the API server passed us this fd; nothing else in this process owns it.
    let mut sock = unsafe { UnixStream::from_raw_fd(fd) };
    set_cloexec(&sock);
    let log = sim.logger(&cfg, &title, rank, 0);
    let signals: &[Signal] = if cfg.engine_ignores_sigterm {
        // SAFETY: setting a signal to SIG_IGN has no handler to be unsafe about.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
        &[Signal::SIGINT]
    } else {
        &[Signal::SIGTERM, Signal::SIGINT]
    };
    let mut sigs = SignalPipe::new(signals)?;
    sock.write_all(&encode(&ToApi::Hello {
        pid: std::process::id(),
    }))?;

    let boot_start = mono_now();
    sim.engine_boot_lines(&log, &cfg)?;
    let fail = cfg
        .fail_boot
        .filter(|k| *k != FailKind::EngineDead)
        .or(cfg.pool_too_small().then_some(FailKind::KvCacheTooSmall));
    if let Some(kind) = fail {
        sim.engine_failure(&log, kind, &cfg);
        return Ok(1);
    }
    if cfg.fail_boot == Some(FailKind::EngineDead) {
        return Ok(1);
    }
    let gpu_dir = gpu::dir_from_env();
    // One simulated GPU per worker; without workers (TP 1) the engine holds its own, and an
    // SGLang rank-0 scheduler or TensorRT-LLM rank 0 always does (the other ranks are its workers).
    let _holding = match (&gpu_dir, cfg.tp) {
        (Some(dir), tp) if tp == 1 || sim.engine_is_rank0() => {
            let card = gpu::my_card(dir, cfg.gpu_index(rank, 0))?;
            let throttle = cfg
                .gpu_throttle
                .map(|t| gpu::throttle(dir, &t.clocks()))
                .transpose()?;
            Some((gpu::hold(dir, cfg.gpu_mib, card)?, throttle))
        }
        _ => None,
    };
    let (death_read, death_write) = nix::unistd::pipe()?;
    set_cloexec(&death_write);
    let mut workers = spawn_workers(sim, &cfg, &death_read)?;
    drop(death_read);
    sim.engine_ready_lines(&log, &cfg, mono_now() - boot_start);
    sock.write_all(&encode(&ToApi::Ready {
        num_gpu_blocks: cfg.num_gpu_blocks,
    }))?;

    let code = Engine::new(sim, cfg.clone(), log.clone(), sock).run(&mut sigs);
    if code.is_none() {
        // Shut down by a signal: stop the workers as vLLM's executor does.
        stop_workers(&log, &mut workers);
    }
    drop(death_write);
    Ok(code.unwrap_or(0))
}

/// `inferlint sim worker` (src/cli/sim.rs dispatches it here): a worker or helper process of
/// the engine the configuration names.
pub fn run_worker() -> crate::error::SimResult<i32> {
    let cfg = ServeConfig::from_env()?;
    crate::worker::run(registry::surface(cfg.engine), &cfg)
}

/// Leaves the API server's session (setsid) or parentage (a double fork), as `--escape` asks.
fn escape(how: Option<Escape>) -> crate::error::SimResult<()> {
    match how {
        Some(Escape::Setsid) => {
            let _ = nix::unistd::setsid();
        }
        Some(Escape::DoubleFork) => {
            // SAFETY: no other thread exists yet; the parent only calls _exit.
            match unsafe { nix::unistd::fork() }? {
                nix::unistd::ForkResult::Parent { .. } => {
                    // SAFETY: _exit takes a plain status and ends the process at once, without
                    // running exit handlers or flushing buffers the child shares.
                    unsafe { libc::_exit(0) }
                }
                nix::unistd::ForkResult::Child => {}
            }
        }
        None => {}
    }
    Ok(())
}

/// The cold start the first batch pays; none under --enforce-eager, which compiles nothing.
fn cfg_cold(cfg: &ServeConfig) -> Option<f64> {
    cfg.cold_start_secs
        .filter(|s| *s > 0.0 && !cfg.enforce_eager)
}

struct Engine {
    sim: &'static dyn Surface,
    cfg: ServeConfig,
    log: Logger,
    sock: UnixStream,
    sock_open: bool,
    inbuf: Vec<u8>,
    sched: Scheduler,
    requests_seen: u32,
    preemption_log: Option<std::fs::File>,
    /// Host memory held for `--host-memory-grow-mib`.
    hoard: Vec<Vec<u8>>,
    /// `--cold-start-secs`: what a batch of a new size pays before it runs.
    cold: Option<f64>,
    /// The batch sizes compiled so far, by power of two (bit k: sizes up to 2^k).
    compiled: u64,
}

impl Engine {
    fn new(sim: &'static dyn Surface, cfg: ServeConfig, log: Logger, sock: UnixStream) -> Engine {
        let sched = Scheduler::new(SchedConfig {
            usable_blocks: cfg.usable_blocks(),
            block_size: cfg.block_size,
            max_num_seqs: cfg.max_num_seqs,
            max_num_batched_tokens: cfg.max_num_batched_tokens,
        });
        let preemption_log = std::env::var_os(PREEMPTION_LOG_ENV).and_then(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
        });
        let cold = cfg_cold(&cfg);
        Engine {
            sim,
            cfg,
            log,
            sock,
            sock_open: true,
            inbuf: Vec::new(),
            sched,
            requests_seen: 0,
            preemption_log,
            hoard: Vec::new(),
            cold,
            compiled: 0,
        }
    }

    /// A batch of a size the engine has not run before (by powers of two) compiles first
    /// (`--cold-start-secs`): vLLM compiles per shape and captures CUDA graphs per batch size.
    /// It logs vLLM's compile line (`backends.py`) when done, and does
    /// nothing else meanwhile, as a compiling engine does not. So `run`'s probe (1, then 8 at
    /// once) pays for sizes up to 8, and a load of more at once pays in its own window.
    fn pay_cold_start(&mut self) {
        let Some(secs) = self.cold else {
            return;
        };
        let n = self.sched.num_running() + self.sched.num_waiting();
        let batch = n.min(self.cfg.max_num_seqs as usize);
        if batch == 0 {
            return;
        }
        let bit = 1u64 << batch.next_power_of_two().trailing_zeros().min(63);
        if self.compiled & bit != 0 {
            return;
        }
        self.compiled |= bit;
        let t0 = mono_now();
        sleep_s(secs);
        self.log.info(
            "backends.py:393",
            &format!(
                "Compiling a graph for compile range (1, {}) takes {:.2} s",
                batch.next_power_of_two(),
                mono_now() - t0
            ),
        );
    }

    /// The busy loop. Returns Some(exit status) when the engine ends by itself, None when a
    /// signal shut it down.
    fn run(&mut self, sigs: &mut SignalPipe) -> Option<i32> {
        let dt = self.cfg.step_secs();
        let mut next_step = 0.0_f64;
        loop {
            let now = mono_now();
            let timeout = if self.sched.has_work() {
                let wait_ms = ((next_step - now) * 1000.0).ceil().max(0.0);
                PollTimeout::try_from(wait_ms.min(1000.0) as i32).unwrap_or(PollTimeout::ZERO)
            } else {
                PollTimeout::from(1000u16)
            };
            let (sock_ready, sig_ready) = {
                let mut fds = sigs.poll_fds();
                let nsig = fds.len();
                if self.sock_open {
                    fds.push(PollFd::new(self.sock.as_fd(), PollFlags::POLLIN));
                }
                match poll(&mut fds, timeout) {
                    Ok(_) => {}
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => return Some(1),
                }
                let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
                (
                    fds.get(nsig).is_some_and(ready),
                    fds[..nsig].iter().any(ready),
                )
            };
            if sig_ready {
                if let Some(sig) = sigs.take() {
                    self.shutdown(sig);
                    return None;
                }
            }
            if sock_ready {
                let was_idle = !self.sched.has_work();
                if let Some(code) = self.read_requests() {
                    return Some(code);
                }
                if was_idle && self.sched.has_work() {
                    next_step = mono_now();
                }
            }
            if self.cold.is_some() && self.sched.has_work() {
                let before = self.compiled;
                self.pay_cold_start();
                if self.compiled != before {
                    next_step = mono_now();
                }
            }
            if self.sched.has_work() {
                let now = mono_now();
                let mut out = Outputs::default();
                let mut n = 0;
                while next_step <= now && self.sched.has_work() && n < MAX_STEPS_PER_BATCH {
                    self.sched.step(next_step, &mut out);
                    next_step += dt;
                    n += 1;
                }
                if n > 0 {
                    self.send_batch(out);
                }
            }
        }
    }

    /// Reads what the API server sent. Some(status) when the engine must exit.
    fn read_requests(&mut self) -> Option<i32> {
        let mut buf = [0u8; 64 * 1024];
        let n = match self.sock.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return None,
            Err(_) => 0,
        };
        if n == 0 {
            // The API server is gone. Released vLLM does not notice (issue 55510); the
            // simulator copies that only with --orphan-engine.
            self.sock_open = false;
            return if self.cfg.orphan_engine {
                None
            } else {
                Some(0)
            };
        }
        self.inbuf.extend_from_slice(&buf[..n]);
        let now = mono_now();
        let mut out = Outputs::default();
        for line in drain_lines(&mut self.inbuf) {
            match serde_json::from_slice::<ToEngine>(&line) {
                Ok(ToEngine::Add {
                    id,
                    prompt,
                    max_tokens,
                    eos_after,
                    cached,
                }) => {
                    if self
                        .cfg
                        .die_after_requests
                        .is_some_and(|limit| self.requests_seen >= limit)
                    {
                        // Let the API server answer (and log) the request before dying.
                        std::thread::sleep(Duration::from_millis(50));
                        failures::print_engine_fatal(&self.log);
                        return Some(1);
                    }
                    self.requests_seen += 1;
                    if let Some(mib) = self.cfg.host_memory_grow_mib {
                        // Touched, one byte per page, so the memory is really charged.
                        let mut block = vec![0u8; (mib as usize) << 20];
                        for b in block.iter_mut().step_by(4096) {
                            *b = 1;
                        }
                        self.hoard.push(std::hint::black_box(block));
                    }
                    self.sched.add(
                        NewRequest {
                            id,
                            prompt_tokens: prompt,
                            max_tokens,
                            eos_after,
                            cached,
                        },
                        now,
                    );
                }
                Ok(ToEngine::Abort { id }) => self.sched.abort(id, &mut out),
                Ok(ToEngine::ResetPrefixCache { reset_running }) => {
                    self.reset_prefix_cache(reset_running, &mut out);
                }
                Err(_) => {}
            }
        }
        if !out.is_empty() {
            self.send_batch(out);
        }
        None
    }

    /// Empties the prefix cache if no block is held, after preempting the running requests
    /// when asked; the preemptions go out first, in their own batch, then the answer.
    fn reset_prefix_cache(&mut self, reset_running: bool, out: &mut Outputs) {
        if reset_running {
            self.sched.preempt_all(out);
            if !out.is_empty() {
                self.send_batch(std::mem::take(out));
            }
        }
        let hold = CacheHold {
            blocks: self.sched.used_blocks(),
            running: self.sched.num_running() as u32,
            waiting: self.sched.num_waiting() as u32,
        };
        let success = self.sim.reset_prefix_cache(&self.log, hold);
        if self.sock_open
            && self
                .sock
                .write_all(&encode(&ToApi::CacheReset { success }))
                .is_err()
        {
            self.sock_open = false;
        }
    }

    fn send_batch(&mut self, out: Outputs) {
        if let Some(f) = &mut self.preemption_log {
            for id in &out.preempted {
                let _ = writeln!(f, "{{\"request\": {id}, \"t_mono\": {}}}", mono_now());
            }
        }
        self.sim.preempted(&self.log, &out.preempted);
        if !self.sock_open {
            return;
        }
        let batch = Batch {
            preemptions: out.preempted.len() as u64,
            tokens: out.tokens,
            finished: out.finished,
            iteration_tokens: out.iteration_tokens,
            running: self.sched.num_running() as u32,
            waiting: self.sched.num_waiting() as u32,
            kv_usage: self.sched.kv_usage(),
        };
        if self.sock.write_all(&encode(&ToApi::Out(batch))).is_err() {
            self.sock_open = false;
        }
    }

    fn shutdown(&mut self, sig: Signal) {
        if !self.log.is_vllm() {
            // SGLang's scheduler is killed with its tree; it logs nothing on the way out.
            return;
        }
        let s = sites(self.log.release);
        let mode = if self.cfg.shutdown_timeout > 0 {
            "drain"
        } else {
            "abort"
        };
        self.log.info(
            s.engine_shutdown[0],
            &format!(
                "[shutdown] EngineCore: trigger received signal={}",
                sig.as_str()
            ),
        );
        self.log.info(
            s.engine_shutdown[1],
            &format!(
                "[shutdown] EngineCore: start mode={mode} timeout={}s",
                self.cfg.shutdown_timeout
            ),
        );
        self.log.info(
            s.engine_shutdown[2],
            "[shutdown] EngineCore: request processing complete; starting resource teardown",
        );
        self.log.info(
            s.engine_shutdown[3],
            "[shutdown] EngineCore: exiting busy loop",
        );
    }
}
