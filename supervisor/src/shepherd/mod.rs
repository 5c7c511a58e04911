//! The shepherd: a small single-threaded process (a hidden subcommand of the product's binary)
//! that is the parent and child-subreaper of the served command.
//!
//! It calls `setsid()` first (terminal signals reach only the supervisor, which forwards them
//! exactly once), becomes a child subreaper, starts the server in its own process group (and in
//! a fresh cgroup when one can be created) with `PR_SET_PDEATHSIG = SIGTERM` set from this one
//! thread, tags it with the run's marker variable, and then waits on three things in one
//! `poll`: the control socket from the supervisor (fd 3), a signalfd, and a periodic census.
//! It runs the staged teardown when told to, when the leader exits by itself (what is left are
//! orphans), when it is signalled itself, and — the reason it exists — when the control socket
//! reaches end of file: the supervisor is gone, even by SIGKILL.
//!
//! Its own diagnostics go to `--log`, never to the server's pipes. After losing the supervisor
//! it keeps the server's output pipes drained (into `--drain-to`), so the server never blocks
//! or hits EPIPE during its shutdown, and writes the teardown report to `--report`.

mod config;
mod server;
mod wake;

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

pub use config::ShepherdConfig;

use crate::cgroup::Cgroup;
use crate::member_exit::MemberWatch;
use crate::names::Names;
use crate::pidfd::Tracked;
use crate::procfs::{ProcId, ProcScanner};
use crate::protocol::{self, Decoder, Event};
use crate::teardown::{self, Graces, TeardownReport, LEFTOVER_EXIT_STATUS};
use crate::tree::{Adoption, Tree, Why};
use crate::{sys, ExitKind, StopMode};
use wake::{StopOrder, Wakers};

/// Exit status of a shepherd that could not start the server.
pub const SPAWN_FAILED_EXIT_STATUS: i32 = 4;

/// Diagnostics to the shepherd's own log file (never to the server's pipes).
struct Log(Option<File>);

impl Log {
    fn open(path: Option<&PathBuf>) -> Log {
        Log(path.and_then(|p| OpenOptions::new().create(true).append(true).open(p).ok()))
    }

    fn say(&mut self, msg: impl AsRef<str>) {
        if let Some(f) = &mut self.0 {
            let _ = writeln!(f, "shepherd[{}]: {}", sys::getpid(), msg.as_ref());
        }
    }
}

/// Runs a shepherd and returns its exit status: 0 when everything it started is gone,
/// [`LEFTOVER_EXIT_STATUS`] when something was left, [`SPAWN_FAILED_EXIT_STATUS`] when the
/// server could not be started.
pub fn run(cfg: ShepherdConfig) -> i32 {
    let me = become_keeper(&cfg);
    let control = cfg.control_fd.and_then(server::inherited_fd);
    let mut drains: Vec<OwnedFd> = cfg
        .drain_fds
        .iter()
        .filter_map(|&fd| server::inherited_fd(fd))
        .collect();
    keep_from_server(control.iter().chain(drains.iter()));
    let mut log = Log::open(cfg.log.as_ref());
    let sigfd = block_stop_signals();

    let run_cgroup = match server::prepare_cgroup(&cfg, me) {
        Ok(c) => c,
        Err(error) => return spawn_failed(&mut log, control.as_ref(), error, None),
    };
    let scan = ProcScanner::system();
    let owners = owners_value(&cfg, &scan, me);
    let child = match server::start_server(&cfg, me, &owners, run_cgroup.procs) {
        Ok(c) => c,
        Err(e) => {
            let error = format!("cannot start {}: {e}", cfg.command[0].to_string_lossy());
            return spawn_failed(
                &mut log,
                control.as_ref(),
                error,
                run_cgroup.cgroup.as_ref(),
            );
        }
    };
    let leader_pid = child.id() as i32;
    // Let go of the server's output pipes: their end of file must mean "the tree is gone".
    server::release_stdio();
    let tree = server_tree(&cfg, &scan, leader_pid, me, run_cgroup.cgroup);
    announce_server(
        &cfg,
        &tree,
        leader_pid,
        control.as_ref(),
        &mut log,
        run_cgroup.note,
    );
    // The leader is reaped at the end of the teardown (std's Child would reap it early).
    std::mem::forget(child);

    let mut wakers = Wakers {
        control,
        sigfd,
        decoder: Decoder::default(),
        supervisor_gone: false,
        drain_file: None,
        drain_to: cfg.drain_to.clone(),
        sigints: 0,
        graces: cfg.graces,
    };
    let mut watch = Watch::new(&cfg, &scan, tree, leader_pid);
    let order = watch.until_stop(&mut wakers, &mut drains, &mut log, cfg.graces);
    tear_down(&cfg, watch, &mut wakers, &mut drains, &mut log, order)
}

/// Names the process, switches pidfds off when told, leaves the supervisor's session
/// (terminal signals reach only the supervisor, which forwards them exactly once) and becomes
/// a child subreaper. Returns the shepherd's pid.
fn become_keeper(cfg: &ShepherdConfig) -> i32 {
    sys::set_thread_name(&cfg.names.shepherd_title);
    if cfg.no_pidfd {
        crate::pidfd::switch_off();
    }
    // Fails only if we already lead a session.
    let _ = nix::unistd::setsid();
    let _ = sys::set_child_subreaper();
    sys::getpid()
}

