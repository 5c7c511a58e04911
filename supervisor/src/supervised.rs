//! The supervisor's side: start a command under a shepherd and hold the handle on it.
//!
//! [`Supervised::spawn`] creates the output pipes (1 MiB buffers) and the control socket,
//! starts the shepherd (`SpawnOptions::shepherd`, e.g. `inferlint shepherd`), waits for its
//! `Spawned` report, and starts three threads: two output pumps and a control reader. If the
//! shepherd disappears without finishing a teardown (SIGKILL), the control reader runs the same
//! staged teardown itself on what it recorded: process group, session, cgroup, marker and the
//! pidfds of every member the shepherd reported.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::cgroup::{Cgroup, CgroupMode};
use crate::member_exit::MemberExit;
use crate::output::{self, LineReceiver, PumpStats, Stream};
use crate::pidfd::Tracked;
use crate::procfs::{ProcId, ProcScanner};
use crate::protocol::{self, Decoder, Event, Request};
use crate::shepherd::ShepherdConfig;
use crate::teardown::{self, Graces, TeardownReport};
use crate::tree::{Adoption, Tree};
use crate::{sys, ExitKind, StopMode};

/// How to start a shepherd: a program and the arguments before the shepherd's own
/// (e.g. `inferlint` + `["shepherd"]`).
#[derive(Clone, Debug)]
pub struct ShepherdProgram {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl ShepherdProgram {
    /// This executable with a (hidden) subcommand, e.g. `ShepherdProgram::this_exe("shepherd")`.
    pub fn this_exe(subcommand: &str) -> std::io::Result<Self> {
        Ok(ShepherdProgram {
            program: std::env::current_exe()?,
            args: vec![subcommand.into()],
        })
    }
}

/// What to start and how.
#[derive(Clone, Debug)]
pub struct SpawnOptions {
    pub shepherd: ShepherdProgram,
    /// The served command's argument vector.
    pub command: Vec<OsString>,
    /// Extra environment for the command.
    pub env: Vec<(OsString, OsString)>,
    pub cwd: Option<PathBuf>,
    /// The run's marker; a fresh one ([`crate::new_run_id`]) when None.
    pub run_id: Option<String>,
    pub cgroup: CgroupMode,
    pub graces: Graces,
    /// Every byte of stdout and stderr, appended as read (and by the shepherd after the
    /// supervisor is gone).
    pub raw_output: Option<PathBuf>,
    /// Capacity of the line channel; lines beyond it are dropped and counted.
    pub line_capacity: usize,
    /// Longer lines are cut (and marked truncated).
    pub max_line_bytes: usize,
    pub shepherd_log: Option<PathBuf>,
    /// Where the shepherd writes its teardown report when it had to act alone.
    pub shepherd_report: Option<PathBuf>,
    /// How long to wait for the shepherd's first report.
    pub start_timeout: Duration,
}

impl SpawnOptions {
    pub fn new(shepherd: ShepherdProgram, command: Vec<OsString>) -> Self {
        SpawnOptions {
            shepherd,
            command,
            env: Vec::new(),
            cwd: None,
            run_id: None,
            cgroup: CgroupMode::Auto,
            graces: Graces::default(),
            raw_output: None,
            line_capacity: 4096,
            max_line_bytes: 16 * 1024,
            shepherd_log: None,
            shepherd_report: None,
            start_timeout: Duration::from_secs(30),
        }
    }
}

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot start the shepherd {program}: {source}")]
    Shepherd {
        program: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Server(String),
    #[error("the shepherd did not report within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What the shepherd reported at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnedInfo {
    pub run_id: String,
    pub leader: ProcId,
    pub pgid: i32,
    pub session: i32,
    pub shepherd_pid: i32,
    /// The run's cgroup folder, or None on the process-group backend.
    pub cgroup: Option<PathBuf>,
    /// Why `--cgroup auto` fell back to the process group.
    pub cgroup_note: Option<String>,
}

impl SpawnedInfo {
    /// `cgroup PATH` or `process group N`, for a status line.
    pub fn backend(&self) -> String {
        match &self.cgroup {
            Some(p) => format!("cgroup {}", p.display()),
            None => format!("process group {}", self.pgid),
        }
    }
}

#[derive(Default)]
struct State {
    exit: Option<ExitKind>,
    report: Option<TeardownReport>,
    shepherd_exit: Option<std::process::ExitStatus>,
    members: Vec<ProcId>,
    /// Members that ended before the teardown, in the order the shepherd saw them.
    member_exits: Vec<MemberExit>,
    requested: Option<(StopMode, Graces)>,
    done: bool,
}

struct Shared {
    state: Mutex<State>,
    cond: Condvar,
    notify: tokio::sync::Notify,
    force: AtomicBool,
    stats: Arc<PumpStats>,
    exits_tx: tokio::sync::mpsc::UnboundedSender<MemberExit>,
}

impl Shared {
    fn update(&self, f: impl FnOnce(&mut State)) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut st);
        drop(st);
        self.cond.notify_all();
        self.notify.notify_waiters();
    }

    fn wait_for<T>(&self, timeout: Duration, mut f: impl FnMut(&State) -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(v) = f(&st) {
                return Some(v);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            st = self
                .cond
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    async fn wait_async<T>(&self, mut f: impl FnMut(&State) -> Option<T>) -> T {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(v) = f(&st) {
                    return v;
                }
            }
            notified.await;
        }
    }
}

