//! The shepherd: a small single-threaded process (a hidden subcommand of the product's binary)
//! that is the parent and child-subreaper of the served command.
//!
//! It calls `setsid()` first (terminal signals reach only the supervisor, which forwards them
//! exactly once), becomes a child subreaper, starts the server in its own process group (and in
//! a fresh cgroup when one can be created) with `PR_SET_PDEATHSIG = SIGTERM` set from this one
//! thread, tags it with `INFERLINT_RUN_ID`, and then waits on three things in one `poll`: the
//! control socket from the supervisor (fd 3), a signalfd, and a periodic census. It runs the
//! staged teardown when told to, when the leader exits by itself (what is left are orphans),
//! when it is signalled itself, and — the reason it exists — when the control socket reaches end
//! of file: the supervisor is gone, even by SIGKILL.
//!
//! Its own diagnostics go to `--log`, never to the server's pipes. After losing the supervisor
//! it keeps the server's output pipes drained (into `--drain-to`), so the server never blocks
//! or hits EPIPE during its shutdown, and writes the teardown report to `--report`.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use crate::cgroup::{Cgroup, CgroupMode};
use crate::member_exit::MemberWatch;
use crate::pidfd::Tracked;
use crate::procfs::{ProcId, ProcScanner};
use crate::protocol::{self, Decoder, Event, Request};
use crate::teardown::{self, Graces, TeardownReport, LEFTOVER_EXIT_STATUS};
use crate::tree::{Adoption, Tree, Why, OWNERS_ENV, RUN_ID_ENV};
use crate::{sys, ExitKind, StopMode};

/// Exit status of a shepherd that could not start the server.
pub const SPAWN_FAILED_EXIT_STATUS: i32 = 4;

/// What a shepherd is told on its command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShepherdConfig {
    pub run_id: String,
    /// The supervisor's identity (and any other owner); the shepherd adds its own.
    pub owners: Vec<ProcId>,
    pub cgroup: CgroupMode,
    /// Graces for the teardown it starts by itself (supervisor gone, signal, leader exit).
    pub graces: Graces,
    /// The control socket (fd 3 when started by [`crate::Supervised`]).
    pub control_fd: Option<RawFd>,
    /// Read ends of the server's output pipes, drained only after the supervisor is gone.
    pub drain_fds: Vec<RawFd>,
    pub drain_to: Option<PathBuf>,
    pub log: Option<PathBuf>,
    pub report: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    pub command: Vec<OsString>,
}