/// The server must not inherit the control socket or the pipes' read ends: a server holding
/// the control socket would hide the shepherd's death from the supervisor.
fn keep_from_server<'a>(fds: impl Iterator<Item = &'a OwnedFd>) {
    for fd in fds {
        let _ = sys::set_cloexec(fd);
    }
}

/// Blocks the signals the shepherd handles and returns a signalfd that delivers them.
fn block_stop_signals() -> Option<SignalFd> {
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        mask.add(s);
    }
    let _ = nix::sys::signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&mask), None);
    SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).ok()
}

/// Says why the server could not start, cleans up, and gives the exit status.
fn spawn_failed(
    log: &mut Log,
    control: Option<&OwnedFd>,
    error: String,
    cgroup: Option<&Cgroup>,
) -> i32 {
    log.say(&error);
    send(control, &Event::SpawnFailed { error });
    if let Some(c) = cgroup {
        let _ = c.remove();
    }
    SPAWN_FAILED_EXIT_STATUS
}

/// The owners variable's value: the supervisor's identity and the shepherd's own.
fn owners_value(cfg: &ShepherdConfig, scan: &ProcScanner, me: i32) -> String {
    let mut owners: Vec<String> = cfg.owners.iter().map(|o| o.to_string()).collect();
    if let Some(id) = scan.id_of(me) {
        owners.push(id.to_string());
    }
    owners.join(",")
}

/// This process's session id (-1 when it cannot be read).
fn own_session() -> i32 {
    nix::unistd::getsid(None).map_or(-1, |p| p.as_raw())
}

/// The handles on the server's tree: the leader (our unreaped child), its process group, our
/// session, the cgroup, every child reparented to us, and the marker.
fn server_tree(
    cfg: &ShepherdConfig,
    scan: &ProcScanner,
    leader_pid: i32,
    me: i32,
    cgroup: Option<Cgroup>,
) -> Tree {
    let mut tree = Tree::new(scan.clone());
    tree.marker = Some(cfg.names.marker(&cfg.run_id));
    tree.leader = Tracked::open_pid(scan, leader_pid);
    tree.leader_is_child = true;
    tree.pgid = Some(leader_pid);
    tree.session = (own_session() == me).then_some(me);
    tree.cgroup = cgroup;
    tree.adoption = Adoption::AllChildren;
    tree
}

/// Logs the start and reports it to the supervisor.
fn announce_server(
    cfg: &ShepherdConfig,
    tree: &Tree,
    leader_pid: i32,
    control: Option<&OwnedFd>,
    log: &mut Log,
    cgroup_note: Option<String>,
) {
    let leader = tree.leader.as_ref();
    log.say(format!(
        "started {} as pid {leader_pid} ({})",
        cfg.command[0].to_string_lossy(),
        tree.cgroup
            .as_ref()
            .map(|c| format!("cgroup {}", c.path().display()))
            .unwrap_or_else(|| format!("process group {leader_pid}"))
    ));
    send(
        control,
        &Event::Spawned {
            pid: leader_pid,
            pgid: leader_pid,
            starttime: leader.map(|l| l.id.starttime).unwrap_or(0),
            session: own_session(),
            cgroup: tree.cgroup.as_ref().map(|c| c.path().display().to_string()),
            cgroup_note,
        },
    );
}

/// The running server as the shepherd watches it: the census, the members' deaths, and the
/// leader's exit.
struct Watch {
    tree: Tree,
    deaths: MemberWatch,
    leader_pid: i32,
    leader_exit: Option<ExitKind>,
    started: Instant,
    last_census: Instant,
    /// Members already reported to the supervisor.
    reported: HashSet<ProcId>,
}

impl Watch {
    fn new(cfg: &ShepherdConfig, scan: &ProcScanner, tree: Tree, leader_pid: i32) -> Watch {
        // Every member's death is reported as it happens (docs/supervision.md), the leader's
        // included: it is watched from the start, under the command it was given.
        let mut deaths = MemberWatch::new(scan.clone());
        if let Some(mut info) = scan.read(leader_pid) {
            info.argv = cfg
                .command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            deaths.observe(&info, true);
        }
        let now = Instant::now();
        Watch {
            tree,
            deaths,
            leader_pid,
            leader_exit: None,
            started: now,
            last_census: now,
            reported: HashSet::new(),
        }
    }

    /// Watches until a stop is due: one asked for, the supervisor gone, or the leader exited
    /// by itself (what is left then are orphans).
    fn until_stop(
        &mut self,
        wakers: &mut Wakers,
        drains: &mut [OwnedFd],
        log: &mut Log,
        graces: Graces,
    ) -> StopOrder {
        loop {
            let every = self.census_interval();
            self.sleep_until_woken(wakers, every);
            let request = wakers.poll(drains, log);
            self.report_endings(wakers.control.as_ref(), log);
            if let Some(order) = request {
                return order;
            }
            if wakers.supervisor_gone {
                let actor = "shepherd (supervisor gone)".to_string();
                return (StopMode::Graceful, graces, actor);
            }
            if self.leader_exit.is_some() {
                return (StopMode::Graceful, graces, "shepherd".to_string());
            }
            if self.last_census.elapsed() >= every {
                self.last_census = Instant::now();
                self.report_members(wakers.control.as_ref());
            }
        }
    }

