//! `inferlint-supervisor`: owning a command's whole Linux process tree, so that nothing it
//! starts outlives its supervisor — on a normal end, an error, Ctrl-C, SIGTERM (Slurm's
//! `scancel`), SIGHUP, and SIGKILL of the supervisor itself. It knows nothing of inference
//! servers (the names its runs show under — environment variables, cgroups, process titles —
//! come from the caller as [`Names`]); the design and its reasons are in
//! `docs/design/processes.md#ownership` and `docs/supervision.md`.
//!
//! # Topology
//!
//! ```text
//! supervisor (your process: any threads, tokio or not; child subreaper #2)
//! └─ shepherd (your program's hidden `shepherd` subcommand: single thread, own session,
//!    │         child subreaper #1)
//!    └─ server (own process group; own cgroup when delegated; PDEATHSIG=SIGTERM;
//!       │        <marker variable>=<run id> in its environment; stdout/stderr = pipes to you)
//!       └─ its children, setsid/double-fork escapees, renamed engines…
//! ```
//!
//! # The API a supervisor uses
//!
//! ```no_run
//! use inferlint_supervisor::{become_subreaper, Graces, Names, ShepherdProgram, SpawnOptions,
//!     StopMode, Supervised, SignalMux, StopRequest};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! become_subreaper()?; // orphans of a SIGKILLed shepherd come to us, not to PID 1
//! let names = Names {                                    // what your product calls its runs
//!     marker_env: "MYTOOL_RUN_ID".into(),
//!     owners_env: "MYTOOL_RUN_OWNERS".into(),
//!     cgroup_prefix: "mytool-".into(),
//!     shepherd_title: "mytool-shep".into(),
//! };
//! let mut opts = SpawnOptions::new(
//!     ShepherdProgram::this_exe("shepherd")?,           // the hidden subcommand
//!     vec!["my-server".into(), "--port".into(), "8000".into()],
//!     names,
//! );
//! opts.raw_output = Some("run/boot.log".into());        // raw bytes first, always
//! opts.graces = Graces::default();                       // 15 s + 5 s + force: < Slurm's 30 s
//! let mut server = Supervised::spawn(opts)?;             // returns once the server exists
//! println!("server pid {} ({})", server.leader_pid(), server.info().backend());
//!
//! let mut lines = server.take_lines().unwrap();          // bounded; never blocks the server
//! std::thread::spawn(move || while let Some(line) = lines.blocking_recv() {
//!     // feed the boot-log analyzer; `lines.recv().await` in async code
//!     let _ = line.text;
//! });
//!
//! // Ctrl-C once = graceful, twice = force, three times = exit now (the shepherd finishes).
//! let handle = std::sync::Arc::new(std::sync::Mutex::new(None::<StopMode>));
//! let h = handle.clone();
//! let _mux = SignalMux::install(move |req| {
//!     *h.lock().unwrap() = Some(match req {
//!         StopRequest::Graceful(_) => StopMode::Graceful,
//!         StopRequest::Force(_) | StopRequest::ExitNow => StopMode::Force,
//!     });
//! })?;
//!
//! if let Some(status) = server.wait_exit(std::time::Duration::from_secs(1)) {
//!     println!("server exited early: {status}");         // `server.exited().await` in async code
//! }
//! server.stop(StopMode::Force);                          // non-blocking; escalates a running stop
//! let report = server.teardown(StopMode::Graceful);      // blocking; `teardown_async` / `done()`
//! for line in report.leftover_lines() {                  // pid and command line
//!     eprintln!("{line}");
//! }
//! std::process::exit(if report.is_clean() { 0 } else { inferlint_supervisor::LEFTOVER_EXIT_STATUS });
//! # }
//! ```
//!
//! * [`Supervised::spawn`] → [`Supervised`]: [`Supervised::leader_pid`], [`Supervised::info`]
//!   (process group, session, cgroup or why none), [`Supervised::take_lines`] (a
//!   [`LineReceiver`]: `recv().await` or `blocking_recv()`; `\r` ends a line, lines are capped,
//!   a slow consumer loses lines — counted by [`Supervised::dropped_lines`] — never the raw
//!   file), [`Supervised::take_member_exits`] / [`Supervised::member_exits`] (every member of
//!   the tree that ended before the teardown, as a [`MemberExit`]: who, how, OOM killer or
//!   not; [`member_exit`]), [`Supervised::wait_exit`] / [`Supervised::exited`], [`Supervised::stop`],
//!   [`Supervised::teardown`] / [`Supervised::teardown_async`] / [`Supervised::done`] →
//!   [`TeardownReport`] (a caller adds its own words to each leftover's line with
//!   [`TeardownReport::leftover_lines_with`]). Dropping the handle tears down too.
//! * The shepherd entry point for the binary's hidden subcommand: [`shepherd::main_with_args`].
//! * [`pidfd::switch_off`]: the `(pid, start time)` identity instead of pidfds, for a
//!   product's own switch (a shepherd started afterwards is switched off too).
//! * [`SignalMux`] and [`signals::say`] (terminal writes that never panic).
//! * Reconciliation: [`reap::find_stale`] and [`reap::reap`].
//! * The pieces, for attach-mode tools: [`ProcScanner`] (a `/proc`-style root), [`Tracked`]
//!   (pidfd or `(pid, start time)`), [`Tree`] (the census) and [`teardown::teardown`].
//!
//! # Guarantees and their one gap
//!
//! Every ending runs the one staged teardown of [`teardown`]. When the supervisor dies, the
//! shepherd sees end of file on its control socket and tears down alone; when the shepherd dies,
//! the server gets SIGTERM (parent-death signal) and the supervisor tears down from what it
//! recorded. When both die, a cgroup still holds the tree and `reap` finds it by marker or
//! cgroup name — except a process that cleared its environment and left the process group while
//! no cgroup was in use: nothing ties it to the run any more (tested as exactly that limit).
#![expect(
    missing_docs,
    reason = "121 public items (mostly struct fields and variants) were undocumented when the workspace turned missing_docs on; document them, then drop this"
)]
#![deny(clippy::undocumented_unsafe_blocks)]
// No unwrap or expect on what the inputs hold: bad input is an error naming the file and line,
// never a panic. Where an invariant makes one safe, the site allows it and says why.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod cgroup;
pub mod member_exit;
pub mod names;
pub mod node_agent;
pub mod node_protocol;
pub mod output;
pub mod pidfd;
pub mod procfs;
pub mod protocol;
pub mod reap;
pub mod shepherd;
pub mod shm;
pub mod signals;
pub mod supervised;
pub mod sys;
pub mod teardown;
pub mod tree;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