/// Shepherd pids started by this process (never adopted as orphans by a fallback teardown).
/// The lock is held from before a shepherd is forked until its pid is recorded.
static SHEPHERDS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Marks a child of this process as never part of any run's tree. A supervisor that is a
/// subreaper and starts session leaders of its own (outside [`Supervised::spawn`]) registers
/// them, so a fallback teardown never mistakes them for a dead shepherd's orphans.
pub fn exclude_from_adoption(pid: i32) {
    SHEPHERDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(pid);
}

fn is_excluded(pid: i32) -> bool {
    SHEPHERDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&pid)
}

fn is_subreaper() -> bool {
    let mut v: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int.
    unsafe {
        libc::prctl(
            libc::PR_GET_CHILD_SUBREAPER,
            &mut v as *mut libc::c_int,
            0,
            0,
            0,
        )
    };
    v != 0
}

/// A command running under a shepherd.
pub struct Supervised {
    info: SpawnedInfo,
    graces: Graces,
    control: Mutex<Option<OwnedFd>>,
    shared: Arc<Shared>,
    lines: Option<LineReceiver>,
    member_exits: Option<tokio::sync::mpsc::UnboundedReceiver<MemberExit>>,
    control_thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Supervised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervised")
            .field("info", &self.info)
            .finish()
    }
}