    /// A census every 100 ms while the tree is young (a server starts its engine and workers
    /// then, and one that dies soon after must still have been seen to be watched), every
    /// 500 ms after that.
    fn census_interval(&self) -> Duration {
        if self.started.elapsed() < Duration::from_secs(10) {
            Duration::from_millis(100)
        } else {
            Duration::from_millis(500)
        }
    }

    /// Waits for the control socket, a signal, or a member's pidfd (readable when it exits:
    /// the death wakes us at once), at most `every`.
    fn sleep_until_woken(&self, wakers: &Wakers, every: Duration) {
        let mut fds: Vec<BorrowedFd<'_>> = wakers.fds();
        fds.extend(self.deaths.fds(&self.tree));
        sys::poll_readable(&fds, Some(every));
    }

    /// Reaps what ended, and reports each member's death, then the leader's exit.
    fn report_endings(&mut self, control: Option<&OwnedFd>, log: &mut Log) {
        let leader_ended = if self.leader_exit.is_none() {
            sys::has_exited_unreaped(self.leader_pid)
        } else {
            None
        };
        let reaped = self.tree.reap_zombies();
        self.deaths.note_reaped(&reaped);
        for exit in self.deaths.check(&self.tree) {
            log.say(format!(
                "member {} ({}) ended: {}{}",
                exit.pid,
                exit.name(),
                exit.status
                    .map(|k| k.to_string())
                    .unwrap_or_else(|| "status unknown".into()),
                if exit.oom_kill { " (OOM killer)" } else { "" }
            ));
            send(control, &Event::MemberExited { exit });
        }
        if let Some(kind) = leader_ended {
            self.leader_exit = Some(kind);
            log.say(format!("the server exited ({kind})"));
            send(control, &Event::Exited { status: kind });
        }
    }

    /// Tells the supervisor every member not reported yet, so it can still find them (by
    /// pidfd) should this shepherd be killed; and watches each for its death.
    fn report_members(&mut self, control: Option<&OwnedFd>) {
        let members = self.tree.census();
        for m in &members {
            self.deaths.observe(&m.info, m.why == Why::Leader);
        }
        let ids: Vec<ProcId> = members
            .iter()
            .map(|m| m.info.id())
            .filter(|id| self.reported.insert(*id))
            .collect();
        if !ids.is_empty() {
            send(control, &Event::Members { ids });
        }
    }
}

/// Runs the staged teardown, reports it, and gives the shepherd's exit status.
fn tear_down(
    cfg: &ShepherdConfig,
    mut watch: Watch,
    wakers: &mut Wakers,
    drains: &mut [OwnedFd],
    log: &mut Log,
    (mode, graces, actor): StopOrder,
) -> i32 {
    log.say(format!("teardown ({mode:?}) by {actor}"));
    send(wakers.control.as_ref(), &Event::Stopping { mode });
    let mut interrupt = || match wakers.poll(drains, log) {
        Some((StopMode::Force, _, _)) => Some(StopMode::Force),
        _ => None,
    };
    let mut report = teardown::teardown(&mut watch.tree, mode, &graces, &actor, &mut interrupt);
    if report.leader_exit.is_none() {
        report.leader_exit = watch.leader_exit;
    }
    if wakers.supervisor_gone {
        wakers.drain_until_eof(drains, Duration::from_millis(500));
    }
    for l in report.lines() {
        log.say(l);
    }
    log.say(format!(
        "teardown done in {} ms; {} left",
        report.elapsed_ms,
        report.leftovers.len()
    ));
    if wakers.supervisor_gone || wakers.control.is_none() {
        write_report(cfg.report.as_deref(), &report);
    }
    let left = !report.leftovers.is_empty();
    send(wakers.control.as_ref(), &Event::TeardownDone { report });
    if left {
        LEFTOVER_EXIT_STATUS
    } else {
        0
    }
}

fn send(control: Option<&OwnedFd>, ev: &Event) {
    if let Some(c) = control {
        let _ = protocol::send(c, ev);
    }
}

fn write_report(path: Option<&Path>, report: &TeardownReport) {
    let Some(path) = path else { return };
    let tmp = path.with_extension("json.tmp");
    if let Ok(text) = serde_json::to_string_pretty(report) {
        if std::fs::write(&tmp, text + "\n").is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

/// Entry point for a binary's hidden subcommand: parses `args` (everything after the
/// subcommand's name) and runs. `names` are the program's own, for what the arguments do not
/// name (a supervisor always names them). Errors in the arguments exit 2.
pub fn main_with_args<I: IntoIterator<Item = OsString>>(names: Names, args: I) -> i32 {
    match ShepherdConfig::from_args(names, args) {
        Ok(cfg) => run(cfg),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{e}");
            2
        }
    }
}