pub use cgroup::CgroupMode;
pub use member_exit::MemberExit;
pub use names::{Marker, Names};
pub use output::{LineReceiver, OutputLine, Stream};
pub use pidfd::Tracked;
pub use procfs::{ProcId, ProcInfo, ProcScanner};
pub use signals::{SignalMux, StopRequest};
pub use supervised::{
    exclude_from_adoption, ShepherdProgram, SpawnError, SpawnOptions, SpawnedInfo, Supervised,
};
pub use teardown::{Graces, Leftover, TeardownReport, LEFTOVER_EXIT_STATUS};
pub use tree::Tree;

/// How to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopMode {
    /// The staged teardown from stage 1 (SIGTERM to the leader).
    Graceful,
    /// Straight to stage 3 (SIGKILL everything).
    Force,
}

/// How a process ended.
///
/// In JSON a signal is its number (`{"signal": 9}`), whichever variant holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "WireExit", into = "WireExit")]
pub enum ExitKind {
    Code(i32),
    Signal(Signal),
    /// Killed by a signal [`Signal`] has no name for (a real-time one, `SIGRTMIN+n`): its
    /// number.
    OtherSignal(i32),
}

/// [`ExitKind`] as it travels: the signal as a number.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum WireExit {
    Code(i32),
    Signal(i32),
}

impl From<WireExit> for ExitKind {
    fn from(w: WireExit) -> ExitKind {
        match w {
            WireExit::Code(c) => ExitKind::Code(c),
            WireExit::Signal(s) => ExitKind::from_signal_number(s),
        }
    }
}

impl From<ExitKind> for WireExit {
    fn from(e: ExitKind) -> WireExit {
        match e.signal_number() {
            Some(s) => WireExit::Signal(s),
            None => WireExit::Code(e.shell_code()),
        }
    }
}