impl Supervised {
    /// Starts `opts.command` under a shepherd. Returns once the server process exists.
    pub fn spawn(opts: SpawnOptions) -> Result<Supervised, SpawnError> {
        let scan = ProcScanner::system();
        let run_id = opts.run_id.clone().unwrap_or_else(crate::new_run_id);
        let (sup_sock, shep_sock) = sys::socketpair()?;
        let (out_r, out_w) = sys::pipe()?;
        let (err_r, err_w) = sys::pipe()?;
        for fd in [&out_r, &err_r] {
            sys::grow_pipe(fd, &[8 << 20, 4 << 20, 1 << 20]);
        }
        let out_r2 = out_r.try_clone()?;
        let err_r2 = err_r.try_clone()?;

        let me = scan.id_of(sys::getpid());
        let cfg = ShepherdConfig {
            run_id: run_id.clone(),
            owners: me.into_iter().collect(),
            cgroup: opts.cgroup,
            graces: opts.graces,
            control_fd: Some(3),
            drain_fds: vec![4, 5],
            drain_to: opts.raw_output.clone(),
            log: opts.shepherd_log.clone(),
            report: opts.shepherd_report.clone(),
            cwd: opts.cwd.clone(),
            command: opts.command.clone(),
        };
        let mut cmd = Command::new(&opts.shepherd.program);
        cmd.args(&opts.shepherd.args)
            .args(cfg.to_args())
            .stdin(Stdio::null())
            .stdout(Stdio::from(out_w))
            .stderr(Stdio::from(err_w));
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        let sources = [
            shep_sock.as_raw_fd(),
            out_r2.as_raw_fd(),
            err_r2.as_raw_fd(),
        ];
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // First move every source above the targets, so no dup2 overwrites a source.
                let mut high = [0; 3];
                for (i, &fd) in sources.iter().enumerate() {
                    let h = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
                    if h < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    high[i] = h;
                }
                for (i, &h) in high.iter().enumerate() {
                    if libc::dup2(h, 3 + i as i32) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let mut registry = SHEPHERDS.lock().unwrap_or_else(|e| e.into_inner());
        let mut child = cmd.spawn().map_err(|source| SpawnError::Shepherd {
            program: opts.shepherd.program.display().to_string(),
            source,
        })?;
        let shepherd_pid = child.id() as i32;
        registry.push(shepherd_pid);
        drop(registry);
        drop(cmd);
        drop(shep_sock);
        drop(out_r2);
        drop(err_r2);

        // The first report: Spawned or SpawnFailed.
        let mut decoder = Decoder::default();
        let mut pending: Vec<Event> = Vec::new();
        let deadline = Instant::now() + opts.start_timeout;
        let spawned = loop {
            if let Some(pos) = pending
                .iter()
                .position(|e| matches!(e, Event::Spawned { .. } | Event::SpawnFailed { .. }))
            {
                break pending.remove(pos);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SpawnError::Timeout(opts.start_timeout));
            }
            if !sys::poll_readable(&[sup_sock.as_raw_fd()], Some(left))[0] {
                continue;
            }
            let mut buf = [0u8; 4096];
            match sys::read_fd(sup_sock.as_raw_fd(), &mut buf) {
                Ok(0) | Err(_) => {
                    let status = child.wait().ok();
                    return Err(SpawnError::Server(format!(
                        "the shepherd exited before starting the command ({})",
                        status.map(|s| s.to_string()).unwrap_or_default()
                    )));
                }
                Ok(n) => pending.extend(decoder.feed::<Event>(&buf[..n])),
            }
        };
        let info = match spawned {
            Event::SpawnFailed { error } => {
                let _ = child.wait();
                return Err(SpawnError::Server(error));
            }
            Event::Spawned {
                pid,
                pgid,
                starttime,
                session,
                cgroup,
                cgroup_note,
            } => SpawnedInfo {
                run_id: run_id.clone(),
                leader: ProcId { pid, starttime },
                pgid,
                session,
                shepherd_pid,
                cgroup: cgroup.map(PathBuf::from),
                cgroup_note,
            },
            _ => unreachable!("filtered above"),
        };

        let stats = Arc::new(PumpStats::default());
        let (exits_tx, exits_rx) = tokio::sync::mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            cond: Condvar::new(),
            notify: tokio::sync::Notify::new(),
            force: AtomicBool::new(false),
            stats: stats.clone(),
            exits_tx,
        });
        let raw = match &opts.raw_output {
            Some(p) => Some(Arc::new(Mutex::new(
                OpenOptions::new().create(true).append(true).open(p)?,
            ))),
            None => None,
        };
        let (tx, rx) = output::channel(opts.line_capacity);
        output::spawn_pump(
            out_r,
            Stream::Stdout,
            raw.clone(),
            tx.clone(),
            stats.clone(),
            opts.max_line_bytes,
        )?;
        output::spawn_pump(err_r, Stream::Stderr, raw, tx, stats, opts.max_line_bytes)?;

        // The leader's pidfd, opened here too: the fallback needs it if the shepherd dies.
        let leader = Tracked::open(&scan, info.leader);
        let reader = sup_sock.try_clone()?;
        let thread_shared = shared.clone();
        let thread_info = info.clone();
        let graces = opts.graces;
        let control_thread = std::thread::Builder::new()
            .name("shepherd-control".into())
            .spawn(move || {
                control_loop(
                    reader,
                    decoder,
                    pending,
                    child,
                    thread_shared,
                    thread_info,
                    leader,
                    graces,
                )
            })?;
        Ok(Supervised {
            info,
            graces: opts.graces,
            control: Mutex::new(Some(sup_sock)),
            shared,
            lines: Some(rx),
            member_exits: Some(exits_rx),
            control_thread: Some(control_thread),
        })
    }

    pub fn info(&self) -> &SpawnedInfo {
        &self.info
    }

    /// The server's (leader's) pid.
    pub fn leader_pid(&self) -> i32 {
        self.info.leader.pid
    }

    pub fn shepherd_pid(&self) -> i32 {
        self.info.shepherd_pid
    }

    pub fn run_id(&self) -> &str {
        &self.info.run_id
    }

    /// The line stream (once; later calls return None).
    pub fn take_lines(&mut self) -> Option<LineReceiver> {
        self.lines.take()
    }

    /// The members' deaths as they are reported (once; later calls return None): each one
    /// arrives before the leader's exit is visible through [`Supervised::exited`].
    pub fn take_member_exits(
        &mut self,
    ) -> Option<tokio::sync::mpsc::UnboundedReceiver<MemberExit>> {
        self.member_exits.take()
    }

    /// Every member that ended before the teardown, so far.
    pub fn member_exits(&self) -> Vec<MemberExit> {
        self.shared
            .state
            .lock()
            .map(|s| s.member_exits.clone())
            .unwrap_or_default()
    }

    /// Lines dropped because the consumer was behind.
    pub fn dropped_lines(&self) -> u64 {
        self.shared.stats.dropped.load(Ordering::Relaxed)
    }

    /// Bytes read from the server's stdout and stderr so far.
    pub fn output_bytes(&self) -> u64 {
        self.shared.stats.bytes.load(Ordering::Relaxed)
    }

    /// How the leader ended, if it has.
    pub fn exit_status(&self) -> Option<ExitKind> {
        self.shared.state.lock().ok()?.exit
    }

    /// Waits up to `timeout` for the leader to exit.
    pub fn wait_exit(&self, timeout: Duration) -> Option<ExitKind> {
        self.shared.wait_for(timeout, |s| s.exit)
    }

    /// Resolves when the leader exits (or when everything is over without an exit report).
    pub async fn exited(&self) -> Option<ExitKind> {
        self.shared
            .wait_async(|s| s.exit.map(Some).or(if s.done { Some(None) } else { None }))
            .await
    }

    /// Asks for a teardown and returns at once. A Force request during a graceful teardown
    /// escalates it.
    pub fn stop(&self, mode: StopMode) {
        self.stop_with(mode, self.graces);
    }

    /// As [`Supervised::stop`], with other grace times.
    pub fn stop_with(&self, mode: StopMode, graces: Graces) {
        if mode == StopMode::Force {
            self.shared.force.store(true, Ordering::Release);
        }
        self.shared.update(|s| {
            if s.requested.is_none() || mode == StopMode::Force {
                s.requested = Some((mode, graces));
            }
        });
        if let Ok(guard) = self.control.lock() {
            if let Some(sock) = guard.as_ref() {
                let _ = protocol::send(sock, &Request::Stop { mode, graces });
            }
        }
    }

    /// The teardown report, once the teardown is over.
    pub fn report(&self) -> Option<TeardownReport> {
        let st = self.shared.state.lock().ok()?;
        st.done.then(|| st.report.clone()).flatten()
    }

    /// Stops (if not yet stopped) and waits for the teardown to end; returns its report.
    /// If the shepherd does not finish within the graces, the request is escalated to Force,
    /// and then the shepherd is killed, which makes this process run the teardown itself.
    pub fn teardown(&mut self, mode: StopMode) -> TeardownReport {
        self.stop(mode);
        let budget = self.graces.total() + Duration::from_secs(2);
        if self.wait_done(budget).is_none() {
            self.stop(StopMode::Force);
            if self
                .wait_done(self.graces.force + Duration::from_secs(2))
                .is_none()
            {
                let _ = sys::kill(self.info.shepherd_pid, libc::SIGKILL);
            }
        }
        let report = self
            .wait_done(self.graces.total() + Duration::from_secs(5))
            .unwrap_or_else(|| no_report(&self.info));
        if let Some(h) = self.control_thread.take() {
            let _ = h.join();
        }
        report
    }

    /// [`Supervised::teardown`] for async callers (runs the blocking wait on its own thread).
    pub async fn teardown_async(mut self, mode: StopMode) -> TeardownReport {
        self.stop(mode);
        let shared = self.shared.clone();
        shared.wait_async(|s| s.done.then_some(())).await;
        self.teardown(mode)
    }

    /// Waits up to `timeout` for the teardown to end.
    pub fn wait_done(&self, timeout: Duration) -> Option<TeardownReport> {
        self.shared.wait_for(timeout, |s| {
            s.done
                .then(|| s.report.clone().unwrap_or_else(|| no_report(&self.info)))
        })
    }

    /// Resolves when the teardown has ended (however it was started).
    pub async fn done(&self) -> TeardownReport {
        let info = self.info.clone();
        self.shared
            .wait_async(|s| {
                s.done
                    .then(|| s.report.clone().unwrap_or_else(|| no_report(&info)))
            })
            .await
    }
}