impl ShepherdConfig {
    /// The command-line arguments that [`ShepherdConfig::from_args`] reads back.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |k: &str, v: OsString| {
            a.push(k.into());
            a.push(v);
        };
        push("--run-id", self.run_id.clone().into());
        for o in &self.owners {
            push("--owner", o.to_string().into());
        }
        push("--cgroup", self.cgroup.to_string().into());
        let g = &self.graces;
        push(
            "--grace-ms",
            format!(
                "{},{},{},{}",
                g.leader.as_millis(),
                g.after_leader.as_millis(),
                g.group.as_millis(),
                g.force.as_millis()
            )
            .into(),
        );
        if let Some(fd) = self.control_fd {
            push("--control-fd", fd.to_string().into());
        }
        for fd in &self.drain_fds {
            push("--drain-fd", fd.to_string().into());
        }
        for (k, v) in [
            ("--drain-to", &self.drain_to),
            ("--log", &self.log),
            ("--report", &self.report),
            ("--cwd", &self.cwd),
        ] {
            if let Some(p) = v {
                push(k, p.clone().into_os_string());
            }
        }
        a.push("--".into());
        a.extend(self.command.iter().cloned());
        a
    }

    /// Parses the arguments written by [`ShepherdConfig::to_args`].
    pub fn from_args<I: IntoIterator<Item = OsString>>(args: I) -> Result<Self, String> {
        let mut cfg = ShepherdConfig::default();
        let mut it = args.into_iter();
        while let Some(k) = it.next() {
            if k == "--" {
                cfg.command = it.collect();
                break;
            }
            let key = k.to_string_lossy().into_owned();
            let v = it
                .next()
                .ok_or_else(|| format!("shepherd: {key} needs a value"))?;
            let s = v.to_string_lossy().into_owned();
            let num = |s: &str| -> Result<i32, String> {
                s.parse().map_err(|_| format!("shepherd: bad {key} '{s}'"))
            };
            match key.as_str() {
                "--run-id" => cfg.run_id = s,
                "--owner" => cfg.owners.push(
                    s.parse()
                        .map_err(|_| format!("shepherd: bad --owner '{s}'"))?,
                ),
                "--cgroup" => cfg.cgroup = s.parse()?,
                "--grace-ms" => {
                    let v: Vec<u64> = s
                        .split(',')
                        .map(|x| {
                            x.parse()
                                .map_err(|_| format!("shepherd: bad --grace-ms '{s}'"))
                        })
                        .collect::<Result<_, _>>()?;
                    if v.len() != 4 {
                        return Err(format!("shepherd: --grace-ms needs 4 values, got '{s}'"));
                    }
                    let d = Duration::from_millis;
                    cfg.graces = Graces {
                        leader: d(v[0]),
                        after_leader: d(v[1]),
                        group: d(v[2]),
                        force: d(v[3]),
                    };
                }
                "--control-fd" => cfg.control_fd = Some(num(&s)?),
                "--drain-fd" => cfg.drain_fds.push(num(&s)?),
                "--drain-to" => cfg.drain_to = Some(PathBuf::from(v)),
                "--log" => cfg.log = Some(PathBuf::from(v)),
                "--report" => cfg.report = Some(PathBuf::from(v)),
                "--cwd" => cfg.cwd = Some(PathBuf::from(v)),
                _ => return Err(format!("shepherd: unknown option {key}")),
            }
        }
        if cfg.command.is_empty() {
            return Err("shepherd: no command after --".into());
        }
        if cfg.run_id.is_empty() {
            return Err("shepherd: --run-id is required".into());
        }
        Ok(cfg)
    }
}

/// Diagnostics to the shepherd's own log file (never to the server's pipes).
struct Log(Option<File>);

impl Log {
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
    sys::set_thread_name("inferlint-shep");
    let me = sys::getpid();
    // SAFETY: setsid has no memory effects; it fails only if we already lead a group.
    unsafe { libc::setsid() };
    let _ = sys::set_child_subreaper();
    let mut log = Log(cfg
        .log
        .as_ref()
        .and_then(|p| OpenOptions::new().create(true).append(true).open(p).ok()));

    // SAFETY (both): descriptors handed to us on the command line are ours from now on.
    let control: Option<OwnedFd> = cfg.control_fd.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    let mut drains: Vec<OwnedFd> = cfg
        .drain_fds
        .iter()
        .map(|&fd| unsafe { OwnedFd::from_raw_fd(fd) })
        .collect();
    for fd in control.iter().chain(drains.iter()) {
        // The server must not inherit them: a server holding the control socket would hide
        // the shepherd's death from the supervisor.
        // SAFETY: fcntl on descriptors we own.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    }

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
    let sigfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).ok();

    // The cgroup, when wanted and possible.
    let mut cgroup_note = None;
    let cgroup = match cfg.cgroup {
        CgroupMode::Off => None,
        mode => {
            let name = format!(
                "{}{}.s{}",
                crate::cgroup::CGROUP_PREFIX,
                crate::sanitize_run_id(&cfg.run_id),
                ProcScanner::system()
                    .id_of(me)
                    .map(|i| i.to_string().replace(':', "-"))
                    .unwrap_or_else(|| me.to_string())
            );
            match Cgroup::create(&name) {
                Ok(c) => Some(c),
                Err(e) if mode == CgroupMode::Require => {
                    let error = format!("--cgroup require: {e}");
                    log.say(&error);
                    send(control.as_ref(), &Event::SpawnFailed { error });
                    return SPAWN_FAILED_EXIT_STATUS;
                }
                Err(e) => {
                    cgroup_note = Some(format!("no cgroup ({e}); using the process group"));
                    None
                }
            }
        }
    };
    let procs_file = cgroup.as_ref().and_then(|c| c.open_procs().ok());
    let (cgroup, procs_file) = match (cgroup, procs_file) {
        (Some(c), Some(f)) => (Some(c), Some(f)),
        (Some(c), None) => {
            let _ = c.remove();
            cgroup_note =
                Some("no cgroup (cgroup.procs not writable); using the process group".into());
            (None, None)
        }
        _ => (None, None),
    };

