//! The supervisor's side: start a command under a shepherd and hold the handle on it.
//!
//! [`Supervised::spawn`] creates the output pipes (1 MiB buffers) and the control socket,
//! starts the shepherd (`SpawnOptions::shepherd`, e.g. `mytool shepherd`), waits for its
//! `Spawned` report, and starts three threads: two output pumps and a control reader. If the
//! shepherd disappears without finishing a teardown (SIGKILL), the control reader runs the same
//! staged teardown itself on what it recorded: process group, session, cgroup, marker and the
//! pidfds of every member the shepherd reported.

mod control;
mod spawn;

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;

pub use control::exclude_from_adoption;

use crate::cgroup::CgroupMode;
use crate::member_exit::MemberExit;
use crate::names::{Marker, Names};
use crate::output::LineReceiver;
use crate::procfs::ProcId;
use crate::protocol::{self, Request};
use crate::teardown::{Graces, TeardownReport};
use crate::{sys, ExitKind, StopMode};
use control::{no_report, Shared};

/// How to start a shepherd: a program and the arguments before the shepherd's own
/// (e.g. `mytool` + `["shepherd"]`).
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
    /// What the run is called on the system (marker and owners variables, cgroup prefix,
    /// the shepherd's title).
    pub names: Names,
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
    pub fn new(shepherd: ShepherdProgram, command: Vec<OsString>, names: Names) -> Self {
        SpawnOptions {
            shepherd,
            command,
            names,
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

/// A command running under a shepherd.
pub struct Supervised {
    info: SpawnedInfo,
    names: Names,
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

    /// The marker every process of the run carries.
    pub fn marker(&self) -> Marker {
        self.names.marker(&self.info.run_id)
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
                let _ = sys::kill(self.info.shepherd_pid, Signal::SIGKILL);
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