impl Drop for Supervised {
    /// A handle dropped on an error path still stops everything before the process goes on.
    fn drop(&mut self) {
        if self.control_thread.is_some() {
            let _ = self.teardown(StopMode::Graceful);
        }
    }
}

fn no_report(info: &SpawnedInfo) -> TeardownReport {
    TeardownReport {
        actor: "nobody".into(),
        requested: StopMode::Graceful,
        escalated: false,
        backend: info.backend(),
        stages: Vec::new(),
        signalled: Vec::new(),
        found: Vec::new(),
        leftovers: Vec::new(),
        elapsed_ms: 0,
        cgroup_removed: None,
        leader_exit: None,
        pipes_at_eof: None,
    }
}

#[allow(clippy::too_many_arguments)]
fn control_loop(
    sock: OwnedFd,
    mut decoder: Decoder,
    pending: Vec<Event>,
    mut child: std::process::Child,
    shared: Arc<Shared>,
    info: SpawnedInfo,
    leader: Option<Tracked>,
    graces: Graces,
) {
    let handle = |ev: Event, shared: &Shared| match ev {
        Event::Exited { status } => shared.update(|s| s.exit = Some(status)),
        Event::Members { ids } => shared.update(|s| s.members.extend(ids)),
        Event::MemberExited { exit } => {
            shared.update(|s| s.member_exits.push(exit.clone()));
            let _ = shared.exits_tx.send(exit);
        }
        Event::TeardownDone { report } => shared.update(|s| s.report = Some(report)),
        _ => {}
    };
    for ev in pending {
        handle(ev, &shared);
    }
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match sys::read_fd(sock.as_raw_fd(), &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                for ev in decoder.feed::<Event>(&buf[..n]) {
                    handle(ev, &shared);
                }
            }
        }
    }
    let status = child.wait().ok();
    shared.update(|s| s.shepherd_exit = status);
    let have_report = shared
        .state
        .lock()
        .map(|s| s.report.is_some())
        .unwrap_or(false);
    if !have_report {
        // The shepherd died without finishing: tear down what it ran, from here.
        let (mode, graces) = shared
            .state
            .lock()
            .ok()
            .and_then(|s| s.requested)
            .unwrap_or((StopMode::Graceful, graces));
        let members = shared
            .state
            .lock()
            .map(|s| s.members.clone())
            .unwrap_or_default();
        let report = fallback_teardown(&info, leader, &members, mode, &graces, &shared.force);
        shared.update(|s| s.report = Some(report));
    }
    // End of file on the pipes is part of the verification (a short wait, as nextest's leak
    // check does).
    let eof = shared.stats.wait_eof(Duration::from_millis(200));
    shared.update(|s| {
        if let Some(r) = &mut s.report {
            r.pipes_at_eof = Some(eof);
        }
        s.done = true;
    });
}

fn fallback_teardown(
    info: &SpawnedInfo,
    leader: Option<Tracked>,
    members: &[ProcId],
    mode: StopMode,
    graces: &Graces,
    force: &AtomicBool,
) -> TeardownReport {
    let scan = ProcScanner::system();
    let mut tree = Tree::new(scan);
    tree.run_id = Some(info.run_id.clone());
    tree.leader = leader;
    tree.pgid = Some(info.pgid);
    // Every process still in the dead shepherd's session came from it.
    tree.session = (info.session == info.shepherd_pid).then_some(info.session);
    tree.cgroup = info.cgroup.as_ref().map(Cgroup::at);
    // Orphans come to us only if we are a subreaper.
    if is_subreaper() {
        tree.adoption = Adoption::Orphans {
            excluded: is_excluded,
        };
    }
    for id in members {
        tree.track(*id);
    }
    let mut interrupt = || force.load(Ordering::Acquire).then_some(StopMode::Force);
    teardown::teardown(
        &mut tree,
        mode,
        graces,
        "supervisor (shepherd gone)",
        &mut interrupt,
    )
}