    let scan = ProcScanner::system();
    let mut owners: Vec<String> = cfg.owners.iter().map(|o| o.to_string()).collect();
    if let Some(id) = scan.id_of(me) {
        owners.push(id.to_string());
    }
    let child = spawn_server(&cfg, me, &owners.join(","), procs_file.as_ref());
    drop(procs_file);
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            let error = format!("cannot start {}: {e}", cfg.command[0].to_string_lossy());
            log.say(&error);
            send(control.as_ref(), &Event::SpawnFailed { error });
            if let Some(c) = &cgroup {
                let _ = c.remove();
            }
            return SPAWN_FAILED_EXIT_STATUS;
        }
    };
    let leader_pid = child.id() as i32;
    // Let go of the server's output pipes: their end of file must mean "the tree is gone".
    release_stdio();

    let mut tree = Tree::new(scan.clone());
    tree.run_id = Some(cfg.run_id.clone());
    tree.leader = Tracked::open_pid(&scan, leader_pid);
    tree.leader_is_child = true;
    tree.pgid = Some(leader_pid);
    // SAFETY: getsid(0) has no memory effects.
    let my_sid = unsafe { libc::getsid(0) };
    tree.session = (my_sid == me).then_some(me);
    tree.cgroup = cgroup;
    tree.adoption = Adoption::AllChildren;
    let starttime = tree.leader.as_ref().map(|l| l.id.starttime).unwrap_or(0);
    log.say(format!(
        "started {} as pid {leader_pid} ({})",
        cfg.command[0].to_string_lossy(),
        tree.cgroup
            .as_ref()
            .map(|c| format!("cgroup {}", c.path().display()))
            .unwrap_or_else(|| format!("process group {leader_pid}"))
    ));
    send(
        control.as_ref(),
        &Event::Spawned {
            pid: leader_pid,
            pgid: leader_pid,
            starttime,
            session: my_sid,
            cgroup: tree.cgroup.as_ref().map(|c| c.path().display().to_string()),
            cgroup_note,
        },
    );
    // The leader is reaped at the end of the teardown (std's Child would reap it early).
    std::mem::forget(child);

    let mut state = Loop {
        control,
        sigfd,
        decoder: Decoder::default(),
        supervisor_gone: false,
        drain_file: None,
        drain_to: cfg.drain_to.clone(),
        sigints: 0,
        graces: cfg.graces,
    };
    let mut leader_exit: Option<ExitKind> = None;
    let mut last_census = Instant::now();
    let started = last_census;
    let mut reported = std::collections::HashSet::new();
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

    let (mode, graces, actor) = loop {
        let mut fds = Vec::new();
        if let Some(c) = &state.control {
            fds.push(c.as_raw_fd());
        }
        if let Some(s) = &state.sigfd {
            fds.push(s.as_raw_fd());
        }
        // A member's pidfd turns readable when it exits: the death wakes us at once.
        fds.extend(deaths.fds(&tree));
        // A census every 100 ms while the tree is young (a server starts its engine and
        // workers then, and one that dies soon after must still have been seen to be
        // watched), every 500 ms after that.
        let every = if started.elapsed() < Duration::from_secs(10) {
            Duration::from_millis(100)
        } else {
            Duration::from_millis(500)
        };
        sys::poll_readable(&fds, Some(every));
        let wake = state.poll(&mut drains, &mut log);
        let leader_ended = if leader_exit.is_none() {
            sys::has_exited_unreaped(leader_pid)
        } else {
            None
        };
        let reaped = tree.reap_zombies();
        deaths.note_reaped(&reaped);
        for exit in deaths.check(&tree) {
            log.say(format!(
                "member {} ({}) ended: {}{}",
                exit.pid,
                exit.name(),
                exit.status
                    .map(|k| k.to_string())
                    .unwrap_or_else(|| "status unknown".into()),
                if exit.oom_kill { " (OOM killer)" } else { "" }
            ));
            send(state.control.as_ref(), &Event::MemberExited { exit });
        }
        if let Some(kind) = leader_ended {
            leader_exit = Some(kind);
            log.say(format!("the server exited ({kind})"));
            send(state.control.as_ref(), &Event::Exited { status: kind });
        }
        if let Some(req) = wake.request {
            break req;
        }
        if state.supervisor_gone {
            break (
                StopMode::Graceful,
                cfg.graces,
                "shepherd (supervisor gone)".to_string(),
            );
        }
        if leader_exit.is_some() {
            break (StopMode::Graceful, cfg.graces, "shepherd".to_string());
        }
        if last_census.elapsed() >= every {
            last_census = Instant::now();
            // Tell the supervisor every member we see, so it can still find them (by pidfd)
            // should this shepherd be killed.
            let members = tree.census();
            for m in &members {
                deaths.observe(&m.info, m.why == Why::Leader);
            }
            let ids: Vec<ProcId> = members
                .iter()
                .map(|m| m.info.id())
                .filter(|id| reported.insert(*id))
                .collect();
            if !ids.is_empty() {
                send(state.control.as_ref(), &Event::Members { ids });
            }
        }
    };

    log.say(format!("teardown ({mode:?}) by {actor}"));
    send(state.control.as_ref(), &Event::Stopping { mode });
    let mut interrupt = || {
        let wake = state.poll(&mut drains, &mut log);
        match wake.request {
            Some((StopMode::Force, _, _)) => Some(StopMode::Force),
            _ => None,
        }
    };
    let mut report = teardown::teardown(&mut tree, mode, &graces, &actor, &mut interrupt);
    if report.leader_exit.is_none() {
        report.leader_exit = leader_exit;
    }
    if state.supervisor_gone {
        state.drain_until_eof(&mut drains, Duration::from_millis(500));
    }
    for l in report.leftover_lines() {
        log.say(l);
    }
    log.say(format!(
        "teardown done in {} ms; {} left",
        report.elapsed_ms,
        report.leftovers.len()
    ));
    if state.supervisor_gone || state.control.is_none() {
        write_report(cfg.report.as_ref(), &report);
    }
    send(
        state.control.as_ref(),
        &Event::TeardownDone {
            report: report.clone(),
        },
    );
    if report.leftovers.is_empty() {
        0
    } else {
        LEFTOVER_EXIT_STATUS
    }
}