impl ExitKind {
    /// From a raw `waitpid` status.
    pub fn from_wait_status(status: i32) -> ExitKind {
        if libc::WIFSIGNALED(status) {
            ExitKind::from_signal_number(libc::WTERMSIG(status))
        } else {
            ExitKind::Code(libc::WEXITSTATUS(status))
        }
    }

    /// Killed by signal number `sig`.
    pub fn from_signal_number(sig: i32) -> ExitKind {
        Signal::try_from(sig).map_or(ExitKind::OtherSignal(sig), ExitKind::Signal)
    }

    /// The number of the signal that ended it, if one did.
    pub fn signal_number(self) -> Option<i32> {
        match self {
            ExitKind::Code(_) => None,
            ExitKind::Signal(s) => Some(s as i32),
            ExitKind::OtherSignal(s) => Some(s),
        }
    }

    /// The name of the signal that ended it (`SIGKILL`, or `signal N`), if one did.
    pub fn signal_name(self) -> Option<String> {
        self.signal_number().map(sys::signal_number_name)
    }

    /// The shell's convention: the code, or 128 + the signal.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitKind::Code(c) => c,
            ExitKind::Signal(_) | ExitKind::OtherSignal(_) => {
                128 + self.signal_number().unwrap_or(0)
            }
        }
    }

    /// Exit code 0.
    pub fn success(self) -> bool {
        self == ExitKind::Code(0)
    }
}

impl std::fmt::Display for ExitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.signal_name() {
            None => write!(f, "exit code {}", self.shell_code()),
            Some(name) => write!(f, "killed by {name}"),
        }
    }
}

/// Makes the calling process a child subreaper. A supervisor calls it once at start: if a
/// shepherd is SIGKILLed, the server's tree is reparented here instead of to PID 1, where the
/// fallback teardown finds it.
pub fn become_subreaper() -> std::io::Result<()> {
    sys::set_child_subreaper()
}

/// A fresh run id, `<pid>-<start time>-<random>` of the calling process: reconciliation reads
/// the owner back from it (and from the cgroup name), so a run id says whose run it is.
pub fn new_run_id() -> String {
    let me = sys::getpid();
    let start = ProcScanner::system()
        .id_of(me)
        .map(|i| i.starttime)
        .unwrap_or(0);
    let mut bytes = [0u8; 4];
    let random = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map(|_| u32::from_le_bytes(bytes))
        .unwrap_or_else(|_| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        });
    format!("{me}-{start}-{random:08x}")
}

/// Makes a run id safe as a cgroup folder name (letters, digits, `-`, `_`, `.`).
pub fn sanitize_run_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_name_their_owner() {
        let id = new_run_id();
        let parts: Vec<&str> = id.splitn(3, '-').collect();
        assert_eq!(parts[0], std::process::id().to_string());
        assert_ne!(new_run_id(), id);
        assert_eq!(sanitize_run_id("a/b c"), "a_b_c");
    }

    #[test]
    fn exit_kinds() {
        assert_eq!(ExitKind::Signal(Signal::SIGKILL).shell_code(), 137);
        assert_eq!(ExitKind::Code(3).to_string(), "exit code 3");
        assert_eq!(
            ExitKind::Signal(Signal::SIGTERM).to_string(),
            "killed by SIGTERM"
        );
        // Names beyond the usual ones stay numbers, as the messages always gave them.
        assert_eq!(
            ExitKind::Signal(Signal::SIGBUS).to_string(),
            "killed by signal 7"
        );
        let rt = ExitKind::from_wait_status(libc::SIGRTMIN() + 2);
        assert_eq!(rt, ExitKind::OtherSignal(libc::SIGRTMIN() + 2));
        assert_eq!(rt.shell_code(), 128 + libc::SIGRTMIN() + 2);
        assert_eq!(ExitKind::from_wait_status(3 << 8), ExitKind::Code(3));
        assert!(ExitKind::Code(0).success() && !ExitKind::Code(1).success());
    }

    #[test]
    fn exit_kinds_travel_as_numbers() {
        for (kind, json) in [
            (ExitKind::Code(3), r#"{"code":3}"#),
            (ExitKind::Signal(Signal::SIGKILL), r#"{"signal":9}"#),
            (ExitKind::OtherSignal(40), r#"{"signal":40}"#),
        ] {
            assert_eq!(serde_json::to_string(&kind).unwrap(), json);
            assert_eq!(serde_json::from_str::<ExitKind>(json).unwrap(), kind);
        }
    }
}