fn send(control: Option<&OwnedFd>, ev: &Event) {
    if let Some(c) = control {
        let _ = protocol::send(c, ev);
    }
}

fn write_report(path: Option<&PathBuf>, report: &TeardownReport) {
    let Some(path) = path else { return };
    let tmp = path.with_extension("json.tmp");
    if let Ok(text) = serde_json::to_string_pretty(report) {
        if std::fs::write(&tmp, text + "\n").is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

/// Replaces fds 0–2 with /dev/null.
fn release_stdio() {
    if let Ok(null) = OpenOptions::new().read(true).write(true).open("/dev/null") {
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

fn spawn_server(
    cfg: &ShepherdConfig,
    me: i32,
    owners: &str,
    procs: Option<&File>,
) -> std::io::Result<std::process::Child> {
    let mut cmd = Command::new(&cfg.command[0]);
    cmd.args(&cfg.command[1..])
        .env(RUN_ID_ENV, &cfg.run_id)
        .env(OWNERS_ENV, owners)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    if let Some(d) = &cfg.cwd {
        cmd.current_dir(d);
    }
    let procs_fd = procs.map(|f| f.as_raw_fd());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(fd) = procs_fd {
                // Join the cgroup before any of the server's code runs, so even its first
                // fork is inside.
                if libc::write(fd, b"0".as_ptr().cast(), 1) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
            // The shepherd may have died before the prctl: then nobody would signal us.
            if libc::getppid() != me {
                libc::_exit(1);
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    cmd.spawn()
}

/// The shepherd's wake-up sources.
struct Loop {
    control: Option<OwnedFd>,
    sigfd: Option<SignalFd>,
    decoder: Decoder,
    supervisor_gone: bool,
    drain_file: Option<File>,
    drain_to: Option<PathBuf>,
    sigints: u32,
    /// Graces for a teardown the shepherd starts on a signal.
    graces: Graces,
}

#[derive(Default)]
struct Wake {
    request: Option<(StopMode, Graces, String)>,
}

impl Loop {
    /// Reads whatever is ready without blocking: control messages, signals, and (once the
    /// supervisor is gone) the server's output.
    fn poll(&mut self, drains: &mut [OwnedFd], log: &mut Log) -> Wake {
        let mut wake = Wake::default();
        if let Some(c) = &self.control {
            if sys::poll_readable(&[c.as_raw_fd()], Some(Duration::ZERO))[0] {
                let mut buf = [0u8; 4096];
                match sys::read_fd(c.as_raw_fd(), &mut buf) {
                    Ok(0) | Err(_) => {
                        log.say("control socket closed: the supervisor is gone");
                        self.control = None;
                        self.supervisor_gone = true;
                    }
                    Ok(n) => {
                        for req in self.decoder.feed::<Request>(&buf[..n]) {
                            let Request::Stop { mode, graces } = req;
                            wake.request = Some((mode, graces, "shepherd".to_string()));
                        }
                    }
                }
            }
        }
        if let Some(sfd) = &self.sigfd {
            while let Ok(Some(info)) = sfd.read_signal() {
                let sig = info.ssi_signo as i32;
                match sig {
                    libc::SIGCHLD => {}
                    libc::SIGQUIT => {
                        wake.request = Some(forced(sig, self.graces));
                    }
                    libc::SIGINT if self.sigints >= 1 => {
                        wake.request = Some(forced(sig, self.graces));
                    }
                    libc::SIGINT | libc::SIGTERM | libc::SIGHUP => {
                        if sig == libc::SIGINT {
                            self.sigints += 1;
                        }
                        if wake.request.is_none() {
                            wake.request = Some((
                                StopMode::Graceful,
                                self.graces,
                                format!("shepherd ({})", sys::signal_name(sig)),
                            ));
                        }
                    }
                    _ => {}
                }
            }
        }
        if self.supervisor_gone {
            self.drain(drains);
        }
        wake
    }

    /// Moves what the pipes hold into the drain file (non-blocking).
    fn drain(&mut self, drains: &mut [OwnedFd]) -> bool {
        if self.drain_file.is_none() {
            self.drain_file = self
                .drain_to
                .as_ref()
                .and_then(|p| OpenOptions::new().create(true).append(true).open(p).ok());
        }
        let mut open = false;
        let mut buf = vec![0u8; 65536];
        for fd in drains.iter() {
            let raw = fd.as_raw_fd();
            let _ = sys::set_nonblocking(raw, true);
            loop {
                // SAFETY: buf is valid for its length.
                let n = unsafe { libc::read(raw, buf.as_mut_ptr().cast(), buf.len()) };
                if n > 0 {
                    if let Some(f) = &mut self.drain_file {
                        let _ = f.write_all(&buf[..n as usize]);
                    }
                    continue;
                }
                if n < 0 {
                    open = true; // EAGAIN: still open, nothing to read now
                }
                break;
            }
        }
        open
    }

    fn drain_until_eof(&mut self, drains: &mut [OwnedFd], budget: Duration) {
        let deadline = Instant::now() + budget;
        while self.drain(drains) && Instant::now() < deadline {
            let fds: Vec<RawFd> = drains.iter().map(|f| f.as_raw_fd()).collect();
            sys::poll_readable(&fds, Some(Duration::from_millis(20)));
        }
    }
}

fn forced(sig: i32, graces: Graces) -> (StopMode, Graces, String) {
    (
        StopMode::Force,
        graces,
        format!("shepherd ({})", sys::signal_name(sig)),
    )
}

/// Entry point for a binary's hidden subcommand: parses `args` (everything after the
/// subcommand's name) and runs. Errors in the arguments exit 2.
pub fn main_with_args<I: IntoIterator<Item = OsString>>(args: I) -> i32 {
    match ShepherdConfig::from_args(args) {
        Ok(cfg) => run(cfg),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{e}");
            2
        }
    }
}
